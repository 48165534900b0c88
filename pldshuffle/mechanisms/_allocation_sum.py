"""Certified laws of averages and products of independent likelihood ratios (the engine of
:mod:`pldshuffle.mechanisms.allocation`).

A :class:`RatioLaw` is a discrete law, under the reference measure Q, of a likelihood ratio ``R = dP/dQ``
(restricted to the outcomes that were not flagged by a truncation).  Two kinds are built:

* upper (``upper=True``): ``(1 + mass_error)·law`` dominates, in the order "``⪰``" of
  docs/mathematics.md (random allocation), the law of ``X·(1 + Θ)`` where ``X`` is the exact ratio and
  ``|Θ| ≤ location_error``: it is a mean-preserving spread of it plus a non-negative measure;
* lower (``upper=False``): ``(1 - mass_error)·law`` is at most (as a measure) a contraction (conditional
  expectation) of the law of ``X·(1 + Θ)``.

Every hockey-stick divergence of a pair, both directions and after any composition, is ``E_Q[φ(R)]`` with
``φ ≥ 0`` convex, so an upper law bounds it from above and a lower law from below, once the location error
is booked as a loss error and the mass error as a relative mass inflation (:func:`ratio_pair`).

Averages of ``t`` independent copies are built by binary powering (``t = Σ 2^j``), each step a direct
combination on a grid (:func:`~pldshuffle._kernels.combine_laws`): O(log t · N²) for grids of N points.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from typing import Any
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from .._kernels import UNIT_ROUNDOFF as _U
from .._kernels.allocation import combine_laws
from ..pld import LossDistribution, PrivacyLossPair

__all__ = ["GRID_LOW", "UNDERFLOW_SLACK", "RatioLaw", "average_law", "fineness", "gaussian_low", "gaussian_step_law", "make_grid", "power_law", "ratio_pair", "tail_steps"]

#: Relative mass error one upper combination adds: product of masses (u), spread weight (3u), product (u),
#: compensated sum (2u + O(k u²)); booked with room as 10u.
_SPREAD_MASS_ERROR = 10.0 * _U
#: The same for a contraction: product (u), compensated sum (2u + O(k u²)); booked as 4u.
_CONTRACT_MASS_ERROR = 4.0 * _U
#: Relative error of a combined point: weighted average (weights within u, two products and a sum) or
#: product (u); a contraction adds the centroid's moment and mass sums and the division (booked 16u).
_POINT_ERROR = 6.0 * _U
_CENTROID_ERROR = 16.0 * _U
#: Masses below this are dropped after every combination (their products would be subnormal).
_SMALLEST_MASS = 1e-250
#: Absolute P- and Q-mass an upper pair books at +∞ for the dropped masses and any underflow: at most
#: ~N_grid·1e-250 per combination times the ≤ 2^40 copies of a combination, and subnormal roundings
#: (5e-324 each, ≤ 1e9 per combination) times the largest ratio (< e^140, the callers' limit).
UNDERFLOW_SLACK = 1e-200


@dataclass(frozen=True, eq=False)
class RatioLaw:
    """A discrete law of a likelihood ratio under Q (see the module notes).

    ``points`` ascending and non-negative, ``masses`` non-negative (Q-masses); ``mass_error`` and
    ``location_error`` are the relative errors booked so far; ``upper`` says which side it bounds.
    """

    points: NDArray[np.float64]
    masses: NDArray[np.float64]
    mass_error: float
    location_error: float
    upper: bool

    @property
    def size(self) -> int:
        return int(self.points.size)


def _up(x: float) -> float:
    """``x`` raised by a relative 4u (covers the rounding of the few operations that computed it)."""
    return x * (1.0 + 4.0 * _U)


def make_grid(center: float, scale: float, low: float, high: float, *, resolution: float = 48, width: float = 12.0,
              growth: float = 0.02, max_log_step: float = 0.25) -> NDArray[np.float64]:
    """Ascending grid on ``[0, high]`` for ratios concentrated around ``center`` with spread ``scale``.

    Points: 0; linear steps of ``scale/resolution`` over ``center ± width·scale``; elsewhere logarithmic
    steps growing with the distance (in log) from ``center`` (``growth`` times it, between the linear step's
    relative size and ``max_log_step``), down to ``low`` and up to ``high`` (exactly the last point).  Any
    grid is valid (the spread and the contraction are proven for every grid); this one keeps the gap small
    where the law's mass is.  O(N).
    """
    step = scale / resolution
    lin_lo, lin_hi = max(center - width * scale, low), min(center + width * scale, high)
    parts = [np.array([0.0, high])]
    if lin_hi > lin_lo:
        parts.append(np.arange(lin_lo, lin_hi, step))
    log_c = math.log(center)
    s_min = max(step / center, 1e-6)
    for direction, end in ((1.0, math.log(high)), (-1.0, math.log(low))):
        ell, pts = log_c, []
        while direction * (end - ell) > 0:
            ell += direction * min(max(growth * abs(ell - log_c), s_min), max_log_step)
            pts.append(ell)
        if pts:
            parts.append(np.exp(np.clip(np.array(pts), math.log(low), math.log(high))))
    grid = np.unique(np.concatenate(parts))
    return grid[(grid >= 0.0) & (grid <= high)]


def _finish(grid: NDArray[np.float64], mass: NDArray[np.float64], moment: NDArray[np.float64], upper: bool,
            mass_error: float, location_error: float) -> RatioLaw:
    """The law from a combination's accumulators: grid points (upper) or cell centroids (lower).

    Masses below :data:`_SMALLEST_MASS` are dropped: their products would be subnormal (no relative
    accuracy; centroids of underflowed moments).  A lower law may drop mass; an upper law books what it
    drops (and any underflow) in :data:`UNDERFLOW_SLACK`."""
    if upper:  # keep what carries P-mass (m·x) or Q-mass above the threshold: both dropped parts are booked
        keep = mass * np.maximum(grid, 1.0) > _SMALLEST_MASS
        return RatioLaw(grid[keep], mass[keep], mass_error, location_error, True)
    keep = mass > _SMALLEST_MASS
    # A centroid lies in its cell [g[c], g[c+1]] (the last cell is the point g[-1]): clamping the computed
    # one there only brings it closer.
    points = np.clip(moment[keep] / mass[keep], grid[keep], np.append(grid[1:], grid[-1])[keep])
    return RatioLaw(points, mass[keep], mass_error, location_error, False)


def combine(a: RatioLaw, b: RatioLaw, grid: NDArray[np.float64], *, weight_a: float = 0.5, product: bool = False) -> RatioLaw:
    """Law of ``weight_a·A + (1 - weight_a)·B`` (or ``A·B``) for independent ``A``, ``B`` on ``grid``, with the
    errors booked (module notes).  O(|a|·|b|)."""
    if a.upper != b.upper:
        raise ValueError("cannot combine an upper and a lower law")
    wb = 1.0 - weight_a
    if product:  # the grid must reach the largest product as computed (a power's rounding may fall short)
        top = float(a.points[-1]) * float(b.points[-1])
        if grid[-1] < top:
            grid = np.append(grid, top * (1.0 + 4.0 * _U))
    mass, moment, outside = combine_laws(a.points, a.masses, b.points, b.masses, weight_a, wb, product, grid, a.upper)
    if outside > 0.0:  # the grids are built to cover every combined point: a bug, never a bound
        raise RuntimeError(f"combined points beyond the grid's end ({outside:.3g} mass)")
    own = _SPREAD_MASS_ERROR if a.upper else _CONTRACT_MASS_ERROR
    mass_error = _up((1.0 + a.mass_error) * (1.0 + b.mass_error) * (1.0 + own) - 1.0)
    point = _POINT_ERROR + (0.0 if a.upper else _CENTROID_ERROR)
    if product:
        location_error = _up((1.0 + a.location_error) * (1.0 + b.location_error) * (1.0 + point) - 1.0)
    else:
        location_error = _up((1.0 + max(a.location_error, b.location_error)) * (1.0 + point) - 1.0)
    return _finish(grid, mass, moment, a.upper, mass_error, location_error)


def _binary_power(step: RatioLaw, copies: int, merge: Callable[[RatioLaw, RatioLaw, int, int], RatioLaw],
                  squared: Callable[[int], None] | None = None) -> RatioLaw:
    """Combine ``copies`` independent copies of ``step`` by binary powering (``copies = Σ 2^j``):
    ``merge(a, b, n_a, n_b)`` is the law of the combination of ``n_a`` and ``n_b`` copies; ``squared(n)`` is
    called after each squaring reaches ``n`` copies.  O(log(copies)) merges."""
    acc: RatioLaw | None = None
    acc_n, power, power_n, rest = 0, step, 1, copies
    while True:
        if rest & 1:
            if acc is None:
                acc, acc_n = power, power_n
            else:
                acc = merge(acc, power, acc_n, power_n)
                acc_n += power_n
        rest >>= 1
        if not rest:
            break
        power = merge(power, power, power_n, power_n)
        power_n *= 2
        if squared is not None:
            squared(power_n)
    assert acc is not None
    return acc


def average_law(step: RatioLaw, copies: int, grid_for: Callable[[int], NDArray[np.float64]],
                progress: Callable[[str], None] | None = None) -> RatioLaw:
    """Law of the average of ``copies`` independent copies of ``step`` by binary powering; ``grid_for(n)`` is
    the grid of an average of ``n`` copies.  O(log(copies)·N²)."""

    def merge(a: RatioLaw, b: RatioLaw, n_a: int, n_b: int) -> RatioLaw:
        return combine(a, b, grid_for(n_a + n_b), weight_a=n_a / (n_a + n_b))  # 0.5 exactly for a squaring

    squared = None if progress is None else (lambda n: progress(f"random allocation: averages of {n} of {copies} steps"))
    return _binary_power(step, copies, merge, squared)


def power_law(step: RatioLaw, copies: int, grid_for: Callable[[int], NDArray[np.float64]]) -> RatioLaw:
    """Law of the product of ``copies`` independent copies of ``step`` (the likelihood ratio of their
    composition) by binary powering.  O(log(copies)·N²)."""
    return _binary_power(step, copies, lambda a, b, n_a, n_b: combine(a, b, grid_for(n_a + n_b), product=True))


# ----------------------------------------------------------------------------- Gaussian steps
def gaussian_ratio_bounds(sigma: float, tail: float) -> float:
    """``ρ_max`` with ``A(ρ > ρ_max) ≤ tail`` for the Gaussian step of noise multiplier ``sigma`` (``log ρ`` is
    ``N(1/(2σ²), 1/σ²)`` under A); O(1)."""
    from scipy.special import ndtri

    z = -float(ndtri(tail))  # A(ρ > ρ_max) = Φ̄(σ log ρ_max - 1/(2σ))
    return math.exp((z + 0.5 / sigma + 1e-9) / sigma)


#: Lowest positive grid point of finite steps' grids: averages below are spread to 0 and it.
GRID_LOW = 1e-30


def gaussian_low(sigma: float) -> float:
    """Lowest positive grid point for Gaussian steps: ``exp(-1/(2σ²) - 40/σ)``, 40 standard deviations below
    the mean of ``log ρ`` under Q (so the Q-mass spread to ratio 0, i.e. to loss +∞ backward, is below
    Φ(-40) ~ 1e-350 per step; a fixed 1e-30 left 2.4e-5 there at σ = 0.1, t = 3), at least 1e-300."""
    return max(math.exp(-0.5 / sigma**2 - 40.0 / sigma), 1e-300)


def fineness(steps: int) -> float:
    """Grid refinement for an average of ``steps`` ratios: ``clip(3 - log10(steps)/2, 1, 3)``.  Fewer steps
    mean fewer combinations (O(log t)) and wider losses, so finer grids are affordable and needed
    (measured, σ = 1, δ = 1e-6: t = 50, 2 epochs, relative ε gap 8.0e-3 at fineness 1, 9.7e-4 at 3;
    t = 1e4 keeps fineness 1 for its 10 s target)."""
    return min(3.0, max(1.0, 3.0 - 0.5 * math.log10(max(steps, 1))))


def tail_steps(sigma: float | None, high: float, low: float = GRID_LOW, fine: float = 1.0) -> dict[str, float]:
    """Logarithmic grid steps for Gaussian steps of noise multiplier ``sigma`` (``None``: other steps) on
    ``[low, high]``.

    Below σ = 1 the loss that decides ε moves into the lognormal's tail (one large ratio), so the tail
    steps shrink like σ² down to σ = 0.5 (measured: σ = 0.5, t = 1e4, 10 epochs, δ = 1e-6: relative ε gap
    3.6e-2 with the σ = 1 steps, 1.9e-3 with these); the largest step is at least 1/1500 of the log range,
    so that grids keep ~3000 points at most (σ = 0.1: the range is e^-69..e^146, steps 0.14); ``fine``
    (:func:`fineness`) divides the steps and multiplies the linear resolution."""
    f = 1.0 if sigma is None else min(1.0, max(sigma**2, 0.25))
    span = math.log(high) - math.log(low)
    return {"growth": 0.02 * f / fine, "max_log_step": max(0.25 * f / fine, span / 1500.0), "resolution": 48.0 * fine}


@functools.lru_cache(maxsize=8)
def _gaussian_cells(sigma: float, tail: float, fine: float = 1.0) -> tuple[NDArray[np.float64], list, list, float, float]:
    """Grid and exact (50-digit) Q- and P-probabilities of its cells ``[g_c, g_{c+1}]`` (the first cell
    starts at 0), with the tails beyond ``g_N``, shared by the upper and the lower law
    (:func:`gaussian_step_law`).  Each cell probability is a difference of two lower-tail probabilities
    ``Φ`` where the cell is below the median and of two upper-tail ones ``Φ̄`` above it, so no digits are
    lost to ``1 - tiny`` (a 40-digit ``Φ`` difference had lost every far-tail cell at σ = 0.1)."""
    import mpmath

    high = gaussian_ratio_bounds(sigma, tail)
    low = gaussian_low(sigma)
    grid = make_grid(1.0, math.sqrt(math.expm1(1.0 / sigma**2)), low, high, **tail_steps(sigma, high, low, fine))
    with mpmath.workdps(50):
        s = mpmath.mpf(sigma)
        half = 1 / (2 * s)
        logs = [mpmath.log(mpmath.mpf(float(x))) for x in grid[1:]]

        def cells(shift: Any) -> tuple[list, Any]:
            z = [s * v + shift for v in logs]  # the standard-normal quantile of each grid point g_1..g_N
            low = [mpmath.ncdf(v) for v in z]
            up = [mpmath.ncdf(-v) for v in z]
            out = [low[0]]
            for c in range(1, len(z)):
                out.append(low[c] - low[c - 1] if z[c] <= 0 else up[c - 1] - up[c])
            return out, up[-1]

        mq, q_tail = cells(half)
        mp, p_tail = cells(-half)
    return grid, mq, mp, float(q_tail), float(p_tail)


def gaussian_step_law(sigma: float, tail: float, upper: bool, fine: float = 1.0) -> tuple[RatioLaw, float, float]:
    """Law of ``ρ(Y) = exp((Y - 1/2)/σ²)``, ``Y ~ N(0, σ²)`` (the ratio of ``N(1, σ²)`` to ``N(0, σ²)``),
    restricted to ``ρ ≤ ρ_max`` (``P(ρ > ρ_max) ≤ tail``), spread onto a grid (upper) or contracted to its
    cells (lower).

    Returns ``(law, q_tail, p_tail)``: the Q- and P-probabilities of the truncated tail ``ρ > ρ_max``.
    Cell masses ``m_Q`` and first moments ``∫ρ dQ = m_P`` are evaluated with mpmath at 50 digits (each a
    difference of same-side tail probabilities: ≥ 30 correct digits for cells ≥ 1e-15 wide in z) and
    rounded once, so every mass is within ``u`` relative (mass_error ``2u``) and every centroid within
    ``2u``.  Under Q: ``Q(ρ ≤ x) = Φ(1/(2σ) + σ log x)``; under P: ``P(ρ ≤ x) = Φ(σ log x - 1/(2σ))``.
    O(N) mpmath evaluations (~25 µs each), shared by both sides.
    """
    import mpmath

    grid, mq, mp, q_tail, p_tail = _gaussian_cells(sigma, tail, fine)
    with mpmath.workdps(50):
        n = grid.size
        if upper:
            out = [mpmath.mpf(0)] * n
            for c in range(n - 1):
                a, b = mpmath.mpf(float(grid[c])), mpmath.mpf(float(grid[c + 1]))
                left, right = (b * mq[c] - mp[c]) / (b - a), (mp[c] - a * mq[c]) / (b - a)
                # the centroid m_P/m_Q lies in [a, b]: both weights are >= 0 up to the evaluation's digits
                if min(left, right) < -mpmath.mpf(10) ** -30 * (b * mq[c] + mp[c]):
                    raise RuntimeError(f"Gaussian step cell [{float(a):.6g}, {float(b):.6g}]: inaccurate probabilities")
                out[c] += max(left, 0)
                out[c + 1] += max(right, 0)
            masses = np.array([float(v) for v in out])
            law = RatioLaw(grid.copy(), masses, 2.0 * _U, 0.0, True)
        else:
            pts, ms = [], []
            for c in range(n - 1):
                if mq[c] > 0:
                    pts.append(min(max(float(mp[c] / mq[c]), float(grid[c])), float(grid[c + 1])))
                    ms.append(float(mq[c]))
            law = RatioLaw(np.array(pts), np.array(ms), 2.0 * _U, 2.0 * _U, False)
    keep = law.masses * np.maximum(law.points, 1.0) > _SMALLEST_MASS if upper else law.masses > _SMALLEST_MASS
    law = RatioLaw(law.points[keep], law.masses[keep], law.mass_error, law.location_error, law.upper)
    return law, q_tail, p_tail


# ----------------------------------------------------------------------------- the pair
def ratio_pair(law: RatioLaw, *, p_flagged: float, q_flagged: float, p_singular: float = 0.0, label: str,
               trim: float = 0.0) -> PrivacyLossPair:
    """The pair (forward ``P/Q``, backward ``Q/P``) of a likelihood-ratio law under Q.

    ``p_flagged``/``q_flagged``: P- and Q-mass of outcomes set apart by truncation (``truncated_mass``:
    at +∞ for upper bounds, deleted for lower ones); ``p_singular``: exact P-mass where Q = 0 (loss +∞).
    Upper: masses × ``(1 + mass_error)(1 + location_error)``, losses ``log x`` with loss error
    ``log(1 + location_error)`` plus their rounding; lower: masses × ``(1 - mass_error)/(1 + location_error)``.
    The mass at ratio 0 is the backward direction's mass at +∞.  ``trim``: P-mass of the largest ratios
    and Q-mass of the smallest ones set apart (booked as truncated).  O(N).
    """
    lam = law.location_error
    if law.upper:
        p_flagged, q_flagged = p_flagged + UNDERFLOW_SLACK, q_flagged + UNDERFLOW_SLACK
        scale_p = _up((1.0 + law.mass_error) * (1.0 + lam))
        scale_q = _up(1.0 + law.mass_error)
    else:
        scale_p = (1.0 - law.mass_error) / (1.0 + lam) * (1.0 - 4.0 * _U)
        scale_q = (1.0 - law.mass_error) * (1.0 - 4.0 * _U)
    if law.upper and law.mass_error + lam > 3e-10:
        # The inflated masses may exceed 1 by ~mass_error; the pair must stay a (sub)probability up to the
        # 1e-9 the library tolerates for rounding.  Reached near t ~ 1e6 steps.
        raise ValueError(f"the rounding error budget of this random allocation ({law.mass_error + lam:.2g} relative) "
                         "exceeds 3e-10: use fewer steps per epoch (num_steps)")
    positive = law.points > 0.0
    x, m = law.points[positive], law.masses[positive]
    at_zero = float(np.sum(law.masses[~positive]))
    if trim > 0.0 and x.size > 2:
        # Set apart the extreme ratios: at most ``trim`` P-mass at the top and ``trim`` Q-mass at the bottom
        # (their losses only widen the accountant's lattice).  Flagging outcomes is a refinement of the
        # view (upper: books their P-mass at +∞ forward and their Q-mass at +∞ backward), deleting them a
        # sub-pair (lower); both are strict.
        p_mass, q_mass = m * x, m
        top = np.cumsum(p_mass[::-1])[::-1] <= trim  # suffix P-mass within the budget
        bottom = np.cumsum(q_mass) <= trim
        cut = top | bottom
        cut[np.argmax(p_mass)] = False
        if np.any(cut):
            p_flagged += float(np.sum(p_mass[cut])) * max(scale_p, 1.0) * (1.0 + 4.0 * x.size * _U)
            q_flagged += float(np.sum(q_mass[cut])) * max(scale_q, 1.0) * (1.0 + 4.0 * x.size * _U)
            x, m = x[~cut], m[~cut]
    losses = np.log(x)
    # log x errs by a few ulps of itself; the ratio's own error by log(1 + λ) ≤ λ.
    loss_error = _up(lam + 4.0 * _U * (1.0 + float(np.max(np.abs(losses), initial=0.0))))
    forward = LossDistribution(losses, m * x * scale_p, infinity_mass=min(p_singular, 1.0),
                               truncated_mass=min(p_flagged, 1.0), loss_error=loss_error)
    backward = LossDistribution(-losses, m * scale_q, infinity_mass=min(at_zero * scale_q, 1.0),
                                truncated_mass=min(q_flagged, 1.0), loss_error=loss_error)
    return PrivacyLossPair(forward, backward, label=label)
