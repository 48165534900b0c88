"""Tests of the clone reductions (pldshuffle.mechanisms.clones, docs/mathematics.md#clone-reductions).

The independent ground truth is ``tests/reference.py`` (generative enumeration of the clone pairs,
explicit products for composition, brute force of the real shuffled mechanisms; no FFT, no grid,
nothing imported from pldshuffle), plus a direct scipy evaluation of pair F on its full support for
moderate n.
"""

from __future__ import annotations

import importlib.util
import math
import warnings
from dataclasses import FrozenInstanceError

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from reference import (
    brute_force_binary_rr,
    composed_pld,
    delta_directions,
    delta_exact,
    hockey_stick,
    make_pair,
    pair_clones,
    split_pair,
)
from scipy import stats

import pldshuffle as ps
from pldshuffle.mechanisms import ShuffledLDP
from pldshuffle.mechanisms.base import PairFamily, ShuffleMechanism
from pldshuffle.mechanisms.clones import (
    EXACT_SUPPORT_LIMIT,
    clone_pair,
    clone_pair_bounds,
    clone_support_size,
)
from pldshuffle.pld import LossDistribution

EPS_GRID = [0.0, 0.01, 0.05, 0.1, 0.25, 0.5, 0.75, 1.0, 1.5, 2.0, 3.0]
REDUCTIONS = ("fmt20", "fmt23", "khh21")


def fmt20(eps0: float) -> float:
    return math.exp(-eps0)


def fmt23(eps0: float) -> float:
    return 2.0 / (math.exp(eps0) + 1.0)


def make(n, eps0, reduction):
    """ShuffledLDP without the khh21 warning noise."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        return ShuffledLDP(n, eps0, reduction)


def ref_pair(n, eps0, reduction):
    """Reference pair (reference.pair_clones) matching ShuffledLDP(n, eps0, reduction)."""
    e = math.exp(eps0)
    variant = "K" if reduction == "khh21" else "F"
    pc = fmt23(eps0) if reduction == "fmt23" else fmt20(eps0)
    return pair_clones(n, e, pc, variant)


def family_delta(mech, eps):
    """Single-round (lower, upper) δ of a mechanism's family at the epsilons."""
    fam = mech.pair_family()
    lower = np.max([p.delta_bounds(eps)[0] for p in fam.lower], axis=0)
    upper = np.max([p.delta_bounds(eps)[1] for p in fam.upper], axis=0)
    return lower, upper


def composed_deltas(pair: dict, eps, rounds: int) -> list[float]:
    """reference.delta_exact at several ε, composing once."""
    P, Q = split_pair(composed_pld([pair] * rounds))
    return [max(hockey_stick(P, Q, float(e)), hockey_stick(Q, P, float(e))) for e in eps]


def canonical(dist: LossDistribution, *, upper: bool) -> dict:
    """A reference pair dict whose P/Q direction has the PLD ``dist`` (truncated mass at +inf for
    an upper bound, deleted for a lower bound)."""
    pair = {i: (float(m), float(m * math.exp(-s))) for i, (s, m) in enumerate(zip(dist.losses, dist.masses))}
    atom = dist.infinity_mass + (dist.truncated_mass if upper else 0.0)
    if atom > 0:
        pair["inf"] = (atom, 0.0)
    return pair


# ----------------------------------------------------------------------------------- validation
@pytest.mark.parametrize(
    "kwargs, name",
    [
        (dict(num_users=1, local_epsilon=1.0), "num_users"),
        (dict(num_users=2.5, local_epsilon=1.0), "num_users"),
        (dict(num_users=-3, local_epsilon=1.0), "num_users"),
        (dict(num_users=10, local_epsilon=0.0), "local_epsilon"),
        (dict(num_users=10, local_epsilon=-1.0), "local_epsilon"),
        (dict(num_users=10, local_epsilon=math.inf), "local_epsilon"),
        (dict(num_users=10, local_epsilon=math.nan), "local_epsilon"),
        (dict(num_users=10, local_epsilon=1e4), "local_epsilon"),
        (dict(num_users=10, local_epsilon=1.0, reduction="fmt21"), "reduction"),
        (dict(num_users=10, local_epsilon=1.0, reduction="FMT20"), "reduction"),
    ],
)
def test_bad_input_names_parameter(kwargs, name):
    with pytest.raises(ValueError, match=name):
        ShuffledLDP(**kwargs)


