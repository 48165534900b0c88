"""Binomial windows and the pmf of a sum of two binomials for shuffled 2RR (see :mod:`pldshuffle._kernels`)."""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
from numpy.typing import NDArray

from . import UNIT_ROUNDOFF as _U
from . import compiled as _compiled
from . import jit as _jit
from .double_double import _dd_over, _dd_over_dd, _dd_times, _dd_times_dd, _fma, _two_sum

__all__ = [
    "DOT_BLOCK",
    "EXACT_PMF_ULPS",
    "binomial_log_rows",
    "binomial_walk",
    "two_binomial_cuts",
    "two_binomial_pmf",
    "window_dot_error",
]


#: Products summed plainly per block of the window dot products (the blocks' sums are compensated).
DOT_BLOCK = 64


@_jit(inline="always")
def _window_dot(k, x, x_lo, y, y_lo, ones):  # pragma: no cover - jitted
    """``Σ_i x(i)·y(k - ones + i)`` over the windows: ``P[ones - X + Y = k]`` less what they drop.

    Plain sums of ``DOT_BLOCK`` products, added up compensated (Ogita, Rump, Oishi 2005, Sum2): for these
    non-negative terms the relative error is at most :func:`window_dot_error`, a few dozen ulps whatever
    the window (a plain sum of ``m`` terms: ``m·u``), at nearly the cost of the plain sum.
    """
    hi, lo, block, count = 0.0, 0.0, 0.0, 0
    for i in range(max(x_lo, y_lo + ones - k), min(x_lo + x.size, y_lo + y.size + ones - k)):
        block += x[i - x_lo] * y[k - ones + i - y_lo]
        count += 1
        if count == DOT_BLOCK:
            hi, e = _two_sum(hi, block)
            lo, block, count = lo + e, 0.0, 0
    hi, e = _two_sum(hi, block)
    return hi + (lo + e)


@_jit()
def _two_binomial(x, x_lo, y, y_lo, ones, zeros, p, q, first, last, split, segment):  # pragma: no cover - jitted
    out = np.empty(last - first + 1)
    smallest, worst, u = np.inf, 0.0, _U
    s = first  # forward segments over first..split (A_k >= 0: every term positive)
    while s <= split:
        e = min(s + segment - 1, split)
        for k in range(s, min(s + 1, e) + 1):
            out[k - first] = _window_dot(k, x, x_lo, y, y_lo, ones)
            smallest = min(smallest, out[k - first])
        grown = 0.0
        for k in range(s + 1, e):
            t1, t2 = q * q * (ones - k), p * p * (zeros - k)
            b = q * p * (ones + zeros - k + 1)
            out[k + 1 - first] = ((t1 + t2) * out[k - first] + b * out[k - 1 - first]) / (p * q * (k + 1))
            grown += _step_error(t1, t2, out[k - first], b * out[k - 1 - first], u)
        worst = max(worst, grown)
        s = e + 1
    e = last  # backward segments over split+1..last (A_k <= 0)
    while e > split:
        s = max(e - segment + 1, split + 1)
        for k in range(max(e - 1, s), e + 1):
            out[k - first] = _window_dot(k, x, x_lo, y, y_lo, ones)
            smallest = min(smallest, out[k - first])
        grown = 0.0
        for k in range(e - 1, s, -1):
            t1, t2 = q * q * (ones - k), p * p * (zeros - k)
            d = p * q * (k + 1)
            out[k - 1 - first] = (d * out[k + 1 - first] - (t1 + t2) * out[k - first]) / (q * p * (ones + zeros - k + 1))
            grown += _step_error(t1, t2, out[k - first], d * out[k + 1 - first], u)
        worst = max(worst, grown)
        e = s - 1
    return out, smallest, worst


@_jit(inline="always")
def _step_error(t1, t2, f, other, u):  # pragma: no cover - jitted
    """Relative error one step adds (to the largest of its inputs'): 12u for the roundings of the products,
    the quotient and ``q = fl(1-p)``, plus the absolute error of ``A = t1 + t2`` (≤ 6u(|t1|+|t2|), large
    relative to A where it cancels, near the split) over the positive sum ``|A|·f + other``."""
    if 2.0 * abs(t1 + t2) >= abs(t1) + abs(t2):  # no cancellation in A (most steps): skip the division
        return 24.0 * u * 1.01
    return (12.0 + 6.0 * (abs(t1) + abs(t2)) * f / (abs(t1 + t2) * f + other)) * u * 1.01


