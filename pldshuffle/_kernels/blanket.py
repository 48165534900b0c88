"""Blanket pairs with Poisson participation: the mixture weights over (blanket items, product items).

See :mod:`pldshuffle.mechanisms._blanket_participation` for the mathematics; this kernel is its one
quadratic loop (every ``(c, M)`` of the truncated window, a few ns each).
"""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import NDArray

from . import UNIT_ROUNDOFF as _U
from . import compiled as _compiled
from . import jit as _jit
from .tilted import _add

__all__ = ["dependent_fixed_b_cells", "participation_weights"]


@_jit()
def _participation_weights(c_values, log_w, anchor, lo, hi, odds, ap, norm, log_keep, starts, nodes, up_w, low_w, low_wa, out, buf):  # pragma: no cover
    groups, k_nodes = nodes.shape
    for r in range(c_values.size):
        c = float(c_values[r])
        first, last, a = lo[r], hi[r], anchor[r]
        # Bin(c, prob)(M)/Bin(c, prob)(a) by the ratios pmf(M ± 1)/pmf(M), walked out from the anchor in
        # doubles (≤ 5u relative per step, booked by the caller), then scaled by exp(log_w[r]).
        buf[a - first] = 1.0
        v = 1.0
        for m in range(a, last):
            v *= ((c - m) * odds) / (m + 1.0)
            buf[m + 1 - first] = v
        v = 1.0
        for m in range(a, first, -1):
            v *= m / ((c - m + 1.0) * odds)
            buf[m - 1 - first] = v
        scale = math.exp(log_w[r])
        g = 0
        for m in range(first, last + 1):
            w = scale * buf[m - first] * ((c + ap * m) / (c * norm))
            wl = w if log_keep == 0.0 else w * math.exp((c - m) * log_keep)
            if m == 0:  # every item a point: loss 0 under both hypotheses
                out[0] += w
                out[1] += wl
                continue
            alpha = (c - m) / (c + ap * m)
            below = m < starts[0]
            while g + 1 < groups and starts[g + 1] <= m:
                g += 1
            # The interval [nodes[k], nodes[k+1]) of alpha (k = 0 below the first node, the last above).
            k = 0
            while k + 1 < k_nodes and alpha >= nodes[g, k + 1]:
                k += 1
            if m > starts[groups - 1]:  # above the last group: deleted from the lower
                out[3] += wl
            else:  # (below the groups: the first group's lower pair is dominated by these too)
                low_w[g, k] += wl
                low_wa[g, k] += wl * alpha
            if below or alpha < nodes[g, 0]:  # below the groups, or the first node (rounding only): +inf
                out[2] += w
            elif k == k_nodes - 1:  # above the last node: its pair dominates
                up_w[g, k] += w
            else:
                theta = (nodes[g, k + 1] - alpha) / (nodes[g, k + 1] - nodes[g, k])
                # Rounded towards the lower node (the leakier pair): the chord only rises.
                theta = min(1.0, theta + 8.0 * _U)
                up_w[g, k] += w * theta
                up_w[g, k + 1] += w * (1.0 - theta)

def participation_weights(
    c_values: NDArray[np.int64], log_w: NDArray[np.float64], anchor: NDArray[np.int64], lo: NDArray[np.int64],
    hi: NDArray[np.int64], prob: float, ap: float, norm: float, log_keep: float, starts: NDArray[np.int64],
    nodes: NDArray[np.float64], up_w: NDArray[np.float64], low_w: NDArray[np.float64], low_wa: NDArray[np.float64],
    out: NDArray[np.float64],
) -> float:
    """Accumulate, in place, the weights of the pairs ``F(M, α)`` over the rows ``c = c_values[r]`` and
    ``M = lo[r] .. hi[r]``.

    ``log_w[r]`` is the log-weight of ``(c, anchor[r])``; the others follow by the ratios of
    ``Bin(c, prob)``.  Weight ``W = w(c, M)·(c + ap·M)/(c·norm)``, ``α = (c - M)/(c + ap·M)``; the group of
    ``M`` is the last ``g`` with ``starts[g] <= M``.  Upper: ``W`` split linearly in ``α`` between the two
    nodes of ``nodes[g]`` around ``α`` (``up_w[g, k]``; above the last node all to it).  Lower:
    ``W·exp((c - M)·log_keep)`` and its ``α``-moment into ``low_w[g, k]``, ``low_wa[g, k]`` for the
    interval ``[nodes[g, k], nodes[g, k+1])`` holding ``α`` (the first below it, the last above).  ``out`` +=
    ``[upper mass at M = 0, lower mass at M = 0, upper mass at +inf, lower mass deleted]``.

    Returns the relative error bound of the walked ratios, ``6u`` per step (the odds' rounding, three
    operations and the product).  O(Σ widths).
    """
    _compiled()
    c_values, anchor, lo, hi = (np.ascontiguousarray(x, dtype=np.int64) for x in (c_values, anchor, lo, hi))
    buf = np.empty(int((hi - lo).max()) + 1 if hi.size else 1)
    odds = prob / (1.0 - prob)
    _participation_weights(c_values, np.ascontiguousarray(log_w, dtype=np.float64), anchor, lo, hi, odds, float(ap), float(norm),
                           float(log_keep), starts, nodes, up_w, low_w, low_wa, out, buf)
    steps = int(np.max(np.maximum(anchor - lo, hi - anchor))) if hi.size else 0
    return 6.0 * _U * steps


