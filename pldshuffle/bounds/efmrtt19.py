"""Erlingsson–Feldman–Mironov–Raghunathan–Talwar–Thakurta, SODA'19, Thm 7.

As restated in Balle–Bell–Gascón–Nissim (CRYPTO'19) Thm 5.1: shuffling ``n`` reports of (possibly
adaptive) ε0-LDP randomizers with ``ε0 < 1/2`` is ``(ε, δ)``-DP with

.. math:: \\varepsilon = 12\\,\\varepsilon_0\\sqrt{\\log(1/\\delta)/n}
          \\iff \\delta = \\exp\\big(-n\\,(\\varepsilon / (12\\varepsilon_0))^2\\big)

for any ``n >= 1000`` and ``δ < 1/100``. Outside that range every function returns ``nan``.
EFMRTT19 has no RDP statement.
"""

from __future__ import annotations

import math

from .._validation import check_delta
from ._common import check_analytic_users, BoundResult, check_local_epsilon, check_target_epsilon, no_guarantee, plain_float

__all__ = [
    "efmrtt19_delta",
    "efmrtt19_delta_result",
    "efmrtt19_epsilon",
    "efmrtt19_epsilon_result",
    "efmrtt19_local_epsilon",
    "efmrtt19_local_epsilon_result",
]

_MAX_LOCAL_EPSILON = 0.5
_MIN_USERS = 1000
_MAX_DELTA = 0.01


def _range_problem(num_users: int, local_epsilon: float | None, delta: float | None) -> str | None:
    """The first violated condition of Thm 5.1 (BBGN19), or ``None``."""
    if local_epsilon is not None and not local_epsilon < _MAX_LOCAL_EPSILON:
        return f"EFMRTT19 requires local_epsilon < 1/2, got {local_epsilon!r}"
    if num_users < _MIN_USERS:
        return f"EFMRTT19 requires num_users >= 1000, got {num_users}"
    if delta is not None and not delta < _MAX_DELTA:
        return f"EFMRTT19 requires delta < 1/100, got delta = {delta!r}"
    return None


def _result(value: float, problem: str | None) -> BoundResult:
    return BoundResult(value) if problem is None else no_guarantee(problem)


def efmrtt19_epsilon_result(*, num_users: int, local_epsilon: float, target_delta: float) -> BoundResult:
    """ε(δ) of EFMRTT19 Thm 7 (BBGN19 Thm 5.1) for shuffled ε0-LDP reports.

    Parameters
    ----------
    num_users : int
        Number of users ``n`` (valid for ``n >= 1000``).
    local_epsilon : float
        ε0 of every local randomizer (valid for ``ε0 < 1/2``).
    target_delta : float
        δ in (0, 1) (valid for ``δ < 1/100``).

    Returns
    -------
    BoundResult
        ``12 ε0 sqrt(log(1/δ)/n)``, or ``nan`` outside the range above.

    Raises
    ------
    TypeError, ValueError
        For arguments of the wrong type or outside their domain.

    References
    ----------
    Erlingsson et al., "Amplification by shuffling", SODA 2019, Thm 7; Balle et al., "The privacy
    blanket of the shuffle model", CRYPTO 2019, Thm 5.1.
    """
    n = check_analytic_users(num_users)
    eps0 = check_local_epsilon(local_epsilon)
    delta = check_delta(target_delta)
    value = 12.0 * eps0 * math.sqrt(math.log(1.0 / delta) / n)
    return _result(value, _range_problem(n, eps0, delta))


def efmrtt19_delta_result(*, num_users: int, local_epsilon: float, target_epsilon: float) -> BoundResult:
    """δ(ε) of EFMRTT19 Thm 7, the closed-form inverse ``exp(-n (ε / (12 ε0))^2)``.

    Parameters
    ----------
    num_users : int
        Number of users ``n`` (valid for ``n >= 1000``).
    local_epsilon : float
        ε0 (valid for ``ε0 < 1/2``).
    target_epsilon : float
        ε >= 0 at which δ is evaluated.

    Returns
    -------
    BoundResult
        δ, or ``nan`` when the parameters are outside the range or the resulting δ is not
        below 1/100 (the theorem says nothing there).

    References
    ----------
    Erlingsson et al., SODA 2019, Thm 7 (BBGN19 Thm 5.1).
    """
    n = check_analytic_users(num_users)
    eps0 = check_local_epsilon(local_epsilon)
    eps = check_target_epsilon(target_epsilon)
    ratio = eps / (12.0 * eps0)
    # A huge ε overflows the square; δ is then 0 (the exponent is -inf).
    value = math.exp(-n * ratio * ratio) if ratio < 1e150 else 0.0
    return _result(value, _range_problem(n, eps0, value))


def efmrtt19_local_epsilon_result(*, num_users: int, target_epsilon: float, target_delta: float) -> BoundResult:
    """Largest ε0 for which EFMRTT19 certifies ``(ε, δ)``: ``ε / (12 sqrt(log(1/δ)/n))``.

    Parameters
    ----------
    num_users : int
        Number of users (valid for ``n >= 1000``).
    target_epsilon : float
        Target central ε > 0.
    target_delta : float
        Target δ (valid for ``δ < 1/100``).

    Returns
    -------
    BoundResult
        ε0, or ``nan`` if it is not below 1/2 or another condition of Thm 5.1 fails.

    References
    ----------
    Erlingsson et al., SODA 2019, Thm 7 (BBGN19 Thm 5.1); calibration as in BBGN19's code.
    """
    n = check_analytic_users(num_users)
    eps = check_target_epsilon(target_epsilon)
    delta = check_delta(target_delta)
    value = eps / (12.0 * math.sqrt(math.log(1.0 / delta) / n))
    return _result(value, _range_problem(n, value, delta))


efmrtt19_epsilon = plain_float(efmrtt19_epsilon_result)
efmrtt19_delta = plain_float(efmrtt19_delta_result)
efmrtt19_local_epsilon = plain_float(efmrtt19_local_epsilon_result)
