"""Lattice measures of one ledger entry and how their composition is realised and read.

* :class:`LatticeDirection` -- one order of a pair on the lattice ``z_j = j·Δ`` (finite masses, the mass at
  ``+∞``, and for lower witnesses the moment generating function of the rounding offsets);
* :class:`Term` -- ``count`` rounds of one mechanism: dominating upper measures and lower witnesses;
* the lower end's certified shift (:func:`shift_certificate`) and the ledger's mass at ``+∞``.

Their compositions, realised, are read in :mod:`pldshuffle.pld.composites`.
"""

from __future__ import annotations

import itertools
import math
import sys
from dataclasses import dataclass, replace
from typing import cast

import numpy as np
from numpy.typing import NDArray

from .._kernels import UNIT_ROUNDOFF as _U, hockey_stick_profile
from .composition import Factor
from .discretize import ROUNDING_SCALES, DiscretizedDirection, LowerMeasure, lower_error_estimates

__all__ = [
    "LatticeDirection",
    "Term",
    "compose_infinity",
    "lower_direction",
    "profile_at",
    "rounding_penalty",
    "shift_certificate",
    "upper_direction",
]

#: Lower-end shifts (:func:`shift_certificate`): an even grid of _SHIFTS on [0, mean], and the Chernoff
#: quantiles at levels e^{-z²/2} for z = 0, step, .., max.
_SHIFTS = 97
_SHIFT_Z_STEP, _SHIFT_Z_MAX = 0.2, 40.0


@dataclass(frozen=True, eq=False)
class LatticeDirection:
    """One order of a pair on the lattice: finite masses at ``(start + i)·Δ`` and the mass at ``+∞``.

    ``offset_log_mgf`` (lower witnesses only) is ``log Σ_s ω(s) e^{-c·d(s)/Δ}`` for each ``c`` in
    :data:`pldshuffle.pld.discretize.ROUNDING_SCALES`, where ``d(s) ≥ 0`` is (a lower bound on) the amount the mass
    at ``s`` was rounded down by (0 where it was merged exactly onto the lattice); ``offset_mean`` is the
    mass-weighted mean of ``d/Δ``.  A merged lower witness carries the rounded-down measure of the same
    direction as ``alternative`` and the per-round error estimates of both (:meth:`for_rounds`).
    """

    start: int
    masses: NDArray[np.float64]
    infinity: float
    offset_log_mgf: NDArray[np.float64] | None = None
    offset_mean: float = 0.0
    alternative: LatticeDirection | None = None
    lower_errors: tuple[float, float, float, float] = (0.0, 0.0, 0.0, 0.0)
    #: Lower measures only: the exact pair's losses may lie this much below the measure's, so a composition
    #: of ``n`` rounds is read ``n`` times this further right (:attr:`Composite.loss_shift`).
    loss_error: float = 0.0

    @property
    def finite_mass(self) -> float:
        return float(self.masses.sum())

    def factor(self, count: int) -> Factor:
        return Factor(self.start, self.masses, count)

    def for_rounds(self, rounds: int) -> LatticeDirection:
        """The lower witness to compose ``rounds`` times: this merged measure, or its rounded-down
        alternative where that is estimated to lose less.

        Both are valid; the estimates are :func:`pldshuffle.pld.discretize.lower_error_estimates`.
        """
        if self.alternative is None:
            return self
        merged, rounded = lower_error_estimates(self.lower_errors, rounds)
        return self if merged <= rounded else self.alternative


@dataclass(frozen=True, eq=False)
class Term:
    """``count`` rounds of one mechanism (see the module notes): its upper measures (one per order of the
    neighbouring pair) and its lower witnesses (each a tuple of measures, one per order).

    Subclasses may carry more (the worst-case layer's terms keep their exact pairs and block witnesses);
    the certified core reads only these fields and :meth:`measures`.
    """

    upper: tuple[LatticeDirection, ...]
    lower: tuple[tuple[LatticeDirection, ...], ...]
    count: int = 1
    lower_count: int = 0  # rounds of the lower witnesses; 0 means ``count`` (a same-data block differs)
    #: Every outcome of one round of the mechanism has privacy loss in ``[-max_loss, max_loss]`` (ε0 when
    #: the view is a post-processing of an ε0-LDP report), truncated outcomes included; caps ε (see
    #: :attr:`pldshuffle.pld.certified.CertifiedPLD.loss_cap`).
    max_loss: float = math.inf

    def __post_init__(self) -> None:
        if self.count < 1 or not self.upper or not self.lower:
            raise ValueError("a term needs count >= 1, an upper measure and at least one lower witness")
        if self.lower_count == 0:
            object.__setattr__(self, "lower_count", self.count)

    def scaled(self, factor: int) -> Term:
        """The term repeated ``factor`` times."""
        return replace(self, count=self.count * factor, lower_count=self.lower_count * factor)

    def measures(self) -> list[LatticeDirection]:
        """Every lattice measure the term holds (counted against the memory cap while realising)."""
        return list(self.upper) + [d for witness in self.lower for d in witness]


