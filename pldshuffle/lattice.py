"""Lattice measures of one ledger entry and how their composition is realised and read.

* :class:`LatticeDirection` -- one order of a pair on the lattice ``z_j = j·Δ`` (finite masses, the mass at
  ``+∞``, and for lower witnesses the moment generating function of the rounding offsets);
* :class:`Term` -- ``count`` rounds of one mechanism: dominating upper measures and lower witnesses;
* :class:`Composite` -- one combination of directions composed and realised for every tilt, with the
  certified upper and lower δ read off it (see :mod:`pldshuffle.certified` for the invariant and
  ``docs/mathematics.md#accountant`` for the proofs).
"""

from __future__ import annotations

import itertools
import math
import sys
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
from numpy.typing import NDArray

from ._kernels import UNIT_ROUNDOFF as _U, hockey_stick_profile
from .composition import Factor, Realization
from .grid import ROUNDING_SCALES, lower_error_estimates
from .pld import PrivacyLossPair

__all__ = [
    "Composite",
    "ProductLower",
    "LatticeDirection",
    "Term",
    "compose_infinity",
    "direct_realization",
    "lower_direction",
    "profile_at",
    "rounding_penalty",
    "shift_certificate",
    "upper_direction",
]

#: Lower-end shifts (:func:`shift_certificate`): an even grid of _SHIFTS on [0, mean], and the Chernoff
#: quantiles at levels e^{-z²/2} for z = 0, step, .., max.
_SHIFTS = 97
_SHIFT_Z_STEP, _SHIFT_Z_MAX = 0.2, 40.0
#: Lattice cells per block of the lower end's error terms (:meth:`Composite.lower`).
_LOWER_BLOCK = 64


@dataclass(frozen=True, eq=False)
class LatticeDirection:
    """One order of a pair on the lattice: finite masses at ``(start + i)·Δ`` and the mass at ``+∞``.

    ``offset_log_mgf`` (lower witnesses only) is ``log Σ_s ω(s) e^{-c·d(s)/Δ}`` for each ``c`` in
    :data:`pldshuffle.grid.ROUNDING_SCALES`, where ``d(s) ≥ 0`` is (a lower bound on) the amount the mass
    at ``s`` was rounded down by (0 where it was merged exactly onto the lattice); ``offset_mean`` is the
    mass-weighted mean of ``d/Δ``.  A merged lower witness carries the rounded-down measure of the same
    direction as ``alternative`` and the per-round error estimates of both (:meth:`for_rounds`).
    """

    start: int
    masses: NDArray[np.float64]
    infinity: float
    offset_log_mgf: NDArray[np.float64] | None = None
    offset_mean: float = 0.0
    alternative: LatticeDirection | None = None
    lower_errors: tuple[float, float, float, float] = (0.0, 0.0, 0.0, 0.0)
    #: Lower measures only: the exact pair's losses may lie this much below the measure's, so a composition
    #: of ``n`` rounds is read ``n`` times this further right (:attr:`Composite.loss_shift`).
    loss_error: float = 0.0

    @property
    def finite_mass(self) -> float:
        return float(self.masses.sum())

    def factor(self, count: int) -> Factor:
        return Factor(self.start, self.masses, count)

    def for_rounds(self, rounds: int) -> LatticeDirection:
        """The lower witness to compose ``rounds`` times: this merged measure, or its rounded-down
        alternative where that is estimated to lose less.

        Both are valid; the estimates are :func:`pldshuffle.grid.lower_error_estimates`.
        """
        if self.alternative is None:
            return self
        merged, rounded = lower_error_estimates(self.lower_errors, rounds)
        return self if merged <= rounded else self.alternative


