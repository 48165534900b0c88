"""The blanket pair (ShuffledLDP(reduction="blanket"), the default with a randomizer) against independent
computations: the pair enumerated from its definition (tests/blanket_reference.py), brute force over every
dataset of the real shuffled randomizer (reference.finite_worst_case_delta), the weak kRR pair, and the
labelled clone pair it must never exceed."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
from blanket_reference import blanket_delta, blanket_pair, participating
from hypothesis import given, settings
from hypothesis import strategies as st
from reference import delta_exact, finite_worst_case_delta, make_pair

import pldshuffle as ps
from pldshuffle.mechanisms.blanket import BlanketPair
from pldshuffle.mechanisms._blanket_model import hit_model, hit_model_of_types, matrix_types
from pldshuffle.mechanisms._blanket_product import product_bounds
from pldshuffle.mechanisms._blanket_support import LatticeCells, LatticeMixture, b_points, fixed_b_bounds, fixed_b_cells, grouped_bounds, hit_width
from pldshuffle.pld import PrivacyLossPair
from pldshuffle.randomizers import OUE, RAPPOR, BinaryRR, Finite, HadamardResponse, KaryRR, LocalHashing, SubsetSelection

EPS = [0.0, 0.05, 0.2, 0.5, 1.0]
SLACK = 1e-9  # relative, for float sums of the reference


def _bracket(bp: BlanketPair, eps: float) -> tuple[float, float]:
    lowers, uppers = bp.pair_bounds()
    return max(p.delta_bounds(eps)[0][0] for p in lowers), max(p.delta_bounds(eps)[1][0] for p in uppers)


def _matrix(rand, q: float) -> list:
    M = rand.matrix().tolist()
    return participating(M, q) if q < 1.0 else M


TINY = [
    (BinaryRR(1.0), 4),
    (KaryRR(3, 1.5), 4),
    (OUE(3, 1.0), 3),
    (RAPPOR(3, 2.0), 3),
    (LocalHashing(3, 2, 1.0), 3),
    (HadamardResponse(4, 1.0), 3),
    (SubsetSelection(4, 2, 0.7), 4),
    (SubsetSelection(4, 1, 1.0), 4),
    (Finite(np.array([[0.5, 0.3, 0.2], [0.2, 0.5, 0.3], [0.3, 0.2, 0.5]])), 4),
    (Finite(np.array([[0.5, 0.5, 0.0], [0.0, 0.5, 0.5], [0.25, 0.5, 0.25]])), 4),  # ε0 = inf
]


@pytest.mark.parametrize("q", [1.0, 0.6])
@pytest.mark.parametrize("rand,n", TINY, ids=lambda x: x.describe() if hasattr(x, "describe") else f"n={x}")
def test_bracket_contains_the_pair_enumerated_from_its_definition(rand, n, q):
    """(a) Every sequence of the B+1 draws' outputs enumerated: lower <= exact <= upper at every ε."""
    bp = BlanketPair(n, rand, participation=q, group_tolerance=0.0)
    exact = blanket_delta(_matrix(rand, q), n, EPS)
    for eps, truth in zip(EPS, exact):
        lo, up = _bracket(bp, eps)
        assert lo <= truth * (1 + SLACK) + 1e-15 and truth <= up * (1 + SLACK) + 1e-15, (eps, lo, truth, up)


@pytest.mark.parametrize("rand,n", [(OUE(3, 1.0), 6), (HadamardResponse(4, 2.0), 6), (SubsetSelection(4, 2, 1.0), 6)], ids=str)
def test_groups_of_b_bracket_the_definition(rand, n):
    """Groups of several values of B (widest tolerance): still a bracket of the enumerated pair."""
    bp = BlanketPair(n, rand, group_tolerance=1.0)
    model = bp.model
    assert b_points(n, model.gamma, 1e-18, 1.0).size < n  # some group holds several values of B
    exact = blanket_delta(rand.matrix().tolist(), n, EPS)
    for eps, truth in zip(EPS, exact):
        lo, up = _bracket(bp, eps)
        assert lo <= truth * (1 + SLACK) + 1e-15 and truth <= up * (1 + SLACK) + 1e-15


