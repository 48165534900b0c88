"""The lattice of a ledger: the spacing Δ chosen once from the relative-gap target, and its size.

One home for the a-priori estimates that size a composition before anything is realised
(:mod:`pldshuffle.certified` realises it; :mod:`pldshuffle._estimate` prices it).
"""

from __future__ import annotations

import math

import numpy as np

from .certified import TAIL_TOLERANCE
from .composition import CHERNOFF_LAMBDAS, Factor, composed_log_mgf, window
from .pld import PrivacyLossPair

__all__ = ["choose_spacing", "composed_range", "relative_target"]

#: Automatic spacing keeps the composition window below this many lattice points.
MAX_POINTS = 2**21


def relative_target(rounds: int) -> float:
    """Default certified relative ε gap: 1e-4 for one round, 1e-3 up to 64 rounds, 2e-3 beyond."""
    if rounds == 1:
        return 1e-4
    return 1e-3 if rounds <= 64 else 2e-3


def composed_range(pairs: list[tuple[PrivacyLossPair, int]]) -> tuple[float, float]:
    """``(ε, width)`` of a ledger (one representative pair per entry, with its round count), on a coarse lattice.

    ``ε`` is a Chernoff estimate at δ = 1e-3 over both orders and ``width`` the length of the composition
    window at θ = 0 (Chernoff tails 1e-18); a lattice of spacing Δ needs about ``width/Δ`` points.
    """
    coarse = 1e-3
    epsilon, width = 0.0, 0.0
    for order in (0, 1):
        factors = []
        for pair, count in pairs:
            direction = pair.directions[min(order, len(pair.directions) - 1)].discretize(coarse)
            if direction.upper.sum() > 0:
                factors.append(Factor(direction.upper_start, direction.upper, count))
        if not factors:
            continue
        lo, hi = window(factors, coarse, 0.0, TAIL_TOLERANCE)
        width = max(width, hi - min(lo, 0.0))
        log_m = composed_log_mgf(factors, coarse, CHERNOFF_LAMBDAS)
        epsilon = max(epsilon, float(np.min((log_m - math.log(1e-3)) / CHERNOFF_LAMBDAS)))
    return epsilon, width


def choose_spacing(pairs: list[tuple[PrivacyLossPair, int]], target: float) -> float:
    """Lattice spacing for a ledger (one representative pair per entry, with its round count).

    Δ ≈ target·ε/(4√rounds) from the Chernoff estimate of ε of :func:`composed_range` (for one round,
    1e-2·ε: a single round is answered off the lattice), never so fine that the composition window
    exceeds ``MAX_POINTS`` lattice points; clipped to [1e-7, 1e-2].
    """
    rounds = sum(n for _, n in pairs)
    epsilon, width = composed_range(pairs)
    scale = max(epsilon, 0.05)
    spacing = 1e-2 * scale if rounds == 1 else target * scale / (4.0 * math.sqrt(rounds))
    return float(np.clip(max(spacing, width / MAX_POINTS), 1e-7, 1e-2))
