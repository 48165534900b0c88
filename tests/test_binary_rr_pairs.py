"""The 2RR dataset pairs built by recurrence (sum of two binomials) against independent references.

References: the full convolution of SciPy's binomial pmfs over the whole support (no windows, no
recurrence) and the dict-convolution pair of ``tests/reference.py`` (§1 of the reference).
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from reference import delta_adaptive, delta_ledger, hockey_stick, pair_binary_rr, split_pair
from scipy import stats

from pldshuffle import FourierAccountant, ShuffledBinaryRR
from pldshuffle._kernels import binomial_walk, two_binomial_pmf
from pldshuffle.mechanisms import binary_rr
from pldshuffle.mechanisms._binomial import two_binomial_tails

# (100000, 800, 0.01): A_k cancels over ~100 steps around the split (many ones, small p).
CASES = [(300, 299, 0.3775), (40, 2000, 0.119), (5000, 0, 0.27), (1234, 4321, 0.0474), (90, 90, 0.5), (100000, 800, 0.01)]


def _full_sum(ones: int, zeros: int, p: float) -> np.ndarray:
    """pmf of Bin(ones, 1-p) + Bin(zeros, p) on 0..ones+zeros by direct convolution of full supports."""
    return np.convolve(stats.binom.pmf(np.arange(ones + 1), ones, 1 - p), stats.binom.pmf(np.arange(zeros + 1), zeros, p))


@pytest.mark.parametrize("trials,p", [(0, 0.3), (7, 0.3), (1000, 0.119), (200_000, 0.27), (5, 1e-100), (3, 0.9)])
def test_binomial_walk_matches_scipy_and_bounds_what_it_drops(trials, p):
    lo, pmf, dropped, error = binomial_walk(trials, p, lambda k: stats.binom.pmf(k, trials, p), 1e-36)
    ref = stats.binom.pmf(np.arange(lo, lo + pmf.size), trials, p)
    # Boost itself is off by up to ~1.2e-12 relative in the tails at these sizes (the walk is not: see the
    # mpmath test), hence the additive allowance; the walk's own bound is a few ulps (double-double steps).
    assert np.max(np.abs(pmf / ref - 1.0)) <= error + 2e-12 and error < 1e-14
    outside = stats.binom.cdf(lo - 1, trials, p) + stats.binom.sf(lo + pmf.size - 1, trials, p)
    assert outside <= dropped
    assert dropped <= 1e-36 * 1.01


@pytest.mark.parametrize("ones,zeros,p", [c for c in CASES if c[0] and c[1]])
def test_chernoff_cuts_hold_and_recurrence_matches_full_convolution(ones, zeros, p):
    full = _full_sum(ones, zeros, p)
    cut_lo, cut_hi = two_binomial_tails(ones, zeros, p, 1e-18)
    assert full[: cut_lo + 1].sum() <= 5e-19 and full[cut_hi:].sum() <= 5e-19
    first, last = cut_lo + 1, cut_hi - 1
    windows = []
    for trials in (ones, zeros):
        windows.append(binomial_walk(trials, p, lambda k, t=trials: stats.binom.pmf(k, t, p), 1e-36)[:2])
    (x_lo, x), (y_lo, y) = windows
    # Short segments exercise many restarts on both sides of the split.
    for segment in (binary_rr._SEGMENT, 37):
        got, smallest, growth = two_binomial_pmf(x, x_lo, y, y_lo, ones, zeros, p, first, last, segment)
        ref = full[first : last + 1]
        assert smallest > 0 and growth <= segment * 24 * 2.0**-53 * 1.02  # 24u a step at most
        # The reference convolution is itself accurate to ~1e-13 (Boost's pmfs), hence the small additive term.
        assert np.max(np.abs(got / ref - 1.0)) <= growth + 2e-13 + (min(x.size, y.size) + 1) * 2.0**-53 * 4


@pytest.mark.parametrize("n,eps0,m", [(600, 0.5, 100), (600, 0.5, 150), (600, 0.5, 299), (900, 2.0, 150), (900, 2.0, 449)])
def test_recurrence_pairs_bracket_the_reference_pair(monkeypatch, n, eps0, m):
    calls = []
    monkeypatch.setattr(binary_rr, "two_binomial_pmf", lambda *a: calls.append(1) or two_binomial_pmf(*a))
    pair = ShuffledBinaryRR(n, eps0).dataset_pair(m)
    assert calls, "the recurrence path was not taken"
    p = 1.0 / (math.exp(eps0) + 1.0)
    P, Q = split_pair(pair_binary_rr(n, p, m))
    eps = np.array([0.0, 0.01, 0.05, 0.1, 0.2, 0.4])
    lower, upper = pair.delta_bounds(eps)
    # The losses' stated error: twice MASS_RTOL in the neighbours' ratio, times |1 - 2p| (tanh(ε0/2)).
    loss_error = max(d.loss_error for d in pair.directions)
    assert loss_error <= 2.01e-10 * math.tanh(eps0 / 2) + 1e-14
    for e, lo, up in zip(eps, lower, upper):
        exact = max(hockey_stick(P, Q, e), hockey_stick(Q, P, e))
        # The float reference is accurate to ~1e-14 relative; the bracket's own slack is ~1e-10 relative
        # and the loss error times the mass near ε (≤ 1) on each end.
        assert lo <= exact * (1 + 1e-13) and exact <= up * (1 + 1e-13), (e, lo, exact, up)
        assert up - lo <= 1e-9 * exact + 2 * loss_error + 1e-17


def test_recurrence_and_convolution_paths_agree(monkeypatch):
    fast = binary_rr._dataset_pair(3000, 1.0, 700, 1e-18)
    monkeypatch.setattr(binary_rr, "_RECURRENCE_WINDOW", 10**9)
    slow = binary_rr._dataset_pair(3000, 1.0, 700, 1e-18)
    eps = np.linspace(0.0, 0.3, 13)
    (fl, fu), (sl, su) = fast.delta_bounds(eps), slow.delta_bounds(eps)
    assert np.all(fl <= su) and np.all(sl <= fu)
    assert np.allclose(fu, su, rtol=1e-9, atol=1e-17)


@pytest.mark.parametrize("trials,p", [(10**5, 0.27), (10**6, 0.119), (10**9, 0.2689414213699951), (10**11, 0.0474)])
def test_binomial_walk_against_mpmath(trials, p):
    """The walk (from the mode) is within its own error bound of the exact pmf, also where Boost is not,
    and that bound stays a few ulps however long the walk (1.7e6 steps at 1e11 trials)."""
    mpmath = pytest.importorskip("mpmath")
    mpmath.mp.dps = 40
    lo, pmf, _, error = binomial_walk(trials, p, lambda k: stats.binom.pmf(k, trials, p), 1e-36)
    P = mpmath.mpf(p)
    for i in np.linspace(0, pmf.size - 1, 25).astype(int):
        k = lo + int(i)
        exact = mpmath.exp(mpmath.loggamma(trials + 1) - mpmath.loggamma(k + 1) - mpmath.loggamma(trials - k + 1)
                           + k * mpmath.log(P) + (trials - k) * mpmath.log(1 - P))
        assert abs(mpmath.mpf(float(pmf[i])) / exact - 1) <= error
    assert error < 1e-14


@pytest.mark.parametrize("seed", range(4))
def test_compensated_window_dots_within_their_bound(seed):
    """Segments of two points are all start values: each is a blocked, compensated dot product of the
    windows, within ``window_dot_error`` of the exact (rational) sum (~66u, whatever the window)."""
    from fractions import Fraction

    from pldshuffle._kernels import window_dot_error

    rng = np.random.default_rng(seed)
    # Enough terms for several blocks, some dominated by one term, some by a flat run.
    x = np.exp(rng.uniform(-60.0, 0.0, 600)) * rng.uniform(0.5, 1.0, 600)
    y = np.exp(rng.uniform(-3.0, 0.0, 450))
    ones, zeros, x_lo, y_lo = 400, 300, 100, 50
    first, last = ones - (x_lo + x.size - 1) + y_lo + 5, ones - x_lo + y_lo + y.size - 6
    got, _, growth = two_binomial_pmf(x, x_lo, y, y_lo, ones, zeros, 0.3, first, last, 2)
    assert growth == 0.0
    bound = window_dot_error(min(x.size, y.size))
    assert bound < 80 * 2.0**-53
    xf, yf = [Fraction(float(v)) for v in x], [Fraction(float(v)) for v in y]
    for k in range(first, last + 1):
        exact = sum(xf[i - x_lo] * yf[k - ones + i - y_lo]
                    for i in range(max(x_lo, y_lo + ones - k), min(x_lo + x.size, y_lo + y.size + ones - k)))
        assert abs(Fraction(float(got[k - first])) / exact - 1) <= bound


def test_fused_multiply_add_is_rounded_once():
    """The jitted kernels' ``_fma`` (LLVM's intrinsic) is the exactly rounded a·b + c, which the error-free
    products of the double-double walk rely on: ``a·b - fl(a·b)`` is exact."""
    from fractions import Fraction

    import numba

    from pldshuffle import _kernels
    from pldshuffle._kernels import binomial

    _kernels.compiled()
    fma = binomial._fma
    jitted = numba.njit(lambda a, b, c: fma(a, b, c))
    rng = np.random.default_rng(3)
    for a, b in zip(rng.uniform(-1, 1, 200) * 10.0 ** rng.integers(-30, 30, 200), rng.uniform(-1, 1, 200)):
        p = a * b
        exact = float(Fraction(a) * Fraction(b) - Fraction(p))
        assert jitted(a, b, -p) == exact
        assert Fraction(a) * Fraction(b) == Fraction(p) + Fraction(jitted(a, b, -p))
    assert float(Fraction(0.1) * Fraction(0.7) + Fraction(0.3)) == jitted(0.1, 0.7, 0.3)


def _cell_upper(n: int, eps0: float, first: int, last: int, tail: float):
    """The upper pair of ``ShuffledBinaryRR``'s cell ``[first, last]`` with its type cut at ``tail``, the
    pairs themselves truncated as by default."""
    pair = lambda users, m, booked=0.0: binary_rr._dataset_pair(users, eps0, m, 1e-18, booked)  # noqa: E731
    return ShuffledBinaryRR(n, eps0)._cell(first, last, pair, tail).upper


@pytest.mark.parametrize("n,eps0,tail,first,last", [(61, 0.3, 0.01, 0, 30), (61, 0.3, 0.5, 5, 29), (101, 1.0, 0.5, 0, 50), (81, 0.05, 1e-6, 0, 40)])
def test_cell_upper_pair_dominates_every_dataset_of_the_cell(n, eps0, tail, first, last):
    """A cell's upper pair keeps ~2pw of its w varying users as noise (the type decomposition of
    ``ShuffledBinaryRR._cell``, booking the chance of fewer as truncated mass).  It must still dominate every
    dataset of the cell: each direction's hockey-stick divergence, at every ε of both signs, is at least the
    exact one of every dataset's reference pair."""
    p = 1.0 / (math.exp(eps0) + 1.0)
    width = last - first
    assert two_binomial_tails(0, width, p, binary_rr._TYPE_TAIL * tail)[0] >= 0, "no varying user is kept: the case tests nothing"
    upper = _cell_upper(n, eps0, first, last, tail)
    eps = np.linspace(-2.5 * eps0, 2.5 * eps0, 51)
    forward, backward = upper.forward.hockey_stick_bounds(eps)[1], upper.backward.hockey_stick_bounds(eps)[1]
    for m in range(first, last + 1):
        P, Q = split_pair(pair_binary_rr(n, p, m))
        for i, e in enumerate(eps):
            assert hockey_stick(P, Q, e) <= forward[i] * (1 + 1e-12), (m, e)
            assert hockey_stick(Q, P, e) <= backward[i] * (1 + 1e-12), (m, e)


