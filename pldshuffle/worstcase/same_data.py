"""Several same-data blocks of a ledger bounded together: the adaptive recursion run over blocks.

Each ``compose(m, k, same_data=True)`` call is one block: ``k`` rounds on one dataset, which the adversary
may choose after seeing the earlier blocks' outputs (``docs/mathematics.md#several-same-data-blocks``).  A
block's own measure dominates the ``k``-fold composition of every member, so composing the blocks' measures
is sound; but each of them is an envelope over datasets (a maximum over members at every ``x``), and
composing envelopes lets every later block answer every budget with a different dataset *and* the first
block play all of them at once (2RR n = 3, ε0 = 1, two blocks of 2 rounds, δ = 0.3: the composed envelopes
give exactly ε = 0.798616, the adaptive worst case is 0.775790).

The adaptive worst case of ``q`` blocks is the recursion of :mod:`~pldshuffle.worstcase.recursion` with
``q`` steps whose options are the blocks' *super-round* pairs: the ``k``-fold compositions of the cells of
each block's cover, in one order each (every member's block, in either order, is dominated by one of them).
Its bound, lowered to the convex minorant of its minimum with the composed block measures (which bound the
same worst case), is one measure for all the blocks.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from .._kernels import UNIT_ROUNDOFF as _U, connect_the_dots
from ..pld import LossDistribution, PrivacyLossPair
from ..pld.lattice import LatticeDirection
from .blocks import _ADAPTIVE_FLOOR, _ADAPTIVE_POINTS, _ADAPTIVE_WORK, chernoff_top
from .envelope import _common_range, _max_profile
from .gap import _profile_tilts
from .ledger import LedgerPLD
from .recursion import adaptive_profile, adaptive_window_size
from .strategy import _BLOCK_COARSENING, SameDataBlock
from .terms import WorstCaseTerm
from .witnesses import _LOWER_SPECTRA_BYTES, StrategyWitnesses, _adaptive_lower, _convex_minorant, _HullOutOfRange

__all__ = ["GroupBound", "NEUTRAL", "blocks_lower", "blocks_upper"]

#: A block witness's composition (:func:`_composed_pair`) keeps at most this many losses per round (merged
#: by bins) and costs at most ``_COMPOSED_WORK`` products per direction (about a second in all).
_COMPOSED_BINS = 2**14
_COMPOSED_WORK = 2e7

#: The neutral measure (all mass at loss 0): composing with it changes nothing.  A block whose upper measure
#: moved into the group's (:func:`blocks_upper`) keeps its own lower witnesses beside it.
NEUTRAL = LatticeDirection(0, np.ones(1), 0.0)


@dataclass(frozen=True)
class GroupBound:
    """The group's upper measure, the recursion's window end (ledger lattice index) and its FFT frames' tilts."""

    upper: LatticeDirection
    end: int
    tilts: list[float]


