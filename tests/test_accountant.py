"""The Fourier accountant against the independent exact reference (tests/reference.py: no FFT, no grid)."""

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import pldshuffle as ps
from pldshuffle.pld.fft import available_backends
from reference import delta_adaptive, delta_exact, delta_heterogeneous, delta_ledger, epsilon_exact, pair_binary_rr

EPS = np.array([0.0, 0.05, 0.2, 0.5, 1.0, 2.0])
# The reference sums floats (math.fsum of positive terms): allow its rounding noise.
TOL = 1e-15


def _rr(n, eps0, dataset):
    return ps.ShuffledBinaryRR(n, eps0, dataset=dataset)


def _exact_2rr(n, eps0, eps, rounds, ms):
    p = 1.0 / (math.exp(eps0) + 1.0)
    return max(delta_exact(pair_binary_rr(n, p, m), eps, rounds) for m in ms)


@pytest.mark.parametrize("n, eps0, rounds", [(6, 1.0, 1), (6, 1.0, 2), (6, 1.0, 3), (9, 0.7, 1), (9, 0.7, 2), (12, 2.0, 1), (12, 2.0, 2)])
def test_binary_rr_worst_case_brackets_exact_composition(n, eps0, rounds):
    """Both settings against enumeration: data changing between rounds (default) and the same data."""
    p = 1.0 / (math.exp(eps0) + 1.0)
    members = [pair_binary_rr(n, p, m) for m in range(n)]
    mech = _rr(n, eps0, "worst")
    changing = ps.FourierAccountant().compose(mech, count=rounds).get_delta_bounds(EPS)
    same = ps.FourierAccountant().compose(mech, count=rounds, same_data=True).get_delta_bounds(EPS)
    for i, e in enumerate(EPS):
        # The default setting's worst case is adaptive (datasets and orders chosen after earlier outputs).
        exact_changing = delta_adaptive(members, rounds, float(e))
        exact_same = _exact_2rr(n, eps0, e, rounds, range(n))
        assert changing.lower[i] <= exact_changing + TOL and exact_changing <= changing.upper[i] + TOL
        assert same.lower[i] <= exact_same + TOL and exact_same <= same.upper[i] + TOL
        if exact_same > 1e-6:  # δ width where δ is material; the same-data block is tight
            assert same.upper[i] - same.lower[i] <= 2e-2 * exact_same
        if rounds == 1:  # one round: the envelope is the exact worst case
            assert changing.upper[i] - changing.lower[i] <= 1e-4 * exact_changing + 1e-12


@pytest.mark.parametrize("rounds", [1, 2, 4])
def test_binary_rr_khh21_pair_is_bracketed_and_labelled(rounds):
    bounds = ps.FourierAccountant().compose(_rr(10, 1.0, "khh21"), count=rounds).get_delta_bounds(EPS)
    assert not bounds.is_guarantee and "lower bound" in " ".join(bounds.caveats)
    for e, lo, up in zip(EPS, bounds.lower, bounds.upper):
        exact = _exact_2rr(10, 1.0, e, rounds, [0])
        assert lo <= exact + TOL and exact <= up + TOL


def test_epsilon_bounds_bracket_exact_inverse():
    for rounds in (1, 3):
        b = ps.FourierAccountant().compose(_rr(8, 1.0, "khh21"), count=rounds).get_epsilon_bounds(1e-3)
        exact = epsilon_exact(pair_binary_rr(8, 1.0 / (math.e + 1.0), 0), 1e-3, rounds)
        assert b.lower <= exact <= b.upper + 1e-12
        assert b.relative_gap <= 1e-3


def test_heterogeneous_composition_brackets_exact():
    a, b = _rr(7, 1.0, "khh21"), _rr(5, 0.5, "khh21")
    pa, pb = pair_binary_rr(7, 1 / (math.e + 1), 0), pair_binary_rr(5, 1 / (math.exp(0.5) + 1), 0)
    bounds = ps.FourierAccountant().compose(a, 2).compose(b, 1).get_delta_bounds(EPS)
    for e, lo, up in zip(EPS, bounds.lower, bounds.upper):
        exact = delta_heterogeneous([pa, pa, pb], e)
        assert lo <= exact + TOL and exact <= up + TOL


