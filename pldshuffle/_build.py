"""Building a ledger into one :class:`~pldshuffle.pld.certified.CertifiedPLD` for the accountant.

Each entry becomes one or more terms on the common lattice (:func:`pldshuffle.worstcase.strategy.family_term`); the terms
are composed and realised at once.  With an automatic spacing, a composition that would exceed the memory
cap is retried on a coarser lattice (spacing grown by the estimated shortfall, 1.1× to 2× per try, at most
``COARSENINGS`` times); one that even those tries could not fit is refused at once.  Each try first probes
the ledger with its representative pairs (:func:`_probe`), so that a lattice far too fine is coarsened
before any term is built; a lattice on which those pairs alone would not fit is refused (or coarsened)
before anything is discretised (:func:`_check_spans`).
"""

from __future__ import annotations

import ctypes
import sys
from collections.abc import Callable, Sequence
from dataclasses import replace
from functools import cache
from typing import Any

import numpy as np

from ._reporting import reporting_to
from .pld.certified import CertifiedPLD
from .pld.sizing import MemoryBudgetError, check_lattice_span
from .worstcase.ledger import LedgerPLD
from .worstcase import MAX_WITNESSES
from .worstcase.same_data import NEUTRAL, blocks_lower, blocks_upper
from .worstcase.strategy import SameDataBlock, same_data_block
from .pld.fft import release_plans
from .pld.lattice import Term, lower_direction, upper_direction
from .worstcase.terms import WorstCaseTerm
from .mechanisms.base import PairFamily, ShuffleMechanism

__all__ = ["COARSENINGS", "build_ledger"]

COARSENINGS = 8
#: A shortfall above this many times what the coarsenings left can reach (2× each) is refused at once.
HOPELESS_SLACK = 2.0


def build_ledger(
    entries: Sequence[tuple[tuple[ShuffleMechanism, bool], int]],
    family: Callable[[ShuffleMechanism], PairFamily],
    spacing: float,
    *,
    coarsen: bool,
    tolerance: float,
    options: dict[str, Any],
    report: Callable[[str], None],
    target: float | None = None,
) -> CertifiedPLD:
    """The realised composition of ``entries`` (``((mechanism, same_data), count)``) at ``spacing``.

    Parameters
    ----------
    entries : sequence of ((mechanism, same_data), count)
    family : callable
        The (cached) pair family of a mechanism.
    spacing : float
        Lattice spacing Δ.
    coarsen : bool
        Grow Δ (by the memory shortfall, 1.1× to 2×) and retry when the composition does not fit
        ``options["max_memory_bytes"]``; refuse at once a shortfall above ``HOPELESS_SLACK`` times the
        ``2^k`` that the ``k`` tries left could reach (windows scale like ``1/Δ``).
    tolerance : float
        Relative gap of the branch and bound over datasets (the accountant's ``relative_gap_target``,
        1e-3 by default).
    options : dict
        ``fft_backend`` and ``max_memory_bytes`` of every :class:`CertifiedPLD`.
    report : callable
        Progress callback (stage messages).
    target : float, optional
        The ledger's relative ε gap target (adaptive blocks are lengthened where they would miss it, see
        :func:`pldshuffle.worstcase.strategy.family_term`); default: each entry's own.

    Raises
    ------
    MemoryBudgetError
        Before allocating, when the composition does not fit (after the allowed coarsenings); the message
        states the window size and memory needed and how to shrink the request.
    """
    for attempt in range(COARSENINGS + 1):
        try:
            _check_spans(entries, family, spacing, options)
            if coarsen:
                _probe(entries, family, spacing, options)
            return _build(entries, family, spacing, tolerance, options, report, target)
        except MemoryBudgetError as exc:
            if not coarsen or attempt == COARSENINGS:
                tried = f" (after coarsening the lattice {COARSENINGS} times)" if coarsen else ""
                raise MemoryBudgetError(f"{exc}{tried}", exc.needed, exc.budget) from None
            # Windows scale like 1/Δ: grow Δ by the shortfall (with 5 % to spare), by 1.1 to 2 at a time.
            shortfall = exc.needed / exc.budget if exc.needed > 0 and exc.budget > 0 else 2.0
            left = COARSENINGS - attempt
            if shortfall > HOPELESS_SLACK * 2.0**left:
                # Each try rebuilds every term (seconds for adaptive blocks): refuse what the tries left cannot reach.
                raise MemoryBudgetError(
                    f"{exc} (~{shortfall:.3g}× over the cap: the {left} coarsenings of the lattice left, at most "
                    f"2× each, cannot fit it)",
                    exc.needed,
                    exc.budget,
                ) from None
            spacing *= min(max(1.05 * shortfall, 1.1), 2.0)
            report(f"coarsening the lattice to Δ={spacing:.3g} to fit max_memory_bytes")
    raise AssertionError("unreachable")  # pragma: no cover - the loop returns or raises


