"""Result objects returned by the accountant: certified brackets plus diagnostics.

Both result types convert to the guarantee with ``float(result)`` (the upper end), to a JSON-safe
dictionary with :meth:`~EpsilonBounds.to_dict` and to a JSON string with :meth:`~EpsilonBounds.to_json`.
Using the upper end of a bound that is **not** a privacy guarantee (``is_guarantee`` false: the
mechanism analyses one specific dataset pair, which only gives a lower bound on the worst case) emits a
:class:`NotAGuaranteeWarning`.

JSON encoding (:func:`json_safe`): non-finite floats become the strings ``"inf"``, ``"-inf"`` and
``"nan"`` (JSON has no such numbers; ``float("inf")`` reads them back), numpy scalars and arrays become
Python numbers and lists, tuples become lists.

Examples
--------
>>> from pldshuffle.results import EpsilonBounds
>>> b = EpsilonBounds(lower=0.31, upper=0.32, target_delta=1e-6)
>>> float(b)
0.32
>>> b
EpsilonBounds(lower=0.31, upper=0.32, target_delta=1e-06)
>>> EpsilonBounds(1.0, float("inf"), 1e-12).to_dict()["upper"]
'inf'
"""

from __future__ import annotations

import json
import math
import warnings
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np

from .errors import LooseBoundWarning, NotAGuaranteeWarning, SlowComputationWarning  # their home; re-exported here

__all__ = [
    "INFINITE_EPSILON_NOTE", "DeltaBounds", "EpsilonBounds", "JsonRecord", "LooseBoundWarning", "NotAGuaranteeWarning", "SlowComputationWarning",
    "json_safe", "warn_if_loose", "warn_if_not_guarantee",
]

#: Why an ε bracket can be infinite; printed with every such result (see ``docs/mathematics.md#definitions``).
INFINITE_EPSILON_NOTE = (
    "no finite epsilon is certified at this delta: delta is below the composed mass of infinite privacy loss "
    "(outcomes one dataset can produce and its neighbour cannot) or below the certified error terms; "
    "see diagnostics"
)


def warn_if_loose(caveat: str | None, *, stacklevel: int = 3) -> None:
    """Emit :class:`LooseBoundWarning` with ``caveat`` as its message (nothing when it is None)."""
    if caveat is not None:
        warnings.warn(caveat, LooseBoundWarning, stacklevel=stacklevel)


def warn_if_not_guarantee(is_guarantee: bool, caveats: Iterable[str] = (), *, stacklevel: int = 3) -> None:
    """Emit :class:`NotAGuaranteeWarning` if a bound that is not a guarantee is about to be used as one.

    Parameters
    ----------
    is_guarantee : bool
        The result's ``is_guarantee`` flag; nothing happens when it is true.
    caveats : iterable of str
        The result's caveats, quoted in the message.
    stacklevel : int
        Passed to :func:`warnings.warn`; the default 3 points at the caller of the function that calls
        this helper (e.g. the user's ``float(bounds)`` or ``accountant.get_epsilon(...)`` line).
    """
    if is_guarantee:
        return
    detail = "; ".join(caveats)
    warnings.warn(
        "this value is NOT a privacy guarantee: the analysed pair gives a lower bound on the worst case "
        "over neighbouring datasets" + (f" ({detail})" if detail else ""),
        NotAGuaranteeWarning,
        stacklevel=stacklevel,
    )


