"""Discretisation of exact loss distributions onto the lattice ``z_j = j·dx``.

Two discretisations come out of one pass (core spec §4.1, strengthened):

* **Upper** -- *connect the dots*: the mass ``ω`` at a loss ``s ∈ [z_j, z_{j+1})`` is split between
  ``z_j`` and ``z_{j+1}`` so that both the mass and the ``e^{-s}``-moment are preserved.  With
  ``u = e^{-S}`` the composed ``δ(ε) = E[(1 - e^{ε} u)_+]`` is convex in each round's ``u``, so this
  mean-preserving spread can only increase ``δ`` after any number of compositions (Jensen, round by
  round; cf. Doroshenko et al., PETS 2022).  Its error is second order in ``dx``.
* **Lower** -- round down, ``s ↦ z_j``.  Every composed loss decreases by ``D = Σ d_i`` with
  ``d_i = s_i - z_j ∈ [0, dx)``, so ``δ`` can only decrease.  The accountant later shifts the lower
  bound back by a certified amount ``t`` using a Chernoff bound on ``P[D < t]``, which needs the
  moment generating function of ``d``; it is recorded here (``rounding_log_mgf``).

The infinity mass and the truncated mass go to ``+inf`` for the upper bound; only the exact infinity
mass is kept for the lower bound (truncated mass is deleted).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property

import numpy as np
from numpy.typing import NDArray

from ._kernels import connect_the_dots, rounding_mgf

__all__ = ["ROUNDING_SCALES", "DiscretizedDirection", "discretize"]

#: ``λ·dx`` values at which the rounding-offset MGF is recorded (Chernoff bound on ``P[D < t]``).
ROUNDING_SCALES = np.geomspace(1e-3, 3e3, 56)


@dataclass(frozen=True, eq=False)
class DiscretizedDirection:
    """Upper and lower grid PLDs of one direction.

    Masses ``upper[i]`` sit at loss ``(upper_start + i)·spacing``; likewise for ``lower``.
    ``known_mass`` is the finite mass the lower bound starts from (before any later deletion),
    ``rounding_log_mgf[c] = log Σ ω(s) exp(-ROUNDING_SCALES[c]·d(s)/spacing)`` over that mass, and
    ``rounding_mean`` is the mean of ``d(s)/spacing`` under it.  The lower part is computed on first use
    (a dominating cover only needs the upper one).
    """

    spacing: float
    upper_start: int
    upper: NDArray[np.float64]
    upper_infinity: float
    lower_infinity: float
    _losses: NDArray[np.float64] = field(repr=False)
    _masses: NDArray[np.float64] = field(repr=False)

    @property
    def lower_start(self) -> int:
        return self.upper_start

    @cached_property
    def _cells(self) -> NDArray[np.int64]:
        """Lattice cell of each point, counted from ``upper_start``."""
        return np.floor(self._losses / self.spacing).astype(np.int64) - self.upper_start

    @cached_property
    def _frac(self) -> NDArray[np.float64]:
        """Offset of each point within its cell, in units of the spacing (the clip guards the division's last ulp)."""
        return np.clip(self._losses / self.spacing - (self._cells + self.upper_start), 0.0, 1.0)

    @cached_property
    def lower(self) -> NDArray[np.float64]:
        return np.bincount(self._cells, weights=self._masses, minlength=self.upper.size)

    @cached_property
    def known_mass(self) -> float:
        return float(self._masses.sum())

    @cached_property
    def rounding_mean(self) -> float:
        return float(np.einsum("i,i->", self._frac, self._masses) / self.known_mass) if self.known_mass > 0 else 0.0

    @cached_property
    def rounding_log_mgf(self) -> NDArray[np.float64]:
        """``log Σ ω e^{-c·frac}`` per scale c, computed on first use (only lower witnesses need it).

        Written as ``-c·f_min + log Σ ω e^{-c(frac - f_min)}``: the term at ``f_min`` is ``e^0``, so the sum
        cannot underflow (at large c the plain sum underflows to 0, which would understate the MGF).
        """
        positive = self._masses > 0
        f_min = float(self._frac[positive].min()) if np.any(positive) else 0.0
        with np.errstate(divide="ignore"):
            log_mgf = np.log(rounding_mgf(ROUNDING_SCALES, self._frac - f_min, self._masses)) - ROUNDING_SCALES * f_min
        return np.asarray(log_mgf, dtype=np.float64)


def discretize(
    losses: NDArray[np.float64],
    masses: NDArray[np.float64],
    infinity_mass: float,
    truncated_mass: float,
    spacing: float,
) -> DiscretizedDirection:
    """Discretise one direction's exact PLD onto the lattice of the given spacing.

    O(N) for N support points (one pass of :func:`~pldshuffle._kernels.connect_the_dots` for the upper part;
    the lower part is built on first use), plus O(range/spacing) memory for the output arrays.
    """
    losses = np.ascontiguousarray(losses, dtype=np.float64)
    masses = np.ascontiguousarray(masses, dtype=np.float64)
    start, upper = connect_the_dots(losses, masses, spacing)
    return DiscretizedDirection(
        spacing=spacing,
        upper_start=start,
        upper=upper,
        upper_infinity=min(1.0, infinity_mass + truncated_mass),
        lower_infinity=infinity_mass,
        _losses=losses,
        _masses=masses,
    )
