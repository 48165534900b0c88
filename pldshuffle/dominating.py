"""Worst cases over datasets as one dominating lattice pair (``docs/mathematics.md#worst-case``).

A mechanism whose guarantee is a maximum over a family of neighbouring pairs ``{(P_m, Q_m)}`` (e.g. every
dataset of shuffled binary randomized response) is turned into ONE lattice measure whose privacy profile
``h(x) = Σ ω(z)(1 - e^{x-z})_+ + ω(∞)`` is ≥ every member's profile, in both orders, at every real ``x``:

* Each member's connect-the-dots discretisation has, at the lattice points, exactly the member's
  profile, and is linear in ``α = e^x`` between them.
* The pointwise maximum ``D`` of those profiles is convex in ``α``, so the lattice measure whose profile
  interpolates ``D`` linearly in ``α`` between lattice points dominates every member (Zhu, Dong & Wang,
  AISTATS 2022: a dominating pair always exists; construction as in Doroshenko et al., PETS 2022).
  Its masses come from the inversion ``A_j = (H_{j-1} - e^{-Δ}H_j)/(1 - e^{-Δ})`` (``A_j`` = mass at
  or above ``z_j``), made non-increasing by raising, then verified a posteriori: the measure is scaled
  up by the largest ratio ``D_j / h_j`` if rounding left any point below.  Only upper bounds on ``D``
  at the lattice points are needed: they are read off the members' sorted supports at chosen points and
  by ``D``'s chords in between (:meth:`_Exact.envelope`), so no lattice measure is built per member.
* Profile domination at every ``x`` survives convolution with any non-negative measure, so the
  envelope composes soundly with anything, for any sequence of datasets ("data may change between
  rounds").

Large families are covered by *cells* (a range of datasets with one proven dominating pair); cells
whose dominating profile exceeds the best realisable member's profile by more than a relative
tolerance at some lattice point are split (branch and bound).  The lower bound uses *witnesses*: the
realisable members that attain the lower envelope most often.
"""

from __future__ import annotations

import math
import time
import warnings
from collections.abc import Callable, Iterable
from dataclasses import replace

import numpy as np
from numpy.typing import NDArray

from ._estimate import SLOW_SECONDS
from ._kernels import UNIT_ROUNDOFF as _U, hockey_stick_profile, lower_hull
from ._reporting import build_progress, throttled_reporter
from .adaptive import adaptive_lower_profile, adaptive_profile, adaptive_window_size, strategy_measure, value_floor
from .certified import CertifiedPLD, MemoryBudgetError, distinct_tilts, tail_score
from .composition import CHERNOFF_LAMBDAS, log_mgf, log_mgf_rounding
from .lattice import LatticeDirection, Term, lower_direction, profile_at, rounding_penalty, upper_direction
from .mechanisms.base import Cell, PairFamily
from .pld import MASS_RTOL, LargestUpperProfile, PrivacyLossPair
from .results import SlowComputationWarning
from .spacing import SHORT_LEDGER, relative_target

__all__ = ["MAX_WITNESSES", "envelope", "family_term"]

#: Branch and bound splits a cell while its profile exceeds the realisable envelope by this (relative).
_CELL_TOLERANCE = 1e-3
#: Profile values below this are immaterial for the excess test.
_FLOOR = 1e-30
_MAX_CELLS = 1600
#: The memory held by a cover or a query's refinement is checked every this many splits (each adds about
#: three pairs).
_MEMORY_CHECK_EVERY = 8
#: Largest |loss| offset whose e^z the convex-minorant hulls use (doubles hold e^±709).
_HULL_EXP = 700.0
#: Splits for a same-data block (each cell costs a composition of its dominating pair).
_MAX_BLOCK_CELLS = 24
#: A single round's cover realises the datasets of split cells only above this many cell tolerances
#: (see :func:`family_term`).
_SINGLE_ROUND_REALISE = 16
#: Splits one single-round query may add to the cover.
_QUERY_SPLITS = 800
#: Share of ``max_memory_bytes`` a single round's query refinement may hold in pairs (one round composes
#: nothing; half the cap left 2RR n = 1e8 at a gap of 4.4e-4 with 1021 of its 1024 MiB held; with 5/8:
#: 3.9e-4, n = 1e9 2.0e-3 → 9.9e-4 at a 2.0 GB peak).  The rest is the lattice measures, the pairs being
#: built and the heap's freed pages: n = 1e9 under a 1 GiB cap peaks at 1188 MiB with 5/8, 1332 MiB with
#: 3/4 (above cap + 300 MiB).
_SINGLE_ROUND_SHARE = 0.625
#: A query's refinement reveals the datasets of this many of the cells then largest at its point (as many
#: as a single round's lower end inverts, ``pldshuffle.certified._LOWER_PAIRS``).
_KEPT_MEMBERS = 16
#: Lattice points on which branch and bound compares profiles.
_PROBES = 4097
#: Lower witnesses of a family's terms (at most).
MAX_WITNESSES = 6
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
#: A same-data block composes each member of its cover ``count`` times on a lattice this many times coarser
#: than the ledger's (the ledger's lattice is sized for the lower end's certified shift, which the block's
#: upper measures do not carry; 2RR n = 500, ε0 = 2, 20 rounds on the same data: 48 s on the ledger's own).
_BLOCK_COARSENING = 2
#: Runs of neighbouring cells per order the adaptive recursion chooses from (``_SHORT_GROUPS`` in blocks of
#: at most SHORT_LEDGER rounds, held to the 1e-3 target: n = 1e4, ε0 = 2, 64 rounds, δ = 1e-2: 1.06 → 0.96 ‰
#: for 0.5 s).
_GROUPS = 16
_SHORT_GROUPS = 32
#: The recursion's window holds at most this many points (its lattice is coarsened to fit; a larger window
#: has a larger round-off bound: 2RR n = 300, ε0 = 3, 64 rounds, ε(1e-15) ≤ 19.928 with 2^15, 19.954 with
#: 2^16).  The adaptive lower end's window has at most ``_LOWER_ADAPTIVE_POINTS`` (its lattice is coarsened to
#: fit; n = 1000, ε0 = 8, 5 rounds, δ = 0.3: lower end 30.457 → 30.637 with 2^16 instead of 2^15).
_ADAPTIVE_POINTS = 2**15
_LOWER_ADAPTIVE_POINTS = 2**16
#: The adaptive lower end's runs (:func:`_adaptive_lower`) keep rounds × frames × options × FFT length within
#: ``_LOWER_ADAPTIVE_WORK`` (a few seconds) and the options' half-spectra within ``_LOWER_SPECTRA_BYTES``;
#: the second, where the first leaves ε(δ) more than ``_LOWER_REFINE_GAP`` below the upper end's, takes the
#: options chosen at least ``_LOWER_KEEP_SHARE`` of the time in the first, on up to ``_LOWER_MAX_POINTS``.
_LOWER_KEEP_SHARE = 0.01
_LOWER_REFINE_GAP = 5e-4
_LOWER_MAX_POINTS = 2**20
_LOWER_ADAPTIVE_WORK = 1e9
_LOWER_SPECTRA_BYTES = 2**28
#: Strategy witnesses (:class:`StrategyWitnesses`): the first run's choices are kept on at most
#: ``_STRATEGY_POINTS`` budgets (2RR n = 30, ε0 = 3.37, 16 rounds: the strategy aiming at ε(1e-2) attains δ
#: 4.4 % below the adaptive lower end's on 2^13, 0.07 % on 2^15), and in at most ``_STRATEGY_BYTES``.
_STRATEGY_POINTS = 2**15
_STRATEGY_BYTES = 2**25
#: A block's strategy witnesses together play at most this much work (rounds × options × FFT length; 1e8
#: took 0.8 s): further aims are left out (130 rounds of 2RR n = 20: 0.7–1.0 s per witness).
_STRATEGY_WORK = 1e9
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
#: δ levels at which the adaptive recursion's frames are tilted (:func:`_profile_tilts`).
_RECURSION_TILT_DELTAS = (1e-4, 1e-10, 1e-16)
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
#: Points at which that estimate reads both ends.
_GAP_POINTS = 1000
#: The per-round envelope's composition may exceed the memory cap by this factor before the blocks are built
#: (the blocks' own windows are narrower; the composition checks them exactly).
_ENVELOPE_BUDGET_SLACK = 1.25
#: The witnesses stop when their envelope is this close (relative) to the realisable one.
_WITNESS_TOLERANCE = 1e-3
#: An envelope's bound between lattice points where it is known: chords, refined until this close (relative).
_CHORD_TOLERANCE = 1e-6