@pytest.mark.parametrize("eps0", [0.3, 1.0, 2.0])
def test_cell_upper_pair_is_tighter_than_revealing_the_varying_users(eps0):
    # Keeping some of the w varying users as noise can only help (at most the booked type mass is added).
    n, first, last = 20001, 2000, 3000
    upper = _cell_upper(n, eps0, first, last, 1e-18)
    revealed = binary_rr._dataset_pair(n - (last - first), eps0, first, 1e-18)
    p = 1.0 / (math.exp(eps0) + 1.0)
    eps = np.array([0.0, 1.0 / math.sqrt(n * p * (1 - p))])  # δ ≫ the booked mass here
    assert np.all(upper.delta_bounds(eps)[1] < revealed.delta_bounds(eps)[1])


@pytest.mark.parametrize("n,eps0,tail_mass,rounds", [(160, 0.2, 0.1, 1), (120, 1.0, 0.3, 1), (30, 1.0, 0.3, 2)])
def test_large_tail_mass_brackets_the_exact_worst_case(n, eps0, tail_mass, rounds):
    # The tails' Chernoff bounds then exceed what the kept masses leave (the truncated mass is capped by it:
    # it used to overflow a total of 1), and the cells' type cuts (at 1e-4·tail_mass) keep varying users.
    p = 1.0 / (math.exp(eps0) + 1.0)
    members = [pair_binary_rr(n, p, m) for m in range(n)]
    eps = np.array([0.0, 0.05, 0.2])
    b = FourierAccountant(tail_mass=tail_mass).compose(ShuffledBinaryRR(n, eps0), rounds).get_delta_bounds(eps)
    for e, lo, up in zip(eps, b.lower, b.upper):
        exact = delta_ledger([("changing", members, 1)], e) if rounds == 1 else delta_adaptive(members, rounds, float(e))
        assert lo <= exact * (1 + 1e-9) and exact <= up * (1 + 1e-9), (e, lo, exact, up)


