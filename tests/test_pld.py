"""Exact single-round pairs: construction, bookkeeping and closed-form values."""

import math

import numpy as np
import pytest

import pldshuffle as ps
from pldshuffle._kernels import profile_at_points
from pldshuffle.pld import MASS_RTOL


def test_randomized_response_from_pmfs_is_exact():
    # Plain RR with e^{eps0}=3: delta(eps) = 0.75 - e^eps * 0.25 for eps < log 3.
    pair = ps.PrivacyLossPair.from_probability_mass_functions([0.75, 0.25], [0.25, 0.75])
    eps = np.array([0.0, 0.5, 1.0, math.log(3.0), 2.0])
    lower, upper = pair.delta_bounds(eps)
    exact = np.maximum(0.75 - np.exp(eps) * 0.25, 0.0)
    assert np.all(lower <= exact + 1e-300) and np.all(exact <= upper)
    # Documented slack: MASS_RTOL relative plus SUM_RTOL times the mass near ε.
    np.testing.assert_allclose(upper, exact, rtol=1e-9, atol=1e-11)


def test_mapping_input_and_infinity_mass():
    pair = ps.PrivacyLossPair.from_probability_mass_functions({"a": 0.5, "b": 0.5}, {"a": 1.0})
    assert pair.forward.infinity_mass == pytest.approx(0.5)
    lower, upper = pair.delta_bounds(100.0)
    assert lower[0] == pytest.approx(0.5) and upper[0] >= 0.5


@pytest.mark.parametrize("bad", [[-0.1, 1.1], [0.7, 0.7], [float("nan"), 0.5]])
def test_bad_pmfs_rejected(bad):
    with pytest.raises(ValueError, match="pmf_p"):
        ps.PrivacyLossPair.from_probability_mass_functions(bad, [0.5, 0.5])


def test_binary_rr_family_matches_spec_values():
    # docs/mathematics.md#pairs: n=3, e^{eps0}=3, eps=0 gives 0.28125 (m=0) and 0.3125 (m=1).
    family = ps.ShuffledBinaryRR(3, math.log(3.0)).pair_family()
    values = [p.delta_bounds(0.0) for p in family.upper]
    assert values[0][0][0] <= 0.28125 <= values[0][1][0]
    assert values[1][0][0] <= 0.3125 <= values[1][1][0]


def test_binary_rr_masses_sum_to_one():
    for pair in ps.ShuffledBinaryRR(200, 1.5).pair_family().upper[::17]:
        for d in pair.directions:
            total = d.finite_mass + d.infinity_mass + d.truncated_mass
            assert total == pytest.approx(1.0, abs=1e-12)
            assert float(np.sum(d.masses * np.exp(-d.losses))) <= 1.0 + 1e-12


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_sorted_upper_bounds_bracket_exact_profile(seed):
    """``hockey_stick_upper_sorted`` is ≥ the exact ``H`` (fsum over outcomes) and within its documented slack,
    at points on the losses themselves, between them and far outside the support."""
    rng = np.random.default_rng(seed)
    p, q = rng.dirichlet(np.full(40, 0.3)), rng.dirichlet(np.full(40, 0.3))
    p[3] = 0.0  # the deficits (1 - Σ) are booked as truncated mass, at +inf in upper bounds
    q[7] = 0.0
    pair = ps.PrivacyLossPair.from_probability_mass_functions(p, q, missing_mass="infinity")
    for direction, (a, b) in zip(pair.directions, ((p, q), (q, p))):
        eps = np.sort(np.concatenate([direction.losses, rng.uniform(-40, 40, 300), [-700.0, 700.0]]))
        exact = np.array([math.fsum(max(x - math.exp(e) * y, 0.0) for x, y in zip(a, b)) for e in eps])
        upper = direction.hockey_stick_upper_sorted(eps)
        assert np.all(upper >= exact)
        # Slack: MASS_RTOL and rounding (relative), and losses within loss_error below ε counted above it.
        shifted = np.array([math.fsum(max(x - math.exp(e - 3e-9 * (1 + abs(e))) * y, 0.0) for x, y in zip(a, b)) for e in eps])
        assert np.all(upper <= (shifted + 1.0 - math.fsum(a)) * (1 + 1e-9) + 1e-15)


