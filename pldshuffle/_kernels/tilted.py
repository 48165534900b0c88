"""Tilted trinomial pairs of shuffled kRR streamed onto the lattice (see :mod:`pldshuffle._kernels`)."""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import NDArray

from . import compiled as _compiled
from . import jit as _jit

__all__ = ["bin_points", "fill_tilted_points", "stream_tilted_points"]

prange = range  # numba.prange once jitted


@_jit()
def _walk_pair(c, x_lo, x_hi, log_wa, log_a, log_b, r, losses, masses, pos, log_buf):  # pragma: no cover
    """Points ``x = x_lo .. x_hi`` of one pair ``(u, c)`` into ``losses/masses[pos + x - x_lo]``.

    ``log_buf`` (length ≥ 2 (x_hi - x_lo) + 2 + |c - x_hi - x_lo|) holds ``log(r + t)`` for every
    ``t`` among the ``x`` and ``y = c - x`` of the window.
    """
    a = (c + 1) // 2
    if r == math.inf:  # B = 0 (gamma = 1): f constant, loss 0
        scale = math.exp(log_wa + log_a)
        ratio = 1.0
        for x in range(a, x_hi + 1):
            if x > a:
                ratio *= (c - x + 1) / x
            losses[pos + x - x_lo], masses[pos + x - x_lo] = 0.0, scale * ratio
        ratio = 1.0
        for x in range(a - 1, x_lo - 1, -1):
            ratio *= (x + 1) / (c - x)
            losses[pos + x - x_lo], masses[pos + x - x_lo] = 0.0, scale * ratio
        return
    if r + a == 0.0:  # A = 0 and x_hi = 0: P = 0 on the whole window
        for x in range(x_lo, x_hi + 1):
            losses[pos + x - x_lo], masses[pos + x - x_lo] = 0.0, 0.0
        return
    t0 = min(x_lo, c - x_hi)
    for t in range(t0, max(x_hi, c - x_lo) + 1):
        log_buf[t - t0] = math.log(r + t) if r + t > 0.0 else -math.inf
    # P-mass at the anchor x = a, then ratios Bin(c,1/2)(x)/Bin(c,1/2)(a) and (r + x)/(r + a).
    scale, inv = math.exp(log_wa + log_b + log_buf[a - t0]), 1.0 / (r + a)
    ratio = 1.0
    for x in range(a, x_hi + 1):
        if x > a:
            ratio *= (c - x + 1) / x
        _point(x, c - x, r, scale * ratio, inv, log_buf, t0, losses, masses, pos + x - x_lo)
    ratio = 1.0
    for x in range(a - 1, x_lo - 1, -1):
        ratio *= (x + 1) / (c - x)
        _point(x, c - x, r, scale * ratio, inv, log_buf, t0, losses, masses, pos + x - x_lo)


@_jit(inline="always")
def _point(x, y, r, weight, inv, log_buf, t0, losses, masses, at):  # pragma: no cover
    """Loss ``log(r + x) - log(r + y)`` and P-mass ``weight·(r + x)/(r + a)`` of one point (r finite)."""
    num, den = r + x, r + y
    if num == 0.0:  # A = 0 and x = 0: P = 0
        losses[at], masses[at] = 0.0, 0.0
    elif den == 0.0:  # Q = 0
        losses[at], masses[at] = math.inf, weight * (num * inv)
    else:
        losses[at], masses[at] = log_buf[x - t0] - log_buf[y - t0], weight * (num * inv)


@_jit()
def _fill_points(pair_u, pair_c, log_wa, starts, x_lo, x_hi, log_a, log_b, ratio, losses, masses):  # pragma: no cover
    log_buf = np.empty(_log_buffer_size(pair_c, x_lo, x_hi))
    for p in range(pair_u.size):
        i = pair_u[p]
        _walk_pair(pair_c[p], x_lo[p], x_hi[p], log_wa[p], log_a[i], log_b[i], ratio[i], losses, masses, starts[p], log_buf)


@_jit()
def _log_buffer_size(pair_c, x_lo, x_hi):  # pragma: no cover
    size = 1
    for p in range(pair_c.size):
        size = max(size, max(x_hi[p], pair_c[p] - x_lo[p]) - min(x_lo[p], pair_c[p] - x_hi[p]) + 1)
    return size