def test_repeated_compose_equals_single_call():
    mech = _rr(50, 1.0, "khh21")
    one = ps.FourierAccountant().compose(mech, 5).get_delta_bounds(EPS)
    two = ps.FourierAccountant().compose(mech, 2).compose(ps.ShuffledBinaryRR(50, 1.0, "khh21"), 3).get_delta_bounds(EPS)
    np.testing.assert_array_equal(one.upper, two.upper)
    np.testing.assert_array_equal(one.lower, two.lower)


pmf = st.lists(st.floats(0.01, 1.0), min_size=2, max_size=5)


@settings(max_examples=25, deadline=None)
@given(p=pmf, q=pmf, rounds=st.integers(1, 3), eps=st.floats(0.0, 2.0))
def test_user_pair_bracketed_property(p, q, rounds, eps):
    size = min(len(p), len(q))
    p = np.array(p[:size]) / sum(p[:size])
    q = np.array(q[:size]) / sum(q[:size])
    mech = ps.PairMechanism.from_probability_mass_functions(p, q)
    bounds = ps.FourierAccountant().compose(mech, rounds).get_delta_bounds(eps)
    exact = delta_exact({i: (float(p[i]), float(q[i])) for i in range(size)}, eps, rounds)
    # The reference sums floats: ~1e-17 of rounding (3 rounds of a pair an ulp apart: 6.9e-18 for 5.2e-18).
    assert 0.0 <= bounds.lower <= exact + 1e-15
    assert exact <= bounds.upper + 1e-15 and bounds.upper <= 1.0


def test_pair_an_ulp_apart_is_bracketed_exactly():
    """Masses an ulp apart: their loss (~2e-16) was computed as log p - log q = 0, so the lattice gave
    δ(0) = 0 below the exact 1.7e-18.  Exact δ(0) of the float inputs in rational arithmetic."""
    import itertools
    from fractions import Fraction

    p = np.array([1.0, 0.010000000000000002]) / 1.010000000000000002
    q = np.array([1.0, 0.01]) / 1.01
    mech = ps.PairMechanism.from_probability_mass_functions(p, q)
    for rounds in (1, 2, 3):
        exact = Fraction(0)
        for seq in itertools.product(range(2), repeat=rounds):
            a = b = Fraction(1)
            for i in seq:
                a, b = a * Fraction(float(p[i])), b * Fraction(float(q[i]))
            exact += max(a - b, Fraction(0))
        bounds = ps.FourierAccountant().compose(mech, rounds).get_delta_bounds(0.0)
        assert 0.0 <= bounds.lower <= exact <= bounds.upper and 0.0 < bounds.upper <= 1e-15, (rounds, bounds)


@settings(max_examples=15, deadline=None)
@given(n=st.integers(2, 40), eps0=st.floats(0.1, 3.0), rounds=st.integers(1, 6))
def test_monotone_and_in_range(n, eps0, rounds):
    acc = ps.FourierAccountant().compose(_rr(n, eps0, "khh21"), rounds)
    b = acc.get_delta_bounds(EPS)
    assert np.all(np.diff(b.upper) <= 1e-15) and np.all(np.diff(b.lower) <= 1e-15)
    assert np.all((0 <= b.lower) & (b.lower <= b.upper) & (b.upper <= 1))
    more = ps.FourierAccountant().compose(_rr(n, eps0, "khh21"), rounds + 1).get_delta_bounds(EPS)
    assert np.all(more.upper >= b.lower - 1e-15)


def test_fft_backends_agree_within_certified_width():
    mech = _rr(300, 1.0, "khh21")
    names = available_backends()
    res = [ps.FourierAccountant(fft_backend=name).compose(mech, 16).get_epsilon_bounds(1e-6) for name in names]
    for a in res:
        for b in res:
            assert a.lower <= b.upper
    assert [r.diagnostics["fft_backend"] for r in res] == list(names)
    # "auto" sends small windows to numpy.fft (no import cost); it agrees with the others.
    two = [
        ps.FourierAccountant(fft_backend=name, value_discretization_interval=1e-3).compose(mech, 2).get_epsilon_bounds(1e-6)
        for name in ("auto",) + names
    ]
    assert two[0].diagnostics["grid_size"] < 2**15 and two[0].diagnostics["fft_backend"] == "numpy"
    assert all(a.lower <= b.upper for a in two for b in two)