@pytest.mark.parametrize("group_points,grouped_support", [(2**15, 2**10), (40, 2**10), (1, 2**10), (2**15, 10)])
def test_largest_upper_profile_is_the_largest_of_each_bound(group_points, grouped_support, monkeypatch):
    """Few kernel calls over many directions (grouped or one by one) equal, to the last bit, the maximum of
    each direction's own bound (``hockey_stick_upper_sorted``), with infinity, truncated masses and loss errors."""
    from pldshuffle.pld import LargestUpperProfile

    monkeypatch.setattr(LargestUpperProfile, "_GROUP_POINTS", group_points)
    monkeypatch.setattr(LargestUpperProfile, "_GROUPED_SUPPORT", grouped_support)
    rng = np.random.default_rng(5)
    directions = []
    for k in range(7):
        size = int(rng.integers(0, 30))
        losses = np.sort(rng.uniform(-3, 3, size))
        masses = rng.dirichlet(np.ones(size)) * 0.9 if size else np.zeros(0)
        directions.append(ps.LossDistribution(losses, masses, infinity_mass=0.01 * k, truncated_mass=0.002 * (k % 3),
                                              loss_error=[0.0, 1e-9, 3e-4][k % 3]))
    eps = np.sort(rng.uniform(-4, 4, 200))
    each = np.max([d.hockey_stick_upper_sorted(eps) for d in directions], axis=0)
    for d in directions:  # the single-direction bound is the independent sweep plus its documented slack
        shifted = eps - (d.loss_error * (1 + 4 * 2.0**-53) + 2 * 2.0**-53 * np.abs(eps)) if d.loss_error else eps
        finite = profile_at_points(d.losses, d.masses, shifted) * (1 + 8 * 2.0**-53 * (d.losses.size + eps.size + 2))
        np.testing.assert_array_equal(d.hockey_stick_upper_sorted(eps), np.minimum((finite + d.infinity_mass + d.truncated_mass) * (1 + MASS_RTOL), 1.0))
    profile = LargestUpperProfile(directions)
    np.testing.assert_array_equal(profile(eps), each)
    np.testing.assert_array_equal(LargestUpperProfile([])(eps), np.zeros(eps.size))
    # Supports above the grouped size are read where they are, never copied (copies doubled a cover's memory).
    large = [d for d in directions if d.losses.size > grouped_support]
    assert bool(large) == (grouped_support < 30)  # the last case has supports on both sides of it
    assert all(any(group[0] is d.losses for group in profile._groups) for d in large)


def test_held_bytes_counts_the_support_and_the_sums_exact_queries_cache():
    """What memory checks read: the two support arrays, then also the two suffix-sum arrays an exact query
    builds (N + 1 entries each)."""
    d = ps.LossDistribution(np.array([-0.5, 0.1, 0.7]), np.array([0.2, 0.3, 0.4]), infinity_mass=0.05)
    assert d.held_bytes == 2 * 3 * 8
    d.hockey_stick_upper_sorted(np.array([0.0, 0.2]))  # one sweep: nothing cached
    assert d.held_bytes == 2 * 3 * 8
    d.hockey_stick_bounds(np.array([0.2]))
    assert d.held_bytes == 2 * 3 * 8 + 2 * 4 * 8


def test_delta_upper_sweep_bounds_the_exact_delta_and_keeps_nothing():
    """The one-sweep upper bound (any order of ε, inf included) lies above the exact δ of the pair and
    within the slack of the cached bounds, and leaves no suffix sums on the pair."""
    p, q = np.array([0.5, 0.3, 0.15, 0.05]), np.array([0.1, 0.2, 0.3, 0.4])
    pair = ps.PrivacyLossPair.from_probability_mass_functions(p, q)
    eps = np.array([1.0, 0.0, np.inf, 0.3, -0.5, 2.0])
    swept = pair.delta_upper(eps)
    assert not any("_suffix_mass" in d.__dict__ for d in pair.directions)
    exact = [max(np.maximum(a - math.exp(e) * b, 0.0).sum() for a, b in ((p, q), (q, p))) if np.isfinite(e) else 0.0 for e in eps]
    assert np.all(swept >= np.array(exact)) and np.all(swept <= np.array(exact) + 1e-8)
    np.testing.assert_allclose(swept, pair.delta_bounds(eps)[1], rtol=1e-6, atol=1e-12)  # both slacks: ~1e-8


def test_transient_tail_masses_at_query_points():
    """``A_j = Σ_{i≥j} ω_i`` at any indices (repeated, unsorted, past the end), without keeping suffix sums,
    against sums taken one by one."""
    rng = np.random.default_rng(3)
    for size in (1, 5, 300):
        d = ps.LossDistribution(np.sort(rng.standard_normal(size)), rng.dirichlet(np.ones(size)) * 0.9)
        j = rng.integers(0, size + 1, size=(3, 7))
        expected = np.array([[math.fsum(d.masses[a:]) for a in row] for row in j])
        np.testing.assert_allclose(d._mass_above(j, False), expected, rtol=1e-13, atol=0)
        assert "_suffix_mass" not in d.__dict__
