"""The blanket pair of the Laplace randomizer, certified (docs/mathematics.md, "The blanket pair of the
Laplace randomizer").

Victim inputs ``(input_min, input_max)``, midpoint ``m``, width ``w``, scale ``b = w/ε0``.  Relative to the blanket
density ``inf_x f_x``, the victim ratios are ``ρ_lo(y) = e^{ε0·clip((m - y)/(w/2), 0, 1)}`` and ``ρ_hi`` its
mirror image; under the blanket law ``ω`` (Laplace centred at ``m``) a draw is *left* (``y < m``) or *right*
with probability 1/2 each, and contributes ``(V, 1)`` or ``(1, V')`` to ``(ρ_lo, ρ_hi)``, where ``V, V'`` are
i.i.d. with ``log V = min(Z, ε0)``, ``Z ~ Exp(1/2)``: density ``v^{-3/2}/2`` on ``(1, e^{ε0})`` and an atom
``e^{-ε0/2}`` at ``e^{ε0}``.

With ``B`` blanket draws and the victim's, the ``B + 1`` items are i.i.d. ``ω`` under the reference measure
``μ`` and ``dP/dμ = γ S_1/(B+1)``, ``dQ/dμ = γ S_2/(B+1)``; given the number ``k`` of left items,
``S_1 = (B + 1 - k) + T_k`` and ``S_2 = k + T'_{B+1-k}`` with ``T_k`` the sum of ``k`` copies of ``V``:
independent.  So the fixed-``B`` pair is a mixture over ``k`` of products, and its loss
``log S_1 - log S_2`` a difference of independent variables.

Certification (both proven in docs/mathematics.md):

* upper -- replace the ``μ``-laws of ``T_k`` and then of ``S_1``, ``S_2`` by mean-preserving spreads (the
  engine of :mod:`._allocation_sum` for the sums, then a spread onto the geometric lattice ``e^{jh}``): the
  exact pair is a post-processing of the spread one (resample ``S`` given ``S*``; ``E[S*|S] = S`` keeps
  both tilts), so it dominates in every composition; its losses are exactly ``(j_1 - j_2)·h``;
* lower -- the contractions of the same engine, then every outcome with ``j_1 - j_2 = d`` merged (a
  post-processing: the merged pair is dominated), loss ``log(P_d/Q_d) ∈ [(d-1)h, (d+1)h]``.

Groups of ``B`` and the mixture over them are those of :func:`._blanket_support.grouped_bounds`.
"""

from __future__ import annotations

import functools
import math
from concurrent.futures import ThreadPoolExecutor

import numpy as np
from numpy.typing import NDArray

from .._kernels import UNIT_ROUNDOFF as _U
from ..pld import LossDistribution
from ._allocation_sum import RatioLaw, combine, make_grid
from ._binomial import binomial_pmf, binomial_window
from ._blanket_model import participating_blanket_mass
from ._blanket_support import b_points, grouped_bounds

__all__ = ["LAPLACE_BINS", "LAPLACE_COARSE_BINS", "LAPLACE_FINE_GROUP_TOLERANCE", "LAPLACE_GROUP_TOLERANCE", "group_tolerance", "laplace_bounds",
           "laplace_seconds", "side_law", "side_moments"]

