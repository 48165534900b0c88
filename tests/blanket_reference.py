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
