"""Cross-check: every proven analytic upper bound is >= the accountant's certified LOWER bound for a
mechanism it covers.  A baseline below the tight value would be a bug in one of the two."""

import functools
import math

import pytest

import pldshuffle as ps
from pldshuffle import bounds

DELTA = 1e-6
GENERIC = [
    name
    for name, b in bounds.BASELINES.items()
    if b.kind == "upper" and b.epsilon is not None and "laplace" not in name and "domain_size" not in b.parameters
]
KRR = [name for name, b in bounds.BASELINES.items() if b.kind == "upper" and "domain_size" in b.parameters]


@functools.lru_cache(maxsize=None)
def _binary_rr_lower(n: int, eps0: float, rounds: int) -> float:
    # Shuffled binary RR is an eps0-LDP randomizer in FMT23's restricted class: every generic bound covers it.
    return ps.FourierAccountant().compose(ps.ShuffledBinaryRR(n, eps0), rounds).get_epsilon_bounds(DELTA).lower


@pytest.mark.parametrize("name", GENERIC)
@pytest.mark.parametrize("n, eps0", [(1000, 0.3), (1000, 1.0), (3000, 1.0), (3000, 3.0)])
def test_generic_baselines_above_certified_lower(name, n, eps0):
    value = bounds.BASELINES[name].evaluate("epsilon", num_users=n, local_epsilon=eps0, target_delta=DELTA, rounds=1).value
    if math.isnan(value):
        pytest.skip(f"{name} certifies nothing here (outside its proven range)")
    assert value >= _binary_rr_lower(n, eps0, 1) - 1e-12


@pytest.mark.parametrize("name", KRR)
@pytest.mark.parametrize("n, k, gamma", [(1000, 4, 0.25), (1000, 10, 0.5), (3000, 4, 0.1)])
def test_krr_baselines_above_certified_lower(name, n, k, gamma):
    value = bounds.BASELINES[name].evaluate("epsilon", num_users=n, domain_size=k, gamma=gamma, target_delta=DELTA).value
    if math.isnan(value):
        pytest.skip(f"{name} certifies nothing here (outside its proven range)")
    # The histogram-only analyst is the weakest view of shuffled kRR: every kRR bound must cover it.
    mech = ps.ShuffledKRR(n, k, gamma=gamma, adversary="histogram")
    assert value >= ps.FourierAccountant().compose(mech).get_epsilon_bounds(DELTA).lower - 1e-12


@pytest.mark.parametrize("rounds", [4, pytest.param(16, marks=pytest.mark.slow)])
def test_composed_baselines_above_certified_lower(rounds):
    n, eps0 = 1000, 1.0
    lower = _binary_rr_lower(n, eps0, rounds)
    gddks = bounds.gddks21_dp_epsilon(num_users=n, local_epsilon=eps0, target_delta=DELTA, rounds=rounds)
    assert gddks >= lower
    per_round = functools.partial(bounds.fmt20_epsilon, num_users=n, local_epsilon=eps0)
    for method in ("basic", "advanced", "kov_bound", "kov_exact"):
        value = bounds.compose_epsilon(per_round, rounds=rounds, target_delta=DELTA, method=method)
        if not math.isnan(value):
            assert value >= lower, method
