"""kRR at scale: streamed (lattice) pairs and the histogram adversary's worst-of-datasets lower bound.

Streamed pairs must bracket the exact pair strictly -- ``δ_lower ≤ δ_exact ≤ δ_upper`` -- for one round
and for compositions (the upper pair is a mean-preserving spread of ``e^{-L}``, the lower one a
contraction), checked against the library's exact pair at moderate n and against the independent
enumeration of ``tests/reference.py`` at tiny n.  The histogram value of issue 14 is checked against
an exact multinomial computation written here, independent of the library.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.special import gammaln

import reference as ref
import pldshuffle as ps
import pldshuffle.mechanisms._krr_histogram as krr_histogram
import pldshuffle.mechanisms._krr_support as krr_support
from pldshuffle.mechanisms import ShuffledKRR
from pldshuffle.mechanisms._binomial import binomial_logpmf

EPSILONS = np.array([0.0, 0.01, 0.05, 0.1, 0.2, 0.4, 0.7, 1.0, 1.5, 2.5])


def raw_delta(dist, eps: float, rounds: int = 1, *, upper: bool) -> float:
    """δ(ε) of the ``rounds``-fold composition of one direction, by explicit convolution (no slack).

    ``upper``: truncated mass at +inf; otherwise deleted.
    """
    losses, masses = dist.losses, dist.masses
    inf = dist.infinity_mass + (dist.truncated_mass if upper else 0.0)
    for _ in range(rounds - 1):
        losses = np.add.outer(losses, dist.losses).ravel()
        masses = np.outer(masses, dist.masses).ravel()
    finite = dist.masses.sum()
    inf_part = (finite + inf) ** rounds - finite**rounds
    return math.fsum(masses * np.maximum(-np.expm1(eps - losses), 0.0)) + inf_part


def streamed_family(mechanism: ShuffledKRR, monkeypatch, bins: int = 2**16):
    """The mechanism's family with streaming forced (exact limit 0) on a lattice of ``bins`` cells, the
    outer coordinate merged wherever its blocks allow (as for supports above ``UNMERGED_STREAM_LIMIT``)."""
    with monkeypatch.context() as m:
        for module in (krr_support, krr_histogram):  # where the limits are read
            m.setattr(module, "EXACT_SUPPORT_LIMIT", 0)
            m.setattr(module, "STREAM_GRID_BINS", bins)
        m.setattr(krr_support, "UNMERGED_STREAM_LIMIT", 0)
        return mechanism.pair_family()


def coarse_merging(monkeypatch, tolerance: float, max_spread: float | None = None) -> None:
    """Merge the outer coordinate in blocks of mass-weighted rms ratio spread ``tolerance`` and at most
    ``max_spread`` (default ``tolerance``): coarse enough that small supports merge at all."""
    monkeypatch.setattr(krr_support, "MERGE_TOLERANCE", tolerance)
    monkeypatch.setattr(krr_support, "MAX_MERGE_SPREAD", tolerance if max_spread is None else max_spread)


def exact_family(mechanism: ShuffledKRR, monkeypatch):
    """The mechanism's family with the exact pair whatever its support size (up to 10^7 points)."""
    with monkeypatch.context() as m:
        for module in (krr_support, krr_histogram):
            m.setattr(module, "EXACT_SUPPORT_LIMIT", 10**7)
        return mechanism.pair_family()


