"""What the library promises a user in the two settings, checked against values computed independently.

* "Data may change between rounds" (the default): a worst case over datasets holds against an adversary that
  picks each round's dataset and order after seeing the earlier outputs.  ``to_dp_accounting`` must export a
  distribution that dominates that adaptive worst case (the old advice, the largest ε over dataset pairs each
  composed with itself, is the same-data value and understates it).
* "Same data": each ``compose(..., same_data=True)`` call is one block on one dataset; the data may change
  between calls, so two calls are two blocks, whatever the mechanisms' values.

The exact values come from enumeration (``reference.py``: every neighbouring dataset pair of shuffled binary
randomized response by brute force over all local outputs for n = 3, the exact adaptive recursions
``delta_adaptive`` / ``delta_ledger_adaptive``).  For n = 20 and 8 rounds exact enumeration is out of reach,
so the adaptive recursion is run on a grid with directed rounding (:func:`adaptive_epsilon_bracket`), which
brackets the exact value without FFT and without the library's lattice code.
"""

from __future__ import annotations

import doctest
import json
import itertools
import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import pldshuffle as ps
import reference as ref

EPS0 = 1.0
P_FLIP = 1.0 / (math.exp(EPS0) + 1.0)


# ------------------------------------------------------------------------------------ independent values
def brute_force_members(n: int, p: float) -> list[dict]:
    """Every neighbouring dataset pair (x, x') of shuffled binary RR on n users, by enumeration of all 2^n
    local outputs (``reference.brute_force_binary_rr``; orders are added by the recursions themselves)."""
    members = []
    for x in itertools.product((0, 1), repeat=n):
        for i in range(n):
            x_prime = x[:i] + (1 - x[i],) + x[i + 1:]
            members.append(ref.make_pair(*ref.brute_force_binary_rr(n, p, x, x_prime)))
    return members


def epsilon_of(delta_at, delta: float, hi: float, tol: float = 1e-9) -> float:
    """Smallest ε with ``delta_at(ε) <= delta`` by bisection on [0, hi] (δ(ε) continuous, non-increasing)."""
    if delta_at(0.0) <= delta:
        return 0.0
    lo = 0.0
    assert delta_at(hi) <= delta
    while hi - lo > tol:
        mid = 0.5 * (lo + hi)
        lo, hi = (lo, mid) if delta_at(mid) <= delta else (mid, hi)
    return hi


def adaptive_epsilon_bracket(options: list[tuple[np.ndarray, np.ndarray]], rounds: int, delta: float,
                             spacing: float = 2.0**-12) -> tuple[float, float]:
    """Bracket on the exact ε(δ) of ``rounds`` adaptively chosen rounds, each any of ``options``.

    ``options``: ``(P masses, finite losses log P/Q)`` per (dataset pair, order).  The exact value function
    ``G_0(x) = (1 - e^x)_+``, ``G_j(x) = max_option Σ_o P(o) G_{j-1}(x - ℓ(o))`` (``reference.delta_adaptive``)
    is non-increasing in x, so reading ``G_{j-1}`` at the grid point above ``x - ℓ`` gives a lower bound and
    at the grid point below an upper bound, round after round (the budget loses at most one spacing per
    round).  Grid ``x_i = -R·L + i·spacing`` (dyadic: exact in floats), L the largest |loss|; a point above
    the grid has ``G = 0`` exactly (the remaining losses cannot exceed it).  Cost O(R · options · outcomes ·
    R·L/spacing).  Returns ``(lower, upper)``: the largest grid ε certified to have δ(ε) > delta, and the
    smallest certified to have δ(ε) ≤ delta.
    """
    largest = max(float(np.max(np.abs(losses))) for _, losses in options)
    x0 = -math.ceil(rounds * largest)
    size = 2 * (-x0) * int(round(1 / spacing)) + 1
    x = x0 + spacing * np.arange(size)
    low = np.maximum(-np.expm1(x), 0.0)
    high = low.copy()
    margin = 1e-6  # index units: covers the float error of -ℓ/spacing, in the safe direction for each bound
    for _ in range(rounds):
        new_low, new_high = np.zeros(size), np.zeros(size)
        for masses, losses in options:
            acc_low, acc_high = np.zeros(size), np.zeros(size)
            for p, loss in zip(masses, losses):
                shift = -loss / spacing
                acc_low += p * _shifted(low, math.ceil(shift + margin), below=low[0], above=0.0)
                acc_high += p * _shifted(high, math.floor(shift - margin), below=1.0, above=high[-1])
            np.maximum(new_low, acc_low, out=new_low)
            np.maximum(new_high, acc_high, out=new_high)
        low, high = new_low, new_high
    above = np.flatnonzero((x >= 0) & (low > delta))
    below = np.flatnonzero((x >= 0) & (high <= delta))
    return (float(x[above[-1]]) if above.size else 0.0), float(x[below[0]])


