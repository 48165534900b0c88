"""The envelope of a family built from the exact pairs (chords between bounded lattice points).

Checked against the pairs' exact profiles (``reference.hockey_stick``, no lattice) at real ε between
lattice points, and against the envelope of the pairs' full lattice measures.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from pldshuffle.worstcase.cover import _cover
from pldshuffle.worstcase.envelope import _Exact, _Lattice
from pldshuffle.pld.lattice import upper_direction
from pldshuffle.pld import PrivacyLossPair

import reference as ref


def _measure_profile(direction, spacing: float, eps: np.ndarray) -> np.ndarray:
    """Profile of a lattice measure at real ε: ``ω(∞) + Σ_{z > ε} ω(z)(1 - e^{ε - z})``."""
    z = (direction.start + np.arange(direction.masses.size)) * spacing
    terms = direction.masses[None, :] * -np.expm1(np.minimum(eps[:, None] - z[None, :], 0.0))
    return terms.sum(axis=1) + direction.infinity


def _family(kind: str) -> tuple[list[PrivacyLossPair], list[dict]]:
    if kind == "binary_rr":  # every dataset of shuffled 2RR, n = 40, ε0 = 1.3
        n, p = 40, 1.0 / (math.exp(1.3) + 1.0)
        dicts = [ref.pair_binary_rr(n, p, m) for m in range(n)]
    else:  # random pairs with zeros (mass at +inf both ways) and a deficit (truncated mass)
        rng = np.random.default_rng(11)
        dicts = []
        for _ in range(12):
            p, q = rng.dirichlet(np.full(9, 0.4)), rng.dirichlet(np.full(9, 0.4))
            p[rng.integers(9)] = 0.0
            q[rng.integers(9)] = 0.0
            dicts.append({i: (float(a) * 0.999, float(b)) for i, (a, b) in enumerate(zip(p, q))})
    pairs = []
    for d in dicts:
        keys = sorted(d)
        pairs.append(PrivacyLossPair.from_probability_mass_functions(
            [float(d[k][0]) for k in keys], [float(d[k][1]) for k in keys], missing_mass="infinity"))
    return pairs, dicts


@pytest.mark.parametrize("kind", ["binary_rr", "random"])
@pytest.mark.parametrize("spacing", [1e-3, 3.7e-2])
def test_envelope_dominates_every_member_between_lattice_points(kind, spacing):
    pairs, dicts = _family(kind)
    env = _Exact(spacing).envelope(pairs)
    lo_eps = (env.start - 3) * spacing
    eps = np.concatenate([
        np.linspace(lo_eps, (env.start + env.masses.size + 3) * spacing, 151),
        (env.start + np.unique(np.linspace(0, env.masses.size, 151).astype(int)) + 0.5) * spacing,  # mid-points
        [lo_eps - 5.0],  # far left: the envelope must hold the largest total mass
    ])
    got = _measure_profile(env, spacing, eps)
    for pair in dicts:
        P, Q = ref.split_pair(pair)
        for a, b in ((P, Q), (Q, P)):
            exact = np.array([ref.hockey_stick(a, b, float(e)) for e in eps])  # outcomes with b = 0 included
            deficit = 1.0 - math.fsum(float(v) for v in a.values())  # booked at +inf by the upper bound
            assert np.all(got >= exact + max(deficit, 0.0) - 1e-15 * (1.0 + exact))


@pytest.mark.parametrize("kind", ["binary_rr", "random"])
def test_envelope_is_the_lattice_measures_envelope_up_to_its_tolerance(kind):
    """At lattice points the chords may exceed the pointwise maximum by at most 2·tolerance (relative)."""
    spacing = 2e-3
    pairs, _ = _family(kind)
    chords = _Exact(spacing).envelope(pairs)
    full = _Lattice(spacing, lambda p: [upper_direction(d.discretize(spacing)) for d in p.directions]).envelope(pairs)
    size = max(chords.masses.size, full.masses.size) + 2
    grid = (min(chords.start, full.start) + np.unique(np.linspace(0, size, 2001).astype(int))) * spacing
    a, b = _measure_profile(chords, spacing, grid), _measure_profile(full, spacing, grid)
    material = b > 1e-25
    # Both read the losses raised by their error bound, the lattice measures with a margin for the rounding of
    # the raised losses (1e-23 where the top atom sits at the lattice point ε0, its profile ~1e-15 there).
    assert np.all(a[material] >= b[material] * (1.0 - 1e-9) - 1e-20)
    # Chords exceed it by at most 2·1e-6 (relative).  The exact pairs' bounds count losses up to their
    # loss_error below a point as above it (an atom exactly at a lattice point adds that much of its mass).
    error = max(d.loss_error for p in pairs for d in p.directions)
    shifted = _measure_profile(full, spacing, grid - 2 * error)
    assert np.all(a - shifted <= 1e-5 * shifted + 1e-18)


def test_profile_inversion_keeps_the_drop_at_the_window_end():
    """A profile sampled up to the last atom of its measure falls to its +∞ value only at the last point:
    the rebuilt measure needs mass there (without it the a-posteriori scaling blew the mass up to ~1e295
    for a block of 109 rounds of 2RR at n = 1e6)."""
    from pldshuffle._kernels import hockey_stick_profile
    from pldshuffle.worstcase.envelope import _from_profile

    spacing = 0.01
    masses = np.exp(-0.5 * ((np.arange(301) - 150) / 40.0) ** 2)
    masses /= masses.sum()
    target = hockey_stick_profile(masses, spacing)[0][: masses.size]  # at z_0 .. z_300; 0 at the last atom
    assert target[-2] > 0.0 and target[-1] == 0.0
    measure = _from_profile(target, 1.0, -150, spacing)
    rebuilt = hockey_stick_profile(measure.masses, spacing)[0][: target.size]
    assert np.all(rebuilt >= target)
    np.testing.assert_allclose(rebuilt, target, rtol=1e-9, atol=1e-15)
    assert measure.masses.sum() <= 1.0 + 1e-9 and measure.infinity == 0.0


def test_branch_and_bound_lets_go_of_pruned_lower_pairs(monkeypatch):
    """A cell caches its own lower pair (as large as its upper one); once that pair no longer attains the
    realisable envelope anywhere it is pruned, and no cell may keep it alive (kept until the end, they
    doubled the cover's memory: the year at ε0 = 0.1 peaked at 1.27 GB, 0.72 GB after).  Every cell the
    branch and bound made, split or kept, may hold only a lower pair among the realised members it returns."""
    import pldshuffle as ps
    from pldshuffle.mechanisms.base import Cell

    made = []
    split = Cell.split

    def recording(cell):
        children = split(cell)
        made.extend(children)
        return children

    monkeypatch.setattr(Cell, "split", recording)
    family = ps.ShuffledBinaryRR(20_000, 0.5).pair_family()
    cells, witnesses, members = _cover(family, _Exact(1e-4), max_cells=200)
    assert len(made) > 300 and len(cells) > 100
    member_ids = {id(p) for p in members}
    holding = [c for c in made if c.has_own_lower and "lower" in c.__dict__]
    assert holding and all(id(c.__dict__["lower"]) in member_ids for c in holding)
    # A released lower pair is rebuilt on demand, as the dataset's pair.
    released = next(c for c in cells if c.has_own_lower and "lower" not in c.__dict__)
    assert released.lower.directions[0].losses.size > 0


def test_cover_realising_fewer_datasets_still_covers_every_dataset(monkeypatch):
    """``realise_within`` only decides which split cells build their own dataset's pair: with it far above
    the tolerance the cover builds fewer of them, and its kept pairs still bound every dataset's δ(ε)
    (each enumerated exactly), while its realised members stay exact datasets' pairs (so lower bounds)."""
    import pldshuffle as ps
    from pldshuffle.mechanisms.base import Cell

    mechanism = ps.ShuffledBinaryRR(801, 1.0)
    lowers_built = []
    lower = Cell.__dict__["lower"].func

    def counting(cell):
        lowers_built.append(cell)
        return lower(cell)

    counted = type(Cell.__dict__["lower"])(counting)
    counted.__set_name__(Cell, "lower")
    monkeypatch.setattr(Cell, "lower", counted)
    eps = np.linspace(0.0, 1.0, 41)
    exact = np.max([mechanism.dataset_pair(m).delta_bounds(eps)[0] for m in range(801)], axis=0)
    built = {}
    for within in (1e-4, 1.0):
        lowers_built.clear()
        cells, _, members = _cover(mechanism.pair_family(), _Exact(1e-3), tolerance=1e-4, realise_within=within)
        built[within] = len(lowers_built)
        upper = np.max([p.delta_upper(eps) for c in cells for p in (c.members or (c.upper,))], axis=0)
        assert np.all(upper >= exact)
        assert all(np.all(p.delta_bounds(eps)[0] <= exact) for p in members)
    assert built[1.0] < built[1e-4]
