"""The analytic baselines against published numbers (see docs/mathematics.md#baselines)."""

import math

import numpy as np
import pytest

from pldshuffle import bounds as b

# --- 1. BBGN19 authors' notebook ("Bounds on Privacy Amplification by Shuffling.ipynb", printed
#        outputs of the Nov 2020 re-run after the Bennett fix; BorjaBalle/amplification-by-shuffling).

# Randomizer parameters at ε0 = 4, ε = 0.25: ((γ_lb, γ_ub), b_+, range b, c).
NOTEBOOK_PARAMETERS = {
    "Generic": ((0.01831563888873418, 1), 54.574632287288225, 124.66172899508733, 144.6152655550164),
    "Laplace": (
        (0.1353352832366127, 0.1353352832366127),
        7.215282155480206,
        16.567682708602117,
        12.415810765103338,
    ),
    "RR-2": (
        (0.03597241992418312, 0.03597241992418312),
        1.9178380785934013,
        4.403726990562285,
        4.928873289176336,
    ),
    "RR-100": (
        (0.6510495079427809, 0.6510495079427809),
        34.710134597944105,
        79.7011793024382,
        32.323385018018065,
    ),
}
MECHANISMS = {
    "Generic": {"randomizer": "generic"},
    "Laplace": {"randomizer": "laplace"},
    "RR-2": {"randomizer": "krr", "domain_size": 2},
    "RR-100": {"randomizer": "krr", "domain_size": 100},
}
N, EPS0 = 5000, 0.4
# δ(ε = 0.005), ε(δ = 1e-6), ε0 calibration (ε = 0.005, δ = 1e-6); n = 5000, ε0 = 0.4.
NOTEBOOK_BOUNDS = {
    ("hoeffding", "Generic"): (0.037942471911790294, 0.05746164784348143, 0.04963572123548638),
    ("bennett", "Generic"): (0.14009168313254008, 0.11301679081207759, 0.005),
    ("hoeffding", "Laplace"): (0.005792337614227242, 0.02423345457274603, 0.09927144247094191),
    ("bennett", "Laplace"): (0.004853541355460176, 0.022807535585468337, 0.09994509899812597),
    ("hoeffding", "RR-2"): (0.005642546362741425, 0.02397882347116631, 0.09933108921716256),
    ("bennett", "RR-2"): (0.005686529997978448, 0.02428301504607527, 0.09839052251746179),
    ("hoeffding", "RR-100"): (0.007445148952583604, 0.026881289729458715, 0.0970004939783926),
    ("bennett", "RR-100"): (3.360217120217285e-09, 0.0035207898339832183, 0.5191456848866671),
}
NOTEBOOK_RTOL = 1e-10


@pytest.mark.parametrize("mechanism", NOTEBOOK_PARAMETERS)
def test_notebook_randomizer_parameters(mechanism):
    (gamma_lb, gamma_ub), max_loss, loss_range, second_moment = NOTEBOOK_PARAMETERS[mechanism]
    p = b.blanket_parameters(target_epsilon=0.25, local_epsilon=4.0, **MECHANISMS[mechanism])
    got = [p.log_gamma_lower, p.log_gamma_upper, p.log_max_loss, p.log_loss_range, p.log_second_moment]
    expected = [gamma_lb, gamma_ub, max_loss, loss_range, second_moment]
    np.testing.assert_allclose(np.exp(got), expected, rtol=4e-15)


@pytest.mark.parametrize(("bound", "mechanism"), NOTEBOOK_BOUNDS)
def test_notebook_delta(bound, mechanism):
    delta_fn = getattr(b, f"bbgn19_{bound}_delta")
    got = delta_fn(num_users=N, local_epsilon=EPS0, target_epsilon=0.005, **MECHANISMS[mechanism])
    assert got == pytest.approx(NOTEBOOK_BOUNDS[bound, mechanism][0], rel=NOTEBOOK_RTOL)


@pytest.mark.parametrize(("bound", "mechanism"), NOTEBOOK_BOUNDS)
def test_notebook_epsilon(bound, mechanism):
    epsilon_fn = getattr(b, f"bbgn19_{bound}_epsilon")
    got = epsilon_fn(num_users=N, local_epsilon=EPS0, target_delta=1e-6, **MECHANISMS[mechanism])
    assert got == pytest.approx(NOTEBOOK_BOUNDS[bound, mechanism][1], rel=NOTEBOOK_RTOL)