def fill_tilted_points(pair_u, pair_c, log_wa, starts, x_lo, x_hi, log_a, log_b, ratio, losses, masses) -> None:
    """Losses and P-masses of every kept point of a tilted-trinomial pair, pair ``(u, c)`` by pair, in place.

    Point ``(u, c, x)``, ``y = c - x``, tilt ``f_u(z) = A + B z`` with ``r = A/B = ratio[u]``:
    ``P = p(u, c) Bin(c, 1/2)(x) (A + B x)``.  ``log_wa[p] = log p(u, c) + log Bin(c, 1/2)(a)`` at the
    anchor ``a = ceil(c/2)`` (which every window contains); the mass is that of the anchor,
    ``exp(log_wa + log B + log(r + a))`` (``exp(log_wa + log A)`` when ``r = inf``), times the ratios
    ``Bin(c,1/2)(x)/Bin(c,1/2)(a)`` (walked outwards one step at a time, relative error ~2e-16 per step,
    so ~2e-12 for windows of 10^4 points) and ``(r + x)/(r + a) ≤ 2``.  A mass that underflows to 0 was
    below ``2·tiny``.  Loss ``log(r + x) - log(r + y)`` from a per-pair table of ``log(r + t)`` (absolute
    error a few ulps of ``log(r + c)``, ~1e-14), ``+inf`` where ``r + y = 0`` (``Q = 0``); points with
    ``P = 0`` get loss 0 and mass 0.
    Writes point ``x`` of pair ``p`` at ``starts[p] + x - x_lo[p]``.  O(S) time for S points, no allocation.
    """
    _compiled()
    _fill_points(pair_u, pair_c, log_wa, starts, x_lo, x_hi, log_a, log_b, ratio, losses, masses)


@_jit(inline="always")
def _cell(s: float, spacing: float, inv_spacing: float, series: bool) -> tuple[int, float]:  # pragma: no cover
    """Lattice cell ``j`` with ``z_j <= s < z_{j+1}`` (``z_j = j·spacing``) and ``expm1(-(s - z_j))``."""
    j = int(math.floor(s * inv_spacing))
    if j * spacing > s:
        j -= 1
    elif (j + 1) * spacing <= s:
        j += 1
    d = min(max(s - j * spacing, 0.0), spacing)
    if series:  # expm1(-d) = -d(1 - d/2 + d²/6 - d³/24) to < 1e-17 relative for 0 <= d <= 1e-4
        return j, -d * (1.0 - d * (0.5 - d * (1.0 / 6.0 - d * (1.0 / 24.0))))
    return j, math.expm1(-d)


@_jit()
def _bin_points(losses, masses, spacing, j0, cell_mass, cell_tilt):  # pragma: no cover
    inv_spacing = 1.0 / spacing
    series = spacing <= 1e-4
    size = cell_mass.size
    bad = 0
    for i in range(losses.size):
        m = masses[i]
        if m <= 0.0:
            continue
        j, em = _cell(losses[i], spacing, inv_spacing, series)
        idx = j - j0
        if idx < 0 or idx >= size:
            bad += 1
            continue
        cell_mass[idx] += m
        cell_tilt[idx] += m * em
    return bad


def bin_points(
    losses: NDArray[np.float64], masses: NDArray[np.float64], spacing: float, j0: int,
    cell_mass: NDArray[np.float64], cell_tilt: NDArray[np.float64],
) -> int:
    """Add finite points to lattice cells in place (the accumulators of :func:`stream_tilted_points`).

    Cell ``j0 + i`` gets ``cell_mass[i] += m`` and ``cell_tilt[i] += m·expm1(-(s - z_j))``; returns the
    number of points outside the lattice (a caller error).  O(points).
    """
    _compiled()
    return int(_bin_points(np.ascontiguousarray(losses, dtype=np.float64), np.ascontiguousarray(masses, dtype=np.float64),
                           float(spacing), int(j0), cell_mass, cell_tilt))


@_jit(inline="always")
def _add(mass, tilt, k, s, m, spacing, inv_spacing, series, j0, size):  # pragma: no cover
    """Add a finite point to row ``k`` of the cell accumulators; False if it is off the lattice."""
    j, em = _cell(s, spacing, inv_spacing, series)
    idx = j - j0
    if idx < 0 or idx >= size:
        return False
    mass[k, idx] += m
    tilt[k, idx] += m * em
    return True