def json_safe(value: Any) -> Any:
    """``value`` with numpy scalars / arrays, tuples and non-finite floats converted for :func:`json.dumps`.

    Non-finite floats become ``"inf"``, ``"-inf"`` or ``"nan"``; dictionary keys become strings; objects
    JSON cannot represent become their ``str``.
    """
    if isinstance(value, Mapping):
        return {str(k): json_safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [json_safe(v) for v in value]
    if hasattr(value, "tolist"):
        return json_safe(value.tolist())
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    return str(value)


def _caveat_text(is_guarantee: bool, caveats: tuple[str, ...]) -> str:
    if is_guarantee and not caveats:
        return ""
    head = "" if is_guarantee else " NOT A GUARANTEE (upper end is a lower bound on the worst case);"
    return head + "".join(f" {c}" for c in caveats)


def _short(value: Any) -> str:
    """A number with 6 significant digits, or a numpy array printed compactly."""
    if np.ndim(value) == 0:
        return f"{float(value):.6g}"
    return np.array2string(np.asarray(value, dtype=np.float64), threshold=6, separator=", ",
                           formatter={"float_kind": lambda v: f"{v:.6g}"})


def _repr(name: str, lower: Any, upper: Any, query: str, value: Any, is_guarantee: bool, caveats: tuple[str, ...]) -> str:
    flags = "" if is_guarantee else ", is_guarantee=False"
    flags += f", caveats=<{len(caveats)}>" if caveats else ""
    return f"{name}(lower={_short(lower)}, upper={_short(upper)}, {query}={_short(value)}{flags})"


class JsonRecord:
    """The base of every result: serialises itself as the attributes named by ``_record_keys``.

    Subclasses set the class attribute ``_record_keys`` (fields, properties or class attributes, in the
    order the record lists them) and may override :meth:`_record_value` to convert one of them.
    """

    _record_keys: ClassVar[tuple[str, ...]] = ()

    def _record_value(self, key: str, value: Any) -> Any:
        """How attribute ``key`` is written (default: as it is; nested results become their dict)."""
        return value.to_dict() if isinstance(value, JsonRecord) else value

    def to_dict(self) -> dict[str, Any]:
        """JSON-safe dictionary of the ``_record_keys``; non-finite numbers as strings (:func:`json_safe`)."""
        record: dict[str, Any] = json_safe({key: self._record_value(key, getattr(self, key)) for key in self._record_keys})
        return record

    def to_json(self, **kwargs: Any) -> str:
        """:meth:`to_dict` as a JSON string; ``kwargs`` go to :func:`json.dumps` (e.g. ``indent=2``)."""
        return json.dumps(self.to_dict(), **kwargs)


@dataclass(frozen=True, repr=False)
class EpsilonBounds(JsonRecord):
    """Certified bracket ``lower <= ε(target_delta) <= upper`` of the analysed composition.

    ``upper`` is the privacy guarantee when ``is_guarantee`` is true; ``float(bounds)`` returns it (and
    warns with :class:`NotAGuaranteeWarning` when ``is_guarantee`` is false).  ``upper`` is ``inf`` when
    ``target_delta`` is below the composed mass of infinite privacy loss (no finite ε is certified
    there).  ``diagnostics`` records the grid, the error terms and the FFT backend, so a user can see
    where the width comes from.  ``lower, upper = bounds`` unpacks the bracket.  ``to_dict()`` /
    ``to_json()`` write ``quantity`` (``"epsilon"``), ``lower``, ``upper``, ``target_delta``,
    ``relative_gap``, ``is_guarantee``, ``caveats`` and ``diagnostics`` (non-finite numbers as strings).
    """

    lower: float
    upper: float
    target_delta: float
    is_guarantee: bool = True
    caveats: tuple[str, ...] = ()
    diagnostics: Mapping[str, Any] = field(default_factory=dict, compare=False)

    quantity: ClassVar[str] = "epsilon"
    _record_keys = ("quantity", "lower", "upper", "target_delta", "relative_gap", "is_guarantee", "caveats", "diagnostics")

    def __iter__(self) -> Iterator[float]:
        yield self.lower
        yield self.upper

    def __float__(self) -> float:
        warn_if_not_guarantee(self.is_guarantee, self.caveats)
        return float(self.upper)

    @property
    def relative_gap(self) -> float:
        """``(upper - lower) / upper`` (0 when both are 0)."""
        if self.upper == 0.0:
            return 0.0
        if not np.isfinite(self.upper):
            return 0.0 if self.lower == self.upper else float("inf")
        return (self.upper - self.lower) / self.upper

    def __repr__(self) -> str:
        return _repr("EpsilonBounds", self.lower, self.upper, "target_delta", self.target_delta,
                     self.is_guarantee, self.caveats)

    def __str__(self) -> str:
        note = f" ({INFINITE_EPSILON_NOTE})" if math.isinf(self.upper) else ""
        return (
            f"ε ∈ [{self.lower:.6g}, {self.upper:.6g}] at δ = {self.target_delta:.3g}{note}"
            + _caveat_text(self.is_guarantee, self.caveats)
        )


@dataclass(frozen=True, repr=False)
class DeltaBounds(JsonRecord):
    """Certified bracket ``lower <= δ(target_epsilon) <= upper`` (floats, or arrays for array input).

    ``float(bounds)`` returns ``upper`` for a single ε (and warns with :class:`NotAGuaranteeWarning`
    when ``is_guarantee`` is false); for several ε it raises ``TypeError`` (use ``bounds.upper``).
    ``to_dict()`` / ``to_json()`` write ``quantity`` (``"delta"``), ``lower``, ``upper``, ``target_epsilon``
    (numbers, or lists for array input), ``is_guarantee``, ``caveats`` and ``diagnostics``.
    """

    lower: Any
    upper: Any
    target_epsilon: Any
    is_guarantee: bool = True
    caveats: tuple[str, ...] = ()
    diagnostics: Mapping[str, Any] = field(default_factory=dict, compare=False)

    quantity: ClassVar[str] = "delta"
    _record_keys = ("quantity", "lower", "upper", "target_epsilon", "is_guarantee", "caveats", "diagnostics")

    def __iter__(self) -> Iterator[Any]:
        yield self.lower
        yield self.upper

    def __float__(self) -> float:
        size = np.size(self.upper)
        if size != 1:
            raise TypeError(
                f"float() needs DeltaBounds for a single epsilon, but this one holds {size} values "
                "(target_epsilon was an array); use bounds.upper for the array of guarantees"
            )
        warn_if_not_guarantee(self.is_guarantee, self.caveats)
        return float(np.asarray(self.upper, dtype=np.float64).reshape(()))

    def __repr__(self) -> str:
        return _repr("DeltaBounds", self.lower, self.upper, "target_epsilon", self.target_epsilon,
                     self.is_guarantee, self.caveats)

    def __str__(self) -> str:
        if np.ndim(self.upper) == 0:
            text = f"δ ∈ [{self.lower:.6g}, {self.upper:.6g}] at ε = {self.target_epsilon:.6g}"
        else:
            text = f"δ bounds at {np.size(self.upper)} epsilons"
        return text + _caveat_text(self.is_guarantee, self.caveats)
