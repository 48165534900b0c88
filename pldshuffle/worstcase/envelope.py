"""Worst cases over datasets as one dominating lattice pair (``docs/mathematics.md#worst-case``).

A mechanism whose guarantee is a maximum over a family of neighbouring pairs ``{(P_m, Q_m)}`` (e.g. every
dataset of shuffled binary randomized response) is turned into ONE lattice measure whose privacy profile
``h(x) = Σ ω(z)(1 - e^{x-z})_+ + ω(∞)`` is ≥ every member's profile, in both orders, at every real ``x``:

* Each member's connect-the-dots discretisation has, at the lattice points, exactly the member's
  profile, and is linear in ``α = e^x`` between them.
* The pointwise maximum ``D`` of those profiles is convex in ``α``, so the lattice measure whose profile
  interpolates ``D`` linearly in ``α`` between lattice points dominates every member (Zhu, Dong & Wang,
  AISTATS 2022: a dominating pair always exists; construction as in Doroshenko et al., PETS 2022).
  Its masses come from the inversion ``A_j = (H_{j-1} - e^{-Δ}H_j)/(1 - e^{-Δ})`` (``A_j`` = mass at
  or above ``z_j``), made non-increasing by raising, then verified a posteriori: the measure is scaled
  up by the largest ratio ``D_j / h_j`` if rounding left any point below.  Only upper bounds on ``D``
  at the lattice points are needed: they are read off the members' sorted supports at chosen points and
  by ``D``'s chords in between (:meth:`_Exact.envelope`), so no lattice measure is built per member.
* Profile domination at every ``x`` survives convolution with any non-negative measure, so the
  envelope composes soundly with anything, for any sequence of datasets ("data may change between
  rounds").
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable

from typing import cast

import numpy as np
from numpy.typing import NDArray

from .._kernels import UNIT_ROUNDOFF as _U, hockey_stick_profile
from ..pld.lattice import LatticeDirection, profile_at
from ..pld import MASS_RTOL, LargestUpperProfile, PrivacyLossPair

#: Profile values below this are immaterial for the excess test.
_FLOOR = 1e-30
#: Lattice points on which branch and bound compares profiles.
_PROBES = 4097
#: An envelope's bound between lattice points where it is known: chords, refined until this close (relative).
_CHORD_TOLERANCE = 1e-6
Profile = tuple[int, NDArray[np.float64], float]  # (start index, masses, infinity) of one lattice direction


def _profile_on(direction: LatticeDirection, lo: int, size: int, spacing: float) -> NDArray[np.float64]:
    """The direction's profile at ``j = lo .. lo+size`` (``size + 1`` values, infinity included)."""
    return profile_at(direction, lo + np.arange(size + 1), spacing)


class _Lattice:
    """Profiles of pairs' lattice measures on one common index range, for a fixed spacing.

    Directions are cached per pair *object* (the cache holds the pair, so an ``id`` is never reused for
    another pair) until :meth:`forget` releases them.
    """

    def __init__(self, spacing: float, profile_of: Callable[[PrivacyLossPair], list[LatticeDirection]]) -> None:
        self.spacing, self.profile_of = spacing, profile_of
        self._dirs: dict[int, tuple[PrivacyLossPair, list[LatticeDirection]]] = {}

    def directions(self, pair: PrivacyLossPair) -> list[LatticeDirection]:
        if id(pair) not in self._dirs:
            self._dirs[id(pair)] = (pair, self.profile_of(pair))
        return self._dirs[id(pair)][1]

    def forget(self, pair: PrivacyLossPair) -> None:
        entry = self._dirs.get(id(pair))
        if entry is not None and entry[0] is pair:
            del self._dirs[id(pair)]

    def held_bytes(self) -> int:
        """Bytes of the cached lattice measures."""
        return sum(d.masses.nbytes for _, dirs in self._dirs.values() for d in dirs)

    def range_of(self, pairs: list[PrivacyLossPair]) -> tuple[int, int]:
        return _common_range([d for p in pairs for d in self.directions(p)])

    def profile(self, pair: PrivacyLossPair, indices: NDArray[np.int64]) -> NDArray[np.float64]:
        """Max over both orders of the pair's lattice profile at the given lattice indices."""
        return cast(NDArray[np.float64], np.max([profile_at(d, indices, self.spacing) for d in self.directions(pair)], axis=0))

    def envelope(self, pairs: list[PrivacyLossPair]) -> LatticeDirection:
        return envelope([d for p in pairs for d in self.directions(p)], self.spacing)