#: Lattice cells across the most likely fixed-``B`` pair's loss range (the mixture lattice of
#: :func:`grouped_bounds`; second-order error), with the fine group tolerance; with the coarse one, whose
#: first-order grouping error dominates, :data:`LAPLACE_COARSE_BINS` (the convolutions cost cells²).
LAPLACE_BINS = 2048
LAPLACE_COARSE_BINS = 1024
#: Groups of ``B`` span this fraction of their lowest value (:func:`._blanket_support.b_points`) ...
LAPLACE_GROUP_TOLERANCE = 5e-4
#: ... or this finer one where :func:`laplace_seconds` estimates it at most :data:`_FINE_SECONDS`
#: (:func:`group_tolerance`).  The grouping's error is first order in the groups' widths (the grids' are
#: second order): n = 1e4, ε0 = 1, δ = 1e-6, one round: relative ε gap 1.2e-4 at 2e-4 (no groups near the
#: mode), 3.9e-4 at 5e-4, at 2.1x the time.
LAPLACE_FINE_GROUP_TOLERANCE = 2e-4
_FINE_SECONDS = 15.0
#: Grid of the laws of averages of ``V``: points per standard deviation and standard deviations covered
#: linearly (:func:`._allocation_sum.make_grid`; beyond, logarithmic steps growing with the distance).
#: n = 1e3, ε0 = 1, δ = 1e-6, one round: relative ε gap 3.5e-4 at (24, 10), 1.5e-4 at (64, 10) (1024 lattice
#: cells); with 2048 cells 6.0e-5 at (64, 10) and at (64, 6), the latter at 0.75x the time.
_RESOLUTION, _WIDTH = 64, 6.0
#: Cells of the geometric grid of ``[1, e^{ε0}]`` added to every grid of an average (:func:`_with_log_cells`).
_LOG_CELLS = 512
#: Averages of at most this many copies get those cells (beyond, the law is close to normal and the linear
#: steps of :func:`._allocation_sum.make_grid` suffice; the extra points would only cost time).
_SKEWED_COPIES = 256
#: Standard deviations of a fixed-``B`` loss covered by :func:`_loss_width`.
_LOSS_SDS = 20.0
#: Mass (μ- and x-weighted) set apart at each end of every law of an average, relative to the tail budget.
_TRIM = 1e-2
#: Calibration of :func:`laplace_seconds` (2 CPU cores, the two sides in two threads): per (B, k) term and
#: per law of an average (seven cases, n = 1e3-3e4, ε0 = 0.1-4: 0.97-1.4 times the measured time).
_TERM_SECONDS, _LAW_SECONDS = 5.2e-5, 0.00325


def side_moments(eps0: float, void: float = 0.0) -> tuple[float, float]:
    """``(E V, Var V)``: ``E V = 2e^{ε0/2} - 1``, ``E V² = (4/3)e^{3ε0/2} - 1/3``; with a void item's share
    ``void`` (its ``V`` is 1), ``E V_q = void + (1 - void)·E V`` and likewise ``E V_q²``.  O(1)."""
    mean = void + (1.0 - void) * (2.0 * math.exp(0.5 * eps0) - 1.0)
    second = void + (1.0 - void) * (4.0 * math.exp(1.5 * eps0) - 1.0) / 3.0
    return mean, max(second - mean * mean, 0.0)


def _with_log_cells(grid: NDArray[np.float64], eps0: float) -> NDArray[np.float64]:
    """``grid`` refined by the geometric grid ``e^{iε0/_LOG_CELLS}`` of ``[1, e^{ε0}]``.

    Why: ``V`` and the averages of few copies are skewed towards 1 (density ``v^{-3/2}/2``), where a linear
    step of ``sd/_RESOLUTION`` is coarse for large ``ε0`` (ε0 = 4: steps of 0.29 over a law mostly in
    ``[1, 3]``; relative ε gap at n = 1e3, δ = 1e-6: 2.1e-4 without them, 1.2e-4 with).  O(N + _LOG_CELLS)."""
    extra = np.exp(np.arange(1, _LOG_CELLS) * (eps0 / _LOG_CELLS))
    return np.unique(np.concatenate([grid, extra[(extra > grid[0]) & (extra < grid[-1])]]))


