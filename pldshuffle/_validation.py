"""Input validation helpers shared by every public entry point.

Each helper raises ``TypeError`` for a value of the wrong type and ``ValueError`` for a value out of
range; the message always names the parameter, shows the value and states the valid range, so a user
can fix the call without reading the source.  ``bool`` is rejected where a number is expected (it is an
``int`` subclass, and ``count=True`` is always a mistake).
"""

from __future__ import annotations

import math
import numbers

import numpy as np

__all__ = [
    "MAX_SPACING",
    "MAX_COUNT",
    "check_choice",
    "check_delta",
    "check_epsilon",
    "check_epsilons",
    "check_int",
    "check_local_epsilon",
    "check_num_users",
    "check_positive_finite",
    "check_probability",
    "check_real",
    "check_size",
]

#: Largest count accepted where a count feeds float64 arithmetic and int64 arrays (exact in both).
MAX_COUNT = 2**53


def check_real(name: str, value: object) -> float:
    """Return ``value`` as a float, or raise ``TypeError`` if it is not a real number."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a real number, got {value!r} of type {type(value).__name__}")
    try:
        return float(value)
    except OverflowError:
        raise ValueError(f"{name} must be representable as a float (|x| < 1.8e308), got an integer of {len(str(value))} digits") from None


def check_int(name: str, value: object, minimum: int = 1, maximum: int | None = None) -> int:
    """Return ``value`` as an int in ``[minimum, maximum]``.

    Integral floats such as ``1e6`` are accepted (users write ``num_users=1e6``); other floats are not.
    """
    if isinstance(value, (bool, np.bool_)):
        raise TypeError(f"{name} must be an integer, got the boolean {value!r}")
    if isinstance(value, numbers.Integral):
        ivalue = int(value)
    elif isinstance(value, numbers.Real) and math.isfinite(float(value)) and float(value).is_integer():
        ivalue = int(float(value))
    elif isinstance(value, numbers.Real):
        raise ValueError(f"{name} must be an integer >= {minimum}, got {value!r}")
    else:
        raise TypeError(f"{name} must be an integer, got {value!r} of type {type(value).__name__}")
    if ivalue < minimum or (maximum is not None and ivalue > maximum):
        upper = "" if maximum is None else f" and <= {maximum}"
        raise ValueError(f"{name} must be an integer >= {minimum}{upper}, got {value!r}")
    return ivalue


def check_num_users(value: object) -> int:
    """Return the number of users of a shuffled mechanism as an int in ``[2, MAX_COUNT]``.

    Beyond ``MAX_COUNT = 2**53`` counts are no longer exact in double precision; the refusal says how to
    shrink the request, since a guarantee for fewer users also holds for more (the extra users' reports
    are a post-processing the adversary can simulate).
    """
    n = check_int("num_users", value, minimum=2)
    if n > MAX_COUNT:
        raise ValueError(
            f"num_users must be an integer >= 2 and <= {MAX_COUNT}, got {value!r}: counts beyond 2**53 are not exact in "
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
        raise ValueError(f"{name} must be a finite number > 0{upper}, got {value!r}")
    return x


#: Coarsest lattice spacing accepted (nats): coarser ones resolve no ε of interest, and the connect-the-dots
#: weights need ``e^Δ`` far from overflow (2RR's adaptive recursion failed at Δ = 1000).
MAX_SPACING = 100.0


#: Largest local ε0 accepted: beyond it e^{ε0} (or its reciprocal) leaves double precision.
MAX_LOCAL_EPSILON = 500.0


def check_local_epsilon(value: object, name: str = "local_epsilon") -> float:
    """Return a local ε0 in ``(0, MAX_LOCAL_EPSILON]`` (e^{ε0} must not overflow; nothing is amplified there)."""
    x = check_real(name, value)
    if not (0.0 < x <= MAX_LOCAL_EPSILON):
        raise ValueError(
            f"{name} must lie in (0, {MAX_LOCAL_EPSILON:g}], got {value!r} (beyond it the randomizer reveals its "
            "input and e^ε0 is not representable in double precision)"
        )
    return x


def check_probability(name: str, value: object, *, low_open: bool = True, high_open: bool = True) -> float:
    """Return ``value`` as a float in the interval (0, 1) with the requested open/closed ends."""
    x = check_real(name, value)
    low_ok = x > 0.0 if low_open else x >= 0.0
    high_ok = x < 1.0 if high_open else x <= 1.0
    if not (low_ok and high_ok) or math.isnan(x):
        interval = ("(" if low_open else "[") + "0, 1" + (")" if high_open else "]")
        raise ValueError(f"{name} must lie in {interval}, got {value!r}")
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
        raise ValueError(f"{name} must be {what}, got {value!r}")
    return x


def check_epsilons(value: object, name: str = "target_epsilon", *, allow_inf: bool = False) -> np.ndarray:
    """Return a float array of ε's (a scalar gives a 0-d array): real, ≥ 0 and finite (or ``inf`` with
    ``allow_inf``), refusing bool, str, bytes, complex and NaN with an error naming the parameter."""
    if isinstance(value, (str, bytes)):
        raise TypeError(f"{name} must be a real number or an array of them, got {value!r}")
    array = np.asarray(value, dtype=object)
    flat = [check_epsilon(v, name, allow_inf=allow_inf) for v in array.ravel()]
    if not flat:
        raise ValueError(f"{name} must hold at least one value >= 0")
    return np.asarray(flat, dtype=np.float64).reshape(array.shape)


def check_choice(name: str, value: object, choices: tuple[str, ...]) -> str:
    """Return ``value`` if it is one of ``choices``."""
    if not isinstance(value, str) or value not in choices:
        raise ValueError(f"{name} must be one of {', '.join(repr(c) for c in choices)}; got {value!r}")
    return value


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
