"""Blanket pairs of product hit laws with Poisson participation (docs/mathematics.md#blanket-participation).

With participation ``q < 1`` a blanket item is a void report ``⊥`` (type ``(1, 1)``) with probability
``1 - s`` (``s = qγ/γ_q``), else a draw from the randomizer's blanket ``ω``, whose hit law splits as
``(1-λ)·Bern(p)⊗Bern(p) + λ·δ_(0,0)`` (:meth:`~._blanket_model.HitModel.product_split`).  Call *point*
items the voids and the ``λ``-draws, *product* items the others.  Given the ``c = B + 1`` items and the
number ``M`` of product items the hits ``N1, N2 ~ Bin(M, p)`` are independent and

    ``F(c, M)``: ``P ∝ Bin⊗Bin·(c + a·N1)``, ``Q ∝ Bin⊗Bin·(c + a·N2)``, loss ``log(c + aN1) - log(c + aN2)``,

a product pair (:func:`~._blanket_product.product_fixed_b` with ``constant=c``).  Revealing ``M`` (which
items are points) dominates the blanket pair (upper); on the event that every point item is a void (``M``
is then seen: voids are visible) the pair *is* ``F(c, M)``, so restricting the weights to that event gives a
sub-distribution below it (lower; it loses a fraction ``≲ n·λ`` of the mass).  The weight of ``(c, M)`` is the
same under ``P`` and ``Q``: ``Bin(n-1, γ_q)(c-1)·Bin(c, 1-λ_q)(M)·(c + apM)/(c(1 + a p_1))``.

Write ``F(c, M) = α·(Base_M, Base_M) + (1-α)·X_M`` with ``α = (c - M)/(c + apM)`` and ``X_M = F(M, M)`` (the
pair without points): a hidden mixture, so ``F`` is a function ``F(M, α)`` and

* (monotone in ``α``) mixing with ``Base_M`` is a post-processing, so ``F(M, α') ≼ F(M, α)`` for ``α' ≥ α``;
* (monotone in ``M``) adding an independent product item maps ``Base_M → Base_{M+1}`` and
  ``X_M → X_{M+1}``, so ``F(M', α) ≼ F(M, α)`` for ``M' ≥ M``;
* (convex in ``α``) every hockey-stick divergence of ``F(M, α)`` is a supremum of functions affine in
  ``α``, so between two values ``α_k < α_{k+1}`` the revealed mixture ``θ·F(M, α_k) + (1-θ)·F(M, α_{k+1})``,
  ``θ = (α_{k+1} - α)/(α_{k+1} - α_k)``, dominates ``F(M, α)`` (an error second order in ``α_{k+1} - α_k``);
* (hidden mean) the hidden mixture of ``F(M, α_j)`` with weights ``w_j`` is ``F(M, Σ w_j α_j)``.

So ``M`` is cut into groups ``[M_g, M_{g+1})`` (:func:`~._blanket_support.b_points`); the upper pair of a
group is the chord mixture of ``F(M_g, α_k)`` over a few nodes ``α_k`` spanning its members' ``α`` (each
member's weight split between the two nodes around its ``α``; members above the last node go to it), its
lower pair the revealed mixture, over the intervals between nodes, of ``F(M_top, ᾱ)`` at the mean ``α`` of
the interval's members (``M_top`` the group's largest value).  Cost: one pass over the ``(c, M)`` window
(:func:`pldshuffle._kernels.participation_weights`, a few ns a point) and two product evaluations per
node and group.
"""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import NDArray

from .._kernels import participation_weights
from .._reporting import build_progress
from ..pld import LossDistribution
from ._binomial import binomial_cdf, binomial_logpmf, binomial_sf, binomial_window
from ._blanket_model import HitModel
from ._blanket_product import COMPONENT_CELLS, product_fixed_b
from ._blanket_support import MAX_MIXTURE_CELLS, LatticeMixture, b_points
from ._krr_support import tilted_windows

__all__ = ["NODE_OFFSETS", "participation_bounds", "participation_window_points"]

