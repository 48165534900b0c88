"""Girgis–Data–Diggavi–Kairouz–Suresh, CCS'21: RDP of the shuffle model, upper and lower bounds.

**Upper bound** (Thm 3.1, "Upper Bound 1"), any ``n``, ``ε0 >= 0``, integer ``λ >= 2``:

.. math:: \\varepsilon(\\lambda) \\le \\frac{1}{\\lambda-1}\\log\\Big(1
          + \\binom\\lambda2\\frac{(e^{\\varepsilon_0}-1)^2}{\\bar n e^{\\varepsilon_0}}
          + \\sum_{i=3}^{\\lambda}\\binom\\lambda i\\, i\\,\\Gamma(i/2)
            \\Big(\\frac{(e^{2\\varepsilon_0}-1)^2}{2e^{2\\varepsilon_0}\\bar n}\\Big)^{i/2}
          + e^{\\varepsilon_0\\lambda - \\frac{n-1}{8e^{\\varepsilon_0}}}\\Big),
          \\qquad \\bar n = \\Big\\lfloor\\frac{n-1}{2e^{\\varepsilon_0}}\\Big\\rfloor + 1.

Non-integer orders use eq. (7), the convexity of ``(λ-1) ε(λ)``:
``(λ-1) ε(λ) <= θ (⌊λ⌋-1) ε(⌊λ⌋) + (1-θ) (⌈λ⌉-1) ε(⌈λ⌉)``, ``θ = ⌈λ⌉ - λ`` (for ``λ < 2`` the
``⌊λ⌋ = 1`` term vanishes). The result is **always** the minimum with the tight RDP of ε0-DP
(:func:`.rdp.rdp_pure_dp`): the shuffled output is ε0-DP, and the sum above explodes once
``n e^{-ε0} <~ e^{2ε0}`` (then the bound is also non-monotone in λ).
Simplified Cor 3.2 and "Upper Bound 2" (Thm 3.3) are not implemented (their statements could not be
checked against the paper).

**Lower bound** (§3.2 construction): binary RR with ``p = 1/(e^{ε0}+1)``, ``D = 0^n``,
``D' = 0^{n-1}1``; the histogram is ``K ~ Bin(n, p)`` under ``D`` and the likelihood ratio is
``r(k) = 1 + (e^{2ε0}-1)(k - np)/(n e^{ε0})``, so

.. math:: \\varepsilon(\\lambda) \\ge D_\\lambda(M(D')\\|M(D))
          = \\frac{1}{\\lambda-1}\\log \\mathbb E_{K}\\big[r(K)^\\lambda\\big],

evaluated exactly over ``k = 0..n`` for any real ``λ > 1`` (re-derived from the construction; see
``docs/mathematics.md#baselines``).
"""

from __future__ import annotations

import math

import numpy as np
from scipy.special import expit, gammaln

from .._validation import check_delta, check_int
from ..mechanisms._binomial import binomial_logpmf  # the accurate log-pmf (Boost), not gammaln differences
from ._common import (
    check_analytic_users,
    BoundResult,
    check_alpha,
    check_flag,
    check_linear_users,
    check_local_epsilon,
    check_target_epsilon,
    log_expm1,
    log_sum_exp,
    plain_float,
)
from .rdp import (
    DEFAULT_ORDERS,
    as_output,
    rdp_to_dp_delta_result,
    rdp_to_dp_epsilon_result,
    tight_pure_dp_rdp,
)

__all__ = [
    "gddks21_dp_delta",
    "gddks21_dp_delta_result",
    "gddks21_dp_epsilon",
    "gddks21_dp_epsilon_result",
    "gddks21_rdp_lower",
    "gddks21_rdp_upper",
]


#: Largest RDP order of the Thm 3.1 upper bound: its sum over i = 3..λ costs O(λ) time and memory per order
#: (the default orders end at 20000; 10**6 takes ~0.1 s and 8 MB).
MAX_ORDER = 10**6


