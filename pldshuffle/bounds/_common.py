"""Shared machinery of the analytic baselines.

* :class:`BoundResult`, the one result type of every ``*_result`` function, and
  :func:`plain_float`, which derives the plain-float convenience function from it;
* log-space helpers (``log(e^x - 1)``, ``log(1 - e^x)``, ``log(e^x + e^y)``, Bennett's ``log h``);
* the ε grid on which implicit bounds are inverted (the inversions themselves live in
  :mod:`pldshuffle.pld.inversion`, the package's one home of root finding);
* parameter checks shared by several modules (``local_epsilon``, RDP orders, the kRR ``gamma``).
"""

from __future__ import annotations

import functools
import inspect
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .._krr_gamma import krr_gamma, krr_local_epsilon
from .._validation import (
    check_epsilon,
    check_flag,
    check_int,
    check_positive_finite,
    check_probability,
    check_real_array,
    show,
)
from .._validation import check_local_epsilon as check_shared_local_epsilon

__all__ = ["BoundResult", "check_flag"]

#: Largest ``num_users`` of the baselines that sum over every count ``0..n`` (O(n) memory and time per
#: evaluation: ~0.8 GB per array at the limit); larger requests are refused up front.
MAX_LINEAR_USERS = 10**8


#: Largest ``num_users`` of the closed-form baselines: their formulas are O(1) in n and stay finite well
#: beyond any population (the accountant's mechanisms stop at 2**53); larger integers are refused, not
#: left to overflow inside a formula.
MAX_ANALYTIC_USERS = 10**18


def check_analytic_users(num_users: object, minimum: int = 1) -> int:
    """``num_users`` of a closed-form baseline as an int in ``[minimum, MAX_ANALYTIC_USERS]``."""
    return check_int("num_users", num_users, minimum=minimum, maximum=MAX_ANALYTIC_USERS)


def check_linear_users(num_users: object, what: str, alternative: str) -> int:
    """``num_users`` as an int in ``[1, MAX_LINEAR_USERS]`` for a baseline that sums over every count
    (``what`` names it, ``alternative`` says what to use instead); ``ValueError`` otherwise."""
    n = check_analytic_users(num_users)
    if n > MAX_LINEAR_USERS:
        raise ValueError(
            f"{what} sums over all num_users + 1 counts (O(n) memory); num_users must be <= {MAX_LINEAR_USERS:.0e}, "
            f"got {num_users!r}; use fewer users or {alternative}"
        )
    return n


@dataclass(frozen=True)
class BoundResult:
    """The value of an analytic baseline together with what it rests on.

    Attributes
    ----------
    value : float
        The bound (ε, δ, ε0 or an RDP value). ``nan`` means "no guarantee from this bound": the
        parameters are outside the range where the source proves it. It is never replaced by ε0.
    reason : str or None
        Why ``value`` is ``nan``; ``None`` exactly when ``value`` is a number.
    proven : bool
        ``False`` for curves kept only for figure parity (e.g. BBGN19 Thm 3.1 above ε = 1, the
        Bennett bound with the printed Lemma 5.6); these are *not* privacy guarantees.
    note : str or None
        How a numeric value was obtained when that matters (e.g. "no amplification certified,
        ε = ε0", "limited by the validity range").
    details : Mapping
        Auxiliary numbers, e.g. the optimal RDP order or the chosen δ split of a composition.
    """

    value: float
    reason: str | None = None
    proven: bool = True
    note: str | None = None
    details: Mapping[str, float] = field(default_factory=dict)

    def __post_init__(self) -> None:
        object.__setattr__(self, "value", float(self.value))
        if math.isnan(self.value) != (self.reason is not None):
            raise ValueError("BoundResult: reason must be given exactly when value is nan")

    def __float__(self) -> float:
        return self.value


def no_guarantee(reason: str, **details: float) -> BoundResult:
    """A ``nan`` result with its explanation."""
    return BoundResult(math.nan, reason=reason, details=details)


def plain_float(result_function: Callable[..., BoundResult]) -> Callable[..., float]:
    """Derive ``name(...) -> float`` from ``name_result(...) -> BoundResult``.

    The derived function takes exactly the same arguments and returns ``.value`` (``nan`` outside the
    proven range; call the ``*_result`` form to learn why).
    """
    name = result_function.__name__.removesuffix("_result")

    @functools.wraps(result_function)
    def plain(*args: Any, **kwargs: Any) -> float:
        return result_function(*args, **kwargs).value

    plain.__name__ = plain.__qualname__ = name
    plain.__doc__ = (
        f"Plain-float form of :func:`{result_function.__name__}` (same arguments).\n\n"
        f"Returns its ``.value``: ``nan`` where the bound gives no guarantee; call "
        f"``{result_function.__name__}`` to get the reason.\n"
    )
    plain.__signature__ = inspect.signature(result_function).replace(return_annotation=float)  # type: ignore[attr-defined]
    return plain


