"""Independent exact reference for the pldshuffle test-suite.

Everything here is computed without FFT and without any loss grid, and nothing is imported
from ``pldshuffle``.  Section labels (§) name the parts of ``docs/mathematics.md``: §0 = #definitions (hockey stick,
composition), §1 = binary randomized response and §2a-§2d = k-ary randomized response (both #pairs;
2a: KHH21 eq. (5.1), 2b: strong, 2c: weak, 2d: histogram), §3 = #clone-reductions, §4 = #accountant.

Conventions
-----------
* A *distribution* is a dict ``outcome -> probability``.
* A *pair* is a dict ``outcome -> (P(outcome), Q(outcome))`` describing the two hypotheses
  (dataset X gives P, the neighbouring dataset X' gives Q) on a common outcome space.
* Probabilities are ``fractions.Fraction`` when the parameters passed in are Fractions
  (exact arithmetic) and floats otherwise.  Rational parameters are obtained by choosing
  e^{eps0} rational, see :func:`rr_flip_prob`, :func:`krr_gamma`, :func:`clone_q`, ...
* Values of users' data and of kRR outputs are 0-based: ``range(k)``.
* Hockey-stick divergences with ``eps == 0`` are exact (Fraction) for Fraction inputs;
  for ``eps != 0`` they are floats summed with ``math.fsum`` (only non-negative terms).
"""

from __future__ import annotations

import itertools
import math
from collections import Counter
from fractions import Fraction
from functools import lru_cache

import numpy as np
from scipy.stats import binom

KRR_STRONG_ATOM = "user_n_randomised"
"""Outcome key of the atom P = Q = gamma in :func:`pair_krr_strong` (user n randomised, §2b)."""


# ---------------------------------------------------------------------------------------------
# numeric helpers (exact for Fraction parameters, float otherwise)
# ---------------------------------------------------------------------------------------------


def _is_exact(x) -> bool:
    return isinstance(x, (Fraction, int)) and not isinstance(x, bool)


def _frac(num: int, den: int, exact: bool):
    """num/den as a Fraction if ``exact`` else as a float."""
    return Fraction(num, den) if exact else num / den


@lru_cache(maxsize=None, typed=True)
def _binom_pmfs(N: int, pi) -> tuple:
    """(Bin(N, pi)(i) for i = 0..N): exact with math.comb for Fraction pi, scipy.stats otherwise."""
    if _is_exact(pi):
        pi = Fraction(pi)
        return tuple(math.comb(N, i) * pi**i * (1 - pi) ** (N - i) for i in range(N + 1))
    return tuple(binom.pmf(np.arange(N + 1), N, float(pi)).tolist())


def _trinomial(N: int, g):
    """Yield ((x, y), Pr[X=x, Y=y]) for (X, Y, .) ~ Mult(N; g, g, 1-2g), zero terms skipped.

    Uses X+Y ~ Bin(N, 2g) and X | X+Y=c ~ Bin(c, 1/2)."""
    half = _frac(1, 2, _is_exact(g))
    for c, wc in enumerate(_binom_pmfs(N, 2 * g)):
        if wc == 0:
            continue
        for x, wx in enumerate(_binom_pmfs(c, half)):
            if wx:
                yield (x, c - x), wc * wx


def _add(dist: dict, key, w) -> None:
    dist[key] = dist.get(key, 0) + w


def _sum(terms):
    """Exact sum when every term is a Fraction/int, otherwise math.fsum of floats."""
    terms = list(terms)
    if all(_is_exact(t) for t in terms):
        return sum(terms, Fraction(0))
    return math.fsum(float(t) for t in terms)


def make_pair(P: dict, Q: dict) -> dict:
    """Pair dict ``outcome -> (P, Q)`` on the union of the supports of two distributions."""
    pair = {x: (p, 0) for x, p in P.items()}
    for x, q in Q.items():
        pair[x] = (pair[x][0], q) if x in pair else (0, q)
    return pair


def split_pair(pair: dict) -> tuple[dict, dict]:
    """Inverse of :func:`make_pair`: the two distributions ``(P, Q)`` of a pair."""
    return ({x: p for x, (p, _) in pair.items()}, {x: q for x, (_, q) in pair.items()})


# ---------------------------------------------------------------------------------------------
# parameter conversions (pass e^{eps0} as a Fraction to stay exact)
# ---------------------------------------------------------------------------------------------


