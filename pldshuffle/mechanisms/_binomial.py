"""Binomial log-pmfs and tail windows shared by the mechanisms.

Windows are chosen with exact tail masses (``scipy.stats.binom`` cdf/sf, Boost-accurate), not with
Hoeffding's bound, so they are as narrow as the tolerance allows; the dropped mass is returned so that
callers can book it (core spec §3.1).
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray
from scipy import special, stats

__all__ = ["binomial_window", "binomial_logpmf"]


def binomial_window(trials: int, prob: float, tail_mass: float) -> tuple[int, int, float]:
    """Smallest central window ``[lo, hi]`` of ``Bin(trials, prob)`` whose two tails each hold ≤ tail_mass/2.

    Returns ``(lo, hi, dropped)`` where ``dropped = P[X < lo] + P[X > hi]`` is computed exactly.
    Integer bisection on the (monotone) cdf and sf: O(log trials) scipy calls.
    """
    if trials == 0 or prob <= 0.0:
        return 0, 0, 0.0
    if prob >= 1.0:
        return trials, trials, 0.0
    # bdtr/bdtrc are the Cephes binomial cdf/sf ufuncs: exact to rounding and ~50x faster than stats.binom.
    cdf = lambda k: float(special.bdtr(k, trials, prob)) if k >= 0 else 0.0  # noqa: E731
    sf = lambda k: float(special.bdtrc(k, trials, prob)) if k < trials else 0.0  # noqa: E731
    half = tail_mass / 2.0
    mode = int(np.floor((trials + 1) * prob))
    # lo = smallest k with P[X < k] > half, minus nothing: largest k such that P[X <= k-1] <= half.
    a, b = 0, min(mode, trials)
    while a < b:
        mid = (a + b + 1) // 2
        if cdf(mid - 1) <= half:
            a = mid
        else:
            b = mid - 1
    lo = a
    # hi = smallest k >= mode with P[X > k] <= half.
    a, b = max(mode, lo), trials
    while a < b:
        mid = (a + b) // 2
        if sf(mid) <= half:
            b = mid
        else:
            a = mid + 1
    hi = a
    dropped = cdf(lo - 1) + sf(hi)
    return lo, hi, dropped


def binomial_logpmf(k: NDArray[np.int64], trials: int, prob: float) -> NDArray[np.float64]:
    """``log Bin(trials, prob)(k)`` (``-inf`` outside ``0..trials``), vectorised."""
    return stats.binom.logpmf(k, trials, prob)
