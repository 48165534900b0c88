"""How far apart a worst case's adaptive blocks leave the two ends, estimated before they are composed, and
the tilts of the recursion's frames (both read the composed envelope's profile)."""

from __future__ import annotations


import numpy as np
from numpy.typing import NDArray

from ..pld.lattice import Term
from ..pld.tilts import distinct_tilts, tail_score
from .envelope import _common_range, _max_profile
from .ledger import LedgerPLD
from .terms import WorstCaseTerm
from .witnesses import _epsilon_gain

__all__: list[str] = []

#: δ levels at which the adaptive recursion's frames are tilted (:func:`_profile_tilts`).
_RECURSION_TILT_DELTAS = (1e-4, 1e-10, 1e-16)
#: Points at which the gap estimate (:func:`_estimated_gap`) reads both ends.
_GAP_POINTS = 1000


def _estimated_gap(terms: tuple[Term, ...], lows: tuple, spacing: float, count: int, options: dict) -> float:
    """Estimated relative ε gap, δ ∈ [1e-12, 1e-2], of ``terms`` alone (decides whether to refine them, never a
    bound): their composed upper measures against the certified lower end of the witnesses ``lows`` composed
    ``count`` times.  Only the witness directions whose log-MGF is largest at a tilt of the upper profile
    (:func:`_profile_tilts`: the heaviest tail near a saddle point) are composed, and both ends are read
    between ``_GAP_POINTS`` points, so the estimate may err either way (by 0.1 % where measured; by 10 % near
    the loss cap on a coarse lattice).  Cost: the upper realisation and, for each of up to three witnesses,
    both ends of its own."""
    upper = LedgerPLD(spacing, terms, **options).dominating_measures()
    lo, size = _common_range(upper)
    profile = _max_profile(upper, lo, size, spacing)
    directions = [d for witness in lows for d in witness if d.finite_mass > 0.0]
    first = max(lo, 0)  # ε ≥ 0
    if not directions or first > lo + size:
        return 0.0

    # Read on _GAP_POINTS points from the upper end's ε(1e-2), less 10 %, to its ε(1e-12): a larger gap is
    # clipped there, and still far above any target.
    lattice = np.arange(first, lo + size + 1) * spacing
    levels = -np.log(np.array([1e-2, 1e-12]))
    reach = np.interp(levels, -np.log(np.maximum(profile[first - lo :], 1e-300)), lattice)
    x = np.linspace(0.9 * reach[0], reach[1], _GAP_POINTS)
    lower = np.zeros(x.size)
    heaviest = {int(np.argmax([tail_score(d, spacing, theta) for d in directions])) for theta in _profile_tilts(profile, lo, spacing)}
    for index in sorted(heaviest):
        witness = (directions[index],)
        np.maximum(lower, LedgerPLD(spacing, (WorstCaseTerm(witness, (witness,), count),), **options).delta_bounds(x)[0], out=lower)
    return _epsilon_gain(np.interp(x, lattice, profile[first - lo :]), lower, x, largest=1e-2, smallest=1e-12)


def _profile_tilts(profile: NDArray[np.float64], lo: int, spacing: float) -> list[float]:
    """Tilts of the adaptive recursion's frames: θ = 0 and the decay rate ``-d log G/dx`` of the composed
    envelope's profile ``G`` (at lattice indices ``lo ..``) where it crosses ``_RECURSION_TILT_DELTAS`` (as
    :func:`pldshuffle.pld.tilts.distinct_tilts` keeps them).  A frame's round-off is relative where the bound decays at its θ;
    the composition's Chernoff saddle points sit elsewhere where the bound is far from its Chernoff bound
    (near the loss cap: 2RR n = 50, ε0 = 4, 64 rounds, δ = 1e-12: gap 2.2 % with them, 0.74 ‰ with these).
    The slope is read over ±0.05 in x (at least two lattice points each side)."""
    logs = np.log(np.maximum(profile, 1e-300))
    reach = max(2, int(0.05 / spacing))
    crossings = [int(np.searchsorted(-profile, -delta)) for delta in _RECURSION_TILT_DELTAS]  # first G ≤ δ
    return distinct_tilts(
        float((logs[k - reach] - logs[k + reach]) / (2 * reach * spacing)) for k in crossings if reach <= k < profile.size - reach
    )
