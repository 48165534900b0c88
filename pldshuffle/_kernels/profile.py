"""Hockey-stick profiles of lattice measures and the two discretisations onto the lattice (see :mod:`pldshuffle._kernels`)."""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import NDArray

from . import UNIT_ROUNDOFF as _U
from . import compiled as _compiled
from . import jit as _jit

__all__ = ["connect_the_dots", "hockey_stick_profile", "largest_upper_profiles", "lower_hull", "max_shifted_sum", "merge_to_lattice", "profile_at_points", "rounding_mgf"]


@_jit()
def _profile(masses: np.ndarray, decay: float) -> tuple[np.ndarray, np.ndarray]:  # pragma: no cover - jitted
    m = masses.size
    profile = np.zeros(m + 1)
    suffix = np.zeros(m + 1)
    one_minus = 1.0 - decay
    for j in range(m - 1, -1, -1):
        suffix[j] = suffix[j + 1] + masses[j]
        # H_j = e^{-dx} H_{j+1} + (1 - e^{-dx}) A_{j+1}: every term is non-negative, so no cancellation.
        profile[j] = decay * profile[j + 1] + one_minus * suffix[j + 1]
    return profile, suffix


def hockey_stick_profile(masses: NDArray[np.float64], spacing: float) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Finite part of the hockey-stick curve of a grid PLD at its own grid points.

    For masses ``a_j`` at losses ``z_j = z_0 + j·dx`` returns ``(H, A)`` with
    ``H_j = Σ_{l>j} a_l (1 - e^{z_j - z_l})`` and ``A_j = Σ_{l≥j} a_l`` (both with a trailing 0 entry),
    by the positive recursion ``H_{j-1} = e^{-dx} H_j + (1 - e^{-dx}) A_j``.  O(m), no cancellation.
    """
    _compiled()
    return _profile(np.ascontiguousarray(masses, dtype=np.float64), float(np.exp(-spacing)))


@_jit(nogil=True)  # run by several threads at once (pldshuffle.pld.fft.map_row_ranges)
def _max_shifted_sum(
    worst: np.ndarray, values: np.ndarray, offset: int, add: np.ndarray, scalar: float, chosen: np.ndarray, index: int
) -> None:  # pragma: no cover - jitted
    track = chosen.size > 0
    for j in range(worst.size):
        v = values[offset + j] + add[j] + scalar
        if v > worst[j]:
            worst[j] = v
            if track:
                chosen[j] = index


_NOT_TRACKED = np.empty(0, dtype=np.int64)


def max_shifted_sum(
    worst: NDArray[np.float64],
    values: NDArray[np.float64],
    offset: int,
    add: NDArray[np.float64],
    scalar: float,
    chosen: NDArray[np.int64] | None = None,
    index: int = 0,
) -> None:
    """``worst[j] = max(worst[j], values[offset + j] + add[j] + scalar)`` in place, in one pass (O(m)); where
    it raises ``worst[j]``, ``chosen[j] = index`` (when ``chosen`` is given)."""
    _compiled()
    _max_shifted_sum(worst, values, int(offset), add, float(scalar), _NOT_TRACKED if chosen is None else chosen, int(index))


@_jit()
def _lower_hull(x: np.ndarray, y: np.ndarray) -> np.ndarray:  # pragma: no cover - jitted
    hull = np.empty(x.size, dtype=np.int64)
    top = 0
    for j in range(x.size):
        while top >= 2:
            i, k = hull[top - 2], hull[top - 1]
            if (y[k] - y[i]) * (x[j] - x[i]) >= (y[j] - y[i]) * (x[k] - x[i]):
                top -= 1
            else:
                break
        hull[top] = j
        top += 1
    return hull[:top]


def lower_hull(x: NDArray[np.float64], y: NDArray[np.float64]) -> NDArray[np.int64]:
    """Indices of the lower convex hull of the points ``(x_j, y_j)``, ``x`` increasing (monotone chain, O(m))."""
    _compiled()
    return _lower_hull(np.ascontiguousarray(x, dtype=np.float64), np.ascontiguousarray(y, dtype=np.float64))


@_jit()
def _profile_at_points(losses: np.ndarray, masses: np.ndarray, points: np.ndarray) -> np.ndarray:  # pragma: no cover - jitted
    out = np.zeros(points.size)
    i = losses.size - 1
    x, h, above = np.inf, 0.0, 0.0  # position, profile there, mass above it
    for q in range(points.size - 1, -1, -1):
        z = points[q]
        while i >= 0 and losses[i] > z:
            # Walk down to the next atom, then take it in: H(y) = e^{y-x} H(x) + (1 - e^{y-x}) A(x), with
            # e^{y-x} = 1 + expm1(y-x): one transcendental call per step (see the wrapper's error note).
            drop = -math.expm1(losses[i] - x)
            h = (1.0 - drop) * h + drop * above
            x = losses[i]
            above += masses[i]
            i -= 1
        drop = -math.expm1(z - x)
        h = (1.0 - drop) * h + drop * above
        x = z
        out[q] = h
    return out


@_jit()
def _largest_upper_profiles(losses, masses, starts, loss_errors, infinity, truncated, points, mass_rtol):  # pragma: no cover - jitted
    out = np.zeros(points.size)
    shifted = np.empty(points.size)
    for d in range(starts.size - 1):
        first, stop, error = starts[d], starts[d + 1], loss_errors[d]
        for q in range(points.size):  # ε - loss_error, rounded down (as LossDistribution._below)
            shifted[q] = points[q] if error == 0.0 else points[q] - (error * (1.0 + 4.0 * _U) + 2.0 * _U * abs(points[q]))
        finite = _profile_at_points(losses[first:stop], masses[first:stop], shifted)
        rounding = 1.0 + 8.0 * _U * ((stop - first) + points.size + 2)
        for q in range(points.size):
            value = min((finite[q] * rounding + infinity[d] + truncated[d]) * (1.0 + mass_rtol), 1.0)
            if value > out[q]:
                out[q] = value
    return out


def largest_upper_profiles(
    losses: NDArray[np.float64], masses: NDArray[np.float64], starts: NDArray[np.int64], loss_errors: NDArray[np.float64],
    infinity: NDArray[np.float64], truncated: NDArray[np.float64], points: NDArray[np.float64], mass_rtol: float,
) -> NDArray[np.float64]:
    """The largest over several atomic measures (``d``: ``losses[starts[d]:starts[d+1]]`` and their masses,
    with masses ``infinity[d]`` at +∞ and ``truncated[d]`` unaccounted, losses at most ``loss_errors[d]``
    below the exact ones) of a strict upper bound on ``H_d`` at ascending ``points``: the sweep of
    :func:`profile_at_points` at ``ε - loss_error`` (rounded down), raised by its rounding (``8u`` per step)
    and by ``mass_rtol`` on every mass, capped at 1 (the formula of
    :meth:`pldshuffle.pld.LossDistribution.hockey_stick_upper_sorted`).  One call for all: O(Σ support +
    measures × points)."""
    _compiled()
    floats = (np.ascontiguousarray(a, dtype=np.float64) for a in (losses, masses))
    params = (np.ascontiguousarray(a, dtype=np.float64) for a in (loss_errors, infinity, truncated, points))
    return _largest_upper_profiles(*floats, np.ascontiguousarray(starts, dtype=np.int64), *params, float(mass_rtol))


def profile_at_points(
    losses: NDArray[np.float64], masses: NDArray[np.float64], points: NDArray[np.float64]
) -> NDArray[np.float64]:
    """``H(z) = Σ_{s > z} m_s (1 - e^{z - s})`` of an atomic measure at ascending ``points`` (losses ascending).

    One downward sweep merging atoms and points, ``H(y) = e^{y-x} H(x) + (1 - e^{y-x}) A(x)`` between
    consecutive positions ``y < x`` (``A`` the mass above): every term is non-negative, so each of the
    ``len(losses) + len(points)`` steps adds at most ~5 roundings of relative error (``e^{y-x}`` is taken as
    ``1 + expm1(y-x)``: its absolute error, ≤ u, multiplies ``H(x) ≤ A(x)``, and the new value is at least
    ``H(x)``).  O(len(losses) + len(points)).
    """
    _compiled()
    arrays = (np.ascontiguousarray(a, dtype=np.float64) for a in (losses, masses, points))
    return _profile_at_points(*arrays)


@_jit()
def _rounding_mgf(scales: np.ndarray, frac: np.ndarray, masses: np.ndarray) -> np.ndarray:  # pragma: no cover - jitted
    out = np.zeros(scales.size)
    for i in range(frac.size):
        for c in range(scales.size):
            out[c] += masses[i] * np.exp(-scales[c] * frac[i])
    return out


def rounding_mgf(scales: NDArray[np.float64], frac: NDArray[np.float64], masses: NDArray[np.float64]) -> NDArray[np.float64]:
    """``Σ_i masses_i exp(-scales_c frac_i)`` for every scale, in O(len(scales)) memory."""
    _compiled()
    return _rounding_mgf(np.ascontiguousarray(scales), np.ascontiguousarray(frac), np.ascontiguousarray(masses))


@_jit()
def _r_up(z: float, s: float) -> float:  # pragma: no cover - jitted
    # e^{z-s} - 1 rounded up: the bound covers the roundings of z = t·Δ, of z - s and of expm1.
    r = math.expm1(z - s)
    return r + 4.0 * _U * (1.0 + abs(r)) * (abs(z) + abs(s) + 1.0)


@_jit()
def _group_need(losses, masses, first, first_mass, end, end_mass, z):  # pragma: no cover - jitted
    # Upper bound on Σ w (e^{z-s} - 1) over a group -- atom ``first`` holding ``first_mass``, whole atoms
    # down to atom ``end``, which holds ``end_mass`` -- so ≤ 0 means the group's merged loss is ≥ z.
    total, absum = 0.0, 0.0
    for j in range(first, end - 1, -1):
        w = first_mass if j == first else (end_mass if j == end else masses[j])
        term = w * _r_up(z, losses[j])
        total += term
        absum += abs(term)
    return total + 2.0 * (first - end + 2) * _U * absum


@_jit()
def _borrow(balanced, start, target, need, spacing, reach):  # pragma: no cover - jitted
    # Merge into a group at z_target fractions of the balanced masses at most ``reach`` points (≥ 1) above it,
    # nearest first, until ``need`` is covered: a mass at z_j stands for groups of loss ≥ z_j, so a fraction
    # φ of it adds at most φ·m_j·(e^{(target-j)Δ} - 1) < 0 to the need.  Returns the mass moved, or -1
    # (nothing moved) if those masses cannot cover it.
    stop = min(start + balanced.size, target + max(reach, 1) + 1)
    left, j = need, target + 1
    while j < stop and left > 0.0:
        left -= balanced[j - start] * -math.expm1((target - j) * spacing) * (1.0 - 8.0 * _U)
        j += 1
    if left > 0.0:
        return -1.0
    left, moved, j = need, 0.0, target + 1
    while left > 0.0:
        mass = balanced[j - start]
        room = mass * -math.expm1((target - j) * spacing) * (1.0 - 8.0 * _U)
        if room > 0.0:
            take = mass if room <= left else min(mass, mass * (left / room) * (1.0 + 1e-12))
            balanced[j - start] = (mass - take) * (1.0 - 2.0 * _U)
            moved += take
            left = left - room if take == mass else 0.0
        j += 1
    return moved


@_jit()
def _merge_to_lattice(losses, masses, spacing, start, size, reach):  # pragma: no cover - jitted
    balanced = np.zeros(size)
    rounded = np.zeros(size)
    offsets = np.zeros(losses.size + 1)  # per rounded group: a lower bound on (its loss - its point)/Δ
    offset_masses = np.zeros(losses.size + 1)
    groups = 0
    i = losses.size - 1
    rest = masses[i]
    while i >= 0:
        first, first_mass = i, rest
        t = math.floor(losses[i] / spacing)
        z = t * spacing
        excess, absum, weight, count = 0.0, 0.0, 0.0, 0
        split = False
        end_mass = rest
        while i >= 0:
            if count > 0 and losses[i] < (t - reach) * spacing:  # too far below to merge with: round instead
                break
            r = _r_up(z, losses[i])
            w = rest
            end_mass = w
            if r > 0.0 and count > 0:
                room = -(excess + 2.0 * (count + 1) * _U * absum)
                if w * r > room * (1.0 - 1e-12):  # only part of this atom fits: it closes the group
                    take = max(room, 0.0) / r * (1.0 - 1e-12)
                    weight += take
                    count += 1
                    end_mass = take
                    rest = (w - take) * (1.0 - 2.0 * _U)
                    split = True
                    break
            excess += w * r
            absum += abs(w * r)
            weight += w
            count += 1
            i -= 1
            if i >= 0:
                rest = masses[i]
        end = i if split else i + 1
        bound = weight * (1.0 + 2.0 * (count + 1) * _U)  # ≥ the group's mass
        weight *= 1.0 - 2.0 * (count + 1) * _U  # ≤ the group's mass
        need = _group_need(losses, masses, first, first_mass, end, end_mass, z)
        if need > 0.0:
            # Only the group's first atom can push the need above 0, by a rounding hair (it sits on z):
            # a hair of mass from above, or else a lattice point below.
            moved = _borrow(balanced, start, t, need, spacing, reach)
            if moved >= 0.0:
                balanced[t - start] += (weight + moved) * (1.0 - 2.0 * _U)
                continue
            while need > 0.0:
                t -= 1
                if t < start:  # every atom of the group is above z_start + 2Δ: cannot happen
                    raise ValueError("merge_to_lattice: a group's loss fell below the lattice window")
                need = _group_need(losses, masses, first, first_mass, end, end_mass, t * spacing)
        elif split:
            balanced[t - start] += weight
            continue
        elif i < 0 and t + 1 < start + size:
            # The last group (lowest losses) has room left: lift it one step with masses from above.
            moved = _borrow(balanced, start, t + 1, _group_need(losses, masses, first, first_mass, end, end_mass, (t + 1) * spacing), spacing, reach)
            if moved >= 0.0:
                balanced[t + 1 - start] += (weight + moved) * (1.0 - 2.0 * _U)
                break
        # A group that could not be balanced sits at z_t with its loss above: e^{z-m} = 1 + E/W, E ≤ need.
        rounded[t - start] += weight
        offsets[groups] = min(max(-math.log1p(max(need / bound, -0.5)) / spacing * (1.0 - 1e-9) - 1e-9, 0.0), 1.0)
        offset_masses[groups] = weight
        groups += 1
    return balanced, rounded, offsets[:groups], offset_masses[:groups]


def merge_to_lattice(
    losses: NDArray[np.float64], masses: NDArray[np.float64], spacing: float, reach: int
) -> tuple[int, NDArray[np.float64], float, NDArray[np.float64], NDArray[np.float64]]:
    """A dominated lattice measure of a PLD: ``(first index, masses, merged mass, offsets, their masses)``.

    Atoms (losses ascending) are swept from the top into groups of consecutive atoms, the last one split,
    whose merged loss ``log(ΣP/ΣQ)`` is exactly the lattice point ``z`` below the group's first atom:
    in ``u = e^{-s}`` the group's ``P``-weighted mean is ``e^{-z}``.  Merging outcomes is post-processing,
    so such groups are dominated by the PLD in every composition: a mean-preserving *contraction* of
    ``u``, the mirror image of :func:`connect_the_dots` (see :mod:`pldshuffle.pld.discretize`).  A group only merges
    atoms within ``reach`` lattice steps of its point (where atoms are sparse, merging distant ones would
    shrink the loss's spread, a first-order error in ε after many rounds); a group that cannot be
    balanced that way -- and the last one (lowest losses), unless fractions of the merged masses above
    lift it one step -- is rounded down to its point, and its offset (a lower bound on its loss minus the
    point, in steps) is returned with its mass for the lower end's certified shift.  Every test is made
    on upper bounds of ``e^{z-s} - 1`` and of the sums' rounding, so a group's loss is at least its
    point, its mass at most its parts' and its offset at most the true one.  O(N) in one pass, plus
    O(reach) per group that borrows.
    """
    _compiled()
    if losses.size == 0:
        return 0, np.zeros(1), 0.0, np.zeros(0), np.zeros(0)
    start = int(np.floor(np.min(losses) / spacing)) - 2
    size = int(np.floor(np.max(losses) / spacing)) + 2 - start
    arrays = (np.ascontiguousarray(a, dtype=np.float64) for a in (losses, masses))
    balanced, rounded, offsets, offset_masses = _merge_to_lattice(*arrays, float(spacing), start, size, int(reach))
    merged = balanced + rounded
    kept = np.flatnonzero(merged)
    if kept.size == 0:
        return 0, np.zeros(1), 0.0, offsets, offset_masses
    return start + int(kept[0]), merged[kept[0] : kept[-1] + 1].copy(), float(balanced.sum()), offsets, offset_masses


@_jit()
def _connect_the_dots(losses, masses, spacing, start, size):  # pragma: no cover - jitted
    upper = np.zeros(size)
    denominator = math.expm1(-spacing)
    for i in range(losses.size):
        scaled = losses[i] / spacing
        j = math.floor(scaled)
        share = masses[i] * (math.expm1(-min(max(scaled - j, 0.0), 1.0) * spacing) / denominator)
        upper[j - start] += masses[i] - share
        upper[j - start + 1] += share
    return upper


def connect_the_dots(losses: NDArray[np.float64], masses: NDArray[np.float64], spacing: float) -> tuple[int, NDArray[np.float64]]:
    """Connect-the-dots masses of a PLD on the lattice ``z_j = j·spacing``: ``(first index, masses)``.

    The mass ``m`` at a loss ``s = (j + f)·spacing`` (``f ∈ [0, 1)``) is split between ``z_j`` and
    ``z_{j+1}``, the share ``m·(e^{-f·Δ} - 1)/(e^{-Δ} - 1)`` going up, so that both the mass and the
    ``e^{-s}``-moment are preserved (see :mod:`pldshuffle.pld.discretize`).  O(N) in one pass.
    """
    _compiled()
    if losses.size == 0:
        return 0, np.zeros(1)
    start = int(np.floor(np.min(losses) / spacing))
    size = int(np.floor(np.max(losses) / spacing)) + 2 - start
    return start, _connect_the_dots(losses, masses, float(spacing), start, size)