def side_law(eps0: float, upper: bool, void: float = 0.0) -> RatioLaw:
    """The law of ``V`` on a grid of ``[1, e^{ε0}]``: spread to the cells' ends (upper) or contracted to their
    centroids (lower), as a :class:`~._allocation_sum.RatioLaw`.

    A cell ``[a, c]`` holds ``μ``-mass ``(√c - √a)/√(ac)`` with centroid ``√(ac)``; its spread puts
    ``(√c - √a)/(√a(√a + √c))`` at ``a`` and ``(√c - √a)/(√c(√a + √c))`` at ``c`` (closed forms without
    cancellation: ``√c - √a = (c - a)/(√a + √c)``, ``c - a`` exact for neighbouring floats within a factor
    2).  The atom ``e^{-ε0/2}`` sits at ``e^{ε0}``.  With participation, a share ``void`` of the items are void
    reports (``V = 1`` on either side): the law is ``void·δ_1 + (1 - void)·law(V)``.  Masses within ``9u``,
    centroids within ``2u``.  O(N).
    """
    top = math.exp(eps0)
    mean, var = side_moments(eps0, void)
    grid = _with_log_cells(make_grid(mean, math.sqrt(var), 1.0, top, resolution=_RESOLUTION, width=_WIDTH), eps0)
    # At most a factor 2 between neighbours (exact differences), and both ends exactly.
    grid = np.unique(np.concatenate([[1.0, top], grid[(grid > 1.0) & (grid < top)]]))
    extra = [grid]
    gaps = grid[1:] / grid[:-1]
    if np.any(gaps > 2.0):
        extra.append(np.concatenate([np.geomspace(a, c, int(math.ceil(math.log2(c / a))) + 1) for a, c in zip(grid[:-1][gaps > 2.0], grid[1:][gaps > 2.0])]))
        grid = np.unique(np.concatenate(extra))
    a, c = grid[:-1], grid[1:]
    ra, rc = np.sqrt(a), np.sqrt(c)
    diff = (c - a) / (ra + rc)  # √c - √a
    atom = math.exp(-0.5 * eps0)
    keep = 1.0 - void
    if upper:
        masses = np.zeros(grid.size)
        masses[:-1] += diff / (ra * (ra + rc))
        masses[1:] += diff / (rc * (ra + rc))
        masses[-1] += atom
        masses *= keep
        masses[0] += void  # grid[0] = 1
        return RatioLaw(grid, masses, 9.0 * _U, 0.0, True)
    points = np.append(ra * rc, top)
    masses = np.append(diff / (ra * rc), atom) * keep
    if void > 0.0:
        points, masses = np.append(1.0, points), np.append(void, masses)
    return RatioLaw(points, masses, 9.0 * _U, 2.0 * _U, False)


def _trimmed(law: RatioLaw, budget: float) -> tuple[RatioLaw, float]:
    """``law`` without its extreme points: at most ``budget`` of ``μ``-mass set apart at each end; returns the
    trimmed law and the mass set apart.  O(N)."""
    m = law.masses
    low = np.cumsum(m) <= budget
    high = (np.cumsum(m[::-1]) <= budget)[::-1]
    keep = ~(low | high)
    if not np.any(keep):
        keep[np.argmax(m)] = True
    return RatioLaw(law.points[keep], m[keep], law.mass_error, law.location_error, law.upper), float(np.sum(m[~keep]))


