"""Discretisation of exact loss distributions onto the lattice ``z_j = j·dx``.

Two discretisations, both exact statements about every composition.  With ``u = e^{-S}`` (the likelihood
ratio ``Q/P`` of an outcome), ``δ(ε) = E_P[(1 - e^{ε} u)_+]`` is convex in each round's ``u``:

* **Upper** -- *connect the dots*: the mass ``ω`` at a loss ``s ∈ [z_j, z_{j+1})`` is split between
  ``z_j`` and ``z_{j+1}`` so that both the mass and the ``e^{-s}``-moment are preserved: a mean-preserving
  *spread* of ``u``, which can only increase ``δ`` after any number of compositions (Jensen, round by
  round; cf. Doroshenko et al., PETS 2022).  Its error is second order in ``dx``.
* **Lower** -- *merge to the lattice*, rounding down what cannot be merged: consecutive atoms are merged
  into groups whose merged loss ``log(ΣP/ΣQ)`` is exactly a lattice point (one atom per group split
  between two groups).  Merging outcomes is post-processing, so the merged pair is dominated by the exact
  one in every composition: a mean-preserving *contraction* of ``u``, second order in ``dx`` where atoms
  are dense (:func:`~pldshuffle._kernels.merge_to_lattice`).  The alternative, *rounding down* (groups
  within one cell), moves every composed loss down by ``D = Σ d_i ≥ 0`` (the groups' offsets), so ``δ``
  can only decrease, and the accountant shifts the lower bound back by a certified amount ``t`` using a
  Chernoff bound on ``P[D < t]`` from the offsets' moment generating function (``rounding_log_mgf``;
  merged groups have offset 0, and the rare group the merge cannot balance is rounded).  Rounding moves
  the mean of ``u`` by ``O(dx)`` per round, which the shift recovers up to a few standard deviations of
  ``D``; merging does not move it, so the lower end of a long composition of dense pairs (kRR, clones)
  stays within ``O(dx²)`` per round of the upper one.  For sparse pairs (randomized response: two atoms
  far apart) merging shrinks the loss's spread by ``O(dx)`` per round, which nothing recovers, and
  rounding is better; :meth:`DiscretizedDirection.lower_errors` feeds the choice
  (:meth:`pldshuffle.pld.lattice.LatticeDirection.for_rounds`).

The upper one starts from the losses raised by their certified error (``LossDistribution.loss_error``);
the lower ones carry it, and their compositions are read that much further right per round.
The infinity mass and the truncated mass go to ``+inf`` for the upper bound; only the exact infinity
mass is kept for the lower bound (truncated mass is deleted).

Streamed cells (:func:`lattice_distributions`).  A streaming kernel records, for every cell ``[z_j, z_{j+1})``
of a fine lattice ``z_j = j·h``, the P-mass ``M_j`` of the outcomes whose loss lies in it and their tilt
``T_j = Σ m·expm1(-(s - z_j))`` (``∈ [M_j·expm1(-h), 0]``), i.e. the ``e^{-s}``-moment relative to the cell's
left end.  From these:

* the *upper* distribution splits ``M_j`` between ``z_j`` and ``z_{j+1}`` keeping mass and
  ``e^{-s}``-moment -- a mean-preserving *spread* of ``U = e^{-L}``;
* the *lower* distribution puts ``M_j`` at the one loss in the cell with the same ``e^{-s}``-moment -- a
  mean-preserving *contraction* (the same as merging the cell's outcomes into one, a post-processing).

δ after any number of compositions is ``E[(1 - e^ε Π U_i)_+]``, convex in each round's ``U_i``, so by
Jensen ``δ_lower ≤ δ_exact ≤ δ_upper`` for every number of rounds (as for atoms above); both
errors are second order in ``h``.  Rounding of the moment is covered by moving a relative ``1e-12`` of
each share towards the safe side (upper: to ``z_{j+1}``; lower: the atom towards ``z_j``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING, cast

import numpy as np
from numpy.typing import NDArray

from .._kernels import UNIT_ROUNDOFF as _U, connect_the_dots, merge_to_lattice, rounding_mgf

if TYPE_CHECKING:  # pragma: no cover
    from .distributions import LossDistribution

__all__ = [
    "ROUNDING_SCALES", "DiscretizedDirection", "LowerMeasure", "contraction_offsets", "discretize", "lattice_distributions",
    "lower_error_estimates", "moments", "spread_to_ends",
]

#: ``λ·dx`` values at which the rounding-offset MGF is recorded (Chernoff bound on ``P[D < t]``).
ROUNDING_SCALES = np.geomspace(1e-3, 3e3, 56)
#: Groups of the merged lower measure reach this far (lattice steps); the rounded one merges within a cell.
_MERGED, _ROUNDED = 2**40, 0


@dataclass(frozen=True, eq=False)
class LowerMeasure:
    """A lower lattice measure: masses ``masses[i]`` at ``(start + i)·spacing``, of which ``merged`` sit
    exactly at their groups' loss; the rest are groups rounded down by at least ``offsets`` steps."""

    start: int
    masses: NDArray[np.float64]
    merged: float
    offsets: NDArray[np.float64]
    offset_masses: NDArray[np.float64]

    @cached_property
    def rounding_mean(self) -> float:
        """Mean offset (steps) over the measure."""
        total = float(self.masses.sum())
        return float(np.einsum("i,i->", self.offsets, self.offset_masses)) / total if total > 0 else 0.0

    @cached_property
    def rounding_sd(self) -> float:
        """Standard deviation of the offset (steps) over the measure."""
        total = float(self.masses.sum())
        if total <= 0:
            return 0.0
        second = float(np.einsum("i,i,i->", self.offsets, self.offsets, self.offset_masses)) / total
        return math.sqrt(max(second - self.rounding_mean**2, 0.0))

    @cached_property
    def rounding_log_mgf(self) -> NDArray[np.float64]:
        """``log Σ ω e^{-c·d}`` per scale c of ``ROUNDING_SCALES``.

        Written as ``-c·d_min + log Σ ω e^{-c(d - d_min)}``: the term at ``d_min`` is ``e^0``, so the sum
        cannot underflow (at large c the plain sum underflows to 0, which would understate the MGF).
        """
        positive = self.offset_masses > 0
        d_min = 0.0 if self.merged > 0.0 or not np.any(positive) else float(self.offsets[positive].min())
        with np.errstate(divide="ignore"):  # merged > 0 implies d_min = 0
            log_mgf = np.log(self.merged + rounding_mgf(ROUNDING_SCALES, self.offsets - d_min, self.offset_masses))
        return np.asarray(log_mgf - ROUNDING_SCALES * d_min, dtype=np.float64)

    def moments(self, spacing: float) -> tuple[float, float]:
        """Mean and variance of the loss under the normalised measure."""
        z = cast(NDArray[np.float64], (self.start + np.arange(self.masses.size)) * spacing)
        return moments(z, self.masses)


