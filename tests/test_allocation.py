"""Random allocation (balls and bins): certified brackets against independent exact references.

References written from the definition, sharing nothing with the implementation:
* t = 1 (and k = t): the Gaussian mechanism's closed form δ(ε) = Φ(-ε/μ + μ/2) - e^ε Φ(-ε/μ - μ/2);
* t = 2: E_Q[(R - e^ε)_+] and E_Q[(1 - e^ε R)_+] conditioned on the first step's ratio (a Black–Scholes
  call / put in the second), integrated by adaptive quadrature;
* finite steps, t ≤ 6: every output tuple y and every k-subset S enumerated,
  P(y) = C(t,k)^-1 Σ_S Π_{s∈S} A(y_s) Π_{s∉S} B(y_s), Q(y) = Π_s B(y_s).
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st
from scipy import integrate
from scipy.stats import norm

import pldshuffle as ps

EPS = np.array([0.0, 0.1, 0.3, 0.7, 1.5, 3.0])


def gaussian_delta(eps: float, mu: float) -> float:
    return float(norm.cdf(-eps / mu + mu / 2) - math.exp(eps) * norm.cdf(-eps / mu - mu / 2))


def two_step_deltas(eps: float, sigma: float) -> tuple[float, float]:
    """(remove, add) δ of 1-of-2 allocation with Gaussian steps, by 1-D quadrature over the first step."""
    s = 1.0 / sigma  # log ρ = s·Z - s²/2 under Q

    def call(k: float) -> float:  # E[(X - k)_+], X lognormal with mean 1 and log-sd s
        if k <= 0:
            return 1.0 - k
        d1 = (-math.log(k) + s * s / 2) / s
        return float(norm.cdf(d1) - k * norm.cdf(d1 - s))

    def put(k: float) -> float:  # E[(k - X)_+]
        if k <= 0:
            return 0.0
        d1 = (-math.log(k) + s * s / 2) / s
        return float(k * norm.cdf(-(d1 - s)) - norm.cdf(-d1))

    def rho(z: float) -> float:
        return math.exp(s * z - s * s / 2)

    e = math.exp(eps)
    remove = integrate.quad(lambda z: norm.pdf(z) * 0.5 * call(2 * (e - rho(z) / 2)), -14, 14, epsabs=1e-15, epsrel=1e-11, limit=400)[0]
    add = e * integrate.quad(lambda z: norm.pdf(z) * 0.5 * put(2 * (1 / e - rho(z) / 2)), -14, 14, epsabs=1e-15, epsrel=1e-11, limit=400)[0]
    return remove, add


def enumerate_allocation(a: np.ndarray, b: np.ndarray, t: int, k: int) -> tuple[np.ndarray, np.ndarray]:
    """Exact (P, Q) of k-of-t allocation with step outputs A (with the example) / B (without), over Y^t."""
    ys = np.array(list(itertools.product(range(a.size), repeat=t)), dtype=np.int64).reshape(-1, t)
    q = np.prod(b[ys], axis=1)
    p = np.zeros(q.shape)
    subsets = list(itertools.combinations(range(t), k))
    for sel in subsets:
        factors = np.where(np.isin(np.arange(t), sel)[None, :], a[ys], b[ys])
        p += np.prod(factors, axis=1)
    return p / len(subsets), q


def hockey(p: np.ndarray, q: np.ndarray, eps: float) -> float:
    return float(np.sum(np.maximum(p - math.exp(eps) * q, 0.0)))


def family_bounds(mech: ps.RandomAllocation, eps: np.ndarray):
    """Per direction (forward = remove, backward = add): (lower, upper) single-epoch δ."""
    fam = mech.pair_family()
    out = []
    for side in ("forward", "backward"):
        low = np.max([getattr(member, side).hockey_stick_bounds(eps)[0] for member in fam.lower], axis=0)
        up = getattr(fam.upper[0], side).hockey_stick_bounds(eps)[1]
        out.append((low, up))
    return out, fam


# ----------------------------------------------------------------------------- Gaussian steps
@pytest.mark.parametrize("sigma", [0.7, 1.0, 2.0])
def test_one_step_is_the_gaussian_mechanism(sigma):
    (rem, add), _ = family_bounds(ps.RandomAllocation(1, noise_multiplier=sigma), EPS)
    exact = np.array([gaussian_delta(e, 1 / sigma) for e in EPS])
    for low, up in (rem, add):
        assert np.all(low <= exact) and np.all(exact <= up)
        big = exact > 1e-9
        assert np.all((up - low)[big] <= 1e-2 * exact[big])  # measured: ≤ 5e-3 (σ = 1, ε = 3)


def test_epochs_of_one_step_compose_to_the_gaussian_mechanism():
    """E epochs of 1-of-1 = the Gaussian mechanism with μ = √E/σ: the accountant brackets it."""
    sigma, epochs = 1.5, 4
    acc = ps.FourierAccountant().compose(ps.RandomAllocation(1, noise_multiplier=sigma), count=epochs)
    for eps in (0.2, 1.0, 2.5):
        b = acc.get_delta_bounds(eps)
        exact = gaussian_delta(eps, math.sqrt(epochs) / sigma)
        assert b.lower <= exact <= b.upper
        assert b.upper - b.lower <= 1e-2 * exact


@pytest.mark.parametrize("sigma", [0.8, 1.5])
def test_two_steps_against_quadrature(sigma):
    (rem, add), _ = family_bounds(ps.RandomAllocation(2, noise_multiplier=sigma), EPS)
    for i, eps in enumerate(EPS):
        exact_rem, exact_add = two_step_deltas(float(eps), sigma)
        # quadrature tolerance 1e-11 relative: the bracket must hold beyond it
        assert rem[0][i] <= exact_rem * (1 + 1e-9) + 1e-15 and exact_rem * (1 - 1e-9) - 1e-15 <= rem[1][i]
        assert add[0][i] <= exact_add * (1 + 1e-9) + 1e-15 and exact_add * (1 - 1e-9) - 1e-15 <= add[1][i]
        if exact_rem > 1e-5:  # deep tails are coarser (tail grid steps grow with the loss): 11 % at δ = 1e-8
            assert rem[1][i] - rem[0][i] <= 5e-3 * exact_rem


def test_remove_dominates_add_for_gaussian_steps():
    """With one step of N(1,σ²) vs N(0,σ²) averaged, the remove direction is the worse one at ε > 0
    (checked on the quadrature reference, and the family's upper pair agrees)."""
    (rem, add), _ = family_bounds(ps.RandomAllocation(2, noise_multiplier=1.0), EPS[1:])
    for i, eps in enumerate(EPS[1:]):
        exact_rem, exact_add = two_step_deltas(float(eps), 1.0)
        assert exact_rem >= exact_add
        assert rem[1][i] >= add[0][i]


def test_many_steps_bracket_is_tight_and_ordered():
    """t = 1000: lower ≤ upper everywhere, relative gap small where δ matters, and more steps are more
    private (1-of-2000 below 1-of-1000: the mean of more ratios is smaller in convex order)."""
    (rem, add), _ = family_bounds(ps.RandomAllocation(1000, noise_multiplier=1.0), EPS)
    (rem2, _), _ = family_bounds(ps.RandomAllocation(2000, noise_multiplier=1.0), EPS)
    for low, up in (rem, add):
        assert np.all(low <= up)
    big = rem[0] > 1e-6
    assert np.all((rem[1] - rem[0])[big] <= 2e-2 * rem[0][big])
    assert np.all(rem2[1][big] <= rem[0][big])


def test_k_equal_t_is_the_composition_of_gaussians():
    """k = t: every step uses the example, the run is t Gaussian mechanisms (μ = √t/σ)."""
    t, sigma = 3, 2.0
    (rem, add), fam = family_bounds(ps.RandomAllocation(t, num_selected=t, noise_multiplier=sigma), EPS)
    exact = np.array([gaussian_delta(e, math.sqrt(t) / sigma) for e in EPS])
    assert np.all(rem[0] <= exact) and np.all(exact <= rem[1])
    assert np.all(add[0] <= exact) and np.all(exact <= add[1])
    assert any("decomposition" in c for c in fam.caveats)


def test_counting_lower_pair_is_the_binomial_statistic():
    """The counting LOWER pair of Gaussian k > 1 is the law of #{s: Y_s > zσ}: checked against binomials
    written here (both directions), and it beats the maximum statistic at σ = 2, k = 10, t = 100."""
    from scipy.stats import binom

    t, k, sigma = 100, 10, 2.0
    mech = ps.RandomAllocation(t, num_selected=k, noise_multiplier=sigma)
    fam = mech.pair_family()
    counting = [m for m in fam.lower if "number of outputs above 0.25" in m.label][0]
    p0, p1 = norm.sf(0.25), norm.sf(0.25 - 1 / sigma)
    q = binom.pmf(np.arange(t + 1), t, p0)
    p = np.zeros(t + 1)
    for a in range(k + 1):
        p[a:a + t - k + 1] += binom.pmf(a, k, p1) * binom.pmf(np.arange(t - k + 1), t - k, p0)
    for eps in (0.5, 1.0, 2.0):
        low, up = counting.forward.hockey_stick_bounds(eps)
        assert low[0] <= hockey(p, q, eps) * (1 + 1e-8) and hockey(p, q, eps) <= up[0] * (1 + 1e-8) + 1e-15
        low, up = counting.backward.hockey_stick_bounds(eps)
        assert low[0] <= hockey(q, p, eps) * (1 + 1e-8) + 1e-15
    maximum = [m for m in fam.lower if "maximum" in m.label][0]
    assert counting.delta_bounds(1.0)[0][0] > maximum.delta_bounds(1.0)[0][0]


def test_k_greater_than_one_bracket_is_ordered_and_names_its_sides():
    (rem, add), fam = family_bounds(ps.RandomAllocation(100, num_selected=10, noise_multiplier=2.0), EPS)
    assert np.all(rem[0] <= rem[1]) and np.all(add[0] <= add[1])
    assert all("LOWER" in m.label for m in fam.lower)
    assert fam.is_guarantee


# ----------------------------------------------------------------------------- finite steps
STEPS = [
    (np.array([0.6, 0.3, 0.1]), np.array([0.2, 0.3, 0.5])),
    (np.array([0.5, 0.5, 0.0]), np.array([0.25, 0.25, 0.5])),  # A has a zero: ratio 0 atom
    (np.array([0.4, 0.4, 0.2]), np.array([0.5, 0.5, 0.0])),  # B has a zero: singular P-mass
]


@pytest.mark.parametrize("t,k", [(1, 1), (2, 1), (3, 1), (4, 2), (5, 2), (6, 3), (6, 6)])
@pytest.mark.parametrize("which", range(len(STEPS)))
def test_finite_step_against_enumeration(t, k, which):
    a, b = STEPS[which]
    step = ps.PairMechanism.from_probability_mass_functions(a, b)
    (rem, add), _ = family_bounds(ps.RandomAllocation(t, num_selected=k, step=step), EPS)
    p, q = enumerate_allocation(a, b, t, k)
    for i, eps in enumerate(EPS):
        exact_rem, exact_add = hockey(p, q, eps), hockey(q, p, eps)
        assert rem[0][i] <= exact_rem + 1e-14 and exact_rem <= rem[1][i] + 1e-14
        assert add[0][i] <= exact_add + 1e-14 and exact_add <= add[1][i] + 1e-14


@pytest.mark.parametrize("k", [1, 2, 3])
def test_finite_step_beyond_enumeration_limit(k):
    """m^t above the exact limit: k = 1 by the spread/contraction engine, k > 1 by the decomposition (upper)
    and one step's output (lower); the exact value from enumeration lies in between."""
    a = np.array([0.3, 0.2, 0.15, 0.1, 0.1, 0.1, 0.05])
    b = np.array([0.1, 0.1, 0.1, 0.15, 0.15, 0.2, 0.2])
    t = 6  # 7^6 = 117649 tuples > 65536
    (rem, add), fam = family_bounds(ps.RandomAllocation(t, num_selected=k, step=ps.PairMechanism.from_probability_mass_functions(a, b)), EPS)
    p, q = enumerate_allocation(a, b, t, k)
    for i, eps in enumerate(EPS):
        exact_rem, exact_add = hockey(p, q, eps), hockey(q, p, eps)
        assert rem[0][i] <= exact_rem <= rem[1][i]
        assert add[0][i] <= exact_add <= add[1][i]
    if k == 1:  # the engine is tight
        big = rem[0] > 1e-6
        assert np.all((rem[1] - rem[0])[big] <= 5e-3 * rem[1][big])


@settings(max_examples=25, deadline=None)
@given(
    st.lists(st.floats(0.01, 1.0), min_size=2, max_size=3),
    st.lists(st.floats(0.01, 1.0), min_size=2, max_size=3),
    st.integers(1, 4),
    st.data(),
)
def test_random_finite_steps_bracket(wa, wb, t, data):
    size = min(len(wa), len(wb))
    a = np.array(wa[:size]) / sum(wa[:size])
    b = np.array(wb[:size]) / sum(wb[:size])
    k = data.draw(st.integers(1, t))
    (rem, add), _ = family_bounds(ps.RandomAllocation(t, num_selected=k, step=ps.PairMechanism.from_probability_mass_functions(a, b)), EPS)
    p, q = enumerate_allocation(a, b, t, k)
    for i, eps in enumerate(EPS):
        assert rem[0][i] <= hockey(p, q, eps) + 1e-14 <= rem[1][i] + 2e-14
        assert add[0][i] <= hockey(q, p, eps) + 1e-14 <= add[1][i] + 2e-14


def test_privacy_loss_pair_step_is_accepted():
    a, b = STEPS[0]
    pair = ps.PrivacyLossPair.from_probability_mass_functions(a, b)
    m1 = ps.RandomAllocation(3, step=pair)
    m2 = ps.RandomAllocation(3, step=ps.PairMechanism(pair))
    d1 = m1.pair_family().upper[0].delta_bounds(0.2)[1]
    d2 = m2.pair_family().upper[0].delta_bounds(0.2)[1]
    assert d1 == pytest.approx(d2, rel=1e-12)


# ----------------------------------------------------------------------------- input checks
@pytest.mark.parametrize(
    "kwargs,name",
    [
        ({"num_steps": 0, "noise_multiplier": 1.0}, "num_steps"),
        ({"num_steps": 5, "num_selected": 6, "noise_multiplier": 1.0}, "num_selected"),
        ({"num_steps": 5, "num_selected": 0, "noise_multiplier": 1.0}, "num_selected"),
        ({"num_steps": 5, "noise_multiplier": 0.0}, "noise_multiplier"),
        ({"num_steps": 5, "noise_multiplier": -1.0}, "noise_multiplier"),
        ({"num_steps": 5}, "noise_multiplier"),
    ],
)
def test_bad_input_names_the_parameter(kwargs, name):
    with pytest.raises(ValueError, match=name):
        ps.RandomAllocation(**kwargs)


def test_step_must_be_a_pair_of_distributions():
    bad = ps.PairMechanism.from_probability_mass_functions([0.5, 0.4], [0.5, 0.5], missing_mass="infinity")  # sums to 0.9
    with pytest.raises(ValueError, match="step must be a pair of probability distributions"):
        ps.RandomAllocation(4, step=bad)
    with pytest.raises(TypeError, match="step"):
        ps.RandomAllocation(4, step=[0.5, 0.5])
    with pytest.raises(ValueError, match="exactly one"):
        ps.RandomAllocation(4, noise_multiplier=1.0, step=ps.PairMechanism.from_probability_mass_functions([0.5, 0.5], [0.5, 0.5]))


def test_describe_names_the_relation():
    m = ps.RandomAllocation(100, noise_multiplier=1.0)
    assert "add/remove" in m.describe()
    assert m.neighboring_relation == "add-remove"
    assert m == ps.RandomAllocation(100.0, noise_multiplier=1)  # integral floats, hashable
    assert hash(m) == hash(ps.RandomAllocation(100, noise_multiplier=1.0))


# ----------------------------------------------------------------------------- ledgers
def test_ledger_refuses_mixed_neighbouring_relations():
    acc = ps.FourierAccountant().compose(ps.ShuffledBinaryRR(100, 1.0))
    with pytest.raises(ValueError, match="different promises"):
        acc.compose(ps.RandomAllocation(10, noise_multiplier=1.0))
    acc = ps.FourierAccountant().compose(ps.RandomAllocation(10, noise_multiplier=1.0))
    with pytest.raises(ValueError, match="replace-one"):
        acc.compose(ps.ShuffledBinaryRR(100, 1.0))
    # a pair declared add/remove composes with random allocation; PairMechanism defaults to replace-one
    rr = ps.PrivacyLossPair.from_probability_mass_functions([0.75, 0.25], [0.25, 0.75])
    acc.compose(ps.PairMechanism(rr, neighboring_relation="add-remove"))
    with pytest.raises(ValueError, match="PairMechanism"):
        acc.compose(ps.PairMechanism(rr))
    with pytest.raises(ValueError, match="neighboring_relation"):
        ps.PairMechanism(rr, neighboring_relation="swap")


def test_allocation_composes_with_imported_dp_accounting_steps():
    """RandomAllocation and an imported (add/remove) dp-accounting PLD share a ledger; the joint ε is at
    least either part's lower end."""
    pld = pytest.importorskip("dp_accounting.pld.privacy_loss_distribution")
    from pldshuffle.interop import from_dp_accounting

    gauss = pld.from_gaussian_mechanism(4.0, value_discretization_interval=1e-3)
    alloc = ps.RandomAllocation(50, noise_multiplier=1.0)
    part = ps.FourierAccountant().compose(alloc, 2).get_epsilon_bounds(1e-6)
    joint = ps.FourierAccountant().compose(alloc, 2).compose(from_dp_accounting(gauss), 5).get_epsilon_bounds(1e-6)
    assert joint.upper >= part.lower
    assert any("add/remove" in c for c in joint.caveats)  # the result names the relation


# ----------------------------------------------------------------------------- interop
def _events():
    """dp-accounting's event classes when the installed release has RandomAllocationDpEvent, else fakes
    with the same names and fields (upstream: RandomAllocationDpEvent(event, num_selected, num_steps))."""
    try:
        from dp_accounting import dp_event

        return dp_event.GaussianDpEvent, dp_event.RandomAllocationDpEvent
    except (ImportError, AttributeError):
        from dataclasses import dataclass

        @dataclass
        class GaussianDpEvent:
            noise_multiplier: float

        @dataclass
        class RandomAllocationDpEvent:
            event: object
            num_selected: int
            num_steps: int

        return GaussianDpEvent, RandomAllocationDpEvent


def test_from_dp_event_builds_the_same_mechanism():
    from pldshuffle.interop import from_dp_event

    gaussian, allocation = _events()
    m = from_dp_event(allocation(event=gaussian(2.0), num_selected=10, num_steps=100))
    assert m == ps.RandomAllocation(100, num_selected=10, noise_multiplier=2.0)
    assert from_dp_event(gaussian(1.5)) == ps.RandomAllocation(1, noise_multiplier=1.5)
    with pytest.raises(ValueError, match="Gaussian steps"):
        from_dp_event(allocation(event=object(), num_selected=1, num_steps=10))
    with pytest.raises(ValueError, match="supports"):
        from_dp_event(object())


@pytest.mark.slow  # ~10 s on 2 shared cores
@settings(max_examples=8, deadline=None)
@given(st.floats(0.5, 3.0), st.integers(2, 64))
def test_allocation_is_below_the_gaussian_mechanism(sigma, t):
    """Revealing which step holds the example leaves one Gaussian mechanism (μ = 1/σ): the exact 1-of-t is
    dominated by it, so the certified LOWER end must lie below its closed form, both directions; and the
    bracket is ordered."""
    eps = np.array([0.0, 0.5, 1.0, 2.0])
    (rem, add), _ = family_bounds(ps.RandomAllocation(t, noise_multiplier=sigma), eps)
    gauss = np.array([gaussian_delta(e, 1 / sigma) for e in eps])
    for low, up in (rem, add):
        assert np.all(low <= gauss * (1 + 1e-12)) and np.all(low <= up)


@pytest.mark.parametrize("sigma", [0.1, 0.3, 1.0, 5.0, 100.0])
def test_gaussian_step_laws_keep_mass_and_mean(sigma):
    """The spread keeps the step's Q-mass and mean (P-mass) on the kept range; the contraction too (its
    points are centroids): checked against the truncated tails from scipy (at 1e-12)."""
    from pldshuffle.mechanisms._allocation_sum import gaussian_step_law

    for upper in (True, False):
        law, q_tail, p_tail = gaussian_step_law(sigma, 1e-20, upper)
        assert float(np.sum(law.masses)) == pytest.approx(1 - q_tail, abs=1e-12)
        assert float(np.sum(law.points * law.masses)) == pytest.approx(1 - p_tail, abs=1e-12)
        assert p_tail <= 1e-20 * (1 + 1e-6)


@pytest.mark.parametrize("sigma", [0.15, 0.3])
def test_small_noise_multipliers_still_bracket(sigma):
    (rem, add), _ = family_bounds(ps.RandomAllocation(1, noise_multiplier=sigma), EPS)
    exact = np.array([gaussian_delta(e, 1 / sigma) for e in EPS])
    for low, up in (rem, add):
        assert np.all(low <= exact) and np.all(exact <= up)
    b = ps.FourierAccountant().compose(ps.RandomAllocation(3, noise_multiplier=0.1), count=3).get_epsilon_bounds(1e-6)
    assert math.isfinite(b.upper) and b.upper <= 1.01 * b.lower


def test_too_many_steps_are_refused_up_front():
    with pytest.raises(ValueError, match="num_steps must be at most"):
        ps.RandomAllocation(300_000, noise_multiplier=1.0)
    with pytest.raises(ValueError, match="num_steps must be at most"):
        ps.RandomAllocation(300_000, num_selected=10, noise_multiplier=1.0)


def test_ledger_with_allocation_exports_to_dp_accounting():
    pytest.importorskip("dp_accounting.pld.privacy_loss_distribution")
    acc = ps.FourierAccountant().compose(ps.RandomAllocation(100, noise_multiplier=1.0), count=3)
    b = acc.get_epsilon_bounds(1e-6)
    exported = acc.to_dp_accounting()
    assert b.lower <= exported.get_epsilon_for_delta(1e-6) <= b.upper * (1 + 1e-6)


# ----------------------------------------------------------------------------- command line
def test_cli_random_allocation(capsys):
    from pldshuffle.cli import main

    assert main(["epsilon", "--mechanism", "random-allocation", "--num-steps", "100", "--noise-multiplier", "1",
                 "--epochs", "3", "--delta", "1e-6", "--json", "--quiet"]) == 0
    import json

    out = json.loads(capsys.readouterr().out)
    assert out["neighbouring_relation"] == "add-remove"
    direct = ps.FourierAccountant().compose(ps.RandomAllocation(100, noise_multiplier=1.0), count=3).get_epsilon_bounds(1e-6)
    assert out["upper"] == pytest.approx(direct.upper, rel=1e-12) and out["lower"] == pytest.approx(direct.lower, rel=1e-12)
    assert main(["epsilon", "--mechanism", "random-allocation", "--num-steps", "100", "--noise-multiplier", "0",
                 "--delta", "1e-6", "--quiet"]) == 2
    assert "--noise-multiplier" in capsys.readouterr().err
    assert main(["epsilon", "--mechanism", "random-allocation", "--num-steps", "100", "--noise-multiplier", "1",
                 "--compose", "binary-rr:num_users=100,local_epsilon=1", "--delta", "1e-6", "--quiet"]) == 2
    assert "different promises" in capsys.readouterr().err