@pytest.mark.parametrize(("bound", "mechanism"), NOTEBOOK_BOUNDS)
def test_notebook_local_epsilon_calibration(bound, mechanism):
    result = b.bbgn19_local_epsilon_result(
        bound=bound, num_users=N, target_epsilon=0.005, target_delta=1e-6, **MECHANISMS[mechanism]
    )
    assert result.value == pytest.approx(NOTEBOOK_BOUNDS[bound, mechanism][2], rel=NOTEBOOK_RTOL)


def test_notebook_bennett_generic_certifies_nothing():
    # ε0 = ε is the only feasible value: the notebook prints ε itself.
    result = b.bbgn19_local_epsilon_result(bound="bennett", num_users=N, target_epsilon=0.005, target_delta=1e-6)
    assert result.value == pytest.approx(0.005, rel=1e-12)


def test_notebook_efmrtt19():
    assert b.efmrtt19_delta(num_users=N, local_epsilon=EPS0, target_epsilon=0.15) == pytest.approx(
        0.007575677444259949, rel=1e-14
    )
    assert b.efmrtt19_epsilon(num_users=N, local_epsilon=EPS0, target_delta=1e-6) == pytest.approx(
        0.2523130449483328, rel=1e-14
    )
    assert b.efmrtt19_local_epsilon(num_users=N, target_epsilon=0.005, target_delta=1e-6) == pytest.approx(
        0.00792666110628386, rel=1e-14
    )
    # the notebook's δ(ε = 0.005) is nan: δ ≈ 0.99 is not below 1/100
    assert math.isnan(b.efmrtt19_delta(num_users=N, local_epsilon=EPS0, target_epsilon=0.005))


# --- 2. Koskela, Heikkilä, Honkela (2021), App. C.


def _khh21_c2_delta(num_users, local_epsilon, epsilon):
    pn = math.exp(-local_epsilon) * num_users
    return 4.0 * math.exp(-pn * (math.expm1(epsilon) - 8.0 / pn) ** 2 / 64.0)


@pytest.mark.parametrize(("num_users", "local_epsilon"), [(10**4, 4.0), (10**5, 4.0), (10**6, 9.0)])
@pytest.mark.parametrize("delta", [1e-2, 1e-3, 2e-3])
def test_khh21_c2_closed_form_equals_numeric_inverse(num_users, local_epsilon, delta):
    eps = b.fmt20_epsilon(
        num_users=num_users, local_epsilon=local_epsilon, target_delta=delta, variant="arxiv_v1"
    )
    closed = _khh21_c2_delta(num_users, local_epsilon, eps)
    assert closed == pytest.approx(delta, rel=1e-12)
    numeric = b.fmt20_delta(num_users=num_users, local_epsilon=local_epsilon, target_epsilon=eps, variant="arxiv_v1")
    assert numeric == pytest.approx(closed, rel=1e-12)


def test_khh21_c2_inverse_stops_at_the_validity_range():
    # where C.2 would give δ below 2 exp(-n e^{-ε0}/16), the inverse returns that minimum, with a note
    result = b.fmt20_delta_result(num_users=10**4, local_epsilon=4.0, target_epsilon=1.5, variant="arxiv_v1")
    assert (
        _khh21_c2_delta(10**4, 4.0, 1.5)
        < result.value
        == pytest.approx(2 * math.exp(-(10**4) * math.exp(-4.0) / 16))
    )
    assert result.note is not None


@pytest.mark.parametrize("delta", [1e-3, 1e-5])
def test_khh21_c2_epsilon_form(delta):
    pn = math.exp(-4.0) * 10**5
    expected = math.log1p(8.0 * math.sqrt(math.log(4.0 / delta) / pn) + 8.0 / pn)
    got = b.fmt20_epsilon(num_users=10**5, local_epsilon=4.0, target_delta=delta, variant="arxiv_v1")
    assert got == pytest.approx(expected, rel=1e-14)