@pytest.mark.parametrize("eps0", [0.05, 0.3, 1.0, 2.5])
@pytest.mark.parametrize(
    "make",
    [lambda e: OUE(2, e), lambda e: OUE(5, e), lambda e: RAPPOR(2, e), lambda e: RAPPOR(4, e), lambda e: LocalHashing(2, 3, e),
     lambda e: LocalHashing(4, 2, e), lambda e: HadamardResponse(3, e), lambda e: HadamardResponse(6, e), lambda e: SubsetSelection(5, 4, e),
     lambda e: KaryRR(4, e), lambda e: BinaryRR(e)],
)
def test_closed_form_hit_models_match_the_matrix_types(make, eps0):
    """The closed forms of hit_model against the types read off the randomizer's matrix, including the
    d = 2 cases whose ω(hit both) is exactly 0 (a rounded difference there was negative: OUE(2, 1) then took
    the grouped path and failed)."""
    rand = make(eps0)
    model = hit_model(rand)
    types = hit_model_of_types(matrix_types(rand.matrix(), 0, 1))
    assert types is not None
    assert model.gamma == pytest.approx(types.gamma, rel=1e-12)
    assert model.log_ratio == pytest.approx(types.log_ratio, rel=1e-12)
    assert model.pi10 == pytest.approx(types.pi10, rel=1e-9, abs=1e-15)
    assert model.pi11 == pytest.approx(types.pi11, rel=1e-9, abs=1e-15) and model.pi11 >= 0.0
    if types.pi11 == 0.0:
        assert model.pi11 == 0.0 and BlanketPair(50, rand).methods in (("trinomial",), ("krr",))


@pytest.mark.parametrize("q", [1.0, 0.5])
@pytest.mark.parametrize(
    "rand,n",
    [(KaryRR(3, 1.0), 4), (OUE(3, 1.0), 4), (HadamardResponse(4, 1.5), 4), (SubsetSelection(4, 2, 1.0), 4), (RAPPOR(3, 1.0), 3)],
    ids=lambda x: x.describe() if hasattr(x, "describe") else f"n={x}",
)
def test_dominates_every_dataset_of_the_shuffled_randomizer(rand, n, q):
    """(b) Brute force over every dataset (victim pair, multiset of the others' inputs), both directions."""
    worst = finite_worst_case_delta(_matrix(rand, q), n, EPS)
    bp = BlanketPair(n, rand, participation=q)
    for eps, (truth, _) in zip(EPS, worst):
        assert truth <= _bracket(bp, eps)[1] * (1 + SLACK) + 1e-15


@settings(max_examples=25, deadline=None)
@given(
    rows=st.integers(2, 3).flatmap(
        lambda d: st.integers(2, 4).flatmap(
            lambda m: st.lists(st.lists(st.floats(0.0, 1.0), min_size=m, max_size=m), min_size=d, max_size=d)
        )
    ),
    n=st.integers(2, 4),
    q=st.sampled_from([1.0, 0.9, 0.5, 0.2]),
)
def test_property_random_matrices_and_participation(rows, n, q):
    """(c) Random small matrices (zeros allowed) and participation rates: the bracket contains the
    enumerated blanket pair, whose δ is at least the brute-force worst case."""
    M = np.where(np.asarray(rows) < 0.2, 0.0, np.asarray(rows) + 1e-3)
    if np.any(M.sum(axis=1) == 0.0):
        return
    M = M / M.sum(axis=1, keepdims=True)
    if np.all(np.abs(M - M[0]) < 1e-9):
        return
    rand = Finite(M)
    bp = BlanketPair(n, rand, participation=q)
    Mq = _matrix(rand, q)
    exact = blanket_delta(Mq, n, EPS)
    worst = finite_worst_case_delta(Mq, n, EPS)
    for eps, truth, (brute, _) in zip(EPS, exact, worst):
        lo, up = _bracket(bp, eps)
        assert lo <= truth * (1 + SLACK) + 1e-14 and truth <= up * (1 + SLACK) + 1e-14
        assert brute <= truth * (1 + SLACK) + 1e-14


