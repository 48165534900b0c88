"""The kRR histogram dataset pair "every other user holds the victim's value" (a lower-bound witness).

Used by :class:`pldshuffle.ShuffledKRR` with ``adversary="histogram"``: the worst of several specific
datasets is a LOWER bound on the worst case over datasets (``is_guarantee=False``).
"""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import NDArray

from .._kernels import UNIT_ROUNDOFF as _U, bin_points
from ..pld import LossDistribution, PrivacyLossPair, log_ratio_error
from ._binomial import binomial_logpmf
from ._krr_support import EXACT_SUPPORT_LIMIT, MAX_SUPPORT_POINTS, STREAM_GRID_BINS, refusal, tilted_windows
from ..pld.discretize import lattice_distributions

__all__ = ["common_value_pairs"]


def common_value_pairs(
    n: int, k: int, eps0: float, other_prob: float, tail_mass: float, context: str, advice: str,
    max_exact_support: int | None = None, bins: int | None = None,
) -> tuple[PrivacyLossPair, PrivacyLossPair]:
    r"""``(lower, upper)`` histogram pairs of ``X = (1, 1, .., 1)`` vs ``X' = (2, 1, .., 1)`` (k ≥ 3).

    The victim leaves the value all other users hold.  Under ``X`` the histogram is ``Mult(n; π)`` with
    ``π = (1-γ+g, g, .., g)``; dividing ``X'``'s law by it (only the victim's report differs) gives
    ``Q = P·f`` with ``f = (e^{-ε0} h_1 + e^{ε0} h_2 + (n - h_1 - h_2)) / n``.  Sufficient statistic
    ``v = n - h_1 ~ Bin(n, (k-1)g)``, ``h_2 | v ~ Bin(v, 1/(k-1))``; the pair is not symmetric, so both
    directions are built: ``P/Q`` (loss ``-log f`` under P) and ``Q/P`` (loss ``log f`` under Q).

    Windows as in :func:`tilted_windows` (``v`` with ``tail_mass``, ``h_2 | v`` with ``tail_mass``):
    the dropped P- and Q-masses are computed exactly (``f`` is affine in ``v`` after averaging ``h_2``,
    and in ``h_2`` given ``v``).  Exact pair (the same object twice) up to ``max_exact_support`` points
    (default :data:`EXACT_SUPPORT_LIMIT`), otherwise streamed onto ``bins`` (default
    :data:`STREAM_GRID_BINS`) lattice cells per direction (:mod:`._lattice`) in row chunks.
    Time O(S), memory O(min(S, 2^22) + bins) for S points.
    """
    max_exact_support = EXACT_SUPPORT_LIMIT if max_exact_support is None else max_exact_support
    bins = STREAM_GRID_BINS if bins is None else bins
    e_minus, e_plus = math.exp(-eps0), math.exp(eps0)
    log_n = math.log(n)
    lo, hi, q0, q1 = tilted_windows(np.array([n]), other_prob, tail_mass)
    v = np.arange(lo[0], hi[0] + 1, dtype=np.int64)
    log_pv = binomial_logpmf(v, n, other_prob)
    # E[f | v] = (e^{-ε0}(n - v) + v (1 + (e^{ε0} - 1)/(k-1))) / n: e^{-ε0} at v = 0, 1 + (e^{ε0}-1)/(k-1) at v = n.
    drop_p = float(q0[0] + q1[0])
    drop_q = float(e_minus * q0[0] + (1.0 + math.expm1(eps0) / (k - 1)) * q1[0])
    h_lo, h_hi, r0, r1 = tilted_windows(v, 1.0 / (k - 1), tail_mass)
    pv = np.exp(log_pv)
    base = (e_minus * (n - v) + v) / n  # f at h_2 = 0; f at h_2 = v is base + (e^{ε0} - 1) v / n
    drop_p += float(np.sum(pv * (r0 + r1)))
    drop_q += float(np.sum(pv * (base * r0 + (base + math.expm1(eps0) * v / n) * r1)))
    widths = h_hi - h_lo + 1
    total = int(widths.sum())
    if total > MAX_SUPPORT_POINTS:
        raise ValueError(refusal(context + " (common-value dataset pair)", f"{total:,} support points", tail_mass, advice))

    def rows(first: int, stop: int) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
        """``(log P, log f)`` of the points of rows ``first .. stop-1``."""
        w = widths[first:stop]
        row = np.repeat(np.arange(first, stop), w)
        h2 = h_lo[row] + np.arange(int(w.sum())) - np.repeat(np.cumsum(w) - w, w)
        log_p = log_pv[row] + binomial_logpmf(h2, v[row], 1.0 / (k - 1))
        log_f = np.log(e_minus * (n - v[row]) + e_plus * h2 + (v[row] - h2)) - log_n
        return log_p, log_f

    tiny = total * np.finfo(np.float64).tiny  # masses flushed to 0 by exp
    # log f: the log of a sum of three non-negative terms (e^{±ε0} within an ulp), less log n, so the losses
    # ±log f err by a few ulps of log n + ε0.
    loss_error = log_ratio_error(log_n + eps0 + 1.0, 4.0 * _U)
    trunc_p, trunc_q = min(drop_p + tiny, 1.0), min(drop_q + tiny, 1.0)
    label = f"kRR histogram view of (1,1..1) vs (2,1..1): n={n}, k={k}, eps0={eps0:.6g}"
    if total <= max_exact_support:
        log_p, log_f = rows(0, v.size)
        pair = PrivacyLossPair(
            LossDistribution(-log_f, np.exp(log_p), 0.0, trunc_p, loss_error),
            LossDistribution(log_f, np.exp(log_p + log_f), 0.0, trunc_q, loss_error),
            label=label,
        )
        return pair, pair
    # log f increases in h_2 on every row: its range is spanned by the window ends.
    ends = np.log(np.concatenate([e_minus * (n - v) + e_plus * h_lo + (v - h_lo), e_minus * (n - v) + e_plus * h_hi + (v - h_hi)])) - log_n
    smax = float(np.max(np.abs(ends)))
    spacing = 2.0 * smax / bins if smax > 0 else 1e-9
    j0 = -int(math.ceil(smax / spacing)) - 1
    size = -2 * j0 + 1
    cells = [np.zeros(size) for _ in range(4)]  # mass and tilt of P/Q, then of Q/P
    bad = 0
    starts = np.concatenate([[0], np.cumsum(widths)])
    first = 0
    while first < v.size:  # rows in chunks of about 2^22 points
        stop = int(np.searchsorted(starts, starts[first] + 2**22, side="right"))
        stop = min(max(stop - 1, first + 1), v.size)
        log_p, log_f = rows(first, stop)
        bad += bin_points(-log_f, np.exp(log_p), spacing, j0, cells[0], cells[1])
        bad += bin_points(log_f, np.exp(log_p + log_f), spacing, j0, cells[2], cells[3])
        first = stop
    if bad:  # cannot happen: the lattice covers [-smax, smax] with a cell of margin on both sides
        raise RuntimeError(f"internal error: {bad} losses fell outside the streaming lattice")
    fwd_lower, fwd_upper = lattice_distributions(cells[0], cells[1], spacing, j0, 0.0, trunc_p, loss_error)
    bwd_lower, bwd_upper = lattice_distributions(cells[2], cells[3], spacing, j0, 0.0, trunc_q, loss_error)
    return (
        PrivacyLossPair(fwd_lower, bwd_lower, label=label + " (streamed lower bound)"),
        PrivacyLossPair(fwd_upper, bwd_upper, label=label + " (streamed upper bound)"),
    )
