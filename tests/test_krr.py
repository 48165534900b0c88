"""Tests of the shuffled k-ary randomized response pairs (docs/mathematics.md#pairs; pldshuffle.mechanisms.krr).

The exact values are checked against the independent reference of ``tests/reference.py`` (generative
enumeration of the pairs, no grid), the published numbers of the papers, and the
theorems relating the adversaries (each view is a post-processing of the next).
"""

from __future__ import annotations

import dataclasses
import math
import time

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

import reference as ref
import pldshuffle as ps
from pldshuffle.mechanisms import ShuffledKRR
from scipy import stats

from pldshuffle.mechanisms._binomial import binomial_logpmf, binomial_window, binomial_windows
from pldshuffle.pld import SUM_RTOL

ADVERSARIES = ("weak", "strong", "khh21", "histogram")
REFERENCE_PAIRS = {
    "strong": ref.pair_krr_strong,
    "khh21": ref.pair_krr_strong_khh21,
    "weak": ref.pair_krr_weak,
    "histogram": ref.pair_krr_hist,
}
#: Truncated coordinates per pair: (c, x) for strong/khh21, (u, c, x) for weak/histogram.
COORDINATES = {"strong": 2, "khh21": 2, "weak": 3, "histogram": 3}
EPSILONS = (0.0, 0.05, 0.3, 1.0, 2.5)


def width_allowance(exact: float, eps: float, direction) -> float:
    """1e-9 relative, plus the absolute slack LossDistribution books near ε, ``(SUM_RTOL + 8u·S)(1 + ε)`` for
    S support points and the losses' error bound (times a mass ≤ 1), once on each end of the bracket (n=6,
    k=2, γ=0.996, ε=0 has width 2.26e-12 against 2.23e-12 counted once; n=3, k=2, γ=0.99999 needs the 8u·S
    term)."""
    rounding = (SUM_RTOL + 8.0 * 2.0**-53 * direction.losses.size) * (1.0 + eps)
    return 1e-9 * exact + 2.0 * (rounding + direction.loss_error) + 1e-15


def forward(mechanism: ShuffledKRR, **kwargs):
    return mechanism.pair_family(**kwargs).upper[0].forward


def epsilon_upper(pair, delta: float) -> float:
    """Smallest ε with the certified upper δ(ε) <= delta, by bisection (δ is non-increasing)."""
    lo, hi = 0.0, 20.0
    for _ in range(60):
        mid = 0.5 * (lo + hi)
        if pair.delta_bounds(mid)[1][0] <= delta:
            hi = mid
        else:
            lo = mid
    return hi


# ------------------------------------------------------------------------------ parameters


@pytest.mark.parametrize(
    ("args", "kwargs", "error", "name"),
    [
        ((1, 4), {"gamma": 0.5}, ValueError, "num_users"),
        ((2.5, 4), {"gamma": 0.5}, ValueError, "num_users"),
        (("10", 4), {"gamma": 0.5}, TypeError, "num_users"),
        ((True, 4), {"gamma": 0.5}, TypeError, "num_users"),
        ((10, 1), {"gamma": 0.5}, ValueError, "domain_size"),
        ((10, 3.5), {"gamma": 0.5}, ValueError, "domain_size"),
        ((10, 4), {"gamma": 0.0}, ValueError, "gamma"),
        ((10, 4), {"gamma": -0.1}, ValueError, "gamma"),
        ((10, 4), {"gamma": 1.5}, ValueError, "gamma"),
        ((10, 4), {"gamma": math.nan}, ValueError, "gamma"),
        ((10, 4), {"gamma": "0.5"}, TypeError, "gamma"),
        ((10, 4), {"local_epsilon": 0.0}, ValueError, "local_epsilon"),
        ((10, 4), {"local_epsilon": -1.0}, ValueError, "local_epsilon"),
        ((10, 4), {"local_epsilon": math.nan}, ValueError, "local_epsilon"),
        ((10, 4), {"local_epsilon": math.inf}, ValueError, "local_epsilon"),
        ((10, 4), {"local_epsilon": 300.0}, ValueError, "local_epsilon"),
        ((10, 4), {"gamma": 0.5, "local_epsilon": 1.0}, ValueError, "exactly one of gamma"),
        ((10, 4), {}, ValueError, "exactly one of gamma"),
        ((10, 4), {"gamma": 0.5, "adversary": "medium"}, ValueError, "adversary"),
        ((10, 2), {"gamma": 0.5, "adversary": "histogram"}, ValueError, "domain_size >= 3"),
    ],
)
def test_invalid_parameters_are_named(args, kwargs, error, name):
    with pytest.raises(error, match=name):
        ShuffledKRR(*args, **kwargs)


