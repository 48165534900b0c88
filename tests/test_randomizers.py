"""Randomizers: closed forms against the matrix computation, and every certified pair against the exact
worst case of the shuffled randomizer over every dataset (brute force, tests/reference.py)."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from reference import delta_exact, finite_worst_case_delta, merge_identical_columns, pair_labelled

import pldshuffle as ps
from pldshuffle.mechanisms.labelled_clones import LabelledClonePair
from pldshuffle.randomizers import (
    OLH,
    OUE,
    RAPPOR,
    BinaryRR,
    Finite,
    HadamardResponse,
    KaryRR,
    LocalHashing,
    SubsetSelection,
    clone_constants_of_matrix,
)
from pldshuffle.randomizers.base import CloneConstants, pareto_members

SMALL = [
    BinaryRR(1.0),
    KaryRR(2, 1.0),
    KaryRR(3, 2.0),
    KaryRR(4, 0.5),
    RAPPOR(2, 1.0),
    RAPPOR(3, 1.0),
    RAPPOR(4, 2.0),
    OUE(2, 1.0),
    OUE(3, 1.5),
    SubsetSelection(4, 1, 1.0),
    SubsetSelection(4, 2, 1.0),
    SubsetSelection(5, 3, 0.7),
    LocalHashing(2, 3, 1.0),
    LocalHashing(3, 2, 1.0),
    OLH(3, 1.0),
    HadamardResponse(2, 1.0),
    HadamardResponse(3, 1.0),
    HadamardResponse(4, 1.0),
    HadamardResponse(7, 2.0),
]
IN_FMT23_CLASS = {"BinaryRR", "KaryRR"}


@pytest.mark.parametrize("rand", SMALL, ids=lambda r: r.describe())
def test_closed_forms_match_the_matrix(rand):
    M = rand.matrix()
    assert M.shape[0] == rand.num_inputs and np.allclose(M.sum(axis=1), 1.0, atol=1e-12)
    finite = Finite(M)
    assert finite.local_epsilon == pytest.approx(rand.local_epsilon, rel=1e-12)
    assert finite.total_variation() == pytest.approx(rand.total_variation(), rel=1e-12)
    (closed,) = rand.clone_constants()
    matrix_members = finite.clone_constants()
    assert len(matrix_members) == 1  # these randomizers treat every victim pair alike
    assert matrix_members[0].ratio == pytest.approx(closed.ratio, rel=1e-12)
    assert matrix_members[0].clone_probability == pytest.approx(closed.clone_probability, rel=1e-12)
    assert finite.in_fmt23_class == rand.in_fmt23_class


@pytest.mark.parametrize(
    "rand,member",
    [
        (KaryRR(5, 2.0), True),
        (BinaryRR(3.0), True),
        (HadamardResponse(3, 1.0), True),  # K = 4
        (RAPPOR(3, 1.0), False),
        (OUE(3, 1.0), False),
        (SubsetSelection(4, 2, 1.0), False),
        (OLH(3, 1.0), False),
        (HadamardResponse(4, 1.0), False),  # K = 8
    ],
    ids=lambda x: x.describe() if hasattr(x, "describe") else str(x),
)
def test_fmt23_class_membership(rand, member):
    """R(z)(y)(e^ε0+1) >= R(x)(y) + R(x')(y): RAPPOR, OUE, subset selection and OLH fail it at their true ε0."""
    M = rand.matrix()
    e = math.exp(rand.local_epsilon)
    direct = all(
        np.all(M.min(axis=0) * (e + 1) >= (M[x] + M[x2]) * (1 - 1e-12))
        for x in range(M.shape[0])
        for x2 in range(M.shape[0])
        if x != x2
    )
    assert direct == member == rand.in_fmt23_class


def test_clone_constants_bracket_fmt20_and_fmt23():
    for rand in SMALL:
        e = math.exp(rand.local_epsilon)
        for m in rand.clone_constants():
            assert m.ratio <= e * (1 + 1e-12)
            assert math.exp(-rand.local_epsilon) / 2 * (1 - 1e-12) <= m.clone_probability <= 1 / (m.ratio + 1) * (1 + 1e-12)


def _certified_delta(rand, n: int, eps: float) -> float:
    """Max over the randomizer's members of the labelled pair's delta, by the reference enumeration."""
    out = 0.0
    for m in rand.clone_constants():
        p, r = m.ratio, m.clone_probability
        u, v = (1.0, 0.0) if p == math.inf else (p / (p + 1), 1 / (p + 1))
        out = max(out, delta_exact(pair_labelled(n, u, v, 0.0, r, r), eps))
    return out


def _max_users(rand) -> int:
    """Largest n brute-forced (cost grows like outputs^n · inputs^n): 5 for small output sets."""
    outputs = len(merge_identical_columns(rand.matrix().tolist())[0])
    return 5 if outputs <= 6 and rand.num_inputs <= 4 else 4 if outputs <= 8 and rand.num_inputs <= 5 else 3


BRUTE = [(r, n) for r in SMALL for n in range(2, _max_users(r) + 1)]
BRUTE_EPS = [0.0, 0.1, 0.25, 0.5, 1.0, 1.5]


@pytest.mark.parametrize("rand,n", BRUTE, ids=lambda x: x.describe() if hasattr(x, "describe") else f"n={x}")
def test_certified_pair_dominates_every_dataset(rand, n):
    """Brute force over every dataset (victim pair, multiset of the others' inputs), both directions."""
    worst = finite_worst_case_delta(rand.matrix().tolist(), n, BRUTE_EPS)
    mech = ps.ShuffledLDP(n, randomizer=rand, reduction="randomizer")
    family = mech.pair_family()
    for eps, (exact, _) in zip(BRUTE_EPS, worst):
        assert exact <= _certified_delta(rand, n, eps) * (1 + 1e-9) + 1e-13
        code = max(p.delta(eps)[0] for p in mech.labelled_pairs())
        assert exact <= code * (1 + 1e-9) + 1e-13
        assert exact <= max(up.delta_bounds(eps)[1][0] for up in family.upper)


def _random_matrix(draw_rows):
    M = np.asarray(draw_rows, dtype=float) + 1e-3
    return M / M.sum(axis=1, keepdims=True)


@settings(max_examples=25, deadline=None)
@given(
    rows=st.integers(2, 3).flatmap(
        lambda d: st.integers(2, 4).flatmap(
            lambda m: st.lists(st.lists(st.floats(0.0, 1.0), min_size=m, max_size=m), min_size=d, max_size=d)
        )
    ),
    n=st.integers(2, 4),
)
def test_property_random_finite_randomizers(rows, n):
    """Random finite randomizers: per-pair (p*, r*) pairs dominate the exact worst case; never looser than FMT20."""
    M = _random_matrix(rows)
    if np.allclose(M, M[0]):
        return
    rand = Finite(M)
    worst = finite_worst_case_delta(M.tolist(), n, BRUTE_EPS)
    fmt20 = LabelledClonePair.fmt20(n, rand.local_epsilon)
    for eps, (exact, _) in zip(BRUTE_EPS, worst):
        certified = _certified_delta(rand, n, eps)
        assert exact <= certified * (1 + 1e-9) + 1e-13
        assert certified <= fmt20.delta(eps)[0] * (1 + 1e-9) + 1e-13


def test_per_pair_members_are_tighter_than_the_global_member():
    """A randomizer whose victim pairs differ: the per-pair family dominates, the coarse one is looser."""
    M = np.array([[0.7, 0.2, 0.1], [0.5, 0.4, 0.1], [0.1, 0.1, 0.8]])
    per_pair = clone_constants_of_matrix(M)
    (coarse,) = clone_constants_of_matrix(M, per_pair=False)
    assert len(per_pair) >= 2
    assert coarse.ratio == max(m.ratio for m in per_pair)
    assert coarse.clone_probability == min(m.clone_probability for m in per_pair)
    n, eps = 200, 0.3
    fine = max(LabelledClonePair(n, m.ratio, m.clone_probability, m.clone_probability).delta(eps)[0] for m in per_pair)
    rough = LabelledClonePair(n, coarse.ratio, coarse.clone_probability, coarse.clone_probability).delta(eps)[0]
    assert fine < rough


def test_pareto_members_drop_dominated_and_merge_soundly():
    members = [CloneConstants(3.0, 0.1), CloneConstants(2.0, 0.2), CloneConstants(2.5, 0.05), CloneConstants(1.5, 0.3)]
    kept = pareto_members(members)
    assert CloneConstants(2.5, 0.05) not in kept or CloneConstants(3.0, 0.1) in kept
    assert all(not (a.ratio <= b.ratio and b.clone_probability <= a.clone_probability) for a in kept for b in kept if a != b)
    # A decreasing ratio with a decreasing clone probability: nobody dominates anybody.
    front = [CloneConstants(2.0 + k, 0.001 * (k + 1)) for k in range(20)]
    assert len(pareto_members(front, max_members=20)) == 20
    merged = pareto_members(front, max_members=4)
    assert len(merged) == 4
    for m0 in front:  # every original member is dominated by a merged one
        assert any(m.ratio >= m0.ratio and m.clone_probability <= m0.clone_probability for m in merged)


def test_randomizer_specific_matches_fmt23_and_fmt20_anchors():
    """kRR is in FMT23's class: the labelled clone reduction reproduces the FMT23 anchor (δ = 1e-6, n = 1e4,
    ε0 = 4: ε ∈ [0.410809, 0.410816]); OUE is not: its labelled clone reduction equals FMT20."""
    clone = {"reduction": "randomizer"}
    b = ps.FourierAccountant().compose(ps.ShuffledLDP(10_000, randomizer=KaryRR(10, 4.0), **clone)).get_epsilon_bounds(1e-6)
    assert b.is_guarantee and 0.410809 - 1e-6 <= b.lower <= b.upper <= 0.410816 + 1e-6
    b = ps.FourierAccountant().compose(ps.ShuffledLDP(1000, randomizer=KaryRR(3, 1.0), **clone)).get_epsilon_bounds(1e-6)
    assert b.upper == pytest.approx(0.148671, abs=2e-6)
    oue = ps.FourierAccountant().compose(ps.ShuffledLDP(10_000, randomizer=OUE(1024, 2.0), **clone)).get_epsilon_bounds(1e-6)
    fmt20 = ps.FourierAccountant().compose(ps.ShuffledLDP(10_000, 2.0, "fmt20")).get_epsilon_bounds(1e-6)
    assert oue.upper == pytest.approx(fmt20.upper, rel=1e-9)


def test_shuffled_ldp_api():
    mech = ps.ShuffledLDP(1000, randomizer=OUE(16, 1.0))
    assert mech.reduction == "blanket" and mech.local_epsilon == 1.0
    assert "optimized unary encoding" in mech.describe()
    assert hash(mech) == hash(ps.ShuffledLDP(1000, randomizer=OUE(16, 1.0)))
    assert ps.ShuffledLDP(1000, 1.0).reduction == "fmt20"
    assert ps.ShuffledLDP(1000, 1.0) == ps.ShuffledLDP(1000, 1.0, "fmt20")
    b = ps.FourierAccountant().compose(ps.ShuffledLDP(1000, randomizer=OUE(16, 1.0), reduction="fmt23")).get_epsilon_bounds(1e-6)
    assert not b.is_guarantee and any("fails FMT23's class test" in c for c in b.caveats)
    b = ps.FourierAccountant().compose(ps.ShuffledLDP(1000, randomizer=KaryRR(4, 1.0), reduction="fmt23")).get_epsilon_bounds(1e-6)
    assert b.is_guarantee and any("passes the class test" in c for c in b.caveats)
    with pytest.raises(ValueError, match="local_epsilon"):
        ps.ShuffledLDP(1000, 2.0, randomizer=OUE(16, 1.0))
    with pytest.raises(ValueError, match="needs randomizer"):
        ps.ShuffledLDP(1000, 1.0, reduction="randomizer")
    with pytest.raises(TypeError, match="randomizer"):
        ps.ShuffledLDP(1000, randomizer="oue")
    with pytest.raises(TypeError, match="local_epsilon or randomizer"):
        ps.ShuffledLDP(1000)
    with pytest.warns(UserWarning, match="not a privacy guarantee"):
        ps.ShuffledLDP(1000, randomizer=KaryRR(3, 1.0), reduction="wang24")


def test_finite_with_a_zero_entry_has_infinite_epsilon_and_uses_p_infinite():
    M = np.array([[0.5, 0.5, 0.0], [0.0, 0.5, 0.5], [0.25, 0.5, 0.25]])
    rand = Finite(M)
    assert rand.local_epsilon == math.inf
    mech = ps.ShuffledLDP(4, randomizer=rand, reduction="randomizer")
    assert any(p.ratio == math.inf for p in mech.labelled_pairs())
    worst = finite_worst_case_delta(M.tolist(), 4, BRUTE_EPS)
    for eps, (exact, _) in zip(BRUTE_EPS, worst):
        assert exact <= max(p.delta(eps)[0] for p in mech.labelled_pairs()) * (1 + 1e-9) + 1e-13


@pytest.mark.parametrize(
    "factory,name",
    [
        (lambda: KaryRR(1, 1.0), "domain_size"),
        (lambda: KaryRR(3, 0.0), "local_epsilon"),
        (lambda: KaryRR(3, 600.0), "local_epsilon"),
        (lambda: SubsetSelection(4, 4, 1.0), "subset_size"),
        (lambda: LocalHashing(4, 1, 1.0), "hash_range"),
        (lambda: Finite(np.array([[0.5, 0.6], [0.5, 0.5]])), "sum to 1"),
        (lambda: Finite(np.array([[0.5, 0.5]])), "at least 2 rows"),
        (lambda: Finite(np.array([[1.5, -0.5], [0.5, 0.5]])), ">= 0"),
        (lambda: Finite(np.array([[0.5, 0.5], [0.5, 0.5]])), "identical rows"),
        (lambda: RAPPOR(40, 1.0).matrix(), "max_entries"),
    ],
)
def test_bad_input_names_parameter(factory, name):
    with pytest.raises(ValueError, match=name):
        factory()


def test_bad_types():
    with pytest.raises(TypeError, match="local_epsilon"):
        KaryRR(3, "1")
    with pytest.raises(TypeError, match="domain_size"):
        OUE("3", 1.0)
    with pytest.raises(TypeError, match="probabilities"):
        Finite(object())


def test_large_domains_use_closed_forms_without_the_matrix():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for rand in (RAPPOR(1024, 1.0), OUE(1024, 1.0), OLH(1024, 2.0), SubsetSelection(1024, 64, 2.0), HadamardResponse(1024, 2.0)):
            (m,) = rand.clone_constants()
            assert m.clone_probability == pytest.approx(math.exp(-rand.local_epsilon) / 2)


def test_per_pair_family_composes_each_member():
    """Two non-dominated members: the composed bracket contains the max over members of the exact composition."""
    M = np.array([[0.7, 0.2, 0.1], [0.5, 0.4, 0.1], [0.1, 0.1, 0.8]])
    n, rounds = 5, 3
    mech = ps.ShuffledLDP(n, randomizer=Finite(M), reduction="randomizer")
    assert len(mech.labelled_pairs()) == 2
    acc = ps.FourierAccountant().compose(mech, count=rounds)
    for eps in (0.5, 1.5):
        truth = 0.0
        for m in mech.randomizer.clone_constants():
            p, r = m.ratio, m.clone_probability
            truth = max(truth, delta_exact(pair_labelled(n, p / (p + 1), 1 / (p + 1), 0.0, r, r), eps, rounds))
        b = acc.get_delta_bounds(eps)
        assert b.lower <= truth + 1e-12 and truth <= b.upper


@settings(max_examples=60, deadline=None)
@given(
    family=st.sampled_from(["krr", "rappor", "oue", "subset", "lh", "hadamard"]),
    d=st.integers(2, 6),
    k=st.integers(1, 5),
    eps0=st.floats(0.05, 6.0),
)
def test_property_closed_forms_match_matrix(family, d, k, eps0):
    """Closed-form ε0, total variation and (p*, r*) against the matrix computation, random parameters."""
    if family == "krr":
        rand = KaryRR(d, eps0)
    elif family == "rappor":
        rand = RAPPOR(d, eps0)
    elif family == "oue":
        rand = OUE(d, eps0)
    elif family == "subset":
        rand = SubsetSelection(d, min(k, d - 1), eps0)
    elif family == "lh":
        rand = LocalHashing(min(d, 4), min(k + 1, 3), eps0)
    else:
        rand = HadamardResponse(d, eps0)
    finite = Finite(rand.matrix())
    assert finite.local_epsilon == pytest.approx(rand.local_epsilon, rel=1e-9)
    assert finite.total_variation() == pytest.approx(rand.total_variation(), rel=1e-9)
    (closed,) = rand.clone_constants()
    # Floating-point noise can split the matrix computation into near-identical victim pairs: their
    # worst constants must equal the closed form.
    members = finite.clone_constants()
    assert max(m.ratio for m in members) == pytest.approx(closed.ratio, rel=1e-9)
    assert min(m.clone_probability for m in members) == pytest.approx(closed.clone_probability, rel=1e-9)
