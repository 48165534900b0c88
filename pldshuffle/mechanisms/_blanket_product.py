"""Blanket pairs of product hit laws: each fixed-``B`` pair is a product of two one-dimensional pairs.

Split (docs/mathematics.md#blanket-product).  When the hits are non-negatively correlated under ``ω``
(OUE, symmetric RAPPOR, local hashing with ``d ≥ 3``), ``law(hit1, hit2) = (1-λ)·Bern(p)⊗Bern(p) + λ·δ_(0,0)``
(:meth:`~._blanket_model.HitModel.product_split`; ``λ`` is the weight of the outputs hit by every input, e.g.
OUE's all-ones report, ``λ ≈ (e-1)·q^d``).  Write each blanket draw as a *point* draw (type ``(0,0)``) with
probability ``λ``, else a *product* draw, and the victim's report likewise (a point draw with probability
``λ' = λ/(1 + a·p1)`` under both hypotheses, ``a = e^{ε_h} - 1``):

* upper: revealing which draws are point draws (the victim's included) dominates the blanket pair; the
  revealed point draws are then independent of the victim (dropped), and a victim point draw makes the
  views equal.  So the pair ``λ'·(loss 0) + (1-λ')·(product blanket pair with B' ~ Bin(n-1, γ(1-λ)))``
  dominates it.
* lower: on the event "no point draw at all" (probability ``(1-λ')(1-λ)^B`` given ``B``) the loss is that
  of the product pair with ``B`` product draws (the loss depends on the hits only); the blanket pair's loss
  distribution is at least the restriction to that event, so ``(1-λ')(1-λ)^{n-1}·(product pair with
  B ~ Bin(n-1, γ))`` is a sub-distribution below it (deleting mass only lowers δ).

Product pair at ``B = b`` (``m = b + 1`` items): under the base law ``N1, N2 ~ Bin(m, p)`` independent, and
``P = base · T(N1)/Bin(N1)``, ``T(N) = Bin(m,p)(N)·(m + aN)/(m(1 + ap))``, ``Q`` the same with ``N2``.  So
``(P, Q) = (T, Bin) ⊗ (Bin, T)`` on ``(N1, N2)``: its loss ``ℓ(N1) - ℓ(N2)``, ``ℓ(N) = log(T/Bin)(N) =
log1p(a(N - mp)/(m(1 + ap)))``, is the sum of two independent losses, ``ℓ(N1)`` under ``T`` and ``-ℓ(N2)``
under ``Bin``.  Each one-dimensional law is put on lattice cells of width ``h``; the *upper* pair convolves
their spreads to the cell ends (δ of any composition is convex in each factor's ``e^{-loss}``, so spreading
one factor and then the other raises it), the *lower* pair merges, for every ``k``, the outcomes whose factors
lie in cells ``i`` and ``t`` with ``i + t = k`` into one (a post-processing of the product pair; its mass and
``e^{-loss}``-moment are convolutions of the factors' cell masses and moments).  Both are second order in
the cell width.  Cost per ``b``: O(window) pmfs and four direct convolutions of ``K`` cells
(:data:`COMPONENT_CELLS`), whatever ``n``.
"""

from __future__ import annotations

import math

import numpy as np

from .._kernels import UNIT_ROUNDOFF as _U, bin_points
from ..pld import LossDistribution, log_ratio_error
from ._binomial import binomial_logpmf
from ._blanket_model import HitModel
from ._blanket_support import grouped_bounds
from ._krr_support import tilted_windows
from ..pld.discretize import spread_to_ends

__all__ = ["COMPONENT_CELLS", "product_bounds", "product_fixed_b"]

#: Lattice cells across each factor's loss range (the convolutions cost COMPONENT_CELLS² operations).
COMPONENT_CELLS = 2**11


def _factor(values: np.ndarray, masses: np.ndarray, spacing: float) -> tuple[int, np.ndarray, np.ndarray]:
    """Cells ``j0 ..`` of one factor: ``(j0, mass, tilt)`` (:func:`~pldshuffle._kernels.bin_points`)."""
    j0 = int(math.floor(values.min() / spacing)) - 1
    size = int(math.floor(values.max() / spacing)) - j0 + 2
    mass, tilt = np.zeros(size), np.zeros(size)
    if bin_points(values, masses, spacing, j0, mass, tilt):
        raise RuntimeError("internal error: a factor's loss fell off its lattice")
    return j0, mass, tilt