def test_gamma_and_local_epsilon_are_keyword_only():
    with pytest.raises(TypeError):
        ShuffledKRR(10, 4, 0.5)  # type: ignore[misc]


@pytest.mark.parametrize("tail_mass", [0.0, 1.0, -1e-3, math.nan])
def test_invalid_tail_mass_is_named(tail_mass):
    with pytest.raises(ValueError, match="tail_mass"):
        ShuffledKRR(10, 4, gamma=0.5).pair_family(tail_mass=tail_mass)


@pytest.mark.parametrize(("k", "gamma", "exp_eps0"), [(4, 0.25, 13.0), (5, 0.1, 46.0), (2, 0.5, 3.0), (10, 1.0, 1.0)])
def test_gamma_epsilon0_conversion(k, gamma, exp_eps0):
    # γ = k / (e^{ε0} + k - 1)  <=>  ε0 = log(1 + k(1-γ)/γ)  (BBGN19 Lemma 5.1).
    by_gamma = ShuffledKRR(100, k, gamma=gamma)
    assert by_gamma.gamma == gamma and by_gamma.local_epsilon is None
    assert by_gamma.blanket_probability == gamma
    assert by_gamma.epsilon0 == pytest.approx(math.log(exp_eps0), rel=1e-14, abs=1e-300)
    if exp_eps0 > 1.0:
        by_eps = ShuffledKRR(100, k, local_epsilon=math.log(exp_eps0))
        assert by_eps.epsilon0 == math.log(exp_eps0)
        assert by_eps.blanket_probability == pytest.approx(gamma, rel=1e-14)


@settings(max_examples=50, deadline=None)
@given(k=st.integers(2, 1000), eps0=st.floats(1e-8, 200.0))
def test_conversion_round_trip(k, eps0):
    gamma = ShuffledKRR(10, k, local_epsilon=eps0).blanket_probability
    assert 0.0 < gamma <= 1.0
    # γ is a float: near γ = 1 (ε0 ≪ 1) a rounding of log γ moves 1 - γ ≈ ε0/k by about u·log(k)/(1 - γ)
    # relative, and ε0 with it (k = 1000, ε0 = 6.1e-5: 1.7e-8).
    tolerance = 1e-9 + 1e-15 * k * (1.0 + math.log(k)) / eps0
    assert ShuffledKRR(10, k, gamma=gamma).epsilon0 == pytest.approx(eps0, rel=tolerance)


def test_frozen_hashable_and_normalised():
    a = ShuffledKRR(1000, 4, gamma=0.25, adversary="strong")
    b = ShuffledKRR(1e3, 4.0, gamma=0.25, adversary="strong")
    assert a == b and hash(a) == hash(b) and isinstance(b.num_users, int)
    assert a != ShuffledKRR(1000, 4, gamma=0.25, adversary="weak")
    with pytest.raises(dataclasses.FrozenInstanceError):
        a.num_users = 10  # type: ignore[misc]
    assert ShuffledKRR(10, 4, gamma=0.5).adversary == "weak"