def rr_flip_prob(exp_eps0):
    """Flip probability p = 1/(e^{eps0}+1) of binary randomised response (§1)."""
    return Fraction(1) / (exp_eps0 + 1) if _is_exact(exp_eps0) else 1 / (exp_eps0 + 1)


def krr_gamma(exp_eps0, k: int):
    """kRR randomisation probability gamma with LDP level eps0: e^{eps0} = 1 + k(1-gamma)/gamma (§2)."""
    return Fraction(k) / (exp_eps0 + k - 1) if _is_exact(exp_eps0) else k / (exp_eps0 + k - 1)


def clone_q(exp_eps0):
    """q = e^{eps0}/(e^{eps0}+1) of the clone pairs (§3)."""
    return 1 - rr_flip_prob(exp_eps0)


def clone_prob_fmt20(exp_eps0):
    """Clone probability p_c = e^{-eps0} (FMT20 Thm 3.2, general eps0-LDP randomisers, §3)."""
    return Fraction(1) / exp_eps0 if _is_exact(exp_eps0) else 1 / exp_eps0


def clone_prob_fmt23(exp_eps0):
    """Clone probability p_c = 2/(e^{eps0}+1) (FMT23 Thm 3.1, class S_{eps0}, §3)."""
    return 2 * rr_flip_prob(exp_eps0)


# ---------------------------------------------------------------------------------------------
# 1. brute force of the real shuffled mechanisms (tiny n)
# ---------------------------------------------------------------------------------------------


def _enumerate_views(local_dists, view) -> dict:
    """Distribution of ``view(states)`` when user i's local state is drawn from local_dists[i].

    Plain enumeration of every combination of local states (built user by user, carrying the
    product probability), then aggregation by view."""
    combos = [((), 1)]
    for dist in local_dists:
        combos = [(states + (s,), w * pr) for states, w in combos for s, pr in dist.items() if pr]
    out: dict = {}
    for states, w in combos:
        _add(out, view(states), w)
    return out


def _histogram(outputs, k: int) -> tuple:
    counts = Counter(outputs)
    return tuple(counts[v] for v in range(k))


def _check_neighbours(n: int, x, x_prime) -> int:
    if len(x) != n or len(x_prime) != n:
        raise ValueError("datasets must have n entries")
    diff = [i for i in range(n) if x[i] != x_prime[i]]
    if len(diff) != 1:
        raise ValueError("datasets must differ in exactly one position")
    return diff[0]


def brute_force_binary_rr(n: int, p, x, x_prime) -> tuple[dict, dict]:
    """Real shuffled binary RR (§1) by enumeration of all 2^n local outputs.

    Each user reports its bit flipped with probability ``p``; the analyst sees the histogram
    ``(#zeros, #ones)``.  Returns ``(P, Q)``: dicts histogram -> probability under ``x`` and
    ``x_prime`` (tuples of bits differing in one position)."""
    _check_neighbours(n, x, x_prime)

    def run(data):
        local = [{b: 1 - p, 1 - b: p} for b in data]
        return _enumerate_views(local, lambda ys: _histogram(ys, 2))

    return run(x), run(x_prime)


def brute_force_krr(n: int, k: int, gamma, x, x_prime, view: str = "histogram") -> tuple[dict, dict]:
    """Real shuffled k-ary RR (§2) by enumeration of every user's local state.

    Randomiser: with probability ``gamma`` user i randomises (beta_i = 1) and reports a uniform
    value of range(k), otherwise (beta_i = 0) it reports x_i.  Views:

    * ``"histogram"``: the output histogram (tuple of k counts) -- the shuffled mechanism (§2d);
      x and x_prime may differ in any position.
    * ``"weak"``: A_w of KHH21 Def. 9 (§2c): (histogram, (beta_1..beta_{n-1})); the data of
      users 1..n-1 are known constants, beta_n is not observed.  The differing user must be user n
      (the last position).
    * ``"strong"``: A_s (§2b): (histogram, (beta_1..beta_n)); it knows all other users' data and
      every randomisation bit, including beta_n, but not the outputs of randomising users (so it
      cannot read off user n's output).  Differing user = user n.

    Returns ``(P, Q)``: dicts view -> probability under ``x`` and ``x_prime``."""
    i = _check_neighbours(n, x, x_prime)
    if view not in ("histogram", "weak", "strong"):
        raise ValueError(f"unknown view {view!r}")
    if view != "histogram" and i != n - 1:
        raise ValueError("for the adversary views the differing user must be the last one")
    g = gamma / k

    def local_state_dist(v):
        """Law of (beta, output) for a user holding value v."""
        dist = {(1, y): g for y in range(k)}
        _add(dist, (0, v), 1 - gamma)
        return dist

    def local_output_dist(v):
        dist = {y: g for y in range(k)}
        _add(dist, v, 1 - gamma)
        return dist

    def run(data):
        if view == "histogram":
            return _enumerate_views([local_output_dist(v) for v in data], lambda ys: _histogram(ys, k))
        known = n if view == "strong" else n - 1
        return _enumerate_views(
            [local_state_dist(v) for v in data],
            lambda st: (_histogram([y for _, y in st], k), tuple(b for b, _ in st[:known])),
        )

    return run(x), run(x_prime)