@pytest.mark.parametrize(
    ("num_users", "delta", "expected"),
    [(10**3, 1e-7, 3.43), (10**3, 1e-3, 2.31), (10**4, 1e-7, 1.08), (10**4, 1e-3, 0.73)],
)
def test_khh21_c1_unrestricted_curve(num_users, delta, expected):
    result = b.bbgn19_thm31_epsilon_result(
        num_users=num_users, gamma=0.1, domain_size=5, target_delta=delta, strict=False
    )
    assert result.value == pytest.approx(expected, abs=0.005)
    assert not result.proven
    strict = b.bbgn19_thm31_epsilon(num_users=num_users, gamma=0.1, domain_size=5, target_delta=delta)
    assert math.isnan(strict) if expected > 1 else strict == result.value


def test_khh21_c1_gamma_and_local_epsilon_agree():
    # γ = 0.1, k = 5  <=>  ε0 = log 46 (BBGN19 Lemma 5.1)
    by_gamma = b.bbgn19_thm31_epsilon(num_users=10**4, domain_size=5, gamma=0.1, target_delta=1e-3)
    by_eps0 = b.bbgn19_thm31_epsilon(
        num_users=10**4, domain_size=5, local_epsilon=math.log(46.0), target_delta=1e-3
    )
    assert by_gamma == pytest.approx(by_eps0, rel=1e-14)


# --- 3. FMT23 vs FMT20 (docs/mathematics.md#baselines).


def test_fmt23_vs_fmt20_published_numbers():
    fmt20 = b.fmt20_epsilon(num_users=10**5, local_epsilon=4.0, target_delta=1e-6)
    fmt23 = b.fmt23_epsilon(num_users=10**5, local_epsilon=4.0, target_delta=1e-6)
    assert fmt20 == pytest.approx(0.5346, abs=5e-5)
    assert fmt23 == pytest.approx(0.4078, abs=5e-5)
    assert math.expm1(fmt20) / math.expm1(fmt23) == pytest.approx(1.404, abs=5e-4)


@pytest.mark.parametrize("local_epsilon", [4.0, 6.0, 8.0])
def test_fmt23_improves_by_about_sqrt2(local_epsilon):
    # for large n the e^ε - 1 terms differ by √2 √(e^{ε0}/(e^{ε0}+1)) (the seed: "about √2")
    n = 10**9
    fmt20 = b.fmt20_epsilon(num_users=n, local_epsilon=local_epsilon, target_delta=1e-6)
    fmt23 = b.fmt23_epsilon(num_users=n, local_epsilon=local_epsilon, target_delta=1e-6)
    expected = math.sqrt(2.0) * math.sqrt(math.exp(local_epsilon) / (math.exp(local_epsilon) + 1.0))
    assert math.expm1(fmt20) / math.expm1(fmt23) == pytest.approx(expected, rel=1e-2)


# --- 4. Internal checks and statements of docs/mathematics.md#baselines.

RDP_GRID = [
    (n, eps0, alpha)
    for n in (100, 1000, 10**4)
    for eps0 in (0.5, 1.0, 2.0, 4.0)
    for alpha in (1.5, 2.0, 3.0, 8.0, 32.0, 128.0)
]


@pytest.mark.parametrize(("num_users", "local_epsilon"), sorted({(n, e) for n, e, _ in RDP_GRID}))
def test_rdp_lower_below_upper_on_the_72_point_grid(num_users, local_epsilon):
    alpha = np.array(sorted({a for _, _, a in RDP_GRID}))
    lower = b.gddks21_rdp_lower(
        num_users=num_users, local_epsilon=local_epsilon, alpha=alpha, both_directions=True
    )
    upper = b.gddks21_rdp_upper(num_users=num_users, local_epsilon=local_epsilon, alpha=alpha)
    assert np.all(lower <= upper)
    assert np.all(lower > 0)


def test_tight_pure_dp_rdp_below_simpler_forms():
    alpha = np.concatenate([1.0 + np.geomspace(1e-6, 1.0, 20), np.geomspace(2.0, 1e4, 40)])
    for eps0 in (1e-3, 0.1, 1.0, 4.0, 20.0):
        tight = b.rdp_pure_dp(local_epsilon=eps0, alpha=alpha)
        bound = np.minimum(
            b.rdp_pure_dp(local_epsilon=eps0, alpha=alpha, form="trivial"),
            b.rdp_pure_dp(local_epsilon=eps0, alpha=alpha, form="bs16"),
        )
        assert np.all(tight <= bound * (1 + 1e-12))


