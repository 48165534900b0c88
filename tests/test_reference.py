"""Tests of the independent exact reference (tests/reference.py) against brute force.

They re-establish the facts stated in ``docs/mathematics.md`` with code that shares nothing with
pldshuffle: the exact pairs of §1-§3 agree with enumeration of the real shuffled mechanisms, and the
exact accountant (explicit products, no FFT) is self-consistent.  The § labels are those of
``tests/reference.py``.
"""

import functools
import itertools
import math
from fractions import Fraction

import pytest
from reference import (
    KRR_STRONG_ATOM,
    brute_force_binary_rr,
    brute_force_krr,
    clone_prob_fmt20,
    clone_prob_fmt23,
    clone_q,
    compose,
    compose_heterogeneous,
    delta_adaptive,
    delta_directions,
    delta_exact,
    delta_heterogeneous,
    epsilon_exact,
    hockey_stick,
    krr_gamma,
    make_pair,
    merge_by_ratio,
    pair_binary_rr,
    pair_clones,
    pair_krr_eq51,
    pair_krr_hist,
    pair_krr_strong,
    pair_krr_strong_khh21,
    pair_krr_weak,
    rr_flip_prob,
    split_pair,
)

EPS_GRID = [0, 0.01, 0.1, 0.25, 0.5, 0.75, 1.0, 1.5, 2.0, 3.0]
EXP_EPS0 = [Fraction(3), Fraction(2), Fraction(7, 2)]  # rational e^{eps0} keeps everything exact
TOL = 1e-14


def swapped(pair):
    return {x: (q, p) for x, (p, q) in pair.items()}


def assert_same_delta_curves(pair_a, pair_b, tol=TOL):
    """delta(eps) of both directions agree on EPS_GRID (exactly at eps = 0 for Fractions)."""
    for eps in EPS_GRID:
        da, db = delta_directions(pair_a, eps), delta_directions(pair_b, eps)
        for x, y in zip(da, db):
            assert abs(x - y) <= tol, (eps, da, db)


def worst_delta(pairs, eps):
    return max(delta_exact(p, eps) for p in pairs)


def distinct_plds(pairs):
    """The distinct privacy loss distributions (merge_by_ratio) among ``pairs``."""
    return [dict(t) for t in {tuple(sorted(merge_by_ratio(p).items())) for p in pairs}]


# ------------------------------------------------------------------------------------------
# §1 shuffled binary RR
# ------------------------------------------------------------------------------------------


def binary_rr_neighbours(n):
    """All ordered neighbouring dataset pairs (x, x') of {0,1}^n."""
    for x in itertools.product((0, 1), repeat=n):
        for i in range(n):
            yield x, x[:i] + (1 - x[i],) + x[i + 1 :]


@functools.lru_cache(maxsize=None)
def brute_binary_rr_pair(n, p, x, y):
    """Brute-force histogram pair of shuffled 2RR for datasets x, x' (one enumeration per dataset)."""
    return make_pair(brute_binary_rr_dist(n, p, x), brute_binary_rr_dist(n, p, y))


@functools.lru_cache(maxsize=None)
def brute_binary_rr_dist(n, p, x):
    """Brute-force histogram distribution of shuffled 2RR on dataset x (first half of the pair)."""
    y = x[:-1] + (1 - x[-1],)
    return brute_force_binary_rr(n, p, x, y)[0]


def test_binary_rr_khh_pair_is_not_worst_case_example():
    """§1: n=3, e^{eps0}=3, eps=0: 0.3125 at m=1 vs 0.28125 at m=0, worst case = 0.3125."""
    p = rr_flip_prob(Fraction(3))
    assert p == Fraction(1, 4)
    assert delta_exact(pair_binary_rr(3, p, 0), 0) == Fraction(9, 32)  # 0.28125
    assert delta_exact(pair_binary_rr(3, p, 1), 0) == Fraction(5, 16)  # 0.3125
    brute = max(delta_exact(brute_binary_rr_pair(3, p, x, y), 0) for x, y in binary_rr_neighbours(3))
    assert brute == Fraction(5, 16)