Profile = tuple[int, NDArray[np.float64], float]  # (start index, masses, infinity) of one lattice direction


def _profile_on(direction: LatticeDirection, lo: int, size: int, spacing: float) -> NDArray[np.float64]:
    """The direction's profile at ``j = lo .. lo+size`` (``size + 1`` values, infinity included)."""
    return profile_at(direction, lo + np.arange(size + 1), spacing)


class _Lattice:
    """Profiles of pairs' lattice measures on one common index range, for a fixed spacing.

    Directions are cached per pair *object* (the cache holds the pair, so an ``id`` is never reused for
    another pair) until :meth:`forget` releases them.
    """

    def __init__(self, spacing: float, profile_of: Callable[[PrivacyLossPair], list[LatticeDirection]]) -> None:
        self.spacing, self.profile_of = spacing, profile_of
        self._dirs: dict[int, tuple[PrivacyLossPair, list[LatticeDirection]]] = {}

    def directions(self, pair: PrivacyLossPair) -> list[LatticeDirection]:
        if id(pair) not in self._dirs:
            self._dirs[id(pair)] = (pair, self.profile_of(pair))
        return self._dirs[id(pair)][1]

    def forget(self, pair: PrivacyLossPair) -> None:
        entry = self._dirs.get(id(pair))
        if entry is not None and entry[0] is pair:
            del self._dirs[id(pair)]

    def held_bytes(self) -> int:
        """Bytes of the cached lattice measures."""
        return sum(d.masses.nbytes for _, dirs in self._dirs.values() for d in dirs)

    def range_of(self, pairs: list[PrivacyLossPair]) -> tuple[int, int]:
        return _common_range([d for p in pairs for d in self.directions(p)])

    def profile(self, pair: PrivacyLossPair, indices: NDArray[np.int64]) -> NDArray[np.float64]:
        """Max over both orders of the pair's lattice profile at the given lattice indices."""
        return np.max([profile_at(d, indices, self.spacing) for d in self.directions(pair)], axis=0)

    def envelope(self, pairs: list[PrivacyLossPair]) -> LatticeDirection:
        return envelope([d for p in pairs for d in self.directions(p)], self.spacing)


