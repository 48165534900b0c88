"""Supports of the blanket pair: strict (lower, upper) loss distributions (docs/mathematics.md#blanket).

Three evaluations of the same pair, chosen by :mod:`pldshuffle.mechanisms.blanket`:

* :func:`trinomial_bounds` -- hit types with ``π11 = 0`` (k-ary RR, binary RR, Hadamard response with
  ``K = 4``, OUE/RAPPOR/local hashing with ``d = 2``): the whole pair is a tilted trinomial with outer
  coordinate ``B``, evaluated by the shared builder of the kRR pairs
  (:func:`~pldshuffle.mechanisms._krr_support.tilted_trinomial_support`); no grouping.
* :func:`grouped_bounds` -- any hit model: ``B`` is split into groups of consecutive values, each group
  replaced by the fixed-``B`` pair at its lowest value (upper) or highest value (lower); each fixed-``B``
  pair is enumerated over ``(N1, N2)`` (:func:`fixed_b_bounds`) or, for product hit laws, is a product of
  two one-dimensional pairs (:mod:`._blanket_product`); the groups are mixed onto one loss lattice
  (:class:`LatticeMixture`).
* :func:`enumerated_pair` -- any finite randomizer, exactly, by enumerating the type counts (tiny ``n``).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray
from scipy.special import gammaln

from .._reporting import build_progress
from ..pld import MASS_RTOL, LossDistribution, PrivacyLossPair, log_ratio_error
from .._kernels import UNIT_ROUNDOFF, dependent_fixed_b_cells
from .._kernels.binomial import EXACT_PMF_ULPS
from ._binomial import binomial_cdf, binomial_logpmf, binomial_pmf, binomial_sf, binomial_window, binomial_windows, binomial_windows_sampled
from ._blanket_model import HitModel, MatrixTypes
from ._krr_support import tilted_trinomial_support, tilted_windows
from ..pld.discretize import lattice_distributions

__all__ = [
    "DEFAULT_GROUP_TOLERANCE",
    "MAX_ENUMERATED_POINTS",
    "MIXTURE_BINS",
    "LatticeCells",
    "LatticeMixture",
    "b_points",
    "enumerated_pair",
    "fixed_b_bounds",
    "fixed_b_cells",
    "hit_width",
    "grouped_bounds",
    "trinomial_bounds",
]

#: Groups of ``B`` near its mode span this fraction of their lowest value (at least one value; wider in
#: the tails, :func:`b_points`): the relative ε gap the grouping leaves is about 0.7 times it
#: (OUE d=1024, ε0=1, n=1e5, one round, δ=1e-6: 1.2e-5 without grouping, 4.4e-5 at 5e-5, 7.6e-5 at 1e-4).
DEFAULT_GROUP_TOLERANCE = 5e-5
#: Lattice cells across the loss range of the most likely group (the mixture lattice); second-order error.
MIXTURE_BINS = 2**16
#: The mixture lattice never holds more cells than this (wider ranges of unlikely groups get coarser cells).
MAX_MIXTURE_CELLS = 2**22
#: Tail of the windows of the two conditional binomials that :func:`fixed_b_cells` walks for the start values
#: of its recurrence (what they drop is booked relative to the least start value, ~1e-37 for Hadamard response at b = 1e4–1e5).
DOT_WINDOW_TAIL = 1e-60
#: :func:`fixed_b_cells` falls back to :func:`fixed_b_bounds` when its masses' relative error bound exceeds
#: this: half of :data:`~pldshuffle.pld.MASS_RTOL`, the relative slack every mass gets where δ is evaluated
#: (the rest covers the mixture's sums, ≤ groups·u, and Boost's row masses, ≤ 1e-13 below 1e6 trials).  The
#: bound is ~4e-12 at b = 6e3 and ~1.4e-11 at b = 6e4 (Hadamard response), mostly the recurrence's growth.
DEPENDENT_MASS_RTOL = 0.5 * MASS_RTOL
#: :func:`enumerated_pair` refuses to enumerate more type-count vectors than this.
MAX_ENUMERATED_POINTS = 2_000_000


# ---------------------------------------------------------------------------------------------
# mixing fixed-B pairs on one lattice
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class LatticeCells:
    """A loss distribution already binned onto the cells ``[z_j, z_{j+1})``, ``z_j = j·spacing``, of a
    :class:`LatticeMixture`: per cell ``j0 + i`` the P-mass ``mass[i]`` and the ``e^{-s}``-moment relative to
    the cell's left end ``tilt[i]`` (``Σ m·expm1(-(s - z_j))``), as :meth:`LatticeMixture.add` bins points;
    plus the masses at ``+inf`` and truncated and the losses' error bound (of the points before binning)."""

    spacing: float
    j0: int
    mass: NDArray[np.float64]
    tilt: NDArray[np.float64]
    infinity_mass: float = 0.0
    truncated_mass: float = 0.0
    loss_error: float = 0.0