@pytest.mark.parametrize("n,k,eps0", [(1000, 4, 1.0), (300, 10, 3.0), (2000, 2, 0.5)])
def test_kary_rr_blanket_is_the_weak_krr_pair(n, k, eps0):
    """(d) One implementation: the same pairs as ShuffledKRR(adversary="weak"), hence the same numbers."""
    rand = KaryRR(k, eps0) if k > 2 else BinaryRR(eps0)
    mech = ps.ShuffledLDP(n, randomizer=rand)
    assert mech.reduction == "blanket" and mech.blanket_pair.methods == ("krr",)
    weak = ps.ShuffledKRR(n, k, local_epsilon=eps0, adversary="weak")
    a = ps.FourierAccountant().compose(mech).get_epsilon_bounds(1e-6)
    b = ps.FourierAccountant().compose(weak).get_epsilon_bounds(1e-6)
    assert (a.lower, a.upper) == (b.lower, b.upper)
    # SubsetSelection with k = 1 is k-ary RR through the trinomial evaluation (the same builder).
    if k > 2:
        c = ps.FourierAccountant().compose(ps.ShuffledLDP(n, randomizer=SubsetSelection(k, 1, eps0))).get_epsilon_bounds(1e-6)
        assert c.lower <= b.upper * (1 + 1e-9) and b.lower <= c.upper * (1 + 1e-9)


@pytest.mark.parametrize(
    "rand,n",
    [(OUE(1024, 1.0), 10_000), (RAPPOR(32, 2.0), 2000), (ps.randomizers.OLH(1024, 1.0), 5000), (KaryRR(10, 0.1), 3000),
     (HadamardResponse(10, 1.0), 500), (SubsetSelection(10, 3, 4.0), 500)],
    ids=lambda x: x.describe() if hasattr(x, "describe") else f"n={x}",
)
def test_never_looser_than_the_labelled_clone_pair(rand, n):
    """(e) The blanket pair's upper ε is below the labelled clone pair's lower ε."""
    blanket = ps.FourierAccountant().compose(ps.ShuffledLDP(n, randomizer=rand, reduction="blanket")).get_epsilon_bounds(1e-6)
    clone = ps.FourierAccountant().compose(ps.ShuffledLDP(n, randomizer=rand, reduction="randomizer")).get_epsilon_bounds(1e-6)
    assert blanket.is_guarantee and blanket.upper <= clone.lower


def test_product_evaluation_agrees_with_the_enumerated_fixed_b_pairs():
    """OUE at d = 40 (point mass λ ≈ 1e-23): the product evaluation and the (N1, N2) enumeration, two
    independent evaluations of the same pair, give overlapping tight brackets."""
    model = hit_model(OUE(40, 2.0))
    assert BlanketPair(1000, OUE(40, 2.0)).methods == ("product",)
    lo, up = product_bounds(1000, model, 1e-18, 5e-5)
    glo, gup = grouped_bounds(
        1000, model.gamma, 1e-18, 5e-5, lambda b, _h: fixed_b_bounds(b, model, 1e-18), lambda b: hit_width(b, model, 1e-18), model.log_ratio
    )
    for eps in (0.05, 0.1, 0.2, 0.4):
        a, b = PrivacyLossPair(lo).delta_bounds(eps)[0][0], PrivacyLossPair(up).delta_bounds(eps)[1][0]
        c, d = PrivacyLossPair(glo).delta_bounds(eps)[0][0], PrivacyLossPair(gup).delta_bounds(eps)[1][0]
        assert a <= d and c <= b
        assert b - a <= 1e-3 * b + 1e-15


