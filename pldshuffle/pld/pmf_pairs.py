"""A neighbouring pair from two probability mass functions on a common finite space.

The construction behind :meth:`~pldshuffle.pld.distributions.PrivacyLossPair.from_probability_mass_functions`:
the two pmfs are checked (real, finite, non-negative, summing to 1 or, with ``missing_mass="infinity"``,
at most 1) and each direction's exact loss distribution is built outcome by outcome, with the error of its
computed losses.  O(outcomes).
"""

from __future__ import annotations

import math
from collections.abc import Mapping

import numpy as np
from numpy.typing import ArrayLike, NDArray

from .._kernels import UNIT_ROUNDOFF as _U
from .._validation import check_pmf_total, check_real_array, check_text
from .distributions import LossDistribution, log_ratio_error

__all__ = ["pmf_directions"]


def pmf_directions(
    pmf_p: Mapping[object, float] | ArrayLike, pmf_q: Mapping[object, float] | ArrayLike, label: str, missing_mass: str | None
) -> tuple[LossDistribution, LossDistribution]:
    """The two directions ``(P/Q, Q/P)`` of the pair of pmfs (arguments and errors as in
    :meth:`~pldshuffle.pld.distributions.PrivacyLossPair.from_probability_mass_functions`)."""
    check_text("label", label)
    if isinstance(pmf_p, Mapping) or isinstance(pmf_q, Mapping):
        if not (isinstance(pmf_p, Mapping) and isinstance(pmf_q, Mapping)):
            raise TypeError("pmf_p and pmf_q must both be mappings or both be arrays")
        keys = list(set(pmf_p) | set(pmf_q))
        p = check_real_array("pmf_p", [pmf_p.get(k, 0.0) for k in keys])
        q = check_real_array("pmf_q", [pmf_q.get(k, 0.0) for k in keys])
    else:
        p = check_real_array("pmf_p", pmf_p).ravel()
        q = check_real_array("pmf_q", pmf_q).ravel()
        if p.shape != q.shape:
            raise ValueError(f"pmf_p and pmf_q must have the same length, got {p.size} and {q.size}")
    for name, arr in (("pmf_p", p), ("pmf_q", q)):
        if arr.size == 0 or np.any(~np.isfinite(arr)) or np.any(arr < 0):
            raise ValueError(f"{name} must be a non-empty array of finite non-negative probabilities")
        check_pmf_total(name, math.fsum(arr.tolist()), missing_mass)
    return _direction(p, q), _direction(q, p)


def _direction(num: NDArray[np.float64], den: NDArray[np.float64]) -> LossDistribution:
    """PLD of ``num/den`` from aligned mass arrays, with the deficit of ``num`` as truncated mass."""
    both = (num > 0) & (den > 0)
    a, b = num[both], den[both]
    # log a - log b loses everything below an ulp of |log a| (two masses an ulp apart got loss 0 and δ(0) = 0
    # on the lattice, below the exact 1.7e-18); within a factor 2, a - b is exact (Sterbenz) and log1p keeps it.
    close = (a <= 2.0 * b) & (b <= 2.0 * a)
    log_a, log_b = np.log(a), np.log(b)
    losses = np.where(close, np.log1p((a - b) / np.where(close, b, 1.0)), log_a - log_b)
    infinity = float(num[(num > 0) & (den == 0)].sum())
    deficit = max(0.0, 1.0 - float(num.sum()))
    # The masses are the pair (taken as exact): a loss errs only by its roundings, log a - log b by a few
    # ulps of the logarithms, log1p of the exact difference over b by ~2.5 ulps of itself (so a pair an
    # ulp apart keeps its tiny loss's relative accuracy).
    far = ~close
    error = 3.0 * _U * float(np.max(np.abs(losses), initial=0.0))
    if np.any(far):
        error = max(error, log_ratio_error(float(np.max(np.maximum(np.abs(log_a[far]), np.abs(log_b[far]))))))
    return LossDistribution(losses, num[both], infinity_mass=min(infinity, 1.0), truncated_mass=min(deficit, 1.0), loss_error=error)
