"""Random heterogeneous ledgers against the independent exact reference (enumeration, no grid, no FFT).

Every ledger mixes worst cases over datasets (2RR "worst" in both settings), single pairs (kRR strong and
weak, clones, random asymmetric pairs, the identity, pairs with infinite loss) and counts 1-3.  The
reference maximises over every choice the adversary has (``reference.delta_ledger``); the accountant's
bracket must contain it, its answers must agree with each other, and both ends must be monotone.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import pldshuffle as ps
import pldshuffle.worstcase.blocks as wc_blocks
import pldshuffle.worstcase.cover as wc_cover
import pldshuffle.worstcase.mixed as wc_mixed
import pldshuffle.worstcase.witnesses as wc_witnesses
import reference as ref

EPS = np.array([0.0, 0.1, 0.43, 1.0, 2.5, np.inf])  # ε = inf: the composed mass at +∞


def _close_below(lower, exact):
    return lower <= exact * (1 + 1e-12) + 1e-14


def _close_above(upper, exact):
    return exact <= upper * (1 + 1e-12) + 1e-14


@st.composite
def entries(draw):
    """One ledger entry: (mechanism, count, same_data, reference entry)."""
    kind = draw(st.sampled_from(["2rr", "2rr_same", "krr_strong", "krr_weak", "clone", "random", "identity", "infinite"]))
    count = draw(st.integers(1, 2))
    if kind in ("2rr", "2rr_same"):
        n, eps0 = draw(st.integers(3, 5)), draw(st.floats(0.3, 2.5))
        p = 1.0 / (math.exp(eps0) + 1.0)
        members = [ref.pair_binary_rr(n, p, m) for m in range(n)]
        same = kind == "2rr_same"
        return ps.ShuffledBinaryRR(n, eps0), count, same, ("same" if same else "changing", members, count)
    if kind in ("krr_strong", "krr_weak"):
        n, k, gamma = draw(st.integers(3, 4)), 3, draw(st.floats(0.2, 0.9))
        adversary = kind.split("_")[1]
        pair = (ref.pair_krr_strong if adversary == "strong" else ref.pair_krr_weak)(n, k, gamma)
        return ps.ShuffledKRR(n, k, gamma=gamma, adversary=adversary), count, False, ("pair", [pair], count)
    if kind == "clone":
        n, eps0 = draw(st.integers(3, 6)), draw(st.floats(0.5, 3.0))
        pair = ref.pair_clones(n, math.exp(eps0), math.exp(-eps0), "F")
        return ps.ShuffledLDP(n, eps0, reduction="fmt20"), count, False, ("pair", [pair], count)
    if kind == "identity":
        return ps.PairMechanism.from_probability_mass_functions([1.0], [1.0]), count, False, ("pair", [{0: (1.0, 1.0)}], count)
    size = draw(st.integers(2, 4))
    weights = st.lists(st.floats(0.05, 1.0), min_size=size, max_size=size)
    p, q = np.array(draw(weights)), np.array(draw(weights))
    if kind == "infinite":
        q[draw(st.integers(0, size - 1))] = 0.0
    p, q = p / p.sum(), q / q.sum()
    pair = {i: (float(a), float(b)) for i, (a, b) in enumerate(zip(p, q))}
    return ps.PairMechanism.from_probability_mass_functions(p, q), count, False, ("pair", [pair], count)


def _accountant(ledger):
    acc = ps.FourierAccountant()
    for mech, count, same, _ in ledger:
        acc.compose(mech, count, same_data=same)
    return acc


_LEDGERS = st.lists(entries(), min_size=1, max_size=3).filter(lambda l: sum(e[1] for e in l) <= 4)


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(ledger=_LEDGERS)
def test_random_mixed_ledgers_bracket_exact(ledger):
    _check_ledger(ledger)


@pytest.mark.slow
@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(ledger=_LEDGERS)
def test_many_random_mixed_ledgers_bracket_exact(ledger):
    """The same property over ten times as many ledgers (``pytest -m slow``)."""
    _check_ledger(ledger)


@st.composite
def _short_block_ledgers(draw):
    """A ledger with a 2RR entry of 2-4 rounds among others (at most 5 rounds), and block lengths to patch."""
    n, eps0 = draw(st.integers(3, 4)), draw(st.floats(0.3, 2.5))
    count = draw(st.integers(2, 4))
    members = [ref.pair_binary_rr(n, 1.0 / (math.exp(eps0) + 1.0), m) for m in range(n)]
    ledger = [(ps.ShuffledBinaryRR(n, eps0), count, False, ("changing", members, count))]
    others = draw(st.lists(entries().filter(lambda e: e[1] == 1), max_size=1 if count == 4 else 2))
    ledger = draw(st.permutations(ledger + others))
    blocks = draw(st.sampled_from([(2, 256, 4), (1, 2, 2), (3, 256, 4)]))  # (_BLOCK_ROUNDS, _LONG_BLOCK_ROUNDS, _LONG_BLOCKS)
    return ledger, blocks


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=_short_block_ledgers())
def test_random_mixed_ledgers_with_several_adaptive_blocks_bracket_exact(case):
    """Full adaptive blocks, a block of the rounds left over, and long blocks (lengths patched down so that
    the exact adaptive worst case stays enumerable), composed with other mechanisms."""

    ledger, (block, long_block, long_blocks) = case
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(wc_blocks, "_BLOCK_ROUNDS", block)
        patch.setattr(wc_blocks, "_LONG_BLOCK_ROUNDS", long_block)
        patch.setattr(wc_blocks, "_LONG_BLOCKS", long_blocks)
        _check_ledger(ledger)


def _check_ledger(ledger):
    acc = _accountant(ledger)
    bounds = acc.get_delta_bounds(EPS)
    # Each compose call is its own entry: a same_data=True call is one block on one dataset, and the data may
    # change between calls (two calls of an equal mechanism are two blocks, not one).
    reference = [(kind, members, count) for _, count, _, (kind, members, _) in ledger]
    for eps, lo, up in zip(EPS, bounds.lower, bounds.upper):
        exact = ref.delta_ledger_adaptive(reference, eps)  # choices after earlier outputs (the default setting)
        assert _close_below(lo, exact), (eps, lo, exact)
        assert _close_above(up, exact), (eps, up, exact)
    assert np.all(np.diff(bounds.upper) <= 0) and np.all(np.diff(bounds.lower) <= 1e-15)
    assert np.all((0 <= bounds.lower) & (bounds.lower <= bounds.upper) & (bounds.upper <= 1))
    for delta in (0.3, 1e-3):
        eb = acc.get_epsilon_bounds(delta)
        assert eb.lower <= eb.upper
        if math.isfinite(eb.upper):  # the same object answers both queries: consistent by construction
            assert acc.get_delta_bounds(eb.upper).upper <= delta


def test_identity_changes_nothing():
    """Composing the identity pair must leave the worst case of one round unchanged (it was below it)."""
    exact = ref.delta_ledger([("changing", [ref.pair_binary_rr(100, 1 / (math.exp(4.0) + 1), m) for m in range(100)], 1)], 0.5)
    identity = ps.PairMechanism.from_probability_mass_functions([1.0], [1.0])
    b = ps.FourierAccountant().compose(ps.ShuffledBinaryRR(100, 4.0)).compose(identity).get_delta_bounds(0.5)
    assert b.lower <= exact <= b.upper
    assert b.upper - exact <= 1e-6 * exact  # the upper bound is the exact single-round worst case


def test_witnesses_cover_the_realisable_envelope_in_a_mixed_ledger():
    """With a second ledger entry the single-round exact evaluation is off; the lower witnesses (greedy
    cover of the realisable envelope) must still come close to the exact worst case."""
    members = [ref.pair_binary_rr(100, 1 / (math.exp(4.0) + 1), m) for m in range(100)]
    coin = {0: (0.5, 0.5), 1: (0.5, 0.5)}
    exact = ref.delta_ledger([("changing", members, 1), ("pair", [coin], 1)], 0.5)
    mech = ps.PairMechanism.from_probability_mass_functions([0.5, 0.5], [0.5, 0.5])
    b = ps.FourierAccountant().compose(ps.ShuffledBinaryRR(100, 4.0)).compose(mech).get_delta_bounds(0.5)
    assert b.lower <= exact <= b.upper
    assert b.lower >= 0.98 * exact  # three fixed witnesses gave 0.924 of it


def test_worst_case_pairs_do_not_outlive_the_accountant():
    """Dataset pairs of O(√n) outcomes are cached per family only while something still holds them."""
    import gc
    import weakref

    acc = ps.FourierAccountant().compose(ps.ShuffledBinaryRR(2_000, 1.0), 3)
    acc.get_delta_bounds(0.1)
    term = acc.certified_pld().terms[0]
    assert term.exact_upper == () and term.exact_lower == ()  # a composed term keeps no exact pairs
    family = ps.ShuffledBinaryRR(2_000, 1.0).pair_family()
    probe = weakref.ref(family.cells[0].upper)
    del family, acc, term
    gc.collect()
    assert probe() is None


def test_memory_cap_stops_refinement_but_stays_sound():
    """A cap on the pairs held stops the branch and bound early: looser, never below the truth."""
    n, eps0 = 300, 1.0
    members = [ref.pair_binary_rr(n, 1 / (math.exp(eps0) + 1), m) for m in range(n)]
    exact = ref.delta_ledger([("changing", members, 1)], 0.1)
    # 2**17 bytes leave 64 KiB for pairs: less than the 16 initial cells hold, so no cell is split.
    capped = ps.FourierAccountant(max_memory_bytes=2**17).compose(ps.ShuffledBinaryRR(n, eps0)).get_delta_bounds(0.1)
    free = ps.FourierAccountant().compose(ps.ShuffledBinaryRR(n, eps0)).get_delta_bounds(0.1)
    assert capped.lower <= exact <= capped.upper
    assert free.lower <= exact <= free.upper
    assert free.upper < capped.upper and free.upper - exact <= 1e-6 * exact


def test_asymmetric_pair_with_2rr_worst_case():
    """Both orders of every dataset matter when the ledger holds an asymmetric pair."""
    rng = np.random.default_rng(7)
    p, q = rng.dirichlet(np.ones(3)), rng.dirichlet(np.ones(3))
    pair = {i: (float(a), float(b)) for i, (a, b) in enumerate(zip(p, q))}
    members = [ref.pair_binary_rr(5, 1 / (math.exp(2.7) + 1), m) for m in range(5)]
    acc = ps.FourierAccountant().compose(ps.PairMechanism.from_probability_mass_functions(p, q), 2).compose(ps.ShuffledBinaryRR(5, 2.7))
    exact = ref.delta_ledger([("pair", [pair], 2), ("changing", members, 1)], 0.43)
    b = acc.get_delta_bounds(0.43)
    assert b.lower <= exact <= b.upper


@pytest.mark.parametrize("n, eps0, eps", [(30, 2.0, 0.05), (6, 1.0, 0.0), (9, 0.7, 0.2)])
def test_two_settings_of_the_worst_case(n, eps0, eps):
    """Default (data may change) is above the same-data worst case; same_data=True brackets the latter."""
    members = [ref.pair_binary_rr(n, 1 / (math.exp(eps0) + 1), m) for m in range(n)]
    changing = ref.delta_ledger_adaptive([("changing", members, 2)], eps)  # the default setting is adaptive
    same = ref.delta_ledger([("same", members, 2)], eps)
    assert same <= changing
    mech = ps.ShuffledBinaryRR(n, eps0)
    b = ps.FourierAccountant().compose(mech, 2).get_delta_bounds(eps)
    assert b.lower <= changing <= b.upper
    s = ps.FourierAccountant().compose(mech, 2, same_data=True).get_delta_bounds(eps)
    assert s.lower <= same <= s.upper
    assert s.upper <= b.upper
    assert any("same data" in c for c in s.caveats) and b.diagnostics["setting"] == "data may change between rounds"


def test_huge_losses_are_not_overflowed():
    """Losses above log(DBL_MAX) ≈ 709.8: δ(ε) = 0.5(1 - e^{ε - ℓ}) with ℓ = log(0.5/1e-320) ≈ 736.1."""
    mech = ps.PairMechanism.from_probability_mass_functions([0.5, 0.5], [1e-320, 1 - 1e-320])
    b = ps.FourierAccountant().compose(mech).get_epsilon_bounds(0.25)
    loss = math.log(0.5) - math.log(1e-320)
    exact = loss - math.log(2.0)
    assert b.lower <= exact <= b.upper
    assert b.relative_gap <= 1e-4


@pytest.mark.parametrize("count", [1, 2, 5, 40])
def test_infinite_loss_pairs_compose_for_any_count(count):
    mech = ps.PairMechanism.from_probability_mass_functions([0.5, 0.5], [1.0, 0.0])
    acc = ps.FourierAccountant().compose(mech, count)
    infinity = 1 - 0.5**count
    below = acc.get_epsilon_bounds(infinity * 0.99)
    assert below.upper == math.inf and below.lower == math.inf
    b = acc.get_delta_bounds(np.array([0.0, 3.0]))
    assert np.all(b.lower <= infinity + 1e-15) and np.all(b.upper >= infinity)


def test_all_mass_at_infinity():
    mech = ps.PairMechanism.from_probability_mass_functions([1.0, 0.0], [0.0, 1.0])
    b = ps.FourierAccountant().compose(mech, 3).get_delta_bounds(1.0)
    assert b.lower == pytest.approx(1.0, abs=1e-9) and b.upper == 1.0


@pytest.mark.parametrize("bad", ["3", b"3", True, np.bool_(True), float("nan"), 1 + 2j, None])
def test_bad_epsilon_types_are_refused(bad):
    acc = ps.FourierAccountant().compose(ps.ShuffledBinaryRR(10, 1.0))
    with pytest.raises((TypeError, ValueError), match="target_epsilon"):
        acc.get_delta_bounds(bad)


@pytest.mark.parametrize("bad", ["0.1", b"0.1", True, float("nan"), 1j, 10**400])
def test_bad_delta_types_are_refused(bad):
    acc = ps.FourierAccountant().compose(ps.ShuffledBinaryRR(10, 1.0))
    with pytest.raises((TypeError, ValueError), match="target_delta"):
        acc.get_epsilon_bounds(bad)


def test_integer_beyond_float_range_refused():
    with pytest.raises(ValueError, match="local_epsilon"):
        ps.ShuffledBinaryRR(10, 10**400)


@pytest.mark.parametrize(
    "build",
    [
        lambda: ps.ShuffledBinaryRR(2**63, 1.0),
        lambda: ps.ShuffledBinaryRR(2**53, 1.0),
        lambda: ps.FourierAccountant().compose(ps.ShuffledLDP(10**14, 1.0)).get_epsilon_bounds(1e-8),
        # Every mechanism has the same count limit (beyond it int64 arrays overflow: n = 2**64 gave a
        # confusing "losses must be finite", n = 1e30 an OverflowError).
        lambda: ps.ShuffledKRR(2**53 + 1, 4, local_epsilon=1.0),
        lambda: ps.ShuffledLDP(2**64, 2.0),
        lambda: ps.ShuffledLDP(10**30, randomizer=ps.randomizers.OUE(domain_size=16, local_epsilon=2.0)),
        lambda: ps.LabelledClonePair.fmt23(2**53 + 1, 1.0),
    ],
)
def test_absurd_sizes_are_refused_up_front(build):
    """Sizes no machine can hold are refused at once, naming the size and how to shrink the request."""
    import time

    start = time.perf_counter()
    with pytest.raises(ValueError, match="num_users|n=") as info:
        build()
    assert time.perf_counter() - start < 30.0  # before any work: computing would take hours
    assert "fewer users" in str(info.value)  # how to shrink the request, also beyond 2**53 users


def test_epsilon_beyond_a_million_is_bracketed():
    """10^4 rounds at ε0 = 200: ε ≈ 2e6, beyond the inversion's first search range, whose lower end was ∞
    (bracket [∞, 3e6] for a million rounds of 2RR with n = 17, ε0 = 3).  Basic composition caps the truth
    at rounds·ε0, and δ at the lower end must still exceed the target."""
    mechanism = ps.ShuffledKRR(3, 2, local_epsilon=200.0, adversary="weak")
    acc = ps.FourierAccountant().compose(mechanism, 10**4)
    b = acc.get_epsilon_bounds(1e-8)
    assert 1e6 < b.lower <= b.upper <= 2e6 * (1 + 1e-12)
    assert acc.get_delta_bounds(b.upper).upper <= 1e-8 < acc.get_delta_bounds(b.lower * (1 - 1e-9)).upper


@pytest.mark.parametrize("eps0, eps", [(38.0, 10.0), (45.0, 44.5), (120.0, 60.0)])
def test_huge_local_epsilon_is_exact_and_tight(eps0, eps):
    """For ε0 ≳ 37, ``1 - p`` rounds to 1: the ones must not become deterministic and the weights of
    both hypotheses must stay exact (an understated mass would put the upper end below the truth)."""
    from fractions import Fraction

    p = Fraction(1.0 / (math.exp(eps0) + 1.0))  # the library's p, exactly; 1 - p is then exact too
    members = [ref.pair_binary_rr(5, p, m) for m in range(5)]
    for rounds in (1, 2):
        exact = ref.delta_ledger_adaptive([("changing", members, rounds)], eps)
        b = ps.FourierAccountant().compose(ps.ShuffledBinaryRR(5, eps0), rounds).get_delta_bounds(eps)
        assert _close_below(b.lower, exact) and _close_above(b.upper, exact), (rounds, b, exact)
        assert b.upper - b.lower <= 1e-6  # the whole dataset's mass used to be booked at +inf (upper = 1)


def test_single_point_windows_keep_the_neighbouring_outcome():
    """With ε0 = 300 every binomial window is one point wide; the outcome next to it carries almost all of
    the other hypothesis's mass and must be kept (it was booked at +inf: ε(1e-6) = inf)."""
    b = ps.FourierAccountant().compose(ps.ShuffledBinaryRR(1000, 300.0)).get_epsilon_bounds(1e-6)
    assert 299.9 < b.lower <= b.upper < 300.0 + 1e-6


