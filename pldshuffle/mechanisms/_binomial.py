"""Binomial log-pmfs and tail windows shared by the mechanisms.

Windows are chosen by bisection on the binomial cdf/sf (not by Hoeffding's bound), so they are as narrow as
the tolerance allows; the mass they drop is computed with Boost (the ufuncs behind ``scipy.stats.binom``)
and returned so that callers can book it.  ``scipy.special`` (~0.3 s to import) is imported on first use,
not with the module; ``scipy.stats`` (~1 s) is not needed.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from functools import cache

import numpy as np
from numpy.typing import ArrayLike, NDArray

from .._kernels import two_binomial_cuts

__all__ = [
    "binomial_cdf",
    "binomial_logpmf",
    "binomial_logpmf_within",
    "binomial_pmf",
    "binomial_sf",
    "binomial_window",
    "binomial_windows",
    "binomial_windows_sampled",
    "two_binomial_tails",
]


@cache
def _boost() -> tuple[Callable, Callable, Callable]:
    """Boost's binomial ``(pmf, cdf, sf)`` ufuncs -- what ``scipy.stats.binom`` evaluates -- taken from
    ``scipy.special`` so that ``scipy.stats`` (~1 s to import) is not needed; the public
    ``scipy.stats.binom`` methods where this SciPy does not expose them."""
    try:
        from scipy.special._ufuncs import _binom_cdf, _binom_pmf, _binom_sf
    except ImportError:  # pragma: no cover - older SciPy
        from scipy import stats

        return stats.binom.pmf, stats.binom.cdf, stats.binom.sf
    return _binom_pmf, _binom_cdf, _binom_sf


def binomial_pmf(k: ArrayLike, trials: ArrayLike, prob: float) -> NDArray[np.float64]:
    """``P[X = k]`` for ``X ~ Bin(trials, prob)`` by Boost (0 outside ``0..trials``)."""
    k, trials = np.asarray(k), np.asarray(trials)
    inside = (k >= 0) & (k <= trials)
    return np.where(inside, _boost()[0](np.clip(k, 0, trials), trials, prob), 0.0)


def binomial_cdf(k: ArrayLike, trials: ArrayLike, prob: float) -> NDArray[np.float64]:
    """``P[X <= k]`` for ``X ~ Bin(trials, prob)`` by Boost (0 for ``k < 0``, 1 for ``k >= trials``)."""
    k, trials = np.asarray(k), np.asarray(trials)
    inner = _boost()[1](np.clip(k, 0, trials), trials, prob)
    return np.where(k < 0, 0.0, np.where(k >= trials, 1.0, inner))


def binomial_sf(k: ArrayLike, trials: ArrayLike, prob: float) -> NDArray[np.float64]:
    """``P[X > k]`` for ``X ~ Bin(trials, prob)`` by Boost (1 for ``k < 0``, 0 for ``k >= trials``)."""
    k, trials = np.asarray(k), np.asarray(trials)
    inner = _boost()[2](np.clip(k, 0, trials), trials, prob)
    return np.where(k < 0, 1.0, np.where(k >= trials, 0.0, inner))


def _cdf(k: NDArray[np.int64], trials: NDArray[np.int64], prob: float) -> NDArray[np.float64]:
    """P[X <= k] by Cephes' ``bdtr`` (a fast ufunc; used only to *choose* windows, whose dropped mass is
    then computed with Boost), 0 for k < 0."""
    from scipy import special

    return np.where(k < 0, 0.0, special.bdtr(np.maximum(k, 0), trials, prob))


def _sf(k: NDArray[np.int64], trials: NDArray[np.int64], prob: float) -> NDArray[np.float64]:
    """P[X > k] by Cephes' ``bdtrc``, 0 for k >= trials."""
    from scipy import special

    return np.where(k >= trials, 0.0, special.bdtrc(np.minimum(k, trials), trials, prob))