@pytest.mark.parametrize("adversary", ADVERSARIES)
def test_describe_is_one_informative_line(adversary):
    text = ShuffledKRR(1000, 4, gamma=0.25, adversary=adversary).describe()
    assert "\n" not in text
    for part in ("n=1000", "k=4", "gamma=0.25", "epsilon0=2.56495", "replace-one"):
        assert part in text
    expected = {"weak": "weak adversary", "strong": "strong adversary", "khh21": "KHH21", "histogram": "LOWER bound"}
    assert expected[adversary] in text


def test_family_flags_and_caveats():
    for adversary in ADVERSARIES:
        family = ShuffledKRR(30, 4, gamma=0.3, adversary=adversary).pair_family()
        # histogram: the worst of two dataset pairs, (1,3..3) vs (2,3..3) and (1,1..1) vs (2,1..1)
        assert family.upper == family.lower and len(family.upper) == (2 if adversary == "histogram" else 1)
        assert family.upper[0].backward is None  # symmetric pair
        assert family.is_guarantee == (adversary != "histogram")
    hist = ShuffledKRR(30, 4, gamma=0.3, adversary="histogram").pair_family()
    assert any("LOWER bound" in c and "not a guarantee" in c for c in hist.caveats)
    khh = ShuffledKRR(30, 4, gamma=0.3, adversary="khh21").pair_family()
    assert any("figure code" in c and "looser" in c for c in khh.caveats)
    assert ShuffledKRR(30, 4, gamma=0.3, adversary="strong").pair_family().caveats == ()


# ------------------------------------------------------------------------------ mass accounting


@pytest.mark.parametrize("adversary", ADVERSARIES)
@pytest.mark.parametrize(
    ("n", "k", "gamma", "tail_mass"),
    [
        (2, 3, 0.3, 1e-18),
        (50, 3, 1.0, 1e-18),
        (300, 4, 0.25, 1e-18),
        (300, 4, 0.25, 1e-2),  # large tails exercise the exact dropped-mass formulas
        (200, 10, 0.05, 1e-6),
        (150, 5, 0.9, 1e-3),
        (100, 3, 1e-9, 1e-18),  # ε0 ≈ 21.4: huge tilts
    ],
)
def test_total_mass_and_truncation_budget(adversary, n, k, gamma, tail_mass):
    dist = forward(ShuffledKRR(n, k, gamma=gamma, adversary=adversary), tail_mass=tail_mass)
    total = math.fsum(dist.masses) + dist.infinity_mass + dist.truncated_mass
    assert total == pytest.approx(1.0, abs=1e-12)
    assert dist.truncated_mass <= COORDINATES[adversary] * tail_mass * (1 + 1e-9) + 1e-300
    # Sanity identity (docs/mathematics.md#definitions): Σ ω e^{-s} = Q({P > 0}) <= 1; for these symmetric pairs it is
    # 1 - δ_∞ up to the dropped mass.
    tilted = math.fsum(dist.masses * np.exp(-dist.losses))
    assert tilted <= 1.0 + 1e-12
    if tail_mass < 1e-12:
        assert tilted == pytest.approx(1.0 - dist.infinity_mass, abs=1e-12)


@pytest.mark.parametrize("adversary", ["strong", "khh21"])
@pytest.mark.parametrize(("n", "k", "gamma"), [(2, 2, 0.5), (6, 4, 0.3), (40, 3, 0.2)])
def test_strong_infinity_mass_closed_form(adversary, n, k, gamma):
    # δ_∞ = (1-γ)(1-g)^{n-1} (strong), (1-g)^{n-1} (khh21): P-mass of M2 = 0 (docs/mathematics.md#pairs).
    dist = forward(ShuffledKRR(n, k, gamma=gamma, adversary=adversary))
    weight = 1 - gamma if adversary == "strong" else 1.0
    assert dist.infinity_mass == pytest.approx(weight * (1 - gamma / k) ** (n - 1), rel=1e-12)
    assert dist.truncated_mass < 1e-17


def test_weak_and_histogram_have_no_infinite_loss():
    for adversary in ("weak", "histogram"):
        assert forward(ShuffledKRR(40, 4, gamma=0.2, adversary=adversary)).infinity_mass == 0.0


