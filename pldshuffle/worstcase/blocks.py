"""Adaptive blocks of a worst case over datasets: the adaptive recursion run over blocks of rounds.

Where the data may change between rounds, the adversary's choice of dataset may depend on earlier
outputs.  A block of ``b`` rounds is bounded by the adaptive recursion (:mod:`~pldshuffle.worstcase.recursion`)
over runs of the cover's cells, and blocks compose like measures.  This module chooses the blocks' lengths
(longer blocks are tighter and cost more: :func:`_adaptive_terms`), the runs the recursion chooses from
(:func:`_split_used_runs`) and estimates the gap they leave (:func:`_estimated_gap`).
"""

from __future__ import annotations

import math
import time
import warnings
from collections.abc import Callable

from typing import cast

import numpy as np
from numpy.typing import NDArray

from .._estimate import SLOW_SECONDS
from .._kernels import UNIT_ROUNDOFF as _U
from .._reporting import build_progress
from .recursion import adaptive_profile, adaptive_window_size
from .ledger import LedgerPLD
from .terms import WorstCaseTerm
from ..pld.composition import CHERNOFF_LAMBDAS, log_mgf, log_mgf_rounding
from ..pld.lattice import LatticeDirection, Term
from ..mechanisms.base import Cell
from ..pld import PrivacyLossPair
from ..results import SlowComputationWarning
from ..pld.sizing import SHORT_LEDGER
from .cover import _uppers
from .gap import _estimated_gap, _profile_tilts
from .envelope import _Exact, _common_range, _max_profile
from . import witnesses as _ends
from .witnesses import _HullOutOfRange, _adaptive_lower, _convex_minorant, _epsilon_gain, _lower_coarsening

#: Rounds of one adaptive block (the recursion costs time linear in them; blocks compose like measures).
_BLOCK_ROUNDS = 64
#: Ledgers holding at least ``_LONG_BLOCKS`` blocks of ``_LONG_BLOCK_ROUNDS`` rounds use those (see
#: :func:`_block_rounds`).
_LONG_BLOCK_ROUNDS = 256
_LONG_BLOCKS = 4
#: Where a block lowers ε(δ) below the composed envelope's by at least this (relative, at some δ in
#: [1e-15, 0.5]; times ``b/_BLOCK_ROUNDS`` for a block of ``b`` rounds, as the next block costs that much
#: more), a longer ledger is redone in blocks of ``_LONG_BLOCK_ROUNDS`` rounds (from 64), then of
#: ``_MAX_BLOCK_ROUNDS`` (from 256), or of all its rounds if fewer (see :func:`_adaptive_terms`).
_LONG_BLOCK_GAIN = 1e-2
_MAX_BLOCK_ROUNDS = 1024
#: Runs of neighbouring cells per order the adaptive recursion chooses from (``_SHORT_GROUPS`` in blocks of
#: at most SHORT_LEDGER rounds, held to the 1e-3 target: n = 1e4, ε0 = 2, 64 rounds, δ = 1e-2: 1.06 → 0.96 ‰
#: for 0.5 s).
_GROUPS = 16
_SHORT_GROUPS = 32
#: The recursion's window holds at most this many points (its lattice is coarsened to fit; a larger window
#: has a larger round-off bound: 2RR n = 300, ε0 = 3, 64 rounds, ε(1e-15) ≤ 19.928 with 2^15, 19.954 with
#: 2^16).  The adaptive lower end's window has at most ``witnesses._LOWER_ADAPTIVE_POINTS`` (its lattice is coarsened to
#: fit; n = 1000, ε0 = 8, 5 rounds, δ = 0.3: lower end 30.457 → 30.637 with 2^16 instead of 2^15).
_ADAPTIVE_POINTS = 2**15
#: The recursion's choices: at most this many runs of units (:func:`_split_used_runs` splits the used ones
#: in up to ``_SCREEN_PASSES`` passes of a recursion of at most ``_SCREEN_ROUNDS`` rounds on at most
#: ``_SCREEN_POINTS`` points, each halving the runs used at least ``_SPLIT_SHARE`` times as often as the
#: mean run).
_MAX_CHOICES = 160
#: ... except where every unit in each order (at most ``_UNIT_CHOICES`` choices) fits ``_UNIT_SHARE`` times
#: the splits' memory share (so a quarter of ``max_memory_bytes`` in their spectra) and the recursion over them
#: all costs at most ``_UNIT_WORK`` (a second or two): the units themselves are then the choices, the tightest
#: runs, with no screening.  The screening splits by usage on a coarse lattice, which misses where ε is
#: small and its relative gap most sensitive (2RR, δ = 1e-2: n = 330, ε0 = 0.451, 2 rounds: 1.45 → 0.55 ‰,
#: 3.1 → 5.3 s, peak 0.47 → 1.0 GB; n = 288, ε0 = 0.199, 8 rounds: 1.91 → 0.54 ‰; n = 133, ε0 = 0.116,
#: 8 rounds: 1.81 → 1.07 ‰, 8.2 → 6.2 s).
_UNIT_CHOICES = 400
_UNIT_WORK = 3e8
_UNIT_SHARE = 2.0
_SCREEN_PASSES = 6
_SCREEN_POINTS = 2**12
#: Rounds of a screening pass (at most; the first rounds of a longer block choose as its later ones do).
_SCREEN_ROUNDS = 64
_SPLIT_SHARE = 0.5
#: Splits that lower the screened ε(δ) by less than this (relative, at every δ in [1e-15, 0.5]) are undone
#: and end the splitting (large families, whose neighbouring cells nearly coincide: 2RR n = 1e6, ε0 = 2,
#: 365 rounds gains 4e-5 from the first splits and would pay 1.3 s for them).
_SPLIT_GAIN = 1e-4
#: The recursion's window ends where the composed envelope's profile falls below this.
_ADAPTIVE_FLOOR = 1e-30
#: Largest rounds × tilts × choices × window points of one recursion (about 10 s).
_ADAPTIVE_WORK = 3e9
#: Blocks whose composition leaves an estimated gap above the ledger's target are lengthened within this
#: work (about 30 s; 2RR, 1e4 rounds: 1024-round blocks of 40-50 choices, 18-30 s).
_REFINE_WORK = 3e10
#: ... and up to blocks of this many rounds, one step beyond the gain rule's (2RR n = 300, ε0 = 1, 1e5
#: rounds: largest gap over δ 2.08 ‰ in 1024-round blocks, 1.77 ‰ in 2048-round ones, 49 → 85 s).
_LONGEST_BLOCK_ROUNDS = 2048
#: A block whose estimated gap misses the target by at most this factor is doubled first, not lengthened to
#: the next step: doubling lowers the gap by 10-25 % where measured, at half the longer block's cost
#: (2RR n = 1e6, ε0 = 6, 365 rounds, without the gain rule: 128-round blocks, 1.73 ‰ in 10 s; 256-round
#: ones 1.58 ‰ in 14.6 s).
_MARGINAL_MISS = 1.1


