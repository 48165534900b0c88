"""Single-round queries on exact pairs: one round of one term, answered off the lattice.

Where the whole ledger is one round of one term whose exact pairs are known (a pair, or a worst case's
cover of pairs refined at the queried points by :class:`~pldshuffle.worstcase.cover.QueryRefinement`), the
lattice curves of the realised :class:`~pldshuffle.pld.certified.CertifiedPLD` are tightened by the pairs'
own curves (the upper end is the minimum of both, the lower end the maximum: each is certified on its own).
A :class:`SingleRoundQuery` sits beside the PLD and reads it; it never changes it.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import cast

import numpy as np
from numpy.typing import NDArray

from .._reporting import throttled_reporter
from ..pld import PrivacyLossPair
from ..pld.certified import CertifiedPLD
from ..pld.inversion import invert
from ..pld.sizing import relative_target
from .terms import WorstCaseTerm

__all__ = ["SingleRoundQuery"]

#: A single round's cover is refined at each ε of δ queries of at most this many points, until its upper ε
#: is within this (relative, see _refined_epsilon_gap) of the lower end: the one-round target is 1e-4.
_REFINED_POINTS = 4
_REFINED_EPSILON_GAP = 3e-5
#: An ε query repeats that refinement (each pass up to ``cover._QUERY_SPLITS`` splits) at most this
#: many times while its bracket misses the one-round target and is wider than ``_QUERY_ABSOLUTE_GAP``: as
#: ε → 0 the relative gap is ill-conditioned (δ's relative error times δ/(ε·P[L > ε])), and passes spent
#: there cost 5× the time (2RR n = 3e6, ε0 = 0.1, δ = 1e-5, ε = 3.4e-5: 2.2e-4 → 1.0e-4 in 3.7 → 19 s).
_QUERY_REFINES = 4
_QUERY_ABSOLUTE_GAP = 1e-8
#: Realisable pairs inverted for a single round's lower ε (any subset is a lower bound).
_LOWER_PAIRS = 16


class SingleRoundQuery:
    """Queries of a ledger that is one round of one term (``term``) with exact pairs, beside its ``pld``.

    Parameters
    ----------
    pld : CertifiedPLD
        The realised ledger (its lattice curves bracket the pairs' costly exact ones).
    term : WorstCaseTerm
        Its only term; its exact pairs (or its refiner's) are read.
    """

    def __init__(self, pld: CertifiedPLD, term: WorstCaseTerm) -> None:
        self.pld, self.term = pld, term

    def pairs(self, part: str) -> tuple[PrivacyLossPair, ...]:
        """The exact pairs of ``part`` (the refiner's current ones where the term has one)."""
        if self.term.refiner is not None:
            return self.term.refiner.upper_pairs if part == "upper" else self.term.refiner.lower_pairs
        return self.term.exact_upper if part == "upper" else self.term.exact_lower

    def curve(self, part: str) -> Callable[[NDArray[np.float64]], NDArray[np.float64]] | None:
        """The exact pairs' curve of ``part`` (upper: the max of their upper δ; lower: of their lower δ)."""
        pairs = self.pairs(part)
        if not pairs:
            return None
        return (lambda eps: _exact_upper(pairs, eps)) if part == "upper" else (lambda eps: _exact_lower(pairs, eps))

    def refine(self, eps: NDArray[np.float64]) -> None:
        """A single round of a worst case over datasets, queried at up to ``_REFINED_POINTS`` points, first
        refines its cover there."""
        refiner = self.term.refiner if self.curve("upper") is not None else None
        if refiner is not None and eps.size <= _REFINED_POINTS:
            for e in eps:
                # Split until the upper δ at ε is at most the realisable δ a little to its left (an ε gap).
                left = np.array([max(float(e) - _refined_epsilon_gap(float(e)), 0.0)])
                realisable = float(_exact_lower(refiner.lower_pairs, left)[0])
                refiner.refine(float(e), threshold=realisable + refiner.booked)  # upper ends carry the booked mass

    def epsilon_bounds(self, delta: float) -> tuple[float, float]:
        """Certified ``(lower, upper)`` on ε at ``delta`` (already checked) from the lattice and exact curves."""
        pld = self.pld
        # One round on exact pairs: bracket the costly exact curves by the lattice ones, and read only the
        # pairs that can matter (_lower_epsilon, _upper_epsilon).
        lattice = invert(pld._lattice_upper, delta, upper=True)
        lower = self._lower_epsilon(delta, lattice)
        refiner = self.term.refiner

        def upper_end() -> float:
            return min(self._upper_epsilon(delta, lower, lattice), pld.loss_cap)

        if refiner is None or not 0.0 < lower < math.inf:
            return lower, upper_end()
        if refiner is None or not 0.0 < lower < math.inf:
            return lower, upper_end()
        target, gap = relative_target(1), math.nan
        for done in range(1, _QUERY_REFINES + 1):
            # Split the cells that keep ε slightly above the lower end from being certified; again while the
            # bracket misses the one-round target, splits are still made and the passes left would reach the
            # target if the gap kept shrinking as in the last pass (where ε is small its relative gap is most
            # sensitive to δ's: 2RR n = 75576, ε0 = 0.186, δ = 1e-4: 1.9e-4 after one pass, 1.0e-4 after two).
            splits = refiner.refine(lower + _refined_epsilon_gap(lower), threshold=delta)
            lower = self._lower_epsilon(delta, lattice)  # datasets revealed by the splits may raise it
            upper = upper_end()
            previous, gap = gap, (upper - lower) / upper
            shrinking = min(gap / previous, 1.0) if done > 1 else 0.0  # the first pass always may go on
            if (splits == 0 or gap <= target or upper - lower <= _QUERY_ABSOLUTE_GAP or not refiner.has_room()
                    or gap * shrinking ** (_QUERY_REFINES - done) > target):
                break
        return lower, upper

    def _lower_epsilon(self, delta: float, probe: float) -> float:
        """Lower end of ε for one round: any subset of the realisable pairs gives a lower bound, so only the
        ``_LOWER_PAIRS`` largest at the lattice curves' answers (``probe`` is the upper one) are inverted,
        then the largest at that answer."""
        lattice_lower = lambda eps: np.max([c.lower(eps) for c in self.pld._composites("lower")], axis=0)  # noqa: E731
        every = list(self.pairs("lower"))
        if len(every) <= _LOWER_PAIRS or not math.isfinite(probe):
            return invert(lambda eps: np.maximum(lattice_lower(eps), _exact_lower(every, eps)), delta, upper=False)
        # The largest at the lattice curves' two answers, then at the answer they give (the binding pair is
        # among the largest at the answer).
        lower, probes = 0.0, [invert(lattice_lower, delta, upper=False), probe]
        for _ in range(2):
            at = np.array([p.delta_bounds(np.array(probes), cache=False)[0] for p in every])
            keep = sorted({int(i) for column in at.T for i in np.argsort(column)[::-1][:_LOWER_PAIRS]})
            pairs = [every[i] for i in keep]
            curve = lambda eps: np.maximum(lattice_lower(eps), _exact_lower(pairs, eps))  # noqa: E731
            lower = max(lower, invert(curve, delta, upper=False))
            probes = [lower]
        return lower

    def _upper_epsilon(self, delta: float, lower: float, lattice: float) -> float:
        """Upper end of ε for one round: the smallest ε in ``[lower, lattice]`` where the lattice curve or
        every kept pair is at most ``delta``.  Pairs already at most ``delta`` at ``lower`` are left out of
        the bisection and checked at its answer (bounds need not be monotone to the last bit); any that
        exceed ``delta`` there join and the bisection is repeated.  Reading a refined cover's pairs takes
        seconds at 10^7 users: the bisection reports (:func:`~pldshuffle._reporting.throttled_reporter`)."""
        if not (math.isfinite(lower) and math.isfinite(lattice) and lower < lattice):
            return invert(self.pld._upper, delta, upper=True)
        pairs = list(self.pairs("upper"))
        say = throttled_reporter()
        say(lambda: f"one round on exact pairs: bounding ε on {len(pairs)} pairs of the cover")
        # One coarse pass narrows the bracket to a 32nd, and the pairs to those above δ at its left end (the
        # others stay at most δ beyond it; the check at the answer below still reads them): a refined cover
        # keeps hundreds of pairs above δ at the lower end, each read per bisection step.
        grid = np.linspace(lower, lattice, 33)
        values = np.array([p.delta_upper(grid) for p in pairs])
        passing = np.flatnonzero(np.minimum(self.pld._lattice_upper(grid), values.max(axis=0)) <= delta)
        k = int(passing[0]) if passing.size else 0  # the first grid point that passes
        bracket = (float(grid[k - 1]), float(grid[k])) if k > 0 else (lower, lattice)
        active = [p for p, v in zip(pairs, values[:, max(k, 1) - 1]) if v > delta]
        while True:
            def curve(eps: NDArray[np.float64]) -> NDArray[np.float64]:
                say(lambda: f"one round on exact pairs: bisection for ε over {len(active)} pairs")
                exact = _exact_upper(active, eps) if active else np.zeros(eps.shape)
                return np.minimum(self.pld._lattice_upper(eps), exact)

            upper = invert(curve, delta, upper=True, bracket=bracket)
            if upper == bracket[1] == lattice:  # the lattice curve's own answer: no pair is involved
                return upper
            rest = [p for p in pairs if all(p is not q for q in active)]
            late = [p for p, v in zip(rest, _exact_upper_each(rest, upper)) if v > delta]
            if not late:
                return upper
            active += late



def _refined_epsilon_gap(epsilon: float) -> float:
    """ε gap a single round's refinement aims at: 3e-5 relative at every ε (the one-round target is 1e-4).

    Relative even at small ε (large n, small ε0): the answer is read off the exact pairs, not the lattice,
    so nothing resolves it more coarsely; the split budget and ``max_memory_bytes`` bound the work."""
    return _REFINED_EPSILON_GAP * epsilon


def _exact_upper(pairs: Sequence[PrivacyLossPair], eps: NDArray[np.float64]) -> NDArray[np.float64]:
    """Max over the pairs of their strict single-round upper δ at each ε: one sweep per pair, nothing kept
    (a refined cover holds hundreds of pairs; suffix sums would double their memory)."""
    return cast(NDArray[np.float64], np.max([p.delta_upper(eps) for p in pairs], axis=0))


def _exact_lower(pairs: Sequence[PrivacyLossPair], eps: NDArray[np.float64]) -> NDArray[np.float64]:
    """Max over the (few) realisable pairs of their strict single-round lower δ at each ε."""
    return cast(NDArray[np.float64], np.max([p.delta_bounds(eps)[0] for p in pairs], axis=0))


def _exact_upper_each(pairs: Sequence[PrivacyLossPair], epsilon: float) -> list[float]:
    """Each pair's strict upper δ at one ε (one sweep, nothing kept: every pair of a cover is read here)."""
    eps = np.array([epsilon])
    return [float(p.delta_upper(eps)[0]) for p in pairs]


