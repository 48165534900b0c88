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
  moment generating function of ``d``; it is recorded here (``rounding_mgf``).

The infinity mass and the truncated mass go to ``+inf`` for the upper bound; only the exact infinity
mass is kept for the lower bound (truncated mass is deleted).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from ._kernels import hockey_stick_profile, rounding_mgf

__all__ = ["ROUNDING_SCALES", "DiscretizedDirection", "discretize", "envelope"]

#: ``λ·dx`` values at which the rounding-offset MGF is recorded (Chernoff bound on ``P[D < t]``).
ROUNDING_SCALES = np.geomspace(1e-3, 3e3, 56)


@dataclass(frozen=True, eq=False)
class DiscretizedDirection:
    """Upper and lower grid PLDs of one direction.

    Masses ``upper[i]`` sit at loss ``(upper_start + i)·spacing``; likewise for ``lower``.
    ``known_mass`` is the finite mass the lower bound starts from (before any later deletion),
    ``rounding_mgf[c] = Σ ω(s) exp(-ROUNDING_SCALES[c]·d(s)/spacing)`` over that mass, and
    ``rounding_mean`` is the mean of ``d(s)/spacing`` under it.
    """

    spacing: float
    upper_start: int
    upper: NDArray[np.float64]
    upper_infinity: float
    lower_start: int
    lower: NDArray[np.float64]
    lower_infinity: float
    known_mass: float
    rounding_mgf: NDArray[np.float64]
    rounding_mean: float


def discretize(
    losses: NDArray[np.float64],
    masses: NDArray[np.float64],
    infinity_mass: float,
    truncated_mass: float,
    spacing: float,
) -> DiscretizedDirection:
    """Discretise one direction's exact PLD onto the lattice of the given spacing.

    O(N) for N support points, plus O(range/spacing) memory for the output arrays.
    """
    losses = np.asarray(losses, dtype=np.float64)
    masses = np.asarray(masses, dtype=np.float64)
    scaled = losses / spacing
    index = np.floor(scaled).astype(np.int64)
    # Offset within the cell in units of dx; clip guards against the last-ulp of the division.
    frac = np.clip(scaled - index, 0.0, 1.0)
    up_share = masses * (np.expm1(-frac * spacing) / np.expm1(-spacing))
    start = int(index.min()) if index.size else 0
    stop = int(index.max()) + 2 if index.size else 1
    rel = index - start
    upper = np.bincount(rel, weights=masses - up_share, minlength=stop - start)
    upper += np.bincount(rel + 1, weights=up_share, minlength=stop - start)
    lower = np.bincount(rel, weights=masses, minlength=stop - start)
    mgf = rounding_mgf(ROUNDING_SCALES, frac, masses)
    return DiscretizedDirection(
        spacing=spacing,
        upper_start=start,
        upper=upper,
        upper_infinity=min(1.0, infinity_mass + truncated_mass),
        lower_start=start,
        lower=lower,
        lower_infinity=infinity_mass,
        known_mass=float(masses.sum()),
        rounding_mgf=np.asarray(mgf, dtype=np.float64),
        rounding_mean=float(frac @ masses / masses.sum()) if masses.sum() > 0 else 0.0,
    )


def envelope(members: list[DiscretizedDirection]) -> tuple[int, NDArray[np.float64], float]:
    """Upper grid PLD dominating every member: connect-the-dots of the pointwise max profile.

    The max over members of their hockey-stick curves ``H_m(α)`` is convex and non-increasing, so the
    grid PLD whose curve interpolates it linearly in ``α`` at the grid points dominates each member
    (Blackwell), and hence each member's composition.  Returns ``(start, masses, infinity_mass)``.
    Cost O(members × range/spacing).
    """
    spacing = members[0].spacing
    start = min(m.upper_start for m in members)
    stop = max(m.upper_start + m.upper.size for m in members) + 1
    size = stop - start
    infinity = max(m.upper_infinity for m in members)
    best = np.zeros(size + 1)
    finite_total = 0.0
    for m in members:
        padded = np.zeros(size)
        padded[m.upper_start - start : m.upper_start - start + m.upper.size] = m.upper
        profile, suffix = hockey_stick_profile(padded, spacing)
        # Compare full curves (finite part + this member's infinity mass) at every grid point.
        np.maximum(best, profile + m.upper_infinity, out=best)
        finite_total = max(finite_total, suffix[0] + m.upper_infinity - infinity)
    finite_profile = np.maximum(best - infinity, 0.0)
    decay = np.exp(-spacing)
    # Invert H_{j-1} = e^{-dx} H_j + (1 - e^{-dx}) A_j for A_j, the finite mass at indices >= j.
    above = np.empty(size + 1)
    above[size] = 0.0
    above[1:size] = (finite_profile[:-2] - decay * finite_profile[1:-1]) / (-np.expm1(-spacing))
    above[0] = finite_total
    # The mass above must be non-increasing in j; raising it only raises the curve (still dominating).
    above = np.maximum.accumulate(np.maximum(above, 0.0)[::-1])[::-1]
    masses = -np.diff(above)
    # Guard the rounding of the inversion: a relative 1e-12 inflation keeps the curve above the max.
    return start, masses * (1.0 + 1e-12), min(1.0, infinity * (1.0 + 1e-12))
