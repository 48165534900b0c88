"""Input validation helpers shared by every public entry point.

Each helper raises ``TypeError`` for a value of the wrong type and ``ValueError`` for a value out of
range; the message always names the parameter, shows the value and states the valid range, so a user
can fix the call without reading the source.  ``bool`` is rejected where a number is expected (it is an
``int`` subclass, and ``count=True`` is always a mistake), and so are complex numbers, strings and
``None``.  Values are shown as plain numbers (``1.1``, never numpy's ``np.float64(1.1)``), so the
same message reads well from Python and from the command line.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np
from numpy.typing import NDArray

__all__ = [
    "MAX_COUNT",
    "MAX_SPACING",
    "MISSING_MASS_CHOICES",
    "PMF_SUM_ATOL",
    "check_callable",
    "check_choice",
    "check_delta",
    "check_epsilon",
    "check_epsilons",
    "check_flag",
    "check_int",
    "check_local_epsilon",
    "check_mapping",
    "check_num_users",
    "check_pmf_total",
    "check_positive_finite",
    "check_probability",
    "check_real",
    "check_real_array",
    "check_size",
    "check_text",
    "show",
]

#: Largest count accepted where a count feeds float64 arithmetic and int64 arrays (exact in both).
MAX_COUNT = 2**53


#: How far a probability mass function's total may lie from 1 (summation rounding of a few thousand
#: entries is far below it); a larger deficit must be named (``missing_mass``), a larger excess is an error.
PMF_SUM_ATOL = 1e-12

#: The ways a caller can state where a pmf's missing mass (1 - its sum) lies.
MISSING_MASS_CHOICES = ("infinity",)


def check_pmf_total(name: str, total: float, missing_mass: str | None) -> None:
    """Refuse a pmf whose entries sum to more than ``1 + PMF_SUM_ATOL``, or to less than ``1 - PMF_SUM_ATOL``
    unless the caller named the missing mass (``missing_mass="infinity"``: it lies outside the listed
    outcomes, at privacy loss +inf for the upper bound).  A typo that drops mass must not silently read as
    a large δ."""
    if missing_mass is not None:
        check_choice("missing_mass", missing_mass, MISSING_MASS_CHOICES)
    if total > 1.0 + PMF_SUM_ATOL:
        raise ValueError(f"{name} must sum to 1 (within {PMF_SUM_ATOL:g}), got a total of {show(total)}")
    if total < 1.0 - PMF_SUM_ATOL and missing_mass is None:
        raise ValueError(
            f"{name} must sum to 1 (within {PMF_SUM_ATOL:g}), got a total of {show(total)}; if the rest of the "
            "mass lies on outcomes you did not list, say so with missing_mass='infinity' (it is then booked at "
            "privacy loss +inf for the upper bound, and dropped for the lower bound)"
        )


#: Most characters of a value shown in a message (a 400-digit integer or a long list is cut).
_SHOW_CHARS = 60


def show(value: object) -> str:
    """``value`` as an error message shows it: numbers plain (``1.1``, ``nan``, ``3``; numpy scalars like
    Python's), strings quoted, anything else by its ``repr``, cut to ~60 characters."""
    if isinstance(value, (bool, np.bool_)):
        text = repr(bool(value))
    elif isinstance(value, numbers.Integral):
        text = str(int(value))
    elif isinstance(value, numbers.Real):
        text = repr(float(value))
    elif isinstance(value, numbers.Complex):
        text = repr(complex(value))
    elif isinstance(value, np.ndarray):
        text = np.array2string(value, threshold=8, separator=", ")
    else:
        text = repr(value)
    if len(text) > _SHOW_CHARS:
        text = f"{text[:_SHOW_CHARS // 2]}...{text[-10:]} ({len(text)} characters)"
    return text


def _kind(value: object) -> str:
    """``'x' of type T`` for a TypeError: the value and its type."""
    return f"{show(value)} of type {type(value).__name__}"


def check_real(name: str, value: object) -> float:
    """Return ``value`` as a float, or raise ``TypeError`` if it is not a real number (``bool``, complex,
    ``str`` and ``None`` are not; numpy scalars of a real dtype are)."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a real number, got {_kind(value)}")
    try:
        return float(value)
    except OverflowError:
        raise ValueError(f"{name} must be representable as a float (|x| < 1.8e308), got an integer of {len(str(value))} digits") from None


def check_int(name: str, value: object, minimum: int = 1, maximum: float | None = None) -> int:
    """Return ``value`` as an int in ``[minimum, maximum]`` (``maximum`` defaults to ``MAX_COUNT``:
    every count here meets float64 arithmetic, exact only up to 2**53).

    Integral floats such as ``1e6`` are accepted (users write ``num_users=1e6``); other floats are not.
    """
    if maximum is None:
        maximum = MAX_COUNT
    if isinstance(value, (bool, np.bool_)):
        raise TypeError(f"{name} must be an integer, got the boolean {show(value)}")
    if isinstance(value, numbers.Integral):
        ivalue = int(value)
    elif isinstance(value, numbers.Real) and math.isfinite(float(value)) and float(value).is_integer():
        ivalue = int(float(value))
    elif isinstance(value, numbers.Real):
        raise ValueError(f"{name} must be an integer >= {minimum}, got {show(value)}")
    else:
        raise TypeError(f"{name} must be an integer, got {_kind(value)}")
    if not minimum <= ivalue <= maximum:
        upper = "" if maximum in (MAX_COUNT, math.inf) else f" and <= {maximum}"
        if maximum == MAX_COUNT and ivalue > maximum:
            upper = f" and <= 2**53 = {MAX_COUNT} (counts beyond it are not exact in double precision)"
        raise ValueError(f"{name} must be an integer >= {minimum}{upper}, got {show(value)}")
    return ivalue


def check_num_users(value: object) -> int:
    """Return the number of users of a shuffled mechanism as an int in ``[2, MAX_COUNT]``.

    Beyond ``MAX_COUNT = 2**53`` counts are no longer exact in double precision; the refusal says how to
    shrink the request, since a guarantee for fewer users also holds for more (the extra users' reports
    are a post-processing the adversary can simulate).
    """
    n = check_int("num_users", value, minimum=2, maximum=math.inf)  # beyond MAX_COUNT: the longer refusal below
    if n > MAX_COUNT:
        raise ValueError(
            f"num_users must be an integer >= 2 and <= {MAX_COUNT}, got {show(value)}: counts beyond 2**53 are not exact in "
            "double precision, and far below it a mechanism's pairs already outgrow any machine's memory; use fewer "
            "users (a bound for fewer users also holds for more, by post-processing) or an analytic bound from "
            "pldshuffle.bounds"
        )
    return n


def check_positive_finite(name: str, value: object, maximum: float = math.inf) -> float:
    """Return ``value`` as a float in ``(0, maximum]`` (finite)."""
    x = check_real(name, value)
    if not (math.isfinite(x) and 0.0 < x <= maximum):
        upper = "" if maximum == math.inf else f" and <= {maximum:g}"
        raise ValueError(f"{name} must be a finite number > 0{upper}, got {show(value)}")
    return x


#: Coarsest lattice spacing accepted (nats): coarser ones resolve no ε of interest, and the connect-the-dots
#: weights need ``e^Δ`` far from overflow (2RR's adaptive recursion failed at Δ = 1000).
MAX_SPACING = 100.0


#: Largest local ε0 accepted: beyond it e^{ε0} (or its reciprocal) leaves double precision.
MAX_LOCAL_EPSILON = 500.0


def check_local_epsilon(value: object, name: str = "local_epsilon") -> float:
    """Return a local ε0 in ``(0, MAX_LOCAL_EPSILON]`` (e^{ε0} must not overflow; nothing is amplified there).

    The refusal says why for each kind of bad value: NaN is not a number, ε0 <= 0 is no privacy level of
    a randomizer that uses its input, and beyond the maximum e^ε0 leaves double precision.
    """
    x = check_real(name, value)
    if 0.0 < x <= MAX_LOCAL_EPSILON:
        return x
    if math.isnan(x):
        why = "NaN is not a privacy level"
    elif x <= 0.0:
        why = "a local ε0 is > 0; ε0 = 0 would be a randomizer that ignores its input"
    else:
        why = "beyond it the randomizer reveals its input and e^ε0 is not representable in double precision"
    raise ValueError(f"{name} must lie in (0, {MAX_LOCAL_EPSILON:g}], got {show(value)} ({why})")


def check_probability(name: str, value: object, *, low_open: bool = True, high_open: bool = True) -> float:
    """Return ``value`` as a float in the interval (0, 1) with the requested open/closed ends."""
    x = check_real(name, value)
    low_ok = x > 0.0 if low_open else x >= 0.0
    high_ok = x < 1.0 if high_open else x <= 1.0
    if not (low_ok and high_ok) or math.isnan(x):
        interval = ("(" if low_open else "[") + "0, 1" + (")" if high_open else "]")
        raise ValueError(f"{name} must lie in {interval}, got {show(value)}")
    return x


def check_delta(value: object, name: str = "target_delta") -> float:
    """Return a δ in the open interval (0, 1)."""
    return check_probability(name, value)


def check_epsilon(value: object, name: str = "target_epsilon", *, allow_inf: bool = False) -> float:
    """Return an ε in [0, inf) (in [0, inf] with ``allow_inf``)."""
    x = check_real(name, value)
    if allow_inf and x == math.inf:
        return x
    if not (math.isfinite(x) and x >= 0.0):
        what = "a number >= 0 (inf allowed)" if allow_inf else "a finite number >= 0"
        raise ValueError(f"{name} must be {what}, got {show(value)}")
    return x


def check_epsilons(value: object, name: str = "target_epsilon", *, allow_inf: bool = False) -> np.ndarray:
    """Return a float array of ε's (a scalar gives a 0-d array): real, ≥ 0 and finite (or ``inf`` with
    ``allow_inf``), refusing bool, str, bytes, complex and NaN with an error naming the parameter."""
    if isinstance(value, (str, bytes)):
        raise TypeError(f"{name} must be a real number or an array of them, got {_kind(value)}")
    array = np.asarray(value, dtype=object)
    flat = [check_epsilon(v, name, allow_inf=allow_inf) for v in array.ravel()]
    if not flat:
        raise ValueError(f"{name} must hold at least one value >= 0")
    return np.asarray(flat, dtype=np.float64).reshape(array.shape)


def check_choice(name: str, value: object, choices: tuple[str, ...]) -> str:
    """Return ``value`` if it is one of ``choices`` (``TypeError`` if it is not a string at all)."""
    if not isinstance(value, str):
        raise TypeError(f"{name} must be one of {', '.join(repr(c) for c in choices)}; got {_kind(value)}")
    if value not in choices:
        raise ValueError(f"{name} must be one of {', '.join(repr(c) for c in choices)}; got {value!r}")
    return value


def check_text(name: str, value: object) -> str:
    """Return ``value`` if it is a string (labels and descriptions shown in results)."""
    if not isinstance(value, str):
        raise TypeError(f"{name} must be a string, got {_kind(value)}")
    return value


def check_flag(name: str, value: object) -> bool:
    """A ``bool`` switch such as ``strict`` (numpy booleans too; numbers and strings are refused)."""
    if not isinstance(value, (bool, np.bool_)):
        raise TypeError(f"{name} must be True or False, got {_kind(value)}")
    return bool(value)


def check_callable(name: str, value: object, what: str) -> Callable[..., Any]:
    """Return ``value`` if it can be called; ``what`` says what it is called with and must return."""
    if not callable(value):
        raise TypeError(f"{name} must be a callable ({what}), got {_kind(value)}")
    return value


def check_mapping(name: str, value: object) -> dict[str, Any]:
    """``value`` (``None``: empty) as a dict of keyword arguments: a mapping with string keys."""
    if value is None:
        return {}
    if not isinstance(value, Mapping) or not all(isinstance(k, str) for k in value):
        raise TypeError(f"{name} must be a mapping of keyword arguments (str -> value) or None, got {_kind(value)}")
    return dict(value)


def _real_entry(name: str, value: object) -> None:
    """Refuse one entry of an array that is not a real number (bool, complex, str, None, ...)."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must hold real numbers only, got the entry {_kind(value)}")


