"""The strategy for one ledger entry: pair family, count and setting → terms, chosen once here.

* a single pair: its own lattice measures (and its exact pairs, for single-round queries);
* a family queried as one round: a cover refined at the queried points;
* the same data in every round: a same-data block (each cell's dominating pair composed);
* data that may change between rounds: the per-round envelope, or adaptive blocks where they are tighter.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

from ..pld.sizing import MemoryBudgetError
from .ledger import LedgerPLD
from .terms import WorstCaseTerm
from ..pld.lattice import Term, upper_direction
from ..mechanisms.base import PairFamily
from ..pld import PrivacyLossPair
from ..pld.sizing import SHORT_LEDGER, relative_target
from .blocks import _adaptive_terms
from .cover import _CELL_TOLERANCE, QueryRefinement, _cover, _uppers
from .envelope import _Exact, _Lattice
from .witnesses import MAX_WITNESSES, _HullOutOfRange, _composed_directions, _convex_minorant_of_min, _lower_witnesses

#: Splits for a same-data block (each cell costs a composition of its dominating pair).
_MAX_BLOCK_CELLS = 24
#: A single round's cover realises the datasets of split cells only above this many cell tolerances
#: (see :func:`family_term`).
_SINGLE_ROUND_REALISE = 16
#: Share of ``max_memory_bytes`` a single round's query refinement may hold in pairs (one round composes
#: nothing; half the cap left 2RR n = 1e8 at a gap of 4.4e-4 with 1021 of its 1024 MiB held; with 5/8:
#: 3.9e-4, n = 1e9 2.0e-3 → 9.9e-4 at a 2.0 GB peak).  The rest is the lattice measures, the pairs being
#: built and the heap's freed pages: n = 1e9 under a 1 GiB cap peaks at 1188 MiB with 5/8, 1332 MiB with
#: 3/4 (above cap + 300 MiB).
_SINGLE_ROUND_SHARE = 0.625
#: A same-data block composes each member of its cover ``count`` times on a lattice this many times coarser
#: than the ledger's (the ledger's lattice is sized for the lower end's certified shift, which the block's
#: upper measures do not carry; 2RR n = 500, ε0 = 2, 20 rounds on the same data: 48 s on the ledger's own).
_BLOCK_COARSENING = 2
#: The per-round envelope's composition may exceed the memory cap by this factor before the blocks are built
#: (the blocks' own windows are narrower; the composition checks them exactly).
_ENVELOPE_BUDGET_SLACK = 1.25


@dataclass(frozen=True, eq=False)
class SameDataBlock:
    """A same-data block's terms and what a ledger of several blocks reads besides
    (:func:`pldshuffle.worstcase.same_data.blocks_upper`): the pairs of the block's cover, whose ``count``-fold
    compositions (``lattice.directions``) dominate every member's block (``lattice`` is None where the block
    fell back to the changing-data terms), and the members whose blocks are its lower witnesses."""

    terms: tuple[Term, ...]
    pairs: tuple[PrivacyLossPair, ...] = ()
    lattice: _Lattice | None = None
    #: The realisable members whose blocks are the block's lower witnesses.
    witnesses: tuple[PrivacyLossPair, ...] = ()


def family_term(
    family: PairFamily,
    spacing: float,
    count: int,
    *,
    same_data: bool = False,
    options: dict | None = None,
    tolerance: float = _CELL_TOLERANCE,
    report: Callable[[str], None] | None = None,
    target: float | None = None,
) -> tuple[Term, ...]:
    """The certified terms of ``count`` rounds of a mechanism given by its pair family (see
    :func:`same_data_block`, which also returns the block's cover)."""
    return same_data_block(family, spacing, count, same_data=same_data, options=options, tolerance=tolerance, report=report, target=target).terms


def same_data_block(
    family: PairFamily,
    spacing: float,
    count: int,
    *,
    same_data: bool = False,
    options: dict | None = None,
    tolerance: float = _CELL_TOLERANCE,
    report: Callable[[str], None] | None = None,
    target: float | None = None,
) -> SameDataBlock:
    """The certified terms of ``count`` rounds of a mechanism given by its pair family.

    ``report`` (optional) receives a progress message every few seconds of a branch and bound over datasets.
    ``target`` is the ledger's relative ε gap target (default :func:`pldshuffle.pld.sizing.relative_target` of
    ``count``): adaptive blocks that compose are lengthened where they would miss it (:func:`_adaptive_terms`).

    ``same_data=False`` (default): per-round envelope, composed ``count`` times (data may change between
    rounds); for a family of cells, blocks of up to ``_BLOCK_ROUNDS`` rounds bounded by the adaptive
    recursion (:func:`_adaptive_terms`) where that is tighter.  ``same_data=True``: the envelope of the
    ``count``-fold compositions of the members (valid only if every round sees the same dataset), a term
    of count 1.
    """
    options = options or {}
    # Pairs held by the cover may use half the memory budget (the composition's windows use the rest).
    max_bytes = options.get("max_memory_bytes", math.inf) / 2
    single = len(family.upper) == 1 and family.cells is None

    def single_pair_terms() -> tuple[Term, ...]:
        """The one pair discretised as it is (each round: data may change, or one round)."""
        pair = family.upper[0]
        directions = tuple(upper_direction(d.discretize(spacing)) for d in pair.directions)
        return (WorstCaseTerm(directions, _lower_witnesses(family.lower, spacing), count, exact_upper=(pair,), exact_lower=tuple(family.lower)),)

    if single and (not same_data or count == 1):
        return SameDataBlock(single_pair_terms())
    lattice = _Exact(spacing)
    adaptive = family.cells is not None and count > 1
    # With the orders kept apart (_adaptive_terms) the cells' excess over their datasets is the main slack
    # left, composed every round: quarter it where the ledger is held to the 1e-3 target (≤ SHORT_LEDGER
    # rounds; n = 1e4, ε0 = 2, 64 rounds, δ = 1e-2: with halving 1.9 ‰ (6 → 7.5 s), with quartering, 32 runs
    # and the finer lattice of choose_spacing 0.96 ‰ in 15 s) and halve it for longer ledgers (δ = 1e-2:
    # n = 1e4, ε0 = 2, 1024 rounds: 2.84 → 2.21 ‰; the year of n = 1e6, ε0 = 2: 2.40 → 1.42 ‰, 5.8 → 6.7 s,
    # 515 → 649 MB; n = 1e4, ε0 = 4, 365 rounds: 26 → 11.5 s, as the blocks then meet the target without
    # lengthening; n = 1e4, ε0 = 0.5: 11.6 → 16.6 s).
    short = adaptive and count <= SHORT_LEDGER
    cover_tolerance = tolerance / 4 if short else tolerance / 2 if adaptive else tolerance
    # A single round's cover leaves the rest of its share to the refinement at the queried points
    # (QueryRefinement, up to _SINGLE_ROUND_SHARE of the cap), which tightens far more per pair than
    # splits over the whole lattice.
    cover_bytes = max_bytes / 2 if count == 1 else max_bytes
    # A single round's lower end reads the datasets its queries' refinement reveals, so its cover realises
    # only the datasets of cells far above the envelope (2RR n = 1e7, ε0 = 1: 1137 → 269 of its 2332 pairs,
    # 9.9 → 8.3 s, the same bracket); a composed one keeps them as its lower witnesses (the year of n = 1e6
    # at δ = 1e-2: 2.40 ‰ with them, 2.42 ‰ without).
    within = _SINGLE_ROUND_REALISE * cover_tolerance if count == 1 else cover_tolerance
    kept_cells, witnesses, members = _cover(family, lattice, tolerance=cover_tolerance, realise_within=within, max_bytes=cover_bytes,
                                            report=report)
    kept = [p for c in kept_cells for p in _uppers(c)]
    up = lattice.envelope(kept)
    lows = _lower_witnesses(witnesses, spacing)

    def changing_data_terms() -> tuple[Term, ...]:
        """``count`` rounds whose data may change: adaptive blocks where possible, else the per-round envelope."""
        if single:
            return single_pair_terms()
        if adaptive:
            # The blocks compose within the per-round envelope's windows, a little wider than their own: a
            # ledger whose envelope needs well over the memory cap is coarsened (or refused) now, not after
            # seconds of recursion (2RR n = 100, ε0 = 2, 1e4 rounds under 256 MiB: 44 → 25 s).
            try:
                LedgerPLD(spacing, (WorstCaseTerm((up,), lows, count),), **options).check_budget()
            except MemoryBudgetError as exc:
                if not exc.needed <= _ENVELOPE_BUDGET_SLACK * exc.budget:
                    raise
            if report is not None:
                report(f"bounding blocks of rounds adaptively ({len(kept_cells)} cells)")
            blocks = _adaptive_terms(kept_cells, up, lows, witnesses, spacing, count, options, report=report,
                                     target=relative_target(count) if target is None else target)
            if blocks is not None:
                return blocks
        return (WorstCaseTerm((up,), lows, count),)

    if same_data and count > 1:
        # The changing-data bound (adaptive blocks, or the per-round envelope composed count times) dominates
        # the block too (it holds for any data): keep the better of the two at every x, so the same-data
        # bound is never looser than the default one.  Built first: a ledger too large for the memory cap
        # is refused here, before the block's cover composes every member count times.
        changing = _adaptive_terms(kept_cells, up, lows, witnesses, spacing, count, options, lower=False, report=report) if adaptive else None
        per_round = LedgerPLD(spacing, changing or (WorstCaseTerm((up,), lows, count),), **options).dominating_measures()
        # Each member composed count times on a coarser lattice (its measures embed into the ledger's).
        coarse = spacing * _BLOCK_COARSENING
        block = _Lattice(coarse, lambda p: _composed_directions(p, coarse, count, options))
        block_cells, block_witnesses, _ = _cover(family, block, max_cells=_MAX_BLOCK_CELLS, tolerance=tolerance, max_bytes=max_bytes, report=report)
        block_kept = [p for c in block_cells for p in _uppers(c)]
        blocks = [d for p in block_kept for d in block.directions(p)]
        try:
            tighter = _convex_minorant_of_min(blocks, per_round, spacing, coarsening=_BLOCK_COARSENING)
        except _HullOutOfRange:  # the changing-data terms hold for the same data too (on the same cover)
            return SameDataBlock(changing_data_terms())
        # Witnesses: the same dataset in every round, i.e. a member's own rounds composed count times.
        picks = list(dict.fromkeys(block_witnesses[: MAX_WITNESSES // 2] + witnesses))[:MAX_WITNESSES]
        term = WorstCaseTerm((tighter,), _lower_witnesses(tuple(picks), spacing), 1, lower_count=count)
        return SameDataBlock((term,), tuple(block_kept), block, tuple(picks[: len(term.lower)]))
    if count > 1:  # the exact pairs only serve a single round
        return SameDataBlock(changing_data_terms())
    # One round is also answered off the lattice: every member is dominated by a kept pair, and the cells
    # are refined further at the points queried.  Nothing is composed, so the refinement may hold
    # _SINGLE_ROUND_SHARE of the cap (the lattice measures keep the rest).
    refined_bytes = _SINGLE_ROUND_SHARE * options.get("max_memory_bytes", math.inf)
    return SameDataBlock((WorstCaseTerm((up,), lows, count, refiner=QueryRefinement(kept_cells, members, refined_bytes)),))