def product_fixed_b(
    b: int, p: float, gain: float, tail_mass: float, spacing: float, constant: float | None = None
) -> tuple[LossDistribution, LossDistribution]:
    """``(lower, upper)`` of the product pair with ``b`` product draws and hit probability ``p`` (module
    docstring), on cells of width ``max(spacing, range/COMPONENT_CELLS)``.

    ``constant`` (default ``m = b + 1``) is ``c`` in the loss ``log(c + a·N1) - log(c + a·N2)`` and the tilt
    ``T(N) = Bin(m, p)(N)·(c + aN)/(c + amp)``: ``c - m`` further items of type ``(1, 1)`` (void reports with
    participation, :mod:`._blanket_participation`); any real ``c > 0``.

    Truncation: ``N`` to the window of :func:`~._krr_support.tilted_windows` (tail ``tail_mass``), which drops
    ``q0 + q1`` of ``Bin`` and ``t0·q0 + t1·q1`` of ``T`` (``t0 = 1/(1+ap)``, ``t1 = (1+a)/(1+ap)``, the tilt at
    ``N = 0`` and ``N = m``); the product drops at most their sum, booked.
    """
    m = b + 1
    lo, hi, q0, q1 = (v[0] for v in tilted_windows(np.array([m]), p, tail_mass))
    n_values = np.arange(int(lo), int(hi) + 1, dtype=np.int64)
    log_bin = binomial_logpmf(n_values, m, p)
    c = float(m) if constant is None else float(constant)
    denom = c + gain * m * p
    loss = np.log1p(gain * (n_values - m * p) / denom)
    bin_mass = np.exp(log_bin)
    tilted_mass = np.exp(log_bin + loss)
    t0, t1 = c / denom, (c + gain * m) / denom  # the affine tilt at N = 0 and N = m
    truncated = min(1.0, float(q0 + q1 + t0 * q0 + t1 * q1))
    # Each factor's loss: log1p of a quotient of a few rounded operations (relative error ≤ 8u of the
    # argument, plus the ulps of the log), counted for both factors.
    largest = float(np.max(np.abs(loss), initial=0.0))
    error = 2.0 * log_ratio_error(largest, 8.0 * _U)
    if n_values.size == 1 or largest == 0.0:
        exact = LossDistribution(np.zeros(1), np.array([float(tilted_mass.sum() * bin_mass.sum())]), truncated_mass=truncated, loss_error=error)
        return exact, exact
    h = max(spacing, float(loss.max() - loss.min()) / COMPONENT_CELLS)
    ja, mass_a, tilt_a = _factor(loss, tilted_mass, h)  # ℓ(N1) under T
    jc, mass_c, tilt_c = _factor(-loss, bin_mass, h)  # -ℓ(N2) under Bin

    # Upper: the convolution of the two spreads (on lattice points; exact sums of positive products).
    up = np.convolve(spread_to_ends(mass_a, tilt_a, h), spread_to_ends(mass_c, tilt_c, h))
    grid = np.asarray((ja + jc + np.arange(up.size)) * h, dtype=np.float64)
    lattice_error = 4.0 * _U * (1.0 + float(np.max(np.abs(grid))))
    upper = LossDistribution(grid, up * (1.0 + 4.0 * (mass_a.size + mass_c.size) * _U), truncated_mass=truncated, loss_error=error + lattice_error)

    # Lower: merge the outcomes whose two factors fall in cells i and t with i + t = k (a post-processing of
    # the product): mass Σ m_i m'_t and e^{-loss}-moment relative to z_k of Σ (m_i + τ_i)(m'_t + τ'_t),
    # i.e. tilt T_k = conv(m, τ') + conv(τ, m') + conv(τ, τ') (τ ≤ 0 the factors' tilts), all direct sums.
    lower_mass = np.convolve(mass_a, mass_c)
    lower_tilt = np.convolve(mass_a, tilt_c) + np.convolve(tilt_a, mass_c) + np.convolve(tilt_a, tilt_c)
    with np.errstate(divide="ignore", invalid="ignore"):
        offset = -np.log1p(np.clip(lower_tilt / lower_mass, math.expm1(-2.0 * h), 0.0))
    # Rounded down (towards z_k: a lower loss): the sums err by ~(cells)·u relative.
    offset = np.where(lower_mass > 0, np.clip(offset * (1.0 - 1e-9), 0.0, 2.0 * h), 0.0)
    lower = LossDistribution(
        np.asarray((ja + jc + np.arange(lower_mass.size)) * h + offset, dtype=np.float64), lower_mass * (1.0 - 4.0 * (mass_a.size + mass_c.size) * _U),
        truncated_mass=truncated, loss_error=error + lattice_error + 2.0 * h * 1e-9,
    )
    return lower, upper


def product_bounds(n: int, model: HitModel, tail_mass: float, tolerance: float) -> tuple[LossDistribution, LossDistribution]:
    """``(lower, upper)`` of the blanket pair of a product hit law (module docstring) over groups of ``B``
    (:func:`~._blanket_support.grouped_bounds`).  Time ~(number of groups)·(K² + window) per evaluation."""
    split = model.product_split()
    if split is None:
        raise ValueError("internal error: product_bounds needs a product hit law")
    p, lam = split
    gain = model.gain
    victim_point = lam / (1.0 + gain * model.hit_probability)
    lower_scale = math.exp(math.log1p(-victim_point) + (n - 1) * math.log1p(-lam)) if lam > 0.0 else 1.0

    def width(b: int) -> float:
        lo, hi, _, _ = tilted_windows(np.array([b + 1]), p, tail_mass)
        m = b + 1
        return 2.0 * (math.log1p(gain * (hi[0] - m * p) / (m * (1 + gain * p))) - math.log1p(gain * (lo[0] - m * p) / (m * (1 + gain * p))))

    return grouped_bounds(
        n, model.gamma, tail_mass, tolerance,
        lambda b, h: product_fixed_b(b, p, gain, tail_mass, h),
        width, model.log_ratio, 2 * COMPONENT_CELLS,
        upper_gamma=model.gamma * (1.0 - lam), upper_zero_atom=victim_point, lower_scale=lower_scale,
    )