class LatticeMixture:
    """Accumulates weighted loss distributions onto the lattice ``z_j = j·h`` as per-cell P-mass and
    ``e^{-s}``-moment (relative to the cell's left end), growing the lattice as needed.

    ``upper()`` spreads each cell's mass to its two ends (a mean-preserving spread of ``U = e^{-L}`` of the
    mixture: an upper bound for any composition), ``lower()`` contracts it to the moment point (merging the
    cell's outcomes, a post-processing: a lower bound), see :mod:`._lattice`.  Infinity and truncated masses
    are summed with their weights; the losses' error bound is the largest added.  O(points) per ``add``.
    """

    def __init__(self, spacing: float) -> None:
        self.spacing = float(spacing)
        self.j0 = 0
        self.mass = np.zeros(0)
        self.tilt = np.zeros(0)
        self.infinity = 0.0
        self.truncated = 0.0
        self.loss_error = 0.0

    def add(self, dist: LossDistribution | LatticeCells, weight: float) -> None:
        """Add ``weight · dist`` (points, or cells already on this lattice)."""
        self.infinity += weight * dist.infinity_mass
        self.truncated += weight * dist.truncated_mass
        self.loss_error = max(self.loss_error, dist.loss_error)
        if isinstance(dist, LatticeCells):
            if dist.spacing != self.spacing:
                raise ValueError("internal error: cells of another lattice")
            if dist.mass.size and weight != 0.0:
                at = self._grow(dist.j0, dist.j0 + dist.mass.size - 1)
                self.mass[at : at + dist.mass.size] += weight * dist.mass
                self.tilt[at : at + dist.mass.size] += weight * dist.tilt
            return
        if dist.losses.size == 0 or weight == 0.0:
            return
        h = self.spacing
        j = np.floor(dist.losses / h).astype(np.int64)
        self._grow(int(j.min()), int(j.max()))
        offset = np.clip(dist.losses - j * h, 0.0, h)
        m = weight * dist.masses
        idx = j - self.j0
        self.mass += np.bincount(idx, weights=m, minlength=self.mass.size)
        self.tilt += np.bincount(idx, weights=m * np.expm1(-offset), minlength=self.mass.size)

    def _grow(self, lo: int, hi: int) -> int:
        """Extend the lattice to cells ``lo .. hi``; returns the index of cell ``lo``."""
        if self.mass.size == 0:
            self.j0, self.mass, self.tilt = lo, np.zeros(hi - lo + 1), np.zeros(hi - lo + 1)
        elif lo < self.j0 or hi >= self.j0 + self.mass.size:
            new_j0 = min(lo, self.j0)
            size = max(hi + 1, self.j0 + self.mass.size) - new_j0
            mass, tilt = np.zeros(size), np.zeros(size)
            mass[self.j0 - new_j0 : self.j0 - new_j0 + self.mass.size] = self.mass
            tilt[self.j0 - new_j0 : self.j0 - new_j0 + self.tilt.size] = self.tilt
            self.j0, self.mass, self.tilt = new_j0, mass, tilt
        return lo - self.j0

    def _cells(self) -> tuple[NDArray[np.float64], NDArray[np.float64], float]:
        # Rounding of the accumulated moments is covered by lattice_distributions' relative slack; the
        # sums of positive terms err by at most (terms)·u relative, far below it at these sizes.
        return self.mass, np.minimum(self.tilt, 0.0), min(self.truncated, 1.0)

    def upper(self) -> LossDistribution:
        mass, tilt, truncated = self._cells()
        return lattice_distributions(mass, tilt, self.spacing, self.j0, min(self.infinity, 1.0), truncated, self.loss_error)[1]

    def lower(self) -> LossDistribution:
        mass, tilt, truncated = self._cells()
        return lattice_distributions(mass, tilt, self.spacing, self.j0, min(self.infinity, 1.0), truncated, self.loss_error)[0]