def blocks_upper(blocks: Sequence[SameDataBlock], spacing: float, count: int, options: dict) -> GroupBound | None:
    """One lattice measure dominating the adaptive worst case of the same-data ``blocks`` (each of ``count``
    rounds, any order of the blocks, each block's dataset chosen after the earlier outputs), or None where
    a block has no cover (it fell back to the changing-data terms), the recursion would cost more than
    ``_ADAPTIVE_WORK`` or the hull leaves the doubles' range.

    Options: each block's kept cover pairs composed ``count`` times (on the blocks' own lattice,
    ``_BLOCK_COARSENING`` times ``spacing``), one order each, moved up onto a lattice an integer multiple
    ``G`` of that where the window needs more than ``_ADAPTIVE_POINTS`` points (connected, :func:`_coarsened_up`);
    equal blocks share them.  Every block of any of the mechanisms is
    dominated by one option, so the recursion over ``len(blocks)`` steps, each choosing among all of them,
    bounds the ledger's blocks in whichever order they come (a superset of choices only raises the value).
    Beyond the window: :func:`~pldshuffle.worstcase.blocks.chernoff_top` of the blocks' own measures.  The
    result is the convex minorant of the minimum of the recursion's values and the composed block measures'
    profile (both upper bounds on a profile convex in ``α = e^x``), so it is never looser than the
    composition.  Cost: ``len(blocks) × tilts × (options + 1)`` FFTs of the window.
    """
    if any(b.lattice is None or len(b.terms) != 1 for b in blocks):
        return None
    uppers = [b.terms[0].upper[0] for b in blocks]
    if any(len(b.terms[0].upper) != 1 for b in blocks) or min(u.finite_mass for u in uppers) <= 0.0:
        return None
    steps = len(blocks)
    terms = tuple(WorstCaseTerm((u,), b.terms[0].lower, 1) for u, b in zip(uppers, blocks))
    measures = LedgerPLD(spacing, terms, **options).dominating_measures()
    lo, size = _common_range(measures)
    envelope = _max_profile(measures, lo, size, spacing)
    material = np.flatnonzero(envelope > _ADAPTIVE_FLOOR)
    end = lo + int(material[-1]) + 1 if material.size else 0
    if end <= 0:
        return None
    factor = max(1, -(-2 * end // _ADAPTIVE_POINTS))
    grid = _BLOCK_COARSENING * -(-factor // _BLOCK_COARSENING)  # G: a multiple of the blocks' lattice
    hi = -(-end // grid)
    distinct = list({id(b): b for b in blocks}.values())
    choices = [_coarsened_up(d, spacing * _BLOCK_COARSENING, grid // _BLOCK_COARSENING) for b in distinct if b.lattice is not None for p in b.pairs for d in b.lattice.directions(p)]
    if not choices:
        return None
    tilts = _profile_tilts(envelope, lo, spacing)
    work = steps * (len(tilts) + 1) * (len(choices) + 1) * adaptive_window_size(choices, -hi, hi)
    if work > _ADAPTIVE_WORK:
        return None
    (values,) = adaptive_profile(choices, [steps], spacing * grid, -hi, hi, chernoff_top(uppers, spacing), tilts,
                                 options.get("fft_backend", "auto"), infinity=max(u.infinity for u in uppers))
    position = np.arange(-hi, hi + 1) * grid - lo
    inside = (position >= 0) & (position <= size)
    envelope[position[inside]] = np.minimum(envelope[position[inside]], values[inside])
    total = max(d.finite_mass + d.infinity for d in measures)
    try:
        return GroupBound(_convex_minorant(envelope, total, lo, spacing), end, tilts)
    except _HullOutOfRange:
        return None


def _coarsened_up(direction: LatticeDirection, spacing: float, factor: int) -> LatticeDirection:
    """The measure (on the lattice ``spacing``) connected onto the lattice ``factor`` times coarser
    (:func:`~pldshuffle._kernels.connect_the_dots`: each mass split between its two neighbouring coarse points
    so that its mass and ``e^{-s}``-moment are kept, whose profile dominates it at every x), its losses first
    raised by their float rounding and its masses by a few ulps (the splits' rounding).  O(support)."""
    if factor == 1:
        return direction
    losses = (direction.start + np.arange(direction.masses.size)) * spacing
    raised = losses + 4.0 * _U * (np.abs(losses) + spacing)
    start, masses = connect_the_dots(raised, direction.masses, spacing * factor)
    return LatticeDirection(start, np.asarray(masses * (1.0 + 16.0 * _U), dtype=np.float64), direction.infinity)


def blocks_lower(
    block: SameDataBlock, steps: int, count: int, spacing: float, bound: GroupBound, options: dict, report: Callable[[str], None] | None = None
) -> tuple[LatticeDirection | None, StrategyWitnesses | None]:
    """Lower ends of ``steps`` same-data blocks of ONE mechanism (each of ``count`` rounds): the adaptive lower
    measure and the strategy witnesses of :func:`~pldshuffle.worstcase.witnesses._adaptive_lower`, over the
    block witnesses' ``count``-fold compositions (:func:`_composed_pair`, merged in bins of a quarter
    lattice step) as the options of each step.
    Each step is a block on one realisable dataset, chosen after the earlier blocks' outputs: a strategy the
    adversary of the ledger has.  ``(None, None)`` where a composition would cost more than
    ``_COMPOSED_WORK``.  Cost: the compositions and ``_adaptive_lower``'s runs.
    """
    composed = [_composed_pair(p, count, spacing / 4) for p in block.witnesses]
    if not composed or any(c is None for c in composed):
        return None, None
    spectra = min(_LOWER_SPECTRA_BYTES, options.get("max_memory_bytes", math.inf) / 8)
    return _adaptive_lower(tuple(c for c in composed if c is not None), steps, spacing, bound.end, bound.tilts,
                           options.get("fft_backend", "auto"), bound.upper, spectra, report)


def _composed_pair(pair: PrivacyLossPair, count: int, width: float) -> PrivacyLossPair | None:
    """A realisable sub-pair of the ``count``-fold composition of ``pair``, for lower bounds (None where it
    would cost more than ``_COMPOSED_WORK`` products).

    Each direction is composed one round at a time; after each round the outcomes whose losses share a bin
    of ``width`` (at least ``count × span / _COMPOSED_BINS``, ``span`` the direction's loss range) are merged
    into one, of loss ``log(ΣP/ΣQ)``: a post-processing (the analyst forgets which of them occurred), so the
    result is a realisable pair's direction, within ``O(width²)`` per round of the exact composition's
    profile; each direction is one order of a realisable block, which is all an option of
    :func:`~pldshuffle.worstcase.witnesses._adaptive_lower` needs.  Masses are lowered by their sums'
    rounding bound (no mass exceeds the realisable one's); each merged loss lies within the inputs' loss
    error (``log Σ e^{..}`` is 1-Lipschitz) plus its own rounding of the realisable one: the composed
    ``loss_error``.  Masses at ``+∞`` and truncated masses are left out (a sub-measure only lowers δ).
    Cost O(count × bins × support).
    """
    directions = []
    for d in pair.directions:
        if d.support_size == 0:
            return None
        span = float(d.losses[-1] - d.losses[0])
        step = max(width, count * span / _COMPOSED_BINS)
        losses: NDArray[np.float64] = np.zeros(1)
        masses: NDArray[np.float64] = np.ones(1)
        error, work = 0.0, 0
        for _ in range(count):
            work += losses.size * d.support_size
            if work > _COMPOSED_WORK:
                return None
            total = (losses[:, None] + d.losses[None, :]).ravel()
            products = (masses[:, None] * d.masses[None, :]).ravel()
            bins, where = np.unique(np.floor(total / step), return_inverse=True)
            anchor = bins * step  # ΣQ taken relative to e^{-anchor}: no overflow, and exact when one atom
            merged = np.bincount(where, weights=products)
            tilted = np.bincount(where, weights=products * np.exp(anchor[where] - total))
            terms = int(np.max(np.bincount(where)))
            largest = float(np.max(np.abs(total)))
            losses = np.asarray(anchor + np.log(merged) - np.log(tilted), dtype=np.float64)
            masses = np.asarray(merged * (1.0 - 2.0 * (terms + 2) * _U), dtype=np.float64)
            # Inputs' errors carry over (1-Lipschitz); each sum of `terms` is within terms·u (relative), each
            # exp and log and the sums of losses within a few ulps of their magnitudes.
            error += d.loss_error + 4.0 * (terms + 4) * _U + 8.0 * _U * (largest + step + 1.0)
        directions.append(LossDistribution(losses, masses, loss_error=error))
    return PrivacyLossPair(directions[0], directions[1] if len(directions) > 1 else None, label=f"{pair.label}, {count} rounds")
