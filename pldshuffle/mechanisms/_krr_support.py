"""Supports of the shuffled kRR pairs: tilted trinomial windows, exact or streamed onto a loss lattice.

The mathematics of the pairs is in :mod:`pldshuffle.mechanisms.krr` (and ``docs/mathematics.md#pairs``);
this module builds their truncated supports.  Supports up to :data:`EXACT_SUPPORT_LIMIT` points are kept
exactly; larger ones are streamed by numba onto :data:`STREAM_GRID_BINS` lattice cells into strict
upper (split, mass and e^{-loss} moment preserved) and lower (merged: a post-processing) pairs, never
stored point by point.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
from numpy.typing import NDArray

from .._kernels import binomial_log_rows, fill_tilted_points, num_threads, stream_tilted_points
from ..pld import LossDistribution
from ._binomial import binomial_logpmf
from ..pld.discretize import lattice_distributions
from ._krr_numerics import _anchor_logpmf, _merged_loss_error, _nearly_sorting_permutation, _ratio_error, _tilted_loss_error
from ._tilted_windows import tilted_windows
from ._krr_merge import _group, _merge_outer, _merged_kernel_args
from ._lattice import lattice_window, stream_in_pieces
from .._reporting import build_progress

__all__ = [
    "ESTIMATE_LIMIT", "EXACT_SUPPORT_LIMIT", "MAX_MERGED_PAIRS", "MAX_PAIRS", "MAX_SUPPORT_POINTS", "MERGE_TOLERANCE",
    "MAX_MERGE_SPREAD", "MERGED_POINT_SECONDS", "PAIR_SECONDS", "POINT_SECONDS", "STREAM_GRID_BINS", "UNMERGED_STREAM_LIMIT",
    "merge_blocks", "refusal", "tilted_trinomial_support", "tilted_windows", "with_zero_atom",
]

#: Largest truncated support kept exactly (a sorted array of losses); larger ones are streamed onto a
#: loss lattice (strict lower and upper pairs, never stored point by point).
EXACT_SUPPORT_LIMIT = 2**18
#: Lattice cells across the loss range of a streamed pair (relative ε error ~1e-8, second order).
STREAM_GRID_BINS = 2**16
#: Mass-weighted root-mean-square spread of log(tilt ratio) within the blocks of the outer coordinate merged
#: when streaming (:func:`merge_blocks`): fewer points by the block size, at a relative loss spread of about
#: this much where the outer coordinate's mass is.  The upper bound spreads each merged point over its
#: block's extreme losses, an excess about quadratic in the spread: weak kRR, n = 1e5, one round, relative
#: ε gap at δ = 1e-9 with blocks of equal spread 1e-2 / 3e-3 / merge_blocks: k = 100, ε0 = 2: 2.4e-4 /
#: 2.6e-5 / 1.6e-5 (1.1e6 cells; 5.3e5 / 1.1e6 / 1.1e6 merged points); k = 10, ε0 = 1: 1.7e-4 / 1.6e-5 /
#: 1.05e-5 (5.5e6 / 1.3e7 / 1.0e7 points).
MERGE_TOLERANCE = 3e-3
#: Largest relative spread of the tilt ratio within one block (the outer coordinate's tails, where the
#: mass-weighted rule alone would make blocks arbitrarily wide).
MAX_MERGE_SPREAD = 1e-2
#: Supports of at most this many points are streamed without that merge (~6 ns per point on 2 cores): its
#: upper bound takes each block's extreme tilt, an error that dominated single rounds (weak, n = 2000,
#: k = 3, ε0 = 1, one round, δ = 1e-10: gap 1.3e-4 merged in blocks of equal spread 1e-2, 1.2e-8
#: unmerged, 0.7 s either way; n = 1e4, k = 4, ε0 = 2: 1.1e8 points, 0.3 → 0.8 s).
UNMERGED_STREAM_LIMIT = 200_000_000
#: Largest support streamed (after merging); larger requests are refused before they are streamed
#: (~10-25 ns per point: ~1 h at the limit).
MAX_SUPPORT_POINTS = 200_000_000_000
#: Requests whose :meth:`ShuffledKRR.support_estimate` (after merging) exceeds this are refused before any
#: work (the estimate over-counts by about 2; the exact count is checked against MAX_SUPPORT_POINTS later).
ESTIMATE_LIMIT = 4 * MAX_SUPPORT_POINTS
#: Largest number of cells ``(u, c)`` laid out chunk by chunk when the outer coordinate is merged; more
#: are refused before the layout (``PAIR_SECONDS`` each: ~35 min at the limit).
MAX_MERGED_PAIRS = 10_000_000_000
#: Seconds per cell ``(u, c)`` of the layout (window searches, log-pmfs, the merge) and per streamed
#: point after merging: weak, n = 1e6, k = 4, ε0 = 2: 4.0e7 cells in 5.6 s, 5.0e7 merged points (blocks of
#: equal spread 1e-2; 9.3e7 with merge_blocks) in 1.1 s; and per point of
#: :meth:`ShuffledKRR.support_estimate` streamed unmerged (the estimate counts ~2 per point): strong,
#: n = 1e8, k = 4, ε0 = 2: 2.9e9 estimated points in 13 s (2 CPU cores).
PAIR_SECONDS, MERGED_POINT_SECONDS, POINT_SECONDS = 1.4e-7, 2.2e-8, 4.5e-9
#: Pairs ``(u, c)`` laid out at once when the outer coordinate is merged (``_merge_outer``) chunk by chunk
#: (~150 bytes of temporaries each: weak, n = 1e6, peak 520 MB at 2e6 per chunk, 285 MB at 5e5, as fast).
_CHUNK_PAIRS = 500_000
#: Largest number of cells ``(u, c)`` (each a window of x values) held at once when the outer coordinate
#: cannot be merged; the per-cell arrays take ~100 bytes each.
MAX_PAIRS = 20_000_000

def with_zero_atom(dist: LossDistribution, weight: float, atom: float) -> LossDistribution:
    """``weight · dist`` plus an atom of mass ``atom`` at loss 0 (the strong adversary's γ atom)."""
    return LossDistribution(
        np.append(dist.losses, 0.0),
        np.append(weight * dist.masses, atom),
        infinity_mass=weight * dist.infinity_mass,
        truncated_mass=weight * dist.truncated_mass,
        loss_error=dist.loss_error,
    )


# ---------------------------------------------------------------------------------------------
# the shared builder
# ---------------------------------------------------------------------------------------------


def tilted_trinomial_support(
    *,
    outer_trials: int,
    outer_prob: float,
    inner_trials: Callable[[NDArray[np.int64]], NDArray[np.int64]],
    inner_prob: float,
    log_tilt: Callable[[NDArray[np.int64]], tuple[NDArray[np.float64], NDArray[np.float64]]],
    tail_mass: float,
    context: str,
    advice: str,
    max_exact_support: int | None = None,
    bins: int | None = None,
) -> tuple[LossDistribution, LossDistribution]:
    """``(lower, upper)`` loss distributions of ``P/Q`` for ``P = base · f_u(x)``, ``Q = base · f_u(c - x)``
    (module docstring): the same object, the exact truncated PLD, when the truncated support has at most
    ``max_exact_support`` points (default :data:`EXACT_SUPPORT_LIMIT`); otherwise the support streamed
    onto a lattice of ``bins`` cells (default :data:`STREAM_GRID_BINS`) across
    its loss range (:mod:`._lattice`: a strict lower and a strict upper bound, errors second order in the
    cell width).

    Base law: ``u ~ Bin(outer_trials, outer_prob)``, ``c | u ~ Bin(inner_trials(u), inner_prob)``,
    ``x | c ~ Bin(c, 1/2)``.  Tilt ``f_u(z) = A(u) + B(u) z`` given as ``(log A, log B) = log_tilt(u)``;
    it must satisfy ``E[f] = 1`` (P is a probability law) and ``E[f | u]`` must be affine in ``u`` (true
    for the kRR pairs), which makes the dropped mass of every level exactly computable
    (:func:`tilted_windows`).  Loss ``log f_u(x) - log f_u(c-x) = log((A/B + x) / (A/B + c - x))``
    (``+inf`` where ``f_u(c-x) = 0``).

    Truncation budget.  ``u`` drops at most ``tail_mass`` of P.  The window of ``c`` given ``u`` may
    drop ``tail_mass / (U · P(u))`` of the conditional law (U outer values), and that of ``x`` given
    ``(u, c)`` ``tail_mass / (K · P(u, c))`` (K pairs ``(u, c)``, rounded down to ``tail_mass · 2^j`` so
    that windows are shared), so each coordinate again drops at most ``tail_mass`` of P in total.  This
    keeps the points above a level of the joint mass (an ellipsoid rather than a box: ~40% fewer points
    than equal conditional tails for the same dropped mass).

    ``context`` and ``advice`` name the request and what to change in the message refusing it: before
    the K per-pair arrays are built when K exceeds :data:`MAX_PAIRS` (cells held at once, when the outer
    coordinate cannot be merged) or :data:`MAX_MERGED_PAIRS` (cells laid out chunk by chunk, when it
    can), and before the per-point work when the points to stream (after merging) exceed
    :data:`MAX_SUPPORT_POINTS`.

    Cost: the windows take O(log n) vectorised scipy calls over U, K' ≤ K and C entries, the log-pmf
    tables O(K + C·Wx) entries.  Exact (S ≤ ``max_exact_support``): the S kept points in O(S) in a
    compiled loop plus an O(S log S) sort, memory O(S).  Streamed: O(S) time (~10-20 ns per point,
    parallel over ranges of pairs), memory O(K + bins·threads), S never stored.
    """
    max_exact_support = EXACT_SUPPORT_LIMIT if max_exact_support is None else max_exact_support
    bins = STREAM_GRID_BINS if bins is None else bins
    log_tail = math.log(tail_mass)
    with np.errstate(divide="ignore", over="ignore"):
        # Level u (degenerate when outer_trials == 0).
        if outer_trials > 0:
            lo, hi, q0, q1 = tilted_windows(np.array([outer_trials]), outer_prob, tail_mass)
            u = np.arange(lo[0], hi[0] + 1, dtype=np.int64)
            log_pu = binomial_logpmf(u, outer_trials, outer_prob)
            ends = np.array([0, outer_trials], dtype=np.int64)
            end_a, end_b = log_tilt(ends)  # E[f | u] = A + B N1 π1/2 at u = 0 and u = N0 (affine in u)
            log_t = np.logaddexp(end_a, end_b + np.log(inner_trials(ends) * (inner_prob / 2.0)))
            dropped = float(np.sum(np.exp(log_t + np.log(np.concatenate([q0, q1])))))
        else:
            u = np.zeros(1, dtype=np.int64)
            log_pu = np.zeros(1)
            dropped = 0.0
        log_a, log_b = (np.broadcast_to(np.asarray(v, dtype=np.float64), u.shape) for v in log_tilt(u))
        n1 = np.asarray(inner_trials(u), dtype=np.int64)

        # Level c | u: tilt A + B c/2 (endpoints A and A + B N1/2), P(u) = p(u) (A + B N1 π1/2).
        log_p_u = log_pu + np.logaddexp(log_a, log_b + np.log(n1 * (inner_prob / 2.0)))
        c_tail = np.minimum(np.exp(log_tail - log_p_u - math.log(u.size)), 1.0)
        c_lo, c_hi, qc0, qc1 = tilted_windows(n1, inner_prob, c_tail)
        log_t1 = np.logaddexp(log_a, log_b + np.log(n1 / 2.0))
        dropped += float(np.sum(np.exp(log_pu + log_a + np.log(qc0)) + np.exp(log_pu + log_t1 + np.log(qc1))))
        c_width = c_hi - c_lo + 1
        pairs = int(c_width.sum())
        ratio = np.exp(log_a - log_b)  # A/B (0 when A = 0, inf when B = 0)
        blocks = merge_blocks(ratio, log_pu)  # merge blocks of u (streaming only), or None
        # Checked before the per-pair arrays are built: their number bounds the memory when they cannot
        # be merged (held at once), the time when they can (laid out chunk by chunk).
        limit = MAX_PAIRS if blocks is None else MAX_MERGED_PAIRS
        if pairs > limit:
            need = f"{pairs:,} cells (u, c), each a window of x values"
            raise ValueError(refusal(context, need, tail_mass, advice, f"{limit:,} cells"))

    # Windows of x | (u, c) depend on (c, j) only; chunks of u share most of them, so they are cached by
    # the key (c - c_min)·span + (j - j_floor) (j ≥ j_floor since P(u, c) ≤ 1 and K < 2^63).
    j_cap = math.floor(-log_tail / math.log(2.0))  # budget <= 1
    j_floor = -pairs.bit_length() - 2
    span = j_cap - j_floor + 1
    c_min = int(c_lo.min())
    if (int(c_hi.max()) - c_min + 1) * span >= 2**62:  # cannot happen below the cell limits
        raise RuntimeError("internal error: the window keys (c, j) overflow")
    cache = {"keys": np.zeros(0, dtype=np.int64), "values": tuple(np.zeros(0, dtype=t) for t in (np.int64, np.int64, float, float))}

    def x_windows(keys: NDArray[np.int64]) -> tuple[NDArray, ...]:
        """``tilted_windows`` of the sorted unique keys, computing only those not seen in earlier chunks."""
        known_keys, known = cache["keys"], cache["values"]
        at = np.searchsorted(known_keys, keys)
        seen = at < known_keys.size
        seen[seen] = known_keys[at[seen]] == keys[seen]
        new = keys[~seen]
        if new.size:
            fresh = tilted_windows(c_min + new // span, 0.5, np.exp(log_tail + (new % span + j_floor) * math.log(2.0)))
            order = np.argsort(np.concatenate([known_keys, new]), kind="stable")
            cache["keys"] = np.concatenate([known_keys, new])[order]
            cache["values"] = known = tuple(np.concatenate([a, b])[order] for a, b in zip(known, fresh))
            at = np.searchsorted(cache["keys"], keys)
        return tuple(a[at] for a in known)

    def inner_logpmf(trials, lo, hi, pair_c, pair_u) -> NDArray[np.float64]:
        """``log Bin(n1(u), π1)(c)`` of the pairs, row ``u`` by row (walked from each row's mode)."""
        if 0.0 < inner_prob < 1.0:
            return binomial_log_rows(trials, inner_prob, lo, hi, lambda k, n: binomial_logpmf(k, n, inner_prob))
        return binomial_logpmf(pair_c, n1[pair_u], inner_prob)  # π1 = 1: one-point windows

    def layout(first: int, stop: int) -> tuple:
        """Pairs ``(u, c)`` of outer indices ``first .. stop-1``: ``(pair_u, pair_c, log_w, x_lo, x_hi, dropped)``."""
        with np.errstate(divide="ignore", over="ignore"):
            width = c_width[first:stop]
            count = int(width.sum())
            # Pairs (u, c): base p(u, c), P(u, c) = p(u, c)(A + B c/2).
            pair_u = np.repeat(np.arange(first, stop), width)
            pair_c = c_lo[pair_u] + np.arange(count) - np.repeat(np.cumsum(width) - width, width)
            log_w = log_pu[pair_u] + inner_logpmf(n1[first:stop], c_lo[first:stop], c_hi[first:stop], pair_c, pair_u)
            pa, pb, log_c = log_a[pair_u], log_b[pair_u], np.log(pair_c.astype(np.float64))
            log_p_uc = log_w + np.logaddexp(pa, pb + log_c - math.log(2.0))

            # Level x | (u, c): budget tail/(K P(u, c)) (K = all pairs) rounded down to tail·2^j; windows per distinct (c, j).
            j = np.floor(-(log_p_uc + math.log(pairs)) / math.log(2.0))  # +inf where P(u, c) = 0
            j = np.minimum(j, j_cap).astype(np.int64)
            if j.size and int(j.min()) < j_floor:  # cannot happen: P(u, c) ≤ 1 (up to rounding)
                raise RuntimeError("internal error: a cell's x budget exceeds its bound")
            rows, row_of_pair = np.unique((pair_c - c_min) * span + (j - j_floor), return_inverse=True)
            r_lo, r_hi, qx0, qx1 = x_windows(rows)
            log_t1 = np.logaddexp(pa, pb + log_c)
            lost = float(
                np.sum(np.exp(log_w + pa + np.log(qx0[row_of_pair])) + np.exp(log_w + log_t1 + np.log(qx1[row_of_pair])))
            )
        return pair_u, pair_c, log_w, r_lo[row_of_pair], r_hi[row_of_pair], lost

    if blocks is not None and pairs > _CHUNK_PAIRS:
        # Too many pairs to hold at once: lay out and merge chunks of u, combining the merged outcomes of
        # a block that spans chunks; only the merged outcomes are kept.
        ends = np.searchsorted(np.cumsum(c_width), np.arange(1, -(-pairs // _CHUNK_PAIRS) + 1) * _CHUNK_PAIRS, side="left")
        bounds = [0, *sorted({min(int(e) + 1, u.size) for e in ends})]
        parts, total = [], 0
        tick = build_progress(f"laying out {pairs:,} cells (u, c) and merging blocks of u")
        for first, stop in zip(bounds[:-1], bounds[1:]):
            tick(int(c_width[:first].sum()) / pairs)
            pair_u, pair_c, log_w, x_lo, x_hi, lost = layout(first, stop)
            dropped += lost
            total += int((x_hi - x_lo + 1).sum())
            parts.append(_merge_outer(pair_u, pair_c, log_w, x_lo, x_hi, log_a, log_b, ratio, blocks))
            parts = [_group(*(np.concatenate(column) for column in zip(*parts)))]  # blocks spanning chunks
        merged = _merged_kernel_args(*parts[0])
        error = _merged_loss_error(merged, ratio, log_a, log_b, u.size)
        return _streamed(merged, min(dropped + 2.0 * total * np.finfo(np.float64).tiny, 1.0), bins, context, tail_mass, advice, error)

    pair_u, pair_c, log_w, x_lo, x_hi, lost = layout(0, u.size)
    dropped += lost
    x_width = x_hi - x_lo + 1
    total = int(x_width.sum())
    # Masses below 2·(smallest normal double) may have been flushed to 0 (fill_tilted_points): book that much per point.
    truncated = min(dropped + 2.0 * total * np.finfo(np.float64).tiny, 1.0)
    if total > max(max_exact_support, UNMERGED_STREAM_LIMIT) and blocks is not None:
        merged = _merged_kernel_args(*_merge_outer(pair_u, pair_c, log_w, x_lo, x_hi, log_a, log_b, ratio, blocks))
        return _streamed(merged, truncated, bins, context, tail_mass, advice, _merged_loss_error(merged, ratio, log_a, log_b, u.size))
    # log Bin(c, 1/2) at the anchor ceil(c/2) of every distinct c (every x window contains it); the
    # kernels walk outwards from it by exact ratios.
    log_wa = log_w + _anchor_logpmf(pair_c, x_lo, x_hi)
    error = _tilted_loss_error(ratio, _ratio_error(log_a, log_b), int(pair_c.max(initial=0)))
    if total > max_exact_support:
        rp = ratio[pair_u]
        args = (pair_c, log_wa, x_lo, x_hi, log_a[pair_u], log_b[pair_u], rp, rp, rp)
        return _streamed(args, truncated, bins, context, tail_mass, advice, error)
    losses = np.empty(total)
    masses = np.empty(total)
    fill_tilted_points(pair_u, pair_c, log_wa, np.cumsum(x_width) - x_width, x_lo, x_hi, log_a, log_b, ratio, losses, masses)
    # Nearly sorted input makes the stable sort inside LossDistribution cheap; the infinite losses
    # (Q = 0) end up last.
    order = _nearly_sorting_permutation(losses)
    losses, masses = losses[order], masses[order]
    cut = int(np.searchsorted(losses, np.inf))
    # Rounding of the log-space masses (relative ~1e-13 at worst) can push a sure atom a hair above 1.
    exact = LossDistribution(losses[:cut], masses[:cut], min(float(masses[cut:].sum()), 1.0), truncated, loss_error=error)
    return exact, exact


def merge_blocks(ratio: NDArray[np.float64], log_p: NDArray[np.float64]) -> NDArray[np.int64] | None:
    r"""Blocks of consecutive outer values ``u`` merged when streaming: a non-decreasing block index per ``u``,
    or ``None`` where merging is not possible (a ratio ``r = A/B`` of 0 or inf) or not worth it (blocks of
    fewer than 4 values on average).

    The upper bound spreads each merged point over the losses at its block's extreme ratios
    (:func:`~pldshuffle._kernels.stream_tilted_points`), an excess about quadratic in the block's spread
    ``s`` of ``log r`` (a point's excess at a given ε is at most its mass times the width of its loss
    interval, and only intervals that contain ε count), so about ``Σ_u p(u) s(u)²`` over the outer values
    (``p = exp(log_p)`` normalised, ``s(u)`` the spread of ``u``'s block).  Each ``u`` gets an allowance
    ``w(u) = min(λ p(u)^{-1/3}, MAX_MERGE_SPREAD)``, ``λ = MERGE_TOLERANCE / (Σ_u p(u)^{1/3})^{1/2}``: for a
    given number of blocks (about ``Σ_u |Δ log r(u)| / w(u)``) ``Σ_u p(u) w(u)²`` is smallest for
    ``w ∝ p^{-1/3}`` -- narrow blocks where the outer coordinate's mass is, wide ones in its tails -- and
    ``λ`` makes it at most ``MERGE_TOLERANCE²``.  Blocks are laid greedily outwards from a block centred on
    the mode, each as long as its spread (path length of ``log r``; ratios need not be monotone) stays within
    the smallest allowance of the values from it outwards, so ``s(u) ≤ w(u)`` for every ``u`` and the
    mass-weighted mean-square spread is at most ``MERGE_TOLERANCE²``.  For a binomial outer coordinate of
    mean ``μ`` and deviation ``σ`` (``log r`` moving by ``~1/μ`` per step), that is about
    ``5.7 σ/(MERGE_TOLERANCE μ)`` blocks where its mass is, against ``18 σ/(w μ)`` blocks of equal spread
    ``w`` across its window (tail 1e-18), where only a few blocks fit, a few more.

    Every grouping is valid: the merged pairs' bounds hold for any blocks (:func:`_merge_outer` records
    each block's extreme ratios); the rule only trades points for tightness.  O(U + B log U) for ``U``
    values and ``B`` blocks.
    """
    size = ratio.size
    if size <= 1 or not np.all(np.isfinite(ratio) & (ratio > 0)):
        return None
    path = np.concatenate([[0.0], np.cumsum(np.abs(np.diff(np.log(ratio))))])
    # p^{1/3} normalised in log space (the window's log-pmf need not sum to 1); its floor keeps w finite.
    p_third = np.maximum(np.exp((log_p - float(np.logaddexp.reduce(log_p))) / 3.0), np.finfo(np.float64).tiny)
    allowance = np.minimum(MERGE_TOLERANCE / math.sqrt(float(p_third.sum())) / p_third, MAX_MERGE_SPREAD)
    mode = int(np.argmax(log_p))
    # Smallest allowance from each value outwards (rightwards right of the mode, leftwards left of it): a block
    # starting there spreads by at most the allowance of each of its members.
    right = np.minimum.accumulate(allowance[::-1])[::-1]
    left = np.minimum.accumulate(allowance)
    most = size // 4  # more blocks than this: merging is not worth it
    width = min(float(allowance[mode]), float(left[mode]), float(right[mode]))
    first = int(np.searchsorted(path, path[mode] - width / 2, side="left"))
    stop = int(np.searchsorted(path, path[mode] + width / 2, side="right"))
    starts = [first]
    while stop < size and len(starts) <= most:  # rightwards: blocks [stop, next)
        starts.append(stop)
        stop = max(int(np.searchsorted(path, path[stop] + right[stop], side="right")), stop + 1)
    lefts = []
    while first > 0 and len(starts) + len(lefts) <= most:  # leftwards: blocks [previous, first)
        end = first - 1
        first = min(int(np.searchsorted(path, path[end] - left[end], side="left")), end)
        lefts.append(first)
    if len(starts) + len(lefts) > most or (lefts and lefts[-1] > 0):
        return None
    starts = np.array(lefts[::-1] + starts, dtype=np.int64)
    return np.repeat(np.arange(starts.size, dtype=np.int64), np.diff(np.append(starts, size)))


def _streamed(
    kernel_args: tuple, truncated: float, bins: int, context: str, tail_mass: float, advice: str, loss_error: float
) -> tuple[LossDistribution, LossDistribution]:
    """Stream the kept points onto a lattice of ``bins`` cells over their loss range; ``(lower, upper)``.

    More than :data:`MAX_SUPPORT_POINTS` points are refused (``ValueError`` naming ``context`` and
    ``advice``) before streaming.

    ``kernel_args`` are those of :func:`~pldshuffle._kernels.stream_tilted_points` (pairs with their own
    tilt and ratio interval), whose losses err by at most ``loss_error``.  The loss range comes from the
    window ends (the loss
    ``log((r + x)/(r + c - x))`` increases in ``x`` and is monotone in ``r``), at ``r_lo``, ``r`` and
    ``r_hi``, widened by one cell on both sides.  O(S) time, O(K + bins·threads) memory.
    """
    pair_c, _, x_lo, x_hi, _, _, ratio, r_lo, r_hi = kernel_args
    points = int((x_hi - x_lo + 1).sum())
    if points > MAX_SUPPORT_POINTS:
        raise ValueError(refusal(context, f"{points:,} support points to stream", tail_mass, advice))
    ends = []
    for r in (r_lo, ratio, r_hi):
        for x, step in ((x_lo, 1), (x_hi, -1)):
            with np.errstate(divide="ignore", invalid="ignore"):
                end = np.where(np.isinf(r), 0.0, np.log((r + x) / (r + pair_c - x)))
                # A point with P = 0 (r + x = 0) or Q = 0 (r + y = 0) has no finite loss; the next one
                # inwards does (both window ends are such points only if the window is a single point).
                inner = np.log((r + x + step) / (r + pair_c - x - step))
            end = np.where(np.isfinite(end), end, inner)
            ends.append(end[np.isfinite(end)])
    finite = np.concatenate(ends)
    if finite.size == 0:  # every point at loss +inf or of mass 0: nothing to stream but the atom
        smin = smax = 0.0
    else:
        smin, smax = float(finite.min()), float(finite.max())
    spacing, j0, size = lattice_window(smin, smax, bins)

    def stream(first: int, stop: int) -> tuple:
        chunks = max(1, min(num_threads(), stop - first))
        return stream_tilted_points(*(a[first:stop] for a in kernel_args), spacing, j0, size, chunks)

    sums, infinity = stream_in_pieces(x_hi - x_lo + 1, 4, size, f"streaming {points:,} points onto the loss lattice", stream)
    infinity = min(infinity, 1.0)
    lower, _ = lattice_distributions(sums[0], sums[1], spacing, j0, infinity, truncated, loss_error)  # low mass, low tilt
    _, upper = lattice_distributions(sums[2], sums[3], spacing, j0, infinity, truncated, loss_error)  # up mass, up tilt
    return lower, upper


def refusal(context: str, need: str, tail_mass: float, advice: str, limit: str = f"{MAX_SUPPORT_POINTS:,} support points") -> str:
    """Message refusing an oversized support: what was asked, what it needs, what to change."""
    return f"{context} would need {need} at tail_mass={tail_mass:g}, more than the limit of {limit}; use {advice}"
