"""Shuffle mechanisms: each builds the neighbouring pairs of one round (see :mod:`.base`).

The mechanism classes are imported on first access (PEP 562): importing :mod:`.base` alone does not
load every mechanism and its dependencies.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

from .registry import MECHANISMS

#: Public name -> module defining it: the registered mechanisms, and the pairs of ShuffledLDP's reductions.
_EXPORTS = {entry.class_name: entry.module for entry in MECHANISMS} | {
    "BlanketPair": ".blanket",
    "LabelledClonePair": ".labelled_clones",
}

__all__ = sorted(_EXPORTS)

if TYPE_CHECKING:  # pragma: no cover
    from .binary_rr import ShuffledBinaryRR
    from .blanket import BlanketPair
    from .clones import ShuffledLDP
    from .allocation import RandomAllocation
    from .generic import PairMechanism
    from .krr import ShuffledKRR
    from .labelled_clones import LabelledClonePair


def __getattr__(name: str) -> object:
    if name not in _EXPORTS:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(_EXPORTS[name], __package__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