# ---------------------------------------------------------------------------------------------
# the pair with every B at once (π11 = 0)
# ---------------------------------------------------------------------------------------------


def _log_c0(model: HitModel) -> float:
    """``log c0``, ``c0 = 1/(1 + a·p1)``: the normaliser of ``S_1/(B+1)`` (``E[S_1] = (B+1)/c0``)."""
    return -math.log1p(model.gain * model.hit_probability)


def trinomial_bounds(n: int, model: HitModel, tail_mass: float, context: str, advice: str) -> tuple[LossDistribution, LossDistribution]:
    """``(lower, upper)`` of the blanket pair of a hit model with ``π11 = 0``, all ``B`` at once.

    ``B ~ Bin(n-1, γ)``; among the ``B + 1`` items the hits ``C = N1 + N2 ~ Bin(B+1, 2π10)`` and
    ``N1 | C ~ Bin(C, 1/2)`` under the base law, tilted by ``S_1/E[S_1] = c0 (1 + a N1/(B+1))``: the
    tilted trinomial of :func:`~._krr_support.tilted_trinomial_support` (for k-ary RR this is exactly the
    weak kRR pair).  Loss ``log(B+1 + a N1) - log(B+1 + a N2)``.
    """
    log_c0, log_a = _log_c0(model), math.log(model.gain)
    return tilted_trinomial_support(
        outer_trials=n - 1,
        outer_prob=model.gamma,
        inner_trials=lambda b: b + 1,
        inner_prob=2.0 * model.pi10,
        log_tilt=lambda b: (np.full(b.shape, log_c0), log_c0 + log_a - np.log(b + 1.0)),
        tail_mass=tail_mass,
        context=context,
        advice=advice,
    )


# ---------------------------------------------------------------------------------------------
# fixed B, any hit law
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _FixedB:
    """The truncated support of the fixed-``B`` pair (:func:`fixed_b_bounds`): rows ``k`` of ``N1`` with
    their ``P``-masses, the windows of the two binomials of ``N2 | N1 = k``, the dropped mass and ``ℓ``."""

    m: int
    alpha: float
    beta: float
    k: NDArray[np.int64]
    mass_k: NDArray[np.float64]
    a_lo: NDArray[np.int64]
    a_hi: NDArray[np.int64]
    b_lo: NDArray[np.int64]
    b_hi: NDArray[np.int64]
    dropped: float
    ell: Callable[[NDArray[np.float64] | float], NDArray[np.float64]]