def _shifted(values: np.ndarray, k: int, *, below: float, above: float) -> np.ndarray:
    """``values[i + k]`` for every i, with ``below``/``above`` outside the grid."""
    pad = abs(k)
    padded = np.concatenate([np.full(pad, below), values, np.full(pad, above)])
    return padded[pad + k: pad + k + values.size]


def grid_options(members: list[dict]) -> list[tuple[np.ndarray, np.ndarray]]:
    """Each member in both orders as ``(P masses, losses)`` (every outcome has P, Q > 0 here)."""
    out = []
    for pair in members:
        for candidate in (pair, ref.swap(pair)):
            p = np.array([float(a) for a, b in candidate.values()])
            q = np.array([float(b) for a, b in candidate.values()])
            assert np.all(p > 0) and np.all(q > 0)
            out.append((p, np.log(p / q)))
    return out


@pytest.fixture(scope="module")
def members3() -> list[dict]:
    return brute_force_members(3, P_FLIP)


def _exact_adaptive(members, rounds, delta):
    return epsilon_of(lambda e: ref.delta_adaptive(members, rounds, e), delta, hi=rounds * EPS0)


def _exact_blocks(members, blocks, delta):
    entries = [("same", members, count) for count in blocks]
    return epsilon_of(lambda e: ref.delta_ledger_adaptive(entries, e), delta, hi=sum(blocks) * EPS0)


def _exact_same_data(members, rounds, delta):
    return epsilon_of(lambda e: ref.delta_ledger([("same", members, rounds)], e), delta, hi=rounds * EPS0)


# ------------------------------------------------------------------------------------ 1. export
dp_accounting = pytest.importorskip("dp_accounting")
from pldshuffle.interop import to_dp_accounting  # noqa: E402  (needs dp_accounting)


def test_grid_bracket_contains_the_exact_adaptive_value(members3):
    """The grid recursion used for n = 20 brackets the exact enumeration where both run (n = 3)."""
    lower, upper = adaptive_epsilon_bracket(grid_options(members3), 3, 0.3)
    exact = _exact_adaptive(members3, 3, 0.3)
    assert lower <= exact <= upper
    assert upper - lower <= 4 * 3 * 2.0**-12


def test_export_of_a_worst_case_dominates_the_adaptive_adversary(members3):
    """2RR n = 3, ε0 = 1, 3 rounds, δ = 0.3: the exported ε is at least the exact adaptive worst case, and
    the exported δ(ε) is at least the exact one everywhere; the old recipe (largest same-data ε) is not."""
    exported = to_dp_accounting(ps.ShuffledBinaryRR(3, EPS0), count=3)
    exact = _exact_adaptive(members3, 3, 0.3)
    same_data = _exact_same_data(members3, 3, 0.3)
    assert same_data < exact - 0.05  # the check tells the two settings apart
    assert ref.delta_adaptive(members3, 3, same_data) > 0.3  # the old recipe's ε is not (ε, 0.3)-DP
    eps = exported.get_epsilon_for_delta(0.3)
    assert exact <= eps <= exact + 3e-3
    for e in (0.0, 0.2, same_data, exact, 0.7, 1.2, 2.5):
        assert exported.get_delta_for_epsilon(e) >= ref.delta_adaptive(members3, 3, e) - 1e-12, e