@pytest.mark.parametrize(
    "kwargs, name",
    [
        (dict(num_users="10", local_epsilon=1.0), "num_users"),
        (dict(num_users=True, local_epsilon=1.0), "num_users"),
        (dict(num_users=10, local_epsilon="1"), "local_epsilon"),
        (dict(num_users=10, local_epsilon=1.0, reduction=None), "reduction"),
    ],
)
def test_bad_types_name_parameter(kwargs, name):
    with pytest.raises((TypeError, ValueError), match=name):
        ShuffledLDP(**kwargs)


@pytest.mark.parametrize(
    "args, kwargs, name",
    [
        ((1, 1.0, 0.5), {}, "num_users"),
        ((10, 0.0, 0.5), {}, "local_epsilon"),
        ((10, 1.0, 0.0), {}, "clone_probability"),
        ((10, 1.0, 1.5), {}, "clone_probability"),
        ((10, 1.0, 0.5, 0.0), {}, "tail_mass"),
        ((10, 1.0, 0.5, 1.0), {}, "tail_mass"),
        ((10, 1.0, 0.5), {"variant": "G"}, "variant"),
        ((10, 1.0, 0.5), {"bound": "both"}, "bound"),
        ((10, 1.0, 0.5), {"max_support_points": 0}, "max_support_points"),
    ],
)
def test_clone_pair_bad_input(args, kwargs, name):
    with pytest.raises(ValueError, match=name):
        clone_pair(*args, **kwargs)


def test_exact_pair_refused_above_budget_with_advice():
    n, eps0 = 10**5, 1.0
    size = clone_support_size(n, eps0, fmt20(eps0))
    with pytest.raises(ValueError, match="max_support_points") as info:
        clone_pair(n, eps0, fmt20(eps0), max_support_points=size - 1)
    assert "clone_pair_bounds" in str(info.value)
    # The bounded-memory variants still work at that size.
    assert clone_pair(n, eps0, fmt20(eps0), bound="upper").forward.support_size > 0


def test_mechanism_is_frozen_hashable_and_described():
    m = ShuffledLDP(1000, 2.0)
    assert m.reduction == "fmt20" and m == ShuffledLDP(1000, 2.0, "fmt20") and hash(m) == hash(ShuffledLDP(1000, 2.0))
    assert isinstance(m, ShuffleMechanism)
    with pytest.raises(FrozenInstanceError):
        m.num_users = 3  # type: ignore[misc]
    assert ShuffledLDP(1e3, 2).num_users == 1000 and isinstance(ShuffledLDP(1e3, 2).local_epsilon, float)
    for red in REDUCTIONS:
        text = make(1000, 2.0, red).describe()
        assert "\n" not in text and "n=1000" in text and "ε0=2" in text
    assert "restricted" in make(1000, 2.0, "fmt23").describe()


def test_khh21_warns_and_is_not_a_guarantee():
    with pytest.warns(UserWarning, match="no proof"):
        m = ShuffledLDP(100, 1.0, "khh21")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        ShuffledLDP(100, 1.0, "fmt20")
        ShuffledLDP(100, 1.0, "fmt23")
    fam = m.pair_family()
    assert not fam.is_guarantee and any("no proof" in c for c in fam.caveats)
    b = ps.FourierAccountant().compose(m).get_epsilon_bounds(1e-6)
    assert not b.is_guarantee


def test_caveats_reach_the_results():
    b23 = ps.FourierAccountant().compose(ShuffledLDP(1000, 2.0, "fmt23")).get_epsilon_bounds(1e-6)
    assert b23.is_guarantee and any("restricted class" in c and "RAPPOR" in c for c in b23.caveats)
    b20 = ps.FourierAccountant().compose(ShuffledLDP(1000, 2.0, "fmt20")).get_epsilon_bounds(1e-6)
    assert b20.is_guarantee and any("every ε0-LDP" in c for c in b20.caveats)