# ---------------------------------------------------------------------------------------------------
# log-space helpers


def log_expm1(x: float) -> float:
    """``log(e^x - 1)`` for ``x >= 0`` without overflow or cancellation (``-inf`` at 0)."""
    if x == 0.0:
        return -math.inf
    return x + math.log1p(-math.exp(-x)) if x > 1.0 else math.log(math.expm1(x))


def logaddexp(x: float, y: float) -> float:
    """``log(e^x + e^y)`` for scalars (``math`` has no ``logaddexp``)."""
    high, low = (x, y) if x >= y else (y, x)
    return high if low == -math.inf else high + math.log1p(math.exp(low - high))


def log_sum_exp(values: Sequence[float] | np.ndarray) -> float:
    """``log Σ e^{v}`` of a 1-D sequence (a lean ``scipy.special.logsumexp`` for hot loops)."""
    v = np.asarray(values, dtype=float)
    top = float(np.max(v))
    if not math.isfinite(top):
        return top
    return top + math.log(float(np.sum(np.exp(v - top))))


def log1mexp(x: float) -> float:
    """``log(1 - e^x)`` for ``x <= 0`` (Mächler's two-branch evaluation; ``-inf`` at 0)."""
    if x == 0.0:
        return -math.inf
    return math.log(-math.expm1(x)) if x > -math.log(2.0) else math.log1p(-math.exp(x))


def log_bennett_h(u: float) -> float:
    """``log h(u)`` of Bennett's ``h(u) = (1 + u) log(1 + u) - u`` for ``u > 0``.

    Below ``u = 1e-4`` the series ``h(u) = u² (1/2 - u/6 + u²/12 - u³/20 + u⁴/30 - ...)`` avoids the
    cancellation (and the negative values the authors' code patches with ``u²``).
    """
    if u < 1e-4:
        return 2.0 * math.log(u) + math.log(0.5 - u * (1 / 6 - u * (1 / 12 - u * (1 / 20 - u / 30))))
    return math.log((1.0 + u) * math.log1p(u) - u)


# ---------------------------------------------------------------------------------------------------
# inversion


def epsilon_grid(local_epsilon: float, num: int = 200) -> np.ndarray:
    """Geometric grid of ``num`` points from ``1e-8 ε0`` to ``ε0`` (inclusive) for ε inversion."""
    return np.geomspace(1e-8 * local_epsilon, local_epsilon, num)


# ---------------------------------------------------------------------------------------------------
# shared parameter checks


def check_local_epsilon(value: object) -> float:
    """``local_epsilon`` (ε0 of the local randomizer) in ``(0, 500]``, the library's one range for ε0
    (beyond it e^ε0 leaves double precision and no bound amplifies anything)."""
    return check_shared_local_epsilon(value)


def check_alpha(alpha: object, maximum: float = math.inf) -> np.ndarray:
    """RDP order(s) ``alpha``: finite reals in ``(1, maximum]`` (scalar or array), returned as a float array."""
    values = check_real_array("alpha", alpha)
    if values.size == 0 or not np.all(np.isfinite(values) & (values > 1.0) & (values <= maximum)):
        upper = "" if maximum == math.inf else f" and <= {maximum:g}"
        raise ValueError(f"alpha must be finite and > 1{upper} (RDP order), got {show(alpha)}")
    return values


def krr_parameters(domain_size: object, gamma: object, local_epsilon: object) -> tuple[int, float, float]:
    """``(k, γ, ε0)`` of k-ary randomized response from exactly one of ``gamma`` / ``local_epsilon``.

    BBGN19 Lemma 5.1(1): ``γ = k / (e^{ε0} + k - 1)``, i.e. ``ε0 = log(1 + k (1 - γ) / γ)``.
    """
    k = check_int("domain_size", domain_size, minimum=2)
    if (gamma is None) == (local_epsilon is None):
        raise ValueError(
            f"give exactly one of gamma (blanket probability in (0, 1]) and local_epsilon (> 0); "
            f"got gamma={gamma!r}, local_epsilon={local_epsilon!r}"
        )
    if gamma is not None:
        g = check_probability("gamma", gamma, high_open=False)
        return k, g, krr_local_epsilon(k, g)
    eps0 = check_local_epsilon(local_epsilon)
    return k, krr_gamma(k, eps0), eps0


def check_target_epsilon(value: object) -> float:
    """``target_epsilon`` (the ε at which δ is evaluated) in ``[0, inf)``."""
    return check_epsilon(value, "target_epsilon")