def _adaptive_terms(
    cells: list[Cell],
    up: LatticeDirection,
    lows: tuple,
    witnesses: tuple[PrivacyLossPair, ...],
    spacing: float,
    count: int,
    options: dict,
    *,
    lower: bool = True,
    block: int | None = None,
    split: list[tuple[int, int, int]] | None = None,
    base: Callable[[int], tuple[Term, ...]] | None = None,
    report: Callable[[str], None] | None = None,
    target: float | None = None,
    work: float = _ADAPTIVE_WORK,
) -> tuple[Term, ...] | None:
    """``count`` rounds as ``⌊count/b⌋`` certified adaptive blocks of ``b`` rounds (``block``, by default
    :func:`_block_rounds`) and one block of the remaining ``count mod b`` rounds, read off the same recursion
    at that round (it bounds the adaptive worst case of that many rounds), or None where the recursion would
    cost too much.  ``lower=False`` skips the adaptive lower end (for callers that only read the upper measures).

    The recursion (:func:`pldshuffle.worstcase.recursion.adaptive_profile`) chooses each round among the envelopes of
    runs of neighbouring units (the datasets of enumerated cells, the other cells' dominating pairs) *in one
    order each* (so it never takes the maximum over both orders of a dataset), on the lattice coarsened by
    an integer factor to at most ``_ADAPTIVE_POINTS`` points: ``_GROUPS`` runs per order (``_SHORT_GROUPS``
    for ledgers of at most SHORT_LEDGER rounds), the most used of them split (:func:`_split_used_runs`).
    Its values bound the block's adaptive worst case at those points; so does the per-round
    envelope composed ``b`` times, at every point, and the block's measure is the convex minorant of the
    minimum of the two (:func:`_convex_minorant`), never looser than the composed envelope.

    Where the block gains much over the composed envelope (``_LONG_BLOCK_GAIN`` in ε), every composition of
    blocks gives much of it up again (it takes the maximum over the orders), so a longer ledger is redone
    in blocks of ``_LONG_BLOCK_ROUNDS`` rounds (or all its rounds, if fewer), with the runs (``split``) the
    shorter block chose, and then in blocks of ``_MAX_BLOCK_ROUNDS`` (or all) where the 256-round block
    gains four times as much; the longer block's recursion is bounded by the shorter blocks composed
    (``base``) in place of the per-round envelope, so it is never looser than them (2RR n = 300, ε0 = 2,
    1000 rounds, δ = 1e-6: gap 3.6 → 1.0 ‰ in 3.9 → 10 s; n = 20, ε0 = 3, 130 rounds as one block; the year
    of n = 1e6 gains 4e-4 from its block and keeps 64 rounds).  Frames: :func:`_profile_tilts`.

    Where the blocks compose and the gain rule does not lengthen them (or cannot afford to, within ``work``:
    rounds × frames × (choices + 1) × FFT length), but the block gains more than ``target`` (the ledger's
    relative gap target; None: never), the term's own gap decides: where :func:`_estimated_gap` exceeds
    ``target``, the longer block (from 1024 rounds on, one of ``_LONGEST_BLOCK_ROUNDS``; twice as long
    where the estimate misses by at most ``_MARGINAL_MISS``, which refines further only if it still misses)
    is tried with ``_REFINE_WORK`` instead, after a :class:`SlowComputationWarning` where this call is then expected to
    take over ``SLOW_SECONDS``.  A longer block is built only on the runs its shorter blocks chose (``split``;
    None where the work cannot afford them: coarser runs gain nothing over the shorter blocks).  Every
    block composition gives up the adaptive gain again, so a ledger of many blocks misses its target however
    fine its lattice (2RR n = 3000, ε0 = 3, 1e4 rounds, δ = 1e-3: gap 2.4 ‰ in 256-round blocks, 1.15 ‰ in
    1024-round ones, 15 → 38 s); ledgers within their target pay only the estimate (0.3-3.6 s).
    Cost: ``b × tilts × (choices + 1)`` FFTs of the window, plus the screening passes of the splits.
    """
    began = time.perf_counter()
    if up.finite_mass <= 0.0:
        return None
    rounds = block or _block_rounds(count)
    quotient, rest = divmod(count, rounds)

    def composed_envelope(r: int) -> tuple[list[LatticeDirection], int, int, NDArray[np.float64]]:
        """``r`` rounds of the per-round envelope, or of the shorter blocks (``base``) this block refines."""
        terms = (WorstCaseTerm((up,), lows, r),) if base is None else base(r)
        measures = LedgerPLD(spacing, terms, **options).dominating_measures()
        lo, size = _common_range(measures)
        return measures, lo, size, _max_profile(measures, lo, size, spacing)

    envelopes = {r: composed_envelope(r) for r in (rounds, rest) if r}
    _, lo_f, _, profile = envelopes[rounds]
    material = np.flatnonzero(profile > _ADAPTIVE_FLOOR)
    end = lo_f + int(material[-1]) + 1 if material.size else 0  # the recursion's window ends here (fine index)
    if end <= 0:
        return None
    factor = max(1, -(-2 * end // _ADAPTIVE_POINTS))
    hi = -(-end // factor)
    # Beyond the window, after j rounds: the finite losses of the envelope composed j times (Chernoff, with
    # I ≥ the envelope's mass at +∞), rounded up by the MGF's rounding (linear in j) and, in top, that of
    # the exponent (relative to its terms' size).  The block's own bound (j = b) at every round had put
    # the far tail's Chernoff slack into early rounds' tilted buffers, whose round-off bound then left the
    # untilted frame's uniform one to decide beyond their support (2RR n = 200, ε0 = 5.5, 64 rounds,
    # δ = 1e-12: ε ≤ 303.74, 15 ‰ above the lower end).
    top = chernoff_top([up], spacing)
    groups = _SHORT_GROUPS if count <= SHORT_LEDGER else _GROUPS
    units = [p for cell in cells for p in _uppers(cell)]  # in the cells' order: neighbouring datasets
    built: dict[tuple[int, int, int, int], LatticeDirection] = {}

    def choice(run: tuple[int, int, int], coarsening: int) -> LatticeDirection:
        """The envelope of the units ``a .. b-1`` in one order, on the lattice coarsened ``coarsening`` times."""
        a, b, order = run
        key = (a, b, order, coarsening)
        if key not in built:
            built[key] = _Exact(spacing * coarsening, order).envelope(units[a:b])
        return built[key]

    runs = [(int(c[0]), int(c[-1]) + 1, order) for c in np.array_split(np.arange(len(units)), min(groups, len(units))) for order in (0, 1)]
    tilts = _profile_tilts(profile, lo_f, spacing)
    size = adaptive_window_size([choice(r, factor) for r in runs], -hi, hi)
    per_choice = rounds * len(tilts) * size
    if per_choice * (len(runs) + 1) > work:
        return None
    backend = options.get("fft_backend", "auto")
    # The recursion keeps each choice's half-spectrum in every frame: the splits may hold an eighth of the
    # memory cap in them (the runs they start from are kept whatever the cap).
    held = options.get("max_memory_bytes", math.inf) / 8 / (len(tilts) * 16 * (size // 2 + 1))
    affordable = int(work // per_choice) - 1
    limit = min(_MAX_CHOICES, affordable, max(len(runs), int(min(held, _MAX_CHOICES))))
    every = 2 * len(units)  # each unit in each order
    if split is None and every <= min(_UNIT_CHOICES, affordable, _UNIT_SHARE * held) and per_choice * (every + 1) <= _UNIT_WORK:
        # Few units and a cheap recursion: it chooses among the units themselves (the tightest runs).
        runs = [(i, i + 1, order) for i in range(len(units)) for order in (0, 1)]
    elif split is None:
        screen = max(1, -(-2 * end // _SCREEN_POINTS))  # the screening passes' lattice coarsening
        runs = _split_used_runs(runs, lambda r: choice(r, screen), min(rounds, _SCREEN_ROUNDS), spacing * screen, -(-end // screen), top, tilts, backend,
                                up.infinity, limit)
    elif len(split) <= limit:
        runs = split
    else:
        # The even runs are coarser than the split the shorter blocks chose: such a block gained nothing over
        # them (2RR n = 103, ε0 = 3.07, 5226 rounds: 1024-round blocks of 32 even runs, 3.96 ‰) and would stop
        # the target from lengthening them with the runs they chose (1.66 ‰).
        return None
    choices = [choice(r, factor) for r in runs]
    # One recursion gives both block lengths: its round ``rest`` bounds the last, shorter block.
    started = time.perf_counter()
    recursion = adaptive_profile(choices, list(envelopes), spacing * factor, -hi, hi, top, tilts, backend, infinity=up.infinity,
                                 progress=build_progress(f"adaptive recursion, {len(choices)} choices, blocks of {rounds} rounds", report))
    seconds_per_work = (time.perf_counter() - started) / (per_choice * (len(choices) + 1))
    blocks, gain = {}, 0.0
    for (r, (measures, lo_r, size_r, envelope)), values in zip(envelopes.items(), recursion):
        # The recursion's points replace the composed envelope's value where they are lower.
        position = (np.arange(-hi, hi + 1) * factor) - lo_r
        inside = (position >= 0) & (position <= size_r)
        lowered = np.minimum(envelope[position[inside]], values[inside])
        if r == rounds:
            gain = _epsilon_gain(envelope[position[inside]], lowered, cast(NDArray[np.float64], (position[inside] + lo_r) * spacing))
        envelope[position[inside]] = lowered
        total = max(d.finite_mass + d.infinity for d in measures)
        try:
            blocks[r] = _convex_minorant(envelope, total, lo_r, spacing)
        except _HullOutOfRange:  # the caller composes the per-round envelope instead
            return None

    def shorter(r: int) -> tuple[Term, ...]:
        """``r`` rounds in this call's blocks (``r mod rounds`` is 0 or ``rest``: the longer blocks are
        multiples of ``rounds``, and their remainder is ``≡ count``)."""
        q, extra = divmod(r, rounds)
        return ((WorstCaseTerm((blocks[rounds],), lows, q, lower_count=q * rounds),) if q else ()) + (
            (WorstCaseTerm((blocks[extra],), lows, 1, lower_count=extra),) if extra else ())

    longer = min(count, _LONG_BLOCK_ROUNDS if rounds < _LONG_BLOCK_ROUNDS else _MAX_BLOCK_ROUNDS)
    # The target may lengthen blocks one step further than the gain rule (to _LONGEST_BLOCK_ROUNDS).
    refined = longer if longer > rounds else min(count, _LONGEST_BLOCK_ROUNDS)
    if refined > rounds:
        def lengthened(length: int, budget: float) -> tuple[Term, ...] | None:
            return _adaptive_terms(cells, up, lows, witnesses, spacing, count, options, lower=lower, block=length, split=runs, base=shorter,
                                   report=report, target=target, work=budget)

        terms = lengthened(longer, work) if longer > rounds and gain >= _LONG_BLOCK_GAIN * rounds / _BLOCK_ROUNDS else None
        # Lengthening recovers what block boundaries give back, at most what adaptivity gains: not where the
        # block gains less than the target (the year of n = 1e6 gains 4e-4; its gap of 2.4e-3 at δ = 1e-2
        # stayed with 256-round or whole-ledger blocks, 4 → 21 s).
        if terms is None and target is not None and gain > target:
            gap = _estimated_gap(shorter(count), lows, spacing, count, options)
            if gap > target:
                if gap <= _MARGINAL_MISS * target:
                    refined = min(refined, 2 * rounds)
                # The longer recursion costs about its work's share of this one's time (same window size),
                # and a block of the whole ledger adds its adaptive lower end's runs, at most two, each over
                # the witnesses' directions on as many points as _adaptive_lower affords (its window grows
                # about linearly with the rounds).  2RR n = 300, ε0 = 3, 365 rounds: the lower end took 12.6 s
                # (the redo 20 s in all), estimated at ~4 s before, so the 31 s run gave no warning.
                refined_work = per_choice * refined / rounds
                strategy_work = 0.0
                if refined == count and lower:
                    frames, count_options = len(tilts) + 1, sum(len(p.directions) for p in witnesses)
                    spectra = min(_ends._LOWER_SPECTRA_BYTES, options.get("max_memory_bytes", math.inf) / 8)
                    reach = -(-end * refined // rounds)
                    window = 2 * reach / _lower_coarsening(reach, refined, frames, count_options, 4 * _ends._LOWER_ADAPTIVE_POINTS, spectra)
                    strategy_work = 2 * refined * frames * count_options * 2 * window
                seconds = seconds_per_work * (refined_work * (len(runs) + 1) + strategy_work)
                message = (f"blocks of {rounds} rounds leave an estimated gap of {gap:.2g} (target {target:.2g}): "
                           f"redoing them in blocks of {refined} rounds (~{seconds:.0f} s)")
                if time.perf_counter() - began + seconds > SLOW_SECONDS:
                    warnings.warn(message, SlowComputationWarning, stacklevel=2)
                if report is not None:
                    report(message)
                terms = lengthened(refined, max(work, _REFINE_WORK))
        if terms is not None:
            return terms
    # A realisable adaptive strategy as a lower bound (on a coarsened lattice where the ledger's is too fine:
    # merged witnesses lose only O(Δ²) per round there, see _adaptive_lower).
    strategy, strategies = None, None
    if lower and quotient == 1 and not rest:  # built only when this block is the whole entry
        spectra = min(_ends._LOWER_SPECTRA_BYTES, options.get("max_memory_bytes", math.inf) / 8)
        strategy, strategies = _adaptive_lower(witnesses, rounds, spacing, end, tilts, backend, blocks[rounds], spectra, report)
    if strategy is None:
        return shorter(count)
    return (WorstCaseTerm((blocks[rounds],), lows, 1, lower_count=rounds, adaptive_lower=strategy, strategies=strategies),)


def _split_used_runs(
    runs: list[tuple[int, int, int]],
    choice: Callable[[tuple[int, int, int]], LatticeDirection],
    rounds: int,
    spacing: float,
    hi: int,
    top: Callable[[NDArray[np.float64], int], NDArray[np.float64]],
    tilts: list[float],
    backend: str,
    infinity: float,
    limit: int,
) -> list[tuple[int, int, int]]:
    """Runs ``(a, b, order)`` of neighbouring units for the adaptive recursion's choices: the runs the
    adversary's best choice uses most are halved, up to ``limit`` runs in all.

    A run's choice is the envelope of its units, which the recursion may pick at every point at once: where
    the units' profiles cross, the envelope exceeds each of them and the composed bound is loose (2RR
    n = 100, ε0 = 2, 64 rounds, δ = 1e-6: 3.5 ‰ with runs of three datasets, 0.33 ‰ with one each).  The
    adversary's choices concentrate on few datasets (there: six of the 100 units-orders attain the bound at
    98 % of the points), so splitting the used runs gets most of the gain at a fraction of the cost.
    Up to ``_SCREEN_PASSES`` passes of the recursion (:func:`pldshuffle.worstcase.recursion.adaptive_profile`, on the
    window ``-hi .. hi`` of a lattice of ``spacing``, coarser than the block's), each splitting the runs
    whose usage is at least ``_SPLIT_SHARE`` times the mean.  Decides tightness only: any runs cover every unit.
    """
    previous: tuple[list[tuple[int, int, int]], NDArray[np.float64]] | None = None
    x = np.arange(-hi, hi + 1) * spacing
    for _ in range(_SCREEN_PASSES):
        room = limit - len(runs)
        splittable = [i for i, (a, b, _) in enumerate(runs) if b - a > 1]
        if room <= 0 or not splittable:
            break
        usage = np.zeros(len(runs))
        (values,) = adaptive_profile([choice(r) for r in runs], [rounds], spacing, -hi, hi, top, tilts, backend, infinity=infinity, usage=usage)
        if previous is not None and _epsilon_gain(previous[1], values, cast(NDArray[np.float64], x)) < _SPLIT_GAIN:
            return previous[0]  # the last splits did not pay for their cost in the block's recursion
        previous = (runs, values)
        mean = usage.sum() / len(runs)
        picked = set(sorted((i for i in splittable if usage[i] >= _SPLIT_SHARE * mean and usage[i] > 0), key=lambda i: -usage[i])[:room])
        if not picked:
            break
        runs = [half for i, (a, b, order) in enumerate(runs)
                for half in (((a, (a + b) // 2, order), ((a + b) // 2, b, order)) if i in picked else ((a, b, order),))]
    return runs


def _block_rounds(count: int) -> int:
    """Rounds per adaptive block: ``min(count, _BLOCK_ROUNDS)``, or ``_LONG_BLOCK_ROUNDS`` for ledgers of
    at least ``_LONG_BLOCKS`` such blocks.  Each block composition takes the maximum over the orders again,
    so longer blocks are tighter (n = 1e4, ε0 = 2, 1024 rounds, δ = 1e-2: 3.80 ‰ with 128-round blocks
    against 4.20 ‰ with 64); the recursion's cost is linear in the block, paid once per ledger."""
    if count >= _LONG_BLOCKS * _LONG_BLOCK_ROUNDS:
        return _LONG_BLOCK_ROUNDS
    return min(count, _BLOCK_ROUNDS)


def chernoff_top(steps: list[LatticeDirection], spacing: float) -> Callable[[NDArray[np.float64], int], NDArray[np.float64]]:
    """``top(x, j)`` for :func:`~pldshuffle.worstcase.recursion.adaptive_profile`: a Chernoff bound on the
    finite losses of ``j`` adaptively chosen steps, each dominated by one of the measures ``steps``
    (dominance keeps every Rényi divergence, so each step's moment generating function is at most the
    largest of theirs at every λ ≥ 0, and the bound holds for the adaptive sum: a supermartingale).  The
    MGFs are rounded up by :func:`~pldshuffle.pld.composition.log_mgf_rounding` (linear in ``j``) and the
    exponent by its terms' size.  O(support) per measure here, O(x.size × λs) per call.
    """
    per_round = np.max([np.maximum(log_mgf(u.factor(1), spacing, CHERNOFF_LAMBDAS), 0.0) * (1.0 + 4.0 * _U)
                        + log_mgf_rounding([u.factor(1)], spacing, CHERNOFF_LAMBDAS) for u in steps], axis=0)

    def top(x: NDArray[np.float64], j: int) -> NDArray[np.float64]:
        if j == 0:  # G_0 = (1 - e^x)_+ vanishes right of the window (z_hi ≥ 0)
            return np.zeros(x.size)
        log_m = j * per_round
        terms = CHERNOFF_LAMBDAS[None, :] * x[:, None]
        exponent = log_m[None, :] - terms + 4.0 * _U * (log_m[None, :] + np.abs(terms))
        return cast(NDArray[np.float64], np.exp(np.min(exponent, axis=1)) * (1.0 + 8.0 * _U))

    return top
