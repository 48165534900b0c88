"""Every computed loss lies within its distribution's ``loss_error`` of the exact loss, and the profile bounds
count that error in full.

The exact losses come from tests/reference.py in exact rational arithmetic (Fractions of the very floats the
library starts from), their logarithms from mpmath at 50 digits: no floating-point log-ratio is trusted.  Over
many rounds the error moves ε by rounds × loss_error, so a loose default (2e-9 per round) had cost 2RR at
ε0 = 1e-3 over 1e6 rounds a gap of 27 % at δ = 1e-2; the mechanisms now state their own bound.
"""

from __future__ import annotations

import math
from fractions import Fraction

import mpmath
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import pldshuffle as ps
import reference as ref
from pldshuffle.pld import LossDistribution, PrivacyLossPair, log_ratio_error

mpmath.mp.dps = 50


def exact_losses(pair: dict) -> np.ndarray:
    """Sorted exact losses ``log(P/Q)`` of the finite outcomes, as floats (correctly rounded); the backward
    direction's are their negatives."""
    out = []
    for p, q in pair.values():
        if p > 0 and q > 0:
            ratio = mpmath.mpf(Fraction(p).numerator) * Fraction(q).denominator / (mpmath.mpf(Fraction(p).denominator) * Fraction(q).numerator)
            out.append(float(mpmath.log(ratio)))
    return np.sort(np.array(out))


def assert_within_loss_error(direction: LossDistribution, exact: np.ndarray) -> float:
    """Each computed loss is within ``loss_error`` of the nearest exact loss (a loss off by more would have to
    land within the bound of another outcome's, ~1e-13 here); returns the largest error seen."""
    exact = np.sort(np.concatenate([exact, -exact]))  # either direction
    at = np.clip(np.searchsorted(exact, direction.losses), 1, exact.size - 1)
    nearest = np.minimum(np.abs(direction.losses - exact[at - 1]), np.abs(direction.losses - exact[at]))
    assert np.all(nearest <= direction.loss_error), (float(nearest.max()), direction.loss_error)
    return float(nearest.max())


def test_scaled_binary_rr_reference_is_the_fraction_one():
    p = ps.ShuffledBinaryRR(9, 0.8).flip_probability
    scaled, exact = ref.pair_binary_rr_scaled(9, p, 3), ref.pair_binary_rr(9, Fraction(p), 3)
    assert scaled.keys() == exact.keys()
    for j, (a, b) in scaled.items():
        assert Fraction(a, b) == exact[j][0] / exact[j][1]


@pytest.mark.parametrize(("n", "eps0", "m"), [(7, 1e-3, 0), (7, 5.0, 3), (40, 0.7, 12), (300, 1e-3, 150), (300, 2.0, 100)])
def test_binary_rr_losses_within_their_error(n, eps0, m):
    """Both the direct convolution (n ≤ 40) and the three-term recurrence (n = 300) paths; the bound is
    ~|1 - 2p|·2·MASS_RTOL, so ~1e-13 at ε0 = 1e-3 (the default allowance would be 2e-9)."""
    mech = ps.ShuffledBinaryRR(n, eps0)
    pair = mech.dataset_pair(m)
    exact = exact_losses(ref.pair_binary_rr_scaled(n, mech.flip_probability, m))
    for direction in pair.directions:
        assert_within_loss_error(direction, exact)
        assert direction.loss_error <= 2.01e-10 * math.tanh(eps0 / 2) + 20 * 2.0**-53 * (1 + eps0)


@pytest.mark.parametrize(("adversary", "n", "k", "gamma"), [("strong", 6, 3, 0.3), ("strong", 40, 4, 0.999), ("weak", 8, 3, 0.4),
                                                          ("khh21", 9, 2, 0.05), ("histogram", 7, 4, 0.6)])
def test_krr_losses_within_their_error(adversary, n, k, gamma):
    pair = ps.ShuffledKRR(n, k, gamma=gamma, adversary=adversary).pair_family().upper[0]
    reference = {"strong": ref.pair_krr_strong, "khh21": ref.pair_krr_strong_khh21, "weak": ref.pair_krr_weak,
                 "histogram": ref.pair_krr_hist}[adversary]
    exact = exact_losses(reference(n, k, Fraction(gamma)))
    for direction in pair.directions:
        assert_within_loss_error(direction, exact)
        assert direction.loss_error < 1e-12