def compose_infinity(parts: list[tuple[LatticeDirection, int]], *, upper: bool) -> float:
    """Mass at ``+∞`` of the composition, ``Π T^n - Π F^n`` (T total, F finite mass), rounded outward.

    Written as ``e^{L+G}·(1 - e^{-G})`` with ``L = Σ n log F`` and ``G = Σ n log1p(I/F)`` (I the infinity
    mass), ``-expm1(-G)`` for the bracket: T and F can agree to the last bit (I ≈ 1e-19 next to F ≈ 1),
    and their difference would then cancel to nothing; and ``G`` may be huge (2**40 rounds of I ≈ 1e-8),
    where ``e^L·expm1(G)`` would overflow although the value is at most 1.  The slack covers the roundings
    of ``e^x``, ``expm1`` and the products (a few u each, per part and per binary digit of ``n``) and the
    absolute error of the exponents (≤ (parts + 3)·u times the sum of their terms' magnitudes).  ``F``, the
    sum of the direction's masses, is rounded too: raised to the power ``n``, its rounding grows ``n``-fold
    and no multiple of ``|L|`` bounds it when ``F ≈ 1`` (2**40 rounds of a witness whose ``F + I`` rounded
    to just above 1 gave a lower end of 1.0001).  So ``F`` is the correctly rounded sum and its rounding
    error ``r`` enters the exponent (``math.fsum``, O(N)): ``L = Σ n (log F + log1p(r/F))``.
    """
    log_finite, log_growth, log_total, magnitude = 0.0, 0.0, 0.0, 0.0
    for d, n in parts:
        masses = d.masses.tolist()
        finite, infinity = math.fsum(masses), d.infinity
        residual = math.fsum(itertools.chain(masses, (-finite,)))  # Σ masses - finite, to a relative u
        if finite + infinity <= 0.0:
            return 0.0
        log_total += n * math.log(finite + infinity)
        if finite > 0.0:
            terms = (n * math.log(finite), n * math.log1p(residual / finite), n * math.log1p(infinity / finite))
            log_finite += terms[0] + terms[1]
            log_growth += terms[2]
            magnitude += sum(abs(t) for t in terms)
        else:
            log_finite = -math.inf
    # Dominating measures may weigh more than 1, so e^{L+G} can overflow after many rounds; the value is
    # then above 1, which the upper bound clips to anyway, and e^{700} still bounds it from below.
    if log_finite == -math.inf:  # no finite part survives: everything is at +∞
        value, exponent = math.exp(min(log_total, 700.0)), abs(log_total)
    else:
        value = math.exp(min(log_finite + log_growth, 700.0)) * -math.expm1(-log_growth)
        exponent = magnitude
    slack = 16.0 * _U * (len(parts) + sum(math.log2(n + 1) for _, n in parts)) + (len(parts) + 3) * _U * exponent
    if not upper:
        return min(max(0.0, value * (1.0 - slack)), 1.0)  # a mass: past 1 only by rounding
    # A positive mass below the normal range (e^L underflows) is not 0: the smallest normal double bounds it.
    floor = sys.float_info.min if any(d.infinity > 0.0 for d, _ in parts) else 0.0
    return min(1.0, max(value * (1.0 + slack), floor))


