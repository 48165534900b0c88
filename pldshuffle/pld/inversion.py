"""Monotone inversion: the smallest ε at which a certified δ-curve passes a level, strict in its direction."""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
from numpy.typing import NDArray

__all__ = ["invert"]


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