@pytest.mark.parametrize(
    "rand", [HadamardResponse(10, 1.0), HadamardResponse(1000, 2.0), SubsetSelection(32, 8, 1.0), SubsetSelection(32, 2, 0.1),
             SubsetSelection(5, 4, 1.0), SubsetSelection(6, 5, 0.3)], ids=str
)
def test_kernel_fixed_b_agrees_with_the_python_path(rand):
    """The kernel's fixed-B pair (recurrence of N2 | N1, binned on the mixture lattice) against the Python
    enumeration (Boost pmfs, direct convolutions) on the same support: cell by cell it holds at least the
    windowed convolution and at most that plus the booked truncation; the grouped brackets agree."""
    model = hit_model(rand)
    spacing = 1e-4
    for b in (40, 300):
        cells, same = fixed_b_cells(b, model, 1e-18, spacing)
        assert isinstance(cells, LatticeCells) and cells is same  # the kernel path, not the fallback
        old = fixed_b_bounds(b, model, 1e-18)[1]
        ref, new = LatticeMixture(spacing), LatticeMixture(spacing)
        ref.add(old, 1.0)
        new.add(cells, 1.0)
        ref._grow(new.j0, new.j0 + new.mass.size - 1)
        new._grow(ref.j0, ref.j0 + ref.mass.size - 1)
        assert np.all(new.mass >= ref.mass * (1.0 - 1e-12))
        assert np.all(new.tilt <= ref.tilt * (1.0 - 1e-12) + 1e-300)  # tilts are <= 0
        assert float(np.sum(new.mass - ref.mass)) <= old.truncated_mass + 1e-13
        assert new.truncated == ref.truncated and new.loss_error >= 0.0
    n = 400
    args = (n, model.gamma, 1e-18, 0.02)  # groups of a few values of B: the same groups for both
    klo, kup = grouped_bounds(*args, lambda b, h: fixed_b_cells(b, model, 1e-18, h), lambda b: hit_width(b, model, 1e-18), model.log_ratio)
    plo, pup = grouped_bounds(*args, lambda b, _h: fixed_b_bounds(b, model, 1e-18), lambda b: hit_width(b, model, 1e-18), model.log_ratio)
    for eps in (0.0, 0.05, 0.1, 0.2, 0.4):
        a, b = PrivacyLossPair(klo).delta_bounds(eps)[0][0], PrivacyLossPair(kup).delta_bounds(eps)[1][0]
        c, d = PrivacyLossPair(plo).delta_bounds(eps)[0][0], PrivacyLossPair(pup).delta_bounds(eps)[1][0]
        assert a <= d * (1 + 1e-9) + 1e-15 and c <= b * (1 + 1e-9) + 1e-15
        assert abs(b - d) <= 1e-9 * d + 1e-15 and abs(a - c) <= 1e-9 * c + 1e-15


def test_product_split_with_a_large_point_mass_is_still_a_bracket():
    """Hadamard response (hits positively correlated, point mass λ ≈ 0.013): the product evaluation's upper
    (point draws revealed) and lower (no point draw at all) are loose but must contain the exact pair."""
    model = hit_model(HadamardResponse(100, 1.0))
    p, lam = model.product_split()
    assert 0.01 < lam < 0.02
    lo, up = product_bounds(300, model, 1e-18, 5e-5)
    glo, gup = grouped_bounds(
        300, model.gamma, 1e-18, 5e-5, lambda b, _h: fixed_b_bounds(b, model, 1e-18), lambda b: hit_width(b, model, 1e-18), model.log_ratio
    )
    for eps in (0.05, 0.1, 0.2):
        assert PrivacyLossPair(lo).delta_bounds(eps)[0][0] <= PrivacyLossPair(gup).delta_bounds(eps)[1][0]
        assert PrivacyLossPair(glo).delta_bounds(eps)[0][0] <= PrivacyLossPair(up).delta_bounds(eps)[1][0]


def test_one_round_gap_and_composition_bracket():
    """Defaults: one round within 1e-4 (relative ε); three rounds of a tiny case bracket the exact
    composition of the enumerated pair."""
    b = ps.FourierAccountant().compose(ps.ShuffledLDP(10_000, randomizer=OUE(1024, 1.0))).get_epsilon_bounds(1e-6)
    assert (b.upper - b.lower) / b.upper <= 1e-4
    rand, n, q = OUE(3, 1.0), 3, 0.7
    P, Q = blanket_pair(_matrix(rand, q), n, 0, 1)
    pair = make_pair(P, Q)
    acc = ps.FourierAccountant().compose(ps.ShuffledLDP(n, randomizer=rand, participation=q), 3)
    for eps in (0.3, 1.0):
        truth = delta_exact(pair, eps, 3)
        bounds = acc.get_delta_bounds(eps)
        assert bounds.lower <= truth + 1e-12 and truth <= bounds.upper