@pytest.mark.parametrize("n", [1, 2, 3, 4, 5, 6])
@pytest.mark.parametrize("exp_eps0", EXP_EPS0)
def test_binary_rr_family_is_exact_for_every_dataset(n, exp_eps0):
    """The brute-force PLD of each neighbouring pair equals that of P_m/Q_m (m = #ones among the others)."""
    p = rr_flip_prob(exp_eps0)
    for x, y in binary_rr_neighbours(n):
        i = next(j for j in range(n) if x[j] != y[j])
        m = sum(x) - x[i]
        family = pair_binary_rr(n, p, m)
        if x[i] == 1:
            family = swapped(family)
        assert merge_by_ratio(brute_binary_rr_pair(n, p, x, y)) == merge_by_ratio(family)


@pytest.mark.parametrize("n", [3, 4, 5, 6])
@pytest.mark.parametrize("exp_eps0", EXP_EPS0)
def test_binary_rr_worst_case_is_max_over_m(n, exp_eps0):
    """max_m delta_m equals the brute-force worst case over all neighbours; m=0 (KHH) is strictly below at some eps."""
    p = rr_flip_prob(exp_eps0)
    brute_pairs = distinct_plds(brute_binary_rr_pair(n, p, x, y) for x, y in binary_rr_neighbours(n))
    family = [pair_binary_rr(n, p, m) for m in range((n - 1) // 2 + 1)]
    gaps = []
    for eps in EPS_GRID:
        worst = worst_delta(brute_pairs, eps)
        assert abs(worst - worst_delta(family, eps)) <= TOL
        assert delta_exact(family[0], eps) <= worst + TOL
        gaps.append(worst - delta_exact(family[0], eps))
    assert max(gaps) > 1e-3


def test_binary_rr_mirror_symmetry():
    """§1: delta_m = delta_{n-1-m} (bit flip)."""
    p = rr_flip_prob(Fraction(3))
    for n in range(2, 8):
        for m in range(n):
            for eps in EPS_GRID:
                assert abs(delta_exact(pair_binary_rr(n, p, m), eps)
                           - delta_exact(pair_binary_rr(n, p, n - 1 - m), eps)) <= TOL


# ------------------------------------------------------------------------------------------
# §2 shuffled kRR: strong (2b), weak (2c), histogram (2d)
# ------------------------------------------------------------------------------------------


def krr_datasets(n, k):
    """A few neighbouring datasets (x, x') differing in the last user (value 0 vs 1)."""
    others = {(0,) * (n - 1), (1,) * (n - 1), tuple(v % k for v in range(n - 1)),
              tuple((k - 1 - v) % k for v in range(n - 1))}
    return [(o + (0,), o + (1,)) for o in sorted(others)]


KRR_CASES = [(n, k, gamma) for n in (2, 3, 4, 5) for k in (2, 3, 4)
             for gamma in (krr_gamma(Fraction(3), k), Fraction(3, 10))]


@pytest.mark.parametrize("n,k,gamma", KRR_CASES)
def test_krr_strong_pair_equals_brute_force(n, k, gamma):
    """§2b: the exact strong pair has the same PLD as the enumerated A_s view (exactly)."""
    exact = pair_krr_strong(n, k, gamma)
    for x, y in krr_datasets(n, k)[:2]:
        brute = make_pair(*brute_force_krr(n, k, gamma, x, y, "strong"))
        assert merge_by_ratio(brute) == merge_by_ratio(exact)
        assert_same_delta_curves(brute, exact)


@pytest.mark.parametrize("n,k,gamma", KRR_CASES)
def test_krr_weak_pair_equals_brute_force(n, k, gamma):
    """§2c: the exact (b, n1, n2) pair has the same PLD as the enumerated A_w view (exactly)."""
    exact = pair_krr_weak(n, k, gamma)
    for x, y in krr_datasets(n, k)[:2]:
        brute = make_pair(*brute_force_krr(n, k, gamma, x, y, "weak"))
        assert merge_by_ratio(brute) == merge_by_ratio(exact)
        assert_same_delta_curves(brute, exact)


@pytest.mark.parametrize("n", [1, 2, 3, 4, 5, 6])
@pytest.mark.parametrize("k", [3, 4])
def test_krr_hist_pair_equals_brute_force(n, k):
    """§2d: histogram view of (1, 0^{n-1}) vs (2, 0^{n-1}) equals pair_krr_hist (exactly)."""
    for gamma in (krr_gamma(Fraction(3), k), Fraction(1, 10)):
        x, y = (1,) + (0,) * (n - 1), (2,) + (0,) * (n - 1)
        brute = make_pair(*brute_force_krr(n, k, gamma, x, y, "histogram"))
        exact = pair_krr_hist(n, k, gamma)
        assert merge_by_ratio(brute) == merge_by_ratio(exact)
        assert_same_delta_curves(brute, exact)


@pytest.mark.parametrize("n,k,gamma", [c for c in KRR_CASES if c[0] <= 4])
def test_chain_hist_weak_strong(n, k, gamma):
    """§2c: delta_hist <= delta_weak <= delta_strong for the same datasets (post-processing)."""
    for x, y in krr_datasets(n, k):
        views = [make_pair(*brute_force_krr(n, k, gamma, x, y, v)) for v in ("histogram", "weak", "strong")]
        for eps in EPS_GRID:
            d_hist, d_weak, d_strong = (delta_exact(v, eps) for v in views)
            assert d_hist <= d_weak + 1e-15 and d_weak <= d_strong + 1e-15


def test_krr_strong_atom_scales_single_round():
    """§2b: with the atom (loss 0, mass gamma), single-round delta = (1-gamma) * delta of the atom-free pair."""
    for n, k, gamma in [(5, 3, Fraction(1, 4)), (12, 4, Fraction(1, 2)), (30, 2, 0.1)]:
        full, cond = pair_krr_strong(n, k, gamma), pair_krr_strong_khh21(n, k, gamma)
        assert full[KRR_STRONG_ATOM] == (gamma, gamma)
        for eps in EPS_GRID:
            assert abs(delta_exact(full, eps) - (1 - gamma) * delta_exact(cond, eps)) <= TOL


def test_krr_eq51_below_exact_strong_at_n1000():
    """§2a/§2b: n=1000, k=4, gamma=0.25, eps=0.5: eq. (5.1) 2.41e-5 < exact A_s 1.68e-4."""
    d51 = delta_exact(pair_krr_eq51(1000, 4, 0.25), 0.5)
    dstrong = delta_exact(pair_krr_strong(1000, 4, 0.25), 0.5)
    assert d51 == pytest.approx(2.41e-5, rel=5e-3)
    assert dstrong == pytest.approx(1.68e-4, rel=5e-3)


def test_krr_eq51_atom_n20():
    """§2a: n=20, k=10, gamma=0.1: the Q/P atom (1-g)^{n-1} = 0.826... bounds delta for every eps."""
    pair = pair_krr_eq51(20, 10, Fraction(1, 10))
    atom = Fraction(99, 100) ** 19
    assert delta_directions(pair, math.inf) == (Fraction(1, 100) ** 19, atom)
    assert delta_exact(pair, 50.0) == pytest.approx(float(atom), rel=1e-14)
    assert float(atom) > 0.826


def test_krr_eq51_below_histogram_n100():
    """§2a: n=100, k=10, gamma=0.1, eps=0.3: eq. (5.1) 0.370 < histogram-only truth 0.419."""
    assert delta_exact(pair_krr_eq51(100, 10, 0.1), 0.3) == pytest.approx(0.370, abs=1e-3)
    assert delta_exact(pair_krr_hist(100, 10, 0.1), 0.3) == pytest.approx(0.419, abs=1e-3)


# ------------------------------------------------------------------------------------------
# §3 clone pairs
# ------------------------------------------------------------------------------------------


def worst_krr_hist_pairs(n, k, gamma):
    """Brute-force histogram pairs for every neighbouring dataset up to symmetry.

    The histogram is invariant under permuting users, and relabelling values maps any
    neighbouring pair to one where the last user holds 0 vs 1."""
    out = []
    for others in itertools.combinations_with_replacement(range(k), n - 1):
        out.append(make_pair(*brute_force_krr(n, k, gamma, others + (0,), others + (1,), "histogram")))
    return out


@pytest.mark.parametrize("exp_eps0", EXP_EPS0)
@pytest.mark.parametrize("krr_max_n", [{3: 5, 4: 4}, pytest.param({3: 6, 4: 5}, marks=pytest.mark.slow)])
def test_clone_pairs_ordering_and_validity(exp_eps0, krr_max_n):
    """§3: F(FMT23) <= F(FMT20) <= K, and all >= the real shuffled 2RR (n <= 6) and kRR (n <= krr_max_n[k])."""
    for n in range(2, 7):
        f23 = pair_clones(n, exp_eps0, clone_prob_fmt23(exp_eps0), "F")
        f20 = pair_clones(n, exp_eps0, clone_prob_fmt20(exp_eps0), "F")
        kk = pair_clones(n, exp_eps0, clone_prob_fmt20(exp_eps0), "K")
        p = rr_flip_prob(exp_eps0)
        truths = [brute_binary_rr_pair(n, p, x, y) for x, y in binary_rr_neighbours(n)]
        for k, max_n in krr_max_n.items():
            if n <= max_n:
                truths += worst_krr_hist_pairs(n, k, krr_gamma(exp_eps0, k))
        truths = distinct_plds(truths)
        for eps in EPS_GRID:
            d23, d20, dk = delta_exact(f23, eps), delta_exact(f20, eps), delta_exact(kk, eps)
            truth = worst_delta(truths, eps)
            assert truth <= d23 + TOL and d23 <= d20 + TOL and d20 <= dk + TOL, (n, eps, truth, d23, d20, dk)


def test_krr_gamma_matches_eps0():
    """§2: e^{eps0} = (1-gamma+gamma/k)/(gamma/k) for the gamma returned by krr_gamma."""
    for exp_eps0 in EXP_EPS0:
        for k in (2, 3, 4, 10):
            gamma = krr_gamma(exp_eps0, k)
            assert (1 - gamma + gamma / k) / (gamma / k) == exp_eps0


# ------------------------------------------------------------------------------------------
# closed forms of docs/mathematics.md vs the generative pairs (exact)
# ------------------------------------------------------------------------------------------


def bin_pmf(N, pi, i):
    return math.comb(N, i) * pi**i * (1 - pi) ** (N - i) if 0 <= i <= N else 0


def test_spec_closed_forms_binary_rr():
    """§1: Q(i)/P(i) = ((n-i)e^{-eps0} + i e^{eps0})/n."""
    for exp_eps0 in EXP_EPS0:
        p = rr_flip_prob(exp_eps0)
        for n in range(1, 9):
            for i, (P, Q) in pair_binary_rr(n, p, 0).items():
                assert Q / P == ((n - i) / exp_eps0 + i * exp_eps0) / n


def test_spec_closed_forms_krr():
    """§2b delta_inf, §2c and §2d closed-form losses, §2a support."""
    for n, k, gamma in [(4, 3, Fraction(1, 3)), (6, 4, Fraction(3, 10)), (5, 2, Fraction(1, 2))]:
        g = gamma / k
        strong = pair_krr_strong(n, k, gamma)
        assert delta_directions(strong, math.inf) == ((1 - gamma) * (1 - g) ** (n - 1),) * 2
        for (b, n1, n2), (P, Q) in pair_krr_weak(n, k, gamma).items():
            assert P / Q == ((1 - gamma) * n1 + gamma * (b + 1) / k) / ((1 - gamma) * n2 + gamma * (b + 1) / k)
        if k >= 3:
            s = 1 - gamma + g
            e0 = s / g
            for (h0, h1, h2), (P, Q) in pair_krr_hist(n, k, gamma).items():
                assert P / Q == (h0 / e0 + e0 * h1 + n - h0 - h1) / (h0 / e0 + e0 * h2 + n - h0 - h2)
        eq51 = pair_krr_eq51(n, k, gamma)
        assert delta_directions(eq51, math.inf) == (g ** (n - 1), (1 - g) ** (n - 1))


def test_spec_closed_forms_clones():
    """§3: closed-form pmfs of pair F and pair K, and K's infinite-loss atom."""
    for exp_eps0 in EXP_EPS0:
        q = clone_q(exp_eps0)
        for n in range(1, 8):
            for p_c in (clone_prob_fmt20(exp_eps0), clone_prob_fmt23(exp_eps0)):
                f = pair_clones(n, exp_eps0, p_c, "F")
                assert len(f) == (n + 1) * (n + 2) // 2 - 1
                for (a, b), (P, Q) in f.items():
                    c = a + b - 1
                    base = bin_pmf(n - 1, p_c, c) * Fraction(math.comb(c + 1, a), 2**c) / (c + 1)
                    assert P == base * (q * a + (1 - q) * b) and Q == base * (q * b + (1 - q) * a)
            p_c = clone_prob_fmt20(exp_eps0)

            def joint(j, i):
                return bin_pmf(n - 1, p_c, i) * bin_pmf(i, Fraction(1, 2), j) if i >= 0 else 0

            kk = pair_clones(n, exp_eps0, p_c, "K")
            for (a, b), (P, Q) in kk.items():
                assert P == q * joint(a - 1, a + b - 1) + (1 - q) * joint(a, a + b)
                assert Q == q * joint(a, a + b - 1) + (1 - q) * joint(a, a + b)
            atom = Fraction(1, 2 ** (n - 1)) / exp_eps0 ** (n - 2) / (exp_eps0 + 1)
            assert delta_directions(kk, math.inf) == (atom, atom)


def test_float_parameters_match_exact():
    """The float code paths (scipy pmfs) agree with the exact Fraction paths."""
    e0 = Fraction(3)
    cases = [
        (lambda t: pair_binary_rr(40, t, 7), rr_flip_prob(e0)),
        (lambda t: pair_krr_strong(40, 4, t), Fraction(1, 4)),
        (lambda t: pair_krr_weak(12, 3, t), Fraction(3, 10)),
        (lambda t: pair_krr_hist(12, 4, t), Fraction(1, 10)),
        (lambda t: pair_krr_eq51(40, 4, t), Fraction(1, 4)),
    ]
    for build, exact_param in cases:
        exact, approx = build(exact_param), build(float(exact_param))
        for eps in EPS_GRID:
            assert delta_exact(approx, eps) == pytest.approx(float(delta_exact(exact, eps)), rel=1e-12, abs=1e-16)
    for variant, p_c in (("F", clone_prob_fmt23(e0)), ("K", clone_prob_fmt20(e0))):
        exact, approx = pair_clones(40, e0, p_c, variant), pair_clones(40, 3.0, float(p_c), variant)
        for eps in EPS_GRID:
            assert delta_exact(approx, eps) == pytest.approx(float(delta_exact(exact, eps)), rel=1e-12, abs=1e-16)


# ------------------------------------------------------------------------------------------
# exact accountant
# ------------------------------------------------------------------------------------------


SMALL_PAIRS = [
    pair_binary_rr(4, Fraction(1, 4), 1),
    pair_krr_strong(3, 3, Fraction(1, 2)),
    pair_clones(4, Fraction(3), Fraction(1, 3), "K"),
]


def explicit_double_sum(pair_a, pair_b, eps, direction):
    """sum_{x, y} (A1(x)B1(y) - e^eps A2(x)B2(y))_+ in the requested direction, as plain loops."""
    i, j = (0, 1) if direction == "PQ" else (1, 0)
    alpha = 1 if eps == 0 else math.exp(eps)
    total = 0
    for va in pair_a.values():
        for vb in pair_b.values():
            total += max(va[i] * vb[i] - alpha * va[j] * vb[j], 0)
    return total


@pytest.mark.parametrize("pair", SMALL_PAIRS)
def test_two_fold_composition_is_explicit_double_sum(pair):
    product = compose(pair, 2)
    assert len(product) == len(pair) ** 2
    P2, Q2 = split_pair(product)
    for eps in EPS_GRID:
        for direction, (A, B), d in zip(("PQ", "QP"), ((P2, Q2), (Q2, P2)), delta_directions(pair, eps, 2)):
            explicit = explicit_double_sum(pair, pair, eps, direction)
            assert abs(hockey_stick(A, B, eps) - explicit) <= TOL
            assert abs(d - explicit) <= TOL
            if eps == 0:
                assert d == explicit  # exact Fraction arithmetic


def test_heterogeneous_composition():
    a, b, c = SMALL_PAIRS
    for eps in EPS_GRID:
        explicit = max(explicit_double_sum(a, b, eps, "PQ"), explicit_double_sum(a, b, eps, "QP"))
        assert abs(delta_heterogeneous([a, b], eps) - explicit) <= TOL
        assert abs(delta_heterogeneous([b, a], eps) - explicit) <= TOL
        P, Q = split_pair(compose_heterogeneous([a, b, c]))
        d3 = max(hockey_stick(P, Q, eps), hockey_stick(Q, P, eps))
        assert abs(d3 - delta_heterogeneous([a, b, c], eps)) <= TOL
        assert abs(delta_heterogeneous([a, a, a], eps) - delta_exact(a, eps, 3)) <= TOL


@pytest.mark.parametrize("pair", SMALL_PAIRS)
def test_delta_monotone_in_eps_and_rounds(pair):
    previous: list[float] = []
    for rounds in (1, 2, 3):
        curve = [delta_exact(pair, eps, rounds) for eps in EPS_GRID]
        assert all(d1 >= d2 - 1e-16 for d1, d2 in zip(curve, curve[1:]))
        assert all(d >= e - 1e-16 for d, e in zip(curve, previous))  # no comparison in the first round
        previous = curve


def test_adaptive_recursion_at_infinite_epsilon_is_the_chance_of_an_infinite_loss():
    # One member, rounds r: δ(∞) = 1 - (1 - a)^r with a the larger infinity mass of the two orders
    # (the recursion's inf - inf must read as an exhausted budget, not NaN); it is also the limit in ε.
    pair = pair_krr_strong(3, 3, Fraction(1, 2))
    a = float(max(delta_directions(pair, math.inf)))
    assert a > 0
    for rounds in (1, 2, 3):
        at_inf = delta_adaptive([pair], rounds, math.inf)
        assert at_inf == pytest.approx(1 - (1 - a) ** rounds, rel=1e-12)
        assert delta_adaptive([pair], rounds, 60.0) == pytest.approx(at_inf, rel=1e-12)


@pytest.mark.parametrize("pair", SMALL_PAIRS)
def test_epsilon_exact_inverts_delta(pair):
    for rounds in (1, 2):
        d_inf = max(delta_directions(pair, math.inf, rounds))
        d_zero = delta_exact(pair, 0, rounds)
        assert epsilon_exact(pair, d_zero, rounds) == 0.0
        assert 0 < epsilon_exact(pair, float(d_zero) * (1 - 1e-9), rounds) < 1e-6
        if d_inf > 0:
            assert epsilon_exact(pair, float(d_inf) / 2, rounds) == math.inf
        for frac in (0.1, 0.5, 0.9):
            target = float(d_inf + frac * (d_zero - d_inf))
            eps = epsilon_exact(pair, target, rounds)
            assert 0 < eps < math.inf
            assert delta_exact(pair, eps, rounds) <= target
            assert delta_exact(pair, eps - 1e-9, rounds) > target