# ----------------------------------------------------------------------------------- bookkeeping
MASS_CASES = [
    (2, 0.5, "F", fmt20),
    (7, 1.0, "K", fmt20),
    (30, 2.0, "F", fmt23),
    (30, 2.0, "K", fmt20),
    (1000, 0.3, "F", fmt20),
    (1000, 1.0, "K", fmt20),
    (10**5, 4.0, "F", fmt23),
    (10**5, 3.0, "K", fmt20),
]


@pytest.mark.parametrize("n, eps0, variant, pc", MASS_CASES)
def test_total_mass_bookkeeping(n, eps0, variant, pc):
    pair = clone_pair(n, eps0, pc(eps0), variant=variant)
    assert pair.backward is None  # symmetric
    d = pair.forward
    assert abs(d.finite_mass + d.infinity_mass + d.truncated_mass - 1.0) <= 1e-12
    assert d.truncated_mass <= 2e-18 + 1e-30
    assert float(np.sum(d.masses * np.exp(-d.losses))) <= 1.0 + 1e-12
    if variant == "F":
        assert d.infinity_mass == 0.0 and pair.max_abs_loss <= eps0 * (1 + 1e-12)


@pytest.mark.parametrize("n, eps0, variant, pc", MASS_CASES)
def test_streamed_pairs_keep_mass_and_moment(n, eps0, variant, pc):
    lower, upper = clone_pair_bounds(n, eps0, pc(eps0), variant=variant, max_exact_support=0, bins=256)
    exact = clone_pair(n, eps0, pc(eps0), variant=variant).forward
    for d in (lower.forward, upper.forward):
        assert d.truncated_mass == exact.truncated_mass
        assert d.infinity_mass == pytest.approx(exact.infinity_mass, rel=1e-12, abs=1e-300)
        assert d.finite_mass == pytest.approx(exact.finite_mass, rel=1e-12)
        tilted = float(np.sum(d.masses * np.exp(-d.losses)))
        assert tilted == pytest.approx(float(np.sum(exact.masses * np.exp(-exact.losses))), rel=1e-9)
    assert upper.forward.support_size <= 256 + 4 and lower.forward.support_size <= 256 + 3


@pytest.mark.parametrize("variant", ["F", "K"])
def test_streaming_in_pieces_reports_progress_and_changes_nothing(variant, monkeypatch):
    """Long streams run in pieces of blocks with a progress report between them; the cells are the same
    sums in another order."""
    from pldshuffle import _reporting
    from pldshuffle.mechanisms import _lattice

    whole = clone_pair_bounds(3000, 1.0, fmt20(1.0), variant=variant, max_exact_support=0, bins=1024)
    monkeypatch.setattr(_reporting, "REPORT_SECONDS", 0.0)
    monkeypatch.setattr(_lattice, "PIECE_POINTS", 20_000)
    messages: list[str] = []
    with _reporting.reporting_to(messages.append):
        pieced = clone_pair_bounds(3000, 1.0, fmt20(1.0), variant=variant, max_exact_support=0, bins=1024)
    streaming = [m for m in messages if m.startswith("streaming ") and "outcomes onto the loss lattice" in m]
    assert len(streaming) >= 3 and streaming[-1].endswith(": 100 %")
    for a, b in zip(pieced, whole):
        np.testing.assert_allclose(a.forward.losses, b.forward.losses, rtol=0, atol=1e-15)
        np.testing.assert_allclose(a.forward.masses, b.forward.masses, rtol=1e-12, atol=1e-300)
        assert a.forward.infinity_mass == pytest.approx(b.forward.infinity_mass, rel=1e-12, abs=1e-300)


@pytest.mark.parametrize("n, eps0, reduction", [(2000, 1.0, "fmt20"), (10**5, 3.0, "fmt23"), (3 * 10**4, 0.5, "khh21")])
def test_support_estimates_track_the_exact_count(n, eps0, reduction):
    """The O(1) estimate behind the time warning and the construction-time refusal is within 25 % of the
    laid-out count."""
    mechanism = make(n, eps0, reduction)
    exact = mechanism.support_size()
    if reduction == "khh21":
        from pldshuffle.mechanisms._clone_layout import support_estimate

        estimate = support_estimate(n, mechanism.clone_probability, 0.5, 1e-18)
    else:
        estimate = sum(p.support_estimate() for p in mechanism.labelled_pairs())
    assert 0.8 * exact <= estimate <= 1.25 * exact


