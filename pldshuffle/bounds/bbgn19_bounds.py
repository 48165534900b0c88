"""Balle–Bell–Gascón–Nissim, CRYPTO'19, §5: blanket amplification bounds and their inversion.

All three bounds start from Lemma 5.3,

.. math:: \\delta(\\varepsilon) \\le \\frac{1}{\\gamma n}\\sum_{m=1}^n \\binom nm \\gamma^m
          (1-\\gamma)^{n-m}\\, \\mathbb E\\Big[\\sum_{i\\le m} L_i\\Big]_+,
          \\qquad \\mathbb E L = 1 - e^\\varepsilon =: -a,

with the parameters of :mod:`.bbgn19_blanket`:

* ``thm53``: the printed closed form, Thm 5.3 eq. (4) (generic ε0-LDP randomizers);
* ``hoeffding``: Lemma 5.5 and the binomial identity, ``(1/(γ_lb n)) (b²/(4a))
  (1 - γ_lb (1 - e^{-2a²/b²}))^n`` (BBGN19 Fig. 3 "Hoeffding");
* ``bennett``: Lemma 5.6 **corrected** (``b_+ / log(1 + β)``, without the printed ``1/(a m)``; the
  authors fixed it in their code on 2020-07-06) with the exact binomial sum
  ``(1 - γ_lb q)^n - (1 - γ_lb)^n``. ``lemma56_as_printed=True`` reproduces the CRYPTO figure's
  curve, which is **not a bound** (``proven=False``).

Every bound is ``0`` for ``ε >= ε0`` (the shuffled output is ε0-DP by post-processing). δ(ε) is not
monotone (kRR, n=1000, γ=0.1, k=5: Hoeffding bottoms out near ε≈3.6), so ε(δ) is the *first*
crossing on a 200-point geometric grid of ``[1e-8 ε0, ε0]``, refined by ``brentq`` (to 1e-15, tighter
than the authors' 1e-12).
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass

import numpy as np

from .._validation import check_delta
from ..mechanisms._binomial import binomial_logpmf  # the accurate log-pmf (Boost), not gammaln differences
from ..pld.inversion import first_crossing
from ._common import (
    check_analytic_users,
    BoundResult,
    check_flag,
    check_linear_users,
    check_target_epsilon,
    epsilon_grid,
    log1mexp,
    log_bennett_h,
    log_expm1,
    log_sum_exp,
    plain_float,
)
from .bbgn19_blanket import BlanketParameters, log_blanket_parameters, resolve_randomizer

__all__ = [
    "BBGN19_BOUNDS",
    "bbgn19_bennett_delta",
    "bbgn19_bennett_delta_result",
    "bbgn19_bennett_epsilon",
    "bbgn19_bennett_epsilon_result",
    "bbgn19_hoeffding_delta",
    "bbgn19_hoeffding_delta_result",
    "bbgn19_hoeffding_epsilon",
    "bbgn19_hoeffding_epsilon_result",
    "bbgn19_thm53_delta",
    "bbgn19_thm53_delta_result",
    "bbgn19_thm53_epsilon",
    "bbgn19_thm53_epsilon_result",
]

#: The §5 bounds implemented here.
BBGN19_BOUNDS = ("thm53", "hoeffding", "bennett")

_C = -math.expm1(-2.0)  # 1 - e^{-2}, Thm 5.3
_PRINTED = "Bennett bound with BBGN19 Lemma 5.6 as printed (typo 1/(a m)); not a proven bound"


@functools.lru_cache(maxsize=4)
def _printed_weights(n: int, gamma: float) -> tuple[np.ndarray, np.ndarray]:
    """``m = 1..n`` and ``log(Bin(n, γ)(m) / m)`` for the printed Lemma 5.6.

    Cached: γ stays fixed while ε is inverted.
    """
    m = np.arange(1, n + 1, dtype=float)
    return m, binomial_logpmf(m, n, gamma) - np.log(m)


@dataclass(frozen=True)
class _Blanket:
    """One validated configuration: bound, randomizer, n, ε0, k and the Lemma 5.6 flag."""

    bound: str
    randomizer: str
    num_users: int
    local_epsilon: float
    domain_size: int | None = None
    printed: bool = False

    def log_delta(self, eps: float) -> float:
        """``log δ(ε)`` for ``0 < ε < ε0``."""
        n, eps0 = self.num_users, self.local_epsilon
        p = log_blanket_parameters(self.randomizer, eps0, eps, self.domain_size)
        log_a = log_expm1(eps)
        log_ratio = 2.0 * (log_a - p.log_loss_range)  # log(a² / b²)
        if self.bound == "thm53":
            # b here is the generic range with γ_ub = 1; exponent C n (e^{-ε0} ∧ a²/b²)
            exponent = _C * n * min(math.exp(-eps0), math.exp(log_ratio))
            return 2.0 * p.log_loss_range - math.log(4.0 * n) - log_a - exponent
        gamma = math.exp(p.log_gamma_lower)
        prefix = -p.log_gamma_lower - math.log(n)
        if self.bound == "hoeffding":
            shrink = -math.expm1(-2.0 * math.exp(log_ratio))  # 1 - e^{-2a²/b²}
            return prefix + 2.0 * p.log_loss_range - math.log(4.0) - log_a + n * math.log1p(-gamma * shrink)
        return prefix + self._log_bennett_sum(p, log_a, gamma)

    def _log_bennett_sum(self, p: BlanketParameters, log_a: float, gamma: float) -> float:
        """``log[b_+ / log(1+β) Σ_m Bin(n,γ)(m) e^{-m x}]`` with ``x = c h(β) / b_+²``."""
        n = self.num_users
        beta = math.exp(log_a + p.log_max_loss - p.log_second_moment)
        log_x = p.log_second_moment - 2.0 * p.log_max_loss + log_bennett_h(beta)
        x = math.exp(log_x)
        prefix = p.log_max_loss - math.log(math.log1p(beta))
        if self.printed:
            m, log_weights = _printed_weights(n, gamma)
            return prefix - log_a + log_sum_exp(log_weights - m * x)
        # Σ_{m>=1} Bin(n,γ)(m) e^{-m x} = (1 - γ q)^n - (1 - γ)^n with q = 1 - e^{-x}
        log_one_minus_gq = math.log1p(-gamma * -math.expm1(-x))
        d = n * math.log1p(-gamma * math.exp(-x - log_one_minus_gq))  # n log((1-γ)/(1-γq)) <= 0
        if d < 0.0:
            return prefix + n * log_one_minus_gq + log1mexp(d)
        # (1-γ)/(1-γq) rounds to 1: mean-value bound n γ (1-q) (1-γq)^{n-1} of the difference
        return prefix + math.log(n * gamma) - x + (n - 1) * log_one_minus_gq

    def delta(self, eps: float) -> float:
        """δ(ε) clipped to [0, 1] (0 for ``ε >= ε0``, 1 at ``ε = 0`` where the bound diverges)."""
        if eps >= self.local_epsilon:
            return 0.0
        if eps == 0.0:
            return 1.0
        return math.exp(min(0.0, self.log_delta(eps)))

    def result(self, value: float, note: str | None = None) -> BoundResult:
        """A result carrying ``note`` and, for the printed Lemma 5.6, ``proven=False``."""
        if self.printed:
            return BoundResult(value, proven=False, note=_PRINTED if note is None else f"{_PRINTED}; {note}")
        return BoundResult(value, note=note)


def _blanket(
    bound: str,
    num_users: object,
    randomizer: object,
    local_epsilon: object,
    domain_size: object,
    gamma: object,
    printed: object = False,
) -> _Blanket:
    is_printed = check_flag("lemma56_as_printed", printed)
    if bound == "bennett" and is_printed:
        n = check_linear_users(num_users, "the printed Lemma 5.6", "the corrected bound (lemma56_as_printed=False)")
    else:
        n = check_analytic_users(num_users)
    name, eps0, k = resolve_randomizer(randomizer, local_epsilon, domain_size, gamma)
    return _Blanket(bound, name, n, eps0, k, is_printed)


def _delta_result(setting: _Blanket, target_epsilon: object) -> BoundResult:
    eps = check_target_epsilon(target_epsilon)
    if eps >= setting.local_epsilon:
        return setting.result(0.0, note="epsilon >= local_epsilon: delta = 0 by post-processing")
    return setting.result(setting.delta(eps))


def _epsilon_result(setting: _Blanket, target_delta: object) -> BoundResult:
    delta = check_delta(target_delta)
    eps0 = setting.local_epsilon
    value = first_crossing(setting.delta, delta, epsilon_grid(eps0))
    if value is None or value >= eps0:
        return setting.result(
            eps0, note="no amplification certified: delta(eps) > target for all eps < local_epsilon"
        )
    return setting.result(value)


def bbgn19_thm53_delta_result(*, num_users: int, local_epsilon: float, target_epsilon: float) -> BoundResult:
    """δ(ε) of BBGN19 Thm 5.3, eq. (4), for any ε0-LDP randomizer.

    .. math:: \\delta = \\frac{(e^\\varepsilon+1)^2(e^{\\varepsilon_0}-e^{-\\varepsilon_0})^2}
              {4n(e^\\varepsilon-1)} \\exp\\Big(-Cn\\Big(e^{-\\varepsilon_0}\\wedge
              \\frac{(e^\\varepsilon-1)^2}{(e^\\varepsilon+1)^2(e^{\\varepsilon_0}-e^{-\\varepsilon_0})^2}
              \\Big)\\Big),\\quad C = 1 - e^{-2}

    Valid for every ``n >= 1``, ε0 > 0, ε >= 0 (clipped to [0, 1]; 0 for ``ε >= ε0``).

    Parameters
    ----------
    num_users : int
        Number of users n.
    local_epsilon : float
        ε0 > 0.
    target_epsilon : float
        ε >= 0.

    Returns
    -------
    BoundResult

    References
    ----------
    Balle, Bell, Gascón, Nissim, "The privacy blanket of the shuffle model", CRYPTO 2019, Thm 5.3.
    """
    return _delta_result(_blanket("thm53", num_users, "generic", local_epsilon, None, None), target_epsilon)


def bbgn19_thm53_epsilon_result(*, num_users: int, local_epsilon: float, target_delta: float) -> BoundResult:
    """Smallest ε certified by BBGN19 Thm 5.3 eq. (4) (first crossing, see module notes).

    Returns ε0 with a ``note`` when no ε < ε0 is certified. Parameters as in
    :func:`bbgn19_thm53_delta_result`, with ``target_delta`` in (0, 1).
    """
    return _epsilon_result(_blanket("thm53", num_users, "generic", local_epsilon, None, None), target_delta)


def bbgn19_hoeffding_delta_result(
    *,
    num_users: int,
    target_epsilon: float,
    randomizer: str = "generic",
    local_epsilon: float | None = None,
    domain_size: int | None = None,
    gamma: float | None = None,
) -> BoundResult:
    """δ(ε) of the BBGN19 Hoeffding blanket bound (Lemmas 5.3, 5.5 + binomial identity).

    .. math:: \\delta = \\frac{1}{\\gamma_{lb} n}\\,\\frac{b^2}{4a}
              \\big(1 - \\gamma_{lb}(1 - e^{-2a^2/b^2})\\big)^n,\\quad a = e^\\varepsilon - 1

    Valid for every n, ε0 and ε >= 0 (clipped to [0, 1]; 0 for ``ε >= ε0``).

    Parameters
    ----------
    num_users : int
        Number of users n.
    target_epsilon : float
        ε >= 0.
    randomizer : {"generic", "krr", "laplace"}
        Parameters of Lemma 5.4 (any ε0-LDP randomizer), 5.7 (kRR) or 5.8 (Laplace on [0, 1]).
    local_epsilon : float, optional
        ε0 > 0 (for ``krr`` alternatively ``gamma``).
    domain_size, gamma : optional
        ``krr`` only: k >= 2 and the blanket probability γ = k/(e^{ε0}+k-1).

    Returns
    -------
    BoundResult

    References
    ----------
    Balle, Bell, Gascón, Nissim, CRYPTO 2019, Lemmas 5.3-5.5, 5.7, 5.8 and Fig. 3 ("Hoeffding").
    """
    return _delta_result(
        _blanket("hoeffding", num_users, randomizer, local_epsilon, domain_size, gamma), target_epsilon
    )


def bbgn19_hoeffding_epsilon_result(
    *,
    num_users: int,
    target_delta: float,
    randomizer: str = "generic",
    local_epsilon: float | None = None,
    domain_size: int | None = None,
    gamma: float | None = None,
) -> BoundResult:
    """Smallest ε certified by the BBGN19 Hoeffding bound (first crossing of δ(ε) <= target_delta).

    Parameters as in :func:`bbgn19_hoeffding_delta_result`, with ``target_delta`` in (0, 1).
    Returns ε0 with a ``note`` when no ε < ε0 is certified.
    """
    setting = _blanket("hoeffding", num_users, randomizer, local_epsilon, domain_size, gamma)
    return _epsilon_result(setting, target_delta)


def bbgn19_bennett_delta_result(
    *,
    num_users: int,
    target_epsilon: float,
    randomizer: str = "generic",
    local_epsilon: float | None = None,
    domain_size: int | None = None,
    gamma: float | None = None,
    lemma56_as_printed: bool = False,
) -> BoundResult:
    """δ(ε) of the BBGN19 Bennett blanket bound with the corrected Lemma 5.6.

    .. math:: \\delta = \\frac{b_+}{\\gamma_{lb} n \\log(1+\\beta)}
              \\big[(1-\\gamma_{lb} q)^n - (1-\\gamma_{lb})^n\\big],\\quad
              \\beta = \\frac{a b_+}{c},\\ q = 1 - e^{-c\\,h(\\beta)/b_+^2}

    Parameters
    ----------
    num_users, target_epsilon, randomizer, local_epsilon, domain_size, gamma
        As in :func:`bbgn19_hoeffding_delta_result`.
    lemma56_as_printed : bool
        ``True`` uses the printed Lemma 5.6 (extra factor ``1/(a m)``, summed over the binomial),
        which drew the CRYPTO Fig. 3 Bennett curves. **Not a bound**; the result has
        ``proven=False``.

    Returns
    -------
    BoundResult

    References
    ----------
    Balle, Bell, Gascón, Nissim, CRYPTO 2019, Lemmas 5.3, 5.4, 5.6 (corrected as in the authors'
    code, commit "Fixed typo in Bennett bounds", 2020-07-06), 5.7, 5.8.
    """
    setting = _blanket(
        "bennett", num_users, randomizer, local_epsilon, domain_size, gamma, lemma56_as_printed
    )
    return _delta_result(setting, target_epsilon)


def bbgn19_bennett_epsilon_result(
    *,
    num_users: int,
    target_delta: float,
    randomizer: str = "generic",
    local_epsilon: float | None = None,
    domain_size: int | None = None,
    gamma: float | None = None,
    lemma56_as_printed: bool = False,
) -> BoundResult:
    """Smallest ε certified by the BBGN19 Bennett bound (first crossing of δ(ε) <= target_delta).

    Parameters as in :func:`bbgn19_bennett_delta_result`, with ``target_delta`` in (0, 1).
    """
    setting = _blanket(
        "bennett", num_users, randomizer, local_epsilon, domain_size, gamma, lemma56_as_printed
    )
    return _epsilon_result(setting, target_delta)


bbgn19_thm53_delta = plain_float(bbgn19_thm53_delta_result)
bbgn19_thm53_epsilon = plain_float(bbgn19_thm53_epsilon_result)
bbgn19_hoeffding_delta = plain_float(bbgn19_hoeffding_delta_result)
bbgn19_hoeffding_epsilon = plain_float(bbgn19_hoeffding_epsilon_result)
bbgn19_bennett_delta = plain_float(bbgn19_bennett_delta_result)
bbgn19_bennett_epsilon = plain_float(bbgn19_bennett_epsilon_result)