def binomial_windows(
    trials: NDArray[np.int64], prob: float, tail_mass: float | NDArray[np.float64]
) -> tuple[NDArray[np.int64], NDArray[np.int64]]:
    """Central windows of many binomials at once.

    Smallest ``[lo, hi]`` with ``P[X < lo] ≤ tail_mass/2`` and ``P[X > hi] ≤ tail_mass/2`` for
    ``X ~ Bin(trials, prob)``, one window per entry of ``trials`` (``tail_mass`` scalar or per entry).
    Integer bisection on the cdf/sf of all unfinished entries at once, from Hoeffding's brackets narrowed
    to ±16 around Cornish-Fisher guesses wherever two evaluations confirm the answer lies inside (the
    same answer, ~7 instead of ~20 steps at large ``trials``); for ``prob = 1/2`` the upper end follows
    by symmetry.  O(log max(trials)) vectorised scipy calls, O(K log N) work for K entries (a scalar
    ``binomial_window`` call costs ~3 ms; this ~1 µs per entry and step).  Cephes' ``bdtr`` chooses the
    windows: beyond 2^31 trials it returns NaN and Hoeffding's (wider, valid) window is kept.
    """
    trials = np.asarray(trials, dtype=np.int64)
    if prob <= 0.0:
        return np.zeros_like(trials), np.zeros_like(trials)
    if prob >= 1.0:
        return trials.copy(), trials.copy()
    half = np.broadcast_to(np.asarray(tail_mass, dtype=np.float64) / 2.0, trials.shape)
    mode = np.minimum(np.floor((trials + 1) * prob).astype(np.int64), trials)
    # Hoeffding, P[|X - np| >= s] <= e^{-2s²/n} each side, brackets both searches to O(√n) width.
    with np.errstate(divide="ignore"):
        log_tail = np.clip(-np.log(half), 0.0, 4.0 * np.log(2.0) * 1024)  # half = 0 needs the whole range
    reach = np.minimum(np.sqrt(trials * log_tail / 2.0), trials)
    floor_ok = np.clip(np.floor(trials * prob - reach).astype(np.int64), 0, mode)  # P[X <= k-1] <= half
    ceil_ok = np.clip(np.ceil(trials * prob + reach).astype(np.int64), mode, trials)  # P[X > k] <= half
    guess_lo, guess_hi = _quantile_guesses(trials, prob, half)
    # lo = largest k <= mode with P[X <= k-1] <= half: a satisfies it, b >= lo.
    a, b = floor_ok, mode.copy()
    _narrow(a, b, guess_lo, lambda k, act: _cdf(k - 1, trials[act], prob) <= half[act], keep_true_at_low=True)
    while (act := np.flatnonzero(a < b)).size:
        mid = (a[act] + b[act] + 1) // 2
        ok = _cdf(mid - 1, trials[act], prob) <= half[act]
        a[act[ok]] = mid[ok]
        b[act[~ok]] = mid[~ok] - 1
    lo = a
    if prob == 0.5:  # Bin(n, 1/2) is symmetric: P[X > n - lo] = P[X < lo]
        return lo, trials - lo
    # hi = smallest k >= mode with P[X > k] <= half: b satisfies it, a <= hi.
    a, b = np.maximum(mode, lo), ceil_ok
    _narrow(a, b, guess_hi, lambda k, act: _sf(k, trials[act], prob) <= half[act], keep_true_at_low=False)
    while (act := np.flatnonzero(a < b)).size:
        mid = (a[act] + b[act]) // 2
        ok = _sf(mid, trials[act], prob) <= half[act]
        b[act[ok]] = mid[ok]
        a[act[~ok]] = mid[~ok] + 1
    return lo, a