@_jit(inline="always")
def _walk_window(buf, trials, odds, lo, hi, anchor, start):  # pragma: no cover
    """``buf[i - lo] = Bin(trials, ·)(i)/Bin(trials, ·)(anchor)·start`` for ``i = lo .. hi`` by the ratios
    ``pmf(i+1)/pmf(i) = (trials - i)/(i + 1)·odds`` walked out from ``anchor`` (≤ 6u relative per step)."""
    buf[anchor - lo] = start
    v = start
    for i in range(anchor, hi):
        v *= ((trials - i) * odds) / (i + 1.0)
        buf[i + 1 - lo] = v
    v = start
    for i in range(anchor, lo, -1):
        v *= i / ((trials - i + 1.0) * odds)
        buf[i - 1 - lo] = v


@_jit()
def _dependent_fixed_b(m, k_lo, mass_k, alpha_odds, beta_odds, a_lo, a_hi, a_anchor, a_start, b_lo, b_hi, b_anchor, b_start,
                       ell_k, ell_n, n_lo, spacing, j0, cell_mass, cell_tilt, pa, pb):  # pragma: no cover
    inv_spacing = 1.0 / spacing
    series = spacing <= 1e-4
    size = cell_mass.shape[1]
    bad = 0
    for r in range(mass_k.size):
        k = k_lo + r
        _walk_window(pa, k, alpha_odds, a_lo[r], a_hi[r], a_anchor[r], a_start[r])
        _walk_window(pb, m - k, beta_odds, b_lo[r], b_hi[r], b_anchor[r], b_start[r])
        wa, wb = a_hi[r] - a_lo[r] + 1, b_hi[r] - b_lo[r] + 1
        first = a_lo[r] + b_lo[r]
        for t in range(wa + wb - 1):  # N2 = first + t: the direct convolution of the two windows
            s = 0.0
            for i in range(max(0, t - wb + 1), min(wa, t + 1)):
                s += pa[i] * pb[t - i]
            mass = mass_k[r] * s
            if mass <= 0.0:
                continue
            loss = ell_k[r] - ell_n[first + t - n_lo]
            if not _add(cell_mass, cell_tilt, 0, loss, mass, spacing, inv_spacing, series, j0, size):
                bad += 1
    return bad


def dependent_fixed_b_cells(
    m: int, k_lo: int, mass_k: NDArray[np.float64], alpha: float, beta: float,
    a_window: tuple[NDArray[np.int64], NDArray[np.int64], NDArray[np.int64], NDArray[np.float64]],
    b_window: tuple[NDArray[np.int64], NDArray[np.int64], NDArray[np.int64], NDArray[np.float64]],
    ell_k: NDArray[np.float64], ell_n: NDArray[np.float64], n_lo: int, spacing: float, j0: int, size: int,
) -> tuple[NDArray[np.float64], NDArray[np.float64], float]:
    """Lattice cells of the fixed-``B`` blanket pair of a dependent hit law (one ``B``; see
    :func:`pldshuffle.mechanisms._blanket_support.fixed_b_bounds` for the mathematics).

    Row ``r`` is ``N1 = k_lo + r`` of mass ``mass_k[r]``; given it, ``N2 = A + C`` with ``A ~ Bin(k, alpha)``
    on ``a_window = (lo, hi, anchor, pmf at anchor)[r]`` and ``C ~ Bin(m - k, beta)`` on ``b_window``; each
    window's pmf is walked from its anchor by the ratio recurrence (doubles, ≤ 6u relative per step), the
    two are convolved directly (non-negative terms: ≤ ``width·u`` relative) and every point, loss
    ``ell_k[r] - ell_n[N2 - n_lo]``, is binned onto the cells ``z_j = j·spacing``, ``j = j0 .. j0+size-1``
    (P-mass and ``e^{-s}``-moment relative to the cell's left end, as :func:`bin_points`).

    Returns ``(mass, tilt, relative_error)``: ``relative_error`` bounds every point mass's relative
    rounding error, apart from the errors of the anchors and ``mass_k`` (the caller's):
    ``6u·(longest walk of A + longest walk of C) + (widest window + 2)·u``.  ``0 < alpha, beta < 1``.
    O(Σ_r widths_A·widths_C) time, O(size + widths) memory.
    """
    _compiled()
    cell_mass, cell_tilt = np.zeros((1, size)), np.zeros((1, size))
    a_lo, a_hi, a_anchor, a_start = (np.ascontiguousarray(x) for x in a_window)
    b_lo, b_hi, b_anchor, b_start = (np.ascontiguousarray(x) for x in b_window)
    pa = np.empty(int((a_hi - a_lo).max()) + 1)
    pb = np.empty(int((b_hi - b_lo).max()) + 1)
    bad = _dependent_fixed_b(int(m), int(k_lo), np.ascontiguousarray(mass_k, dtype=np.float64), alpha / (1.0 - alpha), beta / (1.0 - beta),
                             a_lo, a_hi, a_anchor, a_start, b_lo, b_hi, b_anchor, b_start,
                             np.ascontiguousarray(ell_k, dtype=np.float64), np.ascontiguousarray(ell_n, dtype=np.float64), int(n_lo),
                             float(spacing), int(j0), cell_mass, cell_tilt, pa, pb)
    if bad:
        raise RuntimeError("internal error: a point of the fixed-B blanket pair fell off its lattice")
    steps_a = int(np.max(np.maximum(a_anchor - a_lo, a_hi - a_anchor)))
    steps_b = int(np.max(np.maximum(b_anchor - b_lo, b_hi - b_anchor)))
    width = int(min(pa.size, pb.size))
    # The odds' rounding (2u) is inside the 6u per step: one rounded odds, three operations and the product.
    return cell_mass[0], cell_tilt[0], (6.0 * (steps_a + steps_b) + width + 2.0) * _U
