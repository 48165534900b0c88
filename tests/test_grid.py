"""The two lower discretisations (merged onto the lattice, rounded down) against exact atoms.

A lower lattice measure must be dominated by the exact PLD in every composition.  For one direction this
is the profile inequality ``Σ ω'(z)(1 - e^{ε-z})_+ ≤ Σ ω(s)(1 - e^{ε-s})_+`` at *every* real ε (Blackwell's
ordering of dichotomies); compositions are checked directly on exact atoms (outer sums, no lattice, no FFT).
"""

from __future__ import annotations

import math

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

import pldshuffle as ps
from pldshuffle.pld.discretize import discretize

EPS = np.linspace(-6.0, 6.0, 241)


def profile(losses: np.ndarray, masses: np.ndarray, eps: np.ndarray) -> np.ndarray:
    """``Σ m (1 - e^{ε - s})_+`` at each ε, directly."""
    gap = np.maximum(1.0 - np.exp(np.minimum(eps[:, None] - losses[None, :], 0.0)), 0.0)
    return gap @ masses


def atoms(draw_losses: list[float], draw_masses: list[float]) -> tuple[np.ndarray, np.ndarray]:
    order = np.argsort(draw_losses)
    losses = np.asarray(draw_losses, dtype=np.float64)[order]
    masses = np.asarray(draw_masses, dtype=np.float64)[order]
    return losses, masses / masses.sum()


def lattice_atoms(measure, spacing: float) -> tuple[np.ndarray, np.ndarray]:
    """The measure's non-zero masses and their losses."""
    kept = np.flatnonzero(measure.masses)
    return (measure.start + kept) * spacing, measure.masses[kept]


@settings(max_examples=60, deadline=None)
@given(
    losses=st.lists(st.floats(-5.0, 5.0), min_size=1, max_size=40),
    seed=st.integers(0, 2**31),
    spacing=st.sampled_from([1e-4, 3.3e-3, 0.05, 0.4]),
    on_grid=st.booleans(),
)
def test_both_lower_measures_are_dominated_in_one_and_two_rounds(losses, seed, spacing, on_grid):
    rng = np.random.default_rng(seed)
    if on_grid:  # atoms exactly on lattice points exercise the rounding hair of the merge
        losses = [round(s / spacing) * spacing for s in losses]
    losses, masses = atoms(losses, list(rng.random(len(losses)) + 1e-3))
    d = discretize(losses, masses, 0.0, 0.0, spacing)
    exact = profile(losses, masses, EPS)
    pairs = (losses[:, None] + losses[None, :]).ravel(), (masses[:, None] * masses[None, :]).ravel()
    exact_two = profile(*pairs, 2 * EPS)
    for measure in (d.merged, d.rounded):
        z, m = lattice_atoms(measure, spacing)
        assert m.sum() <= 1.0 + 1e-12 and np.all(m >= 0.0)
        assert np.all(profile(z, m, EPS) <= exact + 1e-12)
        z2, m2 = (z[:, None] + z[None, :]).ravel(), (m[:, None] * m[None, :]).ravel()
        assert np.all(profile(z2, m2, 2 * EPS) <= exact_two + 1e-12)


@settings(max_examples=40, deadline=None)
@given(losses=st.lists(st.floats(-3.0, 3.0), min_size=2, max_size=30, unique=True), seed=st.integers(0, 2**31))
def test_rounded_offsets_are_lower_bounds_on_the_amount_moved_down(losses, seed):
    # The certified shift needs every offset d to satisfy: the group's loss is at least z + d·Δ.  Rounding
    # keeps groups within a cell, one per occupied cell, listed from the top.
    spacing = 0.07
    rng = np.random.default_rng(seed)
    losses, masses = atoms(losses, list(rng.random(len(losses)) + 1e-3))
    losses = losses[np.abs(losses / spacing - np.round(losses / spacing)) > 1e-6]  # off the lattice points
    masses = masses[: losses.size] / masses[: losses.size].sum()
    if losses.size == 0:
        return
    rounded = discretize(losses, masses, 0.0, 0.0, spacing).rounded
    cells = np.unique(np.floor(losses / spacing))[::-1]
    assert rounded.merged == 0.0 and rounded.offsets.size == cells.size
    for cell, offset, mass in zip(cells, rounded.offsets, rounded.offset_masses):
        inside = np.floor(losses / spacing) == cell
        merged_loss = math.log(masses[inside].sum() / (masses[inside] * np.exp(-losses[inside])).sum())
        assert 0.0 <= offset * spacing <= merged_loss - cell * spacing + 1e-12
        assert mass <= masses[inside].sum() * (1 + 1e-12)