class _Sums:
    """Laws of the averages ``T_k/k`` of ``k`` copies of ``V`` (upper or lower), kept trimmed (:func:`_trimmed`).

    Each is built from the cached laws of ``2^j`` copies (binary powering) by at most ``popcount(k)``
    combinations, never from the law of ``k - 1`` copies: every spread (contraction) adds variance, and a
    chain of one copy at a time would add it once per copy.  Every law is trimmed before it is used, the
    ``μ``-mass set apart carried along (a bound on the mass the result misses: the union bound over its
    parts): the upper pair books it, the lower one may miss it (a sub-pair).  O(popcount(k)·N²) per new ``k``."""

    def __init__(self, eps0: float, upper: bool, budget: float, void: float = 0.0) -> None:
        self.eps0, self.upper, self.budget = eps0, upper, budget
        self.step = side_law(eps0, upper, void)
        self.mean, var = side_moments(eps0, void)
        self.sd = math.sqrt(var)
        self.top = math.exp(eps0)
        self.averages: dict[int, tuple[RatioLaw, float]] = {}
        self.powers: list[tuple[RatioLaw, float]] = [(self.step, 0.0)]
        self.mass_error = self.step.mass_error
        self.location_error = self.step.location_error

    def grid_for(self, k: int) -> NDArray[np.float64]:
        grid = make_grid(self.mean, self.sd / math.sqrt(k), 1.0, self.top, resolution=_RESOLUTION, width=_WIDTH)
        grid = grid[grid >= 1.0]
        return _with_log_cells(grid, self.eps0) if k <= _SKEWED_COPIES else grid

    def _power(self, j: int) -> tuple[RatioLaw, float]:
        while len(self.powers) <= j:
            i = len(self.powers)
            law, missing = self.powers[-1]
            combined, cut = _trimmed(combine(law, law, self.grid_for(2**i)), self.budget)
            self.powers.append((combined, 2.0 * missing + cut))
            self.mass_error = max(self.mass_error, combined.mass_error)
            self.location_error = max(self.location_error, combined.location_error)
        return self.powers[j]

    def _average(self, k: int) -> tuple[RatioLaw, float]:
        """The trimmed law of the average of ``k ≥ 1`` copies and the mass it may miss: the law of ``k``
        without its lowest set bit ``2^j`` combined with the power ``2^j`` (one combination per new ``k``,
        ``popcount(k)`` along the chain)."""
        if k not in self.averages:
            low = k & -k
            if low == k:
                self.averages[k] = self._power(low.bit_length() - 1)
            else:
                rest, lost_rest = self._average(k - low)
                power, lost_power = self._power(low.bit_length() - 1)
                law, cut = _trimmed(combine(rest, power, self.grid_for(k), weight_a=(k - low) / k), self.budget)
                self.averages[k] = (law, lost_rest + lost_power + cut)
                self.mass_error = max(self.mass_error, law.mass_error)
                self.location_error = max(self.location_error, law.location_error)
        return self.averages[k]

    def get(self, k: int) -> tuple[NDArray[np.float64], NDArray[np.float64], float]:
        """``(points, masses, missing)`` of the average of ``k`` copies (``missing``: the ``μ``-mass the
        law may miss, booked by the upper pair)."""
        if k == 0:  # the empty sum: S = the constant part (any point times k = 0)
            return np.ones(1), np.ones(1), 0.0
        law, missing = self._average(k)
        return law.points, law.masses, missing


@functools.lru_cache(maxsize=2)
def _sums(eps0: float, upper: bool, budget: float, void: float = 0.0) -> _Sums:
    """The laws of averages shared by every group of ``B`` (and later calls) for one ``ε0``, void share and
    side: kept for the last two (the upper and the lower of one request), ~10 kB per average."""
    return _Sums(eps0, upper, budget, void)