def moments(z: NDArray[np.float64], masses: NDArray[np.float64]) -> tuple[float, float]:
    """Mean and variance of the (unnormalised) measure ``masses`` at the points ``z``; ``(0, 0)`` if empty."""
    total = float(masses.sum())
    if total <= 0:
        return 0.0, 0.0
    mean = float(np.einsum("i,i->", z, masses)) / total
    return mean, float(np.einsum("i,i->", (z - mean) ** 2, masses)) / total


@dataclass(frozen=True, eq=False)
class DiscretizedDirection:
    """Upper and lower grid PLDs of one direction.

    Masses ``upper[i]`` sit at loss ``(upper_start + i)·spacing``.  Two lower measures, computed on first
    use (a dominating cover only needs the upper one): ``merged`` (groups reach any distance) and
    ``rounded`` (groups stay within a cell: rounding down); :meth:`lower_errors` estimates what each costs.
    """

    spacing: float
    upper_start: int
    upper: NDArray[np.float64]
    upper_infinity: float
    lower_infinity: float
    _losses: NDArray[np.float64] = field(repr=False)
    _masses: NDArray[np.float64] = field(repr=False)
    #: The exact losses lie within this of ``_losses`` (the lower measures carry it; the upper one has it
    #: built in).
    loss_error: float = 0.0

    @cached_property
    def merged(self) -> LowerMeasure:
        return LowerMeasure(*merge_to_lattice(self._losses, self._masses, self.spacing, _MERGED))

    @cached_property
    def rounded(self) -> LowerMeasure:
        return LowerMeasure(*merge_to_lattice(self._losses, self._masses, self.spacing, _ROUNDED))

    def lower_errors(self) -> tuple[float, float, float, float]:
        """Per round: the merged measure's deficits in the loss's mean and variance against the exact
        PLD's, the exact variance, and the rounded measure's offset standard deviation (loss units).

        A merged group of two atoms ``g`` apart moves the smaller one's share by ``g``: where atoms are
        dense the deficits are ``O(Δ²)``, where they are sparse (few atoms, e.g. randomized response) the
        mean's is ``O(Δ·g)``, the same order as rounding down, and (unlike rounding's offsets) no shift
        recovers it after many rounds.  Only an estimate to choose between two valid lower measures.
        """
        mean, var = moments(self._losses, self._masses)
        merged_mean, merged_var = self.merged.moments(self.spacing)
        return max(mean - merged_mean, 0.0), max(var - merged_var, 0.0), var, self.rounded.rounding_sd * self.spacing


