"""Strict lower/upper loss distributions from a support streamed onto a fine loss lattice.

A streaming kernel records, for every cell ``[z_j, z_{j+1})`` of the lattice ``z_j = j·h``, the P-mass
``M_j`` of the outcomes whose loss lies in it and their tilt ``T_j = Σ m·expm1(-(s - z_j))``
(``∈ [M_j·expm1(-h), 0]``), i.e. the ``e^{-s}``-moment relative to the cell's left end.  From these:

* the *upper* distribution splits ``M_j`` between ``z_j`` and ``z_{j+1}`` keeping mass and
  ``e^{-s}``-moment -- a mean-preserving *spread* of ``U = e^{-L}``;
* the *lower* distribution puts ``M_j`` at the one loss in the cell with the same ``e^{-s}``-moment -- a
  mean-preserving *contraction* (the same as merging the cell's outcomes into one, a post-processing).

δ after any number of compositions is ``E[(1 - e^ε Π U_i)_+]``, convex in each round's ``U_i``, so by
Jensen ``δ_lower ≤ δ_exact ≤ δ_upper`` for every number of rounds (cf. :mod:`pldshuffle.grid`); both
errors are second order in ``h``.  Rounding of the moment is covered by moving a relative ``1e-12`` of
each share towards the safe side (upper: to ``z_{j+1}``; lower: the atom towards ``z_j``).
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
from numpy.typing import NDArray

from .._kernels import UNIT_ROUNDOFF as _U
from ..pld import LossDistribution
from .._reporting import build_progress

__all__ = ["PIECE_POINTS", "contraction_offsets", "lattice_distributions", "lattice_window", "pieces", "spread_to_ends", "stream_in_pieces"]

_ROUNDING = 1e-12
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


def spread_to_ends(cell_mass: NDArray[np.float64], cell_tilt: NDArray[np.float64], spacing: float) -> NDArray[np.float64]:
    """Masses at the lattice points ``z_j0 .. z_{j0+size}`` of the upper distribution of the cells: the share
    of ``M_j`` moved to ``z_{j+1}`` keeps mass and ``e^{-s}``-moment (rounded up: towards ``z_{j+1}``).  O(cells)."""
    share = np.clip(cell_tilt / math.expm1(-spacing) * (1.0 + _ROUNDING), 0.0, cell_mass)
    up = np.append(cell_mass - share, 0.0)
    up[1:] += share
    return up


def contraction_offsets(cell_mass: NDArray[np.float64], cell_tilt: NDArray[np.float64], spacing: float) -> NDArray[np.float64]:
    """Offsets from ``z_j`` of the lower distribution's atoms: one per cell at the conditional mean of
    ``e^{-s}`` (rounded down: towards ``z_j``; 0 for empty cells).  O(cells)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        offset = -np.log1p(np.clip(cell_tilt / cell_mass, math.expm1(-spacing), 0.0)) * (1.0 - _ROUNDING)
    return np.where(cell_mass > 0, np.clip(offset, 0.0, spacing), 0.0)


def lattice_distributions(
    cell_mass: NDArray[np.float64],
    cell_tilt: NDArray[np.float64],
    spacing: float,
    j0: int,
    infinity_mass: float,
    truncated_mass: float,
    loss_error: float,
) -> tuple[LossDistribution, LossDistribution]:
    """``(lower, upper)`` loss distributions of the cells ``j = j0 .. j0 + len(cell_mass) - 1``.

    Both carry ``infinity_mass`` and ``truncated_mass`` unchanged, and ``loss_error`` (that of the streamed
    points' losses) plus the lattice points' rounding: spreading or contracting points whose exact losses
    are within ``loss_error`` of theirs gives measures within it of those of the exact points.  O(cells).
    """
    size = cell_mass.size
    grid = np.arange(j0, j0 + size + 1, dtype=np.float64) * spacing
    up = spread_to_ends(cell_mass, cell_tilt, spacing)
    offset = contraction_offsets(cell_mass, cell_tilt, spacing)
    infinity = min(float(infinity_mass), 1.0)
    error = loss_error + 4.0 * _U * (1.0 + float(np.max(np.abs(grid))))
    lower = LossDistribution(grid[:-1] + offset, cell_mass, infinity_mass=infinity, truncated_mass=truncated_mass, loss_error=error)
    upper = LossDistribution(grid, up, infinity_mass=infinity, truncated_mass=truncated_mass, loss_error=error)
    return lower, upper