def test_same_data_export_is_named_and_holds_for_the_same_data(members3):
    """``same_data=True`` exports the tighter block bound: at least the exact same-data worst case, below the
    default export (which it must never replace silently)."""
    block = to_dp_accounting(ps.ShuffledBinaryRR(3, EPS0), count=3, same_data=True)
    default = to_dp_accounting(ps.ShuffledBinaryRR(3, EPS0), count=3)
    same_data = _exact_same_data(members3, 3, 0.3)
    eps = block.get_epsilon_for_delta(0.3)
    assert same_data <= eps <= same_data + 3e-3
    assert eps < default.get_epsilon_for_delta(0.3) - 0.05
    for e in (0.0, 0.3, same_data, 1.0):
        assert block.get_delta_for_epsilon(e) >= ref.delta_ledger([("same", members3, 3)], e) - 1e-12


@pytest.mark.slow  # ~10 s: the grid recursion over 2 × 20 options and 8 rounds
def test_export_n20_8_rounds_is_not_below_the_adaptive_worst_case():
    """2RR n = 20, ε0 = 1, 8 rounds, δ = 1e-3: the exported ε is at least a lower bound on the exact adaptive
    worst case (grid recursion with directed rounding), which the old recipe's same-data values fall below."""
    members = [ref.pair_binary_rr(20, P_FLIP, m) for m in range(20)]
    options = grid_options(members)
    lower, upper = adaptive_epsilon_bracket(options, 8, 1e-3)
    # The old recipe: the largest ε over dataset pairs, each on the same data in all 8 rounds (upper bounds).
    recipe = max(adaptive_epsilon_bracket([option], 8, 1e-3)[1] for option in options)
    assert recipe < lower
    exported = to_dp_accounting(ps.ShuffledBinaryRR(20, EPS0), count=8).get_epsilon_for_delta(1e-3)
    assert lower <= exported <= upper + 8 * 1e-4
    ours = ps.FourierAccountant().compose(ps.ShuffledBinaryRR(20, EPS0), 8).get_epsilon_bounds(1e-3)
    assert ours.lower <= upper and lower <= ours.upper


def test_ledger_export_stays_sound_with_blocks(members3):
    """``FourierAccountant.to_dp_accounting()`` of a ledger of two same-data blocks and of three rounds whose
    data may change dominates the exact worst case of each at every ε."""
    m = ps.ShuffledBinaryRR(3, EPS0)
    blocks = ps.FourierAccountant().compose(m, 2, same_data=True).compose(m, 2, same_data=True).to_dp_accounting()
    rounds = ps.FourierAccountant().compose(m, 3).to_dp_accounting()
    two_blocks = [("same", members3, 2)] * 2
    for e in (0.0, 0.3, 0.6, 0.8, 1.5, 3.0):
        assert blocks.get_delta_for_epsilon(e) >= ref.delta_ledger_adaptive(two_blocks, e) - 1e-12, e
        assert rounds.get_delta_for_epsilon(e) >= ref.delta_adaptive(members3, 3, e) - 1e-12, e


# ------------------------------------------------------------------------------------ 2. blocks
def _contains(bounds, exact, slack=1e-9):
    return bounds.lower - slack <= exact <= bounds.upper + slack