class _Exact:
    """Strict upper bounds on the exact pairs' profiles at lattice points, read off their sorted supports.

    A pair's connect-the-dots lattice measure has, at the lattice points, the pair's own profile, and is
    linear in ``α = e^x`` between them, so an envelope only needs upper bounds on the exact profiles at
    (ascending) lattice points (:meth:`~pldshuffle.pld.LossDistribution.hockey_stick_upper_sorted`): no
    lattice measure is built per member.  O(support + points) per direction and call (a lattice measure
    costs O(range/Δ) per member, which dominated fine lattices of large families).
    """

    def __init__(self, spacing: float, order: int | None = None) -> None:
        self.spacing, self.order = spacing, order

    def forget(self, pair: PrivacyLossPair) -> None:
        """Nothing is cached per pair."""

    def held_bytes(self) -> int:
        """Nothing is cached."""
        return 0

    def _directions(self, pair: PrivacyLossPair) -> tuple:
        """Both orders, or only ``order`` (a symmetric pair's single direction stands for both)."""
        if self.order is None:
            return pair.directions
        return (pair.directions[min(self.order, len(pair.directions) - 1)],)

    def range_of(self, pairs: list[PrivacyLossPair]) -> tuple[int, int]:
        """The range of the pairs' connect-the-dots measures, as :func:`_common_range` gives it."""
        dirs = [d for p in pairs for d in self._directions(p) if d.support_size]
        if not dirs:
            return 0, 1
        lo = min(math.floor(d.losses[0] / self.spacing) for d in dirs)
        return lo, max(math.floor(d.losses[-1] / self.spacing) for d in dirs) + 3 - lo

    def profile(self, pair: PrivacyLossPair, indices: NDArray[np.int64]) -> NDArray[np.float64]:
        """Max over the orders of a strict upper bound on the pair's profile at the lattice indices."""
        return LargestUpperProfile(self._directions(pair))(np.asarray(indices, dtype=np.float64) * self.spacing)

    def envelope(self, pairs: list[PrivacyLossPair]) -> LatticeDirection:
        """Lattice measure dominating every pair, from upper bounds on their pointwise maximum ``D``.

        ``D`` (convex in α) is bounded at a set of lattice points and by its chords in between; the set
        starts at ``_PROBES`` points and each interval is halved while the chord at its midpoint exceeds
        the bound there by more than ``_CHORD_TOLERANCE`` (relative; profiles below ``_FLOOR`` are not
        refined).  A convex ``D`` lies below each chord, and a concave chord excess is at most twice its
        midpoint value, so the bracket is sound and its excess at most 2·``_CHORD_TOLERANCE``.  Cost
        O(pairs × (support + points)) per refinement step (about log2(range/``_PROBES``) steps, each on the
        intervals still loose), plus O(range/Δ) for the measure.
        """
        spacing = self.spacing
        lo, size = self.range_of(pairs)

        largest = LargestUpperProfile([d for p in pairs for d in self._directions(p)])

        def top(offsets: NDArray[np.int64]) -> NDArray[np.float64]:
            return largest((lo + offsets).astype(np.float64) * spacing)

        points = np.unique(np.linspace(0, size, min(size + 1, _PROBES)).astype(np.int64))
        values = top(points)
        refine = np.diff(points) >= 2  # whether the interval right of each point may be halved
        while np.any(refine):
            k = np.flatnonzero(refine)
            a, b = points[k], points[k + 1]
            mid = (a + b) // 2
            at_mid = top(mid)
            excess = _chord(values[k], values[k + 1], mid - a, b - a, spacing) - at_mid
            loose = (excess > _CHORD_TOLERANCE * at_mid) & (at_mid > _FLOOR)
            flags = np.append(refine, False)
            flags[k] = loose & (mid - a >= 2)
            order = np.argsort(np.concatenate([points, mid]), kind="stable")
            points = np.concatenate([points, mid])[order]
            values = np.concatenate([values, at_mid])[order]
            refine = np.concatenate([flags, loose & (b - mid >= 2)])[order][:-1]
        offsets = np.arange(size + 1)
        k = np.minimum(np.searchsorted(points, offsets, side="right") - 1, points.size - 2)
        a, b = points[k], points[k + 1]
        chord = _chord(values[k], values[k + 1], offsets - a, b - a, spacing)
        # The chord's few roundings are covered relative to the larger end (the excess test keeps ends close).
        target = chord * (1.0 + 8.0 * _U) + 8.0 * _U * np.maximum(values[k], values[k + 1])
        # Masses summed directly: ``finite_mass`` would build (and keep) a suffix-sum array per member.
        total = max(
            (float(d.masses.sum()) + d.infinity_mass + d.truncated_mass) * (1.0 + MASS_RTOL)
            for p in pairs
            for d in self._directions(p)
        )
        return _from_profile(target, total, lo, spacing)