@_jit(parallel=True)
def _stream_points(pair_c, log_wa, x_lo, x_hi, log_a, log_b, ratio, r_lo, r_hi, spacing, j0, size, chunks):  # pragma: no cover
    npairs = pair_c.size
    low_mass = np.zeros((chunks, size))
    low_tilt = np.zeros((chunks, size))
    up_mass = np.zeros((chunks, size))
    up_tilt = np.zeros((chunks, size))
    infs = np.zeros(chunks)
    bad = np.zeros(chunks, dtype=np.int64)
    inv_spacing = 1.0 / spacing
    series = spacing <= 1e-4
    width = 0
    for p in range(npairs):
        width = max(width, x_hi[p] - x_lo[p] + 1)
    log_size = _log_buffer_size(pair_c, x_lo, x_hi)
    for k in prange(chunks):
        loss_buf = np.empty(width)
        mass_buf = np.empty(width)
        log_buf = np.empty(log_size)
        for p in range((npairs * k) // chunks, (npairs * (k + 1)) // chunks):
            c = pair_c[p]
            _walk_pair(c, x_lo[p], x_hi[p], log_wa[p], log_a[p], log_b[p], ratio[p], loss_buf, mass_buf, 0, log_buf)
            spread = r_lo[p] < r_hi[p]
            for t in range(x_hi[p] - x_lo[p] + 1):
                m = mass_buf[t]
                if m <= 0.0:
                    continue
                s = loss_buf[t]
                if s == math.inf:
                    infs[k] += m
                    continue
                if not _add(low_mass, low_tilt, k, s, m, spacing, inv_spacing, series, j0, size):
                    bad[k] += 1
                if not spread:
                    _add(up_mass, up_tilt, k, s, m, spacing, inv_spacing, series, j0, size)
                    continue
                # The merged point's loss lies between those of its members, which lie between the
                # losses at r_lo and r_hi: split m between the two ends keeping its e^{-s}-moment.
                x = x_lo[p] + t
                y = c - x
                s1 = math.log((r_lo[p] + x) / (r_lo[p] + y))
                s2 = math.log((r_hi[p] + x) / (r_hi[p] + y))
                lo = min(s, s1, s2)
                hi = max(s, s1, s2)
                if hi > lo:
                    share = min(max(m * (math.expm1(lo - s) / math.expm1(lo - hi)) * (1.0 + 1e-12), 0.0), m)
                else:
                    share = 0.0
                if not _add(up_mass, up_tilt, k, lo, m - share, spacing, inv_spacing, series, j0, size):
                    bad[k] += 1
                if share > 0.0 and not _add(up_mass, up_tilt, k, hi, share, spacing, inv_spacing, series, j0, size):
                    bad[k] += 1
    return low_mass.sum(axis=0), low_tilt.sum(axis=0), up_mass.sum(axis=0), up_tilt.sum(axis=0), infs.sum(), bad.sum()


def stream_tilted_points(
    pair_c, log_wa, x_lo, x_hi, log_a, log_b, ratio, r_lo, r_hi, spacing: float, j0: int, size: int, chunks: int
) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.float64], NDArray[np.float64], float, int]:
    """Points of tilted-trinomial pairs (one ``(A, B)`` per pair, see :func:`fill_tilted_points`) streamed
    onto lattice cells, for a lower and an upper bound.

    Pair ``p`` may be a merged outcome whose members have tilt ratios in ``[r_lo[p], r_hi[p]]``: its loss
    (a mediant of theirs) and theirs lie between the losses at ``r_lo`` and ``r_hi`` (the loss is
    monotone in ``r``).  The *lower* accumulators get each point at its own loss (merging is a
    post-processing); the *upper* ones get its mass split between those two end losses keeping the
    ``e^{-s}``-moment (the extreme mean-preserving spread on that interval, rounded up by 1e-12
    relative), which dominates every distribution of the members' losses.  With ``r_lo = r_hi`` both
    get the point itself.

    For every cell ``[z_j, z_{j+1})``, ``z_j = j·spacing``, ``j = j0 .. j0+size-1``, returns
    ``(M_lower, T_lower, M_upper, T_upper, infinity, misplaced)``: P-masses ``M_j = Σ m`` and tilts
    ``T_j = Σ m·expm1(-(s - z_j))``, the mass at ``+inf`` and the number of finite points off the
    lattice (a caller error).  Parallel over ``chunks`` ranges of pairs, one accumulator row each.
    O(S) time for S points (~5-10 ns per point and thread, ~4x that for merged pairs), O(chunks·size +
    widest window) memory.
    """
    _compiled()
    return _stream_points(
        pair_c, log_wa, x_lo, x_hi, log_a, log_b, ratio, r_lo, r_hi, float(spacing), int(j0), int(size), int(chunks)
    )