@pytest.mark.parametrize("rand", [HadamardResponse(1000, 1.0), HadamardResponse(10, 2.0), SubsetSelection(32, 8, 1.0), OUE(32, 0.1)], ids=str)
def test_default_keeps_the_blanket_pair_of_dependent_hits_at_1e5_users(rand):
    """Hadamard response, subset selection and OUE d = 32 at ε0 = 0.1 (grouped evaluation, dependent hits)
    are estimated under the fallback threshold at n = 1e5 (measured 4-9 s on two idle cores), so the
    default is their blanket pair; the estimate grows like n^{3/2} and falls back at larger n.  No build."""
    from pldshuffle.mechanisms.clones import BLANKET_DEFAULT_SECONDS

    mech = ps.ShuffledLDP(100_000, randomizer=rand)
    assert mech.reduction == "blanket" and "grouped" in mech.blanket_pair.methods
    assert mech.blanket_pair.build_seconds() <= BLANKET_DEFAULT_SECONDS
    assert ps.ShuffledLDP(10**7, randomizer=rand).reduction == "randomizer"


def test_participation_lowers_epsilon_and_composes():
    full = ps.FourierAccountant().compose(ps.ShuffledLDP(5000, randomizer=KaryRR(8, 2.0)), 4).get_epsilon_bounds(1e-6)
    half = ps.FourierAccountant().compose(ps.ShuffledLDP(5000, randomizer=KaryRR(8, 2.0), participation=0.5), 4).get_epsilon_bounds(1e-6)
    assert half.upper < full.lower and half.is_guarantee


@pytest.mark.parametrize("q", [0.0, -0.1, 1.5, math.nan])
def test_bad_participation_names_the_parameter(q):
    with pytest.raises(ValueError, match="participation"):
        ps.ShuffledLDP(100, randomizer=OUE(8, 1.0), participation=q)


def test_bad_requests():
    with pytest.raises(TypeError, match="participation"):
        ps.ShuffledLDP(100, randomizer=OUE(8, 1.0), participation="half")
    with pytest.raises(ValueError, match="needs randomizer"):
        ps.ShuffledLDP(100, 1.0, reduction="blanket")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(ValueError, match="participation"):
            ps.ShuffledLDP(100, 1.0, reduction="khh21", participation=0.5)
    # (a finite randomizer whose blanket pair is unavailable falls back: tests/test_blanket_spread.py)


def test_clone_reductions_accept_participation_unchanged():
    a = ps.ShuffledLDP(1000, randomizer=OUE(16, 1.0), reduction="fmt20", participation=0.5).pair_family()
    b = ps.ShuffledLDP(1000, randomizer=OUE(16, 1.0), reduction="fmt20").pair_family()
    assert any("participation" in c for c in a.caveats)
    assert a.upper[0].forward.support_size == b.upper[0].forward.support_size


def test_cli_participation_and_blanket(capsys):
    import json

    from pldshuffle.cli import main

    argv = ["epsilon", "--mechanism", "ldp", "--randomizer", "krr", "--domain-size", "4", "--num-users", "2000",
            "--local-epsilon", "2", "--delta", "1e-6", "--json", "--quiet"]
    assert main(argv) == 0
    default = json.loads(capsys.readouterr().out)
    assert main([*argv, "--participation", "0.5", "--reduction", "blanket"]) == 0
    half = json.loads(capsys.readouterr().out)
    (entry,) = half["mechanisms"]
    assert default["mechanisms"][0]["parameters"]["reduction"] == "blanket"
    assert entry["parameters"]["participation"] == 0.5 and half["upper"] < default["lower"]
    assert main([*argv, "--participation", "0"]) == 2
    assert "--participation must lie in (0, 1]" in capsys.readouterr().err
