"""The Laplace randomizer and its blanket pair: brackets against an independent quadrature of the pair
(tests/laplace_reference.py), monotonicity, never looser than FMT20, participation, bad input."""

from __future__ import annotations

import math

import numpy as np
import pytest

import pldshuffle as ps
from pldshuffle.mechanisms._blanket_laplace import laplace_bounds, side_law, side_moments
from pldshuffle.pld import PrivacyLossPair
from pldshuffle.randomizers import Laplace, make_randomizer, randomizer_spec
from tests.laplace_reference import endpoint_delta, pair_delta_two_users

EPSILONS = np.array([0.0, 0.05, 0.1, 0.2, 0.4, 0.7])


def _bracket(n: int, eps0: float, participation: float = 1.0) -> tuple[np.ndarray, np.ndarray]:
    lower, upper = laplace_bounds(n, eps0, 1e-18, participation=participation)
    return PrivacyLossPair(lower).delta_bounds(EPSILONS)[0], PrivacyLossPair(upper).delta_bounds(EPSILONS)[1]


@pytest.mark.parametrize("n, eps0", [(2, 1.0), (2, 0.3), (2, 3.0), pytest.param(3, 1.0, marks=pytest.mark.slow),
                                     pytest.param(3, 2.0, marks=pytest.mark.slow)])
def test_brackets_the_quadrature_of_the_blanket_pair(n: int, eps0: float) -> None:
    low, up = _bracket(n, eps0)
    exact = np.array([endpoint_delta(n, eps0, float(e)) for e in EPSILONS])
    # quadrature tolerance 1e-11 (absolute): the bracket must hold up to it, and be tight
    assert np.all(low <= exact + 1e-10), (low, exact)
    assert np.all(exact <= up + 1e-10), (exact, up)
    assert np.all(up - low <= 1e-3 * np.maximum(exact, 1e-3) + 1e-9)


def test_two_quadratures_agree() -> None:
    """The reference's two routes (by sides and V's; by outputs y) give the same endpoint δ."""
    for eps in (0.05, 0.3):
        assert endpoint_delta(2, 1.0, eps) == pytest.approx(pair_delta_two_users(0.0, 1.0, 1.0, eps), abs=1e-9)


@pytest.mark.parametrize("x1, x2", [(0.2, 0.9), pytest.param(0.0, 0.5, marks=pytest.mark.slow), pytest.param(0.3, 0.7, marks=pytest.mark.slow),
                                    pytest.param(0.6, 0.1, marks=pytest.mark.slow), pytest.param(0.0, 0.95, marks=pytest.mark.slow),
                                    pytest.param(1.0, 0.4, marks=pytest.mark.slow)])
def test_endpoint_pair_dominates_other_victim_pairs_two_users(x1: float, x2: float) -> None:
    """Numerical evidence for the caveat: at n = 2 the endpoint pair's δ is the largest (both directions)."""
    for eps in ((0.1,) if (x1, x2) == (0.2, 0.9) else (0.0, 0.1, 0.4)):  # the default suite: one ε
        ends = endpoint_delta(2, 1.0, eps)
        assert pair_delta_two_users(x1, x2, 1.0, eps) <= ends + 1e-10
        assert pair_delta_two_users(x2, x1, 1.0, eps) <= ends + 1e-10


def test_side_law_moments() -> None:
    """The spread and the contraction of V keep its mass and mean (closed forms E V = 2e^{ε0/2} - 1)."""
    for eps0 in (0.1, 1.0, 4.0):
        mean, var = side_moments(eps0)
        for upper in (True, False):
            law = side_law(eps0, upper)
            assert law.masses.sum() == pytest.approx(1.0, rel=1e-13)
            assert float(law.masses @ law.points) == pytest.approx(mean, rel=1e-12)
            second = float(law.masses @ law.points**2) - mean**2
            assert (second >= var * (1 - 1e-9)) if upper else (second <= var * (1 + 1e-9))
        # E V, E V² by quadrature of the density v^{-3/2}/2 and the atom
        from scipy import integrate

        top = math.exp(eps0)
        m1 = integrate.quad(lambda v: 0.5 * v**-0.5, 1.0, top)[0] + math.exp(-eps0 / 2) * top
        m2 = integrate.quad(lambda v: 0.5 * v**0.5, 1.0, top)[0] + math.exp(-eps0 / 2) * top**2
        assert mean == pytest.approx(m1, rel=1e-10) and var == pytest.approx(m2 - m1**2, rel=1e-9)


def test_monotone_in_n_and_eps0() -> None:
    base_low, base_up = _bracket(20, 1.0)
    more_low, more_up = _bracket(60, 1.0)
    assert np.all(more_up <= base_up + 1e-12)
    assert np.all(more_low <= base_low + 1e-12)
    big_low, _ = _bracket(20, 2.0)
    assert np.all(base_up[1:] <= big_low[1:] + 1e-12)  # ε0 = 2 leaks more than ε0 = 1 (above ε = 0)


