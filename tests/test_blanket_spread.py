"""The blanket pair of a finite randomizer with many distinct ratio pairs: its types spread to two ratio
levels (``spread_hit_model``), a pair that must dominate the exact blanket pair (tests/blanket_reference.py,
every output sequence enumerated) and hence every dataset (brute force), evaluated like any hit model
(checked against the hit pair enumerated from its definition)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from blanket_reference import blanket_delta, hit_delta, participating
from hypothesis import given, settings
from hypothesis import strategies as st
from reference import finite_worst_case_delta

import pldshuffle as ps
import pldshuffle.mechanisms.blanket as blanket_module
from pldshuffle.mechanisms.blanket import SPREAD_CAVEAT, BlanketPair
from pldshuffle.randomizers import Finite, KaryRR

EPS = [0.0, 0.05, 0.2, 0.5, 1.0]
SLACK = 1e-9


def _spread_by_hand(matrix: np.ndarray, x1: int, x2: int) -> tuple[float, float, float, float]:
    """``(γ, E, π11, π10)`` of the two-level spread, from the definition: per output ``y`` the ratios
    ``r_j = R[x_j][y]/ω(y)``, levels ``lo``/``hi`` the extremes over both rows, ``w_j = (r_j - lo)/(hi - lo)``,
    both high with probability ``min(w1, w2)``."""
    m = matrix.min(axis=0)
    gamma = float(m.sum())
    omega = m / gamma
    r1, r2 = matrix[x1] / omega, matrix[x2] / omega
    lo, hi = min(r1.min(), r2.min()), max(r1.max(), r2.max())
    w1, w2 = (r1 - lo) / (hi - lo), (r2 - lo) / (hi - lo)
    pi11 = float(np.sum(omega * np.minimum(w1, w2)))
    pi10 = float(np.sum(omega * (w1 - np.minimum(w1, w2))))
    return gamma, float(hi / lo), pi11, pi10


def _forced_spread(monkeypatch: pytest.MonkeyPatch) -> None:
    """Small cases are enumerated exactly by default; forbid that so that the spread is used."""
    monkeypatch.setattr(blanket_module, "MAX_ENUMERATED_POINTS", 0)


def _upper(bp: BlanketPair, eps: float) -> float:
    return max(p.delta_bounds(eps)[1][0] for p in bp.pair_bounds()[1])


def _random_matrix(rng: np.random.Generator, rows: int, cols: int) -> np.ndarray:
    M = rng.random((rows, cols)) ** 2 + 0.02
    return M / M.sum(axis=1, keepdims=True)


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("q", [1.0, 0.6])
def test_spread_pair_dominates_the_exact_blanket_pair_and_every_dataset(seed, q, monkeypatch):
    rng = np.random.default_rng(seed)
    M = _random_matrix(rng, int(rng.integers(2, 4)), int(rng.integers(3, 6)))
    n = 3
    _forced_spread(monkeypatch)
    bp = BlanketPair(n, Finite(M), participation=q)
    assert bp.spread and set(bp.methods) <= {"trinomial", "product", "grouped"}
    Mq = participating(M.tolist(), q) if q < 1.0 else M.tolist()
    exact = blanket_delta(Mq, n, EPS)
    worst = finite_worst_case_delta(Mq, n, EPS)
    for eps, truth, (brute, _) in zip(EPS, exact, worst):
        up = _upper(bp, eps)
        assert brute <= truth * (1 + SLACK) + 1e-14
        assert truth <= up * (1 + SLACK) + 1e-14


@pytest.mark.parametrize("seed", range(3))
def test_spread_bracket_contains_the_hit_pair_of_the_spread_model(seed, monkeypatch):
    """The evaluation of the spread model against the hit pair enumerated from its definition, with the
    model's numbers computed here by hand."""
    rng = np.random.default_rng(10 + seed)
    M = _random_matrix(rng, 2, int(rng.integers(3, 7)))
    n = 4
    _forced_spread(monkeypatch)
    bp = BlanketPair(n, Finite(M))
    gamma, e, pi11, pi10 = _spread_by_hand(M, 0, 1)
    model = bp.model
    assert model is not None
    assert model.gamma == pytest.approx(gamma, rel=1e-12) and math.exp(model.log_ratio) == pytest.approx(e, rel=1e-12)
    assert model.pi11 == pytest.approx(pi11, rel=1e-9, abs=1e-15) and model.pi10 == pytest.approx(pi10, rel=1e-9, abs=1e-15)
    truth = hit_delta(n, gamma, e, pi11, pi10, 1.0, EPS)
    lowers, uppers = bp.pair_bounds()
    for eps, t in zip(EPS, truth):
        lo = max(p.delta_bounds(eps)[0][0] for p in lowers)
        up = max(p.delta_bounds(eps)[1][0] for p in uppers)
        assert lo <= t * (1 + SLACK) + 1e-14 and t <= up * (1 + SLACK) + 1e-14


