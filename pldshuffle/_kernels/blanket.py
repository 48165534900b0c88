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
from . import num_threads
from .binomial import _step_error
from .tilted import _add

__all__ = ["dependent_fixed_b_cells", "participation_weights"]

prange = range  # numba.prange once jitted


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


@_jit(inline="always")
def _hit_dot(j, pa, a_lo, pc, c_lo):  # pragma: no cover
    """``Σ_i pa[i - a_lo]·pc[j - i - c_lo]`` over the two windows: ``P[A + C = j]`` less what they drop."""
    s = 0.0
    for i in range(max(a_lo, j - (c_lo + pc.size - 1)), min(a_lo + pa.size - 1, j - c_lo) + 1):
        s += pa[i - a_lo] * pc[j - i - c_lo]
    return s


@_jit(parallel=True)
def _dependent_fixed_b(m, k_lo, mass_k, alpha, beta, a_lo, a_hi, a_anchor, a_start, c_lo, c_hi, c_anchor, c_start,
                       first_n, last_n, ell_k, ell_n, n_lo, spacing, j0, cell_mass, cell_tilt, wa_max, wc_max, wf_max):  # pragma: no cover
    chunks = cell_mass.shape[0]
    rows = mass_k.size
    bads = np.zeros(chunks, dtype=np.int64)
    smallests = np.full(chunks, math.inf)
    worsts = np.zeros(chunks)
    for q in prange(chunks):
        pa, pc, f = np.empty(wa_max), np.empty(wc_max), np.empty(wf_max)
        bads[q], smallests[q], worsts[q] = _dependent_rows(
            (rows * q) // chunks, (rows * (q + 1)) // chunks, q, m, k_lo, mass_k, alpha, beta, a_lo, a_hi, a_anchor, a_start,
            c_lo, c_hi, c_anchor, c_start, first_n, last_n, ell_k, ell_n, n_lo, spacing, j0, cell_mass, cell_tilt, pa, pc, f,
        )
    return bads.sum(), smallests.min(), worsts.max()


@_jit()
def _dependent_rows(r0, r1, q, m, k_lo, mass_k, alpha, beta, a_lo, a_hi, a_anchor, a_start, c_lo, c_hi, c_anchor, c_start,
                    first_n, last_n, ell_k, ell_n, n_lo, spacing, j0, cell_mass, cell_tilt, pa, pc, f):  # pragma: no cover
    """Rows ``r0 .. r1-1`` of :func:`dependent_fixed_b_cells`, binned into accumulator row ``q``."""
    inv_spacing = 1.0 / spacing
    series = spacing <= 1e-4
    size = cell_mass.shape[1]
    u = _U
    abar, bbar = 1.0 - alpha, 1.0 - beta
    # a binomial of probability 0 or 1 has a one-value window: never walked, its odds unused
    alpha_odds = alpha / abar if abar > 0.0 else 0.0
    beta_odds = beta / bbar if bbar > 0.0 else 0.0
    ab, abbar, s_coef = alpha * beta, abar * bbar, abar * beta + alpha * bbar
    bad, smallest, worst = 0, math.inf, 0.0
    for r in range(r0, r1):
        k = k_lo + r
        c = m - k
        wa, wc = a_hi[r] - a_lo[r] + 1, c_hi[r] - c_lo[r] + 1
        _walk_window(pa, k, alpha_odds, a_lo[r], a_hi[r], a_anchor[r], a_start[r])
        _walk_window(pc, c, beta_odds, c_lo[r], c_hi[r], c_anchor[r], c_start[r])
        va, vc = pa[:wa], pc[:wc]
        first, last = first_n[r], last_n[r]
        # pmf of N2 = A + C on first..last by the three-term recurrence of its generating function
        # (ā + αz)^k (β̄ + βz)^c:  āβ̄(j+1) f_{j+1} = A_j f_j + αβ(k+c-j+1) f_{j-1},  A_j = c0 - s·j,
        # forward where A_j ≥ 0 and backward where A_j ≤ 0 (non-negative terms: no cancellation), each
        # started from two windowed dot products.
        c0 = k * (alpha * bbar) + c * (beta * abar)
        split = min(max(int(math.floor(c0 / s_coef)), first - 1), last)
        if last - first < 8 or wa == 1 or wc == 1:
            # too short to walk, or one binomial is a point (probability 0 or 1, or no trials): every value
            # a dot product, O(1) each in the latter case
            split = last
            for j in range(first, last + 1):
                f[j - first] = _hit_dot(j, va, a_lo[r], vc, c_lo[r])
                smallest = min(smallest, f[j - first])
        else:
            grown = 0.0
            for j in range(first, min(first + 1, split) + 1):
                f[j - first] = _hit_dot(j, va, a_lo[r], vc, c_lo[r])
                smallest = min(smallest, f[j - first])
            for j in range(first + 1, split):
                t2 = -(s_coef * j)
                other = (ab * (k + c - j + 1.0)) * f[j - 1 - first]
                # times a reciprocal, off the loop-carried chain (a division there costs ~15% of the
                # kernel): one more rounding per step, booked
                f[j + 1 - first] = ((c0 + t2) * f[j - first] + other) * (1.0 / (abbar * (j + 1.0)))
                grown += _step_error(c0, t2, f[j - first], other, u) + 1.01 * u
            worst = max(worst, grown)
            grown = 0.0
            for j in range(max(last - 1, split + 1), last + 1):
                f[j - first] = _hit_dot(j, va, a_lo[r], vc, c_lo[r])
                smallest = min(smallest, f[j - first])
            for j in range(last - 1, split + 1, -1):
                t2 = -(s_coef * j)
                other = (abbar * (j + 1.0)) * f[j + 1 - first]
                f[j - 1 - first] = (other - (c0 + t2) * f[j - first]) * (1.0 / (ab * (k + c - j + 1.0)))
                grown += _step_error(c0, t2, f[j - first], other, u) + 1.01 * u
            worst = max(worst, grown)
        for j in range(first, last + 1):
            mass = mass_k[r] * f[j - first]
            if mass <= 0.0:
                continue
            loss = ell_k[r] - ell_n[j - n_lo]
            if not _add(cell_mass, cell_tilt, q, loss, mass, spacing, inv_spacing, series, j0, size):
                bad += 1
    return bad, smallest, worst


