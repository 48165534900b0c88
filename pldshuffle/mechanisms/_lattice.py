"""Streaming a support onto a fine loss lattice, in pieces with progress reports.

The cells' discretisation (a spread above, a contraction below) is
:func:`pldshuffle.pld.discretize.lattice_distributions`.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
from numpy.typing import NDArray

from .._reporting import build_progress

__all__ = ["PIECE_POINTS", "lattice_window", "pieces", "stream_in_pieces"]

#: Points streamed per kernel call: longer streams go in pieces, with a progress report between them
#: (~0.5-2.5 s each on 2 cores).
PIECE_POINTS = 100_000_000


def pieces(widths: NDArray[np.int64], limit: int | None = None) -> list[tuple[int, int]]:
    """Consecutive non-empty ranges ``[first, stop)`` covering the entries, entry ``i`` holding ``widths[i]``
    points, each holding at most ``limit`` (default :data:`PIECE_POINTS`) points plus one entry's
    (cut where the running total passes a multiple of ``limit``).  O(len(widths))."""
    limit = PIECE_POINTS if limit is None else limit
    total = np.cumsum(widths)
    if total.size == 0:
        return []
    if total[-1] <= limit:
        return [(0, int(total.size))]
    cuts = np.searchsorted(total, np.arange(limit, int(total[-1]), limit), side="right")
    bounds = sorted({0, *(int(c) for c in cuts if 0 < c < total.size), int(total.size)})
    return list(zip(bounds[:-1], bounds[1:]))


def lattice_window(smin: float, smax: float, bins: int) -> tuple[float, int, int]:
    """``(spacing, j0, size)``: ``bins`` cells across the loss range ``[smin, smax]`` (a tiny spacing when
    it is a single point), cells ``j0 .. j0 + size - 1`` covering it with one cell of margin on each side."""
    width = smax - smin
    spacing = width / bins if width > 0 else max(abs(smax), 1.0) * 1e-9
    j0 = int(math.floor(smin / spacing)) - 1
    size = int(math.floor(smax / spacing)) - j0 + 2
    return spacing, j0, size


def stream_in_pieces(
    widths: NDArray[np.int64],
    cells: int,
    size: int,
    what: str,
    stream: Callable[[int, int], tuple],
) -> tuple[list[NDArray[np.float64]], float]:
    """Run a streaming kernel over :func:`pieces` of its entries (entry ``i`` holding ``widths[i]`` points)
    and add up what it returns, reporting ``what: 42 %`` between pieces (:func:`~pldshuffle._reporting.build_progress`).

    ``stream(first, stop)`` streams entries ``first .. stop-1`` and returns ``cells`` accumulators of
    ``size`` lattice cells, the mass at ``+inf`` and the number of finite points off the lattice.  Returns
    the summed accumulators and infinity mass; ``RuntimeError`` if any point fell off the lattice (callers
    size it to cover every loss, so that is an internal error).
    """
    total = max(int(widths.sum()), 1)
    tick = build_progress(what)
    sums = [np.zeros(size) for _ in range(cells)]
    infinity, misplaced, done = 0.0, 0, 0
    for first, stop in pieces(widths):
        *parts, inf_mass, bad = stream(first, stop)
        for accumulated, part in zip(sums, parts):
            accumulated += part
        infinity, misplaced = infinity + float(inf_mass), misplaced + int(bad)
        done += int(widths[first:stop].sum())
        tick(done / total)
    if misplaced:
        raise RuntimeError(f"internal error: {misplaced} losses fell outside the streaming lattice")
    return sums, infinity