@_jit(inline="always")
def _dd_odds(prob):  # pragma: no cover - jitted
    """The odds ``p/(1-p)`` and ``(1-p)/p`` in double-double (``1 - p`` formed exactly)."""
    qh, ql = _two_sum(1.0, -prob)
    odds_h, odds_l = _dd_over_dd(prob, 0.0, qh, ql)
    inv_h, inv_l = _dd_over(qh, ql, prob)
    return odds_h, odds_l, inv_h, inv_l


@_jit(inline="always")
def _dd_ratio(trials, k, step, odds_h, odds_l, inv_h, inv_l):  # pragma: no cover - jitted
    """``pmf(k+1)/pmf(k) = (n-k)/(k+1)·p/q`` (``step > 0``) or ``pmf(k-1)/pmf(k) = k/(n-k+1)·q/p`` of
    ``Bin(n, p)`` in double-double (one product and one quotient: ≤ 14u² relative error)."""
    if step > 0:
        th, tl = _dd_times(odds_h, odds_l, float(trials - k))
        return _dd_over(th, tl, float(k + 1))
    th, tl = _dd_times(inv_h, inv_l, float(k))
    return _dd_over(th, tl, float(trials - k + 1))


@_jit()
def _binomial_walk(trials, prob, mode, at_mode, half):  # pragma: no cover - jitted
    # The odds p/(1-p) and q/p, each ratio and the running value in double-double: a value's relative
    # error is then ≤ 64u² per step (the bounds of the operations above, summed) and the rounding to double.
    # ~5 ns per step with hardware FMA (14 with Dekker's split, 1.2 for a walk in doubles).
    odds_h, odds_l, inv_h, inv_l = _dd_odds(prob)
    sides = []
    tail = 0.0
    for step in (1, -1):
        values = [at_mode]
        k, vh, vl = mode, at_mode, 0.0
        while 0 < k if step < 0 else k < trials:
            # r = pmf(k ± 1)/pmf(k) falls as the walk goes out (log-concave), so the tail beyond k is
            # at most value·r/(1 - r); one more point is kept past the first k where that is ≤ half.
            rh, rl = _dd_ratio(trials, k, step, odds_h, odds_l, inv_h, inv_l)
            nh, nl = _dd_times_dd(vh, vl, rh, rl)
            values.append(nh)
            k += step
            if rh < 1.0 and nh / (1.0 - rh) <= half:
                tail += nh / (1.0 - rh)
                break
            vh, vl = nh, nl
        sides.append(values)
    up, down = sides
    out = np.empty(len(down) + len(up) - 1)
    for j in range(len(down)):
        out[len(down) - 1 - j] = down[j]
    for j in range(1, len(up)):
        out[len(down) - 1 + j] = up[j]
    return mode - len(down) + 1, out, tail


#: Relative error allowed for the exact pmf at the mode (Boost's: ≤ 1.3e-15 there, measured against mpmath
#: up to n = 1e8; far from the mode it reaches 5e-12 at n = 1e8, which is why the walk does not restart
#: from it).
EXACT_PMF_ULPS = 64