@pytest.mark.parametrize("adversary", ["strong", "khh21", "weak", "histogram"])
@pytest.mark.parametrize(("n", "k", "gamma"), [(300, 4, 0.25), (200, 3, 0.6), (120, 6, 0.1)])
def test_streamed_pairs_bracket_the_exact_pair(adversary, n, k, gamma, monkeypatch):
    mechanism = ShuffledKRR(n, k, gamma=gamma, adversary=adversary)
    exact = exact_family(mechanism, monkeypatch)
    assert exact.upper == exact.lower
    streamed = streamed_family(mechanism, monkeypatch)
    assert streamed.upper[0] is not streamed.lower[0]
    exact_dir = exact.upper[0].forward
    low_dir, up_dir = streamed.lower[0].forward, streamed.upper[0].forward
    for eps in EPSILONS:
        d_exact = raw_delta(exact_dir, eps, upper=False)
        d_low, d_up = raw_delta(low_dir, eps, upper=False), raw_delta(up_dir, eps, upper=True)
        assert d_low <= d_exact * (1 + 1e-12) + 1e-300, (eps, d_low, d_exact)
        assert d_up >= d_exact * (1 - 1e-12), (eps, d_up, d_exact)
        # tight: the lattice errs to second order in the cell width; merging nearby u (weak/histogram at
        # large n, relative loss spread MERGE_TOLERANCE) costs the lower pair a little more
        assert d_up - d_exact <= 1e-4 * d_exact + 1e-16, (eps, d_exact, d_up)
        assert d_exact - d_low <= 3e-3 * d_exact + 1e-16, (eps, d_low, d_exact)
    # certified single-round bounds of the streamed pairs bracket the exact pair's certified bounds
    lo_s, _ = streamed.lower[0].delta_bounds(EPSILONS)
    _, up_s = streamed.upper[0].delta_bounds(EPSILONS)
    lo_e, up_e = exact.upper[0].delta_bounds(EPSILONS)
    assert np.all(lo_s <= up_e) and np.all(up_s >= lo_e)


@pytest.mark.parametrize(("adversary", "n"), [("strong", 60), ("weak", 14), ("histogram", 16)])
def test_streamed_pairs_bracket_compositions(adversary, n, monkeypatch):
    """Two and three rounds on a coarse lattice (256 cells): spread/contraction hold after composition."""
    mechanism = ShuffledKRR(n, 4, gamma=0.3, adversary=adversary)
    exact_dir = mechanism.pair_family().upper[0].forward
    assert exact_dir.support_size <= 3000  # explicit convolution: support^rounds terms
    streamed = streamed_family(mechanism, monkeypatch, bins=256)
    low_dir, up_dir = streamed.lower[0].forward, streamed.upper[0].forward
    for rounds in (2, 3):
        if rounds == 3 and exact_dir.support_size > 300:
            continue
        for eps in (0.0, 0.1, 0.3, 0.8, 1.5):
            d_exact = raw_delta(exact_dir, eps, rounds, upper=False)
            assert raw_delta(low_dir, eps, rounds, upper=False) <= d_exact * (1 + 1e-12) + 1e-300
            assert raw_delta(up_dir, eps, rounds, upper=True) >= d_exact * (1 - 1e-12)


@pytest.mark.parametrize("adversary", ["strong", "khh21", "weak", "histogram"])
@pytest.mark.parametrize(("n", "k", "gamma"), [(5, 3, 0.45), (6, 4, 0.1), (4, 3, 1.0)])
def test_streamed_pairs_bracket_reference_enumeration(adversary, n, k, gamma, monkeypatch):
    """Against tests/reference.py (independent enumeration), one and two rounds."""
    streamed = streamed_family(ShuffledKRR(n, k, gamma=gamma, adversary=adversary), monkeypatch, bins=512)
    reference_pair = {
        "strong": ref.pair_krr_strong, "khh21": ref.pair_krr_strong_khh21, "weak": ref.pair_krr_weak, "histogram": ref.pair_krr_hist,
    }[adversary](n, k, gamma)
    for rounds in (1, 2):
        for eps in (0.0, 0.2, 0.7, 1.5):
            exact = ref.delta_exact(reference_pair, eps, rounds)
            low = raw_delta(streamed.lower[0].forward, eps, rounds, upper=False)
            up = raw_delta(streamed.upper[0].forward, eps, rounds, upper=True)
            assert low <= exact * (1 + 1e-10) + 1e-15 and up >= exact * (1 - 1e-10) - 1e-15, (rounds, eps, low, exact, up)


