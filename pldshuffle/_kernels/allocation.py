"""Combining two independent likelihood-ratio laws onto a grid, for random allocation
(:mod:`pldshuffle.mechanisms._allocation_sum`).

Two discrete laws ``(x_a, m_a)`` and ``(x_b, m_b)`` of non-negative points (likelihood ratios under the
reference measure Q) are combined pairwise into ``y = wa·x_a + wb·x_b`` (a weighted average, ``product=False``)
or ``y = x_a·x_b`` (``product=True``), and every ``y`` is put on the ascending grid ``g``:

* ``spread`` (upper): the mass goes to the two grid points around ``y`` with weights ``(g[c+1] - y)/(g[c+1] - g[c])``
  and ``(y - g[c])/(g[c+1] - g[c])`` -- a mean-preserving spread, so the result is larger in convex order;
* contraction (lower): the mass and its first moment go to the cell ``[g[c], g[c+1])`` holding ``y``; the
  caller puts the cell's mass at its moment point (a conditional expectation: smaller in convex order).

Sums are compensated (Neumaier), so every accumulated value is within ``2u`` (plus ``O(k u²)``) of the exact
sum of the computed terms; the caller books the bound.  For fixed ``i`` the point ``y`` increases with ``j``,
so the cell is found by a forward walk: O(N_a·N_b + N_a·log N_g).
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from . import compiled as _compiled
from . import jit as _jit

__all__ = ["combine_laws"]


@_jit(inline="always")
def _neumaier(acc, comp, c, v):  # pragma: no cover - jitted
    """Add ``v`` to ``acc[c]`` keeping the rounding error in ``comp[c]``."""
    s = acc[c]
    t = s + v
    if abs(s) >= abs(v):
        comp[c] += (s - t) + v
    else:
        comp[c] += (v - t) + s
    acc[c] = t


@_jit(nogil=True)  # the blanket pair of the Laplace randomizer builds its upper and lower laws in two threads
def _combine(xa, ma, xb, mb, wa, wb, product, g, spread):  # pragma: no cover - jitted
    n = g.size
    acc = np.zeros(n)
    comp = np.zeros(n)
    mom = np.zeros(n)
    momc = np.zeros(n)
    outside = 0.0  # mass of points beyond the grid's last point (none when the grid covers the range)
    for i in range(xa.size):
        mi = ma[i]
        if mi == 0.0:
            continue
        # first cell for this row: binary search for the smallest y of the row
        if product:
            y0 = xa[i] * xb[0]
        else:
            y0 = wa * xa[i] + wb * xb[0]
        lo = 0
        hi = n - 1
        while hi - lo > 1:
            mid = (lo + hi) // 2
            if g[mid] <= y0:
                lo = mid
            else:
                hi = mid
        c = lo
        for j in range(xb.size):
            mj = mb[j]
            if mj == 0.0:
                continue
            if product:
                y = xa[i] * xb[j]
            else:
                y = wa * xa[i] + wb * xb[j]
            while c < n - 2 and g[c + 1] <= y:
                c += 1
            w = mi * mj
            if y >= g[n - 1]:
                if y <= g[n - 1] * (1.0 + 4.4e-16):  # the exact point is at most the grid's end: a rounding
                    y = g[n - 1]
                    _neumaier(acc, comp, n - 1, w)
                    _neumaier(mom, momc, n - 1, w * y)
                else:
                    outside += w
                continue
            if spread:
                left = g[c]
                right = g[c + 1]
                width = right - left
                _neumaier(acc, comp, c, w * ((right - y) / width))
                _neumaier(acc, comp, c + 1, w * ((y - left) / width))
            else:
                _neumaier(acc, comp, c, w)
                _neumaier(mom, momc, c, w * y)
    return acc + comp, mom + momc, outside


def combine_laws(
    xa: NDArray[np.float64], ma: NDArray[np.float64], xb: NDArray[np.float64], mb: NDArray[np.float64],
    wa: float, wb: float, product: bool, grid: NDArray[np.float64], spread: bool,
) -> tuple[NDArray[np.float64], NDArray[np.float64], float]:
    """Combine two independent laws onto ``grid`` (see the module notes).

    Returns ``(mass, moment, outside)``: per grid point (spread) or per cell ``[g[c], g[c+1])`` (contraction)
    the accumulated mass and first moment, and the mass of points beyond the last grid point.  The points
    ``x`` must be ascending and non-negative, ``grid[0] <= min y``.  O(N_a·N_b).
    """
    _compiled()
    return _combine(np.ascontiguousarray(xa, dtype=np.float64), np.ascontiguousarray(ma, dtype=np.float64),
                    np.ascontiguousarray(xb, dtype=np.float64), np.ascontiguousarray(mb, dtype=np.float64),
                    float(wa), float(wb), bool(product), np.ascontiguousarray(grid, dtype=np.float64), bool(spread))