@pytest.mark.parametrize("eps0", [0.01, 0.5])
def test_strong_adversary_is_not_capped_by_local_epsilon(eps0):
    """The strong adversary sees the victim's randomisation bit: exact δ(ε0) is far above 0 (reference
    enumeration), so its ε(δ) exceeds ε0, while the weak adversary's view is capped by ε0 (docstring, Notes)."""
    n, k = 20, 4
    gamma = k / (math.exp(eps0) + k - 1)
    exact_strong = ref.delta_exact(ref.pair_krr_strong(n, k, gamma), eps0)
    assert exact_strong > 1e-4
    strong = ps.FourierAccountant().compose(ShuffledKRR(n, k, local_epsilon=eps0, adversary="strong"))
    assert strong.get_delta_bounds(eps0).lower > 0.5 * exact_strong
    assert strong.get_epsilon_bounds(exact_strong / 2).lower > eps0
    weak = ps.FourierAccountant().compose(ShuffledKRR(n, k, local_epsilon=eps0, adversary="weak"))
    assert weak.get_epsilon_bounds(exact_strong / 2).upper <= eps0


# ------------------------------------------------------------------------------ exact values


@pytest.mark.parametrize("adversary", ADVERSARIES)
def test_delta_bracketed_by_reference_enumeration(adversary):
    """lower <= exact <= upper with a width of 1e-9 relative, against tests/reference.py (n <= 6)."""
    for n in (2, 3, 5, 6):
        for k in (2, 3, 4):
            if adversary == "histogram" and k < 3:
                continue
            for gamma in (0.1, 0.45, 1.0):
                pair = ShuffledKRR(n, k, gamma=gamma, adversary=adversary).pair_family().upper[0]
                exact_pair = REFERENCE_PAIRS[adversary](n, k, gamma)
                lower, upper = pair.delta_bounds(np.array(EPSILONS))
                for eps, lo, up in zip(EPSILONS, lower, upper):
                    exact = ref.delta_exact(exact_pair, eps)
                    assert lo <= exact <= up, (n, k, gamma, eps, lo, exact, up)
                    assert up - lo <= width_allowance(exact, eps, pair.forward), (n, k, gamma, eps, lo, up)


@settings(max_examples=25, deadline=None)
@given(
    adversary=st.sampled_from(ADVERSARIES),
    n=st.integers(2, 12),
    k=st.integers(2, 5),
    gamma=st.floats(0.01, 1.0),
    eps=st.floats(0.0, 4.0),
)
@example(adversary="strong", n=6, k=2, gamma=0.99609375, eps=0.0)  # the width counts the slack on both ends
@example(adversary="strong", n=3, k=2, gamma=0.99999, eps=0.0)  # ... and its per-point rounding term
def test_delta_matches_reference_property(adversary, n, k, gamma, eps):
    if adversary == "histogram" and k < 3:
        k = 3
    pair = ShuffledKRR(n, k, gamma=gamma, adversary=adversary).pair_family().upper[0]
    lo, up = pair.delta_bounds(eps)
    exact = ref.delta_exact(REFERENCE_PAIRS[adversary](n, k, gamma), eps)
    assert lo[0] <= exact <= up[0]
    assert up[0] - lo[0] <= width_allowance(exact, eps, pair.forward)