def test_one_round_same_data_calls_are_rounds_whose_data_may_change(members3):
    """Three ``compose(m, 1, same_data=True)`` calls are three rounds whose data may change (one round sees
    one dataset in either setting), not one 3-round same-data block."""
    m = ps.ShuffledBinaryRR(3, EPS0)
    acc = ps.FourierAccountant()
    for _ in range(3):
        acc.compose(m, 1, same_data=True)
    exact = _exact_adaptive(members3, 3, 0.3)
    bounds = acc.get_epsilon_bounds(0.3)
    assert _contains(bounds, exact)
    assert not _contains(bounds, _exact_same_data(members3, 3, 0.3))  # the old merge gave this one
    eps = np.array([0.0, 0.3, 0.6, 1.2])
    d = acc.get_delta_bounds(eps)
    for i, e in enumerate(eps):
        assert d.lower[i] - 1e-12 <= ref.delta_adaptive(members3, 3, float(e)) <= d.upper[i] + 1e-12


def test_two_same_data_calls_are_two_blocks(members3):
    """Two calls of 2 same-data rounds: the bracket holds the exact value of two same-data blocks (data may
    change between them, chosen adaptively), not that of one 4-round block; an ulp change of ε0 in the second
    call changes nothing."""
    m = ps.ShuffledBinaryRR(3, EPS0)
    exact = _exact_blocks(members3, [2, 2], 0.3)
    assert _exact_same_data(members3, 4, 0.3) < exact - 0.01  # one 4-round block: the old merge's setting
    equal = ps.FourierAccountant().compose(m, 2, same_data=True).compose(m, 2, same_data=True)
    ulp = ps.FourierAccountant().compose(m, 2, same_data=True).compose(
        ps.ShuffledBinaryRR(3, math.nextafter(EPS0, 2.0)), 2, same_data=True)
    a, b = equal.get_epsilon_bounds(0.3), ulp.get_epsilon_bounds(0.3)
    assert _contains(a, exact) and _contains(b, exact)
    # The upper ends agree (the blocks are bounded together, adaptively over blocks, whatever their
    # mechanisms); only blocks of one mechanism have the adaptive lower end over blocks (a realisable
    # strategy must pick each block's dataset among its own mechanism's), so the ulp change may lower it.
    assert math.isclose(a.upper, b.upper, rel_tol=1e-6) and a.lower >= b.lower
    assert [(n, same) for _, n, same in equal.entries] == [(2, True), (2, True)]
    assert sum("same-data block" in c for c in a.caveats) == 2
    eps = np.array([0.0, 0.4, 0.8, 1.6])
    d = equal.get_delta_bounds(eps)
    for i, e in enumerate(eps):
        assert d.lower[i] - 1e-12 <= ref.delta_ledger_adaptive([("same", members3, 2)] * 2, float(e)) <= d.upper[i] + 1e-12


@pytest.mark.parametrize("n, blocks, delta", [(3, [2, 2], 0.3), (3, [2, 2], 1e-3), (3, [2, 2, 2], 0.3), (4, [3, 3], 1e-3)])
def test_same_data_blocks_are_bounded_adaptively_over_blocks(n, blocks, delta):
    """Several same-data blocks of one mechanism: the bracket holds the exact adaptive worst case over blocks
    (each block's dataset chosen after the earlier blocks' outputs; enumeration) within 1e-3 relative, where
    composing each block's own envelope (n = 3, two blocks of 2, δ = 0.3: 0.798616) and fixed datasets
    (0.743209) had left 7 %."""
    m = ps.ShuffledBinaryRR(n, EPS0)
    members = brute_force_members(n, P_FLIP)
    exact = _exact_blocks(members, blocks, delta)
    acc = ps.FourierAccountant()
    for count in blocks:
        acc.compose(m, count, same_data=True)
    bounds = acc.get_epsilon_bounds(delta)
    assert _contains(bounds, exact)
    assert bounds.upper - bounds.lower <= 1e-3 * exact, (bounds, exact)
    assert sum("same-data block" in c for c in bounds.caveats) == len(blocks)