@pytest.mark.parametrize("n, eps0", [(50, 1.0), pytest.param(200, 0.5, marks=pytest.mark.slow), (200, 3.0)])
def test_never_looser_than_fmt20(n: int, eps0: float) -> None:
    R = Laplace(eps0)
    accountant = ps.FourierAccountant()
    for delta in (1e-3, 1e-6):
        blanket = accountant.compose(ps.ShuffledLDP(n, randomizer=R, reduction="blanket")).get_epsilon_bounds(delta)
        fmt20 = accountant.compose(ps.ShuffledLDP(n, randomizer=R, reduction="fmt20")).get_epsilon_bounds(delta)
        assert blanket.upper <= fmt20.lower
        assert blanket.lower <= blanket.upper


def test_shuffled_ldp_default_is_the_blanket_pair() -> None:
    mech = ps.ShuffledLDP(40, randomizer=Laplace(1.0, input_min=-2.0, input_max=5.0))
    assert mech.reduction == "blanket" and mech.blanket_pair.methods == ("laplace",)
    family = mech.pair_family()
    assert any("victim inputs at the domain's ends" in c for c in family.caveats)
    # the domain's location and width do not matter (only ε0 does)
    other = ps.ShuffledLDP(40, randomizer=Laplace(1.0))
    a = ps.FourierAccountant().compose(mech).get_epsilon_bounds(1e-5)
    b = ps.FourierAccountant().compose(other).get_epsilon_bounds(1e-5)
    assert a.upper == pytest.approx(b.upper, rel=1e-12)


def test_participation_brackets_its_definition() -> None:
    """q < 1: the blanket pair of R_q (voids in the blanket, γ_q = 1 - q + qγ), at n = 2 and 3 against the
    quadrature of its definition (tests/laplace_reference.py, the voids counted per item)."""
    for n, q, eps0 in ((2, 0.5, 1.0), (3, 0.3, 2.0)):
        low, up = _bracket(n, eps0, participation=q)
        exact = np.array([endpoint_delta(n, eps0, float(eps), participation=q) for eps in EPSILONS])
        assert np.all(low <= exact + 1e-10) and np.all(exact <= up + 1e-10)
        # fewer reports: more privacy than full participation at the same n
        full_up = _bracket(n, eps0)[1]
        assert np.all(up[1:] <= full_up[1:])


def test_participation_never_worse_than_everybody_reporting() -> None:
    """The pair of R_q is a post-processing of the pair of R (thin each item to ⊥ with probability 1 - q,
    add the other users' voids, forget B: docs/mathematics.md), so participation can only lower ε; with
    amplification it lowers it a lot (n = 300, ε0 = 0.5, δ = 1e-6: 0.110 at q = 1, 0.076 at q = 0.5)."""
    def eps(n: int, e0: float, q: float, delta: float) -> float:
        return ps.FourierAccountant().compose(ps.ShuffledLDP(n, randomizer=Laplace(e0), participation=q)).get_epsilon_bounds(delta).upper

    for n, e0, qs in ((100, 0.5, (1.0, 0.5)), (3, 2.0, (1.0, 0.9, 0.5, 0.1))):
        values = [eps(n, e0, q, 1e-6) for q in qs]
        assert all(b <= a * (1 + 1e-9) for a, b in zip(values, values[1:]))
    assert eps(100, 0.5, 0.5, 1e-6) < 0.85 * eps(100, 0.5, 1.0, 1e-6)


def test_clone_constants_hold_on_a_grid() -> None:
    """Each victim pair (x, x') has ratio ≤ some member's p and r*(x, x') ≥ that member's r."""
    R = Laplace(1.5)
    members = R.clone_constants()
    y = np.linspace(-12.0, 13.0, 20001)
    floor = np.exp(-(np.abs(y - 0.5) + 0.5) / R.scale) / (2 * R.scale)
    for x in np.linspace(0.0, 1.0, 9):
        for xp in np.linspace(0.0, 1.0, 9):
            if x == xp:
                continue
            fx, fxp = R.density(float(x), y), R.density(float(xp), y)
            p_star = float(np.max(np.maximum(fx / fxp, fxp / fx)))
            r_star = float(np.min(floor / (fx + fxp)))
            assert any(p_star <= m.ratio * (1 + 1e-9) and r_star >= m.clone_probability * (1 - 1e-9) for m in members)
    assert not R.in_fmt23_class
    assert R.total_variation() == pytest.approx(1 - math.exp(-0.75))


def test_registry_round_trip() -> None:
    R = make_randomizer("laplace", local_epsilon=2.0, input_min=-1.0, input_max=3.0)
    assert R == Laplace(2.0, -1.0, 3.0) and R.scale == 2.0
    spec = randomizer_spec(R)
    assert spec.pop("randomizer") == "laplace"
    assert make_randomizer("laplace", **spec) == R