@pytest.mark.parametrize(
    ("n", "k", "gamma"), [(20, 3, 0.1), (20, 5, 0.5), (200, 4, 0.25), (200, 3, 0.1), (200, 5, 0.5)]
)
def test_adversary_chain(n, k, gamma):
    """δ_hist <= δ_weak <= δ_strong <= δ_khh21 (each view is a post-processing of the next), and
    δ_strong = (1-γ) δ_khh21 in one round (the γ atom sits at loss 0)."""
    eps = np.array([0.0, 0.1, 0.3, 0.6, 1.0, 2.0])
    mids = {}
    for adversary in ADVERSARIES:
        lo, up = ShuffledKRR(n, k, gamma=gamma, adversary=adversary).pair_family().upper[0].delta_bounds(eps)
        mids[adversary] = 0.5 * (lo + up)
    slack = 1e-9 * mids["khh21"] + 1e-15
    assert np.all(mids["histogram"] <= mids["weak"] + slack)
    assert np.all(mids["weak"] <= mids["strong"] + slack)
    assert np.all(mids["strong"] <= mids["khh21"] + slack)
    np.testing.assert_allclose(mids["strong"], (1 - gamma) * mids["khh21"], rtol=1e-9, atol=1e-15)


def test_chain_for_binary_domain():
    eps = np.array([0.0, 0.2, 0.5, 1.0])
    d = {
        a: ShuffledKRR(100, 2, gamma=0.2, adversary=a).pair_family().upper[0].delta_bounds(eps)[1]
        for a in ("weak", "strong", "khh21")
    }
    assert np.all(d["weak"] <= d["strong"] * (1 + 1e-9)) and np.all(d["strong"] <= d["khh21"] * (1 + 1e-9))


def test_khh21_figure_anchor():
    """n=1000, k=4, γ=0.25, one round: KHH21's stored strong-adversary values."""
    pair = ShuffledKRR(1000, 4, gamma=0.25, adversary="khh21").pair_family().upper[0]
    assert epsilon_upper(pair, 1e-4) == pytest.approx(0.54733, abs=1e-4)
    assert epsilon_upper(pair, 1e-7) == pytest.approx(0.89029, abs=1e-4)


@pytest.mark.parametrize(
    ("n", "k", "gamma", "adversary", "eps", "delta", "rel"),
    [
        (1000, 4, 0.25, "strong", 0.5, 1.68e-4, 5e-3),  # docs/mathematics.md#pairs (values printed to 2-3 digits)
        (1000, 4, 0.1, "histogram", 0.5, 3.50e-3, 2e-3),  # docs/mathematics.md#pairs
        (1000, 4, 0.1, "histogram", 0.75, 2.89e-4, 2e-3),
        (100, 10, 0.1, "histogram", 0.3, 0.419, 2e-3),
        (1000, 2, 0.1, "weak", 0.5, 2.4e-4, 2e-2),  # docs/mathematics.md#pairs
    ],
)
def test_published_spec_values(n, k, gamma, adversary, eps, delta, rel):
    _, up = ShuffledKRR(n, k, gamma=gamma, adversary=adversary).pair_family().upper[0].delta_bounds(eps)
    assert up[0] == pytest.approx(delta, rel=rel)


# ------------------------------------------------------------------------------ numerics and limits


def test_binomial_window_is_the_smallest_central_window():
    # Checked against the definition with scipy directly: each tail holds <= tail/2, one step inwards does not.
    rng = np.random.default_rng(7)
    for _ in range(60):
        trials, prob, tail = int(rng.integers(1, 4000)), float(rng.uniform(0.01, 0.99)), float(10 ** rng.uniform(-30, -1))
        lo, hi, dropped = binomial_window(trials, prob, tail)
        below, above = stats.binom.cdf(lo - 1, trials, prob), stats.binom.sf(hi, trials, prob)
        assert below <= tail / 2 and above <= tail / 2
        assert dropped == pytest.approx(below + above, rel=1e-12, abs=1e-300)
        mode = int(np.floor((trials + 1) * prob))
        if lo < min(mode, trials):
            assert stats.binom.cdf(lo, trials, prob) > tail / 2
        if hi > max(mode, lo):
            assert stats.binom.sf(hi - 1, trials, prob) > tail / 2