def _hockey_sticks(ones: int, zeros: int, p: float, eps: np.ndarray) -> np.ndarray:
    """Both directions' H_{e^ε} of the 2RR pair (N + Bern(p), N + Bern(1-p)), N from :func:`_full_sum`."""
    noise = _full_sum(ones, zeros, p)
    P = np.concatenate([noise, [0.0]]) * (1 - p) + np.concatenate([[0.0], noise]) * p
    Q = np.concatenate([noise, [0.0]]) * p + np.concatenate([[0.0], noise]) * (1 - p)
    scale = np.exp(eps)[:, None]
    return np.array([np.maximum(P - scale * Q, 0).sum(axis=1), np.maximum(Q - scale * P, 0).sum(axis=1)])


@pytest.mark.parametrize("n,eps0,tail,first,last", [(201, 0.2, 1e-8, 0, 140), (301, 0.5, 1e-8, 20, 220)])
def test_cell_upper_pair_dominates_the_type_mixture_every_dataset_is_a_post_processing_of(n, eps0, tail, first, last):
    """The mixture behind ``ShuffledBinaryRR._cell``, computed independently (full SciPy convolutions): with
    the varying users' types ``(U, V) ~ Mult(w; p, p, 1-2p)`` revealed, the view is the dataset pair of
    ``n - w + U + V`` users with ``first + U`` ones among the others, so its hockey-stick divergence is the
    ``Mult``-weighted sum of theirs.  Every dataset of the cell stays below it (the decomposition), and the
    cell's upper pair above it (the cut at ``r`` and the booked mass, here 1e-12): a sharper check than the
    datasets alone, which sit well below the cell's bound."""
    p = 1.0 / (math.exp(eps0) + 1.0)
    width = last - first
    assert two_binomial_tails(0, width, p, binary_rr._TYPE_TAIL * tail)[0] >= 10, "too few users kept to test the cut"
    eps = np.linspace(-1.5 * eps0, 1.5 * eps0, 13)
    mixture = np.zeros((2, eps.size))
    for u in range(width + 1):
        for v in range(width + 1 - u):
            weight = math.comb(width, u) * math.comb(width - u, v) * p ** (u + v) * (1 - 2 * p) ** (width - u - v)
            if weight > 1e-30:
                mixture += weight * _hockey_sticks(first + u, n - 1 - last + v, p, eps)
    for m in range(first, last + 1, 7):
        assert np.all(_hockey_sticks(m, n - 1 - m, p, eps) <= mixture * (1 + 1e-12) + 1e-15), m
    upper = _cell_upper(n, eps0, first, last, tail)
    bound = np.array([upper.forward.hockey_stick_bounds(eps)[1], upper.backward.hockey_stick_bounds(eps)[1]])
    assert np.all(mixture <= bound * (1 + 1e-12)), mixture / bound