def binomial_walk(
    trials: int, prob: float, exact_pmf: Callable[[NDArray[np.int64]], NDArray[np.float64]], tail_mass: float
) -> tuple[int, NDArray[np.float64], float, float]:
    """Central window of ``Bin(trials, prob)`` and its pmf, walked out from the mode.

    From ``exact_pmf`` at ``mode = ⌊(trials+1)·prob⌋`` the walk multiplies by the ratios
    ``pmf(k±1)/pmf(k)`` (no cancellation), in double-double arithmetic (≤ 64u² relative error per step,
    the odds ``prob/(1-prob)`` included) until, by log-concavity, the tail beyond is at most ``tail_mass/2``
    on each side, and keeps one more point.  Returns ``(lo, pmf, dropped, relative_error)``: ``dropped``
    bounds the mass outside (rounded up), ``relative_error`` every value's: ``EXACT_PMF_ULPS·u`` for the
    start, ``u`` for the rounding to double, ``64u²`` per step (so ~1e-14 for any ``trials < 2**53``; a
    walk in plain doubles would add 5u per step, 1e-10 at 1e5 steps).  O(window).
    """
    _compiled()
    mode = min(int(math.floor((trials + 1) * prob)), trials)
    at_mode = float(exact_pmf(np.array([mode]))[0])
    lo, pmf, dropped = _binomial_walk(int(trials), float(prob), mode, at_mode, tail_mass / 2.0)
    steps = max(mode - lo, lo + pmf.size - 1 - mode)
    return lo, pmf, dropped * 1.001, (EXACT_PMF_ULPS + 1) * _U * 1.001 + 64.0 * steps * _U * _U


#: A walk rescales its running ratio (into its log offset) once it falls below this.
_RESCALE = 1e-200


@_jit()
def _binomial_log_rows(trials, prob, lo, hi, anchor, log_anchor, out):  # pragma: no cover - jitted
    # The odds and every ratio and running value in double-double, as in _binomial_walk (≤ 64u² per step).
    odds_h, odds_l, inv_h, inv_l = _dd_odds(prob)
    pos = 0
    for r in range(trials.size):
        n, a, first, last = trials[r], anchor[r], lo[r], hi[r]
        at = pos - first
        out[at + a] = log_anchor[r]
        for step in (1, -1):
            vh, vl, offset = 1.0, 0.0, log_anchor[r]
            k = a
            while (k < last) if step > 0 else (k > first):
                rh, rl = _dd_ratio(n, k, step, odds_h, odds_l, inv_h, inv_l)
                vh, vl = _dd_times_dd(vh, vl, rh, rl)
                k += step
                if vh < _RESCALE:
                    offset += math.log(vh) + vl / vh
                    vh, vl = 1.0, 0.0
                out[at + k] = offset + (math.log(vh) + vl / vh)
        pos += last - first + 1


def binomial_log_rows(
    trials: NDArray[np.int64], prob: float, lo: NDArray[np.int64], hi: NDArray[np.int64],
    anchor_logpmf: Callable[[NDArray[np.int64], NDArray[np.int64]], NDArray[np.float64]],
) -> NDArray[np.float64]:
    """``log Bin(trials[r], prob)(k)`` for ``k = lo[r] .. hi[r]``, row after row, in one array.

    Each row is walked out from its mode (clipped to the row), whose log-pmf ``anchor_logpmf(k, trials)``
    gives (Boost's, ≤ 1.3e-15 relative at the mode), by the ratios ``pmf(k±1)/pmf(k)`` in double-double
    arithmetic (≤ 64u² relative error per step, as :func:`binomial_walk`), each value's log rounded once
    (≤ u·(1 + |log|) absolute): ~1e-15 relative at any point, where Boost's pmf at every point errs by up
    to 5e-12 at 1e8 trials (and costs ~60 ns a point instead of ~10).  A running ratio below 1e-200 is
    moved into a log offset, so nothing underflows.  ``0 < prob < 1``; O(Σ widths).
    """
    _compiled()
    trials, lo, hi = (np.ascontiguousarray(a, dtype=np.int64) for a in (trials, lo, hi))
    anchor = np.clip(np.floor((trials + 1) * prob).astype(np.int64), lo, hi)
    log_anchor = np.ascontiguousarray(anchor_logpmf(anchor, trials), dtype=np.float64)
    out = np.empty(int((hi - lo + 1).sum()))
    _binomial_log_rows(trials, float(prob), lo, hi, anchor, log_anchor, out)
    return out


def window_dot_error(terms: int) -> float:
    """Relative error bound of one window dot product of ``terms`` non-negative terms
    (:func:`two_binomial_pmf`'s start values): ``2u + γ_{B-1} + γ_{m/B}²`` (``B = DOT_BLOCK``,
    ``γ_j = j·u/(1 - j·u)``): the products' rounding, the plain block sums and Sum2 over the blocks."""
    def gamma(j: float) -> float:
        return j * _U / (1.0 - j * _U)

    return (2.0 * _U + gamma(DOT_BLOCK - 1) + gamma(terms / DOT_BLOCK + 1) ** 2) * 1.01