def profile_at(direction: LatticeDirection, indices: NDArray[np.int64], spacing: float) -> NDArray[np.float64]:
    """The direction's profile ``h(z_j)`` (infinity mass included) at the lattice indices ``j``.

    O(support) for the recursion over the direction's own support, then O(1) per index: above the support
    only the infinity mass is left; below it ``h(z_j) = e^{-kΔ} H_0 + (1 - e^{-kΔ}) A`` (``k`` steps below
    the first mass, ``H_0`` the profile there, ``A`` the finite mass), the same positive recursion in
    closed form.
    """
    profile, suffix = hockey_stick_profile(direction.masses, spacing)
    rel = np.asarray(indices, dtype=np.int64) - direction.start
    out = profile[np.clip(rel, 0, direction.masses.size)]  # the trailing 0 covers every index above
    below = rel < 0
    if np.any(below):
        decay = np.exp(rel[below] * spacing)
        out[below] = decay * profile[0] + (-np.expm1(rel[below] * spacing)) * suffix[0]
    return out + direction.infinity


def shift_certificate(combo: list[tuple[LatticeDirection, int]], spacing: float) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Shifts ``t`` and penalties ``≥ F·P[D < t]`` (Chernoff on the summed rounding offsets D ≥ 0)."""
    log_mgf = sum(n * d.offset_log_mgf for d, n in combo if d.offset_log_mgf is not None)
    mean = sum(n * d.offset_mean for d, n in combo)
    if np.isscalar(log_mgf) or mean <= 0.0:
        return np.zeros(1), np.zeros(1)
    # An even grid on [0, mean] (fine when D spans few lattice steps), and for each level e^{-z²/2} the
    # largest shift whose Chernoff bound is at most that level (closed form per scale c: c·t + log_mgf[c]
    # ≤ log level).  D sums many bounded offsets and is near Gaussian, so the latter are its quantiles
    # _SHIFT_Z_STEP standard deviations apart where the useful shifts lie; the even grid alone spaced them
    # ~6 sd apart after 1e5 rounds (ε(1e-10) of 2000 rounds of RR: lower end 1360.278 → 1360.333, upper 1360.372).
    levels = -0.5 * np.arange(0.0, _SHIFT_Z_MAX + _SHIFT_Z_STEP / 2, _SHIFT_Z_STEP) ** 2
    log_mgf = np.asarray(log_mgf)
    quantiles = np.max((levels[:, None] - log_mgf[None, :]) / ROUNDING_SCALES[None, :], axis=1)
    steps = np.unique(np.clip(np.concatenate([np.linspace(0.0, mean, _SHIFTS), quantiles]), 0.0, mean))
    return steps * spacing, rounding_penalty(log_mgf, steps)


def rounding_penalty(log_mgf: NDArray[np.float64], steps: NDArray[np.float64]) -> NDArray[np.float64]:
    """Bounds on ``P[D < t]`` at ``t = steps·Δ`` (``steps[0] = 0``) for rounding offsets ``D ≥ 0`` whose
    ``log E[e^{-cD/Δ}]`` is at most ``log_mgf[c]`` for each ``c`` in ``ROUNDING_SCALES``: Chernoff,
    ``min_c e^{c·steps + log_mgf[c]}``, and 0 for no shift."""
    with np.errstate(over="ignore"):  # a bound above 1 (even +inf) is still a bound: the shift is then not used
        penalty = np.exp(np.min(ROUNDING_SCALES[:, None] * steps[None, :] + log_mgf[:, None], axis=0)) * (1.0 + 1e-12)
    penalty[0] = 0.0  # D ≥ 0: no shift needs no correction
    return cast(NDArray[np.float64], penalty)


def upper_direction(d: DiscretizedDirection) -> LatticeDirection:
    """Connect-the-dots lattice measure of a discretised direction (truncated mass booked at +∞)."""
    return LatticeDirection(d.upper_start, d.upper, d.upper_infinity)


def lower_direction(d: DiscretizedDirection) -> LatticeDirection:
    """Merged lattice measure of a discretised direction, with its rounding-offset certificate and the
    rounded-down measure as its alternative (:meth:`LatticeDirection.for_rounds`)."""

    def measure(m: LowerMeasure, alternative: LatticeDirection | None = None,
                lower_errors: tuple[float, float, float, float] = (0.0, 0.0, 0.0, 0.0)) -> LatticeDirection:
        log_mgf = np.asarray(m.rounding_log_mgf, dtype=np.float64) + 1e-12  # covers the sum's rounding
        return LatticeDirection(m.start, m.masses, d.lower_infinity, log_mgf, m.rounding_mean, loss_error=d.loss_error,
                                alternative=alternative, lower_errors=lower_errors)

    return measure(d.merged, alternative=measure(d.rounded), lower_errors=d.lower_errors())