@settings(max_examples=20, deadline=None)
@given(
    rows=st.integers(2, 3).flatmap(
        lambda d: st.integers(2, 5).flatmap(
            lambda m: st.lists(st.lists(st.floats(0.01, 1.0), min_size=m, max_size=m), min_size=d, max_size=d)
        )
    ),
    n=st.integers(2, 4),
    q=st.sampled_from([1.0, 0.7, 0.3]),
)
def test_property_spread_upper_is_above_the_exact_blanket_pair(rows, n, q):
    M = np.asarray(rows)
    M = M / M.sum(axis=1, keepdims=True)
    if np.all(np.abs(M - M[0]) < 1e-6):
        return
    with pytest.MonkeyPatch.context() as mp:
        _forced_spread(mp)
        bp = BlanketPair(n, Finite(M), participation=q)
    if not bp.spread:  # a pair of hit form already (two levels): evaluated as such
        return
    Mq = participating(M.tolist(), q) if q < 1.0 else M.tolist()
    for eps, truth in zip(EPS, blanket_delta(Mq, n, EPS)):
        assert truth <= _upper(bp, eps) * (1 + SLACK) + 1e-14


def test_default_uses_the_spread_pair_at_scale_and_says_so():
    """A 3 x 12 matrix at n = 3000 (too many type counts to enumerate): the default is the spread blanket
    pair, with its caveat, below the labelled clone pair; a near-kRR matrix gets close to kRR's own pair."""
    rng = np.random.default_rng(1)
    M = _random_matrix(rng, 3, 12)
    mech = ps.ShuffledLDP(3000, randomizer=Finite(M))
    assert mech.reduction == "blanket" and mech.blanket_pair.spread
    assert SPREAD_CAVEAT in mech.pair_family().caveats
    assert "spread" in mech.describe()
    spread = ps.FourierAccountant().compose(mech).get_epsilon_bounds(1e-6)
    clone = ps.FourierAccountant().compose(ps.ShuffledLDP(3000, randomizer=Finite(M), reduction="randomizer")).get_epsilon_bounds(1e-6)
    assert spread.is_guarantee and spread.upper < clone.lower
    # k-ary RR with its probabilities perturbed by 1e-3 (every ratio distinct): within 1 % of kRR's pair
    K = KaryRR(3, 1.0).matrix() * (1 + 1e-3 * rng.random((3, 3)))
    K /= K.sum(axis=1, keepdims=True)
    near = ps.FourierAccountant().compose(ps.ShuffledLDP(1000, randomizer=Finite(K))).get_epsilon_bounds(1e-6)
    krr = ps.FourierAccountant().compose(ps.ShuffledLDP(1000, randomizer=KaryRR(3, 1.0))).get_epsilon_bounds(1e-6)
    assert abs(near.upper - krr.upper) <= 0.01 * krr.upper


def test_victim_only_outputs_still_fall_back_to_the_clone_pair():
    """Outputs that only some inputs give (a zero in a column) have no blanket mass and reveal the victim:
    no spread, so many users and many types still fall back, and say so."""
    rng = np.random.default_rng(2)
    M = _random_matrix(rng, 3, 12)
    M[0, 3] = 0.0
    M /= M.sum(axis=1, keepdims=True)
    with pytest.raises(ValueError, match="reduction='blanket' is not available"):
        ps.ShuffledLDP(200, randomizer=Finite(M), reduction="blanket")
    fallback = ps.ShuffledLDP(200, randomizer=Finite(M))
    assert fallback.reduction == "randomizer"
    assert any("blanket pair (the default) is not available" in c for c in fallback.pair_family().caveats)
