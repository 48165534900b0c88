"""Covers of large families: cells with branch and bound, and their refinement at queried points.

Large families are covered by *cells* (a range of datasets with one proven dominating pair); cells
whose dominating profile exceeds the best realisable member's profile by more than a relative
tolerance at some lattice point are split (branch and bound, :func:`_cover`).  A single round's cover
is refined further at the points a query asks about (:class:`QueryRefinement`).  The lower bound uses
*witnesses*: the realisable members that attain the lower envelope most often.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable

import numpy as np
from numpy.typing import NDArray

from .._reporting import throttled_reporter
from ..mechanisms.base import Cell, PairFamily
from ..pld import PrivacyLossPair
from .envelope import _FLOOR, _PROBES, _Exact, _Lattice
from .witnesses import _witnesses

#: Branch and bound splits a cell while its profile exceeds the realisable envelope by this (relative).
_CELL_TOLERANCE = 1e-3
_MAX_CELLS = 1600
#: The memory held by a cover or a query's refinement is checked every this many splits (each adds about
#: three pairs).
_MEMORY_CHECK_EVERY = 8
#: Splits one single-round query may add to the cover.
_QUERY_SPLITS = 800
#: A query's refinement reveals the datasets of this many of the cells then largest at its point (as many
#: as a single round's lower end inverts, ``pldshuffle.worstcase.single_round._LOWER_PAIRS``).
_KEPT_MEMBERS = 16


def _cover(
    family: PairFamily,
    lattice: _Lattice | _Exact,
    *,
    max_cells: int = _MAX_CELLS,
    tolerance: float = _CELL_TOLERANCE,
    realise_within: float | None = None,
    max_bytes: float = math.inf,
    report: Callable[[str], None] | None = None,
) -> tuple[list[Cell], tuple[PrivacyLossPair, ...], tuple[PrivacyLossPair, ...]]:
    """Dominating pairs covering every member, the lower witnesses, and the realised members that attain
    the realisable envelope somewhere (branch and bound; ``report`` hears of it every few seconds).

    A split's child realises its own dataset only where its upper profile exceeds the realisable envelope
    by more than ``realise_within`` (relative; default ``tolerance``) somewhere: elsewhere that dataset
    could raise the envelope by no more.  The cover is sound whatever it is (every dataset stays dominated);
    a larger one may cost splits, since the cell holding the largest dataset at a probe point stays more
    than ``tolerance`` above an envelope that is more than ``tolerance`` below that dataset there (cells
    of one or a few datasets always realise them).

    Memory: a split cell's pairs are released; realised members that attain the realisable envelope at
    no probe point are dropped, and their cells let go of them (they cannot raise a lower bound there;
    a kept cell rebuilds its lower pair if asked again); the refinement stops early --
    sound, only looser -- when the pairs still held would exceed ``max_bytes``.
    """
    cells = list(family.cells) if family.cells is not None else [
        Cell(make_upper=_constant(p), label="member") for p in family.upper
    ]
    lower_members = list(family.lower) if family.cells is None else []
    lo, size = lattice.range_of([p for c in cells for p in _uppers(c)] + lower_members)
    within = tolerance if realise_within is None else realise_within
    # Branch and bound decides on a subgrid of lattice points (decisions only affect tightness: the
    # final envelope bounds every kept pair at every lattice point).
    probe = np.unique(np.linspace(0, size, min(size + 1, _PROBES)).astype(np.int64))

    def profile(pair: PrivacyLossPair) -> NDArray[np.float64]:
        return lattice.profile(pair, lo + probe)

    # The cells that cached each realised own lower pair (a child may share its parent's dataset): they let
    # go of it as soon as it is pruned (a lower pair is as large as an upper one: kept until the end, they
    # doubled the cover's memory).
    owners: dict[int, list[Cell]] = {}

    def evaluate(cell: Cell, settled: Callable[[NDArray[np.float64]], bool] = lambda up: False) -> tuple[NDArray[np.float64], list[tuple[PrivacyLossPair, NDArray[np.float64]]]]:
        """``(upper profile, realised members)``; a cell whose upper profile is already ``settled``
        realises no separate lower pair (it could only raise the realisable envelope elsewhere)."""
        up_pairs = _uppers(cell)
        up = np.max([profile(p) for p in up_pairs], axis=0)
        skip = cell.has_own_lower and settled(up)
        found = [] if skip else [(p, profile(p)) for p in _lowers(cell)]
        for p, _ in found:  # a lower pair's lattice directions are not needed again
            if all(p is not q for q in up_pairs):
                lattice.forget(p)
            if cell.has_own_lower:
                owners.setdefault(id(p), []).append(cell)
        return up, found

    def prune(realised: list) -> list:
        """The realised members that attain the realisable envelope somewhere; the others' cells let go of them."""
        kept = [w for w in realised if np.any(w[1] >= best)]
        kept_ids = {id(p) for p, _ in kept}
        for p, _ in realised:
            if id(p) not in kept_ids:
                for cell in owners.pop(id(p), []):
                    cell.release_lower()
        return kept

    active, realised = [], [(p, profile(p)) for p in lower_members]
    for c in cells:
        up, found = evaluate(c)
        active.append((c, up))
        realised.extend(found)
    best = np.max([prof for _, prof in realised], axis=0)

    def excess(up: NDArray[np.float64]) -> float:
        material = up > _FLOOR
        if not np.any(material):
            return -math.inf
        return float(np.max((up[material] - best[material]) / np.maximum(best[material], _FLOOR)))

    # Scores only fall as ``best`` rises, so a stale score bounds the current one: rescore lazily, only
    # the cell about to be split (O(probes) per step instead of O(cells × probes)).
    scores = [excess(up) for _, up in active]
    fresh_scores = [True] * len(active)
    # An upper bound on the bytes held: grown by what each split adds, recounted (O(cells)) only when it
    # passes max_bytes, since pruned and split pairs are let go of between counts.  Checked every
    # _MEMORY_CHECK_EVERY splits, so the cover stops where a recount at each check would.
    held = _held_bytes(active, realised, lattice)
    steps, say = 0, throttled_reporter(report) if report is not None else (lambda message: None)
    while steps < max_cells:
        say(lambda: f"branch and bound over datasets: {steps} cells split, {len(active)} kept, largest excess {max(scores):.2g}")
        index = int(np.argmax(scores))
        if not fresh_scores[index]:
            scores[index], fresh_scores[index] = excess(active[index][1]), True
            continue
        if scores[index] <= tolerance:
            break
        realised = prune(realised)
        if steps % _MEMORY_CHECK_EVERY == 0 and held > max_bytes:
            held = _held_bytes(active, realised, lattice)
            if held > max_bytes:
                break
        steps += 1
        parent = active[index][0]
        children = parent.split()
        if not children:  # a single dataset: nothing left to refine
            scores[index] = -math.inf
            continue
        for p in _uppers(parent):
            lattice.forget(p)
        before = lattice.held_bytes()
        evaluated = [(child, *evaluate(child, lambda up: excess(up) <= within)) for child in children]
        fresh = [(child, up) for child, up, _ in evaluated]
        held += _held_bytes(fresh, [w for _, _, found in evaluated for w in found], lattice) - before
        for _, _, found in evaluated:
            realised.extend(found)
            for _, prof in found:
                np.maximum(best, prof, out=best)
        active[index : index + 1] = fresh
        fresh_scores = [False] * len(active)
        scores[index : index + 1] = [excess(up) for _, up in fresh]
        fresh_scores[index : index + len(fresh)] = [True] * len(fresh)
    realised = prune(realised)
    return [c for c, _ in active], *_witnesses(realised, probe, lo)


