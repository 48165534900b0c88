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

from .._kernels import UNIT_ROUNDOFF as _U
from ..pld import LossDistribution, PrivacyLossPair
from ..pld.lattice import LatticeDirection
from .blocks import _ADAPTIVE_FLOOR, _ADAPTIVE_POINTS, _ADAPTIVE_WORK, chernoff_top
from .envelope import _common_range, _Lattice, _max_profile
from .gap import _profile_tilts
from .ledger import LedgerPLD
from .recursion import adaptive_profile, adaptive_window_size
from .strategy import _BLOCK_COARSENING, SameDataBlock
from .terms import WorstCaseTerm
from .witnesses import _LOWER_SPECTRA_BYTES, StrategyWitnesses, _adaptive_lower, _composed_directions, _convex_minorant, _HullOutOfRange

__all__ = ["GroupBound", "NEUTRAL", "blocks_lower", "blocks_upper"]

#: Largest support of a block witness's exact composition (:func:`_composed_pair`; 2RR n = 20, 3 rounds: 9261).
_COMPOSED_SUPPORT = 2**17

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

    Options: each block's kept cover pairs composed ``count`` times, one order each, on a lattice an integer
    multiple ``G`` of ``spacing`` (the blocks' own, ``_BLOCK_COARSENING``, unless the window needs more than
    ``_ADAPTIVE_POINTS`` points); equal blocks share them.  Every block of any of the mechanisms is
    dominated by one option, so the recursion over ``len(blocks)`` steps, each choosing among all of them,
    bounds the ledger's blocks in whichever order they come (a superset of choices only raises the value).
    Beyond the window: :func:`~pldshuffle.worstcase.blocks.chernoff_top` of the blocks' own measures.  The
    result is the convex minorant of the minimum of the recursion's values and the composed block measures'
    profile (both upper bounds on a profile convex in ``α = e^x``), so it is never looser than the
    composition.  Cost: ``len(blocks) × tilts × (options + 1)`` FFTs of the window, plus the options'
    compositions where ``G`` differs from the blocks' lattice.
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
    if grid == _BLOCK_COARSENING:
        lattices = [b.lattice for b in distinct]
    else:
        lattices = [_Lattice(spacing * grid, lambda p: _composed_directions(p, spacing * grid, count, options)) for _ in distinct]
    choices = [d for b, lat in zip(distinct, lattices) if lat is not None for p in b.pairs for d in lat.directions(p)]
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


def blocks_lower(
    block: SameDataBlock, steps: int, count: int, spacing: float, bound: GroupBound, options: dict, report: Callable[[str], None] | None = None
) -> tuple[LatticeDirection | None, StrategyWitnesses | None]:
    """Lower ends of ``steps`` same-data blocks of ONE mechanism (each of ``count`` rounds): the adaptive lower
    measure and the strategy witnesses of :func:`~pldshuffle.worstcase.witnesses._adaptive_lower`, over the
    block witnesses' exact ``count``-fold compositions (:func:`_composed_pair`) as the options of each step.
    Each step is a block on one realisable dataset, chosen after the earlier blocks' outputs: a strategy the
    adversary of the ledger has.  ``(None, None)`` where a composition would hold more than
    ``_COMPOSED_SUPPORT`` losses.  Cost: the compositions (O(support^count)) and ``_adaptive_lower``'s runs.
    """
    composed = [_composed_pair(p, count) for p in block.witnesses]
    if not composed or any(c is None for c in composed):
        return None, None
    spectra = min(_LOWER_SPECTRA_BYTES, options.get("max_memory_bytes", math.inf) / 8)
    return _adaptive_lower(tuple(c for c in composed if c is not None), steps, spacing, bound.end, bound.tilts,
                           options.get("fft_backend", "auto"), bound.upper, spectra, report)


def _composed_pair(pair: PrivacyLossPair, count: int) -> PrivacyLossPair | None:
    """A sub-pair of the exact ``count``-fold composition of ``pair`` for lower bounds (None where a direction
    would hold more than ``_COMPOSED_SUPPORT`` losses): in each direction the finite losses summed over
    the rounds' outcomes and their masses multiplied, then lowered by ``4·count`` ulps each (each product of
    ``count`` factors is within ``count`` roundings of the exact one), so that no mass exceeds the exact
    composition's; masses at ``+∞`` and truncated masses are left out (a sub-measure only lowers δ).  Each
    sum of ``count`` losses lies within ``count`` times the pair's ``loss_error`` of the exact sum, plus its
    own rounding (``count`` ulps of the largest partial sum): the composed ``loss_error``.
    Cost O(support^count).
    """
    directions = []
    for d in pair.directions:
        if d.support_size ** count > _COMPOSED_SUPPORT:
            return None
        losses, masses = np.zeros(1), np.ones(1)
        for _ in range(count):
            losses = (losses[:, None] + d.losses[None, :]).ravel()
            masses = (masses[:, None] * d.masses[None, :]).ravel()
        largest = count * float(np.max(np.abs(d.losses), initial=0.0))
        error = count * d.loss_error + 2.0 * count * _U * largest
        directions.append(LossDistribution(losses, masses * (1.0 - 4.0 * count * _U), loss_error=error))
    return PrivacyLossPair(directions[0], directions[1] if len(directions) > 1 else None, label=f"{pair.label}, {count} rounds")