def _check_spans(
    entries: Sequence[tuple[tuple[ShuffleMechanism, bool], int]],
    family: Callable[[ShuffleMechanism], PairFamily],
    spacing: float,
    options: dict[str, Any],
) -> None:
    """Refuse a lattice on which the entries' representative pairs (each family's first upper pair, whose
    losses span those of the terms built from it) would alone exceed the memory cap, before anything is
    discretised.  O(support) per entry."""
    points = sum(
        float(np.ptp(d.losses)) / spacing + 2.0
        for (mechanism, _), _ in entries
        for d in family(mechanism).upper[0].directions
        if d.losses.size
    )
    check_lattice_span(points, options.get("max_memory_bytes", CertifiedPLD.max_memory_bytes), spacing)


#: The probe refuses a lattice only where its estimate exceeds the cap by this factor (it may err either way
#: by a little: its windows are the representative pairs', not the ledger's terms'), unless every entry is
#: a single pair (then its estimate is exact).
PROBE_SLACK = 1.25


def _probe(
    entries: Sequence[tuple[tuple[ShuffleMechanism, bool], int]],
    family: Callable[[ShuffleMechanism], PairFamily],
    spacing: float,
    options: dict[str, Any],
) -> None:
    """Raise :class:`MemoryBudgetError` where the ledger with each entry's representative pair (its family's
    first upper pair) in place of its terms already needs ``PROBE_SLACK`` times the memory cap, before any
    term is built: the terms dominate those pairs, so their windows are at least as wide, and building them
    first cost seconds per try (2RR n = 300, ε0 = 4, 1e6 rounds: four tries of 18 s on the way to its Δ).
    Cost: one discretisation per entry and the windows' Chernoff bounds."""
    if sum(count for _, count in entries) <= 1:  # nothing composed: no window to size
        return
    terms, exact = [], True
    for (mechanism, _), count in entries:
        fam = family(mechanism)
        directions = [d.discretize(spacing) for d in fam.upper[0].directions]
        # As many lower witnesses as the ledger's term may hold (each composes in windows of its own).
        single = fam.cells is None and len(fam.upper) == 1
        exact = exact and single
        witnesses = 1 if single else MAX_WITNESSES
        lower = tuple(lower_direction(d) for d in directions)
        terms.append(WorstCaseTerm(tuple(upper_direction(d) for d in directions), (lower,) * witnesses, count))
    try:
        LedgerPLD(spacing, tuple(terms), **options).check_budget()
    except MemoryBudgetError as exc:
        # Single pairs are their own terms: the estimate is then the build's own check, and no slack.
        if exact or not exc.needed <= PROBE_SLACK * exc.budget:
            raise


def _build(
    entries: Sequence[tuple[tuple[ShuffleMechanism, bool], int]],
    family: Callable[[ShuffleMechanism], PairFamily],
    spacing: float,
    tolerance: float,
    options: dict[str, Any],
    report: Callable[[str], None],
    target: float | None,
) -> CertifiedPLD:
    pld: CertifiedPLD | None = None
    blocks = 0
    # Equal same-data blocks (separate compose calls, so separate entries) have the same terms: built once.
    built: dict[object, SameDataBlock] = {}

    def block_of(mechanism: ShuffleMechanism, same_data: bool, count: int) -> SameDataBlock:
        fam = family(mechanism)
        # (A single round's term holds a query refiner: never shared.)
        key = (mechanism, count) if same_data and count > 1 else object()
        if key not in built:
            cover = " (branch and bound over datasets)" if fam.cells is not None else ""
            report(f"discretising {mechanism.describe()} on a lattice of spacing {spacing:.3g}{cover}")
            built[key] = same_data_block(fam, spacing, count, same_data=same_data, options=options, tolerance=tolerance, report=report, target=target)
            _return_freed_memory()
        return built[key]

    grouped = _grouped_blocks(entries, family, spacing, options, block_of, report)
    caveats: list[tuple[str, ...]] = []
    for (mechanism, same_data), count in entries:
        fam = family(mechanism)
        if same_data and count > 1:
            # Numbered: equal caveats are merged, and each block is its own (data may change between blocks).
            blocks += 1
            caveats.append(fam.caveats + (f"assumes the same data in all {count} rounds of same-data block {blocks}: {mechanism.describe()}",))
        else:
            caveats.append(fam.caveats)
    for index, ((mechanism, same_data), count) in enumerate(entries):
        fam = family(mechanism)
        terms, carried = grouped[index] if index in grouped else (block_of(mechanism, same_data, count).terms, (index,))
        if not terms:  # a block of a group whose one term sits in the group's first piece
            continue
        terms = tuple(replace(t, max_loss=fam.max_loss) for t in terms)
        piece = LedgerPLD(spacing, terms, fam.is_guarantee, tuple(c for i in carried for c in caveats[i]), **options)
        pld = piece if pld is None else pld.compose(piece)
    assert pld is not None
    rounds = sum(count for _, count in entries)
    report(f"composing {rounds} rounds (FFT, certified error terms)" if rounds > 1 else "realising one round (its lattice measures; queries read the exact pairs)")
    # The composition's memory check counts its own plans and windows and the terms, not what earlier stages
    # cached: drop their FFT plans and hand their freed heap back first.
    release_plans()
    _return_freed_memory()
    with reporting_to(report):  # its windows report (seconds each for long ledgers)
        pld.realize()
    return pld