def test_large_supports_are_streamed_and_tight():
    """n = 1e4 weak (~1e8 points; refused before streaming existed): a strict, narrow bracket."""
    family = ShuffledKRR(10**4, 4, local_epsilon=2.0, adversary="weak").pair_family()
    assert family.upper[0] is not family.lower[0] and "streamed" in family.upper[0].label
    lo, _ = family.lower[0].delta_bounds(EPSILONS)
    _, up = family.upper[0].delta_bounds(EPSILONS)
    assert np.all(lo <= up)
    big = up > 1e-12
    assert np.all((up[big] - lo[big]) <= 1e-3 * up[big])
    # total mass of both is 1 up to rounding (finite + infinity + booked truncation)
    for dist in (family.lower[0].forward, family.upper[0].forward):
        assert math.fsum(dist.masses) + dist.infinity_mass + dist.truncated_mass == pytest.approx(1.0, abs=1e-12)


# ------------------------------------------------------------------------------ histogram lower bound


def common_value_delta(n: int, k: int, eps0: float, eps: float) -> float:
    """δ(ε) of the histogram pair (1,1..1) vs (2,1..1) for k = 3, by exact multinomial arithmetic.

    Enumerates every histogram (h1, h2, h3); P = Mult(n; π) with π = (1-γ+g, g, g), and Q is computed
    from its definition: the victim reports 2 w.p. 1-γ+g, else 1 or 3 w.p. g each, the others Mult(n-1; π).
    """
    assert k == 3
    gamma = k / (math.exp(eps0) + k - 1)
    g = gamma / k
    pi = np.array([1 - gamma + g, g, g])
    victim = np.array([g, 1 - gamma + g, g])
    h1, h2 = np.meshgrid(np.arange(n + 1), np.arange(n + 1), indexing="ij")
    keep = h1 + h2 <= n
    h = np.stack([h1[keep], h2[keep], n - h1[keep] - h2[keep]])

    def log_mult(m: int, counts: np.ndarray) -> np.ndarray:
        with np.errstate(divide="ignore", invalid="ignore"):
            terms = np.where(counts > 0, counts * np.log(pi)[:, None], 0.0)
        return gammaln(m + 1) - gammaln(counts + 1).sum(axis=0) + terms.sum(axis=0)

    p = np.exp(log_mult(n, h))
    q = np.zeros_like(p)
    for o in range(3):
        ok = h[o] > 0
        shifted = h[:, ok].copy()
        shifted[o] -= 1
        q[ok] += victim[o] * np.exp(log_mult(n - 1, shifted))
    forward = math.fsum(np.maximum(p - math.exp(eps) * q, 0.0))
    backward = math.fsum(np.maximum(q - math.exp(eps) * p, 0.0))
    return max(forward, backward)


def test_histogram_worst_dataset_matches_exact_multinomial():
    """d = 3, ε0 = 6, n = 1000: the common-value dataset gives δ(5.775) ≈ 1.4e-3 (the (1,3..3) pair: ~1e-6)."""
    family = ShuffledKRR(1000, 3, local_epsilon=6.0, adversary="histogram").pair_family()
    assert not family.is_guarantee and len(family.lower) == 2
    exact = common_value_delta(1000, 3, 6.0, 5.775)
    assert exact == pytest.approx(1.4e-3, rel=0.05)
    lo, up = family.lower[1].delta_bounds(5.775)
    assert lo[0] <= exact <= up[0]
    assert up[0] - lo[0] <= 1e-9 * exact
    old_lo, _ = family.lower[0].delta_bounds(5.775)
    assert old_lo[0] < 1e-5  # the (1,3..3) dataset alone is far from the worst case
    # the accountant takes the max over the lower members
    bounds = ps.FourierAccountant().compose(ShuffledKRR(1000, 3, local_epsilon=6.0, adversary="histogram"), 1).get_delta_bounds(5.775)
    assert float(np.max(bounds.lower)) >= 0.99 * exact