@pytest.mark.parametrize("eps0", [38.0, 60.0])
@pytest.mark.parametrize("kind", ["krr_strong", "krr_weak", "fmt20"])
def test_other_mechanisms_at_huge_local_epsilon_bracket_exact(kind, eps0):
    """kRR and the clone reduction where ``1 - p``-style weights round: the bracket holds the exact δ."""
    from fractions import Fraction

    k = 3
    if kind == "fmt20":
        mech = ps.ShuffledLDP(5, eps0, reduction="fmt20")
        pair = ref.pair_clones(5, Fraction(math.exp(eps0)), Fraction(math.exp(-eps0)), "F")
    else:
        adversary = kind.split("_")[1]
        mech = ps.ShuffledKRR(5, k, local_epsilon=eps0, adversary=adversary)
        gamma = Fraction(k) / (Fraction(math.exp(eps0)) + k - 1)
        pair = (ref.pair_krr_strong if adversary == "strong" else ref.pair_krr_weak)(5, k, gamma)
    for eps in (1.0, eps0 / 2, eps0 - 0.5):
        exact = ref.delta_ledger([("pair", [pair], 1)], eps)
        b = ps.FourierAccountant().compose(mech).get_delta_bounds(eps)
        assert _close_below(b.lower, exact) and _close_above(b.upper, exact), (eps, b, exact)