# ---------------------------------------------------------------------------------------------
# 2. exact dataset pairs of docs/mathematics.md#pairs (generative enumeration, no FFT)
# ---------------------------------------------------------------------------------------------


def _convolve(d1: dict, d2: dict) -> dict:
    """Law of the sum of two independent integer variables given by pmf dicts."""
    out: dict = {}
    for a, wa in d1.items():
        for b, wb in d2.items():
            _add(out, a + b, wa * wb)
    return out


def _binom_dist(N: int, pi) -> dict:
    return {i: w for i, w in enumerate(_binom_pmfs(N, pi)) if w}


def pair_binary_rr(n: int, p, m: int = 0) -> dict:
    """Shuffled 2RR pair P_m, Q_m of §1; outcome = number of ones in the output (0..n).

    N_m = Bin(m, 1-p) + Bin(n-1-m, p) (the other users, m of them holding a one),
    P_m = N_m + Bern(p) (differing user holds 0), Q_m = N_m + Bern(1-p) (it holds 1).
    m = 0 is the KHH21 eq. (4.1) pair.  Returns dict i -> (P_m(i), Q_m(i))."""
    if not 0 <= m <= n - 1:
        raise ValueError("need 0 <= m <= n-1")
    others = _convolve(_binom_dist(m, 1 - p), _binom_dist(n - 1 - m, p))
    P = _convolve(others, _binom_dist(1, p))
    Q = _convolve(others, _binom_dist(1, 1 - p))
    return make_pair(P, Q)


def pair_binary_rr_scaled(n: int, p: float, m: int = 0) -> dict:
    """:func:`pair_binary_rr` for a float ``p`` taken exactly, as integers: each ``(P, Q)`` times the same
    power of two (``p = a/2^k`` is dyadic), so ratios (losses) are exact and no fraction is ever reduced
    (n = 300 in ~0.1 s where Fractions take ~10 s)."""
    a, den = float(p).as_integer_ratio()
    b = den - a  # 1 - p, times den
    ones, zeros = m, n - 1 - m
    w1 = [math.comb(ones, i) * b**i * a ** (ones - i) for i in range(ones + 1)]  # reports of the ones: 1 w.p. 1-p
    w0 = [math.comb(zeros, i) * a**i * b ** (zeros - i) for i in range(zeros + 1)]  # of the zeros: 1 w.p. p
    noise = [0] * (n + 1)  # N(j), j = -1 .. n-1 at index j + 1
    for i, x in enumerate(w1):
        for j, y in enumerate(w0):
            noise[i + j + 1] += x * y
    noise.append(0)  # N(n) = 0
    return {j: (a * noise[j] + b * noise[j + 1], b * noise[j] + a * noise[j + 1]) for j in range(n + 1)}


def _krr_strong_conditional(n: int, k: int, gamma, scale) -> tuple[dict, dict]:
    """scale * P0 and scale * Q0 of §2b: P0 = (M1+1, M2), Q0 = (M1, M2+1), (M1, M2, .) ~ Mult(n-1; g, g, 1-2g)."""
    P: dict = {}
    Q: dict = {}
    for (m1, m2), w in _trinomial(n - 1, Fraction(gamma, k) if _is_exact(gamma) else gamma / k):
        w = scale * w
        _add(P, (m1 + 1, m2), w)
        _add(Q, (m1, m2 + 1), w)
    return P, Q


