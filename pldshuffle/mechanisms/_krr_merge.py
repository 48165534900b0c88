"""Merging the cells of a streamed kRR support over blocks of its outer coordinate.

When :func:`~pldshuffle.mechanisms._krr_support.tilted_trinomial_support` streams a large support, the
outcomes ``(u, c, x)`` whose outer values ``u`` share a block (chosen by
:func:`~pldshuffle.mechanisms._krr_support.merge_blocks`) become one outcome ``(block, c, x)`` -- a
post-processing, so the lower pair stays valid -- recording each block's extreme tilt ratios for the upper
pair.  This module does that bookkeeping (merge, combine across chunks, turn into kernel arguments); the
choice of blocks and the streaming stay with the support builder.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import NDArray

from ._krr_numerics import _anchor_logpmf

__all__ = ["_group", "_merge_outer", "_merged_kernel_args"]

#: The arrays of one chunk of cells or merged outcomes (integer indices, float masses and ratios).
Array = NDArray[Any]


def _merge_outer(
    pair_u: Array, pair_c: Array, log_w: Array, x_lo: Array, x_hi: Array, log_a: Array, log_b: Array, ratio: Array, blocks: Array
) -> tuple[Array, ...]:
    """Merge pairs ``(u, c)`` over blocks of ``u`` into outcomes ``(block, c)`` (one chunk of pairs).

    ``blocks[u]`` (:func:`merge_blocks`) groups consecutive ``u`` whose tilt ratios ``r = A/B`` agree within a
    factor ``e^{MAX_MERGE_SPREAD}`` (``log_a``, ``log_b``, ``ratio``, ``blocks`` are indexed by ``u``).  The
    outcomes ``(u, c, x)``, ``u`` in a block, become one outcome ``(block, c, x)`` with
    ``P = Bin(c,1/2)(x)(α + βx)``, ``Q = Bin(c,1/2)(x)(α + β(c-x))``, ``α = Σ_u p(u,c) A(u)``,
    ``β = Σ_u p(u,c) B(u)`` (a post-processing: the analyst forgets ``u`` within its block), over the
    union of the members' x windows (points also counted as dropped are then counted twice: at most
    ``tail_mass`` more mass, which only raises the upper bound and is a real sub-measure for the lower).
    Its loss and the members' lie between the losses at the block's extreme ratios ``r_lo, r_hi``
    (:func:`~pldshuffle._kernels.stream_tilted_points` uses them for the upper bound).  The loss varies
    by a relative ~``MERGE_TOLERANCE`` within the blocks that hold the mass, and the number of points drops
    by the block size.

    Returns ``(block, c, α, β, x_lo, x_hi, r_lo, r_hi)`` per merged outcome; chunks of the same block
    combine with :func:`_group`, and :func:`_merged_kernel_args` turns the result into kernel arguments.
    O(K log K) for K pairs.
    """
    r = ratio[pair_u]
    return _group(blocks[pair_u], pair_c, np.exp(log_w + log_a[pair_u]), np.exp(log_w + log_b[pair_u]), x_lo, x_hi, r, r)


def _merged_kernel_args(
    block: Array, c: Array, alpha: Array, beta: Array, x_lo: Array, x_hi: Array, r_lo: Array, r_hi: Array
) -> tuple[Array, ...]:
    """Kernel arguments ``(c, log_wa, x_lo, x_hi, log α, log β, α/β, r_lo, r_hi)`` of merged outcomes."""
    with np.errstate(divide="ignore"):
        log_alpha, log_beta = np.log(alpha), np.log(beta)
    return c, _anchor_logpmf(c, x_lo, x_hi), x_lo, x_hi, log_alpha, log_beta, alpha / beta, r_lo, r_hi


def _group(
    block: Array, c: Array, alpha: Array, beta: Array, x_lo: Array, x_hi: Array, r_lo: Array, r_hi: Array
) -> tuple[Array, ...]:
    """Combine entries with equal ``(block, c)``: sum α and β, union the x windows and the ratio intervals."""
    order = np.lexsort((c, block))
    block, c = block[order], c[order]
    first = np.flatnonzero(np.concatenate([[True], (block[1:] != block[:-1]) | (c[1:] != c[:-1])]))
    return (
        block[first], c[first],
        np.add.reduceat(alpha[order], first), np.add.reduceat(beta[order], first),
        np.minimum.reduceat(x_lo[order], first), np.maximum.reduceat(x_hi[order], first),
        np.minimum.reduceat(r_lo[order], first), np.maximum.reduceat(r_hi[order], first),
    )