@pytest.mark.parametrize(("n", "gamma"), [(3, 0.45), (5, 0.2), (6, 0.9)])
def test_common_value_pair_against_brute_force(n, gamma):
    """Both directions of the (1,1..1)/(2,1..1) pair against the enumeration of every user's report."""
    P, Q = ref.brute_force_krr(n, 3, gamma, (0,) * n, (1,) + (0,) * (n - 1))
    pair = ref.make_pair(P, Q)
    member = ShuffledKRR(n, 3, gamma=gamma, adversary="histogram").pair_family().lower[1]
    assert member.backward is not None  # not a symmetric pair
    for eps in (0.0, 0.3, 1.0, 2.0):
        exact = ref.delta_exact(pair, eps)
        lo, up = member.delta_bounds(eps)
        assert lo[0] <= exact <= up[0], (eps, lo, exact, up)


def test_common_value_pair_streamed_brackets_exact():
    from pldshuffle.mechanisms._krr_histogram import common_value_pairs as _common_value_pairs

    args = (400, 4, 1.5, 3 * (4 / (math.exp(1.5) + 3)) / 4, 1e-18, "ctx", "advice")
    exact_lower, exact_upper = _common_value_pairs(*args)
    assert exact_lower is exact_upper
    low, up = _common_value_pairs(*args, max_exact_support=0)
    for eps in EPSILONS:
        for side in ("forward", "backward"):
            d = raw_delta(getattr(exact_upper, side), eps, upper=False)
            assert raw_delta(getattr(low, side), eps, upper=False) <= d * (1 + 1e-12) + 1e-300
            assert raw_delta(getattr(up, side), eps, upper=True) >= d * (1 - 1e-12)


@pytest.mark.parametrize(("adversary", "n", "k", "gamma", "tolerance", "rounds", "chunk"), [
    ("weak", 300, 4, 0.25, 0.1, 1, None),
    ("weak", 300, 4, 0.25, (0.05, 0.3), 1, None),  # narrow blocks at the mode, wide ones in the tails
    ("histogram", 300, 4, 0.25, (0.05, 0.3), 1, 700),
    ("weak", 300, 4, 0.25, 0.1, 1, 700),  # laid out and merged in chunks of ~700 pairs (u, c)
    ("histogram", 300, 4, 0.25, 0.1, 1, None),
    ("weak", 14, 4, 0.3, 3.0, 2, None),
    ("histogram", 16, 4, 0.3, 3.0, 2, 10),
])
def test_merged_outer_blocks_bracket_the_exact_pair(adversary, n, k, gamma, tolerance, rounds, chunk, monkeypatch):
    """Coarse merging of the outer coordinate (forced by a large MERGE_TOLERANCE) still brackets strictly, also
    with blocks of unequal widths (a tolerance pair: rms spread, largest spread)."""
    mechanism = ShuffledKRR(n, k, gamma=gamma, adversary=adversary)
    exact_dir = exact_family(mechanism, monkeypatch).upper[0].forward
    calls = []
    merge = krr_support._merge_outer
    monkeypatch.setattr(krr_support, "_merge_outer", lambda *a: calls.append(1) or merge(*a))
    coarse_merging(monkeypatch, *(tolerance if isinstance(tolerance, tuple) else (tolerance,)))
    if chunk is not None:
        monkeypatch.setattr(krr_support, "_CHUNK_PAIRS", chunk)
    streamed = streamed_family(mechanism, monkeypatch, bins=4096 if rounds == 1 else 256)
    assert len(calls) >= (2 if chunk else 1)  # the blocks were merged (chunk by chunk)
    low_dir, up_dir = streamed.lower[0].forward, streamed.upper[0].forward
    for eps in EPSILONS:
        d_exact = raw_delta(exact_dir, eps, rounds, upper=False)
        assert raw_delta(low_dir, eps, rounds, upper=False) <= d_exact * (1 + 1e-12) + 1e-300, eps
        assert raw_delta(up_dir, eps, rounds, upper=True) >= d_exact * (1 - 1e-12), eps


def test_moderate_streamed_supports_are_not_merged_and_meet_the_one_round_target():
    """Weak kRR, n = 2000, k = 3, ε0 = 1 (1.8e7 points, below UNMERGED_STREAM_LIMIT): streamed without merging
    the outer coordinate, whose upper bound takes each block's extreme tilt (one round, δ = 1e-10: gap 1.3e-4
    merged), so one round meets the 1e-4 target down to δ = 1e-10."""
    accountant = ps.FourierAccountant().compose(ShuffledKRR(2000, 3, local_epsilon=1.0, adversary="weak"))
    for delta in (1e-6, 1e-10):
        bounds = accountant.get_epsilon_bounds(delta)
        assert bounds.lower <= bounds.upper <= bounds.lower * (1 + 1e-4)


