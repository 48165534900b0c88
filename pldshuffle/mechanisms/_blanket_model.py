"""The blanket decomposition of a local randomizer, as the few numbers its blanket pair depends on.

For a randomizer ``R`` (inputs ``x``, outputs ``y``) the *blanket* is ``m(y) = min_x R(x)(y)``, of total
mass ``γ = Σ_y m(y)``, and the blanket law ``ω = m/γ``.  Every ``R(x) = γ·ω + (1-γ)·R̃_x``.  For a victim
pair ``(x1, x2)`` the blanket pair (docs/mathematics.md#blanket) depends on the outputs only through their
*type* ``(ρ1(y), ρ2(y))``, ``ρ_j(y) = R(x_j)(y)/m(y)`` (in ``[1, e^{ε0}]``), and on the law of the types
under ``ω``.

Every named randomizer of :mod:`pldshuffle.randomizers` has *hit* types: ``ρ_j(y) = E`` when ``y`` "hits"
``x_j`` and ``1`` otherwise, with one ratio ``E`` (``e^{ε0}``) and a law of ``(hit1, hit2)`` under ``ω`` that is
symmetric in ``x1 ↔ x2``.  :class:`HitModel` holds ``(γ, E, π11, π10)``: ``π11 = ω(both hit)``,
``π10 = π01 = ω(exactly x_1 hit)``.  The closed forms below are derived in docs/mathematics.md#blanket and
checked against :func:`matrix_types` on small instances by the test-suite.

Poisson participation ``q`` (``R_q(x) = (1-q)·δ_⊥ + q·R(x)``): ``⊥`` is in the blanket with ``ρ = (1, 1)``
(a miss for both), so ``γ_q = 1 - q + qγ`` and the hit probabilities scale by ``qγ/γ_q``
(:meth:`HitModel.with_participation`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from .._kernels import UNIT_ROUNDOFF
from ..randomizers.base import Randomizer
from ..randomizers.named import RAPPOR, OUE, BinaryRR, HadamardResponse, KaryRR, LocalHashing, SubsetSelection

__all__ = ["HitModel", "MatrixTypes", "hit_model", "hit_model_of_types", "matrix_types", "participating_blanket_mass", "spread_hit_model"]

#: Hit models with a larger ``log E`` are left to enumeration (``E - 1`` must be a finite double).
MAX_LOG_RATIO = 500.0
#: Two ``ρ`` values (or type probabilities) equal within this relative tolerance are the same type.
TYPE_RTOL = 1e-12


@dataclass(frozen=True)
class HitModel:
    """The blanket of a randomizer with hit types, for one (any) victim pair.

    Attributes
    ----------
    gamma : float
        Blanket mass ``γ ∈ (0, 1]``: another user's report is a fresh draw from ``ω`` with this probability.
    log_ratio : float
        ``log E``: a report hitting ``x_j`` has ``ρ_j = E``, otherwise ``ρ_j = 1``.
    pi11, pi10 : float
        ``ω(hit both)`` and ``ω(hit x_1 only) = ω(hit x_2 only)``; ``ω(hit neither) = 1 - π11 - 2π10``.
    """

    gamma: float
    log_ratio: float
    pi11: float
    pi10: float

    @property
    def pi00(self) -> float:
        """``ω(hit neither)``."""
        return max(0.0, 1.0 - self.pi11 - 2.0 * self.pi10)

    @property
    def hit_probability(self) -> float:
        """``p1 = π11 + π10``: the probability that a blanket draw hits ``x_1``."""
        return self.pi11 + self.pi10

    @property
    def conditional_hits(self) -> tuple[float, float]:
        """``(α, β)``: ``α = P(hit x2 | hit x1) = π11/p1`` and ``β = P(hit x2 | miss x1) = π10/(1 - p1)``.

        ``β = 1`` exactly when ``ω(hit neither)`` is within rounding of 0 (a few ulps left by the closed
        forms, e.g. (d-1)-subset selection, whose every report holds ``x1`` or ``x2``): the fixed-``B``
        evaluation then treats the hits of ``x2`` among the misses of ``x1`` as certain."""
        p1 = self.hit_probability
        alpha = self.pi11 / p1 if p1 > 0.0 else 0.0
        if p1 >= 1.0:
            return alpha, 0.0
        beta = 1.0 if self.pi00 <= 4.0 * UNIT_ROUNDOFF else min(1.0, self.pi10 / (1.0 - p1))
        return alpha, beta

    @property
    def gain(self) -> float:
        """``a = E - 1``."""
        return math.expm1(self.log_ratio)

    def with_participation(self, q: float) -> HitModel:
        """The model of ``R_q`` (void output ``⊥`` of type ``(1, 1)``, taken with probability ``1 - q``)."""
        if q == 1.0:
            return self
        gamma_q = participating_blanket_mass(self.gamma, q)
        scale = q * self.gamma / gamma_q
        return HitModel(gamma_q, self.log_ratio, self.pi11 * scale, self.pi10 * scale)

    def product_split(self) -> tuple[float, float] | None:
        """``(p, λ)`` with ``law(hit1, hit2) = (1-λ)·Bern(p)⊗Bern(p) + λ·δ_(0,0)``, or ``None`` when no such
        split exists (``π11 < p1²``: negatively correlated hits, or ``π11 = 0``).

        From ``π11 = (1-λ)p²`` and ``π10 = (1-λ)p(1-p)``: ``p = π11/p1``, ``1 - λ = p1²/π11``; ``λ ≥ 0`` iff
        ``π11 ≥ p1²``.
        """
        p1 = self.hit_probability
        if self.pi11 <= 0.0 or self.pi11 < p1 * p1 * (1.0 - TYPE_RTOL):
            return None
        return self.pi11 / p1, max(0.0, -math.expm1(2.0 * math.log(p1) - math.log(self.pi11)))

    def describe(self) -> str:
        return (
            f"blanket mass γ={self.gamma:.6g}, hit ratio e^{self.log_ratio:.6g}, ω(hit both)={self.pi11:.6g}, "
            f"ω(hit one)={self.pi10:.6g} each"
        )


def hit_model(randomizer: Randomizer) -> HitModel | None:
    """The :class:`HitModel` of a named randomizer (closed forms), or ``None`` for :class:`Finite` (use
    :func:`matrix_types`).  O(1)."""
    eps0 = float(randomizer.local_epsilon)
    e = math.exp(eps0)
    if isinstance(randomizer, BinaryRR):
        return HitModel(2.0 / (e + 1.0), eps0, 0.0, 0.5)
    if isinstance(randomizer, KaryRR):
        d = randomizer.domain_size
        return HitModel(d / (e + d - 1.0), eps0, 0.0, 1.0 / d)
    if isinstance(randomizer, SubsetSelection):
        d, k = randomizer.domain_size, randomizer.subset_size
        # ω is uniform over the k-subsets (each misses some input, so its minimum is the non-member one).
        return HitModel(d / (e * k + d - k), eps0, k * (k - 1) / (d * (d - 1)), k * (d - k) / (d * (d - 1)))
    if isinstance(randomizer, HadamardResponse):
        K = randomizer.block_size
        # ω ∝ e at y = 0 (in every C_x, ρ = (1, 1)), 1 elsewhere; C_x1, C_x2 meet in K/4 outputs, y = 0 included.
        return HitModel((e + K - 1.0) / (K / 2.0 * (e + 1.0)), eps0, (K / 4.0 - 1.0) / (e + K - 1.0), (K / 4.0) / (e + K - 1.0))
    if isinstance(randomizer, (OUE, RAPPOR)):
        d = randomizer.domain_size
        if isinstance(randomizer, OUE):
            bit = 1.0 / (e + 1.0)  # a non-input bit reports 1 with this probability
            gamma_over_z = (e + 1.0) / (2.0 * e)
        else:
            bit = 1.0 / (math.exp(eps0 / 2.0) + 1.0)  # flip probability
            gamma_over_z = math.exp(-eps0 / 2.0)
        # m(y) = B(y)·φ(0) except at the all-ones output (B(y)·φ(1) = e·B(y)·φ(0)), B the product law of
        # independent bits with P(1) = bit: ω = B·(1 + (e-1)·1[y = 1^d]) / Z, Z = 1 + (e-1)·bit^d; the
        # all-ones output has ρ = (1, 1).
        bit_d = math.exp(d * math.log(bit))
        z = 1.0 + (e - 1.0) * bit_d
        # π11 = (bit² - bit^d)/Z as bit²·(1 - bit^(d-2)): exactly 0 at d = 2 (a rounded difference could be
        # negative there), and without cancellation for large d
        both = bit * bit * max(0.0, -math.expm1((d - 2) * math.log(bit)))
        return HitModel(gamma_over_z * z, eps0, both / z, bit * (1.0 - bit) / z)
    if isinstance(randomizer, LocalHashing):
        d, ell = randomizer.domain_size, randomizer.hash_range
        # ω ∝ 1 + (e-1)·1[H constant = v] over the l^(d+1) outputs (H, v); hits are H(x_j) = v.
        inv_d = math.exp(-d * math.log(ell))  # l^-d
        z = 1.0 + (e - 1.0) * inv_d  # (total weight) / l^(d+1)
        gamma = (ell + (e - 1.0) * ell * inv_d) / (e + ell - 1.0)
        both = max(0.0, -math.expm1(-(d - 2) * math.log(ell))) / ell**2  # ℓ^-2 - ℓ^-d, exactly 0 at d = 2
        return HitModel(gamma, eps0, both / z, (ell - 1.0) / ell**2 / z)
    return None


@dataclass(frozen=True)
class MatrixTypes:
    """The types of one ordered victim pair ``(x1, x2)`` of a finite randomizer.

    Attributes
    ----------
    gamma : float
        Blanket mass.
    r1, r2, prob : ndarray
        Per type: ``r_j = R(x_j)(y)/ω(y)`` (``= γ·ρ_j``) and ``ω(type)``; ``Σ prob·r_j = 1 - victim-only mass``.
    victim_p, victim_q : ndarray
        ``R(x1)(y)``, ``R(x2)(y)`` of the outputs outside the blanket (``ω(y) = 0``): seen, they reveal the
        victim's report.
    """

    gamma: float
    r1: NDArray[np.float64]
    r2: NDArray[np.float64]
    prob: NDArray[np.float64]
    victim_p: NDArray[np.float64]
    victim_q: NDArray[np.float64]


def matrix_types(matrix: NDArray[np.float64], x1: int, x2: int) -> MatrixTypes:
    """Group the outputs of a row-stochastic matrix by their type ``(r1, r2)`` for the pair ``(x1, x2)``.

    Types whose ``r`` values agree within :data:`TYPE_RTOL` (relative) are merged (``r`` averaged by weight,
    a change of a few ulps).  O(outputs · log outputs).
    """
    R = np.asarray(matrix, dtype=np.float64)
    col_min = R.min(axis=0)
    gamma = float(col_min.sum())
    inside = col_min > 0.0
    outside = ~inside & ((R[x1] > 0) | (R[x2] > 0))
    if gamma <= 0.0:
        return MatrixTypes(0.0, np.zeros(0), np.zeros(0), np.zeros(0), R[x1][outside], R[x2][outside])
    omega = col_min[inside] / gamma
    r1, r2 = R[x1][inside] / omega, R[x2][inside] / omega
    # Bucket by rounded logarithms, then merge neighbours within the tolerance.
    order = np.lexsort((r2, r1))
    r1, r2, omega = r1[order], r2[order], omega[order]
    new = np.concatenate([[True], ~(np.isclose(r1[1:], r1[:-1], rtol=TYPE_RTOL, atol=0) & np.isclose(r2[1:], r2[:-1], rtol=TYPE_RTOL, atol=0))])
    start = np.flatnonzero(new)
    prob = np.add.reduceat(omega, start)
    t1 = np.add.reduceat(omega * r1, start) / prob
    t2 = np.add.reduceat(omega * r2, start) / prob
    return MatrixTypes(gamma, t1, t2, prob, R[x1][outside], R[x2][outside])


def _levels(types: MatrixTypes) -> tuple[float, float] | None:
    """The least and largest ratio of a pair's types (both inputs), or ``None`` when no hit model can stand
    for them: outputs only the victim gives, no blanket, one level only, or ``E`` beyond ``e^MAX_LOG_RATIO``."""
    if types.victim_p.size or types.gamma <= 0.0 or types.prob.size == 0:
        return None
    low = float(min(types.r1.min(), types.r2.min()))
    high = float(max(types.r1.max(), types.r2.max()))
    if not high > low * (1.0 + TYPE_RTOL) or math.log(high) - math.log(low) > MAX_LOG_RATIO:
        return None
    return low, high


def hit_model_of_types(types: MatrixTypes) -> HitModel | None:
    """The :class:`HitModel` of a pair's types when they have the hit form (no victim-only outputs,
    ``r_j ∈ {c, cE}`` with one ``c`` and ``E`` for both inputs, ``ω(hit x1 only) = ω(hit x2 only)``), else ``None``."""
    if (levels := _levels(types)) is None:
        return None
    low, high = levels

    def level(r: NDArray[np.float64]) -> NDArray[np.int64] | None:
        hit = np.isclose(r, high, rtol=1e-10, atol=0)
        miss = np.isclose(r, low, rtol=1e-10, atol=0)
        return None if not np.all(hit | miss) else hit.astype(np.int64)

    h1, h2 = level(types.r1), level(types.r2)
    if h1 is None or h2 is None:
        return None
    pi = np.zeros((2, 2))
    np.add.at(pi, (h1, h2), types.prob)
    if not math.isclose(pi[1, 0], pi[0, 1], rel_tol=1e-10, abs_tol=1e-300):
        return None
    pi10 = 0.5 * (pi[1, 0] + pi[0, 1])
    return HitModel(types.gamma, math.log(high) - math.log(low), float(pi[1, 1]), float(pi10))


def spread_hit_model(types: MatrixTypes) -> HitModel | None:
    """A :class:`HitModel` whose blanket pair dominates the blanket pair of ``types`` (any victim pair of a
    finite randomizer without victim-only outputs), or ``None`` (victim-only outputs, identical rows, or
    ratios too far apart).

    Each type's ratios ``(r1, r2)`` are spread to the two levels ``lo`` and ``hi`` (the least and largest
    ratio of the pair, both inputs): ``r_j`` becomes ``hi`` with probability ``w_j = (r_j - lo)/(hi - lo)``
    and ``lo`` otherwise, the two coupled comonotonically (``hi`` for both with probability
    ``min(w1, w2)``, which keeps the two sums as close as the marginals allow).  Each item's ratios keep
    their means, so the exact pair is a post-processing of the spread one (resample the types given the
    levels: their conditional law is the same under both hypotheses) -- proof in
    docs/mathematics.md#blanket-spread.  The levels are a hit model with ``E = hi/lo``; ``ω(hit x1 only)
    = ω(hit x2 only)`` because ``Σ_y ω(y) r_j(y) = Σ_y R(x_j)(y) = 1`` for both inputs.  O(types).
    """
    if (levels := _levels(types)) is None:
        return None
    low, high = levels
    w1 = np.clip((types.r1 - low) / (high - low), 0.0, 1.0)
    w2 = np.clip((types.r2 - low) / (high - low), 0.0, 1.0)
    both = np.minimum(w1, w2)
    pi11 = float(np.sum(types.prob * both))
    pi10, pi01 = float(np.sum(types.prob * (w1 - both))), float(np.sum(types.prob * (w2 - both)))
    if not math.isclose(pi10, pi01, rel_tol=1e-9, abs_tol=1e-15):
        return None  # the two inputs' ratios must have the same mean (rows summing to one)
    return HitModel(types.gamma, math.log(high) - math.log(low), pi11, 0.5 * (pi10 + pi01))


def participating_blanket_mass(gamma: float, q: float) -> float:
    """``γ_q = 1 - q + qγ``: the blanket mass of ``R_q`` (the void output is in every input's law alike)."""
    return 1.0 - q + q * gamma


def participating_matrix(matrix: NDArray[np.float64], q: float) -> NDArray[np.float64]:
    """``R_q``: the matrix with a void output ``⊥`` (last column) taken with probability ``1 - q``."""
    R = np.asarray(matrix, dtype=np.float64)
    if q == 1.0:
        return R
    return np.hstack([q * R, np.full((R.shape[0], 1), 1.0 - q)])


def victim_pairs(matrix: NDArray[np.float64]) -> list[tuple[int, int]]:
    """Unordered pairs ``(x1, x2)`` of distinct rows, one per distinct pair of rows (identical rows leak
    nothing and rows repeated elsewhere give the same pair).  O(inputs² · outputs)."""
    R = np.asarray(matrix, dtype=np.float64)
    _, first = np.unique(R, axis=0, return_index=True)
    rows = sorted(int(i) for i in first)
    return [(a, b) for i, a in enumerate(rows) for b in rows[i + 1 :]]