@pytest.mark.parametrize("prob", [0.5, 0.3, math.exp(-1.0), 1e-3, 0.97])
def test_binomial_windows_at_scale_match_the_definition(prob):
    """The vectorised search (brackets narrowed around Cornish-Fisher guesses, verified before use; by
    symmetry for p = 1/2) returns the windows of the definition up to 2e9 trials, checked with scipy.
    (Beyond 2^31 trials Cephes' bdtr, which chooses the windows, returns NaN and Hoeffding's wider window
    is kept: still valid, its dropped mass computed with Boost.)"""
    rng = np.random.default_rng(11)
    trials = np.unique((10 ** rng.uniform(1, 9.3, 300)).astype(np.int64))
    for tail in (1e-18, 3.7e-9, 1e-60):
        lo, hi = binomial_windows(trials, prob, tail)
        # Cephes chooses, Boost checks: they differ by up to ~1e-6 relative at 1e9 trials (one step of the
        # window moves a tail by ~z/σ, 4e-4 relative at 2e9 trials: still far above the slack).
        slack = 2e-5
        half = tail / 2 * (1 + slack)
        assert np.all(stats.binom.cdf(lo - 1, trials, prob) <= half)
        assert np.all(stats.binom.sf(hi, trials, prob) <= half)
        mode = np.minimum(np.floor((trials + 1) * prob), trials)
        inner_lo, inner_hi = lo < mode, hi > np.maximum(mode, lo)
        assert np.all(stats.binom.cdf(lo[inner_lo], trials[inner_lo], prob) > tail / 2 * (1 - slack))
        assert np.all(stats.binom.sf(hi[inner_hi] - 1, trials[inner_hi], prob) > tail / 2 * (1 - slack))


@pytest.mark.parametrize("prob", [0.5, 0.3, 0.97, 1e-3])
@pytest.mark.parametrize("descending", [False, True])
def test_sampled_windows_of_consecutive_trials_keep_their_tails(prob, descending):
    """binomial_windows_sampled (the blanket pair's rows of consecutive trial counts) gives every entry a
    window whose tails hold at most tail/2 each (checked with scipy), at most stride·p + 2 values wider
    than its own; shorter runs are searched entry by entry."""
    from pldshuffle.mechanisms._binomial import binomial_windows_sampled

    for start, count in ((0, 300), (5_000, 1_000), (123_456, 777), (40, 20)):
        trials = np.arange(start, start + count, dtype=np.int64)
        if descending:
            trials = trials[::-1].copy()
        for tail in (1e-18, 1e-60):
            lo, hi = binomial_windows_sampled(trials, prob, tail)
            own_lo, own_hi = binomial_windows(trials, prob, tail)
            assert np.all(lo <= own_lo) and np.all(hi >= own_hi) and np.all(hi <= trials) and np.all(lo >= 0)
            assert np.all((own_lo - lo) + (hi - own_hi) <= 2 * (16 * prob + 2))
            assert np.all(stats.binom.cdf(lo - 1, trials, prob) <= tail / 2 * (1 + 2e-5))
            assert np.all(stats.binom.sf(hi, trials, prob) <= tail / 2 * (1 + 2e-5))
    with pytest.raises(ValueError, match="consecutive"):
        binomial_windows_sampled(np.arange(0, 200, 2, dtype=np.int64), 0.5, 1e-18)