def pair_krr_strong(n: int, k: int, gamma) -> dict:
    """Exact strong-adversary kRR pair of §2b (rigorous A_s view), with the atom.

    With probability gamma user n randomises: outcome ``KRR_STRONG_ATOM`` with P = Q = gamma.
    Otherwise outcome (n1, n2) with P: (M1+1, M2), Q: (M1, M2+1), each weighted by 1-gamma,
    (M1, M2, .) ~ Mult(n-1; g, g, 1-2g), g = gamma/k.  Returns dict outcome -> (P, Q)."""
    pair = make_pair(*_krr_strong_conditional(n, k, gamma, 1 - gamma))
    pair[KRR_STRONG_ATOM] = (gamma, gamma)
    return pair


def pair_krr_strong_khh21(n: int, k: int, gamma) -> dict:
    """The 2-D strong pair of §2b *without* the atom: P0 = (M1+1, M2), Q0 = (M1, M2+1).

    (M1, M2, .) ~ Mult(n-1; g, g, 1-2g), g = gamma/k; outcome (n1, n2) = counts of the two
    differing values.  This is the law of the A_s view conditioned on user n not randomising.
    (Not to be confused with the 1-D eq. (5.1) pair, :func:`pair_krr_eq51`.)"""
    return make_pair(*_krr_strong_conditional(n, k, gamma, 1))


def pair_krr_eq51(n: int, k: int, gamma) -> dict:
    """The literal 1-D KHH21 eq. (5.1) pair of §2a: P = Bin(n-1, g) + 1, Q = Bin(n-1, g), g = gamma/k.

    Outcome = integer count.  Not a valid upper bound (§2a [!]); used to exhibit the gap."""
    g = Fraction(gamma, k) if _is_exact(gamma) else gamma / k
    base = _binom_dist(n - 1, g)
    return make_pair({i + 1: w for i, w in base.items()}, base)


def pair_krr_weak(n: int, k: int, gamma) -> dict:
    """Exact weak-adversary kRR pair of §2c (KHH21 Def. 9 / Thm 10 / App. A), outcome (b, n1, n2).

    b ~ Bin(n-1, gamma) randomising users among users 1..n-1; their noise counts of the two
    differing values (N1, N2) | b ~ Mult(b; 1/k, 1/k, 1-2/k); user n's output is added: under P
    it hits value 1 w.p. 1-gamma+g, value 2 w.p. g and another value w.p. (k-2)g; under Q the
    roles of values 1 and 2 are swapped.  Returns dict (b, n1, n2) -> (P, Q)."""
    exact = _is_exact(gamma)
    g = Fraction(gamma, k) if exact else gamma / k
    stay, other = 1 - gamma + g, (k - 2) * g
    user_n_P = ((stay, 1, 0), (g, 0, 1), (other, 0, 0))
    user_n_Q = ((g, 1, 0), (stay, 0, 1), (other, 0, 0))
    P: dict = {}
    Q: dict = {}
    for b, wb in enumerate(_binom_pmfs(n - 1, gamma)):
        if wb == 0:
            continue
        for (x, y), wt in _trinomial(b, _frac(1, k, exact)):
            for dist, user_n in ((P, user_n_P), (Q, user_n_Q)):
                for wu, d1, d2 in user_n:
                    if wu:
                        _add(dist, (b, x + d1, y + d2), wb * wt * wu)
    return make_pair(P, Q)


def pair_krr_hist(n: int, k: int, gamma) -> dict:
    """Histogram-only shuffled kRR pair of §2d for X = (1, 0^{n-1}) vs X' = (2, 0^{n-1}), k >= 3.

    Values are 0-based; user 1 is the differing user.  Others' counts
    (o0, o1, o2, o_rest) ~ Mult(n-1; s, g, g, (k-3)g), s = 1-gamma+g; user 1's output is added.
    Outcome (h0, h1, h2) (sufficient statistic).  Returns dict (h0, h1, h2) -> (P, Q)."""
    if k < 3:
        raise ValueError("pair_krr_hist needs k >= 3")
    exact = _is_exact(gamma)
    g = Fraction(gamma, k) if exact else gamma / k
    s = 1 - gamma + g
    rest = (k - 3) * g
    user1_P = ((g, 0), (s, 1), (g, 2), (rest, None))  # user 1 holds value 1
    user1_Q = ((g, 0), (g, 1), (s, 2), (rest, None))  # user 1 holds value 2
    P: dict = {}
    Q: dict = {}
    for o0, w0 in enumerate(_binom_pmfs(n - 1, s)):
        for o1, w1 in enumerate(_binom_pmfs(n - 1 - o0, _frac(1, k - 1, exact))):
            for o2, w2 in enumerate(_binom_pmfs(n - 1 - o0 - o1, _frac(1, k - 2, exact))):
                w = w0 * w1 * w2
                if w == 0:
                    continue
                for dist, user1 in ((P, user1_P), (Q, user1_Q)):
                    for wu, v in user1:
                        if wu:
                            h = [o0, o1, o2]
                            if v is not None:
                                h[v] += 1
                            _add(dist, tuple(h), w * wu)
    return make_pair(P, Q)