def lower_error_estimates(errors: tuple[float, float, float, float], rounds: int) -> tuple[float, float]:
    """Estimated errors in ε (loss units) of the merged and of the rounded lower measure composed ``rounds``
    times, from :meth:`DiscretizedDirection.lower_errors`: the merged one loses ``rounds`` times its mean
    deficit plus the shift its variance deficit causes three standard deviations out, the rounded one about
    six standard deviations of its summed offsets (the certified shift)."""
    mean_gap, var_gap, var, offset_sd = errors
    merged = rounds * mean_gap + 3.0 * rounds * var_gap / math.sqrt(max(rounds * var, 1e-300))
    return merged, 6.0 * math.sqrt(rounds) * offset_sd


def discretize(
    losses: NDArray[np.float64],
    masses: NDArray[np.float64],
    infinity_mass: float,
    truncated_mass: float,
    spacing: float,
    loss_error: float = 0.0,
) -> DiscretizedDirection:
    """Discretise one direction's exact PLD onto the lattice of the given spacing.

    Each exact loss lies within ``loss_error`` of the computed one: the upper part connects the dots of the
    losses raised by it (the profile is non-decreasing in every loss, so they dominate the exact PLD); the
    lower parts merge the losses as computed and carry ``loss_error``, by which every composition of them
    is read further right (lowering each round's losses by it lowers the composed loss by the sum: an atom
    at a lattice point, e.g. loss 0, would otherwise drop a whole lattice step).  O(N) for N
    support points (one pass of :func:`~pldshuffle._kernels.connect_the_dots` for the upper part; the lower
    part is built on first use), plus O(range/spacing) memory for the output arrays.
    """
    losses = np.ascontiguousarray(losses, dtype=np.float64)
    masses = np.ascontiguousarray(masses, dtype=np.float64)
    raised = losses
    if loss_error > 0.0:
        # Rounded upward: the float sum of s and t is within u|s + t| of it, which the margins cover.
        raised = losses + (loss_error * (1.0 + 4.0 * _U) + 2.0 * _U * np.abs(losses))
    start, upper = connect_the_dots(raised, masses, spacing)
    return DiscretizedDirection(
        spacing=spacing,
        upper_start=start,
        upper=upper,
        upper_infinity=min(1.0, infinity_mass + truncated_mass),
        lower_infinity=infinity_mass,
        _losses=losses,
        _masses=masses,
        loss_error=loss_error,
    )


#: Relative share of a streamed cell moved towards the safe side, covering the rounding of its moment.
_ROUNDING = 1e-12


def spread_to_ends(cell_mass: NDArray[np.float64], cell_tilt: NDArray[np.float64], spacing: float) -> NDArray[np.float64]:
    """Masses at the lattice points ``z_j0 .. z_{j0+size}`` of the upper distribution of streamed cells: the
    share of ``M_j`` moved to ``z_{j+1}`` keeps mass and ``e^{-s}``-moment (rounded up: towards ``z_{j+1}``).
    O(cells)."""
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
    """``(lower, upper)`` loss distributions of streamed cells (see the module notes): the cells ``j = j0 .. j0 + len(cell_mass) - 1``.

    Both carry ``infinity_mass`` and ``truncated_mass`` unchanged, and ``loss_error`` (that of the streamed
    points' losses) plus the lattice points' rounding: spreading or contracting points whose exact losses
    are within ``loss_error`` of theirs gives measures within it of those of the exact points.  O(cells).
    """
    from .distributions import LossDistribution  # the distributions discretise through this module

    size = cell_mass.size
    grid = np.arange(j0, j0 + size + 1, dtype=np.float64) * spacing
    up = spread_to_ends(cell_mass, cell_tilt, spacing)
    offset = contraction_offsets(cell_mass, cell_tilt, spacing)
    infinity = min(float(infinity_mass), 1.0)
    error = loss_error + 4.0 * _U * (1.0 + float(np.max(np.abs(grid))))
    lower = LossDistribution(grid[:-1] + offset, cell_mass, infinity_mass=infinity, truncated_mass=truncated_mass, loss_error=error)
    upper = LossDistribution(grid, up, infinity_mass=infinity, truncated_mass=truncated_mass, loss_error=error)
    return lower, upper