def _thm31_integer(n: int, eps0: float, order: int) -> float:
    """Thm 3.1 at an integer order >= 2, every term in log space."""
    log_nbar = math.log(math.floor((n - 1) * math.exp(-eps0) / 2.0) + 1.0)
    lam = float(order)
    log_binom2 = math.log(lam * (lam - 1.0) / 2.0)
    terms = [
        log_binom2 + 2.0 * log_expm1(eps0) - log_nbar - eps0,
        eps0 * lam - (n - 1) * math.exp(-eps0) / 8.0,
    ]
    if order >= 3:
        i = np.arange(3, order + 1, dtype=float)
        log_z = 2.0 * log_expm1(2.0 * eps0) - math.log(2.0) - 2.0 * eps0 - log_nbar
        log_binom = gammaln(lam + 1.0) - gammaln(i + 1.0) - gammaln(lam - i + 1.0)
        terms.append(log_sum_exp(log_binom + np.log(i) + gammaln(i / 2.0) + i / 2.0 * log_z))
    return float(np.logaddexp(0.0, log_sum_exp(terms))) / (lam - 1.0)


def gddks21_rdp_upper(
    *, num_users: int, local_epsilon: float, alpha: float | np.ndarray
) -> float | np.ndarray:
    """RDP upper bound of GDDKS21 Thm 3.1, combined (min) with the tight RDP of ε0-DP.

    Parameters
    ----------
    num_users : int
        Number of users n >= 1.
    local_epsilon : float
        ε0 > 0 of the (discrete-output) local randomizers.
    alpha : float or array_like
        Orders λ > 1; non-integers by eq. (7).

    Returns
    -------
    float or numpy.ndarray
        Upper bound on ε(λ), same shape as ``alpha``.

    References
    ----------
    Girgis, Data, Diggavi, Kairouz, Suresh, "On the Rényi differential privacy of the shuffle
    model", CCS 2021, Thm 3.1 and eq. (7).
    """
    n = check_analytic_users(num_users)
    eps0 = check_local_epsilon(local_epsilon)
    orders = check_alpha(alpha, MAX_ORDER)
    low, high = np.floor(orders), np.ceil(orders)
    integers = np.unique(np.concatenate([low.ravel(), high.ravel()]))
    integers = integers[integers >= 2]
    pure = tight_pure_dp_rdp(eps0, integers)
    capped = {int(o): min(_thm31_integer(n, eps0, int(o)), p) for o, p in zip(integers, pure)}
    scaled = {1: 0.0, **{o: (o - 1) * v for o, v in capped.items()}}  # (λ-1) ε(λ)
    theta = high - orders
    combined = np.array(
        [
            t * scaled[int(lo)] + (1.0 - t) * scaled[int(hi)]
            for t, lo, hi in zip(theta.ravel(), low.ravel(), high.ravel())
        ]
    ).reshape(orders.shape) / (orders - 1.0)
    return as_output(np.minimum(combined, tight_pure_dp_rdp(eps0, orders)), alpha)


def _log_mean_excess(log_pmf: np.ndarray, log_ratio: np.ndarray, beta: float) -> float:
    """``log E[r^β - 1 - β(r-1)]`` (every term >= 0 by convexity, so no cancellation in the sum).

    With ``u = r - 1`` and ``L = β log r``: terms with ``L <= 1`` use ``expm1(L) - βu``, larger ones
    ``log g = L + log1p(-(1+βu) e^{-L})``.
    """
    u = np.expm1(log_ratio)
    log_power = beta * log_ratio
    small = log_power <= 1.0
    log_terms = np.empty_like(u)
    with np.errstate(divide="ignore"):  # a term that rounds to 0 contributes log 0 = -inf
        log_terms[small] = np.log(np.maximum(np.expm1(log_power[small]) - beta * u[small], 0.0))
    large = log_power[~small]
    log_terms[~small] = large + np.log1p(-(1.0 + beta * u[~small]) * np.exp(-large))
    return log_sum_exp(log_pmf + log_terms)