def dependent_fixed_b_cells(
    m: int, k_lo: int, mass_k: NDArray[np.float64], alpha: float, beta: float,
    a_window: tuple[NDArray[np.int64], NDArray[np.int64], NDArray[np.int64], NDArray[np.float64]],
    c_window: tuple[NDArray[np.int64], NDArray[np.int64], NDArray[np.int64], NDArray[np.float64]],
    rows: tuple[NDArray[np.int64], NDArray[np.int64]],
    ell_k: NDArray[np.float64], ell_n: NDArray[np.float64], n_lo: int, spacing: float, j0: int, size: int,
) -> tuple[NDArray[np.float64], NDArray[np.float64], float, float, float]:
    """Lattice cells of the fixed-``B`` blanket pair of a dependent hit law (one ``B``; the mathematics is
    :func:`pldshuffle.mechanisms._blanket_support.fixed_b_bounds`'s).

    Row ``r`` is ``N1 = k = k_lo + r`` of mass ``mass_k[r]``; given it, ``N2 = A + C``, ``A ~ Bin(k, alpha)``,
    ``C ~ Bin(m - k, beta)``.  The pmfs of ``A`` and ``C`` are walked over the windows
    ``a_window = (lo, hi, anchor, pmf at anchor)`` (and ``c_window``) by their ratio recurrences from the
    anchors (doubles, ≤ 6u relative per step).  The pmf of ``N2`` on ``rows = (first, last)`` follows the
    three-term recurrence of its generating function (as :func:`~pldshuffle._kernels.two_binomial_pmf`'s):
    forward below ``c0/s``, backward above, every term non-negative, each direction started from two dot
    products of the windows (which must be wide enough that what they drop is negligible at the start
    values: the caller books ``missing/smallest``).  Every point, loss ``ell_k[r] - ell_n[N2 - n_lo]``, is
    binned onto the cells ``z_j = j·spacing``, ``j = j0 .. j0+size-1`` (P-mass and ``e^{-s}``-moment relative
    to the cell's left end, as :func:`bin_points`).

    Returns ``(mass, tilt, relative_error, smallest, growth)``: ``relative_error`` bounds the walked pmfs' and
    the dot products' rounding (``6u`` per step of the longest walks, ``(terms + 2)u`` per dot product),
    ``smallest`` is the least start value, ``growth`` the largest relative error the recurrence adds along
    one direction of a row (summed step bounds).  The values' relative error is at most
    ``anchors + relative_error + missing/smallest + growth``.  ``0 < alpha, beta < 1``.
    O(Σ_r (window widths + last - first)) time, O(size + widths) memory.
    """
    _compiled()
    chunks = max(1, min(num_threads(), mass_k.size // 64))  # one accumulator row per chunk of rows: no races
    cell_mass, cell_tilt = np.zeros((chunks, size)), np.zeros((chunks, size))
    a_lo, a_hi, a_anchor, a_start = (np.ascontiguousarray(x) for x in a_window)
    c_lo, c_hi, c_anchor, c_start = (np.ascontiguousarray(x) for x in c_window)
    first_n, last_n = (np.ascontiguousarray(x, dtype=np.int64) for x in rows)
    wa, wc = int((a_hi - a_lo).max()) + 1, int((c_hi - c_lo).max()) + 1
    bad, smallest, growth = _dependent_fixed_b(
        int(m), int(k_lo), np.ascontiguousarray(mass_k, dtype=np.float64), float(alpha), float(beta),
        a_lo, a_hi, a_anchor, a_start, c_lo, c_hi, c_anchor, c_start, first_n, last_n,
        np.ascontiguousarray(ell_k, dtype=np.float64), np.ascontiguousarray(ell_n, dtype=np.float64), int(n_lo),
        float(spacing), int(j0), cell_mass, cell_tilt, wa, wc, int((last_n - first_n).max()) + 1,
    )
    if bad:
        raise RuntimeError("internal error: a point of the fixed-B blanket pair fell off its lattice")
    steps_a = int(np.max(np.maximum(a_anchor - a_lo, a_hi - a_anchor)))
    steps_c = int(np.max(np.maximum(c_anchor - c_lo, c_hi - c_anchor)))
    # The odds' rounding (2u) is inside the 6u per step: one rounded odds, three operations and the product.
    relative_error = (6.0 * (steps_a + steps_c) + min(wa, wc) + 2.0) * _U
    # Summing the chunks' rows adds ≤ chunks·u relative (non-negative masses; the tilts are all ≤ 0).
    return cell_mass.sum(axis=0), cell_tilt.sum(axis=0), relative_error + chunks * _U, float(smallest), float(growth)
