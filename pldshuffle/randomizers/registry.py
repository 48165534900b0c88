"""Randomizers by name, for the command line and JSON specs (``{"randomizer": "oue", "domain_size": 1024, ...}``)."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable
from typing import Any

import numpy as np

from .._validation import check_real_array, show
from .base import Finite, Randomizer
from .continuous import Laplace
from .named import OLH, OUE, RAPPOR, BinaryRR, HadamardResponse, KaryRR, LocalHashing, SubsetSelection

__all__ = ["RANDOMIZERS", "make_randomizer", "randomizer_spec"]

#: Name -> constructor; the keyword parameters are the constructor's (``probabilities`` for ``finite``
#: may also be given as ``matrix``: a nested list, or the path of a ``.json`` / ``.csv`` / ``.npy`` file).
RANDOMIZERS: dict[str, Callable[..., Randomizer]] = {
    "binary-rr": BinaryRR,
    "krr": KaryRR,
    "rappor": RAPPOR,
    "oue": OUE,
    "olh": OLH,
    "local-hashing": LocalHashing,
    "hadamard": HadamardResponse,
    "subset": SubsetSelection,
    "finite": Finite,
    "laplace": Laplace,
}
_NAMES = {BinaryRR: "binary-rr", KaryRR: "krr", RAPPOR: "rappor", OUE: "oue", LocalHashing: "local-hashing",
          HadamardResponse: "hadamard", SubsetSelection: "subset", Finite: "finite",
          Laplace: "laplace"}


def _load_matrix(value: Any) -> np.ndarray:
    # Entries must be real numbers: JSON's true/false or "0.5" are refused, not converted.
    if not isinstance(value, str):
        return check_real_array("matrix", value)
    try:
        if value.endswith(".npy"):
            return check_real_array("matrix", np.load(value))
        if value.endswith(".csv"):
            return np.loadtxt(value, delimiter=",", ndmin=2)
        with open(value, encoding="utf-8") as handle:
            return check_real_array("matrix", json.load(handle))
    except (OSError, ValueError) as exc:
        raise ValueError(f"matrix: cannot read a row-stochastic matrix from {value!r} ({exc})") from None


def make_randomizer(name: str, /, **parameters: Any) -> Randomizer:
    """Build a randomizer from its name (a key of :data:`RANDOMIZERS`) and keyword parameters.

    Examples
    --------
    >>> make_randomizer("oue", domain_size=1024, local_epsilon=1.0).describe()
    'optimized unary encoding, d=1024, ε0=1'
    """
    if not isinstance(name, str):
        raise TypeError(f"randomizer must be one of {', '.join(RANDOMIZERS)}; got {show(name)} of type {type(name).__name__}")
    if name not in RANDOMIZERS:
        raise ValueError(f"randomizer must be one of {', '.join(RANDOMIZERS)}; got {name!r}")
    if name == "finite":
        if "matrix" in parameters:
            parameters["probabilities"] = _load_matrix(parameters.pop("matrix"))
        if "probabilities" not in parameters:
            raise ValueError("randomizer 'finite' needs matrix=... (a nested list or a .json/.csv/.npy file)")
    try:
        return RANDOMIZERS[name](**parameters)
    except TypeError as exc:
        if "argument" in str(exc):  # missing / unexpected keyword
            raise TypeError(f"randomizer {name!r}: {exc}") from None
        raise


def randomizer_spec(randomizer: Randomizer) -> dict[str, Any]:
    """JSON-ready ``{"randomizer": name, parameters...}`` that :func:`make_randomizer` turns back into it."""
    out: dict[str, Any] = {"randomizer": _NAMES[type(randomizer)]}
    for f in dataclasses.fields(randomizer):  # type: ignore[arg-type]
        if f.init:
            value = getattr(randomizer, f.name)
            out[f.name] = value.tolist() if isinstance(value, np.ndarray) else value
    return out