@pytest.mark.parametrize("constants", [(3.0, 0.2, 0.1, 0.0), (3.0, 0.2, 0.2, 0.1), (math.inf, 0.05, 0.05, 0.2)])
def test_labelled_pair_support_estimates_track_the_exact_count(constants):
    pair = ps.LabelledClonePair(30_000, *constants)
    exact = pair.support_size()
    assert 0.8 * exact <= pair.support_estimate() <= 1.25 * exact


def test_khh21_infinity_atom_closed_form():
    for n in (2, 3, 5, 8):
        for eps0 in (0.5, 1.0, 2.0):
            d = clone_pair(n, eps0, fmt20(eps0), variant="K").forward
            atom = 2.0 ** (-(n - 1)) * math.exp(-(n - 2) * eps0) / (math.exp(eps0) + 1.0)
            assert d.infinity_mass == pytest.approx(atom, rel=1e-12)
            assert clone_pair(n, eps0, fmt20(eps0), variant="F").forward.infinity_mass == 0.0


# ----------------------------------------------------------------------------------- exactness
SMALL = [(n, eps0) for n in (2, 3, 5, 8) for eps0 in (0.5, 1.0, 2.0, 3.0)]


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("n, eps0", SMALL)
def test_single_round_brackets_reference(n, eps0, reduction):
    mech = make(n, eps0, reduction)
    ref = ref_pair(n, eps0, reduction)
    lower, upper = family_delta(mech, EPS_GRID)
    for eps, lo, up in zip(EPS_GRID, lower, upper):
        exact = delta_exact(ref, eps)
        assert lo <= exact <= up, (eps, lo, exact, up)
        assert up - lo <= 1e-9 * exact + 1e-11


@pytest.mark.parametrize("variant", ["F", "K"])
@pytest.mark.parametrize("n, eps0", [(5, 1.0), (8, 0.5), (8, 2.0)])
@pytest.mark.parametrize("bins", [16, 64])
def test_streamed_pairs_bracket_reference_under_composition(n, eps0, variant, bins):
    """Spread / contraction pairs bound the exact pair for 1-3 rounds (explicit products, no FFT)."""
    pc = fmt20(eps0)
    lower, upper = clone_pair_bounds(n, eps0, pc, variant=variant, max_exact_support=0, bins=bins)
    assert lower is not upper
    ref = pair_clones(n, math.exp(eps0), pc, variant)
    low_ref, up_ref = canonical(lower.forward, upper=False), canonical(upper.forward, upper=True)
    for rounds in (1, 2, 3):
        for eps in (0.0, 0.1, 0.5, 1.0, 2.0):
            exact = delta_directions(ref, eps, rounds)[0]
            lo = delta_directions(low_ref, eps, rounds)[0]
            up = delta_directions(up_ref, eps, rounds)[0]
            assert lo <= exact * (1 + 1e-12) + 1e-15 and exact <= up * (1 + 1e-12) + 1e-15, (rounds, eps, lo, exact, up)


def _direct_pair_f_delta(n, eps0, pc, eps):
    """δ of pair F from the full (untruncated) support, masses from scipy pmfs (independent code)."""
    q = math.exp(eps0) / (math.exp(eps0) + 1.0)
    c = np.repeat(np.arange(n), np.arange(n) + 1)
    A = np.concatenate([np.arange(k + 1) for k in range(n)])
    w = stats.binom.pmf(c, n - 1, pc) * stats.binom.pmf(A, c, 0.5)
    size = (n + 1) * (n + 1)
    P = np.zeros(size)
    Q = np.zeros(size)
    for d, wd in ((1, q), (0, 1.0 - q)):
        np.add.at(P, (A + d) * (n + 1) + (c - A + 1 - d), w * wd)
        np.add.at(Q, (A + 1 - d) * (n + 1) + (c - A + d), w * wd)
    return np.array([math.fsum(np.maximum(P - math.exp(e) * Q, 0.0)) for e in eps])