def binomial_windows_sampled(trials: NDArray[np.int64], prob: float, tail_mass: float, stride: int = 16) -> tuple[NDArray[np.int64], NDArray[np.int64]]:
    """Windows of tail at most ``tail_mass`` for a run of *consecutive* trial counts (``trials`` steps by
    +1 or -1), from :func:`binomial_windows` at every ``stride``-th entry (and the last).

    ``Bin(t, p)`` increases stochastically with ``t``: the lower end of the sampled entry with the fewest
    trials at or below ``t`` and the upper end of the one with the most trials at or above ``t`` leave at
    most ``tail_mass/2`` out on each side (at most ``stride·p`` values wider than the entry's own window).
    O(K/stride) entries searched, O(K) work.
    """
    trials = np.asarray(trials, dtype=np.int64)
    if trials.size <= 2 * stride or not 0.0 < prob < 1.0:  # (a point law: its one-value window exactly)
        return binomial_windows(trials, prob, tail_mass)
    steps = np.diff(trials)
    if not (np.all(steps == 1) or np.all(steps == -1)):
        raise ValueError("internal error: sampled windows need consecutive trial counts")
    at = np.unique(np.append(np.arange(0, trials.size, stride), trials.size - 1))
    lo_s, hi_s = binomial_windows(trials[at], prob, tail_mass)
    # entry i lies between samples at[s] and at[s + 1]: their lower and upper ends bracket its own
    s = np.minimum(np.searchsorted(at, np.arange(trials.size), side="right") - 1, at.size - 2)
    first, second = s, s + 1
    exact = at[s] == np.arange(trials.size)
    if steps[0] == 1:  # ascending: the earlier sample has fewer trials
        lo, hi = lo_s[first], hi_s[second]
    else:
        lo, hi = lo_s[second], hi_s[first]
    lo, hi = np.where(exact, lo_s[first], lo), np.where(exact, hi_s[first], hi)
    return np.minimum(lo, trials), np.minimum(hi, trials)


#: Half-width of the brackets around the Cornish-Fisher guesses of :func:`binomial_windows` (a guess is
#: within a few units of the answer once ``trials·p(1-p)`` is large; a wrong one costs two evaluations).
_GUESS_REACH = 16
#: Brackets narrower than this are searched without a guess.
_MIN_NARROWED = 64


