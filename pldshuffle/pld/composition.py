"""FFT composition of lattice measures with every error term certified, in a tilted frame.

A composition is a product of *factors* ``(start, masses, count)`` on one lattice ``z_j = j·Δ``.  It is
*realised* for one tilt ``θ ≥ 0``: each factor's masses ``a(z)`` are replaced by the normalised tilted
measure ``a(z)e^{θz}/M(θ)`` (``M(θ) = Σ a(z)e^{θz}``), the tilted factors are convolved by one FFT, and the
result is mapped back with ``Π M_k(θ)^{n_k} · e^{-θz}``.  Convolution commutes with tilting, so this is
an identity; what it changes is the floating-point error: the FFT's *absolute* error ``E`` in the tilted
frame becomes ``E·Π M_k(θ)^{n_k} e^{-θz}`` at loss ``z``, which is *relative* to the Chernoff bound of the
tail at the saddle point of ``θ``.  ``θ = 0`` is the plain composition.

Error terms of a realisation on the circular window ``[lo, hi)`` (documented in
``docs/mathematics.md#error-terms``):

* **Floating point.**  Pointwise ``|computed - exact| ≤ E`` in the tilted frame, where ``E`` combines the
  forward FFT bound ``log2(m)·η·√m·‖a_k‖₂`` (Higham, *Accuracy and Stability*, Thm 24.2, ``η = 8u``)
  propagated through the spectral powers with the exact telescoping inequality
  ``|x^n - y^n| ≤ n r^{n-1}|x - y|`` (``|x|, |y| ≤ r``), the rounding of the powers, and the inverse FFT.
* **Wrap-around.**  Tilted mass outside the window folds into it (``P̃[S ≥ hi] + P̃[S < lo]``, Chernoff
  bounds); it only *adds* mass, so the upper bound keeps it, and the lower bound subtracts its untilted
  image, at most ``Π M_k^{n_k} e^{-θε}`` times the folded tilted mass for the weights above ``ε``.
  Untilted mass at or above ``hi`` is missing from the window: the upper bound adds a Chernoff bound of
  ``P[S ≥ hi]`` as if it sat at ``+∞``.  Mass below ``lo`` only matters for ``ε < lo``, so a realisation
  answers upper bounds for ``ε ≥ lo`` only.
* **Relative rounding** of the input masses, the tilt and the profile recursion: a relative slack.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import cached_property
from typing import cast

import numpy as np
from numpy.typing import NDArray

from .._kernels import UNIT_ROUNDOFF as _U, hockey_stick_profile
from .fft import ETA as _ETA, FFTBackend, forward_error, norm2

__all__ = ["CHERNOFF_LAMBDAS", "Factor", "Realization", "composed_log_mgf", "composed_support", "log_mgf", "log_mgf_rounding", "realize", "window"]

#: λ values for Chernoff bounds on the loss sum: loss scales O(1e-7..1e3) (a saddle point λ ≈ log(1/δ)/ε; 64
#: rounds of 2RR at n = 1e6, ε0 = 1e-3 have ε(1e-15) ≈ 5e-5, λ ≈ 7e5).
CHERNOFF_LAMBDAS = np.geomspace(1e-3, 1e7, 110)
_MGF_BLOCKS = 1024


@dataclass(frozen=True, eq=False)
class Factor:
    """``count`` independent copies of a non-negative lattice measure with masses at ``(start + i)·Δ``."""

    start: int
    masses: NDArray[np.float64]
    count: int

    @cached_property
    def support(self) -> tuple[int, int]:
        """First and last lattice index holding mass."""
        nz = np.flatnonzero(self.masses > 0)
        return self.start + int(nz[0]), self.start + int(nz[-1])

    @cached_property
    def blocks(self) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.float64]]:
        """At most 1024 blocks of the support: ``(log block mass, first index, last index)``."""
        first, last = self.support
        masses = self.masses[first - self.start : last - self.start + 1]
        block = max(1, -(-masses.size // _MGF_BLOCKS))
        pad = (-masses.size) % block
        sums = np.concatenate([masses, np.zeros(pad)]).reshape(-1, block).sum(axis=1)
        low = first + block * np.arange(sums.size)
        keep = sums > 0
        return np.log(sums[keep]), low[keep].astype(np.float64), (low[keep] + block - 1).astype(np.float64)


def log_mgf(factor: Factor, spacing: float, lambdas: NDArray[np.float64], *, exact: bool = False) -> NDArray[np.float64]:
    """``log Σ_i a_i e^{λ z_i}`` for each λ (any sign): exact (O(N·L)) or a blocked upper bound (O(4096·L)).

    The blocked bound puts each block's mass at the end of the block that maximises ``e^{λz}``.
    """
    lam = np.asarray(lambdas, dtype=np.float64)[:, None]
    if exact:
        nz = np.flatnonzero(factor.masses > 0)
        logm, z = np.log(factor.masses[nz]), (factor.start + nz) * spacing
        expo = logm[None, :] + lam * z[None, :]
    else:
        logm, low, high = factor.blocks
        expo = logm[None, :] + np.where(lam > 0, lam * (high * spacing)[None, :], lam * (low * spacing)[None, :])
    top = expo.max(axis=1)
    return cast(NDArray[np.float64], top + np.log(np.exp(expo - top[:, None]).sum(axis=1)))


def composed_support(factors: list[Factor], spacing: float) -> tuple[float, float]:
    """Lowest and highest loss the composition of the factors can take (exactly: lattice indices add)."""
    return (sum(f.count * f.support[0] for f in factors) * spacing, sum(f.count * f.support[1] for f in factors) * spacing)


def composed_log_mgf(factors: list[Factor], spacing: float, lambdas: NDArray[np.float64]) -> NDArray[np.float64]:
    return cast(NDArray[np.float64], np.sum([f.count * log_mgf(f, spacing, lambdas) for f in factors], axis=0))


def log_mgf_rounding(factors: list[Factor], spacing: float, lambdas: NDArray[np.float64]) -> NDArray[np.float64]:
    """Bound on the floating-point error of :func:`composed_log_mgf` (blocked or exact) at each λ.

    Each term ``log a + λz`` errs by a few ``u`` of its magnitude, the log-sum-exp of ``N`` terms by
    ``(N + 3)u`` more, and the weighted sum over factors by ``u`` per addition: so the error grows with
    ``|λ|·max|z|`` (large λ serve small losses, where it stays ~1e-13).  Certified Chernoff bounds add it
    to their exponent.
    """
    lam = np.abs(np.asarray(lambdas, dtype=np.float64))
    error = np.zeros_like(lam)
    for f in factors:
        nz = np.flatnonzero(f.masses > 0)
        logs = np.abs(np.log(f.masses[nz]))
        reach = (abs(f.start) + 2 * f.masses.size) * spacing  # |z| of every index, blocks' ends included
        error += f.count * (4.0 * (float(logs.max()) + 2.0 * lam * reach) + nz.size + 8.0)
    return 8.0 * (len(factors) + 1) * _U * error


def window(factors: list[Factor], spacing: float, theta: float, tolerance: float) -> tuple[float, float]:
    """Smallest ``[lo, hi]`` whose tilted Chernoff tails ``P̃[S ≥ hi]``, ``P̃[S < lo]`` are ≤ ``tolerance``.

    Also never wider than the support of the composition (beyond it both tails are exactly 0).
    """
    base = sum(f.count * float(log_mgf(f, spacing, np.array([theta]), exact=True)[0]) for f in factors)
    both = composed_log_mgf(factors, spacing, np.concatenate([theta + CHERNOFF_LAMBDAS, theta - CHERNOFF_LAMBDAS])) - base
    plus, minus = both[: CHERNOFF_LAMBDAS.size], both[CHERNOFF_LAMBDAS.size :]
    log_tol = math.log(tolerance)
    hi = float(np.min((plus - log_tol) / CHERNOFF_LAMBDAS))
    lo = float(np.max(-(minus - log_tol) / CHERNOFF_LAMBDAS))
    support_lo, support_hi = composed_support(factors, spacing)
    return max(lo, support_lo), min(hi, support_hi + spacing)


@dataclass(frozen=True, eq=False)
class Realization:
    """A composition realised on the window ``[lo_index, lo_index + size)`` for the tilt ``theta``.

    ``masses`` are the untilted composed masses (finite losses; clipped at 0, which both bounds allow
    since the exact masses are non-negative).  In the tilted frame the computed masses differ from the
    exact circular convolution by a vector of 2-norm at most ``fp_error``; untilting multiplies entry j by
    ``e^{log_scale - θ z_j}``.  ``relative_error`` bounds the relative rounding of the masses.
    """

    spacing: float
    theta: float
    lo_index: int
    size: int
    masses: NDArray[np.float64]
    log_scale: float  # Σ n_k log M_k(θ)
    bottom_mass: float  # bound on untilted P[S < lo]: mass below the window, added to upper values at ε < lo
    fp_error: float  # 2-norm of the round-off vector, tilted frame
    folded_tilted: float  # P̃[S ≥ hi] + P̃[S < lo] (bounds), tilted frame
    top_mass: float  # bound on untilted P[S ≥ hi]
    relative_error: float
    _profile: NDArray[np.float64]
    _suffix: NDArray[np.float64]

    @property
    def lo(self) -> float:
        return self.lo_index * self.spacing

    def finite_delta(self, epsilon: NDArray[np.float64]) -> NDArray[np.float64]:
        """``Σ_{z_l > ε} b_l (1 - e^{ε - z_l})`` over the stored masses (no error terms); O(1) per ε."""
        eps = np.asarray(epsilon, dtype=np.float64)
        # Clipped before the cast: ε/Δ beyond 2^63 (the inversion probes up to 1e308) must not wrap around.
        k = np.clip(np.floor(eps / self.spacing) + 1.0 - self.lo_index, 0, self.size).astype(np.int64)
        gap = np.minimum(eps - (self.lo_index + k) * self.spacing, 0.0)
        return self._suffix[k] * (-np.expm1(gap)) + np.exp(gap) * self._profile[k]

    def folded_delta(self, epsilon: NDArray[np.float64]) -> NDArray[np.float64]:
        """Bound on the untilted image of the folded tilted mass, weighted above ε: ≤ P̃_fold·e^{log_scale-θε}."""
        eps = np.asarray(epsilon, dtype=np.float64)
        if self.folded_tilted == 0.0:
            return np.zeros(eps.shape)
        with np.errstate(over="ignore"):
            return self.folded_tilted * np.exp(self.log_scale - self.theta * eps)

    def error_delta(self, epsilon: NDArray[np.float64], l2_tilted: float) -> NDArray[np.float64]:
        """Bound on ``Σ_{z_j > ε} |e_j| e^{log_scale - θz_j}(1 - e^{ε - z_j})`` when ``‖e‖₂ ≤ l2_tilted``.

        Cauchy-Schwarz: at most ``‖e‖₂ · (Σ_{z_j > ε} e^{2(log_scale - θz_j)})^{1/2}``, a geometric series
        over the lattice points above ε (θ > 0), or the square root of their number (θ = 0).
        """
        eps = np.asarray(epsilon, dtype=np.float64)
        if l2_tilted == 0.0:
            return np.zeros(eps.shape)
        dx, theta = self.spacing, self.theta
        j0 = np.floor(eps / dx) + 1.0
        if theta == 0.0:
            # A scale past e^709 (a dominating measure's mass, above 1, after ~1e12 rounds) gives inf: no bound.
            count = np.maximum(self.lo_index + self.size - np.maximum(j0, self.lo_index), 0.0)
            with np.errstate(over="ignore", invalid="ignore"):
                return np.where(count > 0.0, l2_tilted * np.exp(self.log_scale) * np.sqrt(count), 0.0)
        with np.errstate(over="ignore"):
            value = np.exp(self.log_scale - theta * j0 * dx) / math.sqrt(-math.expm1(-2.0 * theta * dx))
        return l2_tilted * value * (1.0 + 4.0 * _U)


def _power(spectrum: NDArray[np.complex128], count: int) -> NDArray[np.complex128]:
    """``spectrum ** count`` by repeated squaring (relative error ≤ 2·log2(count)+2 ulps per entry)."""
    result: NDArray[np.complex128] | None = None
    base = spectrum
    while count:
        if count & 1:
            result = base.copy() if result is None else result * base
        count >>= 1
        if count:
            base = base * base
    assert result is not None
    return result


def realize(
    factors: list[Factor], spacing: float, theta: float, lo_index: int, size: int, backend: FFTBackend
) -> Realization:
    """Compose the (non-empty) factors on the circular window ``[lo_index, lo_index + size)`` for tilt θ.

    O(m log m) per factor plus O(m log n_k) for the powers, m = ``size`` (an even FFT-friendly length).
    """
    spectrum: NDArray[np.complex128] | None = None
    bound: NDArray[np.float64] | None = None  # pointwise bound on the true |ĉ_j| (and on the computed one)
    spread = np.zeros(size // 2 + 1)  # pointwise bound on |computed ĉ_j − exact ĉ_j|
    log_scale = 0.0
    total = 0
    max_abs_z = 0.0
    for f in factors:
        log_m = float(log_mgf(f, spacing, np.array([theta]), exact=True)[0])
        log_scale += f.count * log_m
        nz = np.flatnonzero(f.masses > 0)
        z = (f.start + nz) * spacing
        max_abs_z = max(max_abs_z, float(np.max(np.abs(z))))
        tilted = np.exp(np.log(f.masses[nz]) + theta * z - log_m)
        buffer = cast(NDArray[np.float64], np.bincount((f.start + nz) % size, weights=tilted, minlength=size))  # absolute index mod m
        spec = backend.rfft(buffer)
        err = forward_error(norm2(tilted), size)
        r = np.minimum(np.abs(spec) + err, 1.0 + 4.0 * _U * size)  # |â| ≤ ‖a‖₁ = 1 (up to rounding)
        power_r = r ** f.count
        # |x^n - y^n| ≤ n r^{n-1} |x - y| for |x|, |y| ≤ r; products telescope the same way.
        own = f.count * err * r ** (f.count - 1)
        if spectrum is None:
            spectrum, bound, spread = _power(spec, f.count), power_r, own
        else:
            assert bound is not None  # set with the spectrum
            spread = spread * power_r + bound * own
            spectrum, bound = spectrum * _power(spec, f.count), bound * power_r
        total += f.count
    assert spectrum is not None and bound is not None
    spread = spread + (2.0 * math.log2(total + 1) + 2.0 * len(factors) + 2.0) * _U * bound
    raw = np.roll(backend.irfft(spectrum, size), -(lo_index % size))  # position p ↦ index lo_index + p
    # Inverse FFT: ‖δb‖₂ ≤ ‖δĉ‖₂/√m + log2(m)·η·‖b‖₂; the full spectrum has twice the half's energy.
    spectral = math.sqrt(2.0) * norm2(spread) / math.sqrt(size)
    b_norm = norm2(raw)
    fp_error = 1.01 * (spectral + math.log2(size) * _ETA * (b_norm + spectral))
    z = (lo_index + np.arange(size)) * spacing
    # Untilt in log space; exponents are capped (only far below ε ≥ 0 can they be large, where a smaller
    # stored mass leaves the upper bound untouched and only lowers the lower bound).
    with np.errstate(divide="ignore"):
        exponent = np.minimum(np.log(np.maximum(raw, 0.0)) + log_scale - theta * z, 700.0)
    masses = np.exp(exponent)
    profile, suffix = hockey_stick_profile(masses, spacing)
    # Relative slack: input masses (booked by the caller), the exponent of the untilt, the profile recursion.
    relative = 16.0 * _U * (abs(log_scale) + theta * max_abs_z * total + total + size)
    hi = (lo_index + size) * spacing
    lambdas = CHERNOFF_LAMBDAS
    grid = np.concatenate([theta + lambdas, theta - lambdas, lambdas, -lambdas])
    # Rounded up: the MGFs' own rounding, that of log_scale (subtracted), and of the exponents formed below.
    rounding = log_mgf_rounding(factors, spacing, np.append(grid, theta))  # the last entry: log_scale's
    both = composed_log_mgf(factors, spacing, grid) + rounding[:-1] + rounding[-1]
    both = both + 4.0 * _U * (np.abs(both) + abs(log_scale) + np.abs(grid) * max(abs(lo_index), abs(lo_index + size)) * spacing)
    plus, minus = both[: lambdas.size] - log_scale, both[lambdas.size : 2 * lambdas.size] - log_scale
    untilted_mgf, untilted_below = both[2 * lambdas.size : 3 * lambdas.size], both[3 * lambdas.size :]
    support_lo, support_hi = composed_support(factors, spacing)
    # Beyond the support the tails are exactly 0 (indices are exact integers; Δ-multiples compared with margin).
    covers_top = support_hi < hi - 0.5 * spacing
    covers_bottom = support_lo > lo_index * spacing - 0.5 * spacing
    above = 0.0 if covers_top else float(min(1.0, np.exp(np.min(plus - lambdas * hi))))
    below = 0.0 if covers_bottom else float(min(1.0, np.exp(np.min(minus + lambdas * (lo_index * spacing)))))
    # Untilted P[S ≥ hi] ≤ e^{log_scale - θ hi} P̃-Chernoff, or directly with λ = 0 in the untilted frame.
    untilted = untilted_mgf - lambdas * hi
    with np.errstate(over="ignore"):  # a Chernoff bound above 1 (even inf) is clipped to 1
        top = 0.0 if covers_top else float(min(1.0, np.exp(min(float(np.min(untilted)), float(np.min(plus - lambdas * hi)) + log_scale - theta * hi))))
    # Untilted P[S < lo] ≤ min_λ E[e^{-λS}] e^{λ lo}: what the window misses of δ(ε) at ε < lo, where the
    # masses on [ε, lo) would each add at most themselves.
    with np.errstate(over="ignore"):
        bottom = 0.0 if covers_bottom else float(min(1.0, np.exp(np.min(untilted_below + lambdas * (lo_index * spacing)))))
    return Realization(
        spacing, theta, lo_index, size, masses, log_scale, bottom, fp_error, above + below, top, relative, profile, suffix
    )
