"""Inversion of decreasing curves: the one home of the package's root finding.

* :func:`invert`: the smallest ε at which a certified δ-curve passes a level, strict in its direction
  (vectorised grid bisection; what every certified ε bound uses);
* :func:`grid_crossing`: a fixed number of grid refinements, for estimates that need no certificate
  (the lattice sizing's Gaussian ε);
* :func:`first_crossing`, :func:`last_feasible_of_first_run` and :func:`refine`: scalar crossings of
  functions that need not be monotone (the analytic baselines): a scan on a grid, refined with Brent's
  method and nudged onto the satisfying side.

Only numpy is imported here; ``scipy.optimize`` (~0.3 s) is imported by :func:`refine` on first use.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import numpy as np
from numpy.typing import NDArray

__all__ = ["ROOT_XTOL", "first_crossing", "grid_crossing", "invert", "last_feasible_of_first_run", "refine"]

#: Default absolute tolerance of the scalar refinements: BBGN19 §6 uses 1e-12, which at ε ≈ 3e-3 leaves only
#: ~3e-10 relative accuracy, so we refine further (brentq adds its own 4 ulp relative tolerance).
ROOT_XTOL = 1e-15


def invert(delta_fn: Callable[[NDArray[np.float64]], NDArray[np.float64]], delta: float, *, upper: bool, bracket: tuple[float, float] | None = None) -> float:
    """Smallest ε ≥ 0 with ``delta_fn(ε) ≤ delta``, strict in the stated direction.

    For an upper δ-curve the returned ε satisfies the inequality (a valid upper bound on ε); for a lower
    curve the returned ε is a point where the curve still exceeds δ (a valid lower bound on ε), or 0.
    The first passing point is searched on a geometric grid over [1e-6, 1e6], then over [1e6, 1e308]; each
    step then evaluates 33 points at once, shrinking the bracket 32-fold, down to a relative width 1e-12.
    ``bracket=(lo, hi)``, when ``delta_fn(hi) ≤ delta`` is known (e.g. a curve above it passes there), skips
    the initial search; the answer still only ever moves to points where ``delta_fn ≤ delta``.
    """

    def f(e: NDArray[np.float64]) -> NDArray[np.float64]:
        with np.errstate(over="ignore"):
            return np.asarray(delta_fn(np.asarray(e, dtype=np.float64)), dtype=np.float64)

    if bracket is not None and math.isfinite(bracket[1]) and 0.0 <= bracket[0] < bracket[1]:
        lo, hi = bracket
    else:
        if f(np.array([0.0]))[0] <= delta:
            return 0.0
        probes = np.geomspace(1e-6, 1e6, 97)
        passing = np.flatnonzero(f(probes) <= delta)
        if passing.size == 0:
            # Beyond 1e6 (e.g. a million rounds at ε0 = 3): probe on up to the largest doubles.  Above
            # them only the mass at +∞ is left, so no pass means ε = ∞ in both directions.
            far = np.geomspace(1e6, 1e308, 303)
            passing = np.flatnonzero(f(far) <= delta)
            if passing.size == 0:
                return math.inf
            probes = far
        k = int(passing[0])
        lo, hi = (0.0 if k == 0 else float(probes[k - 1])), float(probes[k])
    while hi - lo > 1e-12 * hi:
        grid = np.linspace(lo, hi, 33)
        ok = np.flatnonzero(f(grid[1:-1]) <= delta)
        if ok.size:
            hi = float(grid[ok[0] + 1])
            lo = float(grid[ok[0]]) if ok[0] > 0 else lo
        else:
            lo = float(grid[-2])
        if grid[1] in (lo, hi) and grid[-2] in (lo, hi):
            break
    return hi if upper else lo


def grid_crossing(
    function: Callable[[NDArray[np.float64]], NDArray[np.float64]], level: float, lo: float, hi: float, *,
    points: int = 65, rounds: int = 3,
) -> float:
    """An estimate of where a decreasing ``function`` falls to ``level`` on ``[lo, hi]`` (not certified).

    ``rounds`` times: evaluate ``points`` equally spaced points at once and keep the cell after the last
    point above ``level``; return the cell's right end (``lo`` if no point is above, ``hi`` if the last
    one is).  O(points · rounds) evaluations, a relative resolution of ``(points-1)^-rounds``.
    """
    grid = np.linspace(lo, hi, points)
    for _ in range(rounds):
        above = np.flatnonzero(function(grid) > level)
        if above.size == 0:
            return float(grid[0])
        k = int(above[-1])
        if k == grid.size - 1:
            return hi
        grid = np.linspace(grid[k], grid[k + 1], points)
    return float(grid[-1])


def refine(excess: Callable[[float], float], x_ok: float, x_bad: float, xtol: float = ROOT_XTOL) -> float:
    """A point within about ``xtol`` of the boundary between ``x_ok`` (excess <= 0) and ``x_bad``.

    ``brentq`` may stop on the wrong side of the boundary; the root is then moved towards ``x_ok``
    by doubling steps until ``excess <= 0``, so the returned point always satisfies the bound.
    """
    from scipy.optimize import brentq

    x = float(brentq(excess, x_ok, x_bad, xtol=xtol))
    step = xtol
    while excess(x) > 0.0:
        x += math.copysign(step, x_ok - x)
        step *= 2.0
        if (x - x_ok) * (x_bad - x_ok) <= 0.0:
            return x_ok
    return x


def first_crossing(
    function: Callable[[float], float], target: float, grid: Sequence[float] | NDArray[np.float64], xtol: float = ROOT_XTOL
) -> float | None:
    """Smallest ``x`` (up to ``xtol``) with ``function(x) <= target``, scanning ``grid`` upwards.

    The scan makes this safe for non-monotone functions (BBGN19's δ(ε)): the crossing returned is
    the first one found on the grid, refined by ``brentq`` against the previous grid point. Returns
    ``grid[0]`` if that point already satisfies the bound and ``None`` if no grid point does.
    """
    previous = None
    for x in grid:
        if function(x) <= target:
            if previous is None:
                return float(x)
            return refine(lambda y: function(y) - target, float(x), previous, xtol)
        previous = float(x)
    return None


def last_feasible_of_first_run(
    function: Callable[[float], float], target: float, grid: Sequence[float] | NDArray[np.float64], xtol: float = ROOT_XTOL
) -> float | None:
    """Largest ``x`` of the first run of grid points with ``function(x) <= target``, refined.

    Returns ``None`` if ``function(grid[0]) > target`` and ``grid[-1]`` if the whole grid is
    feasible.
    """
    if function(grid[0]) > target:
        return None
    last = float(grid[0])
    for x in grid[1:]:
        if function(x) > target:
            return refine(lambda y: function(y) - target, last, float(x), xtol)
        last = float(x)
    return last
