"""LabelledClonePair: exact O(n) delta and strict PLD pairs against the independent enumeration in reference.py."""

from __future__ import annotations

import math
import re
import warnings

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from reference import delta_exact, homogeneous_dataset_delta, pair_clones, pair_labelled

import pldshuffle as ps
from pldshuffle.mechanisms.labelled_clones import LabelledClonePair

EPS = [0.0, 0.05, 0.2, 0.5, 0.9, 1.5, 3.0]


def _reference(pair: LabelledClonePair) -> dict:
    u, v, g = pair.victim_weights
    return pair_labelled(pair.num_users, u, v, g, pair.r0, pair.r1)


CASES = [
    LabelledClonePair(6, 3.0, 0.1, 0.1),  # symmetric, no residual (block kernels)
    LabelledClonePair(6, 3.0, 0.1, 0.1, 0.3),  # residual
    LabelledClonePair(6, 3.0, 0.1, 0.2),  # asymmetric
    LabelledClonePair(5, 3.0, 0.15, 0.1, 0.2),  # asymmetric with residual
    LabelledClonePair(6, math.inf, 0.2, 0.3),  # p = inf: infinite-loss atoms
    LabelledClonePair(5, math.inf, 0.2, 0.2, 0.1),
    LabelledClonePair(4, 2.0, 0.0, 0.0),  # nobody else is labelled
    LabelledClonePair(7, 1.5, 0.5, 0.5),  # r2 = 0
]


@pytest.mark.parametrize("pair", CASES, ids=lambda p: p.describe())
def test_exact_delta_and_pld_bracket_match_enumeration(pair):
    ref = _reference(pair)
    lower, upper = pair.pair_bounds()
    exact = pair.delta(EPS)
    for eps, value in zip(EPS, exact):
        truth = delta_exact(ref, eps)
        assert value == pytest.approx(truth, rel=1e-9, abs=1e-15)
        lo, up = upper.delta_bounds(eps)
        assert lo[0] <= truth + 1e-15 and truth <= up[0]
        lo, up = lower.delta_bounds(eps)
        assert lo[0] <= truth + 1e-15


def test_p_infinite_has_the_closed_form_infinity_atoms():
    n, r0, r1 = 8, 0.2, 0.3
    pair = LabelledClonePair(n, math.inf, r0, r1)
    (_, upper) = pair.pair_bounds()
    assert upper.forward.infinity_mass == pytest.approx((1 - r1) ** (n - 1), rel=1e-12)
    assert upper.backward.infinity_mass == pytest.approx((1 - r0) ** (n - 1), rel=1e-12)
    assert pair.delta(50.0)[0] == pytest.approx(max((1 - r1) ** (n - 1), (1 - r0) ** (n - 1)), rel=1e-9)


@pytest.mark.parametrize("n,eps0", [(5, 1.0), (20, 0.5), (40, 2.0)])
def test_fmt20_fmt23_are_pair_f(n, eps0):
    e = math.exp(eps0)
    for pair, pc in ((LabelledClonePair.fmt20(n, eps0), 1 / e), (LabelledClonePair.fmt23(n, eps0), 2 / (e + 1))):
        ref = pair_clones(n, e, pc)
        for eps in EPS:
            assert pair.delta(eps)[0] == pytest.approx(delta_exact(ref, eps), rel=1e-9, abs=1e-15)


@pytest.mark.parametrize("rounds", [2, 3])
def test_composition_brackets_enumeration(rounds):
    for pair in (LabelledClonePair(4, 3.0, 0.15, 0.1, 0.2), LabelledClonePair(4, math.inf, 0.2, 0.2)):
        ref = _reference(pair)
        mech = ps.PairMechanism(pair.pair_bounds()[1])
        acc = ps.FourierAccountant().compose(mech, count=rounds)
        for eps in (0.3, 1.0):
            b = acc.get_delta_bounds(eps)
            truth = delta_exact(ref, eps, rounds)
            assert b.lower <= truth + 1e-12 and truth <= b.upper


@settings(max_examples=40, deadline=None)
@given(
    n=st.integers(2, 6),
    log_p=st.one_of(st.floats(0.05, 4.0), st.just(math.inf)),
    r0=st.floats(0.01, 0.45),
    skew=st.floats(0.3, 1.0),
    g=st.one_of(st.just(0.0), st.floats(0.0, 0.9)),
    eps=st.floats(0.0, 4.0),
)
def test_property_delta_matches_enumeration(n, log_p, r0, skew, g, eps):
    pair = LabelledClonePair(n, math.exp(log_p), r0, r0 * skew, g)
    ref = _reference(pair)
    truth = delta_exact(ref, eps)
    assert pair.delta(eps)[0] == pytest.approx(truth, rel=1e-8, abs=1e-14)
    lo, up = pair.pair_bounds()[1].delta_bounds(eps)
    assert lo[0] <= truth + 1e-14 and truth <= up[0]