@settings(max_examples=40, deadline=None)
@given(trials=st.integers(1000, 10**8), prob=st.floats(0.01, 0.99), scale=st.floats(1e-3, 1e3))
def test_merge_blocks_are_narrow_where_the_mass_is(trials, prob, scale):
    """Blocks of the outer coordinate (a binomial window, tilt ratios ∝ u + 1 as for the weak pair) are runs of
    consecutive values numbered 0, 1, ..; each spreads log r by at most MAX_MERGE_SPREAD, and the mass-weighted
    root-mean-square spread is at most MERGE_TOLERANCE (what the upper bound's excess grows with)."""
    lo, hi, _, _ = krr_support.tilted_windows(np.array([trials]), prob, 1e-18)
    u = np.arange(lo[0], hi[0] + 1)
    log_p = binomial_logpmf(u, trials, prob)
    ratio = scale * (u + 1.0)
    blocks = krr_support.merge_blocks(ratio, log_p)
    if blocks is None:  # not worth it: blocks of fewer than 4 values on average (small windows)
        assert trials * min(prob, 1 - prob) < 10**6
        return
    assert blocks.shape == u.shape and blocks[0] == 0 and set(np.diff(blocks)) <= {0, 1}
    starts = np.flatnonzero(np.diff(blocks, prepend=-1))
    assert 4 * starts.size <= u.size
    log_r = np.log(ratio)
    spread = np.maximum.reduceat(log_r, starts) - np.minimum.reduceat(log_r, starts)
    assert spread.max() <= krr_support.MAX_MERGE_SPREAD * (1 + 1e-9)
    mass = np.exp(log_p - np.logaddexp.reduce(log_p))
    assert math.sqrt(float(np.sum(mass * spread[blocks] ** 2))) <= krr_support.MERGE_TOLERANCE * (1 + 1e-9)


def test_merge_blocks_refuse_what_cannot_be_merged():
    """A ratio of 0 or inf (a tilt A = 0 or B = 0) cannot be merged, nor a single value."""
    log_p = np.log(np.full(400, 1 / 400))
    ratio = np.linspace(1e4, 1.1e4, 400)
    assert krr_support.merge_blocks(ratio, log_p) is not None
    for bad in (0.0, np.inf):
        assert krr_support.merge_blocks(np.append(ratio[:-1], bad), log_p) is None
    assert krr_support.merge_blocks(ratio[:1], log_p[:1]) is None


def test_weak_pair_meets_the_one_round_target_at_large_n():
    """Weak kRR, n = 1e5, k = 100, ε0 = 2 (merged: 1e6 cells, 3 blocks of b): one round's certified relative
    ε gap is at most 1e-4 at δ = 1e-6 and 1e-9 (1.2e-4 and 2.4e-4 with blocks of equal relative spread 1e-2,
    7.8e-6 and 1.6e-5 now); 0.4-4 s on 2 cores, by their load."""
    accountant = ps.FourierAccountant().compose(ShuffledKRR(100_000, 100, local_epsilon=2.0, adversary="weak"))
    for delta in (1e-6, 1e-9):
        bounds = accountant.get_epsilon_bounds(delta)
        assert 0.0 < bounds.lower <= bounds.upper <= bounds.lower * (1 + 1e-4), (delta, bounds)


def _count_points(monkeypatch):
    """Record the raw points of every merged chunk and the points streamed after merging."""
    counts = {"raw": 0, "streamed": 0}
    merge, stream = krr_support._merge_outer, krr_support._streamed

    def merge_outer(pair_u, pair_c, log_w, x_lo, x_hi, *rest):
        counts["raw"] += int((x_hi - x_lo + 1).sum())
        return merge(pair_u, pair_c, log_w, x_lo, x_hi, *rest)

    def streamed(args, *rest):
        counts["streamed"] = int((args[3] - args[2] + 1).sum())
        return stream(args, *rest)

    monkeypatch.setattr(krr_support, "_merge_outer", merge_outer)
    monkeypatch.setattr(krr_support, "_streamed", streamed)
    return counts


