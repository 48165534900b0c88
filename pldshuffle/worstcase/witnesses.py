"""Lower ends of worst cases over datasets: realisable witnesses, adaptive lower measures and strategies.

* :func:`_witnesses` -- the realisable members that attain the lower envelope most often;
* :func:`_adaptive_lower` -- one block's adaptive lower measure (attained at each ε by some realisable
  adaptive strategy);
* :class:`StrategyWitnesses` -- single realisable adaptive strategies, composable like fixed pairs;
* convex minorants that turn a lower profile into a lattice measure below it.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import replace

from typing import cast

import numpy as np
from numpy.typing import NDArray

from .._kernels import UNIT_ROUNDOFF as _U, hockey_stick_profile, lower_hull
from .._reporting import build_progress
from .recursion import adaptive_lower_profile, strategy_measure, value_floor
from ..pld.certified import CertifiedPLD
from ..pld.lattice import LatticeDirection, lower_direction, profile_at, rounding_penalty
from ..pld import PrivacyLossPair
from .envelope import _from_profile, _mass_at_or_above, _max_profile

#: The adaptive lower end's window holds at most this many points (its lattice is coarsened to fit; n = 1000,
#: ε0 = 8, 5 rounds, δ = 0.3: lower end 30.457 → 30.637 with 2^16 instead of 2^15).
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
#: Largest |loss| offset whose e^z the convex-minorant hulls use (doubles hold e^±709).
_HULL_EXP = 700.0
#: Lower witnesses of a family's terms (at most).
MAX_WITNESSES = 6
#: Strategy witnesses (:class:`StrategyWitnesses`): the first run's choices are kept on at most
#: ``_STRATEGY_POINTS`` budgets (2RR n = 30, ε0 = 3.37, 16 rounds: the strategy aiming at ε(1e-2) attains δ
#: 4.4 % below the adaptive lower end's on 2^13, 0.07 % on 2^15), and in at most ``_STRATEGY_BYTES``.
_STRATEGY_POINTS = 2**15
_STRATEGY_BYTES = 2**25
#: A block's strategy witnesses together play at most this much work (rounds × options × FFT length; 1e8
#: took 0.8 s): further aims are left out (130 rounds of 2RR n = 20: 0.7–1.0 s per witness).
_STRATEGY_WORK = 1e9
#: The witnesses stop when their envelope is this close (relative) to the realisable one.
_WITNESS_TOLERANCE = 1e-3


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

    The strategies are those of :func:`pldshuffle.worstcase.recursion.adaptive_lower_profile`, in up to two runs over
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

    Options are the witnesses *merged* onto the lattice (:mod:`pldshuffle.pld.discretize`): merged outcomes are
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
    """Lower witnesses of single adaptive strategies over one block (:func:`pldshuffle.worstcase.recursion.strategy_measure`),
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
    ``-hi .. hi`` (:func:`pldshuffle.worstcase.recursion.adaptive_lower_profile`, which also records its ``choices``
    at ``record``), shifted right by the options' rounding offsets where their certificate allows (see
    :func:`_adaptive_lower`; the profile bounds the value of the options' own lattice losses, which the
    shift needs), then raised to the exact pairs' floor (:func:`~pldshuffle.worstcase.recursion.value_floor`, which
    must not be shifted), never negative."""
    values = adaptive_lower_profile(options, rounds, spacing, -hi, hi, tilts, fft_backend, usage, progress, choices, record)
    mean = max(o.offset_mean for o in options) * rounds
    steps = np.arange(min(int(math.ceil(mean)) + 2, values.size))
    log_mgfs = [o.offset_log_mgf for o in options if o.offset_log_mgf is not None]  # options are merged witnesses: all carry one
    penalty = rounding_penalty(np.max(log_mgfs, axis=0) * rounds, steps.astype(np.float64))
    shifted = values.copy()
    for k in steps[1:]:
        np.maximum(shifted[k:], values[:-k] - penalty[k], out=shifted[k:])
    floor = value_floor(options, spacing, own_losses=False)(rounds, cast(NDArray[np.float64], np.arange(-hi, hi + 1) * spacing))
    return cast(NDArray[np.float64], np.maximum(np.maximum(shifted, floor), 0.0))


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
    return cast(NDArray[np.float64], np.interp(alpha[1:], alpha[hull], value[hull]))


def _lower_witnesses(pairs: tuple[PrivacyLossPair, ...], spacing: float) -> tuple[tuple[LatticeDirection, ...], ...]:
    """The first ``MAX_WITNESSES`` realisable pairs as lower lattice measures (both orders each; :func:`lower_direction`)."""
    return tuple(tuple(lower_direction(d.discretize(spacing)) for d in p.directions) for p in pairs[:MAX_WITNESSES])


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