def test_fast_sizes_are_the_smallest_even_7_smooth_lengths():
    from pldshuffle.pld.fft import fast_size

    def smooth(n):
        for f in (2, 3, 5, 7):
            while n % f == 0:
                n //= f
        return n == 1

    for size in list(range(1, 3000)) + [65537, 123457, 10**6 + 1]:
        n = fast_size(size)
        assert n >= size and n % 2 == 0 and smooth(n)
        assert not any(m % 2 == 0 and smooth(m) for m in range(max(size, 2), n))


def test_width_target_and_diagnostics():
    b = ps.FourierAccountant().compose(_rr(1000, math.log(7), "khh21"), 64).get_epsilon_bounds(1e-6)
    # dp-accounting at dx=1e-4 brackets this value in [2.6641, 2.6705] (published values).
    assert b.lower <= 2.6705 and b.upper >= 2.6641
    assert b.relative_gap <= 1e-3
    for key in ("value_discretization_interval", "grid_size", "fft_backend", "wrap_around", "fft_rounding_error"):
        assert key in b.diagnostics


def test_infinite_epsilon_below_infinity_mass():
    mech = ps.PairMechanism.from_probability_mass_functions([0.5, 0.5], [1.0, 0.0])
    b = ps.FourierAccountant().compose(mech, 2).get_epsilon_bounds(0.5)
    assert b.upper == math.inf


def test_a_large_infinity_mass_does_not_size_the_lattice():
    """kRR strong, few users: the finite losses carry 0.6 of each round's mass, so after 64 rounds ε = ∞ for
    every δ < 1 - 2e-15.  The lattice is sized from the finite losses' own law (their total mass had pulled
    the ε estimate to 0 and the lattice to 8.4e6 points, 1.7 GB, 4.6 s); δ is still bracketed."""
    acc = ps.FourierAccountant().compose(ps.ShuffledKRR(100, 3, local_epsilon=4.7, adversary="strong"), 64)
    b = acc.get_epsilon_bounds(1e-15)
    assert b.lower == b.upper == math.inf
    assert b.diagnostics["grid_size"] <= 2**20, b.diagnostics
    d = acc.get_delta_bounds(1.0)
    assert 1.0 - 1e-12 <= d.lower <= d.upper <= 1.0


def test_ldp_views_cap_epsilon_at_rounds_times_local_epsilon():
    # Every view of shuffled 2RR (and of kRR for the weak adversary) post-processes the differing user's
    # ε0-LDP report, so ε ≤ rounds·ε0 at every δ: below the truncated mass booked at +∞ the upper end used to
    # be infinite, and near the cap loose (n = 1000, ε0 = 8, 5 rounds, δ = 1e-15: ≤ 40.334).
    for mech, rounds in ((ps.ShuffledBinaryRR(12, 1.0), 2), (ps.ShuffledBinaryRR(1000, 8.0), 5), (ps.ShuffledKRR(30, 3, local_epsilon=1.5, adversary="weak"), 3)):
        acc = ps.FourierAccountant().compose(mech, rounds)
        cap = rounds * mech.pair_family().max_loss
        assert acc.certified_pld().loss_cap == pytest.approx(cap)
        for delta in (1e-15, 1e-300):
            b = acc.get_epsilon_bounds(delta)
            assert b.lower <= b.upper <= cap
            assert acc.get_delta_bounds(b.upper).upper <= delta
        assert acc.get_delta_bounds(cap).upper == 0.0
    # Exact check on the small 2RR ledger: ε(δ) never reaches the cap, and the bracket contains it.
    p = 1.0 / (math.exp(1.0) + 1.0)
    members = [pair_binary_rr(12, p, m) for m in range(12)]
    b = ps.FourierAccountant().compose(ps.ShuffledBinaryRR(12, 1.0), 2).get_delta_bounds([1.9, 1.99])
    for e, low, up in zip((1.9, 1.99), b.lower, b.upper):
        exact = delta_adaptive(members, 2, e)
        assert low <= exact + TOL and exact <= up + TOL
    # The strong adversary sees the differing user's randomisation bit: no cap.
    strong = ps.FourierAccountant().compose(ps.ShuffledKRR(30, 3, local_epsilon=1.5, adversary="strong"), 3)
    assert strong.certified_pld().loss_cap == math.inf