def two_binomial_pmf(
    x: NDArray[np.float64], x_lo: int, y: NDArray[np.float64], y_lo: int, ones: int, zeros: int, p: float, first: int, last: int, segment: int
) -> tuple[NDArray[np.float64], float, float]:
    """pmf of ``N = ones - X + Y``, ``X ~ Bin(ones, p)``, ``Y ~ Bin(zeros, p)``, on ``k = first..last``,
    from windows ``x`` (of X's pmf, from ``x_lo``) and ``y`` (of Y's, from ``y_lo``) in O(last - first)
    plus O(window) per segment, instead of the O(|x|·|y|) convolution.

    ``N ~ Bin(ones, 1-p) + Bin(zeros, p)`` has generating function ``G = (p + qz)^a (q + pz)^b``
    (``q = 1-p``, ``a = ones``, ``b = zeros``); ``(p + qz)(q + pz) G' = (aq(q + pz) + bp(p + qz)) G``
    gives the three-term recurrence ``pq(k+1) f_{k+1} = A_k f_k + pq(a+b-k+1) f_{k-1}`` with
    ``A_k = q²(a-k) + p²(b-k)``.  Below ``k* = (q²a + p²b)/(q²+p²)`` it runs forward, above it backward:
    every term is then non-negative, so a value's relative error is at most its inputs' largest plus what
    the step adds (no cancellation).  Each segment of at most ``segment`` points starts from two windowed
    dot products (blocked and compensated: :func:`window_dot_error`).  Returns ``(pmf, smallest start value, growth)``:
    ``growth`` bounds the relative error the recurrence adds within any segment (summed step bounds), so the
    caller bounds the pmf's relative error by ``missing/smallest + r_x + r_y + window_dot_error(min window)
    + growth`` (``missing`` what the windows drop, ``r_x``, ``r_y`` the windows' relative errors).
    """
    _compiled()
    star = (q := 1.0 - p) ** 2 * ones + p * p * zeros
    split = min(max(int(math.floor(star / (q * q + p * p))), first - 1), last)
    return _two_binomial(np.ascontiguousarray(x), int(x_lo), np.ascontiguousarray(y), int(y_lo), int(ones), int(zeros), float(p), q, int(first), int(last), split, int(segment))


@_jit(error_model="numpy")
def _rr_pair(noise, p, q, forward_ratios, forward_masses, backward_masses):  # pragma: no cover - jitted
    # Branch-free, so that LLVM vectorises the divisions; the logarithm is numpy's (vectorised too).
    last = noise.size - 2
    for j in range(last + 1):
        prev, cur = noise[j], noise[j + 1]
        ratio = prev / cur
        # The loss falls with j: the forward direction is filled from the end, so both come out ascending.
        forward_ratios[last - j] = (q + p * ratio) / (p + q * ratio)
        forward_masses[last - j] = q * cur + p * prev
        backward_masses[j] = p * cur + q * prev


def rr_pair_from_noise(
    noise: NDArray[np.float64], p: float, q: float, eps0: float
) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.float64], NDArray[np.float64]]:
    """Losses and masses of the pair ``(N + Bern(p), N + Bern(q))`` (``q = 1 - p``, passed exactly;
    ``eps0 = log(q/p)``) at the outcomes ``j = 1 .. len(noise) - 1`` of a window ``noise`` of N's pmf:
    ``(forward losses, forward masses, backward losses, backward masses)``, each ascending in loss.

    Outcome ``j`` has masses ``q·N(j) + p·N(j-1)`` (forward) and ``p·N(j) + q·N(j-1)`` (backward) and
    loss ``log((q + p·r)/(p + q·r))`` from the ratio ``r = N(j-1)/N(j)`` (an ulp-accurate division, not a
    difference of log-pmfs), ``-eps0`` where ``N(j) = 0``, else ``eps0`` where ``N(j-1) = 0``; the backward
    loss is its negative.  One kernel pass and numpy's logarithm (numpy's dozen temporaries took twice as
    long at n = 1e7, a kernel taking the logarithm itself three times).  O(len(noise)).
    """
    _compiled()
    noise = np.ascontiguousarray(noise, dtype=np.float64)
    last = noise.size - 2
    forward_losses, forward_masses, backward_losses, backward_masses = (np.empty(max(last + 1, 0)) for _ in range(4))
    _rr_pair(noise, float(p), float(q), forward_losses, forward_masses, backward_masses)
    np.log(forward_losses, out=forward_losses)
    zero = np.flatnonzero(noise == 0.0)
    if zero.size:  # N(j-1) = 0, then N(j) = 0 (which decides where both are)
        forward_losses[last - zero[zero <= last]] = eps0
        forward_losses[last - (zero[zero >= 1] - 1)] = -eps0
    np.negative(forward_losses[::-1], out=backward_losses)
    return forward_losses, forward_masses, backward_losses, backward_masses