@pytest.mark.parametrize("pattern", ["none", "bottom", "top", "both", "inner"])
def test_pair_kernel_matches_the_outcome_formulas(pattern):
    """``rr_pair_from_noise`` against the outcome-by-outcome formulas: masses ``q·N(j) + p·N(j-1)`` and
    ``p·N(j) + q·N(j-1)``, loss ``log((q + p·r)/(p + q·r))`` for ``r = N(j-1)/N(j)``, ``-ε0`` where ``N(j) = 0``,
    else ``ε0`` where ``N(j-1) = 0``; forward ascending, backward its negative."""
    from pldshuffle._kernels import rr_pair_from_noise

    rng = np.random.default_rng(7)
    noise = rng.uniform(0.1, 1.0, 40) * np.exp(-np.linspace(-3.0, 3.0, 40) ** 2)
    zeros = {"none": [], "bottom": [0], "top": [39], "both": [0, 39], "inner": [0, 1, 20, 21, 39]}[pattern]
    noise[zeros] = 0.0
    p = 1.0 / (math.exp(1.3) + 1.0)
    q = 1.0 - p
    eps0 = math.log1p(-p) - math.log(p)
    forward_losses, forward_masses, backward_losses, backward_masses = rr_pair_from_noise(noise, p, q, eps0)
    losses, fwd, bwd = [], [], []
    for j in range(1, noise.size):
        prev, cur = float(noise[j - 1]), float(noise[j])
        losses.append(-eps0 if cur == 0.0 else eps0 if prev == 0.0 else math.log((q + p * prev / cur) / (p + q * prev / cur)))
        fwd.append(q * cur + p * prev)
        bwd.append(p * cur + q * prev)
    np.testing.assert_allclose(forward_losses, losses[::-1], rtol=4e-16, atol=4e-16)
    np.testing.assert_array_equal(forward_masses, fwd[::-1])
    np.testing.assert_array_equal(backward_masses, bwd)
    np.testing.assert_array_equal(backward_losses, -forward_losses[::-1])