def check_real_array(name: str, value: object, *, ndim: int | None = None) -> NDArray[np.float64]:
    """Return ``value`` as a float64 array (not copied if it is one already), refusing with errors naming
    ``name``:

    * ``TypeError`` for entries that are not real numbers -- booleans, complex numbers (even with a zero
      imaginary part), strings (numpy would convert ``"0.5"`` silently), ``None`` -- and for ragged
      nestings;
    * ``ValueError`` for integers beyond double precision, and for a shape other than ``ndim``
      dimensions when ``ndim`` is given.

    NaN and infinities are left to the caller (whose valid range says whether they are allowed).
    O(size).
    """
    if isinstance(value, (str, bytes, Mapping)) or value is None:
        raise TypeError(f"{name} must be an array of real numbers, got {_kind(value)}")
    try:
        # Python sequences entry by entry: numpy would turn [True, 0.5] into [1.0, 0.5] silently.
        raw = value if isinstance(value, np.ndarray) else np.asarray(value, dtype=object)
    except (TypeError, ValueError) as exc:  # ragged nestings
        raise TypeError(f"{name} must be a rectangular array of real numbers, got {_kind(value)} ({exc})") from None
    if raw.dtype.kind == "O":
        for entry in raw.flat:
            _real_entry(name, entry)
    elif raw.dtype.kind not in "iuf":
        what = {"b": "booleans", "c": "complex numbers", "U": "strings", "S": "bytes"}.get(raw.dtype.kind, f"dtype {raw.dtype}")
        raise TypeError(f"{name} must hold real numbers only, got {what}: {show(value)}")
    try:
        array = np.asarray(raw, dtype=np.float64)
    except OverflowError:
        raise ValueError(f"{name} must hold numbers representable as floats (|x| < 1.8e308), got {show(value)}") from None
    if ndim is not None and array.ndim != ndim:
        raise ValueError(f"{name} must be a {ndim}-D array, got shape {array.shape}")
    return array


def check_size(estimate: float, limit: float, *, what: str, request: str, advice: str) -> None:
    """Refuse a request whose estimated size exceeds ``limit``, before anything of that size is built.

    ``request`` names the parameters and their values (``"ShuffledKRR(num_users=10**12, ...)"``),
    ``what`` the unit of the estimate (``"support points"``), ``advice`` how to shrink the request.
    Raises ``ValueError`` with all four in the message; a NaN estimate is refused too.
    """
    if not estimate <= limit:
        raise ValueError(
            f"{request} would need about {estimate:.3g} {what}, more than the limit of {limit:.3g}; use {advice}"
        )