def test_blocks_of_different_mechanisms_bracket_the_exact_ledger():
    """Blocks of two mechanisms (2RR n = 3 at ε0 = 1 and 1.2) are bounded together with every step choosing
    among both mechanisms' blocks (sound for either order; here no tighter than their composed measures):
    the bracket holds the exact value, each block's dataset among its own mechanism's."""
    m1, m2 = ps.ShuffledBinaryRR(3, 1.0), ps.ShuffledBinaryRR(3, 1.2)
    entries = [("same", brute_force_members(3, P_FLIP), 2), ("same", brute_force_members(3, 1.0 / (math.exp(1.2) + 1.0)), 2)]
    exact = epsilon_of(lambda e: ref.delta_ledger_adaptive(entries, e), 0.3, hi=5.0)
    bounds = ps.FourierAccountant().compose(m1, 2, same_data=True).compose(m2, 2, same_data=True).get_epsilon_bounds(0.3)
    assert _contains(bounds, exact)


@pytest.mark.parametrize("calls", [[(2, True), (1, False), (2, True)], [(2, True), (2, False), (2, True)],
                                   [(2, True), (1, True), (2, True), (1, False)], [(2, True), (3, True), (2, True)]])
def test_blocks_beside_rounds_whose_data_may_change(calls, members3):
    """Same-data blocks beside rounds of the same mechanism whose data may change, or beside a block of another
    length: the bracket holds the exact adaptive worst case of the ledger (the blocks of 2 rounds are bounded
    together where the other entries are single rounds or blocks; beside 2 rounds whose data may change they
    keep their own measures)."""
    _check_calls((3, EPS0, calls))
    acc = ps.FourierAccountant()
    for count, same in calls:
        acc.compose(ps.ShuffledBinaryRR(3, EPS0), count, same_data=same)
    entries = [("same" if same else "changing", members3, count) for count, same in calls]
    exact = epsilon_of(lambda e: ref.delta_ledger_adaptive(entries, e), 0.3, hi=6.0)
    assert _contains(acc.get_epsilon_bounds(0.3), exact)


@pytest.mark.slow  # ~15 s: the grid recursion over 40 two-round blocks of 441 outcomes
@pytest.mark.parametrize("delta", [1e-3, 1e-6])
def test_two_blocks_n20_bracket_the_adaptive_worst_case_over_blocks(delta):
    """2RR n = 20, ε0 = 1, two same-data blocks of 2 rounds: the bracket meets the grid bracket of the exact
    adaptive worst case over blocks (options: every member's 2-fold composition in either order,
    ``reference.compose``), and its own relative gap is at most 1e-3."""
    members = [ref.compose(ref.pair_binary_rr(20, P_FLIP, m), 2) for m in range(20)]
    lower, upper = adaptive_epsilon_bracket(grid_options(members), 2, delta)
    m = ps.ShuffledBinaryRR(20, EPS0)
    bounds = ps.FourierAccountant().compose(m, 2, same_data=True).compose(m, 2, same_data=True).get_epsilon_bounds(delta)
    assert bounds.lower <= upper and lower <= bounds.upper
    assert bounds.upper - bounds.lower <= 1e-3 * bounds.upper


