"""Property tests (hypothesis) of the analytic baselines: monotonicity, inverse consistency, orderings."""

import math

import numpy as np
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from pldshuffle import bounds as b

FAST = settings(deadline=None, max_examples=40)

users = st.integers(min_value=2, max_value=10**7)
local_eps = st.floats(min_value=0.05, max_value=8.0)
deltas = st.floats(min_value=1e-12, max_value=0.5)
epsilons = st.floats(min_value=1e-3, max_value=5.0)
orders = st.floats(min_value=1.01, max_value=300.0)


@FAST
@given(
    n=users,
    eps0=local_eps,
    d1=deltas,
    d2=deltas,
    variant=st.sampled_from(["focs21", "arxiv_v1", "apple_code", "fmt23"]),
)
def test_fmt_epsilon_non_increasing_in_delta_and_inverse_consistent(n, eps0, d1, d2, variant):
    def eps_of(delta):
        if variant == "fmt23":
            return b.fmt23_epsilon(num_users=n, local_epsilon=eps0, target_delta=delta)
        return b.fmt20_epsilon(num_users=n, local_epsilon=eps0, target_delta=delta, variant=variant)

    def delta_of(eps):
        if variant == "fmt23":
            return b.fmt23_delta(num_users=n, local_epsilon=eps0, target_epsilon=eps)
        return b.fmt20_delta(num_users=n, local_epsilon=eps0, target_epsilon=eps, variant=variant)

    low, high = sorted((d1, d2))
    e_low, e_high = eps_of(low), eps_of(high)
    if not math.isnan(e_low):
        assert e_high <= e_low  # validity is monotone too: valid at low => valid at high
        assert delta_of(e_low) <= low * (1 + 1e-12)


@FAST
@given(n=users, eps0=local_eps, e1=epsilons, e2=epsilons, variant=st.sampled_from(["focs21", "fmt23"]))
def test_fmt_delta_non_increasing_in_epsilon(n, eps0, e1, e2, variant):
    kwargs = dict(num_users=n, local_epsilon=eps0)
    fn = b.fmt23_delta if variant == "fmt23" else b.fmt20_delta
    low, high = sorted((e1, e2))
    d_low, d_high = fn(target_epsilon=low, **kwargs), fn(target_epsilon=high, **kwargs)
    if not math.isnan(d_low):
        assert d_high <= d_low


@FAST
@given(n=st.integers(1000, 10**7), eps0=st.floats(0.01, 0.49), delta=st.floats(1e-12, 0.0099))
def test_efmrtt19_inverse_pair(n, eps0, delta):
    eps = b.efmrtt19_epsilon(num_users=n, local_epsilon=eps0, target_delta=delta)
    assert math.isclose(b.efmrtt19_delta(num_users=n, local_epsilon=eps0, target_epsilon=eps), delta, rel_tol=1e-9)
    assert math.isclose(
        b.efmrtt19_local_epsilon(num_users=n, target_epsilon=eps, target_delta=delta), eps0, rel_tol=1e-12
    )


@FAST
@given(n=st.integers(2, 10**7), gamma=st.floats(0.01, 1.0), k=st.integers(2, 100), e1=epsilons, e2=epsilons)
def test_thm31_delta_non_increasing_where_valid(n, gamma, k, e1, e2):
    kwargs = dict(num_users=n, gamma=gamma, domain_size=k)
    low, high = sorted((e1, e2))
    d_low, d_high = b.bbgn19_thm31_delta(target_epsilon=low, **kwargs), b.bbgn19_thm31_delta(target_epsilon=high, **kwargs)
    if not (math.isnan(d_low) or math.isnan(d_high)):
        assert d_high <= d_low
    eps = b.bbgn19_thm31_epsilon(target_delta=0.5 * d_low, **kwargs) if 0 < d_low < 1 else math.nan
    if not math.isnan(eps):
        assert b.bbgn19_thm31_delta(target_epsilon=eps, **kwargs) <= 0.5 * d_low * (1 + 1e-12)


blanket_settings = st.one_of(
    st.builds(dict, bound=st.sampled_from(["thm53", "hoeffding", "bennett"]), randomizer=st.just("generic")),
    st.builds(dict, bound=st.sampled_from(["hoeffding", "bennett"]), randomizer=st.just("laplace")),
    st.builds(
        dict,
        bound=st.sampled_from(["hoeffding", "bennett"]),
        randomizer=st.just("krr"),
        domain_size=st.integers(2, 200),
    ),
)


@FAST
@given(setting=blanket_settings, n=st.integers(10, 10**6), eps0=st.floats(0.05, 10.0), delta=deltas)
def test_bbgn19_inversion_certifies_the_target(setting, n, eps0, delta):
    setting = dict(setting)
    bound = setting.pop("bound")
    kwargs = dict(num_users=n, local_epsilon=eps0, **({} if bound == "thm53" else setting))
    eps = getattr(b, f"bbgn19_{bound}_epsilon")(target_delta=delta, **kwargs)
    assert 0 < eps <= eps0
    assert getattr(b, f"bbgn19_{bound}_delta")(target_epsilon=eps, **kwargs) <= delta


