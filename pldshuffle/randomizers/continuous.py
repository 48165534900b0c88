"""Continuous local randomizers: the Laplace mechanism on a bounded interval.

:class:`Laplace` reports ``y = x + Lap(b)`` for an input ``x ∈ [input_min, input_max]`` with scale
``b = (input_max - input_min)/ε0``: the density ratio ``f_x(y)/f_{x'}(y) = e^{(|y - x'| - |y - x|)/b}`` is at most
``e^{|x - x'|/b} ≤ e^{ε0}``, attained for ``y`` outside ``[x, x']``, so the randomizer is exactly ε0-LDP with
respect to *any* two inputs of the interval (the neighbouring inputs of the shuffle analysis: one user's
value replaced by any other value of the interval).

It has no finite output law (:meth:`Laplace.matrix` refuses); the shuffle analyses that need one use its
closed forms instead: the blanket decomposition (docs/mathematics.md, "The blanket pair of the Laplace
randomizer"), the clone constants below and the total variation.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from .._validation import MAX_LOCAL_EPSILON, check_real
from .base import CloneConstants, Randomizer, pareto_members

__all__ = ["Laplace"]

#: Members of the clone-constant frontier kept (:meth:`Laplace.clone_constants`).
_FRONTIER_MEMBERS = 8


@dataclass(frozen=True)
class Laplace(Randomizer):
    """The Laplace mechanism on ``[input_min, input_max]``: ``y = x + Lap((input_max - input_min)/local_epsilon)``.

    Parameters
    ----------
    local_epsilon : float
        ``ε0 ∈ (0, 500]``: the noise scale is ``b = (input_max - input_min)/ε0``, so the randomizer is exactly
        ε0-LDP over the interval.
    input_min, input_max : float
        Finite ends of the input domain, ``input_min < input_max`` (default ``[0, 1]``).  Inputs are clipped to it by
        the data holder; the guarantee is for replacing one user's value by any other value of the interval.

    Notes
    -----
    Blanket decomposition (the smallest density over inputs): ``inf_x f_x(y) = e^{-(|y - m| + w/2)/b}/(2b)``
    (``m`` the midpoint, ``w`` the width: the farthest end of the interval), so the blanket mass is
    ``γ = e^{-ε0/2}`` and the blanket law is the Laplace law centred at ``m``, i.e. the output law of the
    midpoint.  The blanket pair is computed for the victim inputs ``(input_min, input_max)``
    (:class:`pldshuffle.mechanisms.blanket.BlanketPair`, where the other victim pairs are discussed).

    Examples
    --------
    >>> R = Laplace(1.0, input_min=0.0, input_max=10.0)
    >>> R.scale, round(R.blanket_mass, 12) == round(math.exp(-0.5), 12)
    (10.0, True)
    """

    local_epsilon: float
    input_min: float = 0.0
    input_max: float = 1.0

    def __post_init__(self) -> None:
        eps0 = check_real("local_epsilon", self.local_epsilon)
        if not 0.0 < eps0 <= MAX_LOCAL_EPSILON:
            raise ValueError(f"local_epsilon must lie in (0, {MAX_LOCAL_EPSILON:g}], got {self.local_epsilon!r}")
        lo, hi = check_real("input_min", self.input_min), check_real("input_max", self.input_max)
        for name, value in (("input_min", lo), ("input_max", hi)):
            if not math.isfinite(value):
                raise ValueError(f"{name} must be finite (the Laplace randomizer needs a bounded input domain), got {value!r}")
        if not hi > lo:
            raise ValueError(f"the input domain [input_min, input_max] must have positive width (input_min < input_max), got input_min={self.input_min!r}, input_max={self.input_max!r}")
        if not math.isfinite(hi - lo):
            raise ValueError(f"input_max - input_min must be finite, got input_min={self.input_min!r}, input_max={self.input_max!r}")
        object.__setattr__(self, "local_epsilon", eps0)
        object.__setattr__(self, "input_min", lo)
        object.__setattr__(self, "input_max", hi)

    # ------------------------------------------------------------------ closed forms
    @property
    def scale(self) -> float:
        """Noise scale ``b = (input_max - input_min)/ε0``."""
        return (self.input_max - self.input_min) / self.local_epsilon

    @property
    def blanket_mass(self) -> float:
        """``γ = ∫ inf_x f_x(y) dy = e^{-ε0/2}``."""
        return math.exp(-0.5 * self.local_epsilon)

    def density(self, x: float, y: NDArray[np.float64] | float) -> NDArray[np.float64]:
        """Output density ``f_x(y) = e^{-|y - x|/b}/(2b)`` (``x`` must lie in the domain)."""
        if not self.input_min <= x <= self.input_max:
            raise ValueError(f"x must lie in [input_min, input_max] = [{self.input_min!r}, {self.input_max!r}], got {x!r}")
        b = self.scale
        return np.exp(-np.abs(np.asarray(y, dtype=np.float64) - x) / b) / (2.0 * b)

    # ------------------------------------------------------------------ Randomizer interface
    @property
    def num_inputs(self) -> int:
        raise ValueError(f"{self.describe()} has a continuous input domain: no finite number of inputs")

    def _output_count(self) -> int:
        raise ValueError(f"{self.describe()} has continuous outputs: no finite output law")

    def _matrix(self) -> NDArray[np.float64]:  # pragma: no cover - matrix() refuses first
        raise ValueError(f"{self.describe()} has continuous outputs: no finite output law")

    def matrix(self, *, max_entries: int = 0) -> NDArray[np.float64]:
        """Refused: the Laplace randomizer has no finite output law (``ValueError``)."""
        raise ValueError(f"{self.describe()} has continuous outputs: no finite output law (matrix)")

    def clone_constants(self) -> tuple[CloneConstants, ...]:
        """Certified clone constants per victim pair, as a Pareto frontier of ``(p, r)`` members.

        Victim inputs ``x < x'`` at distance ``Δ·b`` (``0 < Δ ≤ ε0``): ``p*(x, x') = e^{Δ}``; with
        ``ρ_x(y) = f_x(y)/inf_z f_z(y)``, ``r*(x, x') = 1/max_y(ρ_x + ρ_{x'})`` and the maximum is at
        ``y ≤ input_min`` or ``y ≥ input_max``: ``max(e^{ε0 - s} + e^{ε0 - s - Δ}, e^{s} + e^{s + Δ})`` for
        ``x = input_min + s·b``, smallest over ``s`` at the ends: ``r(Δ) = e^{-ε0}/(1 + e^{-Δ})``.  The
        continuum ``(e^{Δ}, r(Δ))`` is covered by members ``(e^{Δ_{i+1}}, r(Δ_i))`` over a grid of
        ``Δ`` (each dominating the pairs with ``Δ ∈ [Δ_i, Δ_{i+1}]``).  The endpoints give
        ``(e^{ε0}, 1/(e^{ε0}+1))``; close inputs near an end only FMT20's ``r = e^{-ε0}/2``, so the
        randomizer is not in FMT23's class.
        """
        eps0 = self.local_epsilon
        grid = np.linspace(0.0, eps0, _FRONTIER_MEMBERS + 1)
        members = [
            CloneConstants(math.exp(float(grid[i + 1])), math.exp(-eps0) / (1.0 + math.exp(-float(grid[i]))) * (1.0 - 1e-12))
            for i in range(_FRONTIER_MEMBERS)
        ]
        return pareto_members(members)

    def total_variation(self) -> float:
        """``max TV(f_x, f_x') = 1 - e^{-ε0/2}`` (the endpoints; Laplace laws at distance ``ε0·b``)."""
        return -math.expm1(-0.5 * self.local_epsilon)

    def describe(self) -> str:
        return f"Laplace mechanism on [{self.input_min:g}, {self.input_max:g}], scale b={self.scale:.6g}, ε0={self.local_epsilon:g}"