@dataclass(frozen=True, eq=False)
class Term:
    """``count`` rounds of one mechanism (see the module notes).

    ``exact_upper`` / ``exact_lower`` are the exact (off-lattice) pairs, when known: a single round of a
    single term is then evaluated on them directly (tighter between lattice points).
    """

    upper: tuple[LatticeDirection, ...]
    lower: tuple[tuple[LatticeDirection, ...], ...]
    count: int = 1
    exact_upper: tuple[PrivacyLossPair, ...] = ()
    exact_lower: tuple[PrivacyLossPair, ...] = ()
    lower_count: int = 0  # rounds of the lower witnesses; 0 means ``count`` (a same-data block differs)
    #: For a single round of a family's cover: its exact pairs, refined at queried points (in place of
    #: ``exact_upper``/``exact_lower``); see :class:`pldshuffle.dominating.QueryRefinement`.
    refiner: Any = None
    #: A lower measure of one block of rounds: at each ε its profile is attained by some realisable adaptive
    #: strategy (``pldshuffle.dominating._adaptive_lower``).  A maximum over strategies, not one pair, so it
    #: is only read when the block is the whole ledger (never composed).
    adaptive_lower: LatticeDirection | None = None
    #: Lower witnesses of single realisable adaptive strategies over one block (each looks at the block's own
    #: outputs only): composable like fixed pairs, beside other entries too.  An object whose
    #: ``measure(budget)`` builds the one aiming at a budget (``pldshuffle.dominating.StrategyWitnesses``), or None.
    strategies: Any = None
    #: Every outcome of one round of the mechanism has privacy loss in ``[-max_loss, max_loss]`` (ε0 when
    #: the view is a post-processing of an ε0-LDP report), truncated outcomes included; caps ε (see
    #: :attr:`pldshuffle.certified.CertifiedPLD.loss_cap`).
    max_loss: float = math.inf

    def __post_init__(self) -> None:
        if self.count < 1 or not self.upper or not self.lower:
            raise ValueError("a term needs count >= 1, an upper measure and at least one lower witness")
        if self.lower_count == 0:
            object.__setattr__(self, "lower_count", self.count)

    def scaled(self, factor: int) -> Term:
        """The term repeated ``factor`` times."""
        return replace(self, count=self.count * factor, lower_count=self.lower_count * factor)


def compose_infinity(parts: list[tuple[LatticeDirection, int]], *, upper: bool) -> float:
    """Mass at ``+∞`` of the composition, ``Π T^n - Π F^n`` (T total, F finite mass), rounded outward.

    Written as ``e^{L+G}·(1 - e^{-G})`` with ``L = Σ n log F`` and ``G = Σ n log1p(I/F)`` (I the infinity
    mass), ``-expm1(-G)`` for the bracket: T and F can agree to the last bit (I ≈ 1e-19 next to F ≈ 1),
    and their difference would then cancel to nothing; and ``G`` may be huge (2**40 rounds of I ≈ 1e-8),
    where ``e^L·expm1(G)`` would overflow although the value is at most 1.  The slack covers the roundings
    of ``e^x``, ``expm1`` and the products (a few u each, per part and per binary digit of ``n``) and the
    absolute error of the exponents (≤ (parts + 3)·u times the sum of their terms' magnitudes).  ``F``, the
    sum of the direction's masses, is rounded too: raised to the power ``n``, its rounding grows ``n``-fold
    and no multiple of ``|L|`` bounds it when ``F ≈ 1`` (2**40 rounds of a witness whose ``F + I`` rounded
    to just above 1 gave a lower end of 1.0001).  So ``F`` is the correctly rounded sum and its rounding
    error ``r`` enters the exponent (``math.fsum``, O(N)): ``L = Σ n (log F + log1p(r/F))``.
    """
    log_finite, log_growth, log_total, magnitude = 0.0, 0.0, 0.0, 0.0
    for d, n in parts:
        masses = d.masses.tolist()
        finite, infinity = math.fsum(masses), d.infinity
        residual = math.fsum(itertools.chain(masses, (-finite,)))  # Σ masses - finite, to a relative u
        if finite + infinity <= 0.0:
            return 0.0
        log_total += n * math.log(finite + infinity)
        if finite > 0.0:
            terms = (n * math.log(finite), n * math.log1p(residual / finite), n * math.log1p(infinity / finite))
            log_finite += terms[0] + terms[1]
            log_growth += terms[2]
            magnitude += sum(abs(t) for t in terms)
        else:
            log_finite = -math.inf
    # Dominating measures may weigh more than 1, so e^{L+G} can overflow after many rounds; the value is
    # then above 1, which the upper bound clips to anyway, and e^{700} still bounds it from below.
    if log_finite == -math.inf:  # no finite part survives: everything is at +∞
        value, exponent = math.exp(min(log_total, 700.0)), abs(log_total)
    else:
        value = math.exp(min(log_finite + log_growth, 700.0)) * -math.expm1(-log_growth)
        exponent = magnitude
    slack = 16.0 * _U * (len(parts) + sum(math.log2(n + 1) for _, n in parts)) + (len(parts) + 3) * _U * exponent
    if not upper:
        return min(max(0.0, value * (1.0 - slack)), 1.0)  # a mass: past 1 only by rounding
    # A positive mass below the normal range (e^L underflows) is not 0: the smallest normal double bounds it.
    floor = sys.float_info.min if any(d.infinity > 0.0 for d, _ in parts) else 0.0
    return min(1.0, max(value * (1.0 + slack), floor))


