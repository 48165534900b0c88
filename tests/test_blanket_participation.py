"""The blanket pair with participation on the product path (mechanisms/_blanket_participation.py) against
independent exact computations: every count vector of the hit types enumerated
(tests/blanket_reference.py::hit_pair, itself checked against the pair enumerated from its definition),
and the (N1, N2) enumeration per value of B."""

from __future__ import annotations

import math

import numpy as np
import pytest
from blanket_reference import blanket_delta, hit_delta, participating
from hypothesis import given, settings
from hypothesis import strategies as st

import pldshuffle as ps
from pldshuffle.mechanisms._blanket_model import hit_model
from pldshuffle.mechanisms._blanket_participation import participation_bounds
from pldshuffle.mechanisms._blanket_support import b_points, fixed_b_bounds, grouped_bounds, hit_width
from pldshuffle.mechanisms.blanket import BlanketPair
from pldshuffle.pld import PrivacyLossPair
from pldshuffle.randomizers import OUE, RAPPOR, LocalHashing

EPS = [0.0, 0.05, 0.2, 0.5, 1.0]
SLACK = 1e-9  # relative, for float sums of the reference


def _check(lower, upper, exact, eps_values=EPS):
    lo_pair, up_pair = PrivacyLossPair(lower), PrivacyLossPair(upper)
    for eps, truth in zip(eps_values, exact):
        lo, up = lo_pair.delta_bounds(eps)[0][0], up_pair.delta_bounds(eps)[1][0]
        assert lo <= truth * (1 + SLACK) + 1e-15, (eps, lo, truth)
        assert truth <= up * (1 + SLACK) + 1e-15, (eps, truth, up)


def _product_path(rand, n, q, tolerance):
    """``(lower, upper)`` of the product path with participation, called directly: ``BlanketPair`` takes it
    only where the (N1, N2) evaluation would be slower (n of about 1e6), never at these sizes."""
    model = hit_model(rand)
    return participation_bounds(n, model.with_participation(q), model.product_split()[1], q, 1e-18, tolerance)


def _exact(rand, n, q, eps_values=EPS):
    m = hit_model(rand)
    return hit_delta(n, m.gamma, math.exp(m.log_ratio), m.pi11, m.pi10, q, eps_values)


def test_hit_reference_is_the_pair_enumerated_from_its_definition():
    """The count-vector reference agrees with the enumeration of every sequence of outputs."""
    for rand, n, q in [(OUE(3, 1.0), 3, 0.6), (RAPPOR(2, 2.0), 3, 0.3), (LocalHashing(3, 2, 1.0), 2, 0.8)]:
        truth = blanket_delta(participating(rand.matrix().tolist(), q), n, EPS)
        assert np.allclose(_exact(rand, n, q), truth, rtol=1e-12, atol=1e-15)


CASES = [(OUE(1024, 1.0), 12, 0.5), (RAPPOR(512, 2.0), 9, 0.3), (LocalHashing(1024, 4, 0.5), 15, 0.8), (OUE(1024, 3.0), 20, 0.1)]


@pytest.mark.parametrize("tolerance", [0.0, 1.0])
@pytest.mark.parametrize("rand,n,q", CASES, ids=lambda x: x.describe() if hasattr(x, "describe") else str(x))
def test_participation_bracket_contains_the_enumerated_pair(rand, n, q, tolerance):
    exact = _exact(rand, n, q)
    _check(*_product_path(rand, n, q, tolerance), exact)
    bp = BlanketPair(n, rand, participation=q, group_tolerance=tolerance)  # the default here: (N1, N2) per B
    assert bp.methods == ("grouped",)
    (lower,), (upper,) = bp.pair_bounds()
    _check(lower.forward, upper.forward, exact)


def test_groups_of_several_values_of_m_are_used():
    model_q = hit_model(OUE(1024, 1.0)).with_participation(0.5)
    split = model_q.product_split()
    assert b_points(40, model_q.gamma * (1 - split[1]), 1e-18, 1.0).size < 20  # some group holds several M
    lower, upper = participation_bounds(40, model_q, hit_model(OUE(1024, 1.0)).product_split()[1], 0.5, 1e-18, 1.0)
    _check(lower, upper, _exact(OUE(1024, 1.0), 40, 0.5))