#: Chord nodes of a group, in standard deviations of its members' ``α`` around their mean (plus a first
#: node at the smallest ``α`` of the window); groups of ``M`` more than :data:`CENTRAL_SIGMAS` standard
#: deviations from its mean use :data:`TAIL_NODE_OFFSETS`.  Each node costs two product evaluations (the
#: upper at the node, the lower at its interval's mean).  OUE d=1024, ε0=1, q=0.5, n=2000, one round,
#: δ=1e-6, exact ε 0.0486915: (-2, 0, 2) gives [0.048686, 0.048710], these [0.048689, 0.048698].
NODE_OFFSETS = (-4.0, -2.5, -1.2, 0.0, 1.2, 2.5)
TAIL_NODE_OFFSETS = (-3.0, 0.0, 2.5)
CENTRAL_SIGMAS = 3.0
#: Windows of at most this many (c, M) points are evaluated exactly (a node at every member's α).
EXACT_WINDOW_POINTS = 400
#: Relative slack on every weight (upper raised, lower lowered), besides the kernel's walks (6u a step): it
#: covers Boost's log-pmfs at the rows' anchors and of B (≤ 5e-12 up to n = 1e8), the exponential and the
#: tilt's few roundings.
WEIGHT_SLACK = 2e-11


def _split(model_q: HitModel) -> tuple[float, float]:
    split = model_q.product_split()
    if split is None:
        raise ValueError("internal error: participation_bounds needs a product hit law")
    return split


def _rows(n: int, model_q: HitModel, tail_mass: float) -> tuple[NDArray[np.int64], NDArray[np.int64], NDArray[np.int64], NDArray[np.float64], NDArray[np.float64], float]:
    """The window: rows ``c`` (``B = c - 1`` in its window of tail ``tail_mass``), their ``M`` windows
    ``[lo, hi]``, the tilted mass each row drops, and the mass of ``B`` outside its window."""
    p, lam_q = _split(model_q)
    b_lo, b_hi, _ = binomial_window(n - 1, model_q.gamma, tail_mass)
    c_values = np.arange(b_lo, b_hi + 1, dtype=np.int64) + 1
    lo, hi, q0, q1 = tilted_windows(c_values, 1.0 - lam_q, tail_mass)
    norm = 1.0 + model_q.gain * model_q.hit_probability
    t0, t1 = 1.0 / norm, (1.0 + model_q.gain * p) / norm  # the tilt at M = 0 and M = c
    row_drop = t0 * q0 + t1 * q1
    outside = float(binomial_cdf(b_lo - 1, n - 1, model_q.gamma)) if b_lo > 0 else 0.0
    outside += float(binomial_sf(b_hi, n - 1, model_q.gamma)) if b_hi < n - 1 else 0.0
    return c_values, lo, hi, row_drop, np.zeros(0), outside


def participation_window_points(n: int, model_q: HitModel, tail_mass: float) -> float:
    """Estimated number of ``(c, M)`` points of the window (O(1)): ``(2z)²·σ_B·σ_{M|c}``."""
    _, lam_q = _split(model_q)
    z = math.sqrt(2.0 * math.log(1.0 / tail_mass))
    g = model_q.gamma
    c = (n - 1) * g + 1.0
    return (2.0 * z * math.sqrt((n - 1) * g * (1.0 - g)) + 1.0) * (2.0 * z * math.sqrt(c * lam_q * (1.0 - lam_q)) + 1.0)