@pytest.mark.parametrize(
    "kwargs,name",
    [
        ({"num_users": 1, "ratio": 2.0, "r0": 0.1, "r1": 0.1}, "num_users"),
        ({"num_users": 5, "ratio": 1.0, "r0": 0.1, "r1": 0.1}, "ratio"),
        ({"num_users": 5, "ratio": float("nan"), "r0": 0.1, "r1": 0.1}, "ratio"),
        ({"num_users": 5, "ratio": 2.0, "r0": -0.1, "r1": 0.1}, "r0"),
        ({"num_users": 5, "ratio": 2.0, "r0": 0.1, "r1": 1.5}, "r1"),
        ({"num_users": 5, "ratio": 2.0, "r0": 0.6, "r1": 0.6}, "r0 + r1"),
        ({"num_users": 5, "ratio": 2.0, "r0": 0.5, "r1": 0.5, "residual": 0.1}, "r0 + r1"),
        ({"num_users": 5, "ratio": 2.0, "r0": 0.0, "r1": 0.1}, "r0 and r1"),
        ({"num_users": 5, "ratio": 2.0, "r0": 0.1, "r1": 0.1, "residual": 1.0}, "residual"),
    ],
)
def test_bad_input_names_parameter(kwargs, name):
    with pytest.raises(ValueError, match=re.escape(name)):
        LabelledClonePair(**kwargs)


def test_bad_input_types_and_epsilon():
    with pytest.raises(TypeError, match="ratio"):
        LabelledClonePair(5, "2", 0.1, 0.1)
    with pytest.raises(ValueError, match="epsilon"):
        LabelledClonePair(5, 2.0, 0.1, 0.1).delta(-0.1)
    with pytest.raises(ValueError, match="total_variation"):
        LabelledClonePair.from_variation_ratio(5, 2.0, 0.5, 2.0)
    with pytest.raises(ValueError, match="q0"):
        LabelledClonePair.from_variation_ratio(5, 2.0, 0.2, 0.5)


# ----------------------------------------------------------------------------- Wang et al.'s g > 0 pairs
def _krr_wang(n: int, d: int, eps0: float) -> LabelledClonePair:
    e = math.exp(eps0)
    return LabelledClonePair.from_variation_ratio(n, e, (e - 1) / (e + d - 1), e)


def test_wang_pair_falls_below_shuffled_krr_small_n():
    """3-ary RR, ε0 = 1, n = 2, ε = 0.75 on (0, 0) vs (1, 0): exact 0.07342, the pair gives 0.05025."""
    from reference import finite_worst_case_delta

    e = math.e
    krr = [[e / (e + 2) if y == x else 1 / (e + 2) for y in range(3)] for x in range(3)]
    (exact, dataset), = finite_worst_case_delta(krr, 2, [0.75])
    pair = _krr_wang(2, 3, 1.0)
    assert pair.residual > 0
    assert exact == pytest.approx(0.07342, abs=5e-6) and pair.delta(0.75)[0] == pytest.approx(0.05025, abs=5e-6)
    assert pair.delta(0.75)[0] < exact
    assert dataset[2] == (dataset[0],) or dataset[2] == (dataset[1],)  # the others hold a victim value


def test_wang_pair_counterexample_large_n():
    """3-ary RR, ε0 = 6, n = 1000, δ = 1e-6: Wang's pair gives ε = 5.775, the real shuffled kRR on
    (0, ..., 0) vs (1, 0, ..., 0) has δ(5.775) = 1.4e-3."""
    with pytest.warns(UserWarning, match="not a privacy guarantee"):
        mech = ps.ShuffledLDP(1000, randomizer=ps.randomizers.KaryRR(3, 6.0), reduction="wang24")
    b = ps.FourierAccountant().compose(mech).get_epsilon_bounds(1e-6)
    assert not b.is_guarantee and any("NOT A GUARANTEE" in c for c in b.caveats)
    assert b.upper == pytest.approx(5.77486, abs=2e-5)
    e = math.exp(6.0)
    real = homogeneous_dataset_delta([e / (e + 2), 1 / (e + 2), 1 / (e + 2)], [1 / e, e, 1.0], 1000, b.upper)
    assert real == pytest.approx(1.43e-3, rel=0.01) and real > 1000 * 1e-6
    # The certified reduction (FMT23 constants: kRR is in the class) stays above the real mechanism.
    cert = ps.FourierAccountant().compose(ps.ShuffledLDP(1000, randomizer=ps.randomizers.KaryRR(3, 6.0)))
    eps_cert = cert.get_epsilon_bounds(1e-6).upper
    assert homogeneous_dataset_delta([e / (e + 2), 1 / (e + 2), 1 / (e + 2)], [1 / e, e, 1.0], 1000, eps_cert) <= 1e-6


