"""Rare far losses: a composition written as a binomial mixture of narrow compositions.

A lattice measure ``ω`` whose support has a wide empty stretch splits into its two sides,
``ω = B·β + F·φ`` (``β``, ``φ`` probability measures, ``B``, ``F`` their masses).  Its ``n``-fold
composition is then exactly

.. math::  ω^{*n} = \\sum_{K=0}^{n} \\binom{n}{K} F^K B^{n-K} \\; φ^{*K} * β^{*(n-K)},

and a combination of several factors is the product of such sums (factors without a wide gap stay
whole).  The privacy profile ``h(x) = Σ ω(z)(1 - e^{x-z})_+`` is linear in the measure, so the profile of
the composition is the same weighted sum of the profiles of the narrow compositions ``φ^{*K} * β^{*(n-K)}``.
Each of those is realised on its own window (a few lattice points wide per round instead of the whole
range from the bulk to ``n`` far atoms), with its own tilts and certified error terms
(:func:`pldshuffle.pld.composition.realize`).  The weights are computed in log space from the exact binomial
coefficient (``math.comb``) with a bound on their rounding: the upper end uses them rounded up, the lower
end rounded down, and terms whose weight is below ``SKIP_WEIGHT`` are left out -- the lower end drops
them (a sum of fewer non-negative terms), the upper end books their total weight at ``+∞`` (it adds to δ at
every ε).  So both ends keep their direction; see ``docs/mathematics.md#rare-far-losses``.

Why: a loss far above the bulk that occurs rarely makes the composition's single window span every
number of hits: the lattice that fits the memory cap is then too coarse for the bulk, and the window's
Chernoff bounds and FFT round-off, relative to the whole mass, swamp the rare numbers of hits (64 rounds of
randomized response with ε0 = 0.1 and an outcome of loss 663 at probability 1e-12: one window of 1.1e7
points, gaps 8.1, 7.4 and 978 ‰ at δ = 1e-2, 1e-6, 1e-10 in 12 s; split, 0.25, 0.07 and 0.04 ‰ in 5 s).

A combination is split where the empty stretch is wider than the summed widths of all its narrow
compositions (those of consecutive numbers of far atoms do not overlap), with at most ``MAX_TERMS`` terms
and ``MAX_SPLIT_ROUNDS`` rounds per split factor, and only where it pays: every split factor's far side
weighs at most ``RARE_MASS``, or the whole window would exceed ``WHOLE_POINTS``.  Elsewhere the caller
composes as usual.  Pure: lattice measures in, lattice measures and weights out.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from .._kernels import UNIT_ROUNDOFF as _U
from .composites import Composite
from .composition import Factor, Realization, window
from .lattice import LatticeDirection

__all__ = ["MAX_SPLIT_ROUNDS", "MAX_TERMS", "RARE_MASS", "SKIP_WEIGHT", "WHOLE_POINTS", "FarSplit", "NarrowFactor", "MixtureComposite", "mixture_width", "narrow_direction", "split_combination"]

#: At most this many narrow compositions per combination (the product of the kept numbers of far atoms).
MAX_TERMS = 160
#: A factor of more rounds is not split (its numbers of far atoms are enumerated one by one).
MAX_SPLIT_ROUNDS = 4096
#: Terms whose (rounded-up) weight is below this are left out: booked at +∞ by the upper end, dropped by
#: the lower end (every δ the targets are stated for, ≥ 1e-15, is far above it).
SKIP_WEIGHT = 1e-30
#: A combination is split only where its whole θ = 0 window would hold more lattice points than this (the
#: automatic lattice's own limit, ``pldshuffle.pld.sizing.MAX_POINTS``), unless its far sides are rare.  Below
#: it one window is cheap, its lower end's shift certificate is tighter than the narrow compositions' (they
#: bound their bulk's rounding offsets through the whole measure's), and a query reads one composition, not
#: dozens (plain randomized response, ε0 = 0.1, 64 rounds, whose two atoms are apart enough to split: gap
#: 4.5e-5 and 3.8e-6 at δ = 1e-2 and 1e-14 whole, 2.1e-4 and 1.1e-5 split, each query several times slower).
WHOLE_POINTS = 2**21
#: A factor whose far side weighs at most this is split whatever its whole window (rare far losses: the
#: narrow compositions are few, and a whole window's Chernoff bounds are loose next to them -- 64 rounds of
#: randomized response, ε0 = 0.1, with an outcome of loss -663 and probability 1e-300 under the other
#: order, δ = 1e-10: ε ≤ 6.40 whole, against 4.94 split).
RARE_MASS = 1e-3
#: Largest dense measure :meth:`MixtureComposite.dominating_measure` builds (lattice points).
MAX_DENSE_POINTS = 2**26


@dataclass(frozen=True)
class _Cut:
    """Where one factor's support splits: its masses at relative indices ``[lo, mid_lo]`` and ``[mid_hi, hi]``
    (first and last masses of each side).  The lighter side is called *far* (``far_above``: the upper one),
    the other the *bulk*."""

    lo: int
    mid_lo: int
    mid_hi: int
    hi: int
    far_above: bool

    @property
    def gap(self) -> int:
        return self.mid_hi - self.mid_lo

    @property
    def part_width(self) -> int:
        return max(self.mid_lo - self.lo, self.hi - self.mid_hi)


def _cut(masses: NDArray[np.float64]) -> _Cut | None:
    """The widest empty stretch between two masses, or None for fewer than two masses."""
    nz = np.flatnonzero(masses > 0)
    if nz.size < 2:
        return None
    j = int(np.argmax(np.diff(nz)))
    below, above = math.fsum(masses[nz[0] : nz[j] + 1]), math.fsum(masses[nz[j + 1] : nz[-1] + 1])
    return _Cut(int(nz[0]), int(nz[j]), int(nz[j + 1]), int(nz[-1]), above <= below)


def _cuts(factors: Sequence[tuple[int, NDArray[np.float64], int]]) -> list[_Cut | None] | None:
    """The cut of each factor that is split (None for those kept whole), or None when nothing is split.

    A factor is split when its empty stretch is wider than the summed widths of every factor's narrow
    compositions (split factors: ``n·`` the wider side; whole ones: ``n·`` their support), so the narrow
    compositions of consecutive numbers of far atoms do not overlap; removing a candidate widens the others'
    sum, so this is repeated until it settles.
    """
    if sum(n for _, _, n in factors) <= 1:
        return None
    cuts = [_cut(m) if 1 <= n <= MAX_SPLIT_ROUNDS else None for _, m, n in factors]
    whole = [n * int(np.ptp(np.flatnonzero(m > 0))) if np.any(m > 0) else 0 for _, m, n in factors]
    while True:
        total = sum(n * c.part_width if c is not None else w for c, w, (_, _, n) in zip(cuts, whole, factors))
        kept = [c if c is not None and c.gap > total + 2 else None for c in cuts]
        if kept == cuts:
            break
        cuts = kept
    return cuts if any(c is not None for c in cuts) else None


def _sides(start: int, masses: NDArray[np.float64], cut: _Cut) -> tuple[tuple[int, NDArray[np.float64], float], tuple[int, NDArray[np.float64], float]]:
    """``((start, normalised masses, mass) of the bulk, same of the far side)``; masses are fsum-rounded."""
    low = masses[cut.lo : cut.mid_lo + 1]
    high = masses[cut.mid_hi : cut.hi + 1]
    parts = [(start + cut.lo, low, math.fsum(low.tolist())), (start + cut.mid_hi, high, math.fsum(high.tolist()))]
    bulk, far = (parts[0], parts[1]) if cut.far_above else (parts[1], parts[0])
    return (bulk[0], bulk[1] / bulk[2], bulk[2]), (far[0], far[1] / far[2], far[2])


def _binomial_weights(count: int, far: float, bulk: float) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """``C(n, K) F^K B^{n-K}`` for ``K = 0..n``, rounded up and rounded down.

    Log space from the exact integer ``C(n, K)``; the bound on the rounding covers the logarithms (a few u of
    each term's magnitude), the products and ``e^x``, and the normalisation of the two sides' masses (each
    normalised mass is within a relative u of ``mass/side``, so ``n`` of them within ``(1 + u)^n``).
    """
    k = np.arange(count + 1)
    log_comb = np.array([math.log(math.comb(count, int(j))) for j in k])
    log_far, log_bulk = math.log(far), math.log(bulk)
    log_w = log_comb + k * log_far + (count - k) * log_bulk
    error = 8.0 * _U * (np.abs(log_comb) + k * abs(log_far) + (count - k) * abs(log_bulk) + count + 4.0)
    with np.errstate(under="ignore"):
        return np.exp(log_w + error), np.exp(log_w - error)


@dataclass(frozen=True)
class NarrowFactor:
    """One factor of a narrow composition: ``count`` rounds of the probability masses ``masses`` at lattice
    indices ``start + i`` -- one side of factor ``origin`` of the combination, or all of it.

    ``log_side`` relates the side's rounding offsets to the whole measure's (for the lower end's shift
    certificate, :func:`pldshuffle.pld.lattice.shift_certificate`): the side's moment generating function of any
    non-negative function of the outcome is at most the whole's divided by ``e^{log_side}`` (the bulk:
    ``log B``; a factor kept whole: 0, its masses are not normalised), or None for the far side, where
    only the trivial bound 1 is used (offsets are non-negative).
    """

    start: int
    masses: NDArray[np.float64]
    count: int
    origin: int
    log_side: float | None


@dataclass(frozen=True)
class FarSplit:
    """A combination as a binomial mixture: ``terms`` of ``(upper weight, lower weight, narrow factors)``
    and the total upper weight left out (``booked``)."""

    terms: tuple[tuple[float, float, tuple[NarrowFactor, ...]], ...]
    booked: float


def split_combination(
    factors: Sequence[tuple[int, NDArray[np.float64], int]], spacing: float, tolerance: float, *, whole_points: float | None = WHOLE_POINTS
) -> FarSplit | None:
    """The mixture of a combination of lattice measures ``(start, finite masses, count)``, or None where
    no factor has a wide enough empty stretch, or the mixture would exceed ``MAX_TERMS`` terms, or -- unless
    every split factor's far side is rare (mass at most ``RARE_MASS``) -- the whole composition's θ = 0
    window (Chernoff tails ``tolerance``) holds at most ``whole_points`` lattice points.  ``whole_points``
    None: split wherever the supports allow (for sizing a lattice).

    Cost: O(n) logarithms per split factor of ``n`` rounds, O(support) per factor, and one window's
    Chernoff bounds.
    """
    cuts = _cuts(factors)
    if cuts is None:
        return None
    sides = [_sides(start, masses, cut) if cut is not None else None for (start, masses, _), cut in zip(factors, cuts)]
    rare = all(side is None or side[1][2] <= RARE_MASS for side in sides)
    if whole_points is not None and not rare:
        lo, hi = window([Factor(s, m, n) for s, m, n in factors], spacing, 0.0, tolerance)
        if (hi - lo) / spacing <= whole_points:
            return None
    choices: list[list[tuple[float, float, tuple[NarrowFactor, ...]]]] = []
    skipped: list[float] = []
    totals: list[float] = []
    for index, ((start, masses, count), side) in enumerate(zip(factors, sides)):
        if side is None:
            mass = math.fsum(masses.tolist())
            log_total = count * math.log(mass) if mass > 0 else -math.inf
            totals.append(math.exp(log_total + 4.0 * _U * (abs(log_total) + count + 1)) if mass > 0 else 0.0)  # rounded up
            choices.append([(1.0, 1.0, (NarrowFactor(start, masses, count, index, 0.0),))])
            skipped.append(0.0)
            continue
        (b_start, b_masses, b_mass), (f_start, f_masses, f_mass) = side
        up, low = _binomial_weights(count, f_mass, b_mass)
        keep = up >= SKIP_WEIGHT
        options: list[tuple[float, float, tuple[NarrowFactor, ...]]] = []
        for k in map(int, np.flatnonzero(keep)):
            parts: tuple[NarrowFactor, ...] = (NarrowFactor(f_start, f_masses, k, index, None),) if k > 0 else ()
            parts += (NarrowFactor(b_start, b_masses, count - k, index, math.log(b_mass)),) if k < count else ()
            options.append((float(up[k]), float(low[k]), parts))
        choices.append(options)
        skipped.append(math.fsum(up[~keep].tolist()) * (1.0 + 2.0 * _U * (count + 1)))
        totals.append(math.fsum(up.tolist()) * (1.0 + 2.0 * _U * (count + 1)))
    if math.prod(len(c) for c in choices) > MAX_TERMS:
        return None
    slack = 4.0 * _U * len(factors)
    terms = []
    for combo in itertools.product(*choices):
        weight_up = math.prod(c[0] for c in combo) * (1.0 + slack)
        weight_low = math.prod(c[1] for c in combo) * (1.0 - slack)
        terms.append((weight_up, weight_low, tuple(p for c in combo for p in c[2])))
    # A left-out term of factor i weighs at most its weight times every other factor's total, times the total
    # of its normalised sides (each within (1 + u)^2 of 1 per round: the division and the rounded side mass).
    booked = math.fsum(s * math.prod(t for j, t in enumerate(totals) if j != i) for i, s in enumerate(skipped) if s > 0.0)
    rounds = sum(n for _, _, n in factors)
    return FarSplit(tuple(terms), booked * (1.0 + slack) * math.exp(4.0 * _U * (rounds + len(factors))))


def mixture_width(factors: list[Factor], spacing: float, tolerance: float) -> float | None:
    """The widest θ = 0 window (Chernoff tails ``tolerance``) of the narrow compositions the combination
    splits into wherever its whole window is too wide, or None where it has no rare far losses; for sizing
    a lattice (:func:`pldshuffle.pld.sizing.choose_spacing`)."""
    split = split_combination([(f.start, f.masses, f.count) for f in factors], spacing, tolerance, whole_points=None)
    if split is None:
        return None
    width = 0.0
    for *_, parts in split.terms:
        lo, hi = window([Factor(p.start, p.masses, p.count) for p in parts], spacing, 0.0, tolerance)
        width = max(width, hi - lo)
    return width


@dataclass(eq=False)
class MixtureComposite:
    """A combination realised as a weighted sum of narrow compositions (see the module notes).

    ``parts`` are ``(weight, composite)``: the weight rounded up for an upper composite, down for a lower
    one, and each composite realises one narrow composition of finite masses (no mass at ``+∞``).
    ``infinity`` is the combination's own mass at ``+∞`` (rounded the same way) and ``booked`` the upper
    weight of the left-out terms (0 for a lower composite).
    """

    parts: tuple[tuple[float, Composite], ...]
    infinity: float
    booked: float = 0.0

    @property
    def realizations(self) -> tuple[Realization, ...]:
        return tuple(r for _, c in self.parts for r in c.realizations)

    def upper(self, eps: NDArray[np.float64]) -> NDArray[np.float64]:
        """Certified upper δ: the weighted sum of the parts' upper values (unclipped: a part's profile is
        what its weight multiplies), the booked weight and the mass at ``+∞``."""
        total = np.full(np.shape(eps), self.infinity + self.booked)
        for weight, part in self.parts:
            total = total + weight * part.unclipped_upper(eps)
        return np.asarray(np.minimum(total, 1.0), dtype=np.float64)

    def lower(self, eps: NDArray[np.float64]) -> NDArray[np.float64]:
        """Certified lower δ: the weighted sum of the parts' lower values and the mass at ``+∞`` (each part's
        is non-increasing in ε, so the sum is)."""
        total = np.full(np.shape(eps), self.infinity)
        for weight, part in self.parts:
            total = total + weight * part.lower(eps)
        return np.asarray(np.minimum(total, 1.0), dtype=np.float64)

    def dominating_measure(self, spacing: float) -> LatticeDirection:
        """One lattice measure dominating the mixture: the weighted sum of the parts' dominating measures
        (each dominates its part's profile at every x; the profile is linear in the measure), the booked
        weight at ``+∞``.  O(span) memory: refused beyond ``MAX_DENSE_POINTS`` points."""
        measures = [(w, c.dominating_measure(spacing)) for w, c in self.parts]
        first = min(m.start for _, m in measures)
        last = max(m.start + m.masses.size for _, m in measures)
        if last - first > MAX_DENSE_POINTS:
            raise ValueError(
                f"this composition is a mixture of narrow compositions spanning {last - first:,} lattice points, "
                f"above {MAX_DENSE_POINTS:,}: too wide to export as one dense measure"
            )
        masses = np.zeros(last - first)
        infinity = self.infinity + self.booked
        for weight, m in measures:
            masses[m.start - first : m.start - first + m.masses.size] += weight * m.masses
            infinity += weight * m.infinity
        # Rounded up: each product and each of the (at most len(measures)) additions into a point errs by a u.
        slack = 1.0 + 2.0 * _U * (len(measures) + 2)
        return LatticeDirection(first, masses * slack, min(1.0, infinity * slack))


def narrow_direction(direction: LatticeDirection, part: NarrowFactor) -> LatticeDirection:
    """One side of ``direction`` in a narrow composition (:mod:`pldshuffle.pld.far_atoms`): finite masses only
    (the combination's mass at +∞ is added once, by the mixture), each round's loss error kept (the lower
    end reads n·error further right, as for the whole), and a bound on the side's rounding offsets: the
    whole's moment generating function less ``log_side`` (each term of it is non-negative), 0 for the far
    side (offsets are ≥ 0); the mean only places the shifts tried."""
    log_mgf, mean = None, 0.0
    if direction.offset_log_mgf is not None:
        if part.log_side is None:
            log_mgf = np.zeros_like(direction.offset_log_mgf)
        else:
            log_mgf = direction.offset_log_mgf - part.log_side + 1e-12  # covers the subtraction's rounding
            mean = direction.offset_mean * math.exp(-part.log_side)
    return LatticeDirection(part.start, part.masses, 0.0, log_mgf, mean, loss_error=direction.loss_error)