def test_memory_refusal_names_the_knob():
    acc = ps.FourierAccountant(max_memory_bytes=10_000).compose(_rr(100, 1.0, "khh21"), 8)
    with pytest.raises(ValueError, match="value_discretization_interval"):
        acc.get_epsilon_bounds(1e-6)


@pytest.mark.parametrize(
    "call, match",
    [
        (lambda a: a.compose(_rr(10, 1.0, "worst"), 0), "count"),
        (lambda a: a.compose(_rr(10, 1.0, "worst"), 1.5), "count"),
        (lambda a: a.compose(_rr(10, 1.0, "worst"), True), "count"),
        (lambda a: a.compose("2rr", 1), "mechanism"),
        (lambda a: a.compose(ps.LabelledClonePair(100, 2.0, 0.2, 0.2)), r"mechanism .*LabelledClonePair is a reduction's pair.*ShuffledLDP"),
        (lambda a: a.compose(ps.PrivacyLossPair.from_probability_mass_functions([0.6, 0.4], [0.4, 0.6])), r"PairMechanism\(pair\)"),
        (lambda a: a.compose(_rr(10, 1.0, "worst")).get_epsilon_bounds(0.0), "target_delta"),
        (lambda a: a.compose(_rr(10, 1.0, "worst")).get_epsilon_bounds(1.0), "target_delta"),
        (lambda a: a.compose(_rr(10, 1.0, "worst")).get_delta_bounds(-0.1), "target_epsilon"),
        (lambda a: a.compose(_rr(10, 1.0, "worst")).get_delta_bounds(float("nan")), "target_epsilon"),
        (lambda a: a.get_epsilon(1e-6), "nothing composed"),
    ],
)
def test_bad_accountant_input(call, match):
    with pytest.raises((ValueError, TypeError), match=match):
        call(ps.FourierAccountant())


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"value_discretization_interval": 0.0}, "value_discretization_interval"),
        ({"value_discretization_interval": 1e300}, "value_discretization_interval must be a finite number > 0 and <= 100"),
        ({"fft_backend": "cuda"}, "fft_backend"),
        ({"tail_mass": 1.5}, "tail_mass"),
    ],
)
def test_bad_accountant_options(kwargs, match):
    with pytest.raises(ValueError, match=match):
        ps.FourierAccountant(**kwargs)


@pytest.mark.parametrize(
    "args, match",
    [
        ((1, 1.0), "num_users"),
        ((2.5, 1.0), "num_users"),
        ((10, 0.0), "local_epsilon"),
        ((10, float("inf")), "local_epsilon"),
        ((10, float("nan")), "local_epsilon"),
    ],
)
def test_bad_binary_rr_parameters(args, match):
    with pytest.raises((ValueError, TypeError), match=match):
        ps.ShuffledBinaryRR(*args)


def test_unknown_dataset_name():
    with pytest.raises(ValueError, match="dataset"):
        ps.ShuffledBinaryRR(10, 1.0, dataset="best")


@pytest.mark.parametrize("n, eps0, rounds", [(3, 1.5, 2), (4, 0.8, 2), (4, 2.0, 3), (5, 1.2, 2)])
def test_binary_rr_changing_data_covers_the_adaptive_worst_case(n, eps0, rounds):
    """The default setting must hold against an adversary choosing each round's dataset and order after
    seeing the earlier outputs (exact recursion, ``reference.delta_adaptive``), which gets strictly more than
    any fixed sequence of datasets for small n; the lower end stays at or below that adaptive worst case
    and, playing an adaptive strategy itself, rises above the fixed sequences."""
    p = 1.0 / (math.exp(eps0) + 1.0)
    members = [pair_binary_rr(n, p, m) for m in range(n)]
    bounds = ps.FourierAccountant().compose(_rr(n, eps0, "worst"), count=rounds).get_delta_bounds(EPS)
    gains, caught = [], []
    for i, e in enumerate(EPS):
        fixed = delta_ledger([("changing", members, rounds)], e)
        adaptive = delta_adaptive(members, rounds, float(e))
        assert fixed <= adaptive * (1 + 1e-12) + 1e-15
        assert adaptive <= bounds.upper[i] * (1 + 1e-12) + 1e-15, (e, adaptive, bounds.upper[i])
        assert bounds.lower[i] <= adaptive * (1 + 1e-12) + 1e-15, (e, bounds.lower[i], adaptive)
        gains.append(adaptive - fixed)
        caught.append(bounds.lower[i] - fixed)
    assert max(gains) > 1e-4  # the adaptive adversary's advantage is real here: the check can tell them apart
    # The lower end plays a realisable adaptive strategy too: it is above every fixed sequence somewhere.
    assert max(caught) > 0.5 * max(gains)


