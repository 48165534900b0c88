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

__all__ = ["participation_weights"]


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