class _Exact:
    """Strict upper bounds on the exact pairs' profiles at lattice points, read off their sorted supports.

    A pair's connect-the-dots lattice measure has, at the lattice points, the pair's own profile, and is
    linear in ``α = e^x`` between them, so an envelope only needs upper bounds on the exact profiles at
    (ascending) lattice points (:meth:`~pldshuffle.pld.LossDistribution.hockey_stick_upper_sorted`): no
    lattice measure is built per member.  O(support + points) per direction and call (a lattice measure
    costs O(range/Δ) per member, which dominated fine lattices of large families).
    """

    def __init__(self, spacing: float, order: int | None = None) -> None:
        self.spacing, self.order = spacing, order

    def forget(self, pair: PrivacyLossPair) -> None:
        """Nothing is cached per pair."""

    def held_bytes(self) -> int:
        """Nothing is cached."""
        return 0

    def _directions(self, pair: PrivacyLossPair) -> tuple:
        """Both orders, or only ``order`` (a symmetric pair's single direction stands for both)."""
        if self.order is None:
            return pair.directions
        return (pair.directions[min(self.order, len(pair.directions) - 1)],)

    def range_of(self, pairs: list[PrivacyLossPair]) -> tuple[int, int]:
        """The range of the pairs' connect-the-dots measures, as :func:`_common_range` gives it."""
        dirs = [d for p in pairs for d in self._directions(p) if d.support_size]
        if not dirs:
            return 0, 1
        lo = min(math.floor(d.losses[0] / self.spacing) for d in dirs)
        return lo, max(math.floor(d.losses[-1] / self.spacing) for d in dirs) + 3 - lo

    def profile(self, pair: PrivacyLossPair, indices: NDArray[np.int64]) -> NDArray[np.float64]:
        """Max over the orders of a strict upper bound on the pair's profile at the lattice indices."""
        return LargestUpperProfile(self._directions(pair))(np.asarray(indices, dtype=np.float64) * self.spacing)

    def envelope(self, pairs: list[PrivacyLossPair]) -> LatticeDirection:
        """Lattice measure dominating every pair, from upper bounds on their pointwise maximum ``D``.

        ``D`` (convex in α) is bounded at a set of lattice points and by its chords in between; the set
        starts at ``_PROBES`` points and each interval is halved while the chord at its midpoint exceeds
        the bound there by more than ``_CHORD_TOLERANCE`` (relative; profiles below ``_FLOOR`` are not
        refined).  A convex ``D`` lies below each chord, and a concave chord excess is at most twice its
        midpoint value, so the bracket is sound and its excess at most 2·``_CHORD_TOLERANCE``.  Cost
        O(pairs × (support + points)) per refinement step (about log2(range/``_PROBES``) steps, each on the
        intervals still loose), plus O(range/Δ) for the measure.
        """
        spacing = self.spacing
        lo, size = self.range_of(pairs)

        largest = LargestUpperProfile([d for p in pairs for d in self._directions(p)])

        def top(offsets: NDArray[np.int64]) -> NDArray[np.float64]:
            return largest((lo + offsets).astype(np.float64) * spacing)

        points = np.unique(np.linspace(0, size, min(size + 1, _PROBES)).astype(np.int64))
        values = top(points)
        refine = np.diff(points) >= 2  # whether the interval right of each point may be halved
        while np.any(refine):
            k = np.flatnonzero(refine)
            a, b = points[k], points[k + 1]
            mid = (a + b) // 2
            at_mid = top(mid)
            excess = _chord(values[k], values[k + 1], mid - a, b - a, spacing) - at_mid
            loose = (excess > _CHORD_TOLERANCE * at_mid) & (at_mid > _FLOOR)
            flags = np.append(refine, False)
            flags[k] = loose & (mid - a >= 2)
            order = np.argsort(np.concatenate([points, mid]), kind="stable")
            points = np.concatenate([points, mid])[order]
            values = np.concatenate([values, at_mid])[order]
            refine = np.concatenate([flags, loose & (b - mid >= 2)])[order][:-1]
        offsets = np.arange(size + 1)
        k = np.minimum(np.searchsorted(points, offsets, side="right") - 1, points.size - 2)
        a, b = points[k], points[k + 1]
        chord = _chord(values[k], values[k + 1], offsets - a, b - a, spacing)
        # The chord's few roundings are covered relative to the larger end (the excess test keeps ends close).
        target = chord * (1.0 + 8.0 * _U) + 8.0 * _U * np.maximum(values[k], values[k + 1])
        # Masses summed directly: ``finite_mass`` would build (and keep) a suffix-sum array per member.
        total = max(
            (float(d.masses.sum()) + d.infinity_mass + d.truncated_mass) * (1.0 + MASS_RTOL)
            for p in pairs
            for d in self._directions(p)
        )
        return _from_profile(target, total, lo, spacing)


def _chord(left: NDArray[np.float64], right: NDArray[np.float64], step: NDArray[np.int64], width: NDArray[np.int64],
           spacing: float) -> NDArray[np.float64]:
    """The chord, linear in ``α = e^x``, from ``left`` at ``z_a`` to ``right`` at ``z_{a+width}``, at ``z_{a+step}``."""
    weight = np.expm1(step * spacing) / np.expm1(np.maximum(width, 1) * spacing)
    return left + weight * (right - left)


def envelope(directions: list[LatticeDirection], spacing: float) -> LatticeDirection:
    """Lattice measure whose profile is ≥ every direction's profile at every real x (module notes).

    Cost O(len(directions) × range/Δ).
    """
    lo, size = _common_range(directions)
    total = max(d.finite_mass + d.infinity for d in directions)
    return _from_profile(_max_profile(directions, lo, size, spacing), total, lo, spacing)


def _common_range(directions: list[LatticeDirection]) -> tuple[int, int]:
    """``(lo, size)``: lattice indices ``lo .. lo+size`` cover every direction's support and one point above."""
    lo = min(d.start for d in directions)
    return lo, max(d.start + d.masses.size for d in directions) + 1 - lo


def _max_profile(directions: Iterable[LatticeDirection], lo: int, size: int, spacing: float) -> NDArray[np.float64]:
    """Pointwise maximum of the directions' profiles at ``j = lo .. lo+size`` (one profile in memory at a time)."""
    target = np.zeros(size + 1)
    for d in directions:
        np.maximum(target, _profile_on(d, lo, size, spacing), out=target)
    return target


def _from_profile(target: NDArray[np.float64], total: float, lo: int, spacing: float) -> LatticeDirection:
    """Invert a convex non-increasing profile sampled at ``z_lo .. z_{lo+size}`` into a dominating measure
    (masses at ``z_lo .. z_{lo+size}``; the last one carries the drop from ``z_{lo+size-1}`` to the end,
    which no mass at or below ``z_{lo+size-1}`` could)."""
    size = target.size - 1
    infinity = float(target[-1])
    finite = np.maximum(target - infinity, 0.0)
    above = _mass_at_or_above(finite, max(total - infinity, 0.0), spacing)
    above[size] = finite[size - 1] / -math.expm1(-spacing) if size > 0 else 0.0
    # Mass at or above z_j must not increase with j; raising it only raises the profile.
    above = np.maximum.accumulate(np.maximum(above, 0.0)[::-1])[::-1]
    masses = np.append(-np.diff(above), above[size])
    # A posteriori check: scale up where rounding left the rebuilt profile below the target.
    rebuilt = hockey_stick_profile(masses, spacing)[0][: size + 1]
    material = finite > 0
    ratio = float(np.max(finite[material] / np.maximum(rebuilt[material], 1e-320))) if np.any(material) else 1.0
    scale = max(ratio, 1.0) * (1.0 + 8.0 * _U * (size + 8))
    return LatticeDirection(lo, masses * scale, min(1.0, infinity * (1.0 + 4.0 * _U)))