@pytest.mark.parametrize(
    "n, eps0, pc",
    [
        (300, 0.5, fmt20),
        (700, 1.0, fmt20),
        (600, 1.0, fmt23),
        (500, 3.0, fmt23),
        pytest.param(2000, 1.0, fmt20, marks=pytest.mark.slow),
        pytest.param(2000, 1.0, fmt23, marks=pytest.mark.slow),
    ],
)
def test_moderate_n_matches_direct_evaluation(n, eps0, pc):
    """Truncation, block recurrences and closed forms agree with a plain scipy evaluation (n > brute force)."""
    eps = np.array([0.0, 0.02, 0.05, 0.1, 0.2, 0.4])
    direct = _direct_pair_f_delta(n, eps0, pc(eps0), eps)
    lo, up = clone_pair(n, eps0, pc(eps0)).delta_bounds(eps)
    assert np.all(lo <= direct * (1 + 1e-9) + 1e-16) and np.all(direct <= up * (1 + 1e-9) + 1e-16)
    slo = clone_pair_bounds(n, eps0, pc(eps0), max_exact_support=0)[0].delta_bounds(eps)[0]
    sup = clone_pair_bounds(n, eps0, pc(eps0), max_exact_support=0)[1].delta_bounds(eps)[1]
    assert np.all(slo <= direct * (1 + 1e-9) + 1e-16) and np.all(direct <= sup * (1 + 1e-9) + 1e-16)
    assert np.all(sup - slo <= 1e-5 * direct + 1e-15)


class _FamilyMechanism(ShuffleMechanism):
    """Test helper: a mechanism handing out a fixed family."""

    def __init__(self, family: PairFamily) -> None:
        self.family = family

    def pair_family(self, *, tail_mass: float = 0.0) -> PairFamily:
        return self.family

    def describe(self) -> str:
        return "test family"


@pytest.mark.parametrize("rounds", [2, 3, 4])
@pytest.mark.parametrize("n, eps0, reduction", [(4, 1.0, "fmt20"), (6, 0.5, "fmt23"), (6, 2.0, "khh21"), (8, 1.0, "fmt20")])
def test_accountant_composition_brackets_reference(n, eps0, reduction, rounds):
    mech = make(n, eps0, reduction)
    ref = ref_pair(n, eps0, reduction)
    eps = np.array([0.05, 0.3, 1.0, 2.0])
    b = ps.FourierAccountant().compose(mech, count=rounds).get_delta_bounds(eps)
    for e, lo, up, exact in zip(eps, b.lower, b.upper, composed_deltas(ref, eps, rounds)):
        # At ε = rounds·ε0 the true δ is 0 (no loss exceeds ε0: the upper end is capped there); the float
        # reference's products of e^{±ε0} leave ~1e-16 (6.2e-17 at n = 4, ε0 = 1, 2 rounds, ε = 2).
        assert lo <= exact + 1e-15 and exact <= up + 1e-15, (e, lo, exact, up)
        assert up - lo <= 5e-3 * exact + 2e-5


@pytest.mark.parametrize("rounds", [2, 4])
def test_accountant_composition_of_streamed_family(rounds):
    """The streamed (lower, upper) family still brackets the exact composition through the FFT."""
    n, eps0 = 8, 1.0
    lower, upper = clone_pair_bounds(n, eps0, fmt20(eps0), max_exact_support=0, bins=32)
    mech = _FamilyMechanism(PairFamily((upper,), (lower,)))
    ref = pair_clones(n, math.exp(eps0), fmt20(eps0), "F")
    eps = np.array([0.0, 0.2, 0.6, 1.2])
    b = ps.FourierAccountant().compose(mech, count=rounds).get_delta_bounds(eps)
    for e, lo, up, exact in zip(eps, b.lower, b.upper, composed_deltas(ref, eps, rounds)):
        assert lo <= exact <= up, (e, lo, exact, up)


def test_streamed_and_exact_agree_at_scale():
    n, eps0 = 30_000, 1.0
    pc = fmt20(eps0)
    exact = clone_pair(n, eps0, pc)
    lower, upper = clone_pair_bounds(n, eps0, pc, max_exact_support=0)
    eps = np.linspace(0.0, 0.05, 11)
    elo, eup = exact.delta_bounds(eps)
    slo, sup = lower.delta_bounds(eps)[0], upper.delta_bounds(eps)[1]
    assert np.all(slo <= eup) and np.all(elo <= sup)
    assert np.all(sup - slo <= 1e-6 * eup + 1e-15)