def _fixed_b_support(b: int, model: HitModel, tail_mass: float) -> _FixedB:
    """Windows and row masses of the fixed-``B`` pair at ``b`` (:func:`fixed_b_bounds`); O(W1) Boost calls."""
    m, a, p1 = b + 1, model.gain, model.hit_probability
    alpha, beta = model.conditional_hits
    lo, hi, q0, q1 = (int(v[0]) if i < 2 else float(v[0]) for i, v in enumerate(tilted_windows(np.array([m]), p1, tail_mass)))
    k = np.arange(lo, hi + 1, dtype=np.int64)
    denom = m * (1.0 + a * p1)
    t0, t1 = 1.0 / (1.0 + a * p1), (1.0 + a) / (1.0 + a * p1)
    dropped = t0 * q0 + t1 * q1
    mass_k = np.exp(binomial_logpmf(k, m, p1)) * ((m + a * k) / denom)  # P(N1 = k)
    a_lo, a_hi = binomial_windows_sampled(k, alpha, tail_mass)
    b_lo, b_hi = binomial_windows_sampled(m - k, beta, tail_mass)
    drop_a = binomial_cdf(a_lo - 1, k, alpha) + binomial_sf(a_hi, k, alpha)
    drop_b = binomial_cdf(b_lo - 1, m - k, beta) + binomial_sf(b_hi, m - k, beta)
    dropped += float(np.sum(mass_k * (drop_a + drop_b)))
    ell = lambda v: np.log1p(a * (v - m * p1) / denom)  # noqa: E731
    return _FixedB(m, alpha, beta, k, mass_k, a_lo, a_hi, b_lo, b_hi, min(dropped, 1.0), ell)


def _fixed_b_loss_error(largest: float) -> float:
    """Error bound of the losses ``ℓ(N1) - ℓ(N2)`` of absolute value at most ``largest``: ``ℓ`` is log1p of a
    quotient of a few rounded operations (relative error ≤ 8u of the argument), two per loss."""
    return 2.0 * log_ratio_error(largest, 8.0 * UNIT_ROUNDOFF)


def fixed_b_bounds(b: int, model: HitModel, tail_mass: float) -> tuple[LossDistribution, LossDistribution]:
    """The blanket pair with ``B = b`` revealed, any hit law, exactly on a truncated support (``lower is upper``).

    Among the ``m = b + 1`` items, under the base law ``Mult(m; π)``: ``N1 ~ Bin(m, p1)``, and given ``N1 = k``
    the hits of ``x_2`` are ``N2 = Bin(k, α) + Bin(m - k, β)`` (independent), ``α = π11/p1``,
    ``β = π10/(1 - p1)``; ``P = base · t(N1)``, ``t(k) = (m + a k)/(m(1 + a p1))`` (``Q``: the same in ``N2``),
    loss ``ℓ(N1) - ℓ(N2)``, ``ℓ(k) = log1p(a(k - m p1)/(m(1 + a p1)))``.  The law of ``N2 | N1 = k`` is the
    direct convolution of the two binomials on their windows.

    Truncation: ``N1`` to the window of :func:`~._krr_support.tilted_windows` (drops ``t0·q0 + t1·q1`` of
    ``P``), each conditional binomial to its window of tail ``tail_mass`` (dropping, exactly, ``T(k)`` times
    their tails); booked.  O(W1·(WA + WB)) points and O(W1·WA·WB) time for windows of widths ``W``
    (~b^{3/2}), in Python with Boost pmfs: the reference of :func:`fixed_b_cells` (the kernel that
    :class:`~pldshuffle.mechanisms.blanket.BlanketPair` uses).
    """
    sup = _fixed_b_support(b, model, tail_mass)
    k, m = sup.k, sup.m
    losses, masses = [], []
    for i in range(k.size):
        pa = binomial_pmf(np.arange(sup.a_lo[i], sup.a_hi[i] + 1), k[i], sup.alpha)
        pb = binomial_pmf(np.arange(sup.b_lo[i], sup.b_hi[i] + 1), m - k[i], sup.beta)
        n2 = sup.a_lo[i] + sup.b_lo[i] + np.arange(pa.size + pb.size - 1)
        masses.append(sup.mass_k[i] * np.convolve(pa, pb))
        losses.append(sup.ell(float(k[i])) - sup.ell(n2.astype(np.float64)))
    loss = np.concatenate(losses)
    error = _fixed_b_loss_error(float(np.max(np.abs(loss), initial=0.0)))
    # Boost pmfs (MASS_RTOL) and direct convolutions of positive terms (≤ width·u relative).
    exact = LossDistribution(loss, np.concatenate(masses), truncated_mass=sup.dropped, loss_error=error)
    return exact, exact