def pair_clones(n: int, exp_eps0, p_c, variant: str = "F") -> dict:
    """Clone pairs of §3 (generative enumeration), outcome (a, b).

    C ~ Bin(n-1, p_c), A | C ~ Bin(C, 1/2), Delta ~ Bern(q), q = e^{eps0}/(e^{eps0}+1).
    * ``"F"`` (FMT20 Thm 3.2 / FMT23 Thm 3.1): P = (A+Delta, C-A+1-Delta), Q = (A+1-Delta, C-A+Delta);
      use p_c = :func:`clone_prob_fmt20` or :func:`clone_prob_fmt23`.
    * ``"K"`` (KHH21 eq. 6.1): P = (A+Delta, C-A), Q = (A, C-A+Delta); KHH21 uses p_c = e^{-eps0}.
    ``exp_eps0`` is e^{eps0} (a Fraction for exact arithmetic).  Returns dict (a, b) -> (P, Q)."""
    if variant not in ("F", "K"):
        raise ValueError(f"unknown variant {variant!r}")
    q = clone_q(exp_eps0)
    half = _frac(1, 2, _is_exact(p_c))
    P: dict = {}
    Q: dict = {}
    for c, wc in enumerate(_binom_pmfs(n - 1, p_c)):
        if wc == 0:
            continue
        for a, wa in enumerate(_binom_pmfs(c, half)):
            for d, wd in ((1, q), (0, 1 - q)):
                w = wc * wa * wd
                if w == 0:
                    continue
                if variant == "F":
                    _add(P, (a + d, c - a + 1 - d), w)
                    _add(Q, (a + 1 - d, c - a + d), w)
                else:
                    _add(P, (a + d, c - a), w)
                    _add(Q, (a, c - a + d), w)
    return make_pair(P, Q)


def pair_labelled(n: int, u, v, g, r0, r1) -> dict:
    """Labelled clone pair (generative enumeration), outcome (a, b) = numbers of labels 0 and 1.

    Each of the n-1 others is labelled 0 / 1 / bottom with probabilities (r0, r1, 1-r0-r1); the victim
    with (u, v, g) under P and (v, u, g) under Q (u + v + g = 1).  Exact for Fraction parameters."""
    P: dict = {}
    Q: dict = {}
    r2 = 1 - r0 - r1
    for a0 in range(n):
        for b0 in range(n - a0):
            rest = n - 1 - a0 - b0
            w = math.comb(n - 1, a0) * math.comb(n - 1 - a0, b0) * r0**a0 * r1**b0 * r2**rest
            if w == 0:
                continue
            for key, wp, wq in (((a0 + 1, b0), u, v), ((a0, b0 + 1), v, u), ((a0, b0), g, g)):
                if wp:
                    _add(P, key, w * wp)
                if wq:
                    _add(Q, key, w * wq)
    return make_pair(P, Q)


# ---------------------------------------------------------------------------------------------
# 2c. shuffled finite randomizers, every dataset (brute force)
# ---------------------------------------------------------------------------------------------


def shuffled_histograms(matrix, inputs) -> dict:
    """Law of the histogram of outputs (tuple of counts) when users with ``inputs`` each report one
    output drawn from row ``matrix[x]`` of a row-stochastic matrix (lists of Fractions or floats)."""
    m = len(matrix[0])
    dist: dict = {(0,) * m: 1}
    for x in inputs:
        row = matrix[x]
        new: dict = {}
        for hist, w in dist.items():
            for y, ry in enumerate(row):
                if ry:
                    h = list(hist)
                    h[y] += 1
                    _add(new, tuple(h), w * ry)
        dist = new
    return dist


def merge_identical_columns(matrix) -> list:
    """Matrix with identical output columns summed into one.

    Lossless for every shuffled dataset pair: outputs with identical columns have the same law under every
    input, so given the histogram of the merged classes the split inside a class does not depend on the
    dataset (the class histogram is sufficient)."""
    groups: dict = {}
    for y in range(len(matrix[0])):
        column = tuple(row[y] for row in matrix)
        groups[column] = groups.get(column, 0) + 1
    return [[column[x] * count for column, count in groups.items()] for x in range(len(matrix))]