def gddks21_rdp_lower(
    *, num_users: int, local_epsilon: float, alpha: float | np.ndarray, both_directions: bool = False
) -> float | np.ndarray:
    """Exact RDP of shuffled binary RR on ``0^n`` vs ``0^{n-1}1``: GDDKS21's lower bound (§3.2).

    ``E[r^λ] = 1 + E[(1+u)^λ - 1 - λu]`` with ``u = r - 1`` (``E u = 0``): a sum of non-negative terms
    evaluated in log space, accurate even when the divergence is tiny.

    Parameters
    ----------
    num_users : int
        Number of users n >= 1.
    local_epsilon : float
        ε0 > 0.
    alpha : float or array_like
        Orders λ > 1 (any real).
    both_directions : bool
        Also evaluate ``D_λ(M(D)||M(D'))`` (``E[r^{1-λ}]``) and return the larger of the two.

    Returns
    -------
    float or numpy.ndarray
        A lower bound on the worst-case RDP of shuffling ε0-LDP randomizers, same shape as
        ``alpha``. Cost ``O(n)`` per order.

    References
    ----------
    Girgis, Data, Diggavi, Kairouz, Suresh, CCS 2021, §3.2 (construction; closed form re-derived).
    """
    n = check_linear_users(num_users, "gddks21_rdp_lower", "gddks21_rdp_upper (an upper bound)")
    eps0 = check_local_epsilon(local_epsilon)
    orders = check_alpha(alpha)
    both = check_flag("both_directions", both_directions)
    k = np.arange(n + 1, dtype=float)
    log_pmf = binomial_logpmf(k, n, expit(-eps0))
    with np.errstate(divide="ignore"):  # log(k/n) = -inf at k = 0, log(1 - k/n) = -inf at k = n
        log_ratio = np.logaddexp(np.log(k / n) + eps0, np.log1p(-k / n) - eps0)  # log r(k)
    values = []
    for lam in orders.ravel():
        exponents = (lam, 1.0 - lam) if both else (lam,)
        log_excess = max(_log_mean_excess(log_pmf, log_ratio, b) for b in exponents)
        values.append(float(np.logaddexp(0.0, log_excess)) / (lam - 1.0))
    return as_output(np.array(values).reshape(orders.shape), alpha)


def _composed_curve(
    num_users: int, local_epsilon: float, rounds: int, alpha: float | np.ndarray | None
) -> tuple[np.ndarray, np.ndarray]:
    count = check_int("rounds", rounds)
    orders = DEFAULT_ORDERS if alpha is None else check_alpha(alpha, MAX_ORDER).ravel()
    curve = np.asarray(gddks21_rdp_upper(num_users=num_users, local_epsilon=local_epsilon, alpha=orders))
    return count * curve, orders


def gddks21_dp_epsilon_result(
    *,
    num_users: int,
    local_epsilon: float,
    target_delta: float,
    rounds: int = 1,
    alpha: float | np.ndarray | None = None,
    conversion: str = "improved",
) -> BoundResult:
    """ε(δ) after ``rounds`` shuffle rounds: GDDKS21 Thm 3.1 (capped), composed additively, converted.

    Parameters
    ----------
    num_users : int
        Number of users n per round.
    local_epsilon : float
        ε0 > 0.
    target_delta : float
        δ in (0, 1) of the composition.
    rounds : int
        Number of identical rounds (RDP adds up, GDDKS21 Lemma 2.2).
    alpha : array_like, optional
        Orders to minimise over; default :data:`.rdp.DEFAULT_ORDERS` (2..256 and up to 20000).
    conversion : {"improved", "classic"}
        GDDKS21 Lemma 2.1 or Mironov'17 Prop. 3.

    Returns
    -------
    BoundResult
        ``details["alpha"]`` is the optimal order.

    References
    ----------
    Girgis et al., CCS 2021, Thm 3.1, Lemmas 2.1 and 2.2.
    """
    delta = check_delta(target_delta)
    curve, orders = _composed_curve(num_users, local_epsilon, rounds, alpha)
    return rdp_to_dp_epsilon_result(rdp=curve, alpha=orders, target_delta=delta, conversion=conversion)


def gddks21_dp_delta_result(
    *,
    num_users: int,
    local_epsilon: float,
    target_epsilon: float,
    rounds: int = 1,
    alpha: float | np.ndarray | None = None,
    conversion: str = "improved",
) -> BoundResult:
    """δ(ε) after ``rounds`` shuffle rounds from GDDKS21 Thm 3.1 (see :func:`gddks21_dp_epsilon_result`)."""
    eps = check_target_epsilon(target_epsilon)
    curve, orders = _composed_curve(num_users, local_epsilon, rounds, alpha)
    return rdp_to_dp_delta_result(rdp=curve, alpha=orders, target_epsilon=eps, conversion=conversion)


gddks21_dp_epsilon = plain_float(gddks21_dp_epsilon_result)
gddks21_dp_delta = plain_float(gddks21_dp_delta_result)