def _onto_lattice(laws: list[tuple[NDArray[np.float64], NDArray[np.float64], float]], consts: NDArray[np.int64],
                  mults: NDArray[np.int64], h: float, upper: bool) -> tuple[NDArray[np.int64], NDArray[np.float64], NDArray[np.float64]]:
    """``S_i = consts[i] + mults[i]·x`` for each law ``i`` (``(points, masses, _)``) on the geometric lattice
    ``e^{jh}``, all laws at once.

    Upper: each point spread to the two lattice points around it keeping its mean (the values ``e^{jh}`` as
    computed are the lattice).  Lower: each cell's mass and centroid.  Returns ``(j0, mass, value)``: row ``i``
    covers the lattice indices ``j0[i] .. j0[i] + W - 1``, ``value`` is ``e^{jh}`` (upper) or the cell's
    centroid (lower; 1 where empty).  O(points + laws·W)."""
    sizes = np.array([law[0].size for law in laws])
    x = np.concatenate([law[0] for law in laws])
    m = np.concatenate([law[1] for law in laws])
    # np.repeat rather than gathers by row index (the same values, ~2x faster on ~1e5-1e6 points)
    s = np.repeat(consts.astype(np.float64), sizes) + np.repeat(mults.astype(np.float64), sizes) * x
    j = np.floor(np.log(s) / h).astype(np.int64)
    starts = np.concatenate([[0], np.cumsum(sizes)[:-1]])
    j0 = np.minimum.reduceat(j, starts) - 1  # the points are ascending in each law: j too, up to rounding
    width = int(np.max(np.maximum.reduceat(j, starts) - j0)) + 3
    flat = j + np.repeat(np.arange(len(laws), dtype=np.int64) * width - j0, sizes)
    size = len(laws) * width
    if upper:
        # the lattice values e^{jh}, each computed once (the same floats in the shares and the tilts)
        first = int(j0.min())
        table = np.exp(np.arange(first, int(j0.max()) + width + 1, dtype=np.int64) * h)
        g_lo, g_hi = table[j - first], table[j + 1 - first]
        # a point rounded just outside its cell: clip (the share is then 0 or 1, within its location error)
        share = np.clip((s - g_lo) / (g_hi - g_lo), 0.0, 1.0)
        mass: NDArray[np.float64] = np.bincount(flat, weights=m * (1.0 - share), minlength=size).astype(np.float64, copy=False)
        mass += np.bincount(flat + 1, weights=m * share, minlength=size)
        value = table[(j0 - first)[:, None] + np.arange(width)[None, :]]
        return j0.astype(np.int64), mass.reshape(len(laws), width), value.astype(np.float64, copy=False)
    mass = np.bincount(flat, weights=m, minlength=size).astype(np.float64, copy=False).reshape(len(laws), width)
    moment = np.bincount(flat, weights=m * s, minlength=size).astype(np.float64, copy=False).reshape(len(laws), width)
    with np.errstate(divide="ignore", invalid="ignore"):
        value = np.where(mass > 0, moment / mass, 1.0)
    return j0.astype(np.int64), mass, value