def fixed_b_cells(
    b: int, model: HitModel, tail_mass: float, spacing: float
) -> tuple[LatticeCells, LatticeCells] | tuple[LossDistribution, LossDistribution]:
    """The pair of :func:`fixed_b_bounds` binned onto the mixture cells of width ``spacing`` (``(cells,
    cells)``: lower is upper), by the kernel :func:`~pldshuffle._kernels.dependent_fixed_b_cells`: no Boost
    call per point and O(1) work per point instead of a convolution.

    The same rows of ``N1`` with the same masses, and for each the pmf of ``N2 = A + C`` on the same support
    ``[a_lo + b_lo, a_hi + b_hi]``, now the *full* law of ``A + C`` there (the three-term recurrence of its
    generating function started from dot products of windows of tail :data:`DOT_WINDOW_TAIL`): at least the
    windowed convolution of :func:`fixed_b_bounds` and short of the full law by at most what lies outside
    that support, ``≤ P[A ∉ window] + P[C ∉ window]``, which is booked (truncated) exactly as there.
    The pmfs of ``A`` and ``C`` are walked by their ratio recurrences from Boost's value at each window's
    mode.  Every point mass has a relative error bound (anchors, walks, dot products, the windows' drop
    over the least start value, the recurrence's growth); where it exceeds :data:`DEPENDENT_MASS_RTOL` the
    pair is that of :func:`fixed_b_bounds` instead.  ``α`` or ``β`` equal to 0 or 1 (``β = 1`` for
    (d-1)-subset selection: every report holds ``x1`` or ``x2``) makes one binomial a point: every value is
    then a one-term dot product.  The losses are those of
    :func:`fixed_b_bounds` (the same ``ℓ``), bound the same way.  O(W1·(WA + WB)) time, a few ns per point
    on two threads, O(cells + W) memory.
    """
    sup = _fixed_b_support(b, model, tail_mass)
    k, m = sup.k, sup.m
    windows = []
    for trials, prob in ((k, sup.alpha), (m - k, sup.beta)):
        lo, hi = binomial_windows_sampled(trials, prob, DOT_WINDOW_TAIL)
        anchor = np.clip(np.floor((trials + 1) * prob).astype(np.int64), lo, hi)
        windows.append((lo, hi, anchor, binomial_pmf(anchor, trials, prob)))
    first, last = sup.a_lo + sup.b_lo, sup.a_hi + sup.b_hi
    n_lo, n_hi = int(first.min()), int(last.max())
    ell_n = sup.ell(np.arange(n_lo, n_hi + 1, dtype=np.float64))
    ell_k = sup.ell(k.astype(np.float64))
    # ℓ increases, and rounded differences are monotone: the extreme losses are those of the extreme rows.
    smallest, largest = float(ell_k[0] - ell_n[-1]), float(ell_k[-1] - ell_n[0])
    j0 = int(math.floor(smallest / spacing)) - 1
    size = int(math.floor(largest / spacing)) - j0 + 2
    mass, tilt, walk_error, least, growth = dependent_fixed_b_cells(
        m, int(k[0]), sup.mass_k, sup.alpha, sup.beta, windows[0], windows[1], (first, last), ell_k, ell_n, n_lo, spacing, j0, size,
    )
    # Relative error of every value of N2's pmf: the two anchors (Boost at the modes), the walks and dot
    # products, what the dot windows drop (≤ 2·DOT_WINDOW_TAIL) over the least start value, the recurrence.
    missing = 2.0 * DOT_WINDOW_TAIL / (least * (1.0 - 1e-6)) if least > 0.0 else math.inf
    if 2.0 * (EXACT_PMF_ULPS + 1) * UNIT_ROUNDOFF + walk_error + missing + growth > DEPENDENT_MASS_RTOL:
        return fixed_b_bounds(b, model, tail_mass)
    error = _fixed_b_loss_error(max(abs(smallest), abs(largest)))
    cells = LatticeCells(float(spacing), j0, mass, tilt, truncated_mass=sup.dropped, loss_error=error)
    return cells, cells  # exact: lower is upper