def _mass_at_or_above(finite: NDArray[np.float64], total: float, spacing: float) -> NDArray[np.float64]:
    """``A_j``, the mass at or above ``z_j``, of the measure whose finite profile is ``finite`` at
    ``z_0 .. z_size`` (``A_0 = total``, ``A_size = 0``): ``A_j = (H_{j-1} - e^{-Δ}H_j)/(1 - e^{-Δ})``, before
    the caller's rounding direction is imposed."""
    size = finite.size - 1
    above = np.empty(size + 1)
    above[0] = total
    above[1:size] = (finite[:-2] - math.exp(-spacing) * finite[1:-1]) / -math.expm1(-spacing)
    above[size] = 0.0
    return above


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
    """The certified terms of ``count`` rounds of a mechanism given by its pair family.

    ``report`` (optional) receives a progress message every few seconds of a branch and bound over datasets.
    ``target`` is the ledger's relative ε gap target (default :func:`pldshuffle.spacing.relative_target` of
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
        return (Term(directions, _lower_witnesses(family.lower, spacing), count, (pair,), tuple(family.lower)),)

    if single and (not same_data or count == 1):
        return single_pair_terms()
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
                CertifiedPLD(spacing, (Term((up,), lows, count),), **options).check_budget()
            except MemoryBudgetError as exc:
                if not exc.needed <= _ENVELOPE_BUDGET_SLACK * exc.budget:
                    raise
            if report is not None:
                report(f"bounding blocks of rounds adaptively ({len(kept_cells)} cells)")
            blocks = _adaptive_terms(kept_cells, up, lows, witnesses, spacing, count, options, report=report,
                                     target=relative_target(count) if target is None else target)
            if blocks is not None:
                return blocks
        return (Term((up,), lows, count),)

    if same_data and count > 1:
        # The changing-data bound (adaptive blocks, or the per-round envelope composed count times) dominates
        # the block too (it holds for any data): keep the better of the two at every x, so the same-data
        # bound is never looser than the default one.  Built first: a ledger too large for the memory cap
        # is refused here, before the block's cover composes every member count times.
        changing = _adaptive_terms(kept_cells, up, lows, witnesses, spacing, count, options, lower=False, report=report) if adaptive else None
        per_round = CertifiedPLD(spacing, changing or (Term((up,), lows, count),), **options).dominating_measures()
        # Each member composed count times on a coarser lattice (its measures embed into the ledger's).
        coarse = spacing * _BLOCK_COARSENING
        block = _Lattice(coarse, lambda p: _composed_directions(p, coarse, count, options))
        block_cells, block_witnesses, _ = _cover(family, block, max_cells=_MAX_BLOCK_CELLS, tolerance=tolerance, max_bytes=max_bytes, report=report)
        block_kept = [p for c in block_cells for p in _uppers(c)]
        blocks = [d for p in block_kept for d in block.directions(p)]
        try:
            tighter = _convex_minorant_of_min(blocks, per_round, spacing, coarsening=_BLOCK_COARSENING)
        except _HullOutOfRange:  # the changing-data terms hold for the same data too (on the same cover)
            return changing_data_terms()
        # Witnesses: the same dataset in every round, i.e. a member's own rounds composed count times.
        picks = list(dict.fromkeys(block_witnesses[: MAX_WITNESSES // 2] + witnesses))[:MAX_WITNESSES]
        return (Term((tighter,), _lower_witnesses(tuple(picks), spacing), 1, lower_count=count),)
    if count > 1:  # the exact pairs only serve a single round
        return changing_data_terms()
    # One round is also answered off the lattice: every member is dominated by a kept pair, and the cells
    # are refined further at the points queried.  Nothing is composed, so the refinement may hold
    # _SINGLE_ROUND_SHARE of the cap (the lattice measures keep the rest).
    refined_bytes = _SINGLE_ROUND_SHARE * options.get("max_memory_bytes", math.inf)
    return (Term((up,), lows, count, refiner=QueryRefinement(kept_cells, members, refined_bytes)),)


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

    The recursion (:func:`pldshuffle.adaptive.adaptive_profile`) chooses each round among the envelopes of
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
        terms = (Term((up,), lows, r),) if base is None else base(r)
        measures = CertifiedPLD(spacing, terms, **options).dominating_measures()
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
    per_round = np.maximum(log_mgf(up.factor(1), spacing, CHERNOFF_LAMBDAS), 0.0) * (1.0 + 4.0 * _U)
    per_round += log_mgf_rounding([up.factor(1)], spacing, CHERNOFF_LAMBDAS)

    def top(x: NDArray[np.float64], j: int) -> NDArray[np.float64]:
        if j == 0:  # G_0 = (1 - e^x)_+ vanishes right of the window (z_hi ≥ 0)
            return np.zeros(x.size)
        log_m = j * per_round
        terms = CHERNOFF_LAMBDAS[None, :] * x[:, None]
        exponent = log_m[None, :] - terms + 4.0 * _U * (log_m[None, :] + np.abs(terms))
        return np.exp(np.min(exponent, axis=1)) * (1.0 + 8.0 * _U)

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
            gain = _epsilon_gain(envelope[position[inside]], lowered, (position[inside] + lo_r) * spacing)
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
        return ((Term((blocks[rounds],), lows, q, lower_count=q * rounds),) if q else ()) + (
            (Term((blocks[extra],), lows, 1, lower_count=extra),) if extra else ())

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
                    spectra = min(_LOWER_SPECTRA_BYTES, options.get("max_memory_bytes", math.inf) / 8)
                    reach = -(-end * refined // rounds)
                    window = 2 * reach / _lower_coarsening(reach, refined, frames, count_options, 4 * _LOWER_ADAPTIVE_POINTS, spectra)
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
        spectra = min(_LOWER_SPECTRA_BYTES, options.get("max_memory_bytes", math.inf) / 8)
        strategy, strategies = _adaptive_lower(witnesses, rounds, spacing, end, tilts, backend, blocks[rounds], spectra, report)
    if strategy is None:
        return shorter(count)
    return (Term((blocks[rounds],), lows, 1, lower_count=rounds, adaptive_lower=strategy, strategies=strategies),)


def _estimated_gap(terms: tuple[Term, ...], lows: tuple, spacing: float, count: int, options: dict) -> float:
    """Estimated relative ε gap, δ ∈ [1e-12, 1e-2], of ``terms`` alone (decides whether to refine them, never a
    bound): their composed upper measures against the certified lower end of the witnesses ``lows`` composed
    ``count`` times.  Only the witness directions whose log-MGF is largest at a tilt of the upper profile
    (:func:`_profile_tilts`: the heaviest tail near a saddle point) are composed, and both ends are read
    between ``_GAP_POINTS`` points, so the estimate may err either way (by 0.1 % where measured; by 10 % near
    the loss cap on a coarse lattice).  Cost: the upper realisation and, for each of up to three witnesses,
    both ends of its own."""
    upper = CertifiedPLD(spacing, terms, **options).dominating_measures()
    lo, size = _common_range(upper)
    profile = _max_profile(upper, lo, size, spacing)
    directions = [d for witness in lows for d in witness if d.finite_mass > 0.0]
    first = max(lo, 0)  # ε ≥ 0
    if not directions or first > lo + size:
        return 0.0

    # Read on _GAP_POINTS points from the upper end's ε(1e-2), less 10 %, to its ε(1e-12): a larger gap is
    # clipped there, and still far above any target.
    lattice = np.arange(first, lo + size + 1) * spacing
    levels = -np.log(np.array([1e-2, 1e-12]))
    reach = np.interp(levels, -np.log(np.maximum(profile[first - lo :], 1e-300)), lattice)
    x = np.linspace(0.9 * reach[0], reach[1], _GAP_POINTS)
    lower = np.zeros(x.size)
    heaviest = {int(np.argmax([tail_score(d, spacing, theta) for d in directions])) for theta in _profile_tilts(profile, lo, spacing)}
    for index in sorted(heaviest):
        witness = (directions[index],)
        np.maximum(lower, CertifiedPLD(spacing, (Term(witness, (witness,), count),), **options).delta_bounds(x)[0], out=lower)
    return _epsilon_gain(np.interp(x, lattice, profile[first - lo :]), lower, x, largest=1e-2, smallest=1e-12)


def _profile_tilts(profile: NDArray[np.float64], lo: int, spacing: float) -> list[float]:
    """Tilts of the adaptive recursion's frames: θ = 0 and the decay rate ``-d log G/dx`` of the composed
    envelope's profile ``G`` (at lattice indices ``lo ..``) where it crosses ``_RECURSION_TILT_DELTAS`` (as
    :func:`pldshuffle.certified.distinct_tilts` keeps them).  A frame's round-off is relative where the bound decays at its θ;
    the composition's Chernoff saddle points sit elsewhere where the bound is far from its Chernoff bound
    (near the loss cap: 2RR n = 50, ε0 = 4, 64 rounds, δ = 1e-12: gap 2.2 % with them, 0.74 ‰ with these).
    The slope is read over ±0.05 in x (at least two lattice points each side)."""
    logs = np.log(np.maximum(profile, 1e-300))
    reach = max(2, int(0.05 / spacing))
    crossings = [int(np.searchsorted(-profile, -delta)) for delta in _RECURSION_TILT_DELTAS]  # first G ≤ δ
    return distinct_tilts(
        float((logs[k - reach] - logs[k + reach]) / (2 * reach * spacing)) for k in crossings if reach <= k < profile.size - reach
    )


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
    Up to ``_SCREEN_PASSES`` passes of the recursion (:func:`pldshuffle.adaptive.adaptive_profile`, on the
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
        if previous is not None and _epsilon_gain(previous[1], values, x) < _SPLIT_GAIN:
            return previous[0]  # the last splits did not pay for their cost in the block's recursion
        previous = (runs, values)
        mean = usage.sum() / len(runs)
        picked = set(sorted((i for i in splittable if usage[i] >= _SPLIT_SHARE * mean and usage[i] > 0), key=lambda i: -usage[i])[:room])
        if not picked:
            break
        runs = [half for i, (a, b, order) in enumerate(runs)
                for half in (((a, (a + b) // 2, order), ((a + b) // 2, b, order)) if i in picked else ((a, b, order),))]
    return runs


def _epsilon_gain(
    before: NDArray[np.float64], after: NDArray[np.float64], x: NDArray[np.float64], largest: float = 0.5, smallest: float = 1e-15
) -> float:
    """Largest relative decrease of ε(δ), δ ∈ [``smallest``, ``largest``], from the non-increasing profile
    ``before`` to ``after`` (both at the points ``x``; ε read by interpolating log δ linearly)."""
    levels = -np.log(np.logspace(math.log10(smallest), math.log10(largest), 30))

    def epsilon(values: NDArray[np.float64]) -> NDArray[np.float64]:
        return np.interp(levels, -np.log(np.maximum(values, 1e-300)), x)

    old, new = epsilon(before), epsilon(after)
    positive = old > 0.0
    return float(np.max((old[positive] - new[positive]) / old[positive])) if np.any(positive) else 0.0


def _block_rounds(count: int) -> int:
    """Rounds per adaptive block: ``min(count, _BLOCK_ROUNDS)``, or ``_LONG_BLOCK_ROUNDS`` for ledgers of
    at least ``_LONG_BLOCKS`` such blocks.  Each block composition takes the maximum over the orders again,
    so longer blocks are tighter (n = 1e4, ε0 = 2, 1024 rounds, δ = 1e-2: 3.80 ‰ with 128-round blocks
    against 4.20 ‰ with 64); the recursion's cost is linear in the block, paid once per ledger."""
    if count >= _LONG_BLOCKS * _LONG_BLOCK_ROUNDS:
        return _LONG_BLOCK_ROUNDS
    return min(count, _BLOCK_ROUNDS)


