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
    The real shuffled mechanism seen through its output histogram, for two dataset pairs (``k ≥ 3``):
    ``X = (1, 3, .., 3)`` vs ``X' = (2, 3, .., 3)`` (the others hold a third value) and
    ``X = (1, 1, .., 1)`` vs ``X' = (2, 1, .., 1)`` (the victim leaves the value everyone else holds;
    far worse at large ``ε0``: ``δ(5.775) ≈ 1.4e-3`` against ``9.9e-7`` at ``k = 3, ε0 = 6, n = 1000``).
    Exact for those pairs, hence only a *lower* bound on the mechanism's worst case: the family's
    members are both pairs and the accountant reports the worse.

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

import numpy as np
from numpy.typing import NDArray

from .._kernels import bin_points, fill_tilted_points, num_threads, stream_tilted_points
from .._validation import MAX_COUNT, check_choice, check_int, check_positive_finite, check_probability, check_size
from ..pld import LossDistribution, PrivacyLossPair
from ._binomial import binomial_cdf, binomial_logpmf, binomial_sf, binomial_windows
from ._lattice import lattice_distributions
from .base import DEFAULT_TAIL_MASS, PairFamily, ShuffleMechanism

__all__ = ["EXACT_SUPPORT_LIMIT", "MAX_PAIRS", "MAX_SUPPORT_POINTS", "MERGE_TOLERANCE", "STREAM_GRID_BINS", "ShuffledKRR"]

#: Largest truncated support kept exactly (a sorted array of losses); larger ones are streamed onto a
#: loss lattice (strict lower and upper pairs, never stored point by point).
EXACT_SUPPORT_LIMIT = 2**18
#: Lattice cells across the loss range of a streamed pair (relative ε error ~1e-8, second order).
STREAM_GRID_BINS = 2**16
#: Relative spread of the tilt ratio within a block of the outer coordinate merged when streaming
#: (``_merge_outer``): fewer points by the block size, at a relative loss spread of about this much
#: (weak n=1e4, 10 rounds: ε bounds move by ~3e-6 relative, the accountant's own gap is ~5e-4).
MERGE_TOLERANCE = 1e-2
#: Largest support streamed; larger requests are refused up front (~10-20 ns per point: ~1 h at the limit).
MAX_SUPPORT_POINTS = 200_000_000_000
#: Requests whose :meth:`ShuffledKRR.support_estimate` exceeds this are refused before any work (the
#: estimate over-counts by about 2; the exact count is checked against MAX_SUPPORT_POINTS later).
_ESTIMATE_LIMIT = 4 * MAX_SUPPORT_POINTS
#: Pairs ``(u, c)`` laid out at once when the outer coordinate is merged (``_merge_outer``) chunk by chunk.
_CHUNK_PAIRS = 2_000_000
#: Largest number of cells ``(u, c)`` (each a window of x values) held at once when the outer coordinate
#: cannot be merged; the per-cell arrays take ~100 bytes each.
MAX_PAIRS = 20_000_000

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
    "histogram": "histogram-only analyst on the dataset pairs (1,3..3) vs (2,3..3) and (1,1..1) vs (2,1..1): "
    "exact for those pairs, i.e. a LOWER bound on the worst case, not a guarantee",
}

