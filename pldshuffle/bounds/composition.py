"""Composition of ``(ε, δ)`` guarantees over rounds, and its application to any ε(δ) baseline.

* :func:`basic_composition`: ``k`` rounds of ``(ε, δ)`` are ``(kε, kδ)``-DP.
* :func:`advanced_composition` (Dwork–Rothblum–Vadhan'10; Dwork–Roth Thm 3.20):
  ``(sqrt(2k log(1/δ')) ε + k ε (e^ε - 1), kδ + δ')``.
* :func:`kov_composition_bound` (Kairouz–Oh–Viswanath'15 Thm 3.4, homogeneous case):
  ``ε̃ = min{kε, kε tanh(ε/2) + ε sqrt(2k log(e + sqrt(k ε²)/δ̃)),
  kε tanh(ε/2) + ε sqrt(2k log(1/δ̃))}``
  with ``δ_tot = 1 - (1 - δ̃)(1 - δ)^k``. (``(e^ε - 1)/(e^ε + 1) = tanh(ε/2)``.)
* :func:`kov_exact_delta` / :func:`kov_exact_epsilon` (KOV15 Thm 3.3, optimal for homogeneous
  composition): ``δ_tot(ε_g) = 1 - (1-δ)^k (1 - Σ_l C(k,l) [e^{(k-l)ε} - e^{ε_g} e^{lε}]_+ / (1+e^ε)^k)``.
* :func:`compose_epsilon_result`: applies one of these to a per-round ε(δ) baseline, splitting
  ``δ_tot`` into the rounds' share ``k δ_round`` and the slack ``δ'`` and optimising the split
  fraction over a 60-point grid, logarithmic towards both ends; the chosen split is reported in
  ``details``. Each method is reported on its own (no silent minimum with basic composition).

RDP curves compose additively: :func:`.rdp.rdp_compose`.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from scipy.special import gammaln

from .._validation import check_choice, check_delta, check_epsilon, check_int, check_probability
from ..pld.inversion import ROOT_XTOL, refine
from ._common import (
    BoundResult,
    check_target_epsilon,
    log1mexp,
    log_sum_exp,
    no_guarantee,
    plain_float,
)

__all__ = [
    "COMPOSITION_METHODS",
    "DPGuarantee",
    "advanced_composition",
    "basic_composition",
    "compose_epsilon",
    "compose_epsilon_result",
    "kov_composition_bound",
    "kov_exact_delta",
    "kov_exact_epsilon",
]

#: Methods accepted by :func:`compose_epsilon_result`.
COMPOSITION_METHODS = ("basic", "advanced", "kov_bound", "kov_exact")

#: Split fractions ``k δ_round / δ_tot`` tried by :func:`compose_epsilon_result` (60 points).
SPLIT_FRACTIONS = np.concatenate([np.geomspace(1e-6, 0.5, 30), 1.0 - np.geomspace(0.5, 1e-6, 31)[1:]])


@dataclass(frozen=True)
class DPGuarantee:
    """An ``(ε, δ)``-DP guarantee."""

    epsilon: float
    delta: float


#: Largest ``rounds`` of the exact KOV15 formula, which sums over ``l = 0..k/2`` (O(k) time and memory:
#: ~40 MB per array at the limit); beyond it use ``kov_composition_bound``.
MAX_EXACT_ROUNDS = 10**7


def _round(round_epsilon: object, round_delta: object, rounds: object, max_rounds: int | None = None) -> tuple[float, float, int]:
    eps = check_epsilon(round_epsilon, "round_epsilon")
    delta = check_probability("round_delta", round_delta, low_open=False, high_open=True)
    return eps, delta, check_int("rounds", rounds, maximum=max_rounds)


def _total_delta(round_delta: float, rounds: int, slack: float) -> float:
    """``1 - (1 - slack)(1 - δ)^k`` without cancellation."""
    return -math.expm1(math.log1p(-slack) + rounds * math.log1p(-round_delta))


def basic_composition(*, round_epsilon: float, round_delta: float, rounds: int) -> DPGuarantee:
    """``k``-fold composition of ``(ε, δ)``-DP is ``(kε, kδ)``-DP (δ capped at 1).

    Parameters
    ----------
    round_epsilon, round_delta : float
        Per-round guarantee, ``ε >= 0`` and ``δ ∈ [0, 1)``.
    rounds : int
        Number of rounds k >= 1.

    Returns
    -------
    DPGuarantee
    """
    eps, delta, k = _round(round_epsilon, round_delta, rounds)
    return DPGuarantee(k * eps, min(1.0, k * delta))


def advanced_composition(
    *, round_epsilon: float, round_delta: float, rounds: int, slack_delta: float
) -> DPGuarantee:
    """Advanced composition: ``(sqrt(2k log(1/δ')) ε + kε(e^ε - 1), kδ + δ')``.

    Parameters
    ----------
    round_epsilon, round_delta, rounds
        As in :func:`basic_composition`.
    slack_delta : float
        δ' in (0, 1).

    References
    ----------
    Dwork, Rothblum, Vadhan, FOCS 2010; Dwork & Roth 2014, Thm 3.20; EFMRTT19 Thm 2.
    """
    eps, delta, k = _round(round_epsilon, round_delta, rounds)
    slack = check_delta(slack_delta, "slack_delta")
    growth = math.inf if eps > 700.0 else math.expm1(eps)  # e^ε overflows: the bound is +inf (vacuous)
    value = math.sqrt(2.0 * k * math.log(1.0 / slack)) * eps + k * eps * growth
    return DPGuarantee(value, min(1.0, k * delta + slack))


def kov_composition_bound(
    *, round_epsilon: float, round_delta: float, rounds: int, slack_delta: float
) -> DPGuarantee:
    """Kairouz–Oh–Viswanath'15 Thm 3.4 (homogeneous rounds), slack δ̃ = ``slack_delta``.

    Parameters and return as in :func:`advanced_composition`; the total δ is
    ``1 - (1 - δ̃)(1 - δ)^k``.

    References
    ----------
    Kairouz, Oh, Viswanath, "The composition theorem for differential privacy", ICML 2015, Thm 3.4.
    """
    eps, delta, k = _round(round_epsilon, round_delta, rounds)
    slack = check_delta(slack_delta, "slack_delta")
    drift = k * eps * math.tanh(eps / 2.0)
    spread = math.sqrt(2.0 * k) * eps
    value = min(
        k * eps,
        drift + spread * math.sqrt(math.log(math.e + math.sqrt(k) * eps / slack)),
        drift + spread * math.sqrt(math.log(1.0 / slack)),
    )
    return DPGuarantee(value, _total_delta(delta, k, slack))


def _slack(total_delta: float, round_delta: float, rounds: int) -> float:
    """δ̃ with ``1 - (1 - δ̃)(1 - δ_round)^k = δ_tot``, i.e. ``1 - (1 - δ_tot)/(1 - δ_round)^k``."""
    return -math.expm1(math.log1p(-total_delta) - rounds * math.log1p(-round_delta))


@functools.lru_cache(maxsize=16)
def _log_binomials(k: int) -> tuple[np.ndarray, np.ndarray]:
    """``l = 0..⌊k/2⌋`` and ``log C(k, l)`` (cached: inversions evaluate the same k many times)."""
    l = np.arange(0, k // 2 + 1, dtype=float)
    return l, gammaln(k + 1.0) - gammaln(l + 1.0) - gammaln(k - l + 1.0)


def _log_hockey_stick(eps: float, k: int, epsilon: float) -> float:
    """``log Σ_l C(k,l) [e^{(k-l)ε} - e^{ε_g + lε}]_+ / (1+e^ε)^k``: k-fold binary RR at ε_g."""
    l, log_binomials = _log_binomials(k)
    exponent = epsilon - (k - 2.0 * l) * eps
    positive = exponent < 0.0  # the term of l is positive iff (k - 2l) ε > ε_g
    if not positive.any():
        return -math.inf
    log_terms = log_binomials[positive] + (k - l[positive]) * eps + np.log(-np.expm1(exponent[positive]))
    return log_sum_exp(log_terms) - k * float(np.logaddexp(0.0, eps))


def kov_exact_delta(*, round_epsilon: float, round_delta: float, rounds: int, target_epsilon: float) -> float:
    """Optimal δ of ``k``-fold composition of ``(ε, δ)``-DP at total ε = ``target_epsilon`` (KOV15 Thm 3.3).

    .. math:: \\delta_{tot} = 1 - (1-\\delta)^k\\Big(1 - \\sum_{l}\\binom kl
              \\frac{[e^{(k-l)\\varepsilon} - e^{\\varepsilon_g}e^{l\\varepsilon}]_+}{(1+e^\\varepsilon)^k}\\Big)

    computed in log space. At ``k = 1`` it is the hockey-stick divergence of randomized response.

    Parameters
    ----------
    round_epsilon, round_delta, rounds
        As in :func:`basic_composition`.
    target_epsilon : float
        Total ε_g >= 0.

    Returns
    -------
    float

    References
    ----------
    Kairouz, Oh, Viswanath, ICML 2015, Thm 3.3.
    """
    eps, delta, k = _round(round_epsilon, round_delta, rounds, MAX_EXACT_ROUNDS)
    target = check_target_epsilon(target_epsilon)
    log_hockey = min(0.0, _log_hockey_stick(eps, k, target))
    return -math.expm1(k * math.log1p(-delta) + log1mexp(log_hockey))


def kov_exact_epsilon(*, round_epsilon: float, round_delta: float, rounds: int, target_delta: float) -> float:
    """Smallest total ε with :func:`kov_exact_delta` ``<= target_delta`` (``nan`` if even ``kε`` fails).

    Parameters
    ----------
    round_epsilon, round_delta, rounds
        As in :func:`basic_composition`.
    target_delta : float
        Total δ in (0, 1).

    References
    ----------
    Kairouz, Oh, Viswanath, ICML 2015, Thm 3.3.
    """
    eps, delta, k = _round(round_epsilon, round_delta, rounds, MAX_EXACT_ROUNDS)
    target = check_delta(target_delta)
    slack = _slack(target, delta, k)  # allowed hockey-stick mass
    if not slack > 0.0:
        return math.nan
    if _log_hockey_stick(eps, k, 0.0) <= math.log(slack):
        return 0.0
    # δ_tot is non-increasing in ε_g and equals the rounds' own share at ε_g = kε (hockey stick 0)
    return refine(lambda x: math.exp(_log_hockey_stick(eps, k, x)) - slack, k * eps, 0.0, ROOT_XTOL)


def _compose_once(method: str, eps: float, round_delta: float, k: int, slack: float) -> float:
    if method == "advanced":
        return advanced_composition(
            round_epsilon=eps, round_delta=round_delta, rounds=k, slack_delta=slack
        ).epsilon
    if method == "kov_bound":
        return kov_composition_bound(
            round_epsilon=eps, round_delta=round_delta, rounds=k, slack_delta=slack
        ).epsilon
    return kov_exact_epsilon(round_epsilon=eps, round_delta=0.0, rounds=k, target_delta=slack)


def compose_epsilon_result(
    epsilon_of_delta: Callable[..., float], *, rounds: int, target_delta: float, method: str = "kov_exact"
) -> BoundResult:
    """Total ε after ``rounds`` rounds of a per-round ε(δ) baseline, with the δ split optimised.

    ``δ_tot`` is split into the rounds' share ``k δ_round = f δ_tot`` and the slack; for ``basic``
    the whole of ``δ_tot`` goes to the rounds (``f = 1``). For the others ``f`` runs over 60 values,
    logarithmic towards 0 and 1. ``kov_bound`` and ``kov_exact`` charge the slack exactly,
    ``δ̃ = 1 - (1 - δ_tot)/(1 - δ_round)^k``, which stays positive at ``f = 1`` (``(1-δ)^k > 1 - kδ``),
    so ``f = 1`` is tried as well and ``kov_exact`` is never worse than ``basic``. Splits at which the
    baseline gives ``nan`` are skipped.

    Parameters
    ----------
    epsilon_of_delta : callable
        Per-round ε(δ), called as ``epsilon_of_delta(target_delta=δ_round)``, e.g.
        ``functools.partial(fmt20_epsilon, num_users=10**4, local_epsilon=2.0)``. It may return a float
        or a :class:`BoundResult`.
    rounds : int
        Number of rounds k >= 1.
    target_delta : float
        Total δ in (0, 1).
    method : {"basic", "advanced", "kov_bound", "kov_exact"}

    Returns
    -------
    BoundResult
        ``nan`` if the baseline gives no guarantee at any split. ``details``: ``split_fraction``
        (f), ``round_delta``, ``round_epsilon``, ``slack_delta``.

    Examples
    --------
    >>> from functools import partial
    >>> from pldshuffle.bounds import fmt20_epsilon
    >>> per_round = partial(fmt20_epsilon, num_users=10**5, local_epsilon=2.0)
    >>> r = compose_epsilon_result(per_round, rounds=100, target_delta=1e-6, method="kov_bound")
    >>> round(r.value, 3), round(100 * per_round(target_delta=1e-8), 3)  # vs basic composition
    (13.746, 20.989)
    >>> r.details["split_fraction"]
    0.5
    """
    if not callable(epsilon_of_delta):
        raise TypeError(f"epsilon_of_delta must be callable as f(target_delta=...), got {epsilon_of_delta!r}")
    k = check_int("rounds", rounds)
    total = check_delta(target_delta)
    name = check_choice("method", method, COMPOSITION_METHODS)
    if name == "basic":
        fractions = [1.0]
    elif name == "advanced":
        fractions = SPLIT_FRACTIONS.tolist()  # f = 1 would leave δ' = 0
    else:
        fractions = [*SPLIT_FRACTIONS.tolist(), 1.0]
    best: BoundResult | None = None
    for f in fractions:
        round_delta = f * total / k
        eps = float(epsilon_of_delta(target_delta=round_delta))
        if math.isnan(eps):
            continue
        if name == "basic":
            slack, value = 0.0, k * eps
        else:
            slack = (1.0 - f) * total if name == "advanced" else _slack(total, round_delta, k)
            # no slack left (f = 1, k = 1 or rounding): k ε is certified by basic composition
            value = _compose_once(name, eps, round_delta, k, slack) if slack > 0.0 else k * eps
        if not math.isnan(value) and (best is None or value < best.value):
            details = {
                "split_fraction": f,
                "round_delta": round_delta,
                "round_epsilon": eps,
                "slack_delta": slack,
            }
            best = BoundResult(value, details=details)
    if best is None:
        return no_guarantee(
            f"the per-round baseline gives no guarantee at any split of target_delta={total:g}"
        )
    return best


compose_epsilon = plain_float(compose_epsilon_result)
