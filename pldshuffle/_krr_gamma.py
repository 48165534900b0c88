"""k-ary randomized response: the blanket probability γ and the local ε0, one from the other.

A k-RR user reports its value with probability ``1 - γ`` and a uniform value (possibly its own)
with probability ``γ``, so ``e^{ε0} = 1 + k(1-γ)/γ``, i.e. ``γ = k / (e^{ε0} + k - 1)`` (Balle, Bell,
Gascón, Nissim, CRYPTO 2019, Lemma 5.1(1)).  Both directions are computed in log space, finite for
every valid input (``ε0`` up to ~700, ``γ`` down to the smallest normal double): O(1).  This is the
only place the relation is written; the mechanism :class:`~pldshuffle.ShuffledKRR` and the analytic
baselines of :mod:`pldshuffle.bounds` both use it.
"""

from __future__ import annotations

import math

import numpy as np

__all__ = ["krr_gamma", "krr_local_epsilon", "krr_log_excess", "krr_log_gamma"]


def krr_log_gamma(domain_size: int, local_epsilon: float) -> float:
    """``log γ = log k - log(e^{ε0} + k - 1)`` for ``k = domain_size >= 2``, ``ε0 >= 0``."""
    return math.log(domain_size) - float(np.logaddexp(local_epsilon, math.log(domain_size - 1)))


def krr_log_excess(domain_size: int, gamma: float) -> float:
    """``log(e^{ε0} - 1) = log k + log(1 - γ) - log γ`` for ``γ ∈ (0, 1]`` (``-inf`` at ``γ = 1``)."""
    if gamma >= 1.0:
        return -math.inf
    return math.log(domain_size) + math.log1p(-gamma) - math.log(gamma)


def krr_gamma(domain_size: int, local_epsilon: float) -> float:
    """``γ = k / (e^{ε0} + k - 1)``."""
    return math.exp(krr_log_gamma(domain_size, local_epsilon))


def krr_local_epsilon(domain_size: int, gamma: float) -> float:
    """``ε0 = log(1 + k(1-γ)/γ)``."""
    return float(np.logaddexp(0.0, krr_log_excess(domain_size, gamma)))