def hit_width(b: int, model: HitModel, tail_mass: float) -> float:
    """Estimated loss range of the fixed-``B`` pair at ``b``: ``2·log((b+1 + a·hi)/(b+1 + a·lo))`` for the
    window ``[lo, hi]`` of ``N1 ~ Bin(b+1, p1)``.  O(1) scipy calls."""
    lo, hi, _ = binomial_window(b + 1, model.hit_probability, tail_mass)
    return 2.0 * (math.log1p(model.gain * hi / (b + 1.0)) - math.log1p(model.gain * lo / (b + 1.0)))


def b_points(n: int, gamma: float, tail_mass: float, tolerance: float) -> NDArray[np.int64]:
    """Ends ``t_0 < t_1 < … < t_G`` of the groups of ``B ~ Bin(n-1, γ)``: the window ``[t_0, t_G]`` of
    tail ``tail_mass`` cut into groups ``[t_i, t_{i+1})`` (and ``{t_G}``).

    A group starting at ``t`` spans ``max(1, ⌊tolerance · t · sqrt(pmf(mode)/pmf(b))⌋)`` values, ``b`` its most
    likely value (halving the width until it fits): the grouping
    moves ε by about ``ΔB/(2B)`` relative, weighted by the group's probability, so unlikely groups may be
    wider (the weighted mean of ``ΔB/(2B)`` is about ``0.71·tolerance``, with ``3.5σ/(tolerance·B)`` groups
    instead of ``17σ/(tolerance·B)`` for equal widths).  O(window).
    """
    lo, hi, _ = binomial_window(n - 1, gamma, tail_mass)
    values = np.arange(lo, hi + 1, dtype=np.int64)
    log_pmf = binomial_logpmf(values, n - 1, gamma)
    top = float(log_pmf.max())
    def step(t: int, stop: int) -> int:  # the width that suits the most likely value of [t, stop]
        peak = float(log_pmf[t - lo : stop - lo + 1].max())
        return max(1, int(tolerance * t * math.exp(min(0.5 * (top - peak), 50.0))))

    starts = [lo]
    while starts[-1] < hi:
        t = starts[-1]
        width = step(t, t)
        while width > 1 and width > step(t, min(hi, t + width)):
            width //= 2
        starts.append(min(hi, t + width))
    return np.array(starts, dtype=np.int64)