@pytest.mark.parametrize("kwargs, name", [
    ({"local_epsilon": 1.0, "input_min": 1.0, "input_max": 1.0}, "input_min < input_max"),
    ({"local_epsilon": 1.0, "input_min": 2.0, "input_max": 1.0}, "input_min < input_max"),
    ({"local_epsilon": 1.0, "input_min": -math.inf}, "input_min"),
    ({"local_epsilon": 1.0, "input_max": math.nan}, "input_max"),
    ({"local_epsilon": 1.0, "input_min": -1e308, "input_max": 1e308}, "input_max - input_min"),
    ({"local_epsilon": 0.0}, "local_epsilon"),
    ({"local_epsilon": -1.0}, "local_epsilon"),
])
def test_bad_input(kwargs: dict, name: str) -> None:
    with pytest.raises(ValueError, match=name):
        Laplace(**kwargs)


def test_bad_input_types_and_matrix() -> None:
    with pytest.raises(TypeError, match="local_epsilon"):
        Laplace("1")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="continuous"):
        Laplace(1.0).matrix()
    with pytest.raises(ValueError, match="participation"):
        ps.ShuffledLDP(10, randomizer=Laplace(1.0), participation=0.0)


def test_cli_laplace(capsys: pytest.CaptureFixture[str]) -> None:
    import json

    from pldshuffle.cli import main

    args = ["epsilon", "--mechanism", "ldp", "--randomizer", "laplace", "--local-epsilon", "1", "--input-min", "-1",
            "--input-max", "3", "--num-users", "30", "--delta", "1e-6", "--json", "--quiet"]
    assert main(args) == 0
    out = json.loads(capsys.readouterr().out)
    direct = ps.FourierAccountant().compose(ps.ShuffledLDP(30, randomizer=Laplace(1.0, -1.0, 3.0))).get_epsilon_bounds(1e-6)
    text = json.dumps(out)
    assert "laplace" in text and f"{direct.upper:.6g}"[:5] in text
    bad = [("-1" if a == "3" else a) for a in args]  # input_max = input_min: zero width
    assert main(bad) != 0
    assert "input_min < input_max" in capsys.readouterr().err


from hypothesis import given, settings, strategies as st  # noqa: E402


@settings(max_examples=6, deadline=None)
@given(eps0=st.floats(0.05, 6.0), epsilon=st.floats(0.0, 1.0), q=st.sampled_from([1.0, 0.3]))
def test_random_parameters_bracket_the_quadrature(eps0: float, epsilon: float, q: float) -> None:
    """n = 2, random ε0, ε and participation: lower ≤ quadrature ≤ upper."""
    epsilon = min(epsilon, eps0)
    lower, upper = laplace_bounds(2, eps0, 1e-18, participation=q)
    low = float(PrivacyLossPair(lower).delta_bounds(np.array([epsilon]))[0][0])
    up = float(PrivacyLossPair(upper).delta_bounds(np.array([epsilon]))[1][0])
    exact = endpoint_delta(2, eps0, epsilon, participation=q)
    assert low <= exact + 1e-10 and exact <= up + 1e-10


def test_composes_below_fmt20() -> None:
    R = Laplace(1.0)
    blanket = ps.FourierAccountant().compose(ps.ShuffledLDP(30, randomizer=R), 8).get_epsilon_bounds(1e-6)
    fmt20 = ps.FourierAccountant().compose(ps.ShuffledLDP(30, randomizer=R, reduction="fmt20"), 8).get_epsilon_bounds(1e-6)
    assert 0.0 < blanket.lower <= blanket.upper <= fmt20.lower
    assert (blanket.upper - blanket.lower) / blanket.upper < 1e-3


@pytest.mark.slow
def test_one_round_gap_at_the_defaults() -> None:
    """n = 1e3, ε0 = 1, δ = 1e-6, one round: relative ε gap of the certified bracket ≤ 1e-4 (the grids and
    lattice of the pair are fine enough; measured 6.9e-5), and the bracket is strict (lower ≤ upper)."""
    b = ps.FourierAccountant().compose(ps.ShuffledLDP(1000, randomizer=Laplace(1.0))).get_epsilon_bounds(1e-6)
    assert 0.0 < b.lower <= b.upper
    assert (b.upper - b.lower) / b.upper <= 1e-4


def test_default_keeps_the_blanket_pair_at_ten_thousand_users() -> None:
    """The finer group tolerance is used only where it is estimated cheap: at n = 1e4 the estimate stays under
    the default's fallback threshold, so ShuffledLDP still answers with the blanket pair."""
    from pldshuffle.mechanisms._blanket_laplace import LAPLACE_FINE_GROUP_TOLERANCE, LAPLACE_GROUP_TOLERANCE, group_tolerance
    from pldshuffle.mechanisms.clones import BLANKET_DEFAULT_SECONDS

    assert group_tolerance(1000, 1.0, 1e-18)[0] == LAPLACE_FINE_GROUP_TOLERANCE
    assert group_tolerance(10_000, 1.0, 1e-18)[0] == LAPLACE_GROUP_TOLERANCE
    mech = ps.ShuffledLDP(10_000, randomizer=Laplace(1.0))
    assert mech.reduction == "blanket" and mech.blanket_pair.build_seconds() <= BLANKET_DEFAULT_SECONDS