def _nodes(n: int, model_q: HitModel, starts: NDArray[np.int64], m_top: int, c_min: int) -> NDArray[np.float64]:
    """Per group: the smallest ``α`` any window member can have, then ``α`` at ``K̄ + z·sd`` point items
    (``z`` in :data:`NODE_OFFSETS`, ``K̄``, ``sd`` of the others' point items given ``M = M_g``)."""
    p, lam_q = _split(model_q)
    ap = model_q.gain * p
    u, v = model_q.gamma * lam_q, model_q.gamma * (1.0 - lam_q)
    rho = min(1.0, u / (1.0 - v)) if v < 1.0 else 0.0
    tops = np.append(starts[1:] - 1, m_top).astype(np.float64)
    first = np.maximum(0.0, (c_min - tops) / (c_min + ap * tops))
    rows = []
    mean_m = (n - 1) * v
    sd_m = math.sqrt((n - 1) * v * (1.0 - v))
    for g, m in enumerate(starts.tolist()):
        rest = max(n - 1 - m, 0)
        mean, sd = rest * rho, math.sqrt(rest * rho * (1.0 - rho))
        offsets = NODE_OFFSETS if abs(m - mean_m) <= CENTRAL_SIGMAS * sd_m + 1.0 else TAIL_NODE_OFFSETS
        k = np.maximum(mean + sd * np.asarray(offsets), 0.0)
        bulk = np.maximum(np.sort(k / (k + m * (1.0 + ap))), first[g])
        # Every row has len(NODE_OFFSETS) + 1 nodes: repeated ones are skipped by the kernel.
        bulk = np.concatenate([bulk, np.full(len(NODE_OFFSETS) - bulk.size, bulk[-1])])
        rows.append(np.concatenate([[first[g]], bulk]))
    return np.asarray(rows, dtype=np.float64)


def _exact_nodes(c_values: NDArray[np.int64], lo: NDArray[np.int64], hi: NDArray[np.int64], ap: float) -> tuple[NDArray[np.int64], NDArray[np.float64]]:
    """Small windows: one group per ``M ≥ 1`` whose nodes are every ``α(c, M)`` of the window (computed as
    the kernel does), so that every member sits on a node and both pairs are the exact mixture (the lower
    still restricted to its event)."""
    top = int(hi.max())
    starts = np.arange(1, max(top, 1) + 1, dtype=np.int64)
    per_m: list[list[float]] = [[] for _ in starts]
    for c, a, b in zip(c_values.tolist(), lo.tolist(), hi.tolist()):
        for m in range(max(a, 1), b + 1):
            per_m[m - 1].append((c - m) / (c + ap * m))
    width = max(1, max(len(v) for v in per_m))
    nodes = np.empty((starts.size, width))
    for g, values in enumerate(per_m):
        row = sorted(set(values)) or [0.0]
        nodes[g] = row + [row[-1]] * (width - len(row))
    return starts, nodes


def _constant(m: int, alpha: float, ap: float) -> float:
    """``c`` with ``(c - m)/(c + ap·m) = alpha``: ``m(1 + ap)/(1 - alpha) - ap·m``."""
    return m * (1.0 + ap) / (1.0 - alpha) - ap * m