def _constant(pair: PrivacyLossPair) -> Callable[[], PrivacyLossPair]:
    """A cell's ``make_upper`` for a single member: the member itself."""
    return lambda: pair


def _uppers(cell: Cell) -> list[PrivacyLossPair]:
    """The pairs that bound a cell: its dominating pair, or every member of an enumerated cell."""
    return list(cell.members) if cell.members is not None else [cell.upper]


def _lowers(cell: Cell) -> list[PrivacyLossPair]:
    """The realisable pairs a cell offers: one of its datasets, or every member of an enumerated cell."""
    return list(cell.members) if cell.members is not None else [cell.lower]


class QueryRefinement:
    """A single round's cover, refined further at the points a query asks about (branch and bound on one ε).

    The lattice cover splits cells until their profiles are within the cell tolerance of the realisable
    envelope at lattice points; for one round answered on the exact pairs, that can leave the bracket wider
    than the one-round target (at small ε and between lattice points).  :meth:`refine` splits, largest
    first, the cells whose exact upper δ at one ε exceeds a threshold (the caller's: see ``CertifiedPLD``).
    Every stage is sound (the kept cells always cover every dataset) and only tightens, so queries read the
    refined pairs: a later query is never looser than an earlier one.  At most ``_QUERY_SPLITS`` splits per
    query, and none once the pairs held would exceed ``max_bytes``.  Each split costs two dataset pairs
    (O(√n) for 2RR); the kept pairs are read by one sweep each (:meth:`PrivacyLossPair.delta_upper`),
    without keeping suffix sums, which would double the memory they hold.
    """

    def __init__(self, cells: list[Cell], members: tuple[PrivacyLossPair, ...], max_bytes: float) -> None:
        self._cells = list(cells)
        self._members = list(members)
        self._max_bytes = max_bytes
        self._final_cells: set[int] = set()  # single datasets: nothing left to split (they stay in _cells)
        self._settled: tuple[PrivacyLossPair, ...] = ()  # pairs of a cover that refines no further

    def __getstate__(self) -> dict:
        # Cells split through closures, which do not pickle: a pickled cover keeps its pairs, unrefinable.
        return {**self.__dict__, "_cells": [], "_final_cells": set(), "_settled": self.upper_pairs}

    @property
    def upper_pairs(self) -> tuple[PrivacyLossPair, ...]:
        return self._settled + tuple(p for c in self._cells for p in _uppers(c))

    @property
    def lower_pairs(self) -> tuple[PrivacyLossPair, ...]:
        return tuple(self._members)

    @property
    def booked(self) -> float:
        """The largest truncated mass of a kept pair: upper bounds carry it, so no split removes it."""
        return max((d.truncated_mass for p in self.upper_pairs for d in p.directions), default=0.0)

    def refine(self, epsilon: float, threshold: float) -> int:
        """Split the cells whose upper δ at ``epsilon`` exceeds ``threshold``, largest first, until none does
        (or only single datasets do) or the budget is spent; returns the number of splits.  Nothing is split
        for a threshold below twice the booked truncated mass (no split could reach it).  The splits are
        reported (:func:`~pldshuffle._reporting.throttled_reporter`): hundreds take seconds at 10^7 users."""
        if threshold <= 2.0 * self.booked:
            return 0
        eps = np.array([float(epsilon)])
        splits = 0
        say = throttled_reporter()

        def upper_of(cell: Cell) -> float:
            return max(float(p.delta_upper(eps)[0]) for p in _uppers(cell))

        values = [upper_of(c) for c in self._cells]
        for step in range(_QUERY_SPLITS):
            order = np.argsort(values)[::-1]
            index = next((int(i) for i in order if values[i] > threshold and not self._final(int(i))), None)
            if index is None:
                break
            # Stop before the splits up to the next check (two pairs each) could pass the budget.
            if step % _MEMORY_CHECK_EVERY == 0 and not self.has_room():
                break
            children = self._cells[index].split()
            if not children:
                self._final_cells.add(id(self._cells[index]))
                continue
            self._cells[index : index + 1] = list(children)
            values[index : index + 1] = [upper_of(c) for c in children]
            splits += 1
            say(lambda: f"one round on exact pairs: refining the cover of datasets at ε = {epsilon:.4g} ({splits} splits, {len(self._cells)} cells)")
        # The realisable end reads the largest datasets: those of the cells now largest at ε, at most
        # _KEPT_MEMBERS of them (revealing every split's datasets doubled the pairs built and held a third
        # of a refined cover).  Counted by pair: an enumerated cell holds several.
        known = {id(p) for p in self._members}
        held, count = self._usage()
        revealed = 0
        for i in np.argsort(values)[::-1]:
            if revealed >= _KEPT_MEMBERS or not self._room_for(2, held, count):
                break
            for p in _lowers(self._cells[int(i)]):
                if revealed >= _KEPT_MEMBERS:
                    break
                if id(p) not in known:
                    self._members.append(p)
                    known.add(id(p))
                    revealed, held, count = revealed + 1, held + _pairs_bytes([p]), count + 1
        return splits

    def has_room(self) -> bool:
        """Whether :meth:`refine` may still split (the pairs held leave room for the next few splits)."""
        return self._room_for(2 * _MEMORY_CHECK_EVERY, *self._usage())

    def _usage(self) -> tuple[int, int]:
        """Bytes and number of the pairs held.  O(pairs)."""
        return self._held_bytes(), len(self.upper_pairs) + len(self.lower_pairs)

    def _room_for(self, pairs: int, held: int, count: int) -> bool:
        """Whether ``pairs`` more pairs the size of the average of ``count`` held ones (``held`` bytes)
        stay within the budget."""
        return held * (1.0 + pairs / max(count, 1)) <= self._max_bytes

    def _final(self, index: int) -> bool:
        return id(self._cells[index]) in self._final_cells

    def _held_bytes(self) -> int:
        return _pairs_bytes(self.upper_pairs + self.lower_pairs)


def _held_bytes(active: list, realised: list[tuple[PrivacyLossPair, NDArray[np.float64]]], lattice: _Lattice | _Exact) -> int:
    """Bytes the cover still holds: the distinct pairs, their probe profiles and the lattice's cached
    measures (a same-data block's are whole compositions, far larger than the pairs)."""
    pairs = _pairs_bytes([p for c, _ in active for p in _uppers(c)] + [p for p, _ in realised])
    profiles = sum(up.nbytes for _, up in active) + sum(profile.nbytes for _, profile in realised)
    return int(pairs + profiles + lattice.held_bytes())


def _pairs_bytes(pairs: Iterable[PrivacyLossPair]) -> int:
    """Bytes of the distinct pairs: their support arrays and the sums they have cached."""
    held = {id(p): p for p in pairs}
    return int(sum(d.held_bytes for p in held.values() for d in p.directions))