@pytest.mark.parametrize(("eps", "delta"), [(0.3, 0.0), (1.0, 1e-3), (2.5, 1e-6)])
def test_kov_exact_single_round_is_the_hockey_stick(eps, delta):
    for eps_g in np.linspace(0.0, 1.2 * eps, 13):
        hockey = max(0.0, (math.exp(eps) - math.exp(eps_g)) / (1.0 + math.exp(eps)))
        expected = 1.0 - (1.0 - delta) * (1.0 - hockey)
        got = b.kov_exact_delta(round_epsilon=eps, round_delta=delta, rounds=1, target_epsilon=eps_g)
        assert got == pytest.approx(expected, rel=1e-14, abs=1e-16)


def test_thm53_beats_generic_hoeffding_at_large_local_epsilon():
    # n = 1e5, ε0 = 4: eq. (4) gives 1.44 while 3a certifies no amplification
    assert b.bbgn19_thm53_epsilon(num_users=10**5, local_epsilon=4.0, target_delta=1e-6) == pytest.approx(
        1.44, abs=5e-3
    )
    hoeffding = b.bbgn19_hoeffding_epsilon_result(num_users=10**5, local_epsilon=4.0, target_delta=1e-6)
    assert hoeffding.value == 4.0 and "no amplification" in hoeffding.note


def test_hoeffding_krr_is_not_monotone_and_inverted_at_first_crossing():
    # kRR, n = 1000, γ = 0.1, k = 5 bottoms out at δ ≈ 4e-4 near ε ≈ 3.6
    setting = dict(num_users=1000, gamma=0.1, domain_size=5, randomizer="krr")
    eps = np.linspace(2.0, 3.8, 181)
    deltas = np.array([b.bbgn19_hoeffding_delta(target_epsilon=e, **setting) for e in eps])
    assert eps[np.argmin(deltas)] == pytest.approx(3.6, abs=0.05)
    assert deltas.min() == pytest.approx(4.05e-4, rel=0.01)
    # target 4.5e-4 is crossed twice below ε0; the first crossing is returned
    first = b.bbgn19_hoeffding_epsilon(target_delta=4.5e-4, **setting)
    assert first < eps[np.argmin(deltas)]
    assert b.bbgn19_hoeffding_delta(target_epsilon=first, **setting) <= 4.5e-4
    assert b.bbgn19_hoeffding_delta(target_epsilon=first * (1 - 1e-9), **setting) > 4.5e-4
    # below the minimum nothing is certified: ε0 = log 46 with a note
    none = b.bbgn19_hoeffding_epsilon_result(target_delta=3e-4, **setting)
    assert none.value == pytest.approx(math.log(46.0)) and none.note is not None


def test_gddks21_conversion_needs_large_orders():
    # at n = 1e6 the optimal order is ≈ 1500; capping at 256 inflates ε almost 3×
    wide = b.gddks21_dp_epsilon_result(num_users=10**6, local_epsilon=1.0, target_delta=1e-6)
    capped = b.gddks21_dp_epsilon(
        num_users=10**6, local_epsilon=1.0, target_delta=1e-6, alpha=np.arange(2, 257)
    )
    assert 1000 < wide.details["alpha"] < 2000
    assert 2.5 < capped / wide.value < 3.0


def test_gddks21_upper_explodes_and_is_not_monotone_when_n_is_small():
    # at ε0 = 4, n = 1e4 the bound is about 2.5 at α = 4, and it decreases from α = 3
    values = b.gddks21_rdp_upper(num_users=10**4, local_epsilon=4.0, alpha=np.array([3.0, 4.0]))
    assert values[1] == pytest.approx(2.5, abs=0.05)
    assert values[0] > values[1]


@pytest.mark.parametrize(
    ("num_users", "local_epsilon", "delta_min"), [(10**4, 4.0, 2e-5), (10**6, 9.0, 9e-4)]
)
def test_fmt20_validity_in_khh21_settings(num_users, local_epsilon, delta_min):
    # valid only for δ ≳ 2e-5 and ≳ 9e-4, hence null at δ = 1e-6
    assert math.isnan(b.fmt20_epsilon(num_users=num_users, local_epsilon=local_epsilon, target_delta=1e-6))
    assert not math.isnan(
        b.fmt20_epsilon(num_users=num_users, local_epsilon=local_epsilon, target_delta=1.1 * delta_min)
    )