def test_pair_family_switches_to_streaming_above_limit():
    small = ShuffledLDP(1000, 1.0).pair_family()
    assert small.upper == small.lower  # exact
    m = ShuffledLDP(10**5, 1.0)
    assert m.support_size() > EXACT_SUPPORT_LIMIT
    big = m.pair_family()
    assert big.upper[0] is not big.lower[0] and big.upper[0].forward.support_size <= 2**17


# ----------------------------------------------------------------------------------- properties
@settings(max_examples=30, deadline=None)
@given(
    n=st.integers(2, 8),
    eps0=st.floats(0.05, 4.0),
    reduction=st.sampled_from(REDUCTIONS),
    bins=st.integers(2, 512),
    eps=st.lists(st.floats(0.0, 5.0), min_size=1, max_size=4),
)
def test_property_exact_and_streamed_bracket_reference(n, eps0, reduction, bins, eps):
    mech = make(n, eps0, reduction)
    ref = ref_pair(n, eps0, reduction)
    exact = clone_pair(n, eps0, mech.clone_probability, variant=mech.variant)
    lower, upper = clone_pair_bounds(n, eps0, mech.clone_probability, variant=mech.variant, max_exact_support=0, bins=bins)
    for e in eps:
        truth = delta_exact(ref, e)
        lo, up = exact.delta_bounds(e)
        assert lo[0] <= truth <= up[0]
        assert lower.delta_bounds(e)[0][0] <= truth * (1 + 1e-12) + 1e-15
        assert truth <= upper.delta_bounds(e)[1][0] * (1 + 1e-12) + 1e-15


@settings(max_examples=25, deadline=None)
@given(n=st.integers(2, 200_000), eps0=st.floats(0.3, 10.0), reduction=st.sampled_from(REDUCTIONS))
def test_property_bookkeeping_and_monotonicity(n, eps0, reduction):
    mech = make(n, eps0, reduction)
    fam = mech.pair_family()
    for pair in (*fam.upper, *fam.lower):
        d = pair.forward
        assert abs(d.finite_mass + d.infinity_mass + d.truncated_mass - 1.0) <= 1e-12
        assert float(np.sum(d.masses * np.exp(-d.losses))) <= 1.0 + 1e-12
    eps = np.linspace(0.0, 1.5 * eps0, 25)
    lower, upper = family_delta(mech, eps)
    assert np.all(lower <= upper)
    assert np.all(np.diff(upper) <= 1e-12) and np.all(np.diff(lower) <= 1e-12)
    assert np.all(upper <= 1.0)
    if reduction != "khh21":
        assert upper[-1] <= 1e-10  # no loss above ε0 for pair F (slack only)


# ----------------------------------------------------------------------------------- ordering
def test_ordering_exact_single_round_small_n():
    for n in (2, 4, 7):
        for eps0 in (0.5, 1.5, 3.0):
            for eps in EPS_GRID:
                d23, d20, dk = (delta_exact(ref_pair(n, eps0, r), eps) for r in ("fmt23", "fmt20", "khh21"))
                assert d23 <= d20 + 1e-14 and d20 <= dk + 1e-14


@pytest.mark.parametrize("n", [20, 300, 3000])
@pytest.mark.parametrize("eps0", [0.5, 1.0, 2.0, 4.0])
def test_ordering_fmt23_fmt20_khh21(n, eps0):
    eps = np.linspace(0.0, eps0, 13)
    (l23, u23), (l20, u20), (lk, uk) = (family_delta(make(n, eps0, r), eps) for r in ("fmt23", "fmt20", "khh21"))
    assert np.all(u23 <= u20 * (1 + 1e-9) + 1e-15)
    assert np.all(u20 <= uk * (1 + 1e-9) + 1e-15)
    assert np.all(l23 <= l20 * (1 + 1e-9) + 1e-15) and np.all(l20 <= lk * (1 + 1e-9) + 1e-15)


