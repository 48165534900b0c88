"""Shuffled k-ary randomized response (kRR): exact privacy loss distributions (core spec §2).

Each of the ``n`` users holds a value in ``{1..k}``; with probability ``1 - γ`` it reports its value,
otherwise (the *blanket*, BBGN19 Alg. 1) a uniform value of ``{1..k}``.  The local privacy level is
``ε0 = log(1 + k(1-γ)/γ)``, i.e. ``γ = k / (e^{ε0} + k - 1)`` (BBGN19 Lemma 5.1).  The reports are
shuffled.  Neighbouring datasets differ in the value of one user (replace-one): 1 in ``X``, 2 in ``X'``.

The four adversaries of :class:`ShuffledKRR` (KHH21 §5, corrected as in core spec §2):

``"strong"`` (§2b)
    Knows every other user's value and every randomisation bit, including the differing user's.
    With probability ``γ`` the differing user randomised and the two views coincide (loss 0);
    otherwise the adversary sees the counts ``(n1, n2)`` of values 1 and 2 among the outputs:
    ``P0 = (M1 + 1, M2)``, ``Q0 = (M1, M2 + 1)``, ``(M1, M2, ·) ~ Mult(n-1; g, g, 1-2g)``, ``g = γ/k``,
    loss ``log(n1/n2)``, ``δ_∞ = (1-γ)(1-g)^{n-1}``.
``"khh21"``
    The same 2-D pair without the atom (``P0`` vs ``Q0``), as in KHH21's figure code: a valid but
    looser bound (single round: ``δ_strong = (1-γ) δ_khh21``).
``"weak"`` (§2c, KHH21 Def. 9 / Thm 10 / App. A)
    Knows the other users' values and randomisation bits, not the differing user's bit.  Statistic
    ``(b, n1, n2)``: ``b ~ Bin(n-1, γ)`` randomising others, ``n1, n2`` the counts of values 1 and 2
    among the randomisers' outputs and the differing user's output; loss
    ``log(((1-γ)n1 + γ(b+1)/k) / ((1-γ)n2 + γ(b+1)/k))``, ``δ_∞ = 0``.
``"histogram"`` (§2d)
    The real shuffled mechanism seen through its output histogram, for the one dataset pair
    ``X = (1, 3, .., 3)`` vs ``X' = (2, 3, .., 3)`` (``k ≥ 3``).  Exact for that pair, hence only a
    *lower* bound on the mechanism's worst case.

KHH21's eq. (5.1) (a 1-D marginal of the strong view) is deliberately not offered: it can fall below
the real mechanism (core spec §2a).

Representation.  All four pairs share one form, used by :func:`_tilted_trinomial_support`: a base law
``u ~ Bin(N0, π0)``, ``c | u ~ Bin(N1(u), π1)``, ``x | c ~ Bin(c, 1/2)`` (a trinomial ``(x, c-x)`` given
``u``), and an affine *tilt* ``f_u(z) = A(u) + B(u) z ≥ 0`` with

.. math:: P(u, c, x) = \\mathrm{base}(u, c, x)\\, f_u(x), \\qquad Q(u, c, x) = \\mathrm{base}(u, c, x)\\, f_u(c - x),

so the pair is symmetric (``x ↔ c - x``) and the loss is ``log f_u(x) - log f_u(c-x)`` in closed form.

==========  ========  ===========  ==========  ========  =========================  ============
pair        u         N0, π0       N1(u)       π1        A(u)                       B(u)
==========  ========  ===========  ==========  ========  =========================  ============
strong      (none)    0            n           2g        0                          1/(n g)
weak        b         n-1, γ       b+1         2/k       γ                          (1-γ)k/(b+1)
histogram   v=n-h0    n, (k-1)g    v           2/(k-1)   (e^{-ε0}(n-v) + v)/n       (e^{ε0}-1)/n
==========  ========  ===========  ==========  ========  =========================  ============

(strong: ``Mult(n; g, g, 1-2g)(n1, n2) · n1/(ng) = Mult(n-1; g, g, 1-2g)(n1-1, n2)``; weak:
``P = Bin(n-1,γ)(b) · Mult(b+1; 1/k, 1/k, 1-2/k)(n1, n2) · (γ + (1-γ)k n1/(b+1))``; histogram:
``P = Mult(n; 1-γ+g, g, g, (k-3)g)(h) · φ_P(h)/n`` with ``φ_P`` the numerator of §2d's loss.)

Truncation (core spec §3.1).  Every coordinate is cut to a window chosen with exact binomial tails;
the *P-mass* dropped (with the tilt) is computed exactly from binomial cdf/sf values and booked as
``truncated_mass`` (``+inf`` for upper bounds, deleted for lower bounds).  Each coordinate drops at most
``tail_mass`` of P; inner windows get budgets inversely proportional to the mass of their row, which
keeps the points above a level of the joint mass (:func:`_tilted_trinomial_support`).

References
----------
KHH21  A. Koskela, M. Heikkilä, A. Honkela, "Tight accounting in the shuffle model of differential
       privacy", arXiv:2106.00477 (2021), §5, Def. 9, Thm 10 and App. A.
BBGN19 B. Balle, J. Bell, A. Gascón, K. Nissim, "The privacy blanket of the shuffle model",
       CRYPTO 2019, Alg. 1 and Lemma 5.1.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import KW_ONLY, dataclass
from typing import NamedTuple

import numpy as np
from numpy.typing import NDArray

from .._kernels import fill_tilted_points
from .._validation import check_choice, check_int, check_positive_finite, check_probability
from ..pld import LossDistribution, PrivacyLossPair
from ._binomial import binomial_cdf, binomial_logpmf, binomial_sf, binomial_windows
from .base import DEFAULT_TAIL_MASS, PairFamily, ShuffleMechanism

__all__ = ["ShuffledKRR", "MAX_SUPPORT_POINTS"]

#: Largest exact support (number of outcomes) a pair may have; larger requests are refused up front
#: (about 16 bytes per point here, a few times that transiently while the loss distribution is sorted).
MAX_SUPPORT_POINTS = 50_000_000

#: Smallest supported per-value blanket probability ``γ/k`` (``ε0`` up to about 230).
_MIN_G = 1e-100

_ADVERSARIES = ("weak", "strong", "khh21", "histogram")

_MEANING = {
    "weak": "weak adversary (KHH21 Def. 9: knows the other users' data and randomisation bits; exact "
    "(b, n1, n2) pair, core §2c): strict bounds on the worst case over all neighbouring datasets",
    "strong": "strong adversary (also knows whether the differing user randomised; exact pair with the "
    "γ atom, core §2b): strict bounds on the worst case over all neighbouring datasets, dominating 'weak'",
    "khh21": "KHH21 figure-code pair (strong pair without the γ atom): a valid but looser upper bound, "
    "kept to reproduce KHH21's figures",
    "histogram": "histogram-only analyst on the dataset pair (1,3..3) vs (2,3..3): exact for that pair, "
    "i.e. a LOWER bound on the worst case, not a guarantee",
}

_CAVEATS = {
    "weak": (),
    "strong": (),
    "khh21": (
        "adversary='khh21' reproduces the pair of KHH21's figure code (the strong-adversary pair without "
        "the atom of mass gamma at loss 0); it is a valid upper bound but looser than adversary='strong'.",
    ),
    "histogram": (
        "adversary='histogram' is exact only for the dataset pair (1,3,..,3) vs (2,3,..,3) seen through the "
        "output histogram: it is a LOWER bound on the mechanism's worst-case privacy loss, not a guarantee.",
    ),
}


@dataclass(frozen=True)
class ShuffledKRR(ShuffleMechanism):
    """Shuffled k-ary randomized response (KHH21 §5, BBGN19), replace-one neighbouring datasets.

    Parameters
    ----------
    num_users : int
        Number of users ``n ≥ 2`` (integral floats such as ``1e4`` are accepted).
    domain_size : int
        Number of values ``k ≥ 2``.
    gamma : float, optional
        Blanket probability ``γ ∈ (0, 1]``: a user reports a uniform value with probability ``γ``.
    local_epsilon : float, optional
        Local privacy level ``ε0 > 0``; ``γ = k / (e^{ε0} + k - 1)``.  Pass exactly one of ``gamma``
        and ``local_epsilon``; the one given is stored as given, the other is a derived property.
    adversary : {"weak", "strong", "khh21", "histogram"}
        Whose view is analysed (module docstring; core spec §2b-§2d).  ``"weak"`` and ``"strong"`` give
        DP guarantees; ``"khh21"`` a looser guarantee matching KHH21's figures; ``"histogram"`` a lower
        bound (``k ≥ 3``) that is not a guarantee.

    Notes
    -----
    Validity range: every ``n ≥ 2``, ``k ≥ 2``, ``γ/k ≥ 1e-100`` (``ε0 ≲ 230``), as long as the truncated
    support has at most :data:`MAX_SUPPORT_POINTS` points (larger requests are refused before anything
    big is allocated).  Support sizes ``S`` at the default tail mass (``g = γ/k``; the constants grow
    like ``log(1/tail_mass)^{d/2}`` in ``d`` truncated dimensions):

    * ``"strong"``, ``"khh21"``: ``S ≈ 270 n g sqrt(1-2g)`` -- ``O(n)``; 1.5e4 points at
      ``n=1000, k=4, γ=0.25``, 1.5e5 at ``n=1e4``, 1.5e7 at ``n=1e6``;
    * ``"weak"``: ``S ≈ 3300 (nγ)^{3/2} sqrt((1-γ)(1-2/k)) / k`` -- ``O(n^{3/2})``; 2.0e6 points at
      ``n=1000, k=4, γ=0.25``, so ``nγ`` up to about 2000 fits (``n=1e4`` there needs 6.5e7: refused);
    * ``"histogram"``: ``S ≈ 3300 (ng)^{3/2} sqrt((k-1)(1-(k-1)g)(1-2/(k-1)))`` -- ``O(n^{3/2})``;
      1.5e6 points at ``n=1000, k=4, γ=0.25``.

    Building costs ``O(S log S)`` time (two sorts; the loss distribution merges equal losses) and
    ``O(S)`` memory, about 100 bytes per point at the peak.

    Examples
    --------
    >>> m = ShuffledKRR(1000, 4, gamma=0.25, adversary="strong")
    >>> round(m.epsilon0, 6)
    2.564949
    >>> fam = m.pair_family()
    >>> fam.is_guarantee
    True
    """

    num_users: int
    domain_size: int
    _: KW_ONLY
    gamma: float | None = None
    local_epsilon: float | None = None
    adversary: str = "weak"

    def __post_init__(self) -> None:
        object.__setattr__(self, "num_users", check_int("num_users", self.num_users, minimum=2))
        object.__setattr__(self, "domain_size", check_int("domain_size", self.domain_size, minimum=2))
        if (self.gamma is None) == (self.local_epsilon is None):
            given = "both" if self.gamma is not None else "neither"
            raise ValueError(
                f"pass exactly one of gamma (blanket probability in (0, 1]) or local_epsilon (> 0); got {given}"
            )
        if self.gamma is not None:
            object.__setattr__(self, "gamma", check_probability("gamma", self.gamma, high_open=False))
        else:
            object.__setattr__(self, "local_epsilon", check_positive_finite("local_epsilon", self.local_epsilon))
        check_choice("adversary", self.adversary, _ADVERSARIES)
        if self.adversary == "histogram" and self.domain_size < 3:
            raise ValueError(
                "adversary='histogram' needs domain_size >= 3 (its dataset pair (1,3..3) vs (2,3..3) uses a "
                f"third value); got domain_size={self.domain_size}"
            )
        log_gamma, _ = self._log_parameters()
        if log_gamma - math.log(self.domain_size) < math.log(_MIN_G):
            raise ValueError(
                f"gamma/domain_size must be >= {_MIN_G:g} (local_epsilon at most about 230); got "
                + (f"gamma={self.gamma!r}" if self.gamma is not None else f"local_epsilon={self.local_epsilon!r}")
            )

    # ------------------------------------------------------------------ parameters
    def _log_parameters(self) -> tuple[float, float]:
        """``(log γ, log a)`` with ``a = e^{ε0} - 1 = k(1-γ)/γ``, in log space (finite for any valid input)."""
        k = self.domain_size
        if self.gamma is not None:
            log_gamma = math.log(self.gamma)
            log_a = math.log(k) + math.log1p(-self.gamma) - log_gamma if self.gamma < 1.0 else -math.inf
        else:
            eps0 = self.local_epsilon
            log_a = eps0 + math.log(-math.expm1(-eps0))
            log_gamma = math.log(k) - float(np.logaddexp(eps0, math.log(k - 1)))
        return log_gamma, log_a

    @property
    def blanket_probability(self) -> float:
        """``γ``: probability that a user reports a uniform value (``k / (e^{ε0} + k - 1)``)."""
        return self.gamma if self.gamma is not None else math.exp(self._log_parameters()[0])

    @property
    def epsilon0(self) -> float:
        """``ε0 = log(1 + k(1-γ)/γ)``: the local privacy level of the randomizer."""
        if self.local_epsilon is not None:
            return self.local_epsilon
        return float(np.logaddexp(0.0, self._log_parameters()[1]))

    def describe(self) -> str:
        """One line: mechanism, parameters, neighbouring relation, adversary and what the bound means."""
        return (
            f"Shuffled k-ary randomized response: n={self.num_users} users, k={self.domain_size} values, "
            f"blanket probability gamma={self.blanket_probability:.6g} (local epsilon0={self.epsilon0:.6g}), "
            f"replace-one neighbouring datasets, {_MEANING[self.adversary]}."
        )

    # ------------------------------------------------------------------ pairs
    def pair_family(self, *, tail_mass: float = DEFAULT_TAIL_MASS) -> PairFamily:
        """The neighbouring pair of one round (a single symmetric pair; ``backward=None``).

        Parameters
        ----------
        tail_mass : float
            Probability mass of ``P`` that truncation may drop per coordinate (2 coordinates for
            ``"strong"``/``"khh21"``, 3 for ``"weak"``/``"histogram"``); the dropped mass is computed
            exactly and booked as ``truncated_mass``.

        Returns
        -------
        PairFamily
            ``PairFamily.exact(pair)``; for ``"histogram"`` with ``is_guarantee=False``.

        Raises
        ------
        ValueError
            If the truncated support would exceed :data:`MAX_SUPPORT_POINTS` points (checked before
            anything large is allocated).

        Notes
        -----
        Time ``O(S log S)``, memory ``O(S)`` for ``S`` support points (class docstring).
        """
        tail = check_probability("tail_mass", tail_mass)
        n, k = self.num_users, self.domain_size
        log_gamma, log_a = self._log_parameters()
        log_one_minus_gamma = log_a + log_gamma - math.log(k)  # log(1 - γ), exact also for tiny 1 - γ
        gamma = self.blanket_probability
        g = gamma / k
        log_n, log_k = math.log(n), math.log(k)
        advice = "fewer users or a larger tail_mass (the dropped mass is added to delta)"
        if self.adversary == "weak":
            advice += ", or adversary='strong' (O(n) points, an upper bound on 'weak')"
        context = f"ShuffledKRR(num_users={n}, domain_size={k}, gamma={gamma:.6g}, adversary={self.adversary!r})"

        if self.adversary in ("strong", "khh21"):
            # Base Mult(n; g, g, 1-2g) with tilt n1/(n g), i.e. P0(n1, n2) = Mult(n-1; g, g, 1-2g)(n1-1, n2).
            log_b = log_k - log_n - log_gamma
            support = _tilted_trinomial_support(
                outer_trials=0,
                outer_prob=0.0,
                inner_trials=lambda u: np.full(u.shape, n, dtype=np.int64),
                inner_prob=2.0 * g,
                log_tilt=lambda u: (np.full(u.shape, -np.inf), np.full(u.shape, log_b)),
                tail_mass=tail,
                context=context,
                advice=advice,
            )
            if self.adversary == "strong":
                # With probability γ the differing user randomised: identical views, loss 0 (§2b).
                weight = min(math.exp(log_one_minus_gamma), 1.0)  # 1 - γ (log space rounds to ~1e-13)
                forward = LossDistribution(
                    np.append(support.losses, 0.0),
                    np.append(weight * support.masses, gamma),
                    infinity_mass=weight * support.infinity_mass,
                    truncated_mass=weight * support.truncated_mass,
                )
                label = "kRR strong adversary (core §2b)"
            else:
                forward = support.distribution()
                label = "kRR KHH21 figure pair (strong without atom)"
        elif self.adversary == "weak":
            # b ~ Bin(n-1, γ); (n1, n2) | b ~ Mult(b+1; 1/k, 1/k, 1-2/k); tilt γ + (1-γ) k n1 / (b+1).
            support = _tilted_trinomial_support(
                outer_trials=n - 1,
                outer_prob=gamma,
                inner_trials=lambda b: b + 1,
                inner_prob=2.0 / k,
                log_tilt=lambda b: (
                    np.full(b.shape, log_gamma),
                    log_one_minus_gamma + log_k - np.log(b + 1.0),
                ),
                tail_mass=tail,
                context=context,
                advice=advice,
            )
            forward = support.distribution()
            label = "kRR weak adversary (core §2c)"
        else:
            # v = n - h0 ~ Bin(n, (k-1)g) outputs differing from the others' value; (h1, h2) | v ~
            # Mult(v; 1/(k-1), 1/(k-1), ·) via c ~ Bin(v, 2/(k-1)); tilt (e^{-ε0}(n-v) + v + (e^{ε0}-1) h1) / n.
            # (Counting v rather than h0 keeps the small probability (k-1)g exact when γ is tiny.)
            eps0 = self.epsilon0

            def log_tilt(v: NDArray[np.int64]) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
                with np.errstate(divide="ignore"):
                    log_base = np.logaddexp(np.log((n - v).astype(np.float64)) - eps0, np.log(v.astype(np.float64)))
                return log_base - log_n, np.full(v.shape, log_a - log_n)

            support = _tilted_trinomial_support(
                outer_trials=n,
                outer_prob=(k - 1) * g,
                inner_trials=lambda v: v,
                inner_prob=2.0 / (k - 1),
                log_tilt=log_tilt,
                tail_mass=tail,
                context=context,
                advice=advice,
            )
            forward = support.distribution()
            label = "kRR histogram view of (1,3..3) vs (2,3..3) (core §2d)"

        pair = PrivacyLossPair(forward, None, label=f"{label}: n={n}, k={k}, gamma={gamma:.6g}")
        return PairFamily.exact(
            pair, is_guarantee=self.adversary != "histogram", caveats=_CAVEATS[self.adversary]
        )


# ---------------------------------------------------------------------------------------------
# the shared builder
# ---------------------------------------------------------------------------------------------


class _Support(NamedTuple):
    """Exact (truncated) support of the direction P/Q of a tilted-trinomial pair."""

    losses: NDArray[np.float64]  # finite losses
    masses: NDArray[np.float64]  # their P-masses
    infinity_mass: float  # P-mass kept where Q = 0
    truncated_mass: float  # P-mass dropped by the windows, computed exactly

    def distribution(self) -> LossDistribution:
        return LossDistribution(self.losses, self.masses, self.infinity_mass, self.truncated_mass)


def _tilted_windows(
    trials: NDArray[np.int64], prob: float, tail_mass: float | NDArray[np.float64]
) -> tuple[NDArray[np.int64], NDArray[np.int64], NDArray[np.float64], NDArray[np.float64]]:
    r"""Windows for ``z ~ Bin(N, π)`` under an affine tilt, and the exact masses they drop.

    With ``Z' ~ Bin(N-1, π)`` and its central window ``[lo', hi']`` (tail ``tail_mass``), the window is
    ``[lo', hi' + 1]``; it drops at most ``tail_mass`` of both ``Bin(N, π) = Z' + Bern(π)`` and ``1 + Z'``.
    A tilt affine in ``z`` is ``t(z) = t0 (N-z)/N + t1 z/N`` and, by ``z Bin(N,π)(z) = Nπ Bin(N-1,π)(z-1)``,

    .. math:: \sum_{z \notin W} \mathrm{Bin}(N,π)(z)\, t(z) = t_0\, q_0 + t_1\, q_1,\quad
              q_0 = (1-π) P[Z' \notin W],\ q_1 = π P[Z' \notin W - 1],

    which is at most ``tail_mass · E[t(z)]``.  Returns ``(lo, hi, q0, q1)`` (``q0 + q1`` is the untilted
    dropped mass); ``N = 0`` gives ``[0, 0]`` and nothing dropped.
    """
    trials = np.asarray(trials, dtype=np.int64)
    m = np.maximum(trials - 1, 0)
    lo, hi = binomial_windows(m, prob, tail_mass)
    positive = trials > 0
    hi = np.where(positive, hi + 1, 0)
    lo = np.where(positive, lo, 0)
    q0 = np.where(positive, (1.0 - prob) * (binomial_cdf(lo - 1, m, prob) + binomial_sf(hi, m, prob)), 0.0)
    q1 = np.where(positive, prob * (binomial_cdf(lo - 2, m, prob) + binomial_sf(hi - 1, m, prob)), 0.0)
    return lo, hi, q0, q1


def _tilted_trinomial_support(
    *,
    outer_trials: int,
    outer_prob: float,
    inner_trials: Callable[[NDArray[np.int64]], NDArray[np.int64]],
    inner_prob: float,
    log_tilt: Callable[[NDArray[np.int64]], tuple[NDArray[np.float64], NDArray[np.float64]]],
    tail_mass: float,
    context: str,
    advice: str,
) -> _Support:
    """Truncated support of ``P/Q`` for ``P = base · f_u(x)``, ``Q = base · f_u(c - x)`` (module docstring).

    Base law: ``u ~ Bin(outer_trials, outer_prob)``, ``c | u ~ Bin(inner_trials(u), inner_prob)``,
    ``x | c ~ Bin(c, 1/2)``.  Tilt ``f_u(z) = A(u) + B(u) z`` given as ``(log A, log B) = log_tilt(u)``;
    it must satisfy ``E[f] = 1`` (P is a probability law) and ``E[f | u]`` must be affine in ``u`` (true
    for the kRR pairs), which makes the dropped mass of every level exactly computable
    (:func:`_tilted_windows`).  Loss ``log f_u(x) - log f_u(c-x) = log((A/B + x) / (A/B + c - x))``
    (``+inf`` where ``f_u(c-x) = 0``).

    Truncation budget.  ``u`` drops at most ``tail_mass`` of P.  The window of ``c`` given ``u`` may
    drop ``tail_mass / (U · P(u))`` of the conditional law (U outer values), and that of ``x`` given
    ``(u, c)`` ``tail_mass / (K · P(u, c))`` (K pairs ``(u, c)``, rounded down to ``tail_mass · 2^j`` so
    that windows are shared), so each coordinate again drops at most ``tail_mass`` of P in total.  This
    keeps the points above a level of the joint mass (an ellipsoid rather than a box: ~40% fewer points
    than equal conditional tails for the same dropped mass).

    ``context`` and ``advice`` name the request and what to change in the message refusing a support
    larger than :data:`MAX_SUPPORT_POINTS` (raised before anything of that size is allocated).

    Cost: the windows take O(log n) vectorised scipy calls over U, K' ≤ K and C entries, the log-pmf
    tables O(K + C·Wx) entries, and the S kept points O(S) in a compiled loop plus an
    O(S log S) sort (S checked against :data:`MAX_SUPPORT_POINTS` before allocation).  Memory O(S).
    """
    log_tail = math.log(tail_mass)
    with np.errstate(divide="ignore", over="ignore"):
        # Level u (degenerate when outer_trials == 0).
        if outer_trials > 0:
            lo, hi, q0, q1 = _tilted_windows(np.array([outer_trials]), outer_prob, tail_mass)
            u = np.arange(lo[0], hi[0] + 1, dtype=np.int64)
            log_pu = binomial_logpmf(u, outer_trials, outer_prob)
            ends = np.array([0, outer_trials], dtype=np.int64)
            end_a, end_b = log_tilt(ends)  # E[f | u] = A + B N1 π1/2 at u = 0 and u = N0 (affine in u)
            log_t = np.logaddexp(end_a, end_b + np.log(inner_trials(ends) * (inner_prob / 2.0)))
            dropped = float(np.sum(np.exp(log_t + np.log(np.concatenate([q0, q1])))))
        else:
            u = np.zeros(1, dtype=np.int64)
            log_pu = np.zeros(1)
            dropped = 0.0
        log_a, log_b = (np.broadcast_to(np.asarray(v, dtype=np.float64), u.shape) for v in log_tilt(u))
        n1 = np.asarray(inner_trials(u), dtype=np.int64)

        # Level c | u: tilt A + B c/2 (endpoints A and A + B N1/2), P(u) = p(u) (A + B N1 π1/2).
        log_p_u = log_pu + np.logaddexp(log_a, log_b + np.log(n1 * (inner_prob / 2.0)))
        c_tail = np.minimum(np.exp(log_tail - log_p_u - math.log(u.size)), 1.0)
        c_lo, c_hi, qc0, qc1 = _tilted_windows(n1, inner_prob, c_tail)
        log_t1 = np.logaddexp(log_a, log_b + np.log(n1 / 2.0))
        dropped += float(np.sum(np.exp(log_pu + log_a + np.log(qc0)) + np.exp(log_pu + log_t1 + np.log(qc1))))
        c_width = c_hi - c_lo + 1
        pairs = int(c_width.sum())
        if pairs > MAX_SUPPORT_POINTS // 8:  # checked before the per-pair arrays are built
            need = f"{pairs:,} cells (u, c), each a window of x values, i.e. far more support points"
            raise ValueError(_refusal(context, need, tail_mass, advice))

        # Pairs (u, c): base p(u, c), P(u, c) = p(u, c)(A + B c/2).
        pair_u = np.repeat(np.arange(u.size), c_width)
        pair_c = c_lo[pair_u] + np.arange(pairs) - np.repeat(np.cumsum(c_width) - c_width, c_width)
        log_w = log_pu[pair_u] + binomial_logpmf(pair_c, n1[pair_u], inner_prob)
        pa, pb, log_c = log_a[pair_u], log_b[pair_u], np.log(pair_c.astype(np.float64))
        log_p_uc = log_w + np.logaddexp(pa, pb + log_c - math.log(2.0))

        # Level x | (u, c): budget tail/(K P(u, c)) rounded down to tail·2^j; windows per distinct (c, j).
        j = np.floor(-(log_p_uc + math.log(pairs)) / math.log(2.0))  # +inf where P(u, c) = 0
        j = np.minimum(j, math.floor(-log_tail / math.log(2.0))).astype(np.int64)  # budget <= 1
        j_min = int(j.min())
        spread = int(j.max()) - j_min + 1
        rows, row_of_pair = np.unique(pair_c * spread + (j - j_min), return_inverse=True)
        row_c = rows // spread
        r_lo, r_hi, qx0, qx1 = _tilted_windows(row_c, 0.5, np.exp(log_tail + (rows % spread + j_min) * math.log(2.0)))
        log_t1 = np.logaddexp(pa, pb + log_c)
        dropped += float(
            np.sum(
                np.exp(log_w + pa + np.log(qx0[row_of_pair])) + np.exp(log_w + log_t1 + np.log(qx1[row_of_pair]))
            )
        )
        x_lo, x_hi = r_lo[row_of_pair], r_hi[row_of_pair]
        x_width = x_hi - x_lo + 1
        total = int(x_width.sum())
        if total > MAX_SUPPORT_POINTS:
            raise ValueError(_refusal(context, f"{total:,} support points", tail_mass, advice))

        # Table of log Bin(c, 1/2)(x) per distinct c, over the union of its rows' windows (rows sorted by c).
        cs, first = np.unique(row_c, return_index=True)
        tab_lo = np.minimum.reduceat(r_lo, first)
        tab_width = np.maximum.reduceat(r_hi, first) - tab_lo + 1
        tab_start = np.cumsum(tab_width) - tab_width
        tab_x = np.repeat(tab_lo - tab_start, tab_width) + np.arange(int(tab_width.sum()))
        log_px = binomial_logpmf(tab_x, np.repeat(cs, tab_width), 0.5)
        slot = np.searchsorted(cs, pair_c)

        ratio = np.exp(log_a - log_b)  # A/B (0 when A = 0, inf when B = 0)
    losses = np.empty(total)
    masses = np.empty(total)
    fill_tilted_points(
        pair_u, pair_c, log_w, np.cumsum(x_width) - x_width, x_lo, x_hi, tab_start[slot] - tab_lo[slot],
        log_px, log_a, log_b, ratio, losses, masses,
    )
    # Nearly sorted input makes the stable sort inside LossDistribution cheap; the infinite losses
    # (Q = 0) end up last.
    order = _nearly_sorting_permutation(losses)
    losses, masses = losses[order], masses[order]
    cut = int(np.searchsorted(losses, np.inf))
    # Masses below the smallest normal double may have been flushed to 0: book that much per point.
    truncated = min(dropped + total * np.finfo(np.float64).tiny, 1.0)
    # Rounding of the log-space masses (relative ~1e-13 at worst) can push a sure atom a hair above 1.
    return _Support(losses[:cut], masses[:cut], min(float(masses[cut:].sum()), 1.0), truncated)


def _nearly_sorting_permutation(values: NDArray[np.float64]) -> NDArray[np.int64]:
    """A permutation sorting ``values`` except among values equal in all but their last ~log2(N) bits.

    ``np.sort`` of 64-bit integers is vectorised (several times faster than ``np.argsort``): map each
    double to an order-preserving integer, replace its lowest ``b`` bits by its index, sort, and read the
    indices back.  Ties of the truncated keys come out in index order, which leaves only local
    inversions between nearly equal values (relative gap below 2^(b-52)); no NaNs allowed.  O(N log N).
    """
    bits = values.view(np.int64)
    keys = bits ^ ((bits >> 63) & np.int64(0x7FFFFFFFFFFFFFFF))  # flips the magnitude bits of negatives
    b = max(int(values.size - 1).bit_length(), 1)
    keys = ((keys >> b) << b) | np.arange(values.size, dtype=np.int64)
    keys.sort()
    return keys & np.int64((1 << b) - 1)


def _refusal(context: str, need: str, tail_mass: float, advice: str) -> str:
    """Message refusing an oversized support: what was asked, what it needs, what to change."""
    return (
        f"{context} would need {need} at tail_mass={tail_mass:g}, more than the limit of "
        f"{MAX_SUPPORT_POINTS:,} support points; use {advice}"
    )