def _grouped_blocks(
    entries: Sequence[tuple[tuple[ShuffleMechanism, bool], int]],
    family: Callable[[ShuffleMechanism], PairFamily],
    spacing: float,
    options: dict[str, Any],
    block_of: Callable[[ShuffleMechanism, bool, int], SameDataBlock],
    report: Callable[[str], None],
) -> dict[int, tuple[tuple[Term, ...], tuple[int, ...]]]:
    """Terms of the entries that are one of several same-data blocks of ``k > 1`` rounds of worst cases over
    cells (by entry index), bounded together, adaptively over blocks
    (:func:`pldshuffle.worstcase.same_data.blocks_upper`).  The group's upper measure replaces the first
    block's; the others' upper measure becomes the neutral one, and every block keeps its own lower witnesses.
    Where every block of the group is of one mechanism, the group is instead ONE term in the first block's
    piece (which carries every block's caveats; the others carry none): its lower witnesses are the same
    dataset in all the group's rounds, and its adaptive lower end and strategy witnesses those of
    :func:`pldshuffle.worstcase.same_data.blocks_lower`.  Values: ``(terms, entries whose caveats the piece
    carries)``.  A group the recursion cannot bound keeps its blocks' own terms (absent here).

    Why at most one group, and none beside rounds of a worst case over cells whose data may change
    (``count > 1``): the group's measure bounds its blocks as ONE adaptive game, wherever they sit in the
    ledger.  Every other step is then dominated by a fixed measure of its own (a pair, a per-round measure,
    another block's measure): in the value's recursion each such step may be replaced by its measure (the
    value left is convex in ``α = e^x`` and non-increasing) and moved first (the adversary only learns
    earlier), which leaves the group's game after a fixed composition.  Two games bounded as wholes (two
    groups, or a group beside adaptive blocks of rounds) interleaved do not reduce that way, so only the
    group with the most blocks is formed, and only where no such blocks of rounds are in the ledger.
    """
    if any(not same_data and count > 1 and family(mechanism).cells is not None for (mechanism, same_data), count in entries):
        return {}
    groups: dict[int, list[int]] = {}
    for index, ((mechanism, same_data), count) in enumerate(entries):
        if same_data and count > 1 and family(mechanism).cells is not None:
            groups.setdefault(count, []).append(index)
    out: dict[int, tuple[tuple[Term, ...], tuple[int, ...]]] = {}
    largest = max(groups.items(), key=lambda item: len(item[1]), default=None)
    for count, indices in [largest] if largest is not None else []:
        if len(indices) < 2:
            continue
        blocks = [block_of(entries[i][0][0], True, count) for i in indices]
        report(f"bounding {len(blocks)} same-data blocks of {count} rounds adaptively over blocks")
        bound = blocks_upper(blocks, spacing, count, options)
        if bound is None:
            continue
        if all(b is blocks[0] for b in blocks):
            first = blocks[0].terms[0]
            adaptive, strategies = blocks_lower(blocks[0], len(blocks), count, spacing, bound, options, report)
            term = WorstCaseTerm((bound.upper,), first.lower, 1, lower_count=len(blocks) * count, adaptive_lower=adaptive, strategies=strategies)
            out.update({i: ((term,) if i == indices[0] else (), tuple(indices) if i == indices[0] else ()) for i in indices})
            continue
        for position, (i, block) in enumerate(zip(indices, blocks)):
            out[i] = ((replace(block.terms[0], upper=(bound.upper if position == 0 else NEUTRAL,)),), (i,))
    return out


def _return_freed_memory() -> None:
    """Hand the heap's freed pages back to the system (glibc's ``malloc_trim``; nothing elsewhere).

    Why: a worst-case cover allocates many small arrays (pairs, probe profiles) that glibc keeps in its heap
    once freed, while the composition's large arrays are mapped separately, so the process would hold both
    (2RR n = 1e4, 64 rounds, ``max_memory_bytes`` = 512 MiB: peak 862 → 636 MiB).
    """
    trim = _malloc_trim()
    if trim is not None:
        trim(0)


@cache
def _malloc_trim() -> Callable[[int], int] | None:
    if not sys.platform.startswith("linux"):
        return None
    try:
        return ctypes.CDLL("libc.so.6").malloc_trim
    except (OSError, AttributeError):  # not glibc (e.g. musl has no malloc_trim)
        return None