def _quantile_guesses(trials: NDArray[np.int64], prob: float, half: NDArray[np.float64]) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Cornish-Fisher guesses of the window ends of :func:`binomial_windows`: the ``half`` and
    ``1 - half`` quantiles ``μ + σz + (z² - 1)(1 - 2p)/6`` (``z`` the normal quantile), plus one for the
    lower end (its condition is on ``k - 1``); NaN where no guess is possible (``half = 0``)."""
    from scipy.special import ndtri

    with np.errstate(divide="ignore", invalid="ignore"):
        z = ndtri(half)  # <= 0
        mean, sd = trials * prob, np.sqrt(trials * prob * (1.0 - prob))
        skew = (z * z - 1.0) * (1.0 - 2.0 * prob) / 6.0
        low, high = mean + sd * z + skew + 1.0, mean - sd * z + skew
    bad = ~np.isfinite(z)
    return np.where(bad, np.nan, low), np.where(bad, np.nan, high)


def _narrow(a: NDArray[np.int64], b: NDArray[np.int64], guess: NDArray[np.float64],
            holds: Callable[[NDArray[np.int64], NDArray[np.int64]], NDArray[np.bool_]], *, keep_true_at_low: bool) -> None:
    """Shrink bisection brackets ``[a, b]`` in place to ``guess ± _GUESS_REACH`` where two evaluations of
    the monotone predicate ``holds(k, act)`` confirm that the answer lies inside.

    ``keep_true_at_low``: the predicate holds at ``a`` and the answer is its last ``k`` (the lower end);
    otherwise it holds at ``b`` and the answer is its first ``k`` (the upper end).  A bracket is only
    replaced by one that keeps the invariant, so the bisection finds the same answer either way.
    """
    act = np.flatnonzero(np.isfinite(guess) & (b - a > _MIN_NARROWED))
    if act.size == 0:
        return
    centre = np.round(guess[act]).astype(np.int64)
    lo = np.clip(centre - _GUESS_REACH, a[act], b[act])
    hi = np.clip(centre + _GUESS_REACH, a[act], b[act])
    if keep_true_at_low:  # need holds(lo) and not holds(hi + 1) (or hi = b)
        ok = holds(lo, act) & ((hi == b[act]) | ~holds(np.minimum(hi + 1, b[act]), act))
    else:  # need holds(hi) and not holds(lo - 1) (or lo = a)
        ok = holds(hi, act) & ((lo == a[act]) | ~holds(np.maximum(lo - 1, a[act]), act))
    a[act[ok]], b[act[ok]] = lo[ok], hi[ok]


def binomial_window(trials: int, prob: float, tail_mass: float) -> tuple[int, int, float]:
    """Window ``[lo, hi]`` of one ``Bin(trials, prob)`` (rule of :func:`binomial_windows`) and the mass it drops.

    Returns ``(lo, hi, dropped)`` with ``dropped = P[X < lo] + P[X > hi]`` computed exactly.
    """
    if trials == 0 or prob <= 0.0:
        return 0, 0, 0.0
    if prob >= 1.0:
        return trials, trials, 0.0
    lo, hi = (int(x[0]) for x in binomial_windows(np.array([trials]), prob, tail_mass))
    dropped = (float(binomial_cdf(lo - 1, trials, prob)) if lo > 0 else 0.0) + (
        float(binomial_sf(hi, trials, prob)) if hi < trials else 0.0
    )
    return lo, hi, dropped


def binomial_logpmf(k: NDArray[np.int64] | NDArray[np.float64], trials: NDArray[np.int64] | int, prob: float) -> NDArray[np.float64]:
    """``log Bin(trials, prob)(k)`` as accurate as Boost's pmf (≤ 1.3e-15 relative at the mode, up to ~5e-12
    several standard deviations out at 1e8 trials, measured against mpmath).

    ``scipy.stats.binom.logpmf`` goes through ``gammaln`` differences and loses accuracy with ``trials``
    (relative pmf error ~4e-10 at 1e5 trials, ~4e-9 at 1e6); ``binom.pmf`` (Boost) much less.  So take
    ``log(pmf)``, and the ``gammaln`` form only where the pmf is below 1e-290 (masses that small are irrelevant).
    """
    pmf = binomial_pmf(k, trials, prob)
    with np.errstate(divide="ignore"):
        out = np.log(pmf)
    k_all = np.asarray(k)
    n_all = np.broadcast_to(trials, k_all.shape)
    small = (pmf < 1e-290) & (k_all >= 0) & (k_all <= n_all)  # outside 0..trials the log-pmf is -inf
    if np.any(small):
        from scipy.special import gammaln, xlog1py, xlogy

        ks, ns = k_all[small].astype(np.float64), n_all[small].astype(np.float64)
        out[small] = gammaln(ns + 1) - gammaln(ks + 1) - gammaln(ns - ks + 1) + xlogy(ks, prob) + xlog1py(ns - ks, -prob)
    return out


def two_binomial_tails(ones: int, zeros: int, prob: float, tail_mass: float) -> tuple[int, int]:
    """Chernoff cuts ``(c_lo, c_hi)`` of ``N = Bin(ones, 1-prob) + Bin(zeros, prob)`` with
    ``P[N ≤ c_lo] ≤ tail_mass/2`` and ``P[N ≥ c_hi] ≤ tail_mass/2`` (``c_lo = -1`` / ``c_hi = ones+zeros+1``
    when no cut is that small).

    ``P[N ≤ c] ≤ exp(ψ(t) - tc)`` for ``t ≤ 0`` (``≥ c`` for ``t ≥ 0``), ``ψ(t) = a log(p + qe^t) +
    b log(q + pe^t)`` the log-mgf.  Along ``c = ψ'(t)`` the exponent ``g(t) = ψ(t) - tψ'(t)`` falls
    monotonically in ``|t|``: bisection on ``t`` for ``g(t) = log(tail_mass/2)``, then each cut is checked
    against the bound directly (so rounding can only move it outward).  O(1) (~100 scalar steps, jitted:
    :func:`~pldshuffle._kernels.two_binomial_cuts`).
    """
    cut_lo, cut_hi = two_binomial_cuts(int(ones), int(zeros), math.log(prob), math.log1p(-prob), math.log(tail_mass / 2.0) - 1e-6)
    return int(cut_lo), int(cut_hi)


def binomial_logpmf_within(k: NDArray[np.int64], trials: NDArray[np.int64] | int, prob: float) -> NDArray[np.float64]:
    """``log Bin(trials, prob)(k)`` (:func:`binomial_logpmf`), ``-inf`` outside ``0 <= k <= trials`` (and for negative trials)."""
    k = np.asarray(k, dtype=np.int64)
    trials_arr = np.broadcast_to(np.asarray(trials, dtype=np.int64), k.shape)
    out = np.full(k.shape, -np.inf)
    ok = (k >= 0) & (k <= trials_arr)
    if np.any(ok):
        out[ok] = binomial_logpmf(k[ok], trials_arr[ok], prob)
    return out