def test_wang_reproduces_published_rows():
    """Authors' code, δ = 1e-6 (UB/LB brackets): 10-RR ε0 = 4, n = 1e4: [0.380451, 0.380459]; ε0 = 1, n = 1e3:
    [0.080094, 0.080095]; 3-RR ε0 = 4, n = 300: 3.6548918."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        for n, d, eps0, lo, hi in ((10_000, 10, 4.0, 0.380451, 0.380459), (1000, 10, 1.0, 0.080094, 0.080095), (300, 3, 4.0, 3.654891, 3.654893)):
            mech = ps.ShuffledLDP(n, randomizer=ps.randomizers.KaryRR(d, eps0), reduction="wang24")
            b = ps.FourierAccountant().compose(mech).get_epsilon_bounds(1e-6)
            assert lo - 2e-6 <= b.lower <= b.upper <= hi + 2e-6


@pytest.mark.parametrize(
    "rand,eps,exact,wang",
    [
        (ps.randomizers.KaryRR(3, 1.0), 0.5, 0.07079, 0.06994),
        (ps.randomizers.KaryRR(3, 1.0), 0.75, 0.02437, 0.01737),
        (ps.randomizers.RAPPOR(3, 1.0), 0.75, 0.00499, 0.00246),
        (ps.randomizers.OUE(3, 1.0), 0.75, 0.00395, 0.00205),
        (ps.randomizers.SubsetSelection(4, 2, 1.0), 0.75, 0.01248, 0.00597),
        (ps.randomizers.HadamardResponse(3, 2.0), 1.5, 0.01778, 0.00899),
    ],
    ids=lambda x: x.describe() if hasattr(x, "describe") else str(x),
)
def test_wang_pairs_with_residual_fail_brute_force(rand, eps, exact, wang):
    """n = 4, every dataset: the exact worst case exceeds Wang et al.'s pair (built from the randomizer's
    own ε0 and total variation), while the certified pair stays above it."""
    from reference import finite_worst_case_delta

    n = 4
    ((truth, _),) = finite_worst_case_delta(rand.matrix().tolist(), n, [eps])
    e = math.exp(rand.local_epsilon)
    pair = LabelledClonePair.from_variation_ratio(n, e, rand.total_variation(), e)
    assert pair.residual > 0
    assert truth == pytest.approx(exact, abs=5e-6) and pair.delta(eps)[0] == pytest.approx(wang, abs=5e-6)
    assert pair.delta(eps)[0] < truth - 1e-4
    with pytest.warns(UserWarning):
        mech = ps.ShuffledLDP(n, randomizer=rand, reduction="wang24")
    assert mech.labelled_pairs()[0].delta(eps)[0] == pytest.approx(wang, abs=5e-6)
    assert not mech.pair_family().is_guarantee
    certified = ps.ShuffledLDP(n, randomizer=rand, reduction="randomizer")
    assert max(p.delta(eps)[0] for p in certified.labelled_pairs()) >= truth


@pytest.mark.parametrize(
    "call, match",
    [
        (lambda: ps.LabelledClonePair(2**53, 3.0, 0.2, 0.1).pair_bounds(), "support points to enumerate"),
        (lambda: ps.LabelledClonePair(10**9, 3.0, 0.2, 0.1).pair_bounds(), "about .* support points to enumerate"),
        (lambda: ps.LabelledClonePair(2**53, 3.0, 0.2, 0.2, 0.1).support_size(), "at least .* support points to enumerate"),
        (lambda: ps.LabelledClonePair(2**53, 3.0, 0.2, 0.1).delta(0.5), "MAX_EXACT_COUNTS"),
        (lambda: ps.LabelledClonePair.fmt20(2**53, 1.0).pair_bounds(), "MAX_STREAMED_SUPPORT"),
    ],
)
def test_huge_pairs_are_refused_before_allocating(call, match):
    """At n = 2**53 the asymmetric pairs allocated ~1e9-entry arrays of counts and were killed for memory
    (24 GiB); they are refused at once, naming the limit."""
    import resource
    import time

    start = time.perf_counter()
    with pytest.raises(ValueError, match=match):
        call()
    assert time.perf_counter() - start < 5.0
    assert resource.getrusage(resource.RUSAGE_SELF).ru_maxrss < 4 * 2**20  # KiB: nothing near the GiBs needed