def test_composed_witness_is_below_the_exact_composition():
    """A block witness's composition (a sub-pair for lower bounds) brackets the exact 3-fold composition
    (``reference.delta_directions``) in each direction at every ε within a relative 1e-9, its losses' error
    covering the three rounds'; with coarse bins it stays below it (merging is a post-processing)."""
    from pldshuffle.worstcase.same_data import _composed_pair

    for m in range(5):
        member = ref.pair_binary_rr(5, P_FLIP, m)
        P, Q = ref.split_pair(member)
        keys = sorted(P)
        pair = ps.PrivacyLossPair.from_probability_mass_functions([float(P[k]) for k in keys], [float(Q[k]) for k in keys])
        composed = _composed_pair(pair, 3, 1e-12)  # bins far below the losses' gaps: the exact composition
        assert composed is not None and composed.forward.loss_error >= 3 * pair.forward.loss_error
        for e in (0.0, 0.5, 1.0, 2.0):
            exact = [float(v) for v in ref.delta_directions(member, e, rounds=3)]
            for d, x in zip((composed.forward, composed.backward or composed.forward), exact):
                low, high = (float(v[0]) for v in d.hockey_stick_bounds([e]))
                assert low <= x * (1 + 1e-12) + 1e-15 <= high * (1 + 2e-12) + 2e-15, (m, e, low, x, high)
                assert high - low <= 1e-9 * x + 1e-15
        coarse = _composed_pair(pair, 3, 0.3)
        for e in (0.0, 0.5, 1.0, 2.0):
            exact = [float(v) for v in ref.delta_directions(member, e, rounds=3)]
            for d, x in zip((coarse.forward, coarse.backward or coarse.forward), exact):
                assert 0.0 < float(d.hockey_stick_bounds([e])[0][0]) <= x * (1 + 1e-12) + 1e-15, (m, e, x)


@st.composite
def _calls_of_one_mechanism(draw):
    """2-3 compose calls of ONE mechanism (2RR, n = 3 or 4), each 1-2 rounds in either setting (≤ 4 rounds)."""
    n, eps0 = draw(st.integers(3, 4)), draw(st.floats(0.3, 2.0))
    calls = draw(st.lists(st.tuples(st.integers(1, 2), st.booleans()), min_size=2, max_size=3)
                 .filter(lambda c: sum(k for k, _ in c) <= 4))
    return n, eps0, calls


def _check_calls(case):
    n, eps0, calls = case
    mechanism = ps.ShuffledBinaryRR(n, eps0)
    members = [ref.pair_binary_rr(n, 1.0 / (math.exp(eps0) + 1.0), m) for m in range(n)]
    acc = ps.FourierAccountant()
    for count, same in calls:
        acc.compose(mechanism, count, same_data=same)
    # Each call its own entry, in order: a same-data call one block on one dataset, any other call rounds
    # whose data may change; every choice made after seeing the earlier outputs.
    entries = [("same" if same else "changing", members, count) for count, same in calls]
    eps = np.array([0.0, 0.2, 0.6, 1.5])
    d = acc.get_delta_bounds(eps)
    for i, e in enumerate(eps):
        exact = ref.delta_ledger_adaptive(entries, float(e))
        assert d.lower[i] <= exact * (1 + 1e-12) + 1e-14, (calls, e, d.lower[i], exact)
        assert exact <= d.upper[i] * (1 + 1e-12) + 1e-14, (calls, e, d.upper[i], exact)


@settings(max_examples=4, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=_calls_of_one_mechanism())
def test_calls_of_an_equal_mechanism_bracket_the_exact_ledger(case):
    """Repeated calls of one mechanism in either setting bracket the exact adaptive worst case of the calls
    taken one by one (where merging same-data calls understated it)."""
    _check_calls(case)


@pytest.mark.slow
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=_calls_of_one_mechanism())
def test_many_calls_of_an_equal_mechanism_bracket_the_exact_ledger(case):
    _check_calls(case)


def test_default_rounds_of_equal_mechanisms_still_merge():
    """In the default setting equal-by-value mechanisms merge (sound: their rounds compose alike), and a
    same-data block stays apart from them."""
    acc = ps.FourierAccountant().compose(ps.ShuffledBinaryRR(3, EPS0), 1).compose(ps.ShuffledBinaryRR(3, 1.0), 2)
    assert [(n, same) for _, n, same in acc.entries] == [(3, False)]
    assert acc.ledger == ((ps.ShuffledBinaryRR(3, EPS0), 3),)
    one = ps.FourierAccountant().compose(ps.ShuffledBinaryRR(3, EPS0), 3).get_epsilon_bounds(0.3)
    merged = acc.get_epsilon_bounds(0.3)
    assert (merged.lower, merged.upper) == (one.lower, one.upper)
    acc.compose(ps.ShuffledBinaryRR(3, EPS0), 2, same_data=True)
    assert [(n, same) for _, n, same in acc.entries] == [(3, False), (2, True)]
    assert acc.rounds == 5


