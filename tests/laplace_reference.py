"""Independent reference for the blanket pair of the Laplace randomizer (tests only).

Numerical integration (scipy.integrate.quad, nested, with error control) over the continuous draws of the
blanket pair, straight from its definition: ``B ~ Bin(n-1, γ)`` blanket draws from ``ω`` (the Laplace law
at the midpoint) and the victim's draw; ``δ(ε) = Σ_B Bin(n-1, γ)(B)·(γ/(B+1))·E_{ω^{B+1}}[(S_1 - e^ε S_2)_+]``
with ``S_j = Σ_i ρ_j(Y_i)``, ``ρ_j = f_{x_j}/inf_x f_x``.  No grid, no lattice, no FFT, nothing of the
library but the parameters.
"""

from __future__ import annotations

import math

import numpy as np
from scipy import integrate, stats

_OPTS = {"epsabs": 1e-13, "epsrel": 1e-11, "limit": 200}
#: The two-dimensional route over outputs (kinks everywhere): looser, still far below the tests' margins.
_OPTS_2D = {"epsabs": 1e-12, "epsrel": 1e-10, "limit": 100}


def _side_expect(g, eps0: float) -> float:
    """``E[g(V)]``, ``log V = min(Z, ε0)``, ``Z ~ Exp(1/2)`` (variable ``z = log V``)."""
    atom = math.exp(-0.5 * eps0)
    part, _ = integrate.quad(lambda z: g(math.exp(z)) * 0.5 * math.exp(-0.5 * z), 0.0, eps0, **_OPTS)
    return atom * g(math.exp(eps0)) + part


def _linear_expect(alpha: float, beta: float, eps0: float) -> float:
    """``E[(α + βV)_+]`` in closed form: ``∫ (α + βv) v^{-3/2}/2 dv = -α v^{-1/2} + β v^{1/2}``."""
    top = math.exp(eps0)
    atom = math.exp(-0.5 * eps0) * max(alpha + beta * top, 0.0)
    if beta == 0.0:
        return atom + max(alpha, 0.0) * (1.0 - top**-0.5)
    t = -alpha / beta
    lo, hi = (max(1.0, t), top) if beta > 0 else (1.0, min(top, t))
    if hi <= lo:
        return atom
    prim = lambda v: -alpha / math.sqrt(v) + beta * math.sqrt(v)  # noqa: E731
    return atom + prim(hi) - prim(lo)


def _endpoint_term(items: int, epsilon: float, eps0: float, offset: float = 0.0) -> float:
    """``E_{ω^{items}}[(S_1 - e^ε S_2 + offset)_+]`` for the victim pair (lower, upper): ``k`` left items
    contribute ``(V, 1)``, the others ``(1, V')``."""
    e = math.exp(epsilon)
    if items == 0:
        return max(offset, 0.0)
    total = 0.0
    for k in range(items + 1):
        # coefficients of the V's: +1 for a left item (in S_1), -e^ε for a right one (in S_2)
        betas = [1.0] * k + [-e] * (items - k)
        const = (items - k) - e * k + offset

        def inner(alpha: float, rest: list[float]) -> float:
            if len(rest) == 1:
                return _linear_expect(alpha, rest[0], eps0)
            return _side_expect(lambda v: inner(alpha + rest[0] * v, rest[1:]), eps0)

        total += stats.binom.pmf(k, items, 0.5) * inner(const, betas)
    return total


def endpoint_delta(n: int, eps0: float, epsilon: float, participation: float = 1.0) -> float:
    """Blanket δ(ε) of ``n`` users, victim inputs at the domain's ends (one direction: the pair is
    symmetric).  Cost grows like (quad points)^(n-1): n ≤ 3 in seconds.

    With participation ``q`` it is the blanket pair of ``R_q = (1-q)·δ_⊥ + q·R``: blanket mass
    ``γ_q = 1 - q + qγ`` (``⊥`` has the same density under every input), and among the ``b + 1`` items
    (victim's included, under the reference law ``ω_q``) ``u ~ Bin(b + 1, (1 - q)/γ_q)`` are ``⊥``, each
    adding 1 to both sums: ``(1 - e^ε)·u`` to ``S_1 - e^ε S_2``."""
    e = math.exp(epsilon)
    gamma = 1.0 - participation + participation * math.exp(-0.5 * eps0)
    void = (1.0 - participation) / gamma
    total = 0.0
    for b in range(n):
        items = b + 1
        term = sum(stats.binom.pmf(u, items, void) * _endpoint_term(items - u, epsilon, eps0, (1.0 - e) * u)
                   for u in range(items + 1)) if void > 0.0 else _endpoint_term(items, epsilon, eps0)
        total += stats.binom.pmf(b, n - 1, gamma) * gamma / items * term
    return total


def pair_delta_two_users(x1: float, x2: float, eps0: float, epsilon: float) -> float:
    """Blanket δ(ε) of ``n = 2`` users for any victim inputs ``x1, x2`` in ``[0, 1]`` (the other direction:
    swap them), integrating over the outputs ``y`` directly (breakpoints at the inputs and the ends)."""
    b = 1.0 / eps0
    gamma = math.exp(-0.5 * eps0)
    def rho(x: float, y: float) -> float:
        return math.exp((max(abs(y), abs(y - 1.0)) - abs(y - x)) / b)
    def omega(y: float) -> float:
        return math.exp(-abs(y - 0.5) / b) / (2.0 * b)
    e = math.exp(epsilon)
    cuts = sorted({0.0, 0.5, 1.0, x1, x2})
    pieces = [(-math.inf, cuts[0])] + list(zip(cuts[:-1], cuts[1:])) + [(cuts[-1], math.inf)]

    def one(y: float) -> float:
        return max(rho(x1, y) - e * rho(x2, y), 0.0) * omega(y)

    single = sum(integrate.quad(one, a, c, **_OPTS_2D)[0] for a, c in pieces)
    def two(y1: float) -> float:
        r1, r2 = rho(x1, y1), rho(x2, y1)
        return omega(y1) * sum(integrate.quad(lambda y2: max(r1 + rho(x1, y2) - e * (r2 + rho(x2, y2)), 0.0) * omega(y2), a, c, **_OPTS_2D)[0]
                               for a, c in pieces)
    double = sum(integrate.quad(two, a, c, **_OPTS_2D)[0] for a, c in pieces)
    return (1.0 - gamma) * gamma * single + gamma * gamma / 2.0 * double


__all__ = ["endpoint_delta", "pair_delta_two_users"]

if __name__ == "__main__":  # pragma: no cover
    print(endpoint_delta(2, 1.0, 0.1), pair_delta_two_users(0.0, 1.0, 1.0, 0.1))
    print(np.array([pair_delta_two_users(x1, x2, 1.0, 0.1) for x1, x2 in [(0.2, 0.9), (0.0, 0.5), (0.3, 0.7)]]))