def _fixed_b(b: int, eps0: float, h: float, tail: float, upper: bool, gamma: float, void: float) -> LossDistribution:
    """The fixed-``B`` pair at ``B = b``: its upper (on the lattice ``(j_1 - j_2)h``) or lower loss
    distribution (forward direction; the pair is symmetric).  ``gamma``: the blanket mass (``dP/dμ =
    γ S_1/(B+1)``); ``void``: the share of void items among the blanket's (each counted on a random side,
    with ``V = 1``).  O(window of k × (N + cells²))."""
    items = b + 1
    k_lo, k_hi, k_dropped = binomial_window(items, 0.5, tail)
    sums = _sums(eps0, upper, _TRIM * tail, void)
    ks = np.arange(k_lo, k_hi + 1)
    weights = binomial_pmf(ks, items, 0.5) * (gamma / items)
    # P-mass of the dropped k: their μ-mass times at most max(dP/dμ) = γ·e^{ε0}.
    truncated = k_dropped * gamma * math.exp(eps0)
    mean = side_moments(eps0, void)[0]
    laws1 = [sums.get(k) for k in ks.tolist()]
    laws2 = [sums.get(items - k) for k in ks.tolist()]
    q1 = np.array([law[2] for law in laws1])
    q2 = np.array([law[2] for law in laws2])
    c1 = items - ks
    # missing outcomes: P-mass ≤ w_k·(E[S1; S1 missing] + E[S1]·μ(S2 missing)), S1 ≤ c1 + k·e^{ε0}
    truncated += float(np.sum(weights * ((c1 + ks * sums.top) * q1 + (c1 + ks * mean) * q2))) * (1.0 + 1e-12)
    j1, mass1, val1 = _onto_lattice(laws1, c1, ks, h, upper)
    j2, mass2, val2 = _onto_lattice(laws2, ks, c1, h, upper)
    w1, w2 = mass1.shape[1], mass2.shape[1]
    longest = min(w1, w2)
    # outcomes (i1, i2) of row r: d = j1[r] + i1 - j2[r] - i2; np.convolve(a, b[::-1]) index t = i1 + (w2 - 1 - i2)
    d0 = j1 - j2 - (w2 - 1)
    lo, hi = int(d0.min()), int(d0.max()) + w1 + w2 - 1
    p_tot, q_tot = np.zeros(hi - lo), np.zeros(hi - lo)
    tilted1 = weights[:, None] * mass1 * val1
    rev2 = mass2[:, ::-1]
    if not upper:
        plain1 = weights[:, None] * mass1
        tilted2 = (mass2 * val2)[:, ::-1]
    for r in range(ks.size):
        at = int(d0[r]) - lo
        p_tot[at : at + w1 + w2 - 1] += np.convolve(tilted1[r], rev2[r])
        if not upper:
            q_tot[at : at + w1 + w2 - 1] += np.convolve(plain1[r], tilted2[r])
    if upper:
        q_tot = p_tot
    # Rounding (module notes of docs/mathematics.md): the sums' own errors (mass_error, location_error λ of
    # each average, hence of each S), the spread shares and lattice values (a few u of S), the
    # convolutions (each entry a sum of ≤ `longest` positive products) and the accumulation over k of
    # positive terms: ≤ (terms)·u relative.
    # log S ≤ log(items·e^{ε0}): the lattice values e^{jh} and the cell search err by ~(1 + |jh|)·u relative.
    log_top = math.log(items) + eps0 + 1.0
    lam = sums.location_error + 8.0 * _U * (1.0 + log_top)
    terms = float(longest + ks.size + 4)
    rel = (1.0 + sums.mass_error) ** 2 * (1.0 + lam) * (1.0 + 4.0 * terms * _U) - 1.0
    d = np.arange(lo, hi, dtype=np.float64)
    if upper:
        losses = d * h
        loss_error = 2.0 * lam + 8.0 * _U * (1.0 + log_top)
        return LossDistribution(losses, p_tot * (1.0 + rel), truncated_mass=min(truncated * (1.0 + rel), 1.0),
                                loss_error=loss_error)
    keep = (p_tot > 0) & (q_tot > 0)
    losses = np.log(p_tot[keep]) - np.log(q_tot[keep])
    loss_error = 2.0 * (lam + rel) + 8.0 * _U * (1.0 + float(np.max(np.abs(losses), initial=0.0)))
    return LossDistribution(losses, p_tot[keep] * (1.0 - rel) / (1.0 + lam), loss_error=loss_error)


def _loss_width(b: int, eps0: float, void: float = 0.0) -> float:
    """Rough loss range of the fixed-``B`` pair: ``_LOSS_SDS`` standard deviations of
    ``log S_1 - log S_2 ≈ (S_1 - S_2)/E S`` (per item ``±(V - 1)``), at most ``2ε0``.  O(1)."""
    mean, var = side_moments(eps0, void)
    second = var + (mean - 1.0) ** 2  # E[(V - 1)²]
    sd = math.sqrt((b + 1.0) * second) / ((b + 1.0) * (1.0 + mean) / 2.0)
    return min(_LOSS_SDS * sd, 2.0 * eps0)


def group_tolerance(n: int, eps0: float, tail_mass: float, participation: float = 1.0) -> tuple[float, int]:
    """The default ``(group tolerance, lattice cells)``: ``(LAPLACE_FINE_GROUP_TOLERANCE, LAPLACE_BINS)``
    where :func:`laplace_seconds` estimates them at most :data:`_FINE_SECONDS`, else
    ``(LAPLACE_GROUP_TOLERANCE, LAPLACE_COARSE_BINS)`` (ε0 = 1: fine up to n ≈ 2e3).  Any choice is valid;
    this one only trades gap for time.  O(groups)."""
    fine = laplace_seconds(n, eps0, tail_mass, participation=participation, tolerance=LAPLACE_FINE_GROUP_TOLERANCE, bins=LAPLACE_BINS)
    if fine <= _FINE_SECONDS:
        return LAPLACE_FINE_GROUP_TOLERANCE, LAPLACE_BINS
    return LAPLACE_GROUP_TOLERANCE, LAPLACE_COARSE_BINS