def test_two_atoms_merge_into_the_two_inner_lattice_points():
    # Randomized response (P = (3/4, 1/4) against Q = (1/4, 3/4)): the largest contraction of u = e^{-s} onto
    # the lattice keeps the mean of u and sits at ceil(-log 3) and floor(log 3).
    spacing = 0.3
    losses = np.array([-math.log(3.0), math.log(3.0)])
    masses = np.array([0.25, 0.75])
    merged = discretize(losses, masses, 0.0, 0.0, spacing).merged
    z, m = lattice_atoms(merged, spacing)
    np.testing.assert_allclose(z, [math.ceil(losses[0] / spacing) * spacing, math.floor(losses[1] / spacing) * spacing])
    assert abs(m @ np.exp(-z) - masses @ np.exp(-losses)) <= 1e-12
    assert abs(m.sum() - 1.0) <= 1e-12 and merged.merged == m.sum()


def test_merged_measure_of_a_dense_pld_keeps_its_mean_to_second_order():
    # A binomial-shaped PLD with many atoms per cell: merging moves the loss's mean by O(Δ²); rounding
    # down by about Δ/2.
    spacing = 1e-3
    losses = np.linspace(-0.8, 1.0, 20001)
    masses = np.exp(-0.5 * ((losses - 0.1) / 0.2) ** 2)
    masses /= masses.sum()
    d = discretize(losses, masses, 0.0, 0.0, spacing)
    mean = float(losses @ masses)
    mean_merged = d.merged.moments(spacing)[0]
    mean_rounded = d.rounded.moments(spacing)[0]
    assert 0.0 <= mean - mean_merged <= 4 * spacing**2
    assert mean - mean_rounded >= 0.4 * spacing
    assert d.merged.merged >= 1.0 - 1e-6  # all but the top atom (on a lattice point, nothing above) sits exactly


def lattice_pair(h: float, count: int, seed: int) -> tuple[ps.PairMechanism, np.ndarray, np.ndarray, float]:
    """A pair whose losses are ``(o - c)·h + κ``: P random on ``count`` outcomes, Q ∝ P·e^{-(o - c)h}.
    Returns the mechanism, P, Q and κ."""
    rng = np.random.default_rng(seed)
    p = rng.random(count) + 0.2
    p /= p.sum()
    q = p * np.exp(-(np.arange(count) - count / 2) * h)
    q /= q.sum()
    return ps.PairMechanism.from_probability_mass_functions(p, q), p, q, float(math.log(p[0] / q[0]))


def exact_delta(p: np.ndarray, q: np.ndarray, h: float, kappa: float, rounds: int, eps: float) -> float:
    """δ(ε) of ``rounds`` compositions, the larger of both orders: losses of ``P/Q`` on the lattice ``j·h``
    plus ``rounds·κ``, masses by repeated direct convolution (no FFT)."""
    composed_p, composed_q = np.ones(1), np.ones(1)
    for _ in range(rounds):
        composed_p, composed_q = np.convolve(composed_p, p), np.convolve(composed_q, q)
    losses = np.arange(composed_p.size) * h + rounds * kappa
    forward, backward = losses > eps, -losses > eps
    return max(
        float(np.sum(composed_p[forward] * -np.expm1(eps - losses[forward]))),
        float(np.sum(composed_q[backward] * -np.expm1(eps + losses[backward]))),
    )


def test_long_composition_of_a_dense_pair_is_tight_at_the_lower_end():
    # 60 outcomes 0.02 apart in loss, 48 rounds: the merged lower end is within O(Δ·h) per round of the
    # exact value (a rounded-down one would sit about six standard deviations of the summed offsets below).
    h, rounds = 0.02, 48
    mech, p, q, kappa = lattice_pair(h, 60, seed=3)
    acc = ps.FourierAccountant().compose(mech, rounds)
    for eps in (0.5, 1.5, 3.0):
        bounds = acc.get_delta_bounds(eps)
        exact = exact_delta(p, q, h, kappa, rounds, eps)
        assert bounds.lower <= exact * (1 + 1e-9) + 1e-15
        assert exact <= bounds.upper * (1 + 1e-9) + 1e-15
    for delta in (1e-3, 1e-8):
        b = acc.get_epsilon_bounds(delta)
        assert (b.upper - b.lower) <= 1e-4 * b.upper


@settings(max_examples=10, deadline=None)
@given(
    h=st.sampled_from([0.003, 0.02, 0.1, 0.7]),
    count=st.integers(2, 40),
    rounds=st.integers(2, 60),
    seed=st.integers(0, 2**31),
    eps=st.floats(0.0, 4.0),
)
def test_compositions_of_dense_and_sparse_pairs_bracket_the_exact_value(h, count, rounds, seed, eps):
    # Whichever lower measure each witness composes (merged for dense pairs, rounded for sparse ones),
    # lower ≤ exact ≤ upper against direct convolution, both orders.
    mech, p, q, kappa = lattice_pair(h, count, seed)
    bounds = ps.FourierAccountant().compose(mech, rounds).get_delta_bounds(eps)
    exact = exact_delta(p, q, h, kappa, rounds, eps)
    assert bounds.lower <= exact * (1 + 1e-9) + 1e-15
    assert exact <= bounds.upper * (1 + 1e-9) + 1e-15