def test_documented_examples_run():
    import pldshuffle.interop as interop

    assert doctest.testmod(interop).failed == 0
    finder = doctest.DocTestFinder()
    for test in finder.find(ps.FourierAccountant.compose, "compose", globs={}):
        assert doctest.DocTestRunner().run(test).failed == 0


# ------------------------------------------------------------------------------------ 2b. the command line
BLOCK = "binary-rr:num_users=3,local_epsilon=1:count=2:same_data=true"


def _cli_json(argv, capsys):
    from pldshuffle.cli import main

    assert main([*argv, "--json", "--quiet"]) == 0, capsys.readouterr().err
    return json.loads(capsys.readouterr().out)


def test_cli_compose_and_spec_express_same_data_blocks(tmp_path, capsys):
    """``--compose ...:same_data=true`` twice is two blocks, like two ``compose(..., same_data=True)`` calls;
    the JSON record marks them and reads back through ``--spec`` to the same answer."""
    m = ps.ShuffledBinaryRR(3, EPS0)
    api = ps.FourierAccountant().compose(m, 2, same_data=True).compose(m, 2, same_data=True).get_epsilon_bounds(0.3)
    first = _cli_json(["epsilon", "--compose", BLOCK, "--compose", BLOCK, "--delta", "0.3"], capsys)
    assert (first["lower"], first["upper"]) == (api.lower, api.upper)
    assert [(e["count"], e["same_data"]) for e in first["mechanisms"]] == [(2, True), (2, True)]
    spec = tmp_path / "spec.json"
    spec.write_text(json.dumps(first))
    second = _cli_json(["epsilon", "--spec", str(spec), "--delta", "0.3"], capsys)
    assert (second["lower"], second["upper"]) == (api.lower, api.upper)
    # same_data=false (and the default) is the setting where the data may change: no "same_data" key.
    default = _cli_json(["epsilon", "--compose", BLOCK.replace("true", "False"), "--delta", "0.3"], capsys)
    plain = ps.FourierAccountant().compose(m, 2).get_epsilon_bounds(0.3)
    assert (default["lower"], default["upper"]) == (plain.lower, plain.upper)
    assert "same_data" not in default["mechanisms"][0]


def test_cli_statement_names_the_blocks(capsys):
    from pldshuffle.cli import main

    assert main(["epsilon", "--compose", BLOCK, "--compose", BLOCK, "--delta", "0.3", "--quiet"]) == 0
    out = capsys.readouterr().out
    assert out.count("rounds of this mechanism: 2 (one block on the same dataset)") == 2
    assert "same-data block 1" in out and "same-data block 2" in out


@pytest.mark.parametrize(
    "argv, needle",
    [
        (["--compose", BLOCK.replace("true", "yes")], "same_data must be true or false, got 'yes'"),
        (["--compose", BLOCK.replace("same_data=true", "same_data")], "the last field must be same_data=true"),
        (["--compose", BLOCK + ":extra"], "KIND:KEY=VALUE"),
        (["--spec", "SPEC"], "entry 0: \"same_data\" must be true or false, got 'yes'"),
    ],
)
def test_cli_refuses_bad_same_data(argv, needle, tmp_path, capsys):
    from pldshuffle.cli import main

    spec = tmp_path / "spec.json"
    spec.write_text(json.dumps([{"mechanism": "binary-rr", "parameters": {"num_users": 3, "local_epsilon": 1},
                                 "count": 2, "same_data": "yes"}]))
    argv = [str(spec) if a == "SPEC" else a for a in argv]
    assert main(["epsilon", *argv, "--delta", "0.3"]) == 2
    err = capsys.readouterr().err
    assert needle in err and err.startswith("pldshuffle: error:") and err.count("\n") == 1