def profile_at(direction: LatticeDirection, indices: NDArray[np.int64], spacing: float) -> NDArray[np.float64]:
    """The direction's profile ``h(z_j)`` (infinity mass included) at the lattice indices ``j``.

    O(support) for the recursion over the direction's own support, then O(1) per index: above the support
    only the infinity mass is left; below it ``h(z_j) = e^{-kΔ} H_0 + (1 - e^{-kΔ}) A`` (``k`` steps below
    the first mass, ``H_0`` the profile there, ``A`` the finite mass), the same positive recursion in
    closed form.
    """
    profile, suffix = hockey_stick_profile(direction.masses, spacing)
    rel = np.asarray(indices, dtype=np.int64) - direction.start
    out = profile[np.clip(rel, 0, direction.masses.size)]  # the trailing 0 covers every index above
    below = rel < 0
    if np.any(below):
        decay = np.exp(rel[below] * spacing)
        out[below] = decay * profile[0] + (-np.expm1(rel[below] * spacing)) * suffix[0]
    return out + direction.infinity


@dataclass(frozen=True, eq=False)
class Composite:
    """One combination of directions (and witnesses), realised for every tilt."""

    realizations: tuple[Realization, ...]
    infinity: float
    relative: float
    shifts: NDArray[np.float64] = field(default_factory=lambda: np.zeros(1))
    penalties: NDArray[np.float64] = field(default_factory=lambda: np.zeros(1))
    #: Lower composites: the sum of the rounds' loss errors (:attr:`LatticeDirection.loss_error`); the
    #: exact composition at ε is at least this one at ε + loss_shift.
    loss_shift: float = 0.0
    _suffix_cache: dict[int, tuple[int, int, NDArray[np.float64]]] = field(default_factory=dict, repr=False)

    def upper(self, eps: NDArray[np.float64]) -> NDArray[np.float64]:
        return np.minimum(self.unclipped_upper(eps), 1.0)

    def unclipped_upper(self, eps: NDArray[np.float64]) -> NDArray[np.float64]:
        """Certified upper value of the composed measure's profile at each ε, not clipped at 1 (δ never
        exceeds 1, but a weighted part of a mixture, :mod:`pldshuffle._far_atoms`, needs its own profile)."""
        if not self.realizations:  # empty finite part
            return np.full(eps.shape, self.infinity)
        best = np.full(eps.shape, np.inf)
        for r in self.realizations:
            value = r.finite_delta(eps) * (1.0 + r.relative_error + self.relative) + r.error_delta(eps, r.fp_error) + r.top_mass
            best = np.minimum(best, value + np.where(eps < r.lo, r.bottom_mass, 0.0))
        return self.infinity + best

    def dominating_measure(self, spacing: float) -> LatticeDirection:
        """One lattice measure dominating the composition (see ``CertifiedPLD.dominating_measures``).

        On the θ = 0 window every point takes the realisation with the smallest round-off bound there
        (``‖e‖₂·e^{log_scale - θz}`` ≥ the pointwise error, folded mass only adds), plus that bound.
        """
        if not self.realizations:
            return LatticeDirection(0, np.zeros(1), self.infinity)
        base = self.realizations[0]
        z = (base.lo_index + np.arange(base.size)) * spacing
        masses = np.zeros(base.size)
        error = np.full(base.size, np.inf)
        for r in self.realizations:
            a = r.lo_index - base.lo_index
            lo, hi = max(a, 0), min(a + r.size, base.size)
            if lo >= hi:
                continue
            # After absurdly many rounds a dominating measure's total (slightly above 1 per round) or the
            # tilted scale overflows: the bound is then +inf there, still a bound (callers take minima).
            with np.errstate(over="ignore", invalid="ignore"):
                bound = r.fp_error * np.exp(r.log_scale - r.theta * z[lo:hi])
                value = r.masses[lo - a : hi - a] * (1.0 + r.relative_error + self.relative) + bound
            better = bound < error[lo:hi]
            masses[lo:hi] = np.where(better, value, masses[lo:hi])
            error[lo:hi] = np.where(better, bound, error[lo:hi])
        if base.folded_tilted > 0.0:  # bounds the mass below the window (θ = 0); +inf past e^709
            with np.errstate(over="ignore"):
                masses[0] += base.folded_tilted * float(np.exp(base.log_scale))
        return LatticeDirection(base.lo_index, masses, min(1.0, self.infinity + base.top_mass))

    def lower(self, eps: NDArray[np.float64]) -> NDArray[np.float64]:
        """Certified lower δ at each ε, non-increasing in ε.

        A realisation gives, at ``x = ε - t`` (less the shift's penalty), ``A(x) = b(x)(1 - ρ) - E - F``:
        ``b`` its finite δ, ``E`` the round-off bound over the lattice points above ``x`` and ``F`` the
        folded mass's image, both read at the start of x's *block* of lattice cells (:meth:`_blocks`;
        that only counts more points and more weight, so it stays a bound).  Inside a block ``A`` is then
        non-increasing (``b`` is), but across blocks it may rise where the error terms drop faster than δ
        (flat stretches, e.g. δ ≈ 1).  The true δ is non-increasing, so ``A`` at any block start ``g ≥ x``
        is a lower bound at ``x`` too; taking also the largest of those (a suffix maximum over block
        starts, built once) makes the result non-increasing in ε: of two points in different blocks the
        later one's block start lies between them.
        """
        best = np.zeros(eps.shape)
        x = (eps[:, None] + self.loss_shift) - self.shifts[None, :]
        for i, r in enumerate(self.realizations):
            size, starts, suffix = self._blocks(i)
            # Index of the first block start g_k = z_{lo + k·size - 1} with g_k ≥ x (checked in floating point).
            k = np.ceil((x / r.spacing + 1.0 - r.lo_index) / size)
            k = np.clip(k + ((r.lo_index + k * size - 1.0) * r.spacing < x), 1, starts + 1)
            found = np.maximum(self._lower_at(r, x, size), suffix[(k - 1).astype(np.int64)])
            best = np.maximum(best, np.max(found - self.penalties[None, :], axis=1))
        return np.minimum(self.infinity + best, 1.0)

    def _lower_at(self, r: Realization, x: NDArray[np.float64], size: int, block: NDArray[np.float64] | None = None) -> NDArray[np.float64]:
        """``A(x)`` of :meth:`lower` with blocks of ``size`` cells, the block given by the index of its first
        lattice point (default: x's own block); ``-inf`` where the tilted terms overflow (that realisation
        says nothing there)."""
        if block is None:
            first = np.floor(x / r.spacing) + 1.0  # the first lattice point above x
            block = r.lo_index + np.floor(np.maximum(first - r.lo_index, 0.0) / size) * size
        with np.errstate(over="ignore", invalid="ignore"):
            # Read at the block's start: E counts the points from there, F weighs from the cell below it.
            below = (block - 1.0) * r.spacing
            found = r.finite_delta(x) * (1.0 - r.relative_error - self.relative)
            found = found - r.error_delta(below, r.fp_error) - r.folded_delta(below)
        return np.where(np.isnan(found), -np.inf, found)

    def _blocks(self, index: int) -> tuple[int, int, NDArray[np.float64]]:
        """Realisation ``index``'s block size (cells), number of block starts ``g_k = z_{lo + k·size - 1}``
        (``k ≥ 1``) in its window, and the suffix maxima of ``A`` over them (``-inf`` past the last).

        A block's error terms are read at its start: the tilted round-off bound then grows by at most
        ``e^{θ·size·Δ}`` (``size`` keeps that below ``e^{0.05}``); O(window/size) memory, built once.
        """
        cached = self._suffix_cache.get(index)
        if cached is None:
            r = self.realizations[index]
            size = int(min(_LOWER_BLOCK, max(1, math.floor(0.05 / (r.theta * r.spacing)) if r.theta > 0 else _LOWER_BLOCK)))
            starts = -(-r.size // size)
            first = r.lo_index + np.arange(1, starts + 1, dtype=np.float64) * size
            values = np.append(self._lower_at(r, (first - 1.0) * r.spacing, size, first), -np.inf)
            cached = self._suffix_cache[index] = (size, starts, np.maximum.accumulate(values[::-1])[::-1])
        return cached


#: :meth:`ProductLower.lower` scans every this many points first.
_STRIDE = 32


@dataclass(eq=False)
class ProductLower:
    """A lower end of a ledger of one adaptive block ``F`` and other rounds ``W``, whatever their order.

    ``strategy`` reads, at each ``x``, a lower bound on the δ at ``x`` of some realisable adaptive strategy
    ``s_x`` over ``F``'s rounds (the block's adaptive lower measure as a one-round composite, see
    :attr:`Term.adaptive_lower`); ``others`` realises (θ = 0) the other entries' fixed witnesses,
    *rounded down*: every mass of such a measure at ``z`` comes from exact losses above ``z - Δ - e`` (``e``
    the witness's loss error; :func:`pldshuffle._kernels.merge_to_lattice` within a cell), so the exact
    ``P_W[L_W ≥ t]`` is at least the composed measure's mass at or above ``t + shift``, ``shift =
    Σ n (Δ + e)``.  The strategy ``s_x`` adapts to ``F``'s outputs only, so it is realisable in any order of
    the rounds, and ``F`` and ``W`` are independent under both datasets:

    .. math::  δ(ε) = E_{P_W}[δ_{F^{s}}(ε - L_W)] ≥ δ_{F^{s}}(x) · P_W[L_W ≥ ε - x]

    (``δ_{F^s}`` is non-increasing, and 1 at ``-∞``).  At each ε the largest product over the lattice
    points ``x`` of the strategy's support is taken.  (Reading ``δ_F`` against the others' whole PLD would
    let the strategy see their outputs, which needs them to come first.)  ``infinity`` is 0: a lower bound
    on the composed mass at +∞.  Cost: O(points / _STRIDE) per ε.
    """

    strategy: Composite
    others: Realization | None
    others_infinity: float
    relative: float
    shift: float
    infinity: float = 0.0

    def __post_init__(self) -> None:
        measure = self.strategy.realizations[0]
        x = (measure.lo_index + np.arange(measure.size + 1, dtype=np.float64)) * measure.spacing
        values = self.strategy.lower(x)
        material = values > 0.0  # only points where the strategy's δ is positive can give a product
        self._x, self._values = x[material], values[material]
        r = self.others
        if r is None:  # the others' finite part is empty: only their mass at +∞
            self._tail = np.zeros(1)
            return
        # Exact mass at or above each lattice index of the window, from below: the sums' rounding, the
        # masses' relative error, the round-off (each entry within ‖e‖₂·e^{log_scale}) and the folded mass.
        suffix = np.append(np.cumsum(r.masses[::-1])[::-1], 0.0) * (1.0 - r.relative_error - self.relative - 2.0 * _U * (r.size + 2))
        with np.errstate(over="ignore", invalid="ignore"):
            scale = math.exp(r.log_scale) if r.log_scale < 700.0 else math.inf
            error = r.fp_error * scale * np.sqrt(np.arange(r.size, -1, -1, dtype=np.float64)) + r.folded_tilted * scale
            raw = np.where(np.isnan(suffix - error), -np.inf, suffix - error)
        # The exact tail is non-increasing: a bound at a later index holds at every earlier one.
        self._tail = np.maximum(np.maximum.accumulate(raw[::-1])[::-1], 0.0)

    @property
    def realizations(self) -> tuple[Realization, ...]:
        return (self.others,) if self.others is not None else ()

    def tail(self, t: NDArray[np.float64]) -> NDArray[np.float64]:
        """Lower bounds on the others' exact ``P_W[L_W ≥ t]`` (their mass at +∞ included)."""
        r = self.others
        if r is None:
            return np.full(t.shape, self.others_infinity)
        # The first lattice index at or above t + shift (read from the window's start below it).
        with np.errstate(invalid="ignore"):
            index = np.ceil((t + self.shift) / r.spacing) - r.lo_index
        index = np.clip(np.nan_to_num(index, nan=r.size, posinf=r.size, neginf=0.0), 0, r.size).astype(np.int64)
        # The division may round down across a lattice point: never count a point below t + shift.
        index = np.minimum(index + ((r.lo_index + index) * r.spacing < t + self.shift), r.size)
        return self._tail[index] + self.others_infinity * (1.0 - 4.0 * _U)

    def lower(self, eps: NDArray[np.float64]) -> NDArray[np.float64]:
        """Certified lower δ at each ε (non-increasing over the ε of one call)."""
        eps = np.asarray(eps, dtype=np.float64)
        out = np.zeros(eps.shape)
        if self._x.size == 0:
            return out
        for i, e in enumerate(eps.ravel()):
            out.flat[i] = self._best(float(e))[0] * (1.0 - 2.0 * _U)
        # A bound at a larger ε holds at every smaller one (δ is non-increasing): the refined points may
        # differ from one ε to the next, so take the suffix maximum over the ε asked for.
        flat, order = out.ravel(), np.argsort(eps.ravel(), kind="stable")
        flat[order] = np.maximum.accumulate(flat[order][::-1])[::-1]
        return np.minimum(flat.reshape(eps.shape), 1.0)

    def aim(self, epsilon: float) -> float:
        """The ``x`` of the largest product at ``epsilon``: the budget the block's strategy best aims at there
        (``nan`` where every product is 0)."""
        if self._x.size == 0:
            return math.nan
        value, x = self._best(epsilon)
        return x if value > 0.0 else math.nan

    def _best(self, epsilon: float) -> tuple[float, float]:
        """The largest product at ``epsilon`` over the strategy's points of positive δ (every _STRIDE-th
        point, then every point near the best of those: the product of a non-increasing and a non-decreasing
        function; O(points/_STRIDE)), and its point."""
        x, values = self._x, self._values
        coarse = values[::_STRIDE] * self.tail(epsilon - x[::_STRIDE])
        k = int(np.argmax(coarse)) * _STRIDE
        near = slice(max(k - 2 * _STRIDE, 0), k + 2 * _STRIDE + 1)
        fine = values[near] * self.tail(epsilon - x[near])
        j = int(np.argmax(fine))
        if coarse[k // _STRIDE] >= fine[j]:
            return float(coarse[k // _STRIDE]), float(x[k])
        return float(fine[j]), float(x[near][j])


def direct_realization(factor: Factor, spacing: float) -> Realization:
    """A single lattice measure viewed as a realisation (exact masses, no FFT error)."""
    masses = np.ascontiguousarray(factor.masses, dtype=np.float64)
    profile, suffix = hockey_stick_profile(masses, spacing)
    relative = 4.0 * _U * masses.size
    # The whole support: no mass below or above the window, none folded.
    return Realization(spacing, 0.0, factor.start, masses.size, masses, 0.0, 0.0, 0.0, 0.0, 0.0, relative, profile, suffix)


def shift_certificate(combo: list[tuple[LatticeDirection, int]], spacing: float) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Shifts ``t`` and penalties ``≥ F·P[D < t]`` (Chernoff on the summed rounding offsets D ≥ 0)."""
    log_mgf = sum(n * d.offset_log_mgf for d, n in combo if d.offset_log_mgf is not None)
    mean = sum(n * d.offset_mean for d, n in combo)
    if np.isscalar(log_mgf) or mean <= 0.0:
        return np.zeros(1), np.zeros(1)
    # An even grid on [0, mean] (fine when D spans few lattice steps), and for each level e^{-z²/2} the
    # largest shift whose Chernoff bound is at most that level (closed form per scale c: c·t + log_mgf[c]
    # ≤ log level).  D sums many bounded offsets and is near Gaussian, so the latter are its quantiles
    # _SHIFT_Z_STEP standard deviations apart where the useful shifts lie; the even grid alone spaced them
    # ~6 sd apart after 1e5 rounds (ε(1e-10) of 2000 rounds of RR: lower end 1360.278 → 1360.333, upper 1360.372).
    levels = -0.5 * np.arange(0.0, _SHIFT_Z_MAX + _SHIFT_Z_STEP / 2, _SHIFT_Z_STEP) ** 2
    log_mgf = np.asarray(log_mgf)
    quantiles = np.max((levels[:, None] - log_mgf[None, :]) / ROUNDING_SCALES[None, :], axis=1)
    steps = np.unique(np.clip(np.concatenate([np.linspace(0.0, mean, _SHIFTS), quantiles]), 0.0, mean))
    return steps * spacing, rounding_penalty(log_mgf, steps)


def rounding_penalty(log_mgf: NDArray[np.float64], steps: NDArray[np.float64]) -> NDArray[np.float64]:
    """Bounds on ``P[D < t]`` at ``t = steps·Δ`` (``steps[0] = 0``) for rounding offsets ``D ≥ 0`` whose
    ``log E[e^{-cD/Δ}]`` is at most ``log_mgf[c]`` for each ``c`` in ``ROUNDING_SCALES``: Chernoff,
    ``min_c e^{c·steps + log_mgf[c]}``, and 0 for no shift."""
    with np.errstate(over="ignore"):  # a bound above 1 (even +inf) is still a bound: the shift is then not used
        penalty = np.exp(np.min(ROUNDING_SCALES[:, None] * steps[None, :] + log_mgf[:, None], axis=0)) * (1.0 + 1e-12)
    penalty[0] = 0.0  # D ≥ 0: no shift needs no correction
    return penalty


def upper_direction(d) -> LatticeDirection:
    """Connect-the-dots lattice measure of a discretised direction (truncated mass booked at +∞)."""
    return LatticeDirection(d.upper_start, d.upper, d.upper_infinity)


def lower_direction(d) -> LatticeDirection:
    """Merged lattice measure of a discretised direction, with its rounding-offset certificate and the
    rounded-down measure as its alternative (:meth:`LatticeDirection.for_rounds`)."""

    def measure(m, **extra: Any) -> LatticeDirection:
        log_mgf = np.asarray(m.rounding_log_mgf, dtype=np.float64) + 1e-12  # covers the sum's rounding
        return LatticeDirection(m.start, m.masses, d.lower_infinity, log_mgf, m.rounding_mean, loss_error=d.loss_error, **extra)

    return measure(d.merged, alternative=measure(d.rounded), lower_errors=d.lower_errors())