@pytest.mark.parametrize(("reduction", "n", "eps0"), [("fmt20", 9, 1.0), ("fmt23", 8, 0.05), ("khh21", 10, 3.0)])
def test_clone_losses_within_their_error(reduction, n, eps0):
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # khh21: reproduction only
        mech = ps.ShuffledLDP(n, eps0, reduction=reduction)
    pair = mech.pair_family().upper[0]
    variant = "K" if reduction == "khh21" else "F"
    exact = exact_losses(ref.pair_clones(n, Fraction(math.exp(eps0)), Fraction(mech.clone_probability), variant))
    for direction in pair.directions:
        assert_within_loss_error(direction, exact)


def test_user_pmf_losses_within_their_error():
    """Masses from 1e-300 to 1: the logarithms' rounding grows with |log mass|, and the bound with it."""
    rng = np.random.default_rng(5)
    p = rng.dirichlet(np.full(30, 0.5)) * np.exp(-rng.uniform(0, 690, 30) * (rng.random(30) < 0.3))
    q = rng.dirichlet(np.full(30, 0.5))
    pair = PrivacyLossPair.from_probability_mass_functions(p, q, missing_mass="infinity")
    exact = exact_losses({i: (Fraction(float(a)), Fraction(float(b))) for i, (a, b) in enumerate(zip(p, q))})
    worst = max(assert_within_loss_error(d, exact) for d in pair.directions)
    assert worst > 0.0 and pair.forward.loss_error < 1e-11


def test_loss_error_is_validated_and_defaults_to_a_log_ratios_rounding():
    """Losses given directly are taken as computed from exact masses: a few ulps of the largest logarithm,
    |log p| + |loss| (a bound on |log q| too), ~1e-14."""
    d = LossDistribution(np.array([-3.0, 0.5]), np.array([0.25, 0.75]))
    assert d.loss_error == log_ratio_error(3.0 + math.log(4.0)) and 1e-15 < d.loss_error < 1e-13
    tiny = LossDistribution(np.array([0.0, 0.1]), np.array([1e-300, 0.5]))  # a tiny mass's logarithm dominates
    assert tiny.loss_error == log_ratio_error(-math.log(1e-300))
    assert LossDistribution(np.array([0.1]), np.array([1.0]), loss_error=0).loss_error == 0.0
    for bad in (-1e-12, math.inf, -math.inf):
        with pytest.raises(ValueError, match="loss_error"):
            LossDistribution(np.array([0.1]), np.array([1.0]), loss_error=bad)
    for bad in ("1e-9", True, None, 1j):
        with pytest.raises(TypeError, match="loss_error"):
            LossDistribution(np.array([0.1]), np.array([1.0]), loss_error=bad)


@pytest.mark.parametrize("seed", range(4))
def test_profile_bounds_hold_for_any_losses_within_the_error(seed):
    """The upper bounds hold for the losses all raised by ``loss_error``, the lower ones for them all lowered
    (every admissible exact distribution lies between the two), checked by exact sums at many ε."""
    rng = np.random.default_rng(seed)
    losses = np.sort(rng.uniform(-2, 2, 25))
    masses = rng.dirichlet(np.ones(25)) * 0.999
    error = 10.0 ** rng.uniform(-6, -2)
    d = LossDistribution(losses, masses, infinity_mass=5e-4, loss_error=error)
    eps = np.sort(np.concatenate([losses, losses - error / 2, losses + error / 2, rng.uniform(-3, 3, 50)]))

    def profile(shift: float) -> np.ndarray:
        return np.array([5e-4 + math.fsum(m * max(1 - math.exp(e - s - shift), 0.0) for s, m in zip(d.losses, d.masses)) for e in eps])

    raised, lowered = profile(error), profile(-error)
    lower, upper = d.hockey_stick_bounds(eps)
    assert np.all(upper >= raised) and np.all(lower <= lowered)
    assert np.all(d.hockey_stick_upper_sorted(eps) >= raised)
    assert np.all(d.hockey_stick_upper_swept(eps) >= raised)
    # ... and not much more: the error times the mass near ε, on each side.
    assert np.all(upper - lower <= raised - lowered + 4 * error + 1e-12)


def test_long_ledger_of_tiny_losses_keeps_its_gap():
    """2RR worst case, n = 1000, ε0 = 1e-3, 1e4 rounds: per-round losses ~3e-5 and ε(1e-6) ≈ 0.0097.  The
    per-round envelope read the exact pairs' profiles shifted by the default 2e-9, which composed to 2e-5
    (gap 2.1 ‰); with the pairs' own bound (1e-13) the gap is 0.05 ‰."""
    acc = ps.FourierAccountant().compose(ps.ShuffledBinaryRR(1000, 1e-3), 10_000)
    for delta in (1e-12, 1e-6):
        b = acc.get_epsilon_bounds(delta)
        assert 0.0 < b.lower <= b.upper <= b.lower * (1 + 2e-4), (delta, b)


