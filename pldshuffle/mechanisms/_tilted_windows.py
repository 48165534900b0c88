"""Windows of a binomial coordinate under an affine tilt, with the exact masses they drop.

The truncation step shared by the tilted-trinomial supports of shuffled kRR
(:func:`~pldshuffle.mechanisms._krr_support.tilted_trinomial_support`) and the blanket supports: a
central binomial window, widened by one so that it serves ``Bin(N, π)`` and ``1 + Bin(N-1, π)`` alike,
and the dropped masses split so that any tilt affine in the coordinate books its dropped P-mass exactly.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from ._binomial import binomial_cdf, binomial_sf, binomial_windows

__all__ = ["tilted_windows"]


def tilted_windows(
    trials: NDArray[np.int64], prob: float, tail_mass: float | NDArray[np.float64]
) -> tuple[NDArray[np.int64], NDArray[np.int64], NDArray[np.float64], NDArray[np.float64]]:
    r"""Windows for ``z ~ Bin(N, π)`` under an affine tilt, and the exact masses they drop.

    With ``Z' ~ Bin(N-1, π)`` and its central window ``[lo', hi']`` (tail ``tail_mass``), the window is
    ``[lo', hi' + 1]``; it drops at most ``tail_mass`` of both ``Bin(N, π) = Z' + Bern(π)`` and ``1 + Z'``.
    A tilt affine in ``z`` is ``t(z) = t0 (N-z)/N + t1 z/N`` and, by ``z Bin(N,π)(z) = Nπ Bin(N-1,π)(z-1)``,

    .. math:: \sum_{z \notin W} \mathrm{Bin}(N,π)(z)\, t(z) = t_0\, q_0 + t_1\, q_1,\quad
              q_0 = (1-π) P[Z' \notin W],\ q_1 = π P[Z' \notin W - 1],

    which is at most ``tail_mass · E[t(z)]``.  Returns ``(lo, hi, q0, q1)`` (``q0 + q1`` is the untilted
    dropped mass); ``N = 0`` gives ``[0, 0]`` and nothing dropped.
    """
    trials = np.asarray(trials, dtype=np.int64)
    m = np.maximum(trials - 1, 0)
    lo, hi = binomial_windows(m, prob, tail_mass)
    positive = trials > 0
    hi = np.where(positive, hi + 1, 0)
    lo = np.where(positive, lo, 0)
    q0 = np.where(positive, (1.0 - prob) * (binomial_cdf(lo - 1, m, prob) + binomial_sf(hi, m, prob)), 0.0)
    q1 = np.where(positive, prob * (binomial_cdf(lo - 2, m, prob) + binomial_sf(hi - 1, m, prob)), 0.0)
    return lo, hi, q0, q1
