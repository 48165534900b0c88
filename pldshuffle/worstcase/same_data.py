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

from collections.abc import Sequence

import numpy as np

from ..pld.lattice import LatticeDirection
from .blocks import _ADAPTIVE_FLOOR, _ADAPTIVE_POINTS, _ADAPTIVE_WORK, chernoff_top
from .envelope import _common_range, _Lattice, _max_profile
from .gap import _profile_tilts
from .ledger import LedgerPLD
from .recursion import adaptive_profile, adaptive_window_size
from .strategy import _BLOCK_COARSENING, SameDataBlock
from .terms import WorstCaseTerm
from .witnesses import _composed_directions, _convex_minorant, _HullOutOfRange

__all__ = ["blocks_upper", "NEUTRAL"]

#: The neutral measure (all mass at loss 0): composing with it changes nothing.  A block whose upper measure
#: moved into the group's (:func:`blocks_upper`) keeps its own lower witnesses beside it.
NEUTRAL = LatticeDirection(0, np.ones(1), 0.0)


def blocks_upper(blocks: Sequence[SameDataBlock], spacing: float, count: int, options: dict) -> LatticeDirection | None:
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
        return _convex_minorant(envelope, total, lo, spacing)
    except _HullOutOfRange:
        return None