def grouped_bounds(
    n: int,
    gamma: float,
    tail_mass: float,
    tolerance: float,
    fixed: Callable[[int, float], tuple[LossDistribution, LossDistribution] | tuple[LatticeCells, LatticeCells]],
    width: Callable[[int], float],
    log_ratio: float,
    bins: int = MIXTURE_BINS,
    *,
    upper_gamma: float | None = None,
    upper_zero_atom: float = 0.0,
    lower_scale: float = 1.0,
) -> tuple[LossDistribution, LossDistribution]:
    """``(lower, upper)`` of the blanket pair from fixed-``B`` pairs over groups of ``B`` (:func:`b_points`).

    Adding one more independent blanket draw to the view is a post-processing (the analyst can draw it
    itself), so the fixed-``B`` pair at ``b`` dominates the one at every ``b' ≥ b``: the mixture (``B``
    revealed) over the groups ``[t_i, t_{i+1})`` of the pair at ``t_i`` dominates the blanket pair, and that
    of the pair at ``t_{i+1}`` (``t_i`` for a one-value group) is dominated by it; each pair computed serves
    two groups.  ``fixed(b, h)``
    returns the ``(lower, upper)`` distributions of the pair at ``b`` (``h``: the mixture's cell, a hint);
    ``width(b)`` estimates its loss range (the mixture's cell is ``width(mode)/bins``).  Truncation: the mass
    of ``B`` below the window is booked at ``+inf`` in the upper (and joins the lowest group in the lower:
    any ``b`` below dominates it); above the window it joins the top group in the upper and is deleted
    (booked) in the lower.

    ``upper_gamma`` (default ``gamma``) is the law of ``B`` of the upper pair, which also gets an atom of
    mass ``upper_zero_atom`` at loss 0 (the rest scaled by ``1 - upper_zero_atom``); the lower's masses are
    scaled by ``lower_scale`` (see :mod:`._blanket_product`).  Groups are mixed onto one lattice
    (:class:`LatticeMixture`).  Time: (number of groups + 1) × (fixed-``B`` cost); memory: the lattice and
    two fixed pairs.
    """
    points = b_points(n, gamma, tail_mass, tolerance)
    lo, hi = int(points[0]), int(points[-1])
    mode = int(points[np.argmin(np.abs(points - (n - 1) * gamma))])
    spacing = max(width(mode) / bins, 2.0 * log_ratio / MAX_MIXTURE_CELLS, 1e-300)
    up, low = LatticeMixture(spacing), LatticeMixture(spacing)
    g_up = gamma if upper_gamma is None else upper_gamma

    def weights(g: float) -> tuple[NDArray[np.float64], float, float]:
        values = np.arange(lo, hi + 1, dtype=np.int64)
        pmf = binomial_pmf(values, n - 1, g)
        per_group = np.add.reduceat(pmf, points[:-1] - lo) if points.size > 1 else np.zeros(0)
        if points.size > 1:  # the last start opens the single-value group {t_G}
            per_group[-1] -= pmf[-1]
        per_group = np.append(np.maximum(per_group, 0.0), pmf[-1])
        below = float(binomial_cdf(lo - 1, n - 1, g)) if lo > 0 else 0.0
        above = float(binomial_sf(hi, n - 1, g)) if hi < n - 1 else 0.0
        return per_group, below, above

    w_up, below_up, above_up = weights(g_up)
    w_low, below_low, above_low = weights(gamma)
    w_up[-1] += above_up
    w_low[0] += below_low
    w_up *= 1.0 - upper_zero_atom
    w_low *= lower_scale
    tick = build_progress(f"blanket pair: {points.size} groups of B")
    previous: tuple[LossDistribution, LossDistribution] | tuple[LatticeCells, LatticeCells] | None = None
    for i, b in enumerate(points.tolist()):
        tick(i / points.size)
        current = fixed(b, spacing)
        up.add(current[1], float(w_up[i]))
        if previous is not None:  # group [t_{i-1}, t_i): its top value's pair if that is t_{i-1}, else t_i's
            low.add((previous if b == points[i - 1] + 1 else current)[0], float(w_low[i - 1]))
        previous = current
    assert previous is not None  # the window holds at least one value
    low.add(previous[0], float(w_low[-1]))  # the single-value group {t_G}
    if upper_zero_atom > 0.0:
        up.add(LossDistribution(np.zeros(1), np.ones(1)), upper_zero_atom)
    up.truncated += below_up * (1.0 - upper_zero_atom)
    low.truncated += above_low
    return low.lower(), up.upper()


# ---------------------------------------------------------------------------------------------
# exact enumeration of type counts (any finite randomizer, tiny n)
# ---------------------------------------------------------------------------------------------