# ----------------------------------------------------------------------------------- vs specific randomizers
@pytest.mark.parametrize("n", [2, 3, 4, 5])
@pytest.mark.parametrize("eps0", [0.5, math.log(3), 2.0])
def test_clones_dominate_brute_force_binary_rr(n, eps0):
    p = 1.0 / (math.exp(eps0) + 1.0)
    truths = []
    for ones in range(n):
        x = (0,) + (1,) * ones + (0,) * (n - 1 - ones)
        truths.append(make_pair(*brute_force_binary_rr(n, p, x, (1,) + x[1:])))
    for red in ("fmt23", "fmt20"):
        _, upper = family_delta(make(n, eps0, red), EPS_GRID)
        for eps, up in zip(EPS_GRID, upper):
            truth = max(delta_exact(t, eps) for t in truths)
            assert truth <= up, (red, eps, truth, up)
            assert truth <= delta_exact(ref_pair(n, eps0, red), eps) + 1e-14


@pytest.mark.parametrize("n", [10, 300, pytest.param(5000, marks=pytest.mark.slow), 20_000])
@pytest.mark.parametrize("eps0", [0.5, 1.0, 3.0])
def test_clones_dominate_shuffled_binary_rr(n, eps0):
    eps = np.linspace(0.0, eps0, 9)
    rr_lower, _ = family_delta(ps.ShuffledBinaryRR(n, eps0, dataset="worst"), eps)
    for red in ("fmt23", "fmt20"):
        _, upper = family_delta(make(n, eps0, red), eps)
        assert np.all(rr_lower <= upper), (red, rr_lower, upper)


@pytest.mark.skipif(importlib.util.find_spec("pldshuffle.mechanisms.krr") is None, reason="ShuffledKRR not available")
@pytest.mark.parametrize("n", [10, 300])
@pytest.mark.parametrize("k", [3, 5])
@pytest.mark.parametrize("eps0", [1.0, 3.0])
def test_clones_dominate_shuffled_krr(n, k, eps0):
    from pldshuffle.mechanisms.krr import ShuffledKRR

    eps = np.linspace(0.0, eps0, 9)
    krr = ShuffledKRR(n, k, local_epsilon=eps0, adversary="histogram")
    krr_lower, _ = family_delta(krr, eps)
    for red in ("fmt23", "fmt20"):
        _, upper = family_delta(make(n, eps0, red), eps)
        assert np.all(krr_lower <= upper), (red, krr_lower, upper)


# ----------------------------------------------------------------------------------- published anchors
@pytest.mark.parametrize(
    "n, eps0, published",
    [(10**5, 4.0, 0.1182), (10**6, 4.0, 0.0343), (10**6, 9.0, 0.5286)],
)
def test_one_round_fmt23_anchors(n, eps0, published):
    """published values (Wang et al.'s code = FMT23 strong clone bound), δ = 1e-6, one round."""
    b = ps.FourierAccountant().compose(ShuffledLDP(n, eps0, "fmt23")).get_epsilon_bounds(1e-6)
    assert b.relative_gap <= 1e-4
    assert b.upper == pytest.approx(published, rel=1e-3)


def test_one_round_fmt20_inside_published_bracket():
    """published values: FMT20 (apple code) bracket 0.0493 / 0.0501 at n=1e6, ε0=4, δ=1e-6."""
    b = ps.FourierAccountant().compose(ShuffledLDP(10**6, 4.0, "fmt20")).get_epsilon_bounds(1e-6)
    assert b.relative_gap <= 1e-4
    assert 0.0492 <= b.lower <= b.upper <= 0.0501


@pytest.mark.slow
def test_large_streamed_case_bounded_memory():
    import resource

    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    b = ps.FourierAccountant().compose(ShuffledLDP(10**7, 1.0, "fmt20")).get_epsilon_bounds(1e-6)
    grown_mib = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) / 1024
    assert b.relative_gap <= 1e-4 and 0.0 < b.lower <= b.upper < 0.01
    assert grown_mib < 1024


@pytest.mark.parametrize("reduction", ["fmt20", "fmt23"])
def test_pure_dp_cap_below_the_booked_truncation(reduction):
    """Below the mass booked at +∞ (~1e-17) the upper end used to be ∞; the shuffled reports are a
    post-processing of ε0-LDP reports, so basic composition caps it at rounds·ε0 (lower ends unchanged)."""
    acc = ps.FourierAccountant().compose(ps.ShuffledLDP(1000, 4.0, reduction=reduction), 64)
    for delta in (1e-20, 1e-300):
        b = acc.get_epsilon_bounds(delta)
        assert 0.0 < b.lower <= b.upper <= 64 * 4.0
    assert acc.certified_pld().loss_cap == 64 * 4.0