def _chord(left: NDArray[np.float64], right: NDArray[np.float64], step: NDArray[np.int64], width: NDArray[np.int64],
           spacing: float) -> NDArray[np.float64]:
    """The chord, linear in ``α = e^x``, from ``left`` at ``z_a`` to ``right`` at ``z_{a+width}``, at ``z_{a+step}``."""
    weight = np.expm1(step * spacing) / np.expm1(np.maximum(width, 1) * spacing)
    return cast(NDArray[np.float64], left + weight * (right - left))


def envelope(directions: list[LatticeDirection], spacing: float) -> LatticeDirection:
    """Lattice measure whose profile is ≥ every direction's profile at every real x (module notes).

    Cost O(len(directions) × range/Δ).
    """
    lo, size = _common_range(directions)
    total = max(d.finite_mass + d.infinity for d in directions)
    return _from_profile(_max_profile(directions, lo, size, spacing), total, lo, spacing)


def _common_range(directions: list[LatticeDirection]) -> tuple[int, int]:
    """``(lo, size)``: lattice indices ``lo .. lo+size`` cover every direction's support and one point above."""
    lo = min(d.start for d in directions)
    return lo, max(d.start + d.masses.size for d in directions) + 1 - lo


def _max_profile(directions: Iterable[LatticeDirection], lo: int, size: int, spacing: float) -> NDArray[np.float64]:
    """Pointwise maximum of the directions' profiles at ``j = lo .. lo+size`` (one profile in memory at a time)."""
    target = np.zeros(size + 1)
    for d in directions:
        np.maximum(target, _profile_on(d, lo, size, spacing), out=target)
    return target


def _from_profile(target: NDArray[np.float64], total: float, lo: int, spacing: float) -> LatticeDirection:
    """Invert a convex non-increasing profile sampled at ``z_lo .. z_{lo+size}`` into a dominating measure
    (masses at ``z_lo .. z_{lo+size}``; the last one carries the drop from ``z_{lo+size-1}`` to the end,
    which no mass at or below ``z_{lo+size-1}`` could)."""
    size = target.size - 1
    infinity = float(target[-1])
    finite = np.maximum(target - infinity, 0.0)
    above = _mass_at_or_above(finite, max(total - infinity, 0.0), spacing)
    above[size] = finite[size - 1] / -math.expm1(-spacing) if size > 0 else 0.0
    # Mass at or above z_j must not increase with j; raising it only raises the profile.
    above = np.maximum.accumulate(np.maximum(above, 0.0)[::-1])[::-1]
    masses = np.append(-np.diff(above), above[size])
    # A posteriori check: scale up where rounding left the rebuilt profile below the target.
    rebuilt = hockey_stick_profile(masses, spacing)[0][: size + 1]
    material = finite > 0
    ratio = float(np.max(finite[material] / np.maximum(rebuilt[material], 1e-320))) if np.any(material) else 1.0
    scale = max(ratio, 1.0) * (1.0 + 8.0 * _U * (size + 8))
    return LatticeDirection(lo, masses * scale, min(1.0, infinity * (1.0 + 4.0 * _U)))


def _mass_at_or_above(finite: NDArray[np.float64], total: float, spacing: float) -> NDArray[np.float64]:
    """``A_j``, the mass at or above ``z_j``, of the measure whose finite profile is ``finite`` at
    ``z_0 .. z_size`` (``A_0 = total``, ``A_size = 0``): ``A_j = (H_{j-1} - e^{-Δ}H_j)/(1 - e^{-Δ})``, before
    the caller's rounding direction is imposed."""
    size = finite.size - 1
    above = np.empty(size + 1)
    above[0] = total
    above[1:size] = (finite[:-2] - math.exp(-spacing) * finite[1:-1]) / -math.expm1(-spacing)
    above[size] = 0.0
    return above
