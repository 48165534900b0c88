"""Numerical helpers of the kRR support builders (:mod:`pldshuffle.mechanisms._krr_support`): bounds on the
error of the computed losses, the binomial anchors the kernels walk from, and a fast near-sort of losses."""

from __future__ import annotations

import math
from typing import cast

import numpy as np
from numpy.typing import NDArray

from .._kernels import UNIT_ROUNDOFF as _U
from ..pld import MASS_RTOL, log_ratio_error
from ._binomial import binomial_logpmf


def _ratio_error(log_a: NDArray[np.float64], log_b: NDArray[np.float64]) -> float:
    """Relative error of the tilt ratios ``r = exp(log A - log B)``: a few ulps of ``|log A| + |log B|``."""
    finite = np.isfinite(log_a) & np.isfinite(log_b)
    return 8.0 * _U * (2.0 + float(np.max(np.abs(log_a[finite]) + np.abs(log_b[finite]), initial=0.0)))


def _tilted_loss_error(ratio: NDArray[np.float64], relative: float, largest_c: int) -> float:
    """Bound on the error of the losses ``log(r + x) - log(r + c - x)`` of :func:`fill_tilted_points` and
    :func:`stream_tilted_points`, the ratios ``r`` within ``relative`` of the exact ones.

    ``r = 0`` leaves logarithms of integers and ``r = inf`` the exact loss 0; every other logarithm is of a
    number in ``[min(r, 1), r + c]``, and ``r + t`` adds a rounding (:func:`~pldshuffle.pld.log_ratio_error`).
    O(len(ratio)).
    """
    finite = np.isfinite(ratio) & (ratio > 0.0)
    largest_log = math.log1p(largest_c)
    if np.any(finite):
        r = ratio[finite]
        largest_log = max(largest_log, float(np.max(np.abs(np.log(r)))), math.log(float(r.max()) + largest_c))
    return log_ratio_error(largest_log, relative + _U)


def _merged_loss_error(kernel_args: tuple, ratio: NDArray[np.float64], log_a: NDArray[np.float64], log_b: NDArray[np.float64], members: int) -> float:
    """:func:`_tilted_loss_error` of merged outcomes (``kernel_args`` of :func:`_merged_kernel_args`).

    Their ratio ``α/β`` divides two sums of at most ``members`` terms ``exp(log p(u, c) + log A(u))`` and
    ``exp(log p(u, c) + log B(u))``: the weights ``p`` are within ``MASS_RTOL``, each exponential within
    ulps of its argument (at most ~745 for a normal double) and of ``log A``, ``log B``, and the sums
    within ``members`` ulps; the interval ends ``r_lo, r_hi`` are members' own ratios.
    """
    pair_c, _, _, _, _, _, merged_ratio, r_lo, r_hi = kernel_args
    relative = 2.01 * MASS_RTOL + 2.0 * (members + 4.0 * 745.0) * _U + _ratio_error(log_a, log_b)
    return _tilted_loss_error(np.concatenate([merged_ratio, r_lo, r_hi, ratio]), relative, int(pair_c.max(initial=0)))


def _anchor_logpmf(pair_c: NDArray[np.int64], x_lo: NDArray[np.int64], x_hi: NDArray[np.int64]) -> NDArray[np.float64]:
    """``log Bin(c, 1/2)(ceil(c/2))`` per pair: the anchor from which the kernels walk by exact ratios.

    Every x window contains its anchor (windows are central); one Boost evaluation per distinct ``c``.
    """
    cs, slot = np.unique(pair_c, return_inverse=True)
    anchor = (pair_c + 1) // 2
    if np.any((anchor < x_lo) | (anchor > x_hi)):  # cannot happen: windows are central
        raise RuntimeError("internal error: an x window misses its anchor ceil(c/2)")
    return binomial_logpmf((cs + 1) // 2, cs, 0.5)[slot]


def _nearly_sorting_permutation(values: NDArray[np.float64]) -> NDArray[np.int64]:
    """A permutation sorting ``values`` except among values equal in all but their last ~log2(N) bits.

    ``np.sort`` of 64-bit integers is vectorised (several times faster than ``np.argsort``): map each
    double to an order-preserving integer, replace its lowest ``b`` bits by its index, sort, and read the
    indices back.  Ties of the truncated keys come out in index order, which leaves only local
    inversions between nearly equal values (relative gap below 2^(b-52)); no NaNs allowed.  O(N log N).
    """
    bits = values.view(np.int64)
    keys = bits ^ ((bits >> 63) & np.int64(0x7FFFFFFFFFFFFFFF))  # flips the magnitude bits of negatives
    b = max(int(values.size - 1).bit_length(), 1)
    keys = ((keys >> b) << b) | np.arange(values.size, dtype=np.int64)
    keys.sort()
    return cast(NDArray[np.int64], keys & np.int64((1 << b) - 1))