def _settings(n, eps0, rounds, eps, monkeypatch):
    mech = ps.ShuffledBinaryRR(n, eps0)
    # The changing-data lower end without its adaptive strategy (not realisable when the data stay the same).
    with monkeypatch.context() as patch:
        patch.setattr(wc_blocks, "_adaptive_lower", lambda *args: (None, None))
        changing = ps.FourierAccountant().compose(mech, rounds).get_delta_bounds(eps)
    same = ps.FourierAccountant().compose(mech, rounds, same_data=True).get_delta_bounds(eps)
    return changing, same


def _assert_same_data_no_looser(changing, same):
    # Same data is a special case of changing data: its upper end may use both bounds (up to the
    # re-inversion's rounding), and the constant-dataset witnesses serve both settings' lower ends (up to
    # the certified round-off of their realisations, whose tilts follow each setting's own upper end:
    # ~1e-9 relative at δ ~ 1e-13).
    material = changing.upper >= 1e-12
    assert np.all(same.upper[material] <= changing.upper[material] * (1 + 1e-5))
    assert np.all(same.lower >= changing.lower * (1 - 1e-8))
    assert np.all(same.lower <= same.upper)


@pytest.mark.slow
def test_same_data_is_never_looser_than_changing_data(monkeypatch):
    """The block's witnesses are composed in tilted frames too (its upper term is one round): at δ ~ 1e-10
    the same-data lower end used to fall 9 % below the changing-data one."""
    _assert_same_data_no_looser(*_settings(200, 2.0, 6, np.array([0.5, 1.0, 2.0, 3.0]), monkeypatch))