def _compositions(total: int, parts: int) -> NDArray[np.int64]:
    """All vectors of ``parts`` non-negative integers summing to ``total`` (stars and bars)."""
    if parts == 1:
        return np.array([[total]], dtype=np.int64)
    rows = []
    for bars in itertools.combinations(range(total + parts - 1), parts - 1):
        edges = (-1, *bars, total + parts - 1)
        rows.append([edges[i + 1] - edges[i] - 1 for i in range(parts)])
    return np.array(rows, dtype=np.int64)


def enumerated_size(n: int, types: int) -> int:
    """Number of type-count vectors :func:`enumerated_pair` visits: ``Σ_{b<n} C(b+types, types-1) = C(n+types, types) - 1``."""
    return math.comb(n + types, types) - 1 if types else 0


def enumerated_pair(n: int, types: MatrixTypes, label: str) -> PrivacyLossPair:
    """The blanket pair of one ordered victim pair, exactly (both directions), by enumerating the type
    counts ``c`` of the ``B + 1`` items for every ``B = 0..n-1``.

    ``P(B, c) = Bin(n-1, γ)(B) · Mult(B+1; ω)(c) · S_1/(B+1)`` with ``S_j = Σ_t c_t r_j(t)`` (and ``Q`` with
    ``S_2``), plus the victim-only outputs (masses ``R(x1)(y)``, ``R(x2)(y)``, ``B`` irrelevant).  Losses
    ``log S_1 - log S_2``.  No truncation.  O(:func:`enumerated_size`) time and memory.
    """
    m = types.prob.size
    log_fwd, log_bwd, loss = [], [], []
    if m and types.gamma > 0.0:
        log_prob = np.log(types.prob)
        for b in range(n):
            w = float(binomial_logpmf(np.array([b]), n - 1, min(types.gamma, 1.0))[0]) if types.gamma < 1.0 else (0.0 if b == n - 1 else -math.inf)
            if w == -math.inf:
                continue
            c = _compositions(b + 1, m)
            log_mult = gammaln(b + 2.0) - gammaln(c + 1.0).sum(axis=1) + (c * log_prob).sum(axis=1)  # no BLAS
            s1, s2 = (c * types.r1).sum(axis=1), (c * types.r2).sum(axis=1)
            base = w + log_mult - math.log(b + 1.0)
            log_fwd.append(base + np.log(s1))
            log_bwd.append(base + np.log(s2))
            loss.append(np.log(s1) - np.log(s2))
    if log_fwd:
        lf, lb, ls = np.concatenate(log_fwd), np.concatenate(log_bwd), np.concatenate(loss)
    else:
        lf = lb = ls = np.zeros(0)
    # Masses below ~1e-307 may round to 0: book that much per point as truncated.
    lost_f, lost_b = float(np.sum(lf < -700.0)) * 1e-304, float(np.sum(lb < -700.0)) * 1e-304
    vp, vq = types.victim_p, types.victim_q
    both = (vp > 0) & (vq > 0)
    with np.errstate(divide="ignore"):
        v_loss = np.log(vp[both]) - np.log(vq[both])
    # Masses from Boost / gammaln in log space: relative error ~1e-12 (log_ratio_error books it).
    largest = float(np.max(np.abs(np.concatenate([lf, lb])), initial=0.0)) + 1.0
    error = log_ratio_error(largest, 1e-11)
    forward = LossDistribution(
        np.concatenate([ls, v_loss]), np.concatenate([np.exp(lf), vp[both]]),
        infinity_mass=min(float(vp[vq == 0].sum()), 1.0), truncated_mass=min(lost_f, 1.0), loss_error=error,
    )
    backward = LossDistribution(
        np.concatenate([-ls, -v_loss]), np.concatenate([np.exp(lb), vq[both]]),
        infinity_mass=min(float(vq[vp == 0].sum()), 1.0), truncated_mass=min(lost_b, 1.0), loss_error=error,
    )
    return PrivacyLossPair(forward, backward, label=label)