def participation_bounds(
    n: int, model_q: HitModel, base_lambda: float, q: float, tail_mass: float, tolerance: float, bins: int = COMPONENT_CELLS
) -> tuple[LossDistribution, LossDistribution]:
    """``(lower, upper)`` of the blanket pair of a product hit law with participation ``q < 1`` (module
    docstring).  ``model_q`` is the participating model (:meth:`HitModel.with_participation`),
    ``base_lambda`` the point mass ``λ`` of the randomizer's own split.  Time: O(window points) plus
    ``2·(len(NODE_OFFSETS) + 1)`` product evaluations per group of ``M``."""
    p, lam_q = _split(model_q)
    gain = model_q.gain
    ap = gain * p
    norm = 1.0 + gain * model_q.hit_probability
    s = 1.0 - (1.0 - q) / model_q.gamma  # P(non-void | blanket item) = qγ/γ_q
    # Lower weights: the event "every point item is a void", (1-s)/λ_q per point item.
    log_keep = math.log1p(-s * base_lambda / lam_q) * (1.0 + 1e-12) if base_lambda > 0.0 else 0.0
    c_values, lo, hi, row_drop, _, outside = _rows(n, model_q, tail_mass)
    log_wc = binomial_logpmf(c_values - 1, n - 1, model_q.gamma)
    dropped = outside + float(np.sum(np.exp(log_wc) * row_drop))
    if int(np.sum(hi - lo + 1)) <= EXACT_WINDOW_POINTS:
        starts, nodes = _exact_nodes(c_values, lo, hi, ap)
    else:
        starts = np.unique(np.maximum(b_points(n, model_q.gamma * (1.0 - lam_q), tail_mass, tolerance), 1))
        nodes = _nodes(n, model_q, starts, int(hi.max()), int(c_values[0]))
    groups, k_nodes = nodes.shape
    up_w, low_w, low_wa, out = np.zeros((groups, k_nodes)), np.zeros((groups, k_nodes)), np.zeros((groups, k_nodes)), np.zeros(4)
    anchor = np.clip(np.floor((c_values + 1) * (1.0 - lam_q)).astype(np.int64), lo, hi)
    log_w = log_wc + binomial_logpmf(anchor, c_values, 1.0 - lam_q)
    walk_error = participation_weights(c_values, log_w, anchor, lo, hi, 1.0 - lam_q, ap, norm, log_keep, starts, nodes, up_w, low_w, low_wa, out)
    slack = WEIGHT_SLACK + walk_error
    up_w *= 1.0 + slack
    low_w *= 1.0 - slack

    def width(m: int) -> float:  # loss range of X_m, the widest pair of M = m (α = 0)
        wlo, whi, _, _ = tilted_windows(np.array([m]), p, tail_mass)
        return 2.0 * (math.log1p(gain * (whi[0] - m * p) / (m * (1 + ap))) - math.log1p(gain * (wlo[0] - m * p) / (m * (1 + ap))))

    top = int(np.argmax(up_w.sum(axis=1)))
    # The losses of F(M, α) span about (1 - α) times those of X_M: the lattice follows the likeliest group
    # (bins cells across it; 2·bins would halve the gap and double the convolutions: n = 1e4, q = 0.5, one
    # round: 7e-5 → 4e-5 relative in ε, 5 → 12 s of CPU).
    share = 1.0 - float(low_wa[top].sum() / low_w[top].sum()) if low_w[top].sum() > 0.0 else 1.0
    spacing = max(width(int(starts[top])) * min(1.0, max(share, 1e-6)) / bins, 2.0 * model_q.log_ratio / MAX_MIXTURE_CELLS, 1e-300)
    up, low = LatticeMixture(spacing), LatticeMixture(spacing)
    tick = build_progress(f"blanket pair with participation: {groups} groups of product items")
    for g, m in enumerate(starts.tolist()):
        tick(g / groups)
        for k in range(k_nodes):
            if up_w[g, k] > 0.0:
                # c rounded down: a smaller α, a leakier pair (the chord only rises).
                c = _constant(m, float(nodes[g, k]), ap) * (1.0 - 1e-12)
                up.add(product_fixed_b(m - 1, p, gain, tail_mass, spacing, constant=c)[1], float(up_w[g, k]))
        m_low = int(starts[g + 1]) - 1 if g + 1 < groups else m  # the group's largest M
        for k in range(k_nodes):
            if low_w[g, k] > 0.0:
                alpha = min(1.0, float(low_wa[g, k] / low_w[g, k]) * (1.0 + 1e-12))  # rounded up: a dominated pair
                if alpha < 1.0:
                    c = _constant(m_low, alpha, ap) * (1.0 + 1e-12)
                    low.add(product_fixed_b(m_low - 1, p, gain, tail_mass, spacing, constant=c)[0], float(low_w[g, k]))
                else:
                    low.add(LossDistribution(np.zeros(1), np.ones(1)), float(low_w[g, k]))
    up.add(LossDistribution(np.zeros(1), np.ones(1)), float(out[0]) * (1.0 + slack))
    low.add(LossDistribution(np.zeros(1), np.ones(1)), float(out[1]) * (1.0 - slack))
    up.truncated += dropped + float(out[2]) * (1.0 + slack)
    low.truncated += dropped + float(out[3])
    return low.lower(), up.upper()