@pytest.mark.parametrize("seed", range(3))
def test_lattice_measures_hold_for_any_losses_within_the_error(seed):
    """Connect-the-dots of the losses raised by ``loss_error`` dominates the losses all raised; the merged
    and the rounded lower measures carry the error and, read that much further right, are dominated by the
    losses all lowered (exact sums, at and between lattice points)."""
    from pldshuffle.pld.lattice import lower_direction, upper_direction

    rng = np.random.default_rng(seed)
    spacing = 10.0 ** rng.uniform(-3, -1)
    losses = np.sort(rng.uniform(-1, 1, 40))
    losses[:3] = np.round(losses[:3] / spacing) * spacing  # atoms at lattice points too
    masses = rng.dirichlet(np.ones(40))
    error = spacing * 10.0 ** rng.uniform(-4, -0.5)
    d = LossDistribution(losses, masses, loss_error=error)
    grid = np.linspace(-1.2, 1.2, 801)

    def exact(shift: float) -> np.ndarray:
        return np.array([math.fsum(m * max(1 - math.exp(e - s - shift), 0.0) for s, m in zip(d.losses, d.masses)) for e in grid])

    def measure(direction, at: np.ndarray) -> np.ndarray:
        z = (direction.start + np.arange(direction.masses.size)) * spacing
        return (direction.masses[None, :] * -np.expm1(np.minimum(at[:, None] - z[None, :], 0.0))).sum(axis=1) + direction.infinity

    up, low = upper_direction(d.discretize(spacing)), lower_direction(d.discretize(spacing))
    assert up.loss_error == 0.0 and np.all(measure(up, grid) >= exact(error) * (1 - 1e-12))
    for lower in (low, low.alternative):
        # The rounded one sits below by its offsets, which the accountant's certified shift recovers.
        assert lower.loss_error == error
        assert np.all(measure(lower, grid + error) <= exact(-error) * (1 + 1e-12) + 1e-15)


def test_composed_bracket_holds_for_any_losses_within_the_error():
    """Three rounds of a pair whose losses are only known within 0.02: the bracket holds both the
    composition with every loss raised and the one with every loss lowered (enumerated exactly)."""
    import itertools

    losses, masses, error = np.array([-0.7, -0.1, 0.3, 0.9]), np.array([0.1, 0.3, 0.4, 0.2]), 0.02
    d = LossDistribution(losses, masses, loss_error=error)
    acc = ps.FourierAccountant().compose(ps.PairMechanism(PrivacyLossPair(d, None)), 3)

    def composed(shift: float, eps: float) -> float:
        terms = []
        for idx in itertools.product(range(4), repeat=3):
            loss = sum(losses[i] + shift for i in idx)
            terms.append(math.prod(masses[i] for i in idx) * max(1 - math.exp(eps - loss), 0.0))
        return math.fsum(terms)

    for eps in (0.0, 0.4, 1.1, 2.0):
        b = acc.get_delta_bounds(eps)
        assert b.lower <= composed(-error, eps) and composed(error, eps) <= b.upper, (eps, b)


@settings(max_examples=12, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), rounds=st.tuples(st.integers(1, 2), st.integers(1, 2)), eps=st.floats(0.0, 2.5))
def test_mixed_ledger_of_uncertain_losses_brackets_both_extremes(seed, rounds, eps):
    """Two different pairs whose losses are known only within their (random) errors, composed in a ledger:
    the bracket holds the compositions with every loss raised and with every loss lowered (enumerated)."""
    import itertools

    rng = np.random.default_rng(seed)
    entries = []
    for count in rounds:
        size = int(rng.integers(2, 5))
        losses, masses = np.sort(rng.uniform(-1.5, 1.5, size)), rng.dirichlet(np.ones(size))
        entries.append((LossDistribution(losses, masses, loss_error=float(10.0 ** rng.uniform(-6, -1.5))), count))
    acc = ps.FourierAccountant()
    for d, count in entries:
        acc = acc.compose(ps.PairMechanism(PrivacyLossPair(d, None)), count)
    per_round = [d for d, count in entries for _ in range(count)]

    def composed(sign: int) -> float:
        terms = []
        for idx in itertools.product(*[range(d.losses.size) for d in per_round]):
            loss = sum(d.losses[i] + sign * d.loss_error for d, i in zip(per_round, idx))
            terms.append(math.prod(d.masses[i] for d, i in zip(per_round, idx)) * max(1 - math.exp(eps - loss), 0.0))
        return math.fsum(terms)

    b = acc.get_delta_bounds(eps)
    assert b.lower <= composed(-1) * (1 + 1e-12) and composed(1) <= b.upper * (1 + 1e-12), (b, composed(-1), composed(1))