def test_large_point_mass_still_a_bracket():
    """Local hashing d=3, l=2 (its own point mass λ ≈ 0.074 is not seen, unlike the voids): the lower keeps only the
    event "every point item is a void"; still a bracket of the pair enumerated from its definition."""
    rand, n, q = LocalHashing(3, 2, 1.0), 3, 0.6
    model = hit_model(rand)
    lower, upper = participation_bounds(n, model.with_participation(q), model.product_split()[1], q, 1e-18, 0.0)
    _check(lower, upper, blanket_delta(participating(rand.matrix().tolist(), q), n, EPS))


@settings(max_examples=20, deadline=None)
@given(
    eps0=st.floats(0.2, 4.0),
    q=st.floats(0.05, 0.95),
    n=st.integers(2, 14),
    tolerance=st.sampled_from([0.0, 0.3, 1.0]),
    kind=st.sampled_from(["oue", "rappor", "olh"]),
)
def test_property_participation_brackets_the_enumeration(eps0, q, n, tolerance, kind):
    rand = {"oue": OUE(1024, eps0), "rappor": RAPPOR(1024, eps0), "olh": LocalHashing(1024, 3, eps0)}[kind]
    _check(*_product_path(rand, n, q, tolerance), _exact(rand, n, q))


@pytest.mark.slow
def test_participation_agrees_with_the_enumerated_fixed_b_pairs():
    """n = 200: the (N1, N2) enumeration per value of B (no grouping, no chord) and the participation path,
    two evaluations of the same pair, give overlapping brackets; the new one within 2e-3 in ε (the chord
    between nodes costs most at small n: 8.3e-4 at n = 400, 7e-5 at n = 1e4)."""
    rand, n, q = OUE(1024, 1.0), 200, 0.5
    model_q = hit_model(rand).with_participation(q)
    glo, gup = grouped_bounds(
        n, model_q.gamma, 1e-18, 0.0, lambda b, _h: fixed_b_bounds(b, model_q, 1e-18), lambda b: hit_width(b, model_q, 1e-18), model_q.log_ratio
    )
    lower, upper = (PrivacyLossPair(d) for d in _product_path(rand, n, q, BlanketPair(n, rand).group_tolerance))
    for eps in (0.05, 0.1, 0.2):
        a, b = lower.delta_bounds(eps)[0][0], upper.delta_bounds(eps)[1][0]
        c, d = PrivacyLossPair(glo).delta_bounds(eps)[0][0], PrivacyLossPair(gup).delta_bounds(eps)[1][0]
        assert a <= d and c <= b
    acc = ps.FourierAccountant().compose(ps.PairMechanism(upper)).get_epsilon_bounds(1e-6)
    low = ps.FourierAccountant().compose(ps.PairMechanism(lower)).get_epsilon_bounds(1e-6)
    assert (acc.upper - low.lower) / acc.upper <= 2e-3


@pytest.mark.parametrize("n,q", [(2, 0.5), (6, 0.2), (12, 0.9)])
def test_small_windows_are_evaluated_exactly(n, q):
    """Windows of at most EXACT_WINDOW_POINTS (c, M) points put a node at every member's α: both ends meet
    the enumerated pair (OUE d = 1024: the unseen point mass λ ≈ 1e-560 is nothing), up to the lattice."""
    rand = OUE(1024, 1.0)
    lower, upper = (PrivacyLossPair(d) for d in _product_path(rand, n, q, BlanketPair(n, rand).group_tolerance))
    for eps, truth in zip(EPS[:-1], _exact(rand, n, q, EPS[:-1])):  # (at ε = ε0 the spread cells pass ε0)
        lo, up = lower.delta_bounds(eps)[0][0], upper.delta_bounds(eps)[1][0]
        assert lo <= truth * (1 + SLACK) + 1e-15 <= up * (1 + 2 * SLACK) + 2e-15
        assert truth - lo <= 1e-8 * truth + 1e-15  # the lower: exact mixture, contracted cells
        assert up - lo <= 2e-3 * truth + 1e-12, (eps, lo, truth, up)  # the upper: spread cells (4e-4 at ε = 0)
