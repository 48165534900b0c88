"""Size estimates of the shuffled kRR supports: cells ``(u, c)``, support points, points streamed after merging.

The O(1) estimates behind :meth:`~pldshuffle.ShuffledKRR.support_estimate`, its
:meth:`~pldshuffle.ShuffledKRR.family_seconds` and the refusal of oversized requests at construction (:func:`check_request_size`): each
truncated coordinate ``Bin(N, π)`` spans about ``2 sqrt(2 log(1/tail)) sqrt(Nπ(1-π)) + 1`` values, and the
product over the coordinates over-estimates the kept points by a factor of about 2.  ``gamma`` is the
blanket probability ``γ`` (``g = γ/k``).
"""

from __future__ import annotations

import math

from .._validation import check_size
from ._krr_support import (
    ESTIMATE_LIMIT, EXACT_SUPPORT_LIMIT, MAX_MERGE_SPREAD, MAX_MERGED_PAIRS, MERGE_TOLERANCE, MERGED_POINT_SECONDS, PAIR_SECONDS,
    POINT_SECONDS, UNMERGED_STREAM_LIMIT,
)

__all__ = ["check_request_size", "size_estimates", "stream_seconds"]


def size_estimates(num_users: int, domain_size: float, gamma: float, adversary: str, tail: float) -> tuple[float, float, float]:
    """``(cells, points, merged)``: the estimated cells ``(u, c)`` (``weak``/``histogram``; 1 otherwise),
    support points (``ShuffledKRR.support_estimate``) and the points to stream: all of them up to
    ``UNMERGED_STREAM_LIMIT``, else those left after merging blocks of the outer coordinate
    ``Bin(N, π)`` (``merge_blocks``: about ``5.7 σ/(MERGE_TOLERANCE · Nπ)`` blocks where its mass is,
    ``σ² = Nπ(1-π)``, and one per ``MAX_MERGE_SPREAD · Nπ`` values in its tails; counted over its whole
    window, an over-estimate).  ``domain_size`` may be fractional: the blanket pair's tilted trinomials
    are the weak pair with ``k = 1/π10``."""
    n, k = float(num_users), domain_size
    g = gamma / k
    z = 2.0 * math.sqrt(2.0 * math.log(1.0 / tail))

    def width(trials: float, prob: float) -> float:
        return z * math.sqrt(max(trials * prob * (1.0 - prob), 0.0)) + 1.0

    if adversary in ("strong", "khh21"):
        points = width(n, 2 * g) * width(2 * n * g, 0.5)
        return 1.0, points, points
    if adversary == "weak":
        outer = n * gamma
        cells = width(n, gamma) * width(outer, 2.0 / k)
        points = cells * width(2 * outer / k, 0.5)
    else:
        other = (k - 1) * g
        outer = n * other
        cells = width(n, other) * width(outer, 2.0 / (k - 1))
        points = cells * width(2 * n * g, 0.5) + width(n, other) * width(outer, 1.0 / (k - 1))
    if points <= UNMERGED_STREAM_LIMIT:
        return cells, points, points
    # Blocks of merge_blocks (log r moves by ~1/outer per step): ~5.7 σ/(MERGE_TOLERANCE·outer) where the
    # mass is, at most one per MAX_MERGE_SPREAD·outer values elsewhere (over-counted: the whole window).
    sigma = math.sqrt(max(outer * (1.0 - outer / n), 0.0))
    window = width(n, outer / n)
    blocks = 1.0 + 5.7 * sigma / (MERGE_TOLERANCE * outer) + window / (MAX_MERGE_SPREAD * outer)
    return cells, points, points * min(1.0, blocks / window)


def check_request_size(num_users: int, domain_size: int, gamma: float, adversary: str, tail_mass: float) -> None:
    """Refuse (ValueError) a request whose estimated cost is far above the limits: for ``weak`` and
    ``histogram`` its cells beyond ``4 · MAX_MERGED_PAIRS`` or (unmerged) points beyond
    :data:`ESTIMATE_LIMIT`, else its support points beyond :data:`ESTIMATE_LIMIT`.  The exact counts
    are checked again before the per-cell work (``tilted_trinomial_support``)."""
    request = (
        f"ShuffledKRR(num_users={num_users}, domain_size={domain_size}, "
        f"gamma={gamma:.6g}, adversary={adversary!r}) at tail_mass={tail_mass:g}"
    )
    advice = "fewer users (num_users), a larger local_epsilon, or a larger tail_mass"
    if adversary == "weak":
        advice += ", or adversary='strong' (O(n) points, an upper bound on 'weak')"
    cells, points, merged = size_estimates(num_users, domain_size, gamma, adversary, tail_mass)
    if cells > 1.0:
        check_size(cells, 4 * MAX_MERGED_PAIRS, what="cells (u, c)", request=request, advice=advice)
    check_size(merged, ESTIMATE_LIMIT, what="support points", request=request, advice=advice)


def stream_seconds(cells: float, points: float, merged: float) -> float:
    """Seconds of :func:`~._krr_support.tilted_trinomial_support` for the estimates of :func:`size_estimates`:
    streaming the support (``POINT_SECONDS`` per point) or, when the outer coordinate is merged, laying out
    its cells ``(u, c)`` (``PAIR_SECONDS`` each: window searches, log-pmfs, the merge) and streaming the
    merged points (``MERGED_POINT_SECONDS`` each); supports of at most ``EXACT_SUPPORT_LIMIT`` points cost
    nothing noticeable.  O(1)."""
    if points <= EXACT_SUPPORT_LIMIT:
        return 0.0
    if merged == points:
        return POINT_SECONDS * points
    return PAIR_SECONDS * cells + MERGED_POINT_SECONDS * merged
