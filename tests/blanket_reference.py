"""Independent exact blanket pair, from its definition (nothing imported from pldshuffle).

The blanket pair of a finite randomizer ``R`` (rows = inputs, columns = outputs) for the victim pair
``(x1, x2)`` among ``n`` users: ``m(y) = min_x R[x][y]``, ``γ = Σ m``, ``ω = m/γ``; ``B ~ Bin(n-1, γ)`` is
revealed; the view is the multiset of ``B`` i.i.d. draws from ``ω`` and one draw from ``R[x1]`` (``P``) or
``R[x2]`` (``Q``).  Here every sequence of the ``B + 1`` outputs is enumerated and its probability added
to its multiset (no types, no formula for the loss).  Cost ``Σ_b outputs^(b+1)``: tiny cases only.
"""

from __future__ import annotations

import itertools
import math

from reference import hockey_stick


def participating(matrix, q):
    """``R_q``: each row scaled by ``q`` with a void output (last column) of probability ``1 - q``."""
    return [[q * v for v in row] + [1 - q] for row in matrix]


def blanket_pair(matrix, n: int, x1: int, x2: int) -> tuple[dict, dict]:
    """``(P, Q)`` of the blanket pair as dicts ``(b, sorted outputs) -> probability``."""
    outputs = range(len(matrix[0]))
    m = [min(row[y] for row in matrix) for y in outputs]
    gamma = sum(m)
    omega = [v / gamma if gamma else 0 for v in m]  # γ = 0: no blanket, B = 0
    P: dict = {}
    Q: dict = {}
    for b in range(n):
        w = math.comb(n - 1, b) * gamma**b * (1 - gamma) ** (n - 1 - b) if gamma else int(b == 0)
        if w == 0:
            continue
        for draws in itertools.product([y for y in outputs if omega[y] > 0], repeat=b):
            weight = w
            for y in draws:
                weight *= omega[y]
            for y0 in outputs:
                p, q = matrix[x1][y0], matrix[x2][y0]
                if p == 0 and q == 0:
                    continue
                key = (b, tuple(sorted((*draws, y0))))
                P[key] = P.get(key, 0) + weight * p
                Q[key] = Q.get(key, 0) + weight * q
    return P, Q


def blanket_delta(matrix, n: int, eps_values, pairs=None) -> list[float]:
    """``max`` over victim pairs (both orders) of the blanket pair's ``δ(ε)``, one value per ε."""
    d = len(matrix)
    pairs = [(a, b) for a in range(d) for b in range(a + 1, d)] if pairs is None else pairs
    best = [0.0] * len(eps_values)
    for x1, x2 in pairs:
        P, Q = blanket_pair(matrix, n, x1, x2)
        for i, eps in enumerate(eps_values):
            best[i] = max(best[i], float(hockey_stick(P, Q, eps)), float(hockey_stick(Q, P, eps)))
    return best


def hit_pair(n: int, gamma: float, e: float, pi11: float, pi10: float, q: float = 1.0) -> tuple[dict, dict]:
    """``(P, Q)`` of the blanket pair of a randomizer with hit types, with participation ``q``, as dicts
    ``(b, k11, k10, k01) -> probability`` (``k00`` the rest), every count vector enumerated.

    Each of the other ``n - 1`` users is a blanket item with probability ``γ_q = 1 - q + qγ``; a blanket
    item is void (``⊥``, likelihood ratio 1 under both inputs) with probability ``(1 - q)/γ_q``, else a draw
    from ``ω`` whose (hit x1, hit x2) law is ``π``.  The victim's report among the ``c = b + 1`` items:
    summing over which item it is, ``P(counts) = Mult_c(counts)·Σ_items r1(item)/c`` with ``r1 = e`` for an
    item hitting ``x1`` and ``1`` otherwise, normalised per ``b`` (no closed form used).  Cost ``O(n^4)``.
    """
    gq = 1.0 - q + q * gamma
    s = q * gamma / gq
    t11, t10 = s * pi11, s * pi10
    t00 = 1.0 - t11 - 2.0 * t10
    P: dict = {}
    Q: dict = {}
    for b in range(n):
        wb = math.comb(n - 1, b) * gq**b * (1.0 - gq) ** (n - 1 - b)
        c = b + 1
        rows = []
        for k11 in range(c + 1):
            for k10 in range(c + 1 - k11):
                for k01 in range(c + 1 - k11 - k10):
                    k00 = c - k11 - k10 - k01
                    mult = math.factorial(c) // (math.factorial(k11) * math.factorial(k10) * math.factorial(k01) * math.factorial(k00))
                    base = mult * t11**k11 * t10**k10 * t10**k01 * t00**k00
                    s1 = (k11 + k10) * e + (k01 + k00)
                    s2 = (k11 + k01) * e + (k10 + k00)
                    rows.append(((b, k11, k10, k01), base * s1, base * s2))
        z1, z2 = math.fsum(r[1] for r in rows), math.fsum(r[2] for r in rows)
        for key, p, qq in rows:
            P[key] = wb * p / z1
            Q[key] = wb * qq / z2
    return P, Q


def hit_delta(n: int, gamma: float, e: float, pi11: float, pi10: float, q: float, eps_values) -> list[float]:
    """``max(H(P‖Q), H(Q‖P))`` of :func:`hit_pair` at every ε."""
    P, Q = hit_pair(n, gamma, e, pi11, pi10, q)
    return [max(float(hockey_stick(P, Q, eps)), float(hockey_stick(Q, P, eps))) for eps in eps_values]