def laplace_bounds(n: int, eps0: float, tail_mass: float, *, participation: float = 1.0,
                   tolerance: float | None = None, bins: int | None = None) -> tuple[LossDistribution, LossDistribution]:
    """``(lower, upper)`` forward loss distributions of the Laplace blanket pair (victims ``input_min``/``input_max``;
    symmetric), ``n`` users, Poisson participation ``q``.

    With ``q < 1`` it is the blanket pair of ``R_q`` (void output ``⊥``, ratio 1 under every input): blanket
    mass ``γ_q = 1 - q + qγ``, of which a share ``v = (1 - q)/γ_q`` is void.  A void item contributes
    ``(1, 1)`` to ``(S_1, S_2)``, the same as a left item with ``V = 1`` or a right one with ``V' = 1``: so
    every item is left or right with probability 1/2, and its ``V`` has the law ``v·δ_1 + (1 - v)·law(V)``
    (:func:`side_law`); nothing else changes.  Time: (groups of ``B``) ×
    (window of ``k``) × (N² for each new average + cells² per convolution), see :func:`laplace_seconds`;
    ``tolerance=None``, ``bins=None``: :func:`group_tolerance`.
    """
    if tolerance is None or bins is None:
        default_tolerance, default_bins = group_tolerance(n, eps0, tail_mass, participation)
        tolerance = default_tolerance if tolerance is None else tolerance
        bins = default_bins if bins is None else bins
    gamma, void = _blanket_mass(eps0, participation)
    tail = tail_mass / 4.0

    def fixed(b: int, h: float) -> tuple[LossDistribution, LossDistribution]:
        # The two sides share nothing (their own caches of averages); the kernels and most of numpy's work
        # release the GIL, so two threads take ~0.6 of the time, with the same arithmetic.
        upper = pool.submit(_fixed_b, b, eps0, h, tail, True, gamma, void)
        return _fixed_b(b, eps0, h, tail, False, gamma, void), upper.result()

    with ThreadPoolExecutor(max_workers=1) as pool:
        return grouped_bounds(n, gamma, tail, tolerance, fixed, lambda b: _loss_width(b, eps0, void), eps0, bins)


def _blanket_mass(eps0: float, participation: float) -> tuple[float, float]:
    """``(γ_q, v)``: the blanket mass ``1 - q + qe^{-ε0/2}`` and its void share ``(1 - q)/γ_q``."""
    gamma = participating_blanket_mass(math.exp(-0.5 * eps0), participation)
    return gamma, (1.0 - participation) / gamma


def laplace_seconds(n: int, eps0: float, tail_mass: float, *, participation: float = 1.0,
                    tolerance: float | None = None, bins: int | None = None) -> float:
    """Rough seconds of :func:`laplace_bounds` on 2 cores: terms ``(B, k)`` over the groups of ``B`` times
    their convolution size, plus the laws of averages (measured ε0 = 1, one round, on the 2-core machine
    at load ~1: n = 1e3 6.7 s (estimate 7.7), n = 1e4 10.0 s (11.8), n = 3e4 13.6 s (17.0)).  O(groups)."""
    if tolerance is None or bins is None:
        default_tolerance, default_bins = group_tolerance(n, eps0, tail_mass, participation)
        tolerance = default_tolerance if tolerance is None else tolerance
        bins = default_bins if bins is None else bins
    gamma = _blanket_mass(eps0, participation)[0]
    points = b_points(n, gamma, tail_mass / 4.0, tolerance)
    mode = max(1, int((n - 1) * gamma))
    z = 2.0 * math.sqrt(2.0 * math.log(4.0 / tail_mass))
    k_window = z * math.sqrt(mode + 1.0) + 1.0
    distinct = k_window + 0.5 * float(points[-1] - points[0])  # averages built once each
    return 2.0 * points.size * k_window * _TERM_SECONDS * (bins / LAPLACE_BINS) + _LAW_SECONDS * distinct