@_jit(inline="always")
def _psi(t, ones, zeros, log_p, log_q):  # pragma: no cover - jitted
    """``ψ(t) = a log(p + qe^t) + b log(q + pe^t)`` by stable log-add-exps."""
    a, b = log_p, log_q + t
    first = max(a, b) + math.log1p(math.exp(-abs(a - b)))
    a, b = log_q, log_p + t
    return ones * first + zeros * (max(a, b) + math.log1p(math.exp(-abs(a - b))))


@_jit(inline="always")
def _slope(t, ones, zeros, log_p, log_q):  # pragma: no cover - jitted
    """``ψ'(t)``, the mean of the tilted sum, by stable logistic functions."""
    u, v = t + log_q - log_p, t + log_p - log_q
    first = 1.0 / (1.0 + math.exp(-u)) if u >= 0 else math.exp(u) / (1.0 + math.exp(u))
    second = 1.0 / (1.0 + math.exp(-v)) if v >= 0 else math.exp(v) / (1.0 + math.exp(v))
    return ones * first + zeros * second


@_jit(inline="always")
def _chernoff_exponent(t, ones, zeros, log_p, log_q):  # pragma: no cover - jitted
    """``g(t) = ψ(t) - tψ'(t)``: the log of the Chernoff bound at the cut ``c = ψ'(t)``, falling in ``|t|``."""
    return _psi(t, ones, zeros, log_p, log_q) - t * _slope(t, ones, zeros, log_p, log_q)


@_jit()
def _two_binomial_cuts(ones, zeros, log_p, log_q, target):  # pragma: no cover - jitted
    cuts = np.empty(2, dtype=np.int64)
    for side in range(2):
        far = -1.0 if side == 0 else 1.0
        while _chernoff_exponent(far, ones, zeros, log_p, log_q) > target and abs(far) < 2048.0:
            far *= 2.0
        if _chernoff_exponent(far, ones, zeros, log_p, log_q) > target:  # the bound never gets that small
            cuts[side] = -1 if side == 0 else ones + zeros + 1
            continue
        near = 0.0
        for _ in range(80):
            mid = 0.5 * (near + far)
            if _chernoff_exponent(mid, ones, zeros, log_p, log_q) > target:
                near = mid
            else:
                far = mid
        slope = _slope(far, ones, zeros, log_p, log_q)
        cut = math.floor(slope) if side == 0 else math.ceil(slope)
        # Move outward if rounding put the cut where the bound at ``far`` is not small enough.
        while 0 <= cut <= ones + zeros and _psi(far, ones, zeros, log_p, log_q) - far * cut > target:
            cut += -1 if side == 0 else 1
        cuts[side] = cut
    return cuts[0], cuts[1]


def two_binomial_cuts(ones: int, zeros: int, log_p: float, log_q: float, target: float) -> tuple[int, int]:
    """Kernel of :func:`pldshuffle.mechanisms._binomial.two_binomial_tails`: the cuts where the Chernoff
    exponent ``ψ(t) - tψ'(t)`` of ``Bin(ones, 1-p) + Bin(zeros, p)`` reaches ``target`` (``log_p = log p``,
    ``log_q = log(1-p)``), by 80 bisection steps per side.  O(1)."""
    _compiled()
    lo, hi = _two_binomial_cuts(int(ones), int(zeros), float(log_p), float(log_q), float(target))
    return int(lo), int(hi)
