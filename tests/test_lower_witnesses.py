"""Lower witnesses added to a CertifiedPLD (``add_lower_witness``) against the exact composition (enumeration)."""

from __future__ import annotations

import numpy as np
import pytest

import pldshuffle as ps
import reference as ref
from pldshuffle.pld.lattice import Term, lower_direction, upper_direction

SPACING = 1e-3
RR = ps.PrivacyLossPair.from_probability_mass_functions([0.75, 0.25], [0.25, 0.75])
RR_REF = {0: (0.75, 0.25), 1: (0.25, 0.75)}
# RR followed by flipping its output with probability 0.3: a post-processing of RR, so dominated by it.
NOISIER = ps.PrivacyLossPair.from_probability_mass_functions([0.6, 0.4], [0.4, 0.6])
EPS = np.array([0.0, 0.3, 0.7, 1.2, 2.0, 3.0])


def _measures(pair, lower):
    make = lower_direction if lower else upper_direction
    return tuple(make(d.discretize(SPACING)) for d in pair.directions)


def test_a_witness_raises_the_lower_end_and_stays_below_the_exact_composition():
    """RR's upper measure with only a weak witness (the noisier pair): adding RR's own lower measure as a
    witness of three rounds raises the lower end, which stays below the exact δ of RR composed three times;
    the upper end does not move."""
    rounds = 3
    weak = ps.CertifiedPLD(SPACING, (Term(_measures(RR, False), (_measures(NOISIER, True),), rounds),))
    strong = weak.add_lower_witness([(_measures(RR, True)[0], rounds)])
    exact = np.array([ref.delta_exact(RR_REF, e, rounds) for e in EPS])
    lo_weak, up_weak = weak.delta_bounds(EPS)
    lo, up = strong.delta_bounds(EPS)
    assert np.array_equal(up, up_weak)
    assert np.all(lo >= lo_weak) and np.any(lo > lo_weak * (1 + 1e-6) + 1e-12)
    assert np.all(lo <= exact * (1 + 1e-12) + 1e-15) and np.all(exact <= up * (1 + 1e-12) + 1e-15)
    e_lo, e_up = strong.epsilon_bounds(1e-3)
    assert weak.epsilon_bounds(1e-3)[0] <= e_lo <= e_up


def test_composing_drops_the_added_witness():
    base = ps.CertifiedPLD.from_pair(RR, SPACING)
    witnessed = base.add_lower_witness([(_measures(NOISIER, True)[0], 1)])
    assert len(witnessed.lower_witnesses) == 1 and base.lower_witnesses == ()
    assert witnessed.compose(base).lower_witnesses == () and witnessed.self_compose(2).lower_witnesses == ()


@pytest.mark.parametrize("zero_rounds", [False, True], ids=["empty", "zero rounds"])
def test_an_empty_or_zero_round_witness_is_refused(zero_rounds):
    base = ps.CertifiedPLD.from_pair(RR, SPACING)
    bad = [(_measures(RR, True)[0], 0)] if zero_rounds else []
    with pytest.raises(ValueError, match="combination"):
        base.add_lower_witness(bad)
