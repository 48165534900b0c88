"""Certified worst case over datasets *and orders* chosen round by round (``docs/mathematics.md#worst-case``).

A per-round dominating pair of a family must dominate both orders of every member, so its profile is at
least their maximum, and composing it is loose when the family is asymmetric (shuffled binary randomized
response: 0.4 % in ε at ``n = 10^4``, 64 rounds).  This module bounds the *adaptive* worst case of a block
of ``b`` rounds directly.  With option measures ``o`` (each a lattice measure dominating a group of the
family's pairs in one order), every adversary who picks an option each round after seeing the earlier
outputs has hockey-stick profile at most ``G_b``, where

.. math::  G_0(x) = (1-e^x)_+,\\qquad G_j(x) = \\max_o \\mathbb E_o[G_{j-1}(x-L)]

(``L = +∞`` contributes ``G(-∞) = 1``).  Every ``G_j`` is non-increasing and convex in ``α = e^x`` (a
maximum of mixtures of hockey sticks), so a profile dominating an option dominates it inside the
expectation, and a lattice measure whose profile interpolates upper bounds on ``G_b`` dominates the
block.

On the lattice the recursion needs ``G_{j-1}`` only at lattice points.  Write ``G = (1-e^x)_+ + R``:
``E_o[(1-e^{x-L})_+]`` is the option's own profile (exact, no FFT), and ``R`` -- a bump around the
bulk of the composition -- is correlated with each option by FFT in a frame tilted by ``e^{θx}``, with
the a-priori round-off bound of Higham (*Accuracy and Stability*, Thm 24.2) propagated in 2-norm and
mapped back by ``e^{-θx}``, so the error is relative near the saddle point of each tilt.  Outside the
window ``[z_lo, z_hi]``: left of it ``R(x) ≤ R(z_lo)e^{x-z_lo}`` (the chord of the convex ``G`` to its
value ``≤ 1`` at ``α = 0``), right of it a caller's bound ``top(x, j)`` (e.g. a Chernoff bound of the per-round envelope
composed ``j`` times).  Each round takes, at every point, the minimum over tilts of the maximum over options,
then the running minimum (``G`` is non-increasing).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import numpy as np
from numpy.typing import NDArray

from .._kernels import UNIT_ROUNDOFF as _U, max_shifted_sum
from ..pld.fft import fast_size, get_backend, map_row_ranges
from ..pld.lattice import LatticeDirection
from ._correlation import _correlation_error, _kernels, _largest, _norms, _own_profiles, _summed_correlation_error

__all__ = ["adaptive_lower_profile", "adaptive_profile", "adaptive_window_size", "strategy_measure", "value_floor"]

#: Points where the bound is below this do not count towards an option's usage (immaterial tails).
_USAGE_FLOOR = 1e-30
#: Largest exponent of a tilt factor ``e^{±θx}`` a tilt may need on the window (else it is skipped).
_MAX_EXPONENT = 600.0


def adaptive_window_size(options: Sequence[LatticeDirection], lo: int, hi: int) -> int:
    """FFT length of the recursion on lattice indices ``lo .. hi`` (the window plus the options' reach)."""
    first, last = _reads(options, lo, hi)
    return fast_size(last - first + 1)


def _reads(options: Sequence[LatticeDirection], lo: int, hi: int) -> tuple[int, int]:
    """First and last lattice index of the buffer: every index the correlations for ``lo .. hi`` read
    (``j - s`` over every support) and the window itself, which the buffer also holds (options whose finite
    losses all have one sign, e.g. a pair whose other side has mass where this one has none, read only
    beyond one end of it)."""
    return min(lo, lo - max(o.start + o.masses.size - 1 for o in options)), max(hi, hi - min(o.start for o in options))


class _Window:
    """The recursion's points ``z_lo .. z_hi``, its FFT buffer (``first ..``, of fast length ``size``) with the
    extensions ``left`` points below and ``right`` above, and the tilts it can afford."""

    def __init__(self, options: Sequence[LatticeDirection], spacing: float, lo: int, hi: int, fft_backend: str, rounds: int, tilts: int) -> None:
        if not lo < 0 <= hi:
            raise ValueError(f"the window must contain 0 and negative points; got lo={lo}, hi={hi}")
        first, last = _reads(options, lo, hi)
        self.size = fast_size(last - first + 1)
        # Each round and frame transforms the buffer and correlates it with every option.
        self.backend = get_backend(fft_backend, self.size, transforms=rounds * (tilts + 1) * (len(options) + 1))
        self.x = (lo + np.arange(hi - lo + 1, dtype=np.float64)) * spacing
        self.x_ext = (first + np.arange(self.size, dtype=np.float64)) * spacing  # past ``last``: padding (zeros)
        self.left, self.right = lo - first, last - hi
        self.exact_base = np.where(self.x < 0.0, -np.expm1(np.minimum(self.x, 0.0)), 0.0)  # (1 - e^x)_+
        self._reach = max(
            abs(self.x_ext[0]), abs(self.x_ext[-1]), max(max(abs(o.start), abs(o.start + o.masses.size)) for o in options) * spacing
        )

    def thetas(self, tilts: Sequence[float]) -> list[float]:
        """θ = 0 and the tilts whose factors stay below ``e^600`` on the buffer."""
        return [theta for theta in sorted({0.0, *map(float, tilts)}) if theta * self._reach <= _MAX_EXPONENT]


def adaptive_profile(
    options: Sequence[LatticeDirection],
    rounds: Sequence[int],
    spacing: float,
    lo: int,
    hi: int,
    top: Callable[[NDArray[np.float64], int], NDArray[np.float64]],
    tilts: Sequence[float],
    fft_backend: str = "auto",
    infinity: float = 0.0,
    usage: NDArray[np.float64] | None = None,
    progress: Callable[[float], None] | None = None,
) -> list[NDArray[np.float64]]:
    """Upper bounds on ``G_b(z_j)`` (module notes) at the lattice points ``j = lo .. hi``, one array for each
    ``b`` in ``rounds``.

    Parameters
    ----------
    options : sequence of LatticeDirection
        Measures on the lattice ``z_j = j·Δ``; every choice the adversary may make in a round is dominated
        (profile at every x) by one of them.
    rounds : sequence of int
        Round counts ``b >= 1`` (the recursion runs once, to the largest: its intermediate rounds are the
        bounds for fewer rounds).
    spacing : float
        Δ.
    lo, hi : int
        Window, ``lo < 0 <= hi``.
    top : callable
        ``top(x, j)``: bounds on ``G_j(x) - j·I`` at points ``x > z_hi`` (``I`` below), called with
        ``j = 0 .. max(rounds) - 1``, e.g. a Chernoff bound on the finite losses of ``j`` rounds; they should
        decay faster than ``e^{-θx}`` for the largest tilt, or that tilt's error grows (a bound for all
        rounds at once, loose at early ones, inflates every tilted frame's round-off there).
    tilts : sequence of float
        Tilts ``θ >= 0`` of the FFT frames (0 is always used; a tilt whose factors would exceed
        ``e^600`` on the window is skipped).
    fft_backend : str
        As :func:`pldshuffle.pld.fft.get_backend`.
    infinity : float
        ``I``, at least every option's mass at ``+∞`` (raised to theirs if lower).
    usage : ndarray, optional
        One entry per option, incremented by the number of window points (bound above ``_USAGE_FLOOR``)
        at which the option attains the bound, summed over the rounds: which options the adversary's best
        choice uses (:func:`pldshuffle.worstcase.blocks._adaptive_terms` splits the groups used most).
    progress : callable, optional
        Called after each round with the fraction of the rounds done.

    The masses at ``+∞`` are carried as a constant: ``G_j ≤ F_j + j·I`` with ``F_j`` the recursion over the
    finite parts (``E_o[G(x-L)] ≤ E_o[F(x-L); L < ∞] + (j-1)·I + I``), since a constant in the tilted frame
    would grow like ``e^{θx}``.

    Cost: ``max(rounds) × tilts × (options + 1)`` real FFTs of length :func:`adaptive_window_size`, plus the
    options' spectra (kept: ``tilts × options`` half-spectra).  Each frame's options are correlated in
    parts on :data:`pldshuffle.pld.fft.WORKERS` threads (:func:`pldshuffle.pld.fft.map_row_ranges`), whose maxima
    merge as one pass would (:func:`_largest`).
    """
    wanted = list(rounds)
    if not wanted or min(wanted) < 1:
        raise ValueError(f"rounds must be >= 1, got {rounds!r}")
    win = _Window(options, spacing, lo, hi, fft_backend, max(wanted), len(tilts))
    x, x_ext, size, backend, left, right = win.x, win.x_ext, win.size, win.backend, win.left, win.right
    base = win.exact_base * (1.0 - 4.0 * _U)  # a lower bound on (1 - e^x)_+
    upper = win.exact_base * (1.0 + 4.0 * _U)  # G_0, rounded up
    own = _own_profiles(options, lo, hi, spacing, 1.0)
    infinity = max(infinity, *(o.infinity for o in options))
    frames = []
    for theta in win.thetas(tilts):
        kernels = _kernels(options, theta, size, spacing, backend, upper=True)
        # Own profiles in the tilted frame: the maximum over options is taken there, then untilted once.
        tilt = np.exp(theta * x)
        frames.append((theta, kernels, [o * tilt for o in own]))
    kept: dict[int, NDArray[np.float64]] = {}
    for j in range(1, max(wanted) + 1):
        rest = np.maximum((upper - base) + 2.0 * _U * upper, 0.0)  # ≥ G - (1 - e^x)_+
        ext = np.zeros(size)
        ext[left : left + rest.size] = rest
        # Left of the window: R(x) ≤ R(z_lo)·e^{x - z_lo}; right of it: R = G_{j-1} ≤ top(x, j - 1).
        ext[:left] = rest[0] * np.exp((np.arange(left) - left) * spacing) * (1.0 + 4.0 * _U)
        ext[left + rest.size : left + rest.size + right] = top(x_ext[left + x.size : left + x.size + right], j - 1)
        best = np.full(x.size, np.inf)
        # The option attaining ``best`` (-1: none above 0), tracked only where ``usage`` is asked for.
        argbest = np.full(x.size if usage is not None else 0, -1, dtype=np.int64)
        for theta, kernels, own_tilted in frames:
            w = ext * np.exp(theta * x_ext) * (1.0 + 4.0 * _U) if theta else ext
            spectrum, norms = backend.rfft(w), _norms(w)

            def correlate(rows: range) -> tuple[NDArray[np.float64], NDArray[np.int64]]:
                worst = np.zeros(x.size)
                chosen = np.full(argbest.size, -1, dtype=np.int64)  # empty: the kernel tracks nothing
                for index, out in backend.inverse_products(spectrum, kernels.spectra, size, rows):
                    err = _correlation_error(norms, kernels.norm1[index], kernels.error[index], size)
                    # Output index t = j - s_o - first holds Σ_i k_i w(j - s_o - i) (no wrap: t ≥ support - 1),
                    # within ``err`` of the exact correlation.
                    max_shifted_sum(worst, out, left - kernels.start[index], own_tilted[index], err, chosen, index)
                return worst, chosen

            worst, chosen = _largest(map_row_ranges(len(options), correlate, size))
            # The slack covers the tilt and untilt factors and the two sums of each value (a few ulps).  Far
            # from this frame's saddle point its round-off bound, untilted, may overflow: +inf, no bound there
            # (e^{-θx} ≥ e^{-600} > 0, so never NaN).
            with np.errstate(over="ignore"):
                value = worst * np.exp(-theta * x) * (1.0 + 16.0 * _U)
            if usage is not None:
                improved = value < best
                argbest[improved] = chosen[improved]
            np.minimum(best, value, out=best)
        if usage is not None:
            counted = argbest[(argbest >= 0) & (best > _USAGE_FLOOR)]
            usage += np.bincount(counted, minlength=usage.size)[: usage.size]
        upper = np.minimum.accumulate(np.minimum(best, 1.0))
        if progress is not None:
            progress(j / max(wanted))
        if j in wanted:
            # (j-1)·I is carried through an option's finite mass, at most 1 + MASS_RTOL: the 1e-6 covers it.
            kept[j] = np.minimum(upper + j * infinity * (1.0 + 1e-6), 1.0)
    return [kept[j] for j in wanted]


def adaptive_lower_profile(
    options: Sequence[LatticeDirection],
    rounds: int,
    spacing: float,
    lo: int,
    hi: int,
    tilts: Sequence[float],
    fft_backend: str = "auto",
    usage: NDArray[np.float64] | None = None,
    progress: Callable[[float], None] | None = None,
    choices: NDArray[np.int16] | None = None,
    record: NDArray[np.intp] | None = None,
) -> NDArray[np.float64]:
    """Lower bounds, at ``j = lo .. hi``, on the value ``V_rounds(z_j)`` of one *realisable* adaptive
    strategy when every loss is exactly on the lattice (the options are realisable pairs merged or rounded
    down onto it, :mod:`pldshuffle.pld.discretize`).

    ``V_0 = (1-e^x)_+`` and ``V_j(x) = E_{o*}[V_{j-1}(x-L)]`` where the strategy picks, at each remaining
    budget ``x``, the option ``o*`` whose certified lower bound is largest (the computed values are lower
    bounds on what that choice achieves, by induction).  Masses at ``+∞`` are left out (they only add).
    Outside the window ``V_j ≥ 0`` on the right and, on the left and as a floor everywhere, ``V_j`` is at
    least :func:`value_floor` of the options' own losses.  The values are bounds for those lattice losses
    (not only for the exact ones above them), so a caller may shift them by the rounding offsets.  The FFT
    part is bounded as in :func:`adaptive_profile`, subtracted instead of added, with every rounding taken
    downward.  ``usage`` (one entry per option), if given, counts as in :func:`adaptive_profile` the points and rounds at which
    each option is the strategy's choice, and ``progress`` hears of each round done, as in
    :func:`adaptive_profile`.  ``choices`` (shape ``(rounds, record.size)``), if given, receives in row
    ``j - 1`` the strategy's choice with ``j`` rounds left at the window positions ``record`` (-1 where no
    option's bound exceeds the floor that holds for every choice): the strategy
    :func:`strategy_measure` plays.  Cost as :func:`adaptive_profile`.
    """
    win = _Window(options, spacing, lo, hi, fft_backend, rounds, len(tilts))
    x, x_ext, size, backend, left = win.x, win.x_ext, win.size, win.backend, win.left
    base = win.exact_base * (1.0 + 4.0 * _U)  # an upper bound on (1 - e^x)_+
    value = win.exact_base * (1.0 - 4.0 * _U)  # V_0, rounded down
    own = _own_profiles(options, lo, hi, spacing, -1.0)
    frames = [(theta, _kernels(options, theta, size, spacing, backend, upper=False)) for theta in win.thetas(tilts)]
    x_left = win.x_ext[:left]
    floor_at = value_floor(options, spacing, own_losses=True)
    for j in range(1, rounds + 1):
        rest = (value - base) - 2.0 * _U * np.abs(value)  # ≤ V - (1 - e^x)_+
        ext = np.zeros(size)
        ext[left : left + rest.size] = rest
        # V_{j-1} - (1 - e^x) there: at least the floor less 1 - e^x, and at least e^x - 1 (V ≥ 0).
        gone = np.expm1(x_left) * (1.0 + 4.0 * _U)
        floor = floor_at(j - 1, x_left)
        ext[:left] = np.maximum(floor + gone - 2.0 * _U * (np.abs(floor) + 1.0), gone)
        best = np.full(x.size, -np.inf)
        chosen = np.full(x.size if usage is not None or choices is not None else 0, -1, dtype=np.int64)
        for theta, kernels in frames:
            tilt = np.exp(theta * x_ext)
            w = ext * np.where(ext >= 0.0, tilt * (1.0 - 4.0 * _U), tilt * (1.0 + 4.0 * _U)) if theta else ext
            spectrum, norms = backend.rfft(w), _norms(w)
            untilt = np.exp(-theta * x)

            def correlate(rows: range) -> tuple[NDArray[np.float64], NDArray[np.int64]]:
                largest = np.full(x.size, -np.inf)
                chosen_here = np.full(chosen.size, -1, dtype=np.int64)
                for index, out in backend.inverse_products(spectrum, kernels.spectra, size, rows):
                    shift = kernels.start[index]
                    low = out[left - shift : left - shift + x.size] - _correlation_error(norms, kernels.norm1[index], kernels.error[index], size)
                    with np.errstate(over="ignore"):  # -inf far from the frame's saddle point: no bound there
                        low = low * np.where(low >= 0.0, untilt * (1.0 - 16.0 * _U), untilt * (1.0 + 16.0 * _U))
                    candidate = own[index] + low
                    candidate -= 4.0 * _U * np.abs(candidate)
                    if chosen_here.size:
                        chosen_here[candidate > largest] = index
                    np.maximum(largest, candidate, out=largest)
                return largest, chosen_here

            frame_best, frame_chosen = _largest(map_row_ranges(len(options), correlate, size))
            if chosen.size:
                raised = frame_best > best
                chosen[raised] = frame_chosen[raised]
            np.maximum(best, frame_best, out=best)
        floor = floor_at(j, x)
        if usage is not None:
            counted = chosen[(best >= floor) & (best > _USAGE_FLOOR)]
            usage += np.bincount(counted[counted >= 0], minlength=usage.size)[: usage.size]
        if choices is not None:
            choices[j - 1] = np.where(best[record] >= floor[record], chosen[record], -1)
        value = np.maximum(np.maximum(best, floor), 0.0)
        if progress is not None:
            progress(j / rounds)
    result: NDArray[np.float64] = value
    return result


def value_floor(
    options: Sequence[LatticeDirection], spacing: float, *, own_losses: bool
) -> Callable[[int, NDArray[np.float64]], NDArray[np.float64]]:
    """The function ``(j, x) -> T^j - e^x·W^j``: a lower bound at the budgets ``x`` on the value, ``j``
    rounds left, of every strategy over ``options`` (``V_j(x) ≥ E[1 - e^{x - ΣL}]`` over the finite losses),
    ``T`` the smallest finite mass of an option and ``W`` the largest ``E[e^{-L}]`` over its finite losses
    (both computed once, here).

    ``own_losses=False`` bounds the value of the exact pairs the options stand for: their ``W`` is at most 1
    (``E_P[e^{-L}]`` is a Q-mass).  ``own_losses=True`` bounds the value of the options' own lattice losses,
    which lie up to a step below the exact ones, so that ``W`` may reach ``e^Δ``: that is the floor a
    recursion on those losses may use when its values are later shifted by the rounding offsets (the exact
    pairs' floor, shifted, can exceed the exact value: 2RR n = 100, ε0 = 1, 3 rounds on a lattice of 1 gave a
    lower δ(0) of 0.61 for an exact 0.073).  ``-inf`` where ``e^x·W^j`` overflows.  O(options' support) here,
    O(x.size) per call.
    """
    smallest = min(float(o.masses.sum()) for o in options) * (1.0 - _U * (max(o.masses.size for o in options) + 4))
    log_weight = max(_log_exp_moment(o, spacing) for o in options) if own_losses else 0.0

    def floor(rounds: int, x: NDArray[np.float64]) -> NDArray[np.float64]:
        exponent = 0.0
        if own_losses and rounds:
            exponent = rounds * log_weight + 4.0 * _U * rounds * (abs(log_weight) + 1.0) if math.isfinite(log_weight) else log_weight
        if exponent == -math.inf:  # no option has a finite loss: T = 0 and nothing to subtract
            grown = np.zeros(np.shape(x))
        else:
            with np.errstate(over="ignore"):  # e^x = inf past x ≈ 709: the floor is then -inf, i.e. unused
                grown = np.exp(x + exponent) * (1.0 + 4.0 * _U + 2.0 * _U * (np.abs(x) + abs(exponent)))
        result: NDArray[np.float64] = smallest**rounds * (1.0 - 4.0 * _U * (rounds + 1)) - grown
        return result

    return floor


def _log_exp_moment(option: LatticeDirection, spacing: float) -> float:
    """An upper bound on ``log E[e^{-L}]`` over an option's finite lattice losses (``-inf`` if it has none)."""
    support = np.flatnonzero(option.masses > 0.0)
    if support.size == 0:
        return -math.inf
    losses = (option.start + support) * spacing
    terms = np.log(option.masses[support]) - losses
    top = float(terms.max())
    # Each term is off by a few ulps of |log m| + |L|, and the sum by its length.
    slack = 4.0 * _U * (float(np.max(np.abs(terms))) + float(np.max(np.abs(losses))) + support.size + 4.0)
    return top + math.log(float(np.sum(np.exp(terms - top)))) + slack


def strategy_measure(
    options: Sequence[LatticeDirection], choices: NDArray[np.int16], spacing: float, hi: int, start: int, fft_backend: str = "auto"
) -> LatticeDirection:
    """A lower witness of one realisable adaptive strategy over ``rounds = choices.shape[0]`` rounds: the
    P-masses of its summed lattice losses, composable like any fixed pair's (its rounds look only at their
    own outputs, so it may sit anywhere among other mechanisms' rounds).

    The strategy starts at the budget ``z_start`` (``start`` in ``-hi .. hi``); with ``j`` rounds left and
    budget ``z_b`` (``z_start`` less the lattice losses so far) it plays ``options[choices[j-1, b + hi]]``
    (option 0 where that entry is -1: any choice is a strategy), ``b`` clamped to ``-hi .. hi``.  The
    budget is a function of the outputs seen, since a merged option's lattice loss is (:mod:`pldshuffle.pld.discretize`).
    Budgets below ``-hi - 1`` are kept at ``-hi - 1`` (their losses rounded down, which only lowers δ) and
    those above ``hi`` are dropped (a sub-measure only lowers δ), so the state is the ``2·hi + 2`` budgets.
    Each round convolves the state, split by the option chosen, with the options' masses: one forward FFT
    per option in play and one inverse of the summed products, less their round-off bound
    (:func:`_summed_correlation_error`; all terms are ≥ 0, so the bound and clipping at 0 keep every mass
    below the strategy's exact one).  Losses may exceed the exact ones by ``rounds`` times the options'
    largest ``loss_error``; masses at +∞ are left out.

    Cost: ``rounds × (options in play + 1)`` real FFTs of length ~``2·hi + (options' span)``.
    """
    rounds = choices.shape[0]
    width = 2 * hi + 2  # budgets hi .. -hi - 1
    first = min(o.start for o in options)
    span = max(o.start + o.masses.size for o in options) - first
    linear = width + span - 1
    size = fast_size(linear)
    backend = get_backend(fft_backend, size, transforms=rounds * (len(options) + 1))
    kernels = _kernels(options, 0.0, size, spacing, backend, upper=False, aligned=True)
    column = np.clip(2 * hi - np.arange(width), 0, 2 * hi)  # the choice table's column of each state
    position = np.arange(linear) + first  # where output entry t lands: the state of accumulated loss + first
    inside, over = (position >= 0) & (position < width), position >= width
    mass = np.zeros(width)  # state p holds the budget hi - p, i.e. the accumulated loss start - hi + p
    mass[hi - start] = 1.0
    for j in range(rounds, 0, -1):
        pick = np.maximum(choices[j - 1][column], 0)
        total = np.zeros(size // 2 + 1, dtype=np.complex128)
        parts = []
        for o in np.unique(pick[mass > 0.0]):
            w = np.zeros(size)
            w[:width] = np.where(pick == o, mass, 0.0)
            total += backend.rfft(w) * kernels.spectra[o]
            parts.append((_norms(w), kernels.norm1[o], kernels.error[o]))
        if not parts:
            break
        out = np.maximum(backend.irfft(total, size)[:linear] - _summed_correlation_error(parts, size), 0.0)
        mass = np.zeros(width)
        mass[position[inside]] = out[inside]
        mass[-1] += float(np.sum(out[over])) * (1.0 - _U * (int(over.sum()) + 2))
    material = np.flatnonzero(mass > 0.0)
    loss_error = rounds * max(o.loss_error for o in options) * (1.0 + 1e-12)
    if material.size == 0:
        return LatticeDirection(start - hi, np.zeros(1), 0.0, loss_error=loss_error)
    return LatticeDirection(start - hi + int(material[0]), mass[material[0] : material[-1] + 1] * (1.0 - 2.0 * _U), 0.0, loss_error=loss_error)