def finite_worst_case_delta(matrix, n: int, eps_values) -> list:
    """Exact worst-case delta(eps) of the shuffled finite randomizer over **every** dataset of n users
    (replace-one, both directions): max over victim pairs x != x' and multisets of the others' inputs
    (the shuffle makes their order irrelevant).  Identical output columns are merged first (lossless).

    Returns one value per eps, with the arg-max dataset: [(delta, (x, x', others)), ...]."""
    from itertools import combinations, combinations_with_replacement

    matrix = merge_identical_columns(matrix)
    d = len(matrix)
    best = [(-1.0, None)] * len(eps_values)
    for others in combinations_with_replacement(range(d), n - 1):
        base = shuffled_histograms(matrix, others)
        laws = {x: _convolve_hist(base, matrix[x]) for x in range(d)}
        for x, x2 in combinations(range(d), 2):
            P, Q = laws[x], laws[x2]
            for i, eps in enumerate(eps_values):
                val = float(max(hockey_stick(P, Q, eps), hockey_stick(Q, P, eps)))
                if val > best[i][0]:
                    best[i] = (val, (x, x2, others))
    return best


def homogeneous_dataset_delta(class_probs, class_ratios, n: int, eps: float) -> float:
    """delta(eps) of a shuffled finite randomizer on (x, x, ..., x) vs (x', x, ..., x), both directions.

    The outputs are grouped into exactly three classes with probabilities ``class_probs`` under R(x)
    and likelihood ratios ``class_ratios`` = R(x')(y)/R(x)(y) (constant on each class).  All n users
    hold x under D, so the class histogram h ~ Mult(n; class_probs) and
    P(h)/Q(h) = n / sum_k h_k class_ratios[k].  Exact sum over all (n+1)(n+2)/2 histograms (numpy,
    O(n^2) memory), no grid and no truncation."""
    from scipy.stats import multinomial

    h0, h1 = np.meshgrid(np.arange(n + 1), np.arange(n + 1), indexing="ij")
    ok = h0 + h1 <= n
    h0, h1 = h0[ok], h1[ok]
    h2 = n - h0 - h1
    pmf = multinomial.pmf(np.stack([h0, h1, h2], axis=1), n, list(class_probs))
    s = h0 * class_ratios[0] + h1 * class_ratios[1] + h2 * class_ratios[2]  # = n Q/P
    t = math.exp(eps)
    forward = math.fsum((pmf * np.maximum(1.0 - t * s / n, 0.0)).tolist())  # sum (P - tQ)_+
    backward = math.fsum((pmf * np.maximum(s / n - t, 0.0)).tolist())  # sum (Q - tP)_+
    return max(forward, backward)


def _convolve_hist(dist: dict, row) -> dict:
    out: dict = {}
    for hist, w in dist.items():
        for y, ry in enumerate(row):
            if ry:
                h = list(hist)
                h[y] += 1
                _add(out, tuple(h), w * ry)
    return out


# ---------------------------------------------------------------------------------------------
# 3. exact accounting (§0): hockey stick, explicit composition, delta(eps), eps(delta)
# ---------------------------------------------------------------------------------------------


def hockey_stick(P: dict, Q: dict, eps) -> float | Fraction:
    """H_{e^eps}(P || Q) = sum_x (P(x) - e^eps Q(x))_+ (§0).

    Exact (Fraction) for Fraction inputs and eps == 0; float (math.fsum) otherwise.
    ``eps = math.inf`` gives P({Q = 0}) (= delta_infinity of direction P/Q)."""
    if eps == math.inf:
        return _sum(p for x, p in P.items() if Q.get(x, 0) == 0)
    if eps == 0:
        return _sum(max(p - Q.get(x, 0), 0) for x, p in P.items())
    alpha = math.exp(eps)
    return math.fsum(max(float(p) - alpha * float(Q.get(x, 0)), 0.0) for x, p in P.items())


def merge_by_ratio(pair: dict) -> dict:
    """Pair re-keyed by the likelihood ratio P(x)/Q(x) (math.inf where Q = 0), merging equal ratios.

    This is the privacy loss distribution of both directions at once; every hockey-stick
    divergence is unchanged by the merge.  Outcomes with P = Q = 0 are dropped.  With Fraction
    probabilities the ratios, hence the merge, are exact."""
    out: dict = {}
    for p, q in pair.values():
        if p == 0 and q == 0:
            continue
        r = math.inf if q == 0 else p / q
        old = out.get(r, (0, 0))
        out[r] = (old[0] + p, old[1] + q)
    return out