@pytest.mark.parametrize("prob", [0.5, 0.3, 2.0 / 3.0, 1e-3])
def test_binomial_log_rows_against_mpmath(prob):
    """The rows of log-pmfs the kRR layout walks (double-double, from each row's mode) are within 1e-13 of
    the exact values at the window ends, where Boost's pmf errs by ~1e-11 at 1e8 trials; rescaling keeps
    tails far below the smallest double finite."""
    mpmath = pytest.importorskip("mpmath")
    from pldshuffle._kernels import binomial_log_rows

    mpmath.mp.dps = 40
    trials = np.array([3, 1000, 123_457, 98_765_432], dtype=np.int64)
    lo, hi = binomial_windows(trials, prob, 1e-300)
    rows = binomial_log_rows(trials, prob, lo, hi, lambda k, n: binomial_logpmf(k, n, prob))
    assert rows.size == int((hi - lo + 1).sum()) and np.all(np.isfinite(rows))
    starts = np.concatenate([[0], np.cumsum(hi - lo + 1)[:-1]])
    P = mpmath.mpf(prob)
    for n, first, last, start in zip(trials.tolist(), lo.tolist(), hi.tolist(), starts.tolist()):
        for k in {first, first + 1, (first + last) // 2, last - 1, last} & set(range(first, last + 1)):
            exact = (mpmath.loggamma(n + 1) - mpmath.loggamma(k + 1) - mpmath.loggamma(n - k + 1)
                     + k * mpmath.log(P) + (n - k) * mpmath.log(1 - P))
            assert abs(rows[start + k - first] - float(exact)) <= 1e-13 * max(1.0, abs(float(exact)) / 100), (n, k)


def test_log_pmf_is_accurate_at_large_n():
    # scipy's binom.logpmf drifts by ~1e-9 relative at 1e6 trials; the masses must stay at ~1e-15.
    n = 10**6
    k = np.arange(n // 2 - 5000, n // 2 + 5001)
    assert math.fsum(np.exp(binomial_logpmf(k, n, 0.5))) == pytest.approx(1.0, abs=1e-13)


def test_oversized_support_is_refused_quickly():
    start = time.perf_counter()
    # Large supports are streamed (weak at 1e8 users merges its outer coordinate: ~20 min, warned); absurd
    # ones are refused at construction, weak/histogram by their cells (u, c) (the merged layout's cost).
    assert ShuffledKRR(10**8, 4, gamma=0.25, adversary="weak").family_seconds() > 60.0
    with pytest.raises(ValueError, match="num_users=10000000000.*tail_mass.*cells.*larger tail_mass"):
        ShuffledKRR(10**10, 4, gamma=0.25, adversary="weak")
    with pytest.raises(ValueError, match="support points"):
        ShuffledKRR(10**13, 4, gamma=0.25, adversary="strong")
    with pytest.raises(ValueError, match="num_users"):
        ShuffledKRR(2**63, 4, local_epsilon=1.0, adversary="strong")
    # ... and a smaller tail_mass does not get around the limit at pair_family time.
    with pytest.raises(ValueError, match="tail_mass=1e-300 would need.*cells"):
        ShuffledKRR(10**8, 4, gamma=0.25, adversary="weak").pair_family(tail_mass=1e-300)
    with pytest.raises(ValueError, match="tail_mass=1e-300 would need.*support points"):
        ShuffledKRR(10**10, 4, gamma=0.25, adversary="strong").pair_family(tail_mass=1e-300)
    assert time.perf_counter() - start < 10.0


@pytest.mark.slow
@pytest.mark.parametrize(
    ("n", "adversary", "seconds"), [(1000, "strong", 1.0), (1000, "weak", 3.0), (10**4, "strong", 3.0)]
)
def test_build_time(n, adversary, seconds):
    mechanism = ShuffledKRR(n, 4, gamma=0.25, adversary=adversary)
    mechanism.pair_family()  # compile / warm up
    start = time.perf_counter()
    mechanism.pair_family()
    assert time.perf_counter() - start < seconds


@pytest.mark.parametrize(
    "rounds, at_1e4, at_1e7",
    [(4, 1.17464, 1.77510), (16, 2.58666, 3.72249)],
)
def test_khh21_figure_values_composed(rounds, at_1e4, at_1e7):
    # KHH21's stored figure values for the 2-D strong pair without the atom; theirs are
    # discretised upper estimates, so they may sit up to ~1e-4 above our certified bracket.
    acc = ps.FourierAccountant().compose(ShuffledKRR(1000, 4, gamma=0.25, adversary="khh21"), rounds)
    for delta, published in ((1e-4, at_1e4), (1e-7, at_1e7)):
        b = acc.get_epsilon_bounds(delta)
        assert b.lower - 1e-5 <= published <= b.upper + 3e-4 * published
        assert b.relative_gap <= 1e-3