@FAST
@given(n=st.integers(1, 3000), eps0=st.floats(0.05, 6.0), alpha=st.lists(orders, min_size=1, max_size=4))
def test_rdp_lower_below_upper_below_pure(n, eps0, alpha):
    alpha = np.array(alpha)
    lower = b.gddks21_rdp_lower(num_users=n, local_epsilon=eps0, alpha=alpha, both_directions=True)
    upper = b.gddks21_rdp_upper(num_users=n, local_epsilon=eps0, alpha=alpha)
    pure = b.rdp_pure_dp(local_epsilon=eps0, alpha=alpha)
    assert np.all(lower <= upper * (1 + 1e-9))
    assert np.all(upper <= pure)


@FAST
@given(eps0=st.floats(1e-4, 50.0), alpha=orders)
def test_tight_pure_dp_below_simpler_forms(eps0, alpha):
    tight = b.rdp_pure_dp(local_epsilon=eps0, alpha=alpha)
    assert 0 < tight <= min(eps0, alpha * eps0**2 / 2) * (1 + 1e-12)


@FAST
@given(
    eps=st.floats(0.01, 3.0),
    delta=st.floats(0.0, 1e-3),
    k=st.integers(1, 200),
    g1=st.floats(0, 50),
    g2=st.floats(0, 50),
)
def test_kov_exact_delta_non_increasing_in_epsilon(eps, delta, k, g1, g2):
    kwargs = dict(round_epsilon=eps, round_delta=delta, rounds=k)
    low, high = sorted((g1, g2))
    assert b.kov_exact_delta(target_epsilon=high, **kwargs) <= b.kov_exact_delta(target_epsilon=low, **kwargs)
    assert b.kov_exact_delta(target_epsilon=k * eps, **kwargs) <= min(1.0, k * delta) + 1e-15


@FAST
@given(eps=st.floats(0.01, 2.0), k=st.integers(1, 300), slack=st.floats(1e-12, 0.1))
def test_kov_exact_below_kov_bound_below_advanced(eps, k, slack):
    kwargs = dict(round_epsilon=eps, round_delta=0.0, rounds=k)
    exact = b.kov_exact_epsilon(target_delta=slack, **kwargs)
    assert b.kov_exact_delta(target_epsilon=exact, **kwargs) <= slack
    kov = b.kov_composition_bound(slack_delta=slack, **kwargs)
    advanced = b.advanced_composition(slack_delta=slack, **kwargs)
    assert exact <= kov.epsilon * (1 + 1e-12)
    assert kov.epsilon <= advanced.epsilon * (1 + 1e-12) or kov.epsilon <= k * eps
    assert kov.delta == advanced.delta or math.isclose(kov.delta, advanced.delta, rel_tol=1e-12)


@FAST
@given(
    n=st.integers(100, 10**6), eps0=st.floats(0.1, 4.0), rounds=st.integers(1, 100), e1=epsilons, e2=epsilons
)
def test_converted_delta_non_increasing_and_improved_beats_classic(n, eps0, rounds, e1, e2):
    alpha = np.arange(2.0, 65.0)
    curve = rounds * b.gddks21_rdp_upper(num_users=n, local_epsilon=eps0, alpha=alpha)
    low, high = sorted((e1, e2))
    d = {e: b.rdp_to_dp_delta(rdp=curve, alpha=alpha, target_epsilon=e) for e in (low, high)}
    assert d[high] <= d[low]
    improved = b.rdp_to_dp_epsilon(rdp=curve, alpha=alpha, target_delta=1e-6)
    classic = b.rdp_to_dp_epsilon(rdp=curve, alpha=alpha, target_delta=1e-6, conversion="classic")
    assert improved <= classic
    # the two forms of the improved conversion are the same inequality
    assume(improved > 0)
    assert math.isclose(b.rdp_to_dp_delta(rdp=curve, alpha=alpha, target_epsilon=improved), 1e-6, rel_tol=1e-8)


@settings(deadline=None, max_examples=8)
@given(n=st.integers(10**3, 10**6), eps0=st.floats(0.1, 3.0), rounds=st.integers(1, 64))
def test_kov_exact_composition_never_worse_than_basic(n, eps0, rounds):
    def per_round(target_delta):
        return b.bbgn19_hoeffding_epsilon(
            num_users=n, local_epsilon=eps0, target_delta=target_delta, randomizer="laplace"
        )

    basic = b.compose_epsilon(per_round, rounds=rounds, target_delta=1e-6, method="basic")
    exact = b.compose_epsilon(per_round, rounds=rounds, target_delta=1e-6, method="kov_exact")
    assert exact <= basic
