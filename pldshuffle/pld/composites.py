"""Realised compositions read as certified δ curves (see :mod:`pldshuffle.pld.certified` for the invariant
and ``docs/mathematics.md#accountant`` for the proofs).

* :class:`Composite` -- one combination of lattice directions composed and realised for every tilt, with the
  certified upper and lower δ read off it;
* :class:`ProductLower` -- a lower end of one adaptive block against other rounds, whatever their order;
* :func:`direct_realization` -- a single lattice measure viewed as a realisation (no FFT, no round-off).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import cast

import numpy as np
from numpy.typing import NDArray

from .._kernels import UNIT_ROUNDOFF as _U, hockey_stick_profile
from .composition import Factor, Realization
from .lattice import LatticeDirection

__all__ = ["Composite", "ProductLower", "direct_realization"]

#: Lattice cells per block of the lower end's error terms (:meth:`Composite.lower`).
_LOWER_BLOCK = 64


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
        exceeds 1, but a weighted part of a mixture, :mod:`pldshuffle.pld.far_atoms`, needs its own profile)."""
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
        return cast(NDArray[np.float64], self._tail[index] + self.others_infinity * (1.0 - 4.0 * _U))

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
