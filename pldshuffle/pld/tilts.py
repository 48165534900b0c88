"""Tilts of a realisation: θ = 0 and the Chernoff saddle points of a few δ levels.

A window realised under the tilt ``e^{θz}`` carries a round-off bound that is small where its δ level's
saddle point sits (see :mod:`pldshuffle.pld.composition`); a composition is realised at each tilt chosen
here and every query reads the tilt that bounds it best.  Cost: one log-MGF evaluation per candidate θ.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import TYPE_CHECKING

import numpy as np

from .composition import CHERNOFF_LAMBDAS, composed_log_mgf, log_mgf

if TYPE_CHECKING:  # pragma: no cover
    from .lattice import LatticeDirection

__all__ = ["choose_tilts", "distinct_tilts", "tail_score"]

#: Candidate tilts, ~23 a decade.  Small losses need large θ (≈ 450 at ε ≈ 0.09, 7e5 at ε ≈ 5e-5); huge
#: ones small θ: the saddle point is ≈ log(1/δ)/ε, and rare huge losses put ε in the thousands (64 rounds of
#: P = [0.05, 0.95] against Q = [1e-300, 1 - 1e-300], loss 687.8 with probability 0.05: ε(1e-9) = 12376.7,
#: saddle θ ≈ 2.9e-3).  Candidates starting at 1e-2 had tilted that ledger too far (the error bound at ε grows
#: like e^{(θ - θ*)·(hits)·687.8}), leaving θ = 0 with an absolute round-off of 7e-10 to decide δ = 1e-9:
#: bracket [9626.26, 19349.47], 1.6e-6 wide with its saddle point.
_TILT_CANDIDATES = np.geomspace(1e-6, CHERNOFF_LAMBDAS[-1], 300)
#: δ levels whose Chernoff saddle points set the tilts (θ = 0 is always included) ...
_TILT_DELTAS = (1e-8, 1e-14)
#: ... and for ledgers of more rounds also this one: the FFT's certified round-off grows with the rounds
#: (``n·r^{n-1}`` times the forward error per spectral entry), and untilted it reached ~5e-5 in δ after 1e6
#: rounds of a sparse pair (randomized response, ε0 = 1e-3: gap 4.0e-2 at δ = 1e-3, 5.1e-4 with this tilt;
#: 1e5 rounds at ε0 = 3e-3: 9.4e-3 and 1.2e-4; 1e4 rounds at ε0 = 1e-2: 1.1e-3 and 2.4e-4; 2000 rounds at
#: ε0 = 3e-2: 2.1e-4 and 1.7e-5).
_LONG_TILT_DELTA, _LONG_LEDGER = 1e-3, 2000


def choose_tilts(combo: list[tuple[LatticeDirection, int]], spacing: float) -> list[float]:
    """θ = 0 and the Chernoff saddle points of the δ levels in ``_TILT_DELTAS`` (and ``_LONG_TILT_DELTA`` for
    ledgers of more than ``_LONG_LEDGER`` rounds)."""
    factors = [d.factor(n) for d, n in combo if d.finite_mass > 0]
    if not factors or sum(n for _, n in combo) == 1:
        return [0.0]
    thetas = _TILT_CANDIDATES
    log_m = composed_log_mgf(factors, spacing, thetas)
    long = sum(n for _, n in combo) > _LONG_LEDGER
    levels = ((_LONG_TILT_DELTA,) if long else ()) + _TILT_DELTAS
    return distinct_tilts(float(thetas[int(np.argmin((log_m - math.log(delta)) / thetas))]) for delta in levels)


def tail_score(direction: LatticeDirection, spacing: float, theta: float) -> float:
    """log E[e^{θL}; L < ∞] of one round of ``direction`` (−∞ without finite losses): how heavy its tail is
    near the saddle point θ, where the witness with the largest score is the one to compose."""
    if direction.finite_mass <= 0.0:
        return -math.inf
    return float(log_mgf(direction.factor(1), spacing, np.array([theta]), exact=True)[0])


def distinct_tilts(candidates: Iterable[float]) -> list[float]:
    """θ = 0 and each candidate (in order) above 1.4 times the last one kept: frames closer than that add
    FFTs without lowering the round-off bound much."""
    tilts = [0.0]
    for theta in candidates:
        if theta > 1.4 * tilts[-1]:
            tilts.append(float(theta))
    return tilts