def _product(pair_a: dict, pair_b: dict, key) -> dict:
    out: dict = {}
    for xa, (pa, qa) in pair_a.items():
        for xb, (pb, qb) in pair_b.items():
            out[key(xa, xb)] = (pa * pb, qa * qb)
    return out


def compose_heterogeneous(pairs) -> dict:
    """Explicit product pair of a sequence of pairs (non-adaptive composition, §0).

    Outcome = tuple (x_1, ..., x_r) of the outcomes of the r factors, probability = product."""
    out: dict = {(): (1, 1)}
    for pair in pairs:
        out = _product(out, pair, lambda xs, x: xs + (x,))
    return out


def compose(pair: dict, rounds: int) -> dict:
    """``rounds``-fold product of one pair with itself; outcomes are tuples of length ``rounds``."""
    return compose_heterogeneous([pair] * rounds)


def composed_pld(pairs) -> dict:
    """merge_by_ratio(compose_heterogeneous(pairs)), merging after every factor to stay small.

    (The likelihood ratio is sufficient for each factor, so merging first does not change the
    law of the likelihood ratio of the product.)"""
    out: dict = {1: (1, 1)}
    for pair in pairs:
        out = merge_by_ratio(_product(out, merge_by_ratio(pair), lambda ra, rb: (ra, rb)))
    return out


def delta_directions(pair: dict, eps, rounds: int = 1) -> tuple:
    """(H_{e^eps}(P^r || Q^r), H_{e^eps}(Q^r || P^r)) for the rounds-fold composition (§0)."""
    P, Q = split_pair(composed_pld([pair] * rounds))
    return hockey_stick(P, Q, eps), hockey_stick(Q, P, eps)


def delta_exact(pair: dict, eps, rounds: int = 1):
    """Tight delta(eps) of the rounds-fold composed pair: max over both directions (§0)."""
    return max(delta_directions(pair, eps, rounds))


def delta_heterogeneous(pairs, eps):
    """Tight delta(eps) of the composition of different pairs: max over both directions."""
    P, Q = split_pair(composed_pld(pairs))
    return max(hockey_stick(P, Q, eps), hockey_stick(Q, P, eps))


def epsilon_exact(pair: dict, delta: float, rounds: int = 1, tol: float = 1e-13) -> float:
    """Smallest eps >= 0 with delta_exact(pair, eps, rounds) <= delta, by bisection (§4.6).

    Returns 0.0 if delta(0) <= delta and math.inf if delta(inf) > delta.  Otherwise the returned
    value is within ``tol`` above the exact answer (delta(eps) is continuous, non-increasing)."""
    pld = composed_pld([pair] * rounds)
    P, Q = split_pair(pld)

    def d(eps):
        return max(hockey_stick(P, Q, eps), hockey_stick(Q, P, eps))

    if d(0) <= delta:
        return 0.0
    if d(math.inf) > delta:
        return math.inf
    lo = 0.0
    hi = max(abs(math.log(r)) for r, (p, q) in pld.items() if p and q)  # d(hi) = d(inf)
    while hi - lo > tol:
        mid = 0.5 * (lo + hi)
        if d(mid) <= delta:
            hi = mid
        else:
            lo = mid
    return hi


# ---------------------------------------------------------------------------------------------
# 4. ledgers: worst cases over datasets in both settings, by enumeration (no grid, no FFT)
# ---------------------------------------------------------------------------------------------


def swap(pair: dict) -> dict:
    """The pair with P and Q exchanged (the other order of the neighbouring datasets)."""
    return {x: (q, p) for x, (p, q) in pair.items()}


def _key(pld: dict) -> tuple:
    return tuple(sorted((float(r), float(p), float(q)) for r, (p, q) in pld.items()))


def _options(members) -> list:
    """Distinct ratio-merged PLDs of the members in both orders."""
    seen: dict = {}
    for pair in members:
        for candidate in (pair, swap(pair)):
            pld = merge_by_ratio(candidate)
            seen.setdefault(_key(pld), pld)
    return list(seen.values())


