"""Explicit neighbouring pairs as a dp-accounting user would build them (the pairs of KHH21's comparison), and an
adapter that feeds an explicit pair to the pldshuffle accountant.

All pmfs are returned as dicts ``outcome -> natural log of the mass`` (dp-accounting's input format);
outcomes whose mass is below ``exp(log_floor)`` under *both* P and Q are left out (as in KHH21's
comparison: "outcomes kept above log-mass -80"); the mass left out is at most (#outcomes)·e^-80, far below any δ
used here.  Losses of the kept outcomes are exact up to floating point.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from scipy import stats

LOG_FLOOR = -80.0


def _to_dicts(keys: list[Any], log_p: np.ndarray, log_q: np.ndarray) -> tuple[dict[Any, float], dict[Any, float]]:
    keep = np.maximum(log_p, log_q) > LOG_FLOOR
    lp, lq = log_p[keep].tolist(), log_q[keep].tolist()
    kept = [k for k, m in zip(keys, keep.tolist()) if m]
    dict_p = {k: v for k, v in zip(kept, lp) if v > -math.inf}
    dict_q = {k: v for k, v in zip(kept, lq) if v > -math.inf}
    return dict_p, dict_q


def krr_strong_pmfs(num_users: int, domain_size: int, gamma: float, *, atom: bool = True) -> tuple[dict, dict]:
    """Exact strong-adversary pair of shuffled kRR (docs/mathematics.md#pairs) on outcomes ``(n1, n2)`` plus the atom.

    With probability γ the differing user randomises and both views coincide (outcome ``"atom"``, mass γ
    under P and Q, loss 0).  Otherwise ``P = (M1+1, M2)``, ``Q = (M1, M2+1)`` with
    ``(M1, M2, ·) ~ Mult(n-1; g, g, 1-2g)``, ``g = γ/k``; the trinomial is
    ``Bin(n-1, 2g)(x+y) · Bin(x+y, 1/2)(x)``.  ``atom=False`` gives KHH21's figure pair (no atom).
    """
    n, g = num_users, gamma / domain_size
    log_w = math.log1p(-gamma) if atom else 0.0
    s = np.arange(n)
    log_s = stats.binom.logpmf(s, n - 1, 2 * g)
    live = s[log_s > LOG_FLOOR - 10.0]
    totals = np.arange(int(live.min()) + 1, int(live.max()) + 2)  # t = n1 + n2 = s + 1
    n1 = np.concatenate([np.arange(t + 1) for t in totals])
    tt = np.concatenate([np.full(t + 1, t) for t in totals])
    n2 = tt - n1
    base = stats.binom.logpmf(tt - 1, n - 1, 2 * g) + log_w
    with np.errstate(divide="ignore"):
        log_p = base + stats.binom.logpmf(n1 - 1, tt - 1, 0.5)
        log_q = base + stats.binom.logpmf(n1, tt - 1, 0.5)
    dict_p, dict_q = _to_dicts(list(zip(n1.tolist(), n2.tolist())), log_p, log_q)
    if atom:
        dict_p["atom"] = dict_q["atom"] = math.log(gamma)
    return dict_p, dict_q


def krr_1d_khh21_pmfs(num_users: int, domain_size: int, gamma: float) -> tuple[dict, dict]:
    """KHH21 eq. (5.1): ``P = Bin(n-1, g) + 1`` vs ``Q = Bin(n-1, g)`` on ``0..n`` (NOT a valid bound, docs/mathematics.md#pairs)."""
    n, g = num_users, gamma / domain_size
    i = np.arange(n + 1)
    with np.errstate(divide="ignore"):
        log_p = stats.binom.logpmf(i - 1, n - 1, g)
        log_q = stats.binom.logpmf(i, n - 1, g)
    return _to_dicts(i.tolist(), log_p, log_q)


def binary_rr_khh21_pmfs(num_users: int, flip_probability: float) -> tuple[dict, dict]:
    """KHH21 eq. (4.1): ``P = Bin(n, p)`` vs ``Q = Bin(n-1, p) + Bern(1-p)`` on ``0..n``."""
    n, p = num_users, flip_probability
    i = np.arange(n + 1)
    with np.errstate(divide="ignore"):
        log_p = stats.binom.logpmf(i, n, p)
        log_q = np.logaddexp(math.log(p) + stats.binom.logpmf(i, n - 1, p), math.log1p(-p) + stats.binom.logpmf(i - 1, n - 1, p))
    return _to_dicts(i.tolist(), log_p, log_q)


def dict_totals(dict_p: dict, dict_q: dict) -> dict[str, float]:
    """Total mass kept in each dict (a check that nothing material was left out)."""
    return {
        "outcomes": len(set(dict_p) | set(dict_q)),
        "mass_p": math.fsum(math.exp(v) for v in dict_p.values()),
        "mass_q": math.fsum(math.exp(v) for v in dict_q.values()),
    }


# ------------------------------------------------------------------------------------ pldshuffle side
def explicit_pair_mechanism(pmf_p: np.ndarray, pmf_q: np.ndarray, label: str, caveat: str):
    """A pldshuffle mechanism wrapping an explicit pair, built with the public
    ``PrivacyLossPair.from_probability_mass_functions``.  Created lazily so importing this module does
    not need pldshuffle."""
    from pldshuffle import PairFamily, PrivacyLossPair, ShuffleMechanism

    @dataclass(frozen=True, eq=False)
    class ExplicitPair(ShuffleMechanism):
        p: np.ndarray = field(repr=False)
        q: np.ndarray = field(repr=False)
        label: str = "explicit pair"

        def pair_family(self, *, tail_mass: float = 0.0):  # noqa: ARG002 - nothing is truncated
            pair = PrivacyLossPair.from_probability_mass_functions(self.p, self.q, label=self.label)
            return PairFamily.exact(pair, is_guarantee=False, caveats=(caveat,))

        def describe(self) -> str:
            return self.label

    return ExplicitPair(np.asarray(pmf_p, dtype=np.float64), np.asarray(pmf_q, dtype=np.float64), label)


def krr_1d_khh21_arrays(num_users: int, domain_size: int, gamma: float) -> tuple[np.ndarray, np.ndarray]:
    """The (5.1) pair as two aligned pmf arrays on ``0..n`` (full support, no floor)."""
    n, g = num_users, gamma / domain_size
    i = np.arange(n + 1)
    return stats.binom.pmf(i - 1, n - 1, g), stats.binom.pmf(i, n - 1, g)