_CAVEATS = {
    "weak": (),
    "strong": (),
    "khh21": (
        "adversary='khh21' reproduces the pair of KHH21's figure code (the strong-adversary pair without "
        "the atom of mass gamma at loss 0); it is a valid upper bound but looser than adversary='strong'.",
    ),
    "histogram": (
        "adversary='histogram' is exact only for the dataset pairs (1,3,..,3) vs (2,3,..,3) and (1,1,..,1) vs "
        "(2,1,..,1) seen through the output histogram (the worse of the two is reported): it is a LOWER bound "
        "on the mechanism's worst-case privacy loss, not a guarantee.",
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
    Validity range: every ``2 ≤ n ≤ 2^53``, ``k ≥ 2``, ``γ/k ≥ 1e-100`` (``ε0 ≲ 230``), as long as the
    truncated support has at most :data:`MAX_SUPPORT_POINTS` points (requests whose
    :meth:`support_estimate` is far above are refused at construction, the exact count is checked
    before the per-point work).  Support sizes ``S`` at the default tail mass (``g = γ/k``; the constants
    grow like ``log(1/tail_mass)^{d/2}`` in ``d`` truncated dimensions):

    * ``"strong"``, ``"khh21"``: ``S ≈ 270 n g sqrt(1-2g)`` -- ``O(n)``; 1.5e4 points at
      ``n=1000, k=4, γ=0.25``, 1.5e5 at ``n=1e4``, 1.5e7 at ``n=1e6``;
    * ``"weak"``: ``S ≈ 3300 (nγ)^{3/2} sqrt((1-γ)(1-2/k)) / k`` -- ``O(n^{3/2})``; 2.0e6 points at
      ``n=1000, k=4, γ=0.25``, 6.5e7 at ``n=1e4``;
    * ``"histogram"``: ``S ≈ 3300 (ng)^{3/2} sqrt((k-1)(1-(k-1)g)(1-2/(k-1)))`` -- ``O(n^{3/2})``;
      1.5e6 points at ``n=1000, k=4, γ=0.25`` (plus the ``O(n)`` common-value pair).

    Supports of at most :data:`EXACT_SUPPORT_LIMIT` points are exact: ``O(S log S)`` time (a sort),
    ``O(S)`` memory.  Larger ones are streamed (never stored) onto a loss lattice of
    :data:`STREAM_GRID_BINS` cells, giving a strict lower and a strict upper pair (the family then has
    ``lower != upper``); for ``"weak"``/``"histogram"`` the outer coordinate is first merged over blocks
    of nearly equal tilt (:data:`MERGE_TOLERANCE`), which divides the points by the block size
    (~``MERGE_TOLERANCE · nγ``).  Measured on a loaded 2-core machine (``k=4, ε0=2``, whole accountant
    query, δ=1e-6): strong ``n=1e7`` 64 rounds 6 s; weak ``n=1e5`` 10 rounds 5 s; weak ``n=1e6``
    10 rounds 29 s at 0.5 GiB peak.

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
        object.__setattr__(self, "num_users", check_int("num_users", self.num_users, minimum=2, maximum=MAX_COUNT))
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
        self._check_size(DEFAULT_TAIL_MASS)

    def support_estimate(self, *, tail_mass: float = DEFAULT_TAIL_MASS) -> float:
        """Rough size of the truncated support (points), from the box of the coordinate windows; O(1).

        Each truncated coordinate ``Bin(N, π)`` spans about ``2 sqrt(2 log(1/tail_mass)) sqrt(Nπ(1-π)) + 1``
        values at its typical ``N``; the product over the coordinates over-estimates the kept points (an
        ellipsoid in that box) by a factor of about 2.  Used to refuse absurd requests before any work.
        """
        tail = check_probability("tail_mass", tail_mass)
        n, k = float(self.num_users), self.domain_size
        gamma = self.blanket_probability
        g = gamma / k
        z = 2.0 * math.sqrt(2.0 * math.log(1.0 / tail))

        def width(trials: float, prob: float) -> float:
            return z * math.sqrt(max(trials * prob * (1.0 - prob), 0.0)) + 1.0

        if self.adversary in ("strong", "khh21"):
            return width(n, 2 * g) * width(2 * n * g, 0.5)
        if self.adversary == "weak":
            return width(n, gamma) * width(n * gamma, 2.0 / k) * width(2 * n * gamma / k, 0.5)
        other = (k - 1) * g
        return width(n, other) * (width(n * other, 2.0 / (k - 1)) * width(2 * n * g, 0.5) + width(n * other, 1.0 / (k - 1)))

    def _check_size(self, tail_mass: float) -> None:
        """Refuse (ValueError) a request whose :meth:`support_estimate` is far above :data:`MAX_SUPPORT_POINTS`."""
        request = (
            f"ShuffledKRR(num_users={self.num_users}, domain_size={self.domain_size}, "
            f"gamma={self.blanket_probability:.6g}, adversary={self.adversary!r}) at tail_mass={tail_mass:g}"
        )
        advice = "fewer users (num_users), a larger local_epsilon, or a larger tail_mass"
        if self.adversary == "weak":
            advice += ", or adversary='strong' (O(n) points, an upper bound on 'weak')"
        check_size(self.support_estimate(tail_mass=tail_mass), _ESTIMATE_LIMIT, what="support points", request=request, advice=advice)

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
        """The neighbouring pair of one round (symmetric, ``backward=None``; the histogram's common-value pair is not).

        Parameters
        ----------
        tail_mass : float
            Probability mass of ``P`` that truncation may drop per coordinate (2 coordinates for
            ``"strong"``/``"khh21"``, 3 for ``"weak"``/``"histogram"``); the dropped mass is computed
            exactly and booked as ``truncated_mass``.

        Returns
        -------
        PairFamily
            ``PairFamily.exact(pair)`` for an exact pair, ``PairFamily((upper,), (lower,))`` for streamed
            ones; for ``"histogram"`` two members (the two dataset pairs) with ``is_guarantee=False``.

        Raises
        ------
        ValueError
            If the truncated support would exceed :data:`MAX_SUPPORT_POINTS` points (checked before
            anything large is allocated).

        Notes
        -----
        Exact up to :data:`EXACT_SUPPORT_LIMIT` points: time ``O(S log S)``, memory ``O(S)``.  Above,
        streamed: time ``O(S / block)``, memory ``O(min(K, 2e6) + bins·threads)`` for ``K`` cells
        ``(u, c)``; the family then holds the streamed lower and upper pairs (class docstring).
        """
        tail = check_probability("tail_mass", tail_mass)
        self._check_size(tail)
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
            lower, upper = _tilted_trinomial_support(
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
                exact = lower is upper
                upper = _with_zero_atom(upper, weight, gamma)
                lower = upper if exact else _with_zero_atom(lower, weight, gamma)
                label = "kRR strong adversary (core §2b)"
            else:
                label = "kRR KHH21 figure pair (strong without atom)"
        elif self.adversary == "weak":
            # b ~ Bin(n-1, γ); (n1, n2) | b ~ Mult(b+1; 1/k, 1/k, 1-2/k); tilt γ + (1-γ) k n1 / (b+1).
            lower, upper = _tilted_trinomial_support(
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

            lower, upper = _tilted_trinomial_support(
                outer_trials=n,
                outer_prob=(k - 1) * g,
                inner_trials=lambda v: v,
                inner_prob=2.0 / (k - 1),
                log_tilt=log_tilt,
                tail_mass=tail,
                context=context,
                advice=advice,
            )
            label = "kRR histogram view of (1,3..3) vs (2,3..3) (core §2d)"

        label += f": n={n}, k={k}, gamma={gamma:.6g}"
        if lower is upper:
            uppers = lowers = [PrivacyLossPair(upper, None, label=label)]
        else:
            uppers = [PrivacyLossPair(upper, None, label=label + " (streamed upper bound)")]
            lowers = [PrivacyLossPair(lower, None, label=label + " (streamed lower bound)")]
        if self.adversary == "histogram":
            common_lower, common_upper = _common_value_pairs(n, k, self.epsilon0, (k - 1) * g, tail, context, advice)
            uppers, lowers = [*uppers, common_upper], [*lowers, common_lower]
        guarantee = self.adversary != "histogram"
        if all(lo is up for lo, up in zip(lowers, uppers)):
            return PairFamily.exact(*uppers, is_guarantee=guarantee, caveats=_CAVEATS[self.adversary])
        return PairFamily(tuple(uppers), tuple(lowers), guarantee, _CAVEATS[self.adversary])


def _common_value_pairs(
    n: int, k: int, eps0: float, other_prob: float, tail_mass: float, context: str, advice: str,
    max_exact_support: int | None = None, bins: int | None = None,
) -> tuple[PrivacyLossPair, PrivacyLossPair]:
    r"""``(lower, upper)`` histogram pairs of ``X = (1, 1, .., 1)`` vs ``X' = (2, 1, .., 1)`` (k ≥ 3).

    The victim leaves the value all other users hold.  Under ``X`` the histogram is ``Mult(n; π)`` with
    ``π = (1-γ+g, g, .., g)``; dividing ``X'``'s law by it (only the victim's report differs) gives
    ``Q = P·f`` with ``f = (e^{-ε0} h_1 + e^{ε0} h_2 + (n - h_1 - h_2)) / n``.  Sufficient statistic
    ``v = n - h_1 ~ Bin(n, (k-1)g)``, ``h_2 | v ~ Bin(v, 1/(k-1))``; the pair is not symmetric, so both
    directions are built: ``P/Q`` (loss ``-log f`` under P) and ``Q/P`` (loss ``log f`` under Q).

    Windows as in :func:`_tilted_windows` (``v`` with ``tail_mass``, ``h_2 | v`` with ``tail_mass``):
    the dropped P- and Q-masses are computed exactly (``f`` is affine in ``v`` after averaging ``h_2``,
    and in ``h_2`` given ``v``).  Exact pair (the same object twice) up to ``max_exact_support`` points
    (default :data:`EXACT_SUPPORT_LIMIT`), otherwise streamed onto ``bins`` (default
    :data:`STREAM_GRID_BINS`) lattice cells per direction (:mod:`._lattice`) in row chunks.
    Time O(S), memory O(min(S, 2^22) + bins) for S points.
    """
    max_exact_support = EXACT_SUPPORT_LIMIT if max_exact_support is None else max_exact_support
    bins = STREAM_GRID_BINS if bins is None else bins
    e_minus, e_plus = math.exp(-eps0), math.exp(eps0)
    log_n = math.log(n)
    lo, hi, q0, q1 = _tilted_windows(np.array([n]), other_prob, tail_mass)
    v = np.arange(lo[0], hi[0] + 1, dtype=np.int64)
    log_pv = binomial_logpmf(v, n, other_prob)
    # E[f | v] = (e^{-ε0}(n - v) + v (1 + (e^{ε0} - 1)/(k-1))) / n: e^{-ε0} at v = 0, 1 + (e^{ε0}-1)/(k-1) at v = n.
    drop_p = float(q0[0] + q1[0])
    drop_q = float(e_minus * q0[0] + (1.0 + math.expm1(eps0) / (k - 1)) * q1[0])
    h_lo, h_hi, r0, r1 = _tilted_windows(v, 1.0 / (k - 1), tail_mass)
    pv = np.exp(log_pv)
    base = (e_minus * (n - v) + v) / n  # f at h_2 = 0; f at h_2 = v is base + (e^{ε0} - 1) v / n
    drop_p += float(np.sum(pv * (r0 + r1)))
    drop_q += float(np.sum(pv * (base * r0 + (base + math.expm1(eps0) * v / n) * r1)))
    widths = h_hi - h_lo + 1
    total = int(widths.sum())
    if total > MAX_SUPPORT_POINTS:
        raise ValueError(_refusal(context + " (common-value dataset pair)", f"{total:,} support points", tail_mass, advice))

    def rows(first: int, stop: int) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.float64]]:
        """``(log P, log f, …)`` of the points of rows ``first .. stop-1``."""
        w = widths[first:stop]
        row = np.repeat(np.arange(first, stop), w)
        h2 = h_lo[row] + np.arange(int(w.sum())) - np.repeat(np.cumsum(w) - w, w)
        log_p = log_pv[row] + binomial_logpmf(h2, v[row], 1.0 / (k - 1))
        log_f = np.log(e_minus * (n - v[row]) + e_plus * h2 + (v[row] - h2)) - log_n
        return log_p, log_f

    tiny = total * np.finfo(np.float64).tiny  # masses flushed to 0 by exp
    trunc_p, trunc_q = min(drop_p + tiny, 1.0), min(drop_q + tiny, 1.0)
    label = f"kRR histogram view of (1,1..1) vs (2,1..1): n={n}, k={k}, eps0={eps0:.6g}"
    if total <= max_exact_support:
        log_p, log_f = rows(0, v.size)
        pair = PrivacyLossPair(
            LossDistribution(-log_f, np.exp(log_p), 0.0, trunc_p),
            LossDistribution(log_f, np.exp(log_p + log_f), 0.0, trunc_q),
            label=label,
        )
        return pair, pair
    # log f increases in h_2 on every row: its range is spanned by the window ends.
    ends = np.log(np.concatenate([e_minus * (n - v) + e_plus * h_lo + (v - h_lo), e_minus * (n - v) + e_plus * h_hi + (v - h_hi)])) - log_n
    smax = float(np.max(np.abs(ends)))
    spacing = 2.0 * smax / bins if smax > 0 else 1e-9
    j0 = -int(math.ceil(smax / spacing)) - 1
    size = -2 * j0 + 1
    cells = [np.zeros(size) for _ in range(4)]  # mass and tilt of P/Q, then of Q/P
    bad = 0
    starts = np.concatenate([[0], np.cumsum(widths)])
    first = 0
    while first < v.size:  # rows in chunks of about 2^22 points
        stop = int(np.searchsorted(starts, starts[first] + 2**22, side="right"))
        stop = min(max(stop - 1, first + 1), v.size)
        log_p, log_f = rows(first, stop)
        bad += bin_points(-log_f, np.exp(log_p), spacing, j0, cells[0], cells[1])
        bad += bin_points(log_f, np.exp(log_p + log_f), spacing, j0, cells[2], cells[3])
        first = stop
    if bad:  # cannot happen: the lattice covers [-smax, smax] with a cell of margin on both sides
        raise RuntimeError(f"internal error: {bad} losses fell outside the streaming lattice")
    fwd_lower, fwd_upper = lattice_distributions(cells[0], cells[1], spacing, j0, 0.0, trunc_p)
    bwd_lower, bwd_upper = lattice_distributions(cells[2], cells[3], spacing, j0, 0.0, trunc_q)
    return (
        PrivacyLossPair(fwd_lower, bwd_lower, label=label + " (streamed lower bound)"),
        PrivacyLossPair(fwd_upper, bwd_upper, label=label + " (streamed upper bound)"),
    )


def _with_zero_atom(dist: LossDistribution, weight: float, atom: float) -> LossDistribution:
    """``weight · dist`` plus an atom of mass ``atom`` at loss 0 (the strong adversary's γ atom)."""
    return LossDistribution(
        np.append(dist.losses, 0.0),
        np.append(weight * dist.masses, atom),
        infinity_mass=weight * dist.infinity_mass,
        truncated_mass=weight * dist.truncated_mass,
    )


# ---------------------------------------------------------------------------------------------
# the shared builder
# ---------------------------------------------------------------------------------------------


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
    max_exact_support: int | None = None,
    bins: int | None = None,
) -> tuple[LossDistribution, LossDistribution]:
    """``(lower, upper)`` loss distributions of ``P/Q`` for ``P = base · f_u(x)``, ``Q = base · f_u(c - x)``
    (module docstring): the same object, the exact truncated PLD, when the truncated support has at most
    ``max_exact_support`` points (default :data:`EXACT_SUPPORT_LIMIT`); otherwise the support streamed
    onto a lattice of ``bins`` cells (default :data:`STREAM_GRID_BINS`) across
    its loss range (:mod:`._lattice`: a strict lower and a strict upper bound, errors second order in the
    cell width).

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
    larger than :data:`MAX_SUPPORT_POINTS` (raised before the per-point work starts, and before the K
    per-pair arrays are built when K alone exceeds :data:`MAX_PAIRS`).

    Cost: the windows take O(log n) vectorised scipy calls over U, K' ≤ K and C entries, the log-pmf
    tables O(K + C·Wx) entries.  Exact (S ≤ ``max_exact_support``): the S kept points in O(S) in a
    compiled loop plus an O(S log S) sort, memory O(S).  Streamed: O(S) time (~10-20 ns per point,
    parallel over ranges of pairs), memory O(K + bins·threads), S never stored.
    """
    max_exact_support = EXACT_SUPPORT_LIMIT if max_exact_support is None else max_exact_support
    bins = STREAM_GRID_BINS if bins is None else bins
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
        ratio = np.exp(log_a - log_b)  # A/B (0 when A = 0, inf when B = 0)
        blocks = None  # merge blocks of u (streaming only), when the ratios allow and blocks hold >= 4 values
        if ratio.size > 1 and np.all(np.isfinite(ratio) & (ratio > 0)):
            blocks = np.floor(np.log(ratio) / math.log1p(MERGE_TOLERANCE)).astype(np.int64)
            if 4 * (int(blocks.max() - blocks.min()) + 1) > ratio.size:
                blocks = None
        if pairs > MAX_PAIRS and blocks is None:  # checked before the per-pair arrays are built
            need = f"{pairs:,} cells (u, c), each a window of x values"
            raise ValueError(_refusal(context, need, tail_mass, advice, f"{MAX_PAIRS:,} cells"))

    def layout(first: int, stop: int) -> tuple:
        """Pairs ``(u, c)`` of outer indices ``first .. stop-1``: ``(pair_u, pair_c, log_w, x_lo, x_hi, dropped)``."""
        with np.errstate(divide="ignore", over="ignore"):
            width = c_width[first:stop]
            count = int(width.sum())
            # Pairs (u, c): base p(u, c), P(u, c) = p(u, c)(A + B c/2).
            pair_u = np.repeat(np.arange(first, stop), width)
            pair_c = c_lo[pair_u] + np.arange(count) - np.repeat(np.cumsum(width) - width, width)
            log_w = log_pu[pair_u] + binomial_logpmf(pair_c, n1[pair_u], inner_prob)
            pa, pb, log_c = log_a[pair_u], log_b[pair_u], np.log(pair_c.astype(np.float64))
            log_p_uc = log_w + np.logaddexp(pa, pb + log_c - math.log(2.0))

            # Level x | (u, c): budget tail/(K P(u, c)) (K = all pairs) rounded down to tail·2^j; windows per distinct (c, j).
            j = np.floor(-(log_p_uc + math.log(pairs)) / math.log(2.0))  # +inf where P(u, c) = 0
            j = np.minimum(j, math.floor(-log_tail / math.log(2.0))).astype(np.int64)  # budget <= 1
            j_min = int(j.min())
            spread = int(j.max()) - j_min + 1
            rows, row_of_pair = np.unique(pair_c * spread + (j - j_min), return_inverse=True)
            row_c = rows // spread
            r_lo, r_hi, qx0, qx1 = _tilted_windows(row_c, 0.5, np.exp(log_tail + (rows % spread + j_min) * math.log(2.0)))
            log_t1 = np.logaddexp(pa, pb + log_c)
            lost = float(
                np.sum(np.exp(log_w + pa + np.log(qx0[row_of_pair])) + np.exp(log_w + log_t1 + np.log(qx1[row_of_pair])))
            )
        return pair_u, pair_c, log_w, r_lo[row_of_pair], r_hi[row_of_pair], lost

    if blocks is not None and pairs > _CHUNK_PAIRS:
        # Too many pairs to hold at once: lay out and merge chunks of u, combining the merged outcomes of
        # a block that spans chunks; only the merged outcomes are kept.
        ends = np.searchsorted(np.cumsum(c_width), np.arange(1, -(-pairs // _CHUNK_PAIRS) + 1) * _CHUNK_PAIRS, side="left")
        bounds = [0, *sorted({min(int(e) + 1, u.size) for e in ends})]
        parts, total = [], 0
        for first, stop in zip(bounds[:-1], bounds[1:]):
            pair_u, pair_c, log_w, x_lo, x_hi, lost = layout(first, stop)
            dropped += lost
            total += int((x_hi - x_lo + 1).sum())
            if total > MAX_SUPPORT_POINTS:
                raise ValueError(_refusal(context, f"more than {total:,} support points", tail_mass, advice))
            parts.append(_merge_outer(pair_u, pair_c, log_w, x_lo, x_hi, log_a, log_b, ratio, blocks))
            parts = [_group(*(np.concatenate(column) for column in zip(*parts)))]  # blocks spanning chunks
        merged = _merged_kernel_args(*parts[0])
        return _streamed(merged, min(dropped + 2.0 * total * np.finfo(np.float64).tiny, 1.0), bins)

    pair_u, pair_c, log_w, x_lo, x_hi, lost = layout(0, u.size)
    dropped += lost
    x_width = x_hi - x_lo + 1
    total = int(x_width.sum())
    if total > MAX_SUPPORT_POINTS:
        raise ValueError(_refusal(context, f"{total:,} support points", tail_mass, advice))
    # Masses below 2·(smallest normal double) may have been flushed to 0 (fill_tilted_points): book that much per point.
    truncated = min(dropped + 2.0 * total * np.finfo(np.float64).tiny, 1.0)
    if total > max_exact_support and blocks is not None:
        merged = _merged_kernel_args(*_merge_outer(pair_u, pair_c, log_w, x_lo, x_hi, log_a, log_b, ratio, blocks))
        return _streamed(merged, truncated, bins)
    # log Bin(c, 1/2) at the anchor ceil(c/2) of every distinct c (every x window contains it); the
    # kernels walk outwards from it by exact ratios.
    log_wa = log_w + _anchor_logpmf(pair_c, x_lo, x_hi)
    if total > max_exact_support:
        rp = ratio[pair_u]
        return _streamed((pair_c, log_wa, x_lo, x_hi, log_a[pair_u], log_b[pair_u], rp, rp, rp), truncated, bins)
    losses = np.empty(total)
    masses = np.empty(total)
    fill_tilted_points(pair_u, pair_c, log_wa, np.cumsum(x_width) - x_width, x_lo, x_hi, log_a, log_b, ratio, losses, masses)
    # Nearly sorted input makes the stable sort inside LossDistribution cheap; the infinite losses
    # (Q = 0) end up last.
    order = _nearly_sorting_permutation(losses)
    losses, masses = losses[order], masses[order]
    cut = int(np.searchsorted(losses, np.inf))
    # Rounding of the log-space masses (relative ~1e-13 at worst) can push a sure atom a hair above 1.
    exact = LossDistribution(losses[:cut], masses[:cut], min(float(masses[cut:].sum()), 1.0), truncated)
    return exact, exact


def _anchor_logpmf(pair_c: NDArray[np.int64], x_lo: NDArray[np.int64], x_hi: NDArray[np.int64]) -> NDArray[np.float64]:
    """``log Bin(c, 1/2)(ceil(c/2))`` per pair: the anchor from which the kernels walk by exact ratios.

    Every x window contains its anchor (windows are central); one Boost evaluation per distinct ``c``.
    """
    cs, slot = np.unique(pair_c, return_inverse=True)
    anchor = (pair_c + 1) // 2
    if np.any((anchor < x_lo) | (anchor > x_hi)):  # cannot happen: windows are central
        raise RuntimeError("internal error: an x window misses its anchor ceil(c/2)")
    return binomial_logpmf((cs + 1) // 2, cs, 0.5)[slot]


def _merge_outer(pair_u, pair_c, log_w, x_lo, x_hi, log_a, log_b, ratio, blocks) -> tuple:
    """Merge pairs ``(u, c)`` over blocks of ``u`` into outcomes ``(block, c)`` (one chunk of pairs).

    ``blocks[u]`` groups tilt ratios ``r = A/B`` that agree within a factor ``1 + MERGE_TOLERANCE``
    (``log_a``, ``log_b``, ``ratio``, ``blocks`` are indexed by ``u``).  The outcomes ``(u, c, x)``, ``u`` in
    a block, become one outcome ``(block, c, x)`` with ``P = Bin(c,1/2)(x)(α + βx)``,
    ``Q = Bin(c,1/2)(x)(α + β(c-x))``, ``α = Σ_u p(u,c) A(u)``, ``β = Σ_u p(u,c) B(u)`` (a
    post-processing: the analyst forgets ``u`` within its block), over the union of the members' x
    windows (points also counted as dropped are then counted twice: at most ``tail_mass`` more mass,
    which only raises the upper bound and is a real sub-measure for the lower).  Its loss and the
    members' lie between the losses at the block's extreme ratios ``r_lo, r_hi``
    (:func:`~pldshuffle._kernels.stream_tilted_points` uses them for the upper bound).  The loss varies
    by a relative ~``MERGE_TOLERANCE`` within a block, and the number of points drops by the block size.

    Returns ``(block, c, α, β, x_lo, x_hi, r_lo, r_hi)`` per merged outcome; chunks of the same block
    combine with :func:`_group`, and :func:`_merged_kernel_args` turns the result into kernel arguments.
    O(K log K) for K pairs.
    """
    r = ratio[pair_u]
    return _group(blocks[pair_u], pair_c, np.exp(log_w + log_a[pair_u]), np.exp(log_w + log_b[pair_u]), x_lo, x_hi, r, r)


def _merged_kernel_args(block, c, alpha, beta, x_lo, x_hi, r_lo, r_hi) -> tuple:
    """Kernel arguments ``(c, log_wa, x_lo, x_hi, log α, log β, α/β, r_lo, r_hi)`` of merged outcomes."""
    with np.errstate(divide="ignore"):
        log_alpha, log_beta = np.log(alpha), np.log(beta)
    return c, _anchor_logpmf(c, x_lo, x_hi), x_lo, x_hi, log_alpha, log_beta, alpha / beta, r_lo, r_hi


def _group(block, c, alpha, beta, x_lo, x_hi, r_lo, r_hi) -> tuple:
    """Combine entries with equal ``(block, c)``: sum α and β, union the x windows and the ratio intervals."""
    order = np.lexsort((c, block))
    block, c = block[order], c[order]
    first = np.flatnonzero(np.concatenate([[True], (block[1:] != block[:-1]) | (c[1:] != c[:-1])]))
    return (
        block[first], c[first],
        np.add.reduceat(alpha[order], first), np.add.reduceat(beta[order], first),
        np.minimum.reduceat(x_lo[order], first), np.maximum.reduceat(x_hi[order], first),
        np.minimum.reduceat(r_lo[order], first), np.maximum.reduceat(r_hi[order], first),
    )


def _streamed(kernel_args: tuple, truncated: float, bins: int) -> tuple[LossDistribution, LossDistribution]:
    """Stream the kept points onto a lattice of ``bins`` cells over their loss range; ``(lower, upper)``.

    ``kernel_args`` are those of :func:`~pldshuffle._kernels.stream_tilted_points` (pairs with their own
    tilt and ratio interval).  The loss range comes from the window ends (the loss
    ``log((r + x)/(r + c - x))`` increases in ``x`` and is monotone in ``r``), at ``r_lo``, ``r`` and
    ``r_hi``, widened by one cell on both sides.  O(S) time, O(K + bins·threads) memory.
    """
    pair_c, _, x_lo, x_hi, _, _, ratio, r_lo, r_hi = kernel_args
    ends = []
    for r in (r_lo, ratio, r_hi):
        for x, step in ((x_lo, 1), (x_hi, -1)):
            with np.errstate(divide="ignore", invalid="ignore"):
                end = np.where(np.isinf(r), 0.0, np.log((r + x) / (r + pair_c - x)))
                # A point with P = 0 (r + x = 0) or Q = 0 (r + y = 0) has no finite loss; the next one
                # inwards does (both window ends are such points only if the window is a single point).
                inner = np.log((r + x + step) / (r + pair_c - x - step))
            end = np.where(np.isfinite(end), end, inner)
            ends.append(end[np.isfinite(end)])
    finite = np.concatenate(ends)
    if finite.size == 0:  # every point at loss +inf or of mass 0: nothing to stream but the atom
        smin = smax = 0.0
    else:
        smin, smax = float(finite.min()), float(finite.max())
    width = smax - smin
    spacing = width / bins if width > 0 else max(abs(smax), 1.0) * 1e-9
    j0 = int(math.floor(smin / spacing)) - 1
    size = int(math.floor(smax / spacing)) - j0 + 2
    chunks = max(1, min(num_threads(), pair_c.size))
    low_mass, low_tilt, up_mass, up_tilt, infinity, misplaced = stream_tilted_points(*kernel_args, spacing, j0, size, chunks)
    if misplaced:  # cannot happen: the lattice covers [smin, smax] with a cell of margin on both sides
        raise RuntimeError(f"internal error: {misplaced} losses fell outside the streaming lattice")
    infinity = min(float(infinity), 1.0)
    lower, _ = lattice_distributions(low_mass, low_tilt, spacing, j0, infinity, truncated)
    _, upper = lattice_distributions(up_mass, up_tilt, spacing, j0, infinity, truncated)
    return lower, upper


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


def _refusal(context: str, need: str, tail_mass: float, advice: str, limit: str = f"{MAX_SUPPORT_POINTS:,} support points") -> str:
    """Message refusing an oversized support: what was asked, what it needs, what to change."""
    return f"{context} would need {need} at tail_mass={tail_mass:g}, more than the limit of {limit}; use {advice}"