def delta_ledger(entries, eps) -> float:
    """Exact worst-case δ(ε) of a ledger, maximised over every choice the adversary has.

    ``entries`` is a list of ``(kind, members, count)``:

    * ``"pair"``: one pair (``members = [pair]``), ``count`` rounds in the ledger's common order;
    * ``"changing"``: a worst case over datasets whose data may change between rounds: every round picks
      any member in either order;
    * ``"same"``: the same dataset in all ``count`` rounds: one member and one order for the block.

    The result is the max over all choices of the tight δ of the product (both global orders).
    """
    blocks = []  # per entry: list of alternative lists of per-round PLDs
    for kind, members, count in entries:
        if kind == "pair":
            blocks.append([[merge_by_ratio(members[0])] * count])
        elif kind == "same":
            blocks.append([[opt] * count for opt in _options(members)])
        elif kind == "changing":
            opts = _options(members)
            blocks.append([list(seq) for seq in itertools.combinations_with_replacement(opts, count)])
        else:
            raise ValueError(kind)
    best = 0.0
    for choice in itertools.product(*blocks):
        plds = [pld for block in choice for pld in block]
        P, Q = split_pair(composed_pld(plds))
        best = max(best, float(hockey_stick(P, Q, eps)), float(hockey_stick(Q, P, eps)))
    return best


def delta_adaptive(members, rounds: int, eps: float) -> float:
    """Exact worst-case δ(ε) when every round's dataset *and order* is chosen after seeing the earlier
    outputs (the adaptive composition the default setting must cover).

    Recursion on the privacy loss still to be paid: ``G_0(x) = (1 - e^x)_+`` and
    ``G_j(x) = max over members and orders of Σ_o P(o) G_{j-1}(x - ℓ(o))`` (``G_{j-1}(-∞) = 1`` for
    outcomes with ``Q(o) = 0``); outcomes with ``P(o) = 0`` contribute nothing.  It is at least the
    maximum over fixed sequences (``delta_ledger(..., "changing")``).  Cost (options × outcomes)^rounds.
    """
    # _options' PLDs are keyed by the likelihood ratio (math.inf where Q = 0): the loss is its log.
    options = [[(float(p), math.log(r)) for r, (p, q) in pld.items() if p > 0] for pld in _options(members)]

    def value(j: int, x: float) -> float:
        if x == -math.inf:
            return 1.0
        if j == 0:
            return max(-math.expm1(x), 0.0)
        return max(math.fsum(p * value(j - 1, _spend(x, loss)) for p, loss in opt) for opt in options)

    return value(rounds, eps)


def _spend(budget: float, loss: float) -> float:
    """The loss budget left after an outcome: an infinite loss exhausts any budget, ``ε = inf`` included
    (δ(∞) is the limit of δ(ε), the chance of an infinite loss), where ``inf - inf`` would be NaN."""
    return -math.inf if loss == math.inf else budget - loss


def delta_ledger_adaptive(entries, eps: float) -> float:
    """Exact worst-case δ(ε) of a ledger (entries as in :func:`delta_ledger`) when every choice is made after
    seeing the earlier outputs, rounds in the ledger's order: a ``"changing"`` round picks any member in
    either order, a ``"same"`` block picks one member and order for all its rounds when it starts, a
    ``"pair"`` round is its pair in the ledger's common order (both global orders are tried).

    Recursion over the remaining rounds as in :func:`delta_adaptive` (memoised on the budget left); at
    least :func:`delta_ledger` (whose choices are all fixed in advance).  Cost (options × outcomes)^steps.
    """
    def steps(flip: bool) -> list:
        out = []
        for kind, members, count in entries:
            if kind == "pair":
                pld = merge_by_ratio(swap(members[0]) if flip else members[0])
                out += [[pld]] * count
            elif kind == "changing":
                out += [_options(members)] * count
            elif kind == "same":
                out.append([composed_pld([opt] * count) for opt in _options(members)])
            else:
                raise ValueError(kind)
        return [[[(float(p), math.log(r)) for r, (p, q) in pld.items() if p > 0] for pld in opts] for opts in out]

    best = 0.0
    for flip in (False, True):
        plan = steps(flip)
        memo: dict = {}

        def value(j: int, x: float) -> float:
            if x == -math.inf:
                return 1.0
            if j == len(plan):
                return max(-math.expm1(x), 0.0)
            key = (j, x)
            if key not in memo:
                memo[key] = max(math.fsum(p * value(j + 1, _spend(x, loss)) for p, loss in opt) for opt in plan[j])
            return memo[key]

        best = max(best, value(0, float(eps)))
    return best