def _lower_coarsening(end: int, rounds: int, frames: int, count: int, most: int, spectra_bytes: float) -> int:
    """Integer factor by which an adaptive lower end's run over ``count`` options coarsens the lattice of its
    window ``-end .. end`` (:func:`_adaptive_lower`), to as many points as it can afford: from
    ``_LOWER_ADAPTIVE_POINTS``, doubled up to ``most`` while rounds × frames × options × FFT length
    (≈ 2 × window, so the work grows with 4 × points) stays within ``_LOWER_ADAPTIVE_WORK`` and the options'
    half-spectra within ``spectra_bytes``."""
    points = _LOWER_ADAPTIVE_POINTS
    while points < most and rounds * frames * count * 4 * points <= _LOWER_ADAPTIVE_WORK and frames * count * 32 * points <= spectra_bytes:
        points *= 2
    return max(1, -(-2 * end // points))


def _adaptive_lower(
    witnesses: tuple[PrivacyLossPair, ...], rounds: int, spacing: float, end: int, tilts: list[float], fft_backend: str,
    upper: LatticeDirection, spectra_bytes: float, report: Callable[[str], None] | None = None,
) -> tuple[LatticeDirection | None, StrategyWitnesses]:
    """A lattice measure whose profile is, at every ``x``, at most the hockey-stick profile at ``x`` of some
    realisable adaptive strategy over ``rounds`` rounds (the witnesses in both orders, chosen round by
    round; the best choice depends on ``x``), and the :class:`StrategyWitnesses` of the first run's
    strategies.  The measure bounds the block's worst case from below when the block is the whole ledger;
    being a maximum over strategies, not one pair, it must not be composed (the strategy witnesses may be).

    The strategies are those of :func:`pldshuffle.adaptive.adaptive_lower_profile`, in up to two runs over
    the window ``-end .. end`` (ledger indices), each on the ledger's lattice coarsened by an integer factor
    to as many points as ``_LOWER_ADAPTIVE_WORK`` (rounds × frames × options × FFT length) and
    ``spectra_bytes`` (the options' half-spectra; the caller passes at most an eighth of ``max_memory_bytes``)
    allow: every option on ``_LOWER_ADAPTIVE_POINTS`` to four times as many points, which also counts how
    often each option is the strategy's choice; then, where that buys a finer lattice (at most
    ``_LOWER_MAX_POINTS`` points) and the first run's ε(δ) is more than ``_LOWER_REFINE_GAP`` below that of
    the block's ``upper`` measure somewhere in δ ∈ [1e-15, 1e-2], only the options chosen at least
    ``_LOWER_KEEP_SHARE`` of the time (2–4 of 8–12 for 2RR).  Any set of options gives a realisable
    strategy, so the profile is the larger of the two runs' at every point (2RR, 64 rounds, δ = 1e-2:
    n = 20, ε0 = 3: gap 1.09 → 0.82 ‰, n = 25, ε0 = 3.11: 0.97 → 0.61 ‰, for ~2 s; ledgers within the
    target skip it).  The measure is returned on the ledger's lattice.

    Options are the witnesses *merged* onto the lattice (:mod:`pldshuffle.grid`): merged outcomes are
    post-processed ones, which a strategy may equally look at before it chooses the next round, so the
    strategy is realisable as it stands, and they lose only ``O(Δ²)`` per round on the coarser lattice
    (``O(g²)`` for atoms ``g > Δ`` apart).  The rare outcome the merge cannot balance is rounded down, adding
    loss ``D ≥ 0``, so the true value at ``x`` is at least the rounded one at ``x - t`` minus ``P[D < t]``,
    and since each round's offset comes from one of the options, ``P[D < t] ≤ e^{ct/Δ} Π_rounds max_o
    E_o[e^{-cd/Δ}]`` (a supermartingale; the witnesses' rounding certificates).  That bound is vacuous as soon
    as one option has no offsets, so fully rounded-down options (which fixed witnesses may prefer) are not
    mixed in: mixing them had cost n = 20, ε0 = 3, 64 rounds 0.5 ‰ of gap.
    The measure interpolates the values one lattice step to the left (so its profile, linear in ``α``
    between lattice points, stays below the non-increasing value), lowered to their greatest convex
    minorant through ``(0, T^rounds)`` (``T`` the smallest witness mass, a lower bound at ``α = 0``).
    None where the window spans more losses than that hull can hold (:class:`_HullOutOfRange`).
    """
    directions = [d for p in witnesses for d in p.directions]
    frames = len(tilts) + 1
    coarse = _lower_coarsening(end, rounds, frames, len(directions), 4 * _LOWER_ADAPTIVE_POINTS, spectra_bytes)
    options = [lower_direction(d.discretize(spacing * coarse)) for d in directions]
    usage = np.zeros(len(options))
    # The first run's choices, kept on a lattice ``step`` times coarser still, for the strategy witnesses.
    first_hi = -(-end // coarse)
    step = max(1, -(-2 * first_hi // min(_STRATEGY_POINTS, _STRATEGY_BYTES // (2 * rounds))))
    budgets = -(-first_hi // step)
    record = np.clip(np.arange(-budgets, budgets + 1) * step, -first_hi, first_hi) + first_hi
    choices = np.empty((rounds, record.size), dtype=np.int16)
    runs = [(coarse, options, _strategy_values(options, rounds, spacing * coarse, first_hi, tilts, fft_backend, usage,
                                               build_progress(f"adaptive lower end, {len(options)} options, {rounds} rounds", report),
                                               choices, record))]
    strategies = StrategyWitnesses(directions, choices, spacing, coarse * step, budgets, fft_backend)
    kept = [i for i in range(len(options)) if usage[i] > 0.0 and usage[i] >= _LOWER_KEEP_SHARE * usage.sum()]
    fine = _lower_coarsening(end, rounds, frames, len(kept), _LOWER_MAX_POINTS, spectra_bytes)
    if kept and fine < coarse and _lower_gap(runs[0][2], coarse, upper, spacing) > _LOWER_REFINE_GAP:
        chosen = [lower_direction(directions[i].discretize(spacing * fine)) for i in kept]
        runs.append((fine, chosen, _strategy_values(chosen, rounds, spacing * fine, -(-end // fine), tilts, fft_backend,
                                                    progress=build_progress(f"adaptive lower end refined, {len(chosen)} options", report))))
    factor = runs[-1][0]
    hi = -(-end // factor)
    below = np.zeros(2 * hi)
    # Point -hi + i of the finest run needs a bound on V at its right neighbour; a coarser run's value at
    # its first point at or right of it is one (V is non-increasing).
    right = (-hi + 1 + np.arange(2 * hi)) * factor
    for run_factor, _, values in runs:
        run_hi = -(-end // run_factor)
        j = np.maximum(-(-right // run_factor) + run_hi, 0)
        inside = j < values.size
        below[inside] = np.maximum(below[inside], values[j[inside]])
    total = min(float(o.masses.sum()) for _, run_options, _ in runs for o in run_options) ** rounds * (1.0 - 1e-12)
    below = np.minimum.accumulate(below)
    below[0] = min(below[0], total - float(np.exp(-hi * spacing * factor)))  # the chord from (0, T) then stays below T - α ≤ V
    try:
        target = _greatest_convex_minorant(below, total, -hi, spacing * factor)
    except _HullOutOfRange:  # no adaptive lower end: the witnesses' compositions still bound the ledger
        return None, strategies
    measure = _from_profile_below(np.maximum(target, 0.0), total, -hi, spacing * factor)
    measure = _on_finer_lattice(measure, factor) if factor > 1 else measure
    # Each round's option may have losses up to its loss error above the exact ones (read further right).
    return replace(measure, loss_error=rounds * max(o.loss_error for _, run_options, _ in runs for o in run_options) * (1.0 + 1e-12)), strategies


class StrategyWitnesses:
    """Lower witnesses of single adaptive strategies over one block (:func:`pldshuffle.adaptive.strategy_measure`),
    built on demand: from a start budget, the strategy playing the adaptive lower end's first-run choices
    (kept on the budgets ``-budgets .. budgets`` of the lattice ``step`` times the ledger's ``spacing``)
    over the witnesses' directions merged onto that lattice, placed on the ledger's lattice.

    Unlike the block's adaptive lower measure (a maximum over strategies), each is one strategy's PLD,
    which looks only at the block's own outputs: it composes with other entries in any order.  Cost: per
    start ``rounds × (options in play + 1)`` FFTs of ~``4·budgets`` points, within ``_STRATEGY_WORK`` for
    all starts together; ``rounds × (2·budgets + 1)`` choices held (int16).
    """

    def __init__(self, directions: list, choices: NDArray[np.int16], spacing: float, step: int, budgets: int, fft_backend: str) -> None:
        self._directions, self._choices, self._spacing, self._step = directions, choices, spacing, step
        self._budgets, self._backend = budgets, fft_backend
        self._options: list[LatticeDirection] | None = None
        self._built: dict[int, LatticeDirection] = {}
        self._work = 0.0

    def measure(self, budget: float) -> LatticeDirection | None:
        """The witness of the strategy aiming at ``budget`` (the nearest kept budget; built once each), or
        None once the starts built have used up ``_STRATEGY_WORK``."""
        step = self._spacing * self._step
        start = int(min(max(round(budget / step), -self._budgets), self._budgets)) if math.isfinite(budget) else self._budgets
        if start not in self._built:
            work = self._choices.shape[0] * len(self._directions) * 4.0 * self._budgets
            if self._work + work > _STRATEGY_WORK:
                return None
            self._work += work
            if self._options is None:
                self._options = [lower_direction(d.discretize(step)) for d in self._directions]
            m = strategy_measure(self._options, self._choices, step, self._budgets, start, self._backend)
            self._built[start] = _on_finer_lattice(m, self._step) if self._step > 1 else m
        return self._built[start]


def _lower_gap(values: NDArray[np.float64], factor: int, upper: LatticeDirection, spacing: float) -> float:
    """Largest relative gap of ε(δ), δ ∈ [1e-15, 1e-2], between the ``upper`` measure's profile and the
    lower ``values`` at the points ``-hi .. hi`` of the lattice ``factor`` times coarser than ``spacing``
    (ε read at those points: this only decides whether to refine)."""
    hi = (values.size - 1) // 2
    points = np.arange(-hi, hi + 1)
    return _epsilon_gain(profile_at(upper, points * factor, spacing), values, points.astype(np.float64), largest=1e-2)


def _strategy_values(
    options: list[LatticeDirection], rounds: int, spacing: float, hi: int, tilts: list[float], fft_backend: str,
    usage: NDArray[np.float64] | None = None, progress: Callable[[float], None] | None = None,
    choices: NDArray[np.int16] | None = None, record: NDArray[np.intp] | None = None,
) -> NDArray[np.float64]:
    """Lower bounds on the value of a realisable adaptive strategy over ``options`` at the lattice points
    ``-hi .. hi`` (:func:`pldshuffle.adaptive.adaptive_lower_profile`, which also records its ``choices``
    at ``record``), shifted right by the options' rounding offsets where their certificate allows (see
    :func:`_adaptive_lower`; the profile bounds the value of the options' own lattice losses, which the
    shift needs), then raised to the exact pairs' floor (:func:`~pldshuffle.adaptive.value_floor`, which
    must not be shifted), never negative."""
    values = adaptive_lower_profile(options, rounds, spacing, -hi, hi, tilts, fft_backend, usage, progress, choices, record)
    mean = max(o.offset_mean for o in options) * rounds
    steps = np.arange(min(int(math.ceil(mean)) + 2, values.size))
    penalty = rounding_penalty(np.max([o.offset_log_mgf for o in options], axis=0) * rounds, steps)
    shifted = values.copy()
    for k in steps[1:]:
        np.maximum(shifted[k:], values[:-k] - penalty[k], out=shifted[k:])
    floor = value_floor(options, spacing, own_losses=False)(rounds, np.arange(-hi, hi + 1) * spacing)
    return np.maximum(np.maximum(shifted, floor), 0.0)


def _from_profile_below(target: NDArray[np.float64], total: float, lo: int, spacing: float) -> LatticeDirection:
    """A lattice measure (no mass at +∞) whose profile is at most ``target`` (convex, non-increasing,
    sampled at ``z_lo .. z_{lo+size}``) at every lattice point, and at most ``total`` at ``α = 0``: the
    inversion of :func:`_from_profile`, lowered where rounding broke monotonicity and scaled down by the
    largest ratio of the rebuilt profile to the target."""
    size = target.size - 1
    # Mass at or above z_j must not increase with j; lowering it only lowers the profile.
    above = np.minimum.accumulate(np.maximum(_mass_at_or_above(target, total, spacing), 0.0))
    zero = np.flatnonzero(target <= 0.0)
    if zero.size:  # the profile vanishes from there on: no mass at or above that point
        above[zero[0] + 1 :] = 0.0
    masses = -np.diff(above)
    rebuilt, _ = hockey_stick_profile(masses, spacing)
    material = rebuilt[:-1] > 0.0
    ratio = float(np.max(rebuilt[:-1][material] / np.maximum(target[:-1][material], 1e-320))) if np.any(material) else 1.0
    scale = min(1.0 / max(ratio, 1.0), 1.0) * (1.0 - 8.0 * _U * (size + 8))
    return LatticeDirection(lo, masses * scale, 0.0)


def _convex_minorant_of_min(
    first: list[LatticeDirection], second: list[LatticeDirection], spacing: float, *, coarsening: int = 1
) -> LatticeDirection:
    """A lattice measure whose profile is the greatest convex minorant (in ``α = e^x``) of ``min(h_1, h_2)``,
    ``h_1`` and ``h_2`` the pointwise maxima of the profiles of ``first`` and of ``second``; ``first`` may be
    on a lattice ``coarsening`` times coarser (each is embedded in turn, not all at once).

    If a convex profile ``D`` (e.g. a family's envelope) lies below both ``h_1`` and ``h_2``, it lies below
    this one: on each lattice interval ``D`` is below its chord, hence below the interpolation of
    ``min(h_1, h_2)`` at the lattice points, and ``D`` is convex.  Left of every support each profile is
    linear in ``α`` from its total mass at ``α = 0``, so ``D`` is below the chord from ``(0, min totals)``,
    which enters the hull as a point.  O(range/Δ) per direction.
    """
    ends = [(d.start * coarsening, (d.start + d.masses.size - 1) * coarsening + 1) for d in first]
    ends += [(d.start, d.start + d.masses.size) for d in second]
    lo = min(a for a, _ in ends)
    size = max(b for _, b in ends) + 1 - lo
    embedded = (_on_finer_lattice(d, coarsening) if coarsening > 1 else d for d in first)
    low = np.minimum(_max_profile(embedded, lo, size, spacing), _max_profile(second, lo, size, spacing))
    total = min(max(d.finite_mass + d.infinity for d in first), max(d.finite_mass + d.infinity for d in second))
    return _convex_minorant(low, total, lo, spacing)


def _convex_minorant(values: NDArray[np.float64], total: float, lo: int, spacing: float) -> LatticeDirection:
    """The lattice measure of the greatest convex minorant (in ``α``) of the points ``(0, total)`` and
    ``(e^{z_j}, values_j)``, ``j = lo .. lo + size``: it dominates every convex profile below those points
    (see :func:`_convex_minorant_of_min`).  O(range/Δ) (monotone-chain lower hull).
    """
    # The hull is at most ``values``; rounding may put it a hair above, which only loosens (and is safe).
    return _from_profile(_greatest_convex_minorant(values, total, lo, spacing) * (1.0 + 16.0 * _U), total, lo, spacing)


class _HullOutOfRange(ArithmeticError):
    """The points' ``α = e^z`` span more than doubles hold (losses more than ``2·_HULL_EXP`` apart): the
    callers then fall back to a bound that needs no hull."""


def _greatest_convex_minorant(values: NDArray[np.float64], total: float, lo: int, spacing: float) -> NDArray[np.float64]:
    """At ``z_j``, ``j = lo .. lo + size``, the greatest convex function of ``α = e^x`` lying below the
    points ``(0, total)`` and ``(e^{z_j}, values_j)`` (monotone-chain lower hull, O(size)).

    The α axis is scaled by ``e^{-s}``, ``s = max(0, z_top - _HULL_EXP)`` (a positive scaling keeps the hull
    and its values), so losses up to ``_HULL_EXP`` above the lowest one are exact; beyond, ``e^z`` would
    overflow to ``inf`` (and the hull to nonsense: ε ≈ 709.8 for a ledger whose ε is 960) or underflow onto
    ``(0, total)``, and :class:`_HullOutOfRange` is raised instead.
    """
    z = (lo + np.arange(values.size)) * spacing
    shift = max(0.0, float(z[-1]) - _HULL_EXP)
    if float(z[0]) - shift < -_HULL_EXP:
        raise _HullOutOfRange(f"losses from {float(z[0]):.4g} to {float(z[-1]):.4g}")
    alpha = np.concatenate([[0.0], np.exp(z - shift)])
    value = np.concatenate([[total], values])
    hull = lower_hull(alpha, value)
    return np.interp(alpha[1:], alpha[hull], value[hull])


def _lower_witnesses(pairs: tuple[PrivacyLossPair, ...], spacing: float) -> tuple[tuple[LatticeDirection, ...], ...]:
    """The first ``MAX_WITNESSES`` realisable pairs as lower lattice measures (both orders each; :func:`lower_direction`)."""
    return tuple(tuple(lower_direction(d.discretize(spacing)) for d in p.directions) for p in pairs[:MAX_WITNESSES])


def _cover(
    family: PairFamily,
    lattice: _Lattice | _Exact,
    *,
    max_cells: int = _MAX_CELLS,
    tolerance: float = _CELL_TOLERANCE,
    realise_within: float | None = None,
    max_bytes: float = math.inf,
    report: Callable[[str], None] | None = None,
) -> tuple[list[PrivacyLossPair], tuple[PrivacyLossPair, ...], tuple[PrivacyLossPair, ...]]:
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
        Cell(make_upper=(lambda p=p: p), label="member") for p in family.upper
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

    def evaluate(cell: Cell, settled: Callable[[NDArray[np.float64]], bool] = lambda up: False):
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
    return pairs + profiles + lattice.held_bytes()


def _pairs_bytes(pairs: Iterable[PrivacyLossPair]) -> int:
    """Bytes of the distinct pairs: their support arrays and the sums they have cached."""
    held = {id(p): p for p in pairs}
    return sum(d.held_bytes for p in held.values() for d in p.directions)


def _witnesses(
    realised: list[tuple[PrivacyLossPair, NDArray[np.float64]]], probe: NDArray[np.int64], lo: int
) -> tuple[tuple[PrivacyLossPair, ...], tuple[PrivacyLossPair, ...]]:
    """``(witnesses, members)``: realisable members for the lower bound, and every realised member (they
    serve the exact single-round evaluation).

    Greedy cover of the realisable envelope: first the member attaining it at ε = 0 (it drives many-round
    compositions) and the one attaining it at the largest loss any member reaches (its tail drives the
    composition's far tail: 2RR n = 3000, ε0 = 8, 200 rounds, δ = 1e-12: the lower end was 894.5 without
    the dataset m = 0, whose composition alone reaches 950.4), then, up to ``MAX_WITNESSES``, the member
    that raises the mean log-ratio of the witnesses' envelope to the realisable one most, over the lattice
    points where that is material (≥ 1e-15), until it is within ``_WITNESS_TOLERANCE`` everywhere there.
    """
    stack = np.array([prof for _, prof in realised])
    best = stack.max(axis=0)
    zero = min(int(np.searchsorted(probe, -lo)), best.size - 1)
    picks = [int(np.argmax(stack[:, zero]))]
    reached = np.flatnonzero(best > 0.0)
    if reached.size:
        tail = int(np.argmax(stack[:, reached[-1]]))
        picks += [tail] if tail not in picks else []
    material = best >= 1e-15
    with np.errstate(divide="ignore"):
        log_ratio = np.log(stack[:, material]) - np.log(best[material])  # ≤ 0, -inf where a member is 0
    cover = log_ratio[picks[0]]
    while len(picks) < MAX_WITNESSES and cover.size and cover.min() < math.log1p(-_WITNESS_TOLERANCE):
        score = np.mean(np.maximum(cover, log_ratio).clip(min=-50.0), axis=1)
        score[picks] = -math.inf
        picks.append(int(np.argmax(score)))
        cover = np.maximum(cover, log_ratio[picks[-1]])
    members = tuple(p for p, _ in realised)
    return tuple(members[i] for i in picks), members


def _composed_directions(pair: PrivacyLossPair, spacing: float, count: int, options: dict) -> list[LatticeDirection]:
    """Dominating lattice measures of the ``count``-fold composition of one member, both orders."""
    return CertifiedPLD.from_pair(pair, spacing, **options).self_compose(count).dominating_measures()


def _on_finer_lattice(direction: LatticeDirection, factor: int) -> LatticeDirection:
    """The same measure on the lattice ``factor`` times finer (masses at every ``factor``-th point), with its
    loss error (its rounding-offset certificate, in steps of the coarser lattice, is not carried)."""
    fine = np.zeros((direction.masses.size - 1) * factor + 1)
    fine[::factor] = direction.masses
    return LatticeDirection(direction.start * factor, fine, direction.infinity, loss_error=direction.loss_error)