def test_merged_supports_are_limited_by_their_cells_and_merged_points(monkeypatch):
    """With the outer coordinate merged, the cost is the layout's cells (u, c) and the merged points, not
    the raw support (weak, n = 2e6, k = 4, ε0 = 2: ~1e11 raw points, 7e7 merged: built in ~13 s, where it
    was refused after 14 s of layout): a raw support above MAX_SUPPORT_POINTS is built when its merged
    points are within it, more merged points are refused before streaming, and too many cells before the
    layout."""
    mechanism = ShuffledKRR(300, 4, gamma=0.25, adversary="weak")
    coarse_merging(monkeypatch, 0.1)
    monkeypatch.setattr(krr_support, "_CHUNK_PAIRS", 700)
    counts = _count_points(monkeypatch)
    streamed_family(mechanism, monkeypatch, bins=4096)
    raw, merged = counts["raw"], counts["streamed"]
    assert raw > 2 * merged > 0
    monkeypatch.setattr(krr_support, "MAX_SUPPORT_POINTS", merged)
    exact_dir = exact_family(mechanism, monkeypatch).upper[0].forward
    family = streamed_family(mechanism, monkeypatch, bins=4096)  # raw > limit: built all the same
    for eps in EPSILONS:
        d_exact = raw_delta(exact_dir, eps, upper=False)
        assert raw_delta(family.lower[0].forward, eps, upper=False) <= d_exact * (1 + 1e-12) + 1e-300, eps
        assert raw_delta(family.upper[0].forward, eps, upper=True) >= d_exact * (1 - 1e-12), eps
    monkeypatch.setattr(krr_support, "MAX_SUPPORT_POINTS", merged - 1)
    with pytest.raises(ValueError, match=f"{merged - 1:,} support points|{merged:,} support points to stream"):
        streamed_family(mechanism, monkeypatch, bins=4096)
    counts["raw"] = 0
    monkeypatch.setattr(krr_support, "MAX_MERGED_PAIRS", 100)
    with pytest.raises(ValueError, match=r"ShuffledKRR\(num_users=300.*would need [\d,]+ cells \(u, c\).*limit of 100 cells"):
        streamed_family(mechanism, monkeypatch, bins=4096)
    assert counts["raw"] == 0  # refused before any cell was laid out


def test_long_builds_report_progress(monkeypatch):
    """The chunked layout and the streaming (in pieces) report through the accountant's callback."""
    from pldshuffle import _reporting
    from pldshuffle.mechanisms import _lattice

    monkeypatch.setattr(_reporting, "REPORT_SECONDS", 0.0)
    monkeypatch.setattr(_lattice, "PIECE_POINTS", 10_000)
    coarse_merging(monkeypatch, 0.1)
    monkeypatch.setattr(krr_support, "_CHUNK_PAIRS", 700)
    messages: list[str] = []
    mechanism = ShuffledKRR(300, 4, gamma=0.25, adversary="weak")
    with _reporting.reporting_to(messages.append):
        pieced = streamed_family(mechanism, monkeypatch, bins=4096)
    assert any(m.startswith("laying out ") and "cells (u, c)" in m for m in messages)
    streaming = [m for m in messages if m.startswith("streaming ")]
    assert len(streaming) >= 3 and streaming[-1].endswith(": 100 %")
    monkeypatch.setattr(_lattice, "PIECE_POINTS", 10**9)
    whole = streamed_family(mechanism, monkeypatch, bins=4096)  # one piece: the same cells, summed in another order
    for a, b in ((pieced.lower[0].forward, whole.lower[0].forward), (pieced.upper[0].forward, whole.upper[0].forward)):
        np.testing.assert_allclose(a.losses, b.losses, rtol=0, atol=1e-15)
        np.testing.assert_allclose(a.masses, b.masses, rtol=1e-12, atol=1e-300)