def test_a_single_rounds_query_reports_while_it_refines(monkeypatch):
    """One round of a worst case is answered on exact pairs, refining the cover at the queried point: at
    10^7 users that takes seconds per query, so it reports too (and only through the accountant's callback,
    in the same stages the build uses)."""
    from pldshuffle import _reporting

    monkeypatch.setattr(_reporting, "REPORT_SECONDS", 0.0)
    messages: list[str] = []
    acc = ps.FourierAccountant(progress=messages.append).compose(ps.ShuffledBinaryRR(10**5, 4.0))
    acc.certified_pld()
    built = len(messages)
    b = acc.get_epsilon_bounds(1e-3)
    queried = messages[built:]
    assert any(m.startswith("one round on exact pairs: refining the cover of datasets at ε = ") for m in queried)
    assert any(m.startswith("one round on exact pairs: bisection for ε over ") for m in queried)
    assert 0.0 < b.lower <= b.upper
    silent = ps.FourierAccountant().compose(ps.ShuffledBinaryRR(10**5, 4.0))  # no callback: nothing anywhere
    assert silent.get_epsilon_bounds(1e-3).upper == pytest.approx(b.upper, rel=1e-12)
    assert len(messages) == built + len(queried)


def test_progress_announces_each_stage_before_its_work(monkeypatch):
    """A family is announced before it is built (kRR weak at 1e6 users takes ~12 s to build), and a branch
    and bound over datasets and the adaptive recursions (upper and lower end, seconds each for few users)
    report while they run (every REPORT_SECONDS)."""
    from pldshuffle import _reporting

    monkeypatch.setattr(_reporting, "REPORT_SECONDS", 0.0)
    messages: list[str] = []
    mechanism = _rr(300, 1.0, "worst")
    real = type(mechanism).pair_family

    def pair_family(self, **kwargs):
        assert messages and messages[-1].startswith("building the neighbouring pairs of shuffled binary")
        return real(self, **kwargs)

    monkeypatch.setattr(type(mechanism), "pair_family", pair_family)
    ps.FourierAccountant(progress=messages.append).compose(mechanism, 4).get_epsilon_bounds(1e-6)
    stages = [m.split(" ")[0] for m in messages]
    assert stages.index("building") < stages.index("discretising") < stages.index("composing")
    assert any(m.startswith("branch and bound over datasets: ") for m in messages)
    assert any(m.startswith("bounding blocks of rounds adaptively") for m in messages)
    assert any(m.startswith("adaptive recursion, ") and m.endswith("100 %") for m in messages)
    assert any(m.startswith("adaptive lower end, ") and m.endswith("100 %") for m in messages)


def test_accountants_on_several_threads_answer_as_each_alone():
    """Ledgers composed on several threads at once (FFTW plans, row workers, caches) give the brackets each
    gives alone, to the last bit."""
    from concurrent.futures import ThreadPoolExecutor

    name = "pyfftw" if "pyfftw" in available_backends() else "scipy"
    ledgers = [(ps.ShuffledBinaryRR(30, 2.0), 3), (ps.ShuffledKRR(100, 4, local_epsilon=1.0, adversary="strong"), 5)]

    def bounds(ledger):
        mechanism, rounds = ledger
        acc = ps.FourierAccountant(fft_backend=name).compose(mechanism, rounds)
        return acc.get_epsilon_bounds(1e-6), tuple(acc.get_delta_bounds(0.5))

    alone = [bounds(ledger) for ledger in ledgers]
    with ThreadPoolExecutor(3) as pool:
        together = list(pool.map(bounds, ledgers * 2))
    assert together == alone * 2