@pytest.mark.slow
def test_same_data_upper_uses_the_composed_per_round_envelope(monkeypatch):
    """For large n the capped block cover alone was looser than the per-round envelope (n=2000, 16 rounds:
    δ(0.2) 0.02219 vs 0.02201); the block now takes the convex minorant of the minimum of both."""
    _assert_same_data_no_looser(*_settings(2000, 2.0, 16, np.array([0.2, 0.5, 1.0, 1.5]), monkeypatch))


def test_single_round_queries_refine_the_cover_and_stay_sound():
    """One round of the 2RR worst case is refined at the queried points (a coarse cover: cell tolerance
    0.05): every bracket holds the exact worst case (all datasets, by enumeration), ε queries meet the
    refinement's gap (3e-5 relative, absolute below ε = 0.05), later queries are never looser, and a δ
    query at a returned ε certifies δ."""
    n, eps0 = 300, 2.0
    # δ_m = δ_{n-1-m} (both orders are taken): the first half of the datasets is every δ.
    members = [ref.pair_binary_rr(n, 1 / (math.exp(eps0) + 1), m) for m in range((n + 1) // 2)]

    def exact(eps: float) -> float:
        return ref.delta_ledger([("changing", members, 1)], eps)

    coarse = ps.FourierAccountant(relative_gap_target=0.05).compose(ps.ShuffledBinaryRR(n, eps0))
    first = coarse.get_delta_bounds(0.2)
    assert first.lower <= exact(0.2) <= first.upper
    for delta in (1e-2, 1e-9):
        b = coarse.get_epsilon_bounds(delta)
        assert exact(b.upper) <= delta < exact(b.lower) or b.lower == 0.0
        assert b.upper - b.lower <= 3.01e-5 * max(b.lower, 0.05)
        assert coarse.get_delta_bounds(b.upper).upper <= delta
    again = coarse.get_delta_bounds(0.2)
    assert again.upper <= first.upper and again.lower >= first.lower
    # The refined cover still covers every dataset: its pairs bound the exact worst case on a grid of ε.
    grid = np.linspace(0.0, 3.0, 61)
    worst = np.zeros(grid.size)
    for pair in members:
        P, Q = (np.array([float(v) for v in side.values()]) for side in ref.split_pair(pair))
        for a, b in ((P, Q), (Q, P)):
            worst = np.maximum(worst, np.maximum(a[None, :] - np.exp(grid)[:, None] * b[None, :], 0.0).sum(axis=1))
    refiner = coarse.certified_pld().terms[0].refiner
    # Queries read the kept upper pairs without keeping their suffix sums (which doubled a refined cover's
    # memory); only the few realisable pairs the lower end inverts keep theirs.
    realisable = {id(p) for p in refiner.lower_pairs}
    assert not any("_suffix_mass" in d.__dict__ for p in refiner.upper_pairs if id(p) not in realisable for d in p.directions)
    assert np.all(np.max([p.delta_bounds(grid)[1] for p in refiner.upper_pairs], axis=0) >= worst)


def test_epsilon_query_repeats_the_refinement_while_it_misses_the_target(monkeypatch):
    """An ε query of one round refines again (up to _QUERY_REFINES passes) while its bracket misses the
    one-round target: with 30 splits a pass, one pass leaves the coarse cover's bracket above 1e-4, more
    passes bring it below, and the bracket holds the worst case over every dataset (each dataset's own
    certified pair, all n/2 of them)."""
    import pldshuffle.worstcase.single_round as single_round

    n, eps0, delta = 2000, 0.3, 1e-6
    monkeypatch.setattr(wc_cover, "_QUERY_SPLITS", 30)
    passes: list[int] = []
    refine = wc_cover.QueryRefinement.refine

    def spy(self, epsilon, threshold):
        passes.append(refine(self, epsilon, threshold))
        return passes[-1]

    monkeypatch.setattr(wc_cover.QueryRefinement, "refine", spy)

    def bracket(refines: int) -> tuple[float, float]:
        monkeypatch.setattr(single_round, "_QUERY_REFINES", refines)
        passes.clear()
        b = ps.FourierAccountant(relative_gap_target=0.05).compose(ps.ShuffledBinaryRR(n, eps0)).get_epsilon_bounds(delta)
        return b.lower, b.upper

    lo1, up1 = bracket(1)
    assert passes == [30] and (up1 - lo1) / up1 > single_round.relative_target(1)
    lo, up = bracket(4)
    assert len(passes) > 1 and (up - lo) / up <= single_round.relative_target(1)
    pairs = [ps.ShuffledBinaryRR(n, eps0).dataset_pair(m) for m in range(n // 2)]
    bounds = np.array([p.delta_bounds(np.array([lo, up])) for p in pairs])  # (pair, lower/upper, ε)
    assert bounds[:, 1, 1].max() <= delta <= bounds[:, 0, 0].max()  # δ(up) ≤ δ ≤ δ(lo) for the worst dataset


def _refined_query(n: int, eps0: float, eps: float):
    acc = ps.FourierAccountant(relative_gap_target=0.05).compose(ps.ShuffledBinaryRR(n, eps0))
    refiner = acc.certified_pld().terms[0].refiner
    cells, before = len(refiner._cells), len(refiner.lower_pairs)
    return acc.get_delta_bounds(eps), refiner, cells, before


def test_query_refinement_keeps_only_the_largest_revealed_datasets(monkeypatch):
    """A query reveals the datasets of at most _KEPT_MEMBERS cells (revealing every split's held a third of a
    refined cover at n = 1e7); the bracket is the one revealing them all."""
    d, refiner, cells, before = _refined_query(1000, 0.5, 0.02)
    assert len(refiner._cells) > cells + wc_cover._KEPT_MEMBERS  # more datasets revealed than kept
    assert len(refiner.lower_pairs) <= before + wc_cover._KEPT_MEMBERS
    monkeypatch.setattr(wc_cover, "_KEPT_MEMBERS", 10**6)
    every, refiner, _, before = _refined_query(1000, 0.5, 0.02)
    assert len(refiner.lower_pairs) > before + 16
    assert (d.lower, d.upper) == (every.lower, every.upper)


@pytest.mark.slow
def test_refined_query_with_kept_datasets_brackets_the_exact_worst_case():
    n, eps0, eps = 1000, 0.5, 0.02
    members = [ref.pair_binary_rr(n, 1 / (math.exp(eps0) + 1), m) for m in range((n + 1) // 2)]
    d = _refined_query(n, eps0, eps)[0]
    assert d.lower <= ref.delta_ledger([("changing", members, 1)], eps) <= d.upper


def test_single_round_certified_pld_pickles_with_its_refined_pairs():
    import pickle

    acc = ps.FourierAccountant().compose(ps.ShuffledBinaryRR(300, 2.0))
    before = acc.get_epsilon_bounds(1e-6)
    copy = pickle.loads(pickle.dumps(acc.certified_pld()))
    assert tuple(copy.epsilon_bounds(1e-6)) == (before.lower, before.upper)


@pytest.mark.parametrize("n, eps0, rounds", [(20, 15.0, 64), (10, 30.0, 64), pytest.param(20, 4.0, 300, marks=pytest.mark.slow)])
@pytest.mark.parametrize("same_data", [False, True])
def test_losses_beyond_the_exponent_range_stay_bracketed(n, eps0, rounds, same_data):
    """The convex minorants of the adaptive blocks and of same-data blocks live in α = e^x: composed losses
    past ~709 overflowed e^x and the 'upper' bound came out as 709.79 for a ledger whose ε is 960 (below
    its own lower end, a realisable dataset pair's).  Independent check: basic composition of pure ε0-DP
    caps ε at rounds·ε0 (the float references of tests/reference.py overflow at these losses)."""
    delta = 1e-6
    acc = ps.FourierAccountant().compose(ps.ShuffledBinaryRR(n, eps0), rounds, same_data=same_data)
    b = acc.get_epsilon_bounds(delta)
    assert 700.0 < b.lower <= b.upper <= rounds * eps0 * (1 + 1e-12)
    assert acc.get_delta_bounds(b.upper).upper <= delta


@pytest.mark.parametrize("n, eps0", [(3, 1e-6), (40, 1e-4)])
def test_single_round_at_tiny_epsilon_stays_relative(n, eps0):
    """ε ~ 1e-6: the kept pairs' sweep once shifted ε by a global 2e-9 (gap 2e-3); it books the losses near ε
    in a slack instead, as the cached bounds do (2e-6).  Against the enumerated worst case."""
    members = [ref.pair_binary_rr(n, 1 / (math.exp(eps0) + 1), m) for m in range((n + 1) // 2)]
    b = ps.FourierAccountant().compose(ps.ShuffledBinaryRR(n, eps0)).get_epsilon_bounds(1e-9)
    exact = lambda eps: ref.delta_ledger([("changing", members, 1)], eps)  # noqa: E731
    assert exact(b.upper) <= 1e-9 < exact(b.lower)
    assert (b.upper - b.lower) / b.upper <= 1e-4


def test_mixed_ledger_pairs_each_entrys_heaviest_witness():
    """Three single rounds of 2RR worst cases (n = 30, 5000, 5000): each entry lists its witnesses in its own
    order, so pairing them by index had left the lower end at 11.186 (gap 2.1 %) while the datasets m = 0 of
    every entry reach 11.421 at δ = 1e-10.  Each tilt now also pairs every entry's heaviest-tailed witness."""
    entries = [ps.ShuffledBinaryRR(30, 5.02), ps.ShuffledBinaryRR(5000, 6.0), ps.ShuffledBinaryRR(5000, 4.14)]
    ledger, extremes = ps.FourierAccountant(), ps.FourierAccountant()
    for mechanism in entries:
        ledger = ledger.compose(mechanism, 1)
        extremes = extremes.compose(ps.PairMechanism(mechanism.dataset_pair(0)), 1)
    b, fixed = ledger.get_epsilon_bounds(1e-10), extremes.get_epsilon_bounds(1e-10)
    assert fixed.lower <= b.upper and b.lower <= b.upper <= b.lower * (1 + 1e-3), (b, fixed)


def _strategy_composites(pld) -> list:
    """The lower end's compositions of strategy witnesses: after the combinations and the products."""
    lowers = pld._composites("lower")
    return lowers[len(pld._combinations("lower")) + sum(isinstance(c, ps.pld.composites.ProductLower) for c in lowers) :]


@pytest.mark.parametrize("other, other_entry", [
    (ps.ShuffledKRR(4, 3, gamma=0.99, adversary="strong"), ("pair", [ref.pair_krr_strong(4, 3, 0.99)], 1)),
    (ps.ShuffledBinaryRR(3, 0.05), ("changing", [ref.pair_binary_rr(3, 1.0 / (math.exp(0.05) + 1.0), m) for m in range(3)], 1)),
])
def test_an_adaptive_block_keeps_its_adaptive_lower_end_beside_other_rounds(other, other_entry, monkeypatch):
    """A ledger of a worst case over datasets (one adaptive block) and another mechanism: the lower end
    multiplies the block's adaptive lower profile by the other rounds' tail masses
    (:class:`pldshuffle.pld.composites.ProductLower`), a strategy that adapts to the block's own outputs only, so
    it lies below the exact adaptive worst case in *either* order of the rounds; and above the fixed
    witnesses' composition, which gives up the adaptive gain (the other rounds here lose little: a product
    of a profile and a tail mass only gains where the other rounds' losses are concentrated)."""
    n, eps0, rounds = 4, 2.0, 2
    members = [ref.pair_binary_rr(n, 1.0 / (math.exp(eps0) + 1.0), m) for m in range(n)]
    # The strategy witnesses composed with the other rounds, built however small the gap (each alone a lower
    # end, checked one by one).
    monkeypatch.setattr(wc_mixed, "relative_target", lambda rounds: 0.0)
    pld = ps.FourierAccountant().compose(ps.ShuffledBinaryRR(n, eps0), rounds).compose(other, 1).certified_pld()
    products = [c for c in pld._composites("lower") if isinstance(c, ps.pld.composites.ProductLower)]
    assert products
    strategies = _strategy_composites(pld)
    assert strategies
    bounds = pld.delta_bounds(EPS)
    witnesses = np.max([c.lower(EPS) for c in pld._composites("lower") if not isinstance(c, ps.pld.composites.ProductLower)], axis=0)
    each = [c.lower(EPS) for c in strategies]
    gained = 0.0
    for i, (eps, lo, up, fixed) in enumerate(zip(EPS, *bounds, witnesses)):
        block_first = ref.delta_ledger_adaptive([("changing", members, rounds), other_entry], eps)
        block_last = ref.delta_ledger_adaptive([other_entry, ("changing", members, rounds)], eps)
        assert _close_below(lo, min(block_first, block_last)), (eps, lo, block_first, block_last)
        assert _close_above(up, max(block_first, block_last)), (eps, up, block_first, block_last)
        assert all(_close_below(values[i], min(block_first, block_last)) for values in each), (eps, [v[i] for v in each])
        gained = max(gained, lo - fixed)
    assert gained > 1e-2, gained


def test_a_strategy_witness_keeps_a_blocks_adaptive_gain_beside_a_spread_entry():
    """A 2RR worst case (n = 30, ε0 = 2.5, 4 rounds, one adaptive block) beside a round of another 2RR worst
    case: the other round's losses spread, so the product lower end (one point of the block's profile times
    the other's tail mass) gains little, and the fixed witnesses give up the block's adaptive gain (gap 5.9 ‰
    at δ = 1e-2 without strategy witnesses).  One strategy, aiming at the budget the other round leaves it,
    composed with the other's witness like a fixed pair, closes most of it (0.45 ‰).  Soundness against the
    exact adaptive worst case of both orders: the test above."""
    from pldshuffle.pld.inversion import invert

    pld = ps.FourierAccountant().compose(ps.ShuffledBinaryRR(30, 2.5), 4).compose(ps.ShuffledBinaryRR(300, 1.0), 1).certified_pld()
    lower, upper = pld.epsilon_bounds(1e-2)
    strategies = _strategy_composites(pld)
    assert strategies
    others = pld._composites("lower")[: -len(strategies)]
    without = invert(lambda e: np.max([c.lower(e) for c in others], axis=0), 1e-2, upper=False)
    assert (upper - without) / upper > 4e-3
    assert lower <= upper <= lower * (1 + 1e-3), (lower, upper, without)


def test_strategy_witnesses_beyond_their_work_cap_are_left_out(monkeypatch):
    """A block's strategy witnesses share a work cap (rounds × options × FFT length): past it no further
    witness is built, and the ledger is answered by the other lower ends."""
    monkeypatch.setattr(wc_mixed, "relative_target", lambda rounds: 0.0)  # built however small the gap
    monkeypatch.setattr(wc_witnesses, "_STRATEGY_WORK", 0.0)
    pld = ps.FourierAccountant().compose(ps.ShuffledBinaryRR(4, 2.0), 2).compose(ps.ShuffledBinaryRR(3, 0.05), 1).certified_pld()
    assert _strategy_composites(pld) == []
    lower, upper = pld.delta_bounds(EPS)
    assert np.all(lower <= upper)


def test_a_strategy_witness_over_the_memory_cap_is_left_out(monkeypatch):
    """The strategy witnesses' compositions are optional: over the memory cap they are left out and the
    ledger is still answered."""
    from pldshuffle.pld import CertifiedPLD, MemoryBudgetError

    composite = CertifiedPLD._composite

    def refuse(self, combo, *, upper, index=-1, plan=None):
        if plan is not None:
            raise MemoryBudgetError("over the cap")
        return composite(self, combo, upper=upper, index=index)

    monkeypatch.setattr(CertifiedPLD, "_composite", refuse)
    monkeypatch.setattr(wc_mixed, "relative_target", lambda rounds: 0.0)  # built however small the gap
    pld = ps.FourierAccountant().compose(ps.ShuffledBinaryRR(4, 2.0), 2).compose(ps.ShuffledBinaryRR(3, 0.05), 1).certified_pld()
    assert _strategy_composites(pld) == []
    lower, upper = pld.delta_bounds(EPS)
    assert np.all(lower <= upper)


def test_a_product_lower_end_over_the_memory_cap_is_left_out(monkeypatch):
    """The product lower end is optional: where its composition would exceed the memory cap the ledger is
    answered by the witnesses' composition alone, never refused."""
    from pldshuffle.pld import MemoryBudgetError
    from pldshuffle.worstcase.ledger import LedgerPLD

    def refuse(self, strategy, combo):
        raise MemoryBudgetError("over the cap")

    monkeypatch.setattr(LedgerPLD, "_product_lower", refuse)
    pld = ps.FourierAccountant().compose(ps.ShuffledBinaryRR(4, 2.0), 2).compose(ps.ShuffledBinaryRR(3, 0.05), 1).certified_pld()
    assert not any(isinstance(c, ps.pld.composites.ProductLower) for c in pld._composites("lower"))
    lower, upper = pld.delta_bounds(EPS)
    assert np.all(lower <= upper)


def test_the_product_lower_end_reads_tail_masses_below_the_exact_ones():
    """The other entries' tail masses ``P_W[L_W ≥ t]`` that the product lower end reads (from their witnesses
    rounded down, composed by FFT) lie below the exact ones, computed in exact arithmetic from the pair, and
    close to them (within the lattice step's shift)."""
    rounds = 2
    pld = ps.FourierAccountant().compose(ps.ShuffledBinaryRR(4, 2.0), 2).compose(
        ps.ShuffledKRR(4, 3, gamma=0.5, adversary="strong"), rounds).certified_pld()
    products = [c for c in pld._composites("lower") if isinstance(c, ps.pld.composites.ProductLower)]
    assert len(products) == 2
    pair = ref.compose(ref.pair_krr_strong(4, 3, 0.5), rounds)
    exact = []
    for flip in (False, True):
        atoms = [((q, p) if flip else (p, q)) for p, q in pair.values()]
        exact.append(lambda t, atoms=atoms: math.fsum(float(p) for p, q in atoms if p > 0 and (q == 0 or math.log(p / q) >= t)))
    t = np.linspace(-3.0, 3.0, 241)
    for product in products:
        tails = product.tail(t)
        matches = [all(lo <= tail(x) * (1 + 1e-12) + 1e-15 for lo, x in zip(tails, t)) for tail in exact]
        assert any(matches)
        tail = exact[matches.index(True)]
        assert all(lo >= tail(x + 0.05) - 1e-9 for lo, x in zip(tails, t))  # tight up to a small shift
