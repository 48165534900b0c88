"""Shuffled k-ary randomized response (kRR): exact privacy loss distributions (docs/mathematics.md, "k-ary randomized response").

Each of the ``n`` users holds a value in ``{1..k}``; with probability ``1 - γ`` it reports its value,
otherwise (the *blanket*, BBGN19 Alg. 1) a uniform value of ``{1..k}``.  The local privacy level is
``ε0 = log(1 + k(1-γ)/γ)``, i.e. ``γ = k / (e^{ε0} + k - 1)`` (BBGN19 Lemma 5.1).  The reports are
shuffled.  Neighbouring datasets differ in the value of one user (replace-one): 1 in ``X``, 2 in ``X'``.

The four adversaries of :class:`ShuffledKRR` (KHH21 §5, corrected as in docs/mathematics.md, "k-ary randomized response"):

``"strong"``
    Knows every other user's value and every randomisation bit, including the differing user's.
    With probability ``γ`` the differing user randomised and the two views coincide (loss 0);
    otherwise the adversary sees the counts ``(n1, n2)`` of values 1 and 2 among the outputs:
    ``P0 = (M1 + 1, M2)``, ``Q0 = (M1, M2 + 1)``, ``(M1, M2, ·) ~ Mult(n-1; g, g, 1-2g)``, ``g = γ/k``,
    loss ``log(n1/n2)``, ``δ_∞ = (1-γ)(1-g)^{n-1}``.
``"khh21"``
    The same 2-D pair without the atom (``P0`` vs ``Q0``), as in KHH21's figure code: a valid but
    looser bound (single round: ``δ_strong = (1-γ) δ_khh21``).
``"weak"`` (KHH21 Def. 9 / Thm 10 / App. A)
    Knows the other users' values and randomisation bits, not the differing user's bit.  Statistic
    ``(b, n1, n2)``: ``b ~ Bin(n-1, γ)`` randomising others, ``n1, n2`` the counts of values 1 and 2
    among the randomisers' outputs and the differing user's output; loss
    ``log(((1-γ)n1 + γ(b+1)/k) / ((1-γ)n2 + γ(b+1)/k))``, ``δ_∞ = 0``.
``"histogram"``
    The real shuffled mechanism seen through its output histogram, for two dataset pairs (``k ≥ 3``):
    ``X = (1, 3, .., 3)`` vs ``X' = (2, 3, .., 3)`` (the others hold a third value) and
    ``X = (1, 1, .., 1)`` vs ``X' = (2, 1, .., 1)`` (the victim leaves the value everyone else holds;
    far worse at large ``ε0``: ``δ(5.775) ≈ 1.4e-3`` against ``9.9e-7`` at ``k = 3, ε0 = 6, n = 1000``).
    Exact for those pairs, hence only a *lower* bound on the mechanism's worst case: the family's
    members are both pairs and the accountant reports the worse.

KHH21's eq. (5.1) (a 1-D marginal of the strong view) is deliberately not offered: it can fall below
the real mechanism (docs/mathematics.md, "Where the published kRR pairs are unsafe").

Representation.  All four pairs share one form, used by :func:`tilted_trinomial_support`: a base law
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
``P = Mult(n; 1-γ+g, g, g, (k-3)g)(h) · φ_P(h)/n`` with ``φ_P`` the numerator of the histogram view's loss.)

Truncation (docs/mathematics.md, "Truncation of the supports").  Every coordinate is cut to a window chosen with exact binomial tails;
the *P-mass* dropped (with the tilt) is computed exactly from binomial cdf/sf values and booked as
``truncated_mass`` (``+inf`` for upper bounds, deleted for lower bounds).  Each coordinate drops at most
``tail_mass`` of P; inner windows get budgets inversely proportional to the mass of their row, which
keeps the points above a level of the joint mass (:func:`tilted_trinomial_support`).

References
----------
KHH21  A. Koskela, M. Heikkilä, A. Honkela, "Tight accounting in the shuffle model of differential
       privacy", arXiv:2106.00477 (2021), §5, Def. 9, Thm 10 and App. A.
BBGN19 B. Balle, J. Bell, A. Gascón, K. Nissim, "The privacy blanket of the shuffle model",
       CRYPTO 2019, Alg. 1 and Lemma 5.1.
"""

from __future__ import annotations

import math
from dataclasses import KW_ONLY, dataclass

import numpy as np
from numpy.typing import NDArray

from .._krr_gamma import krr_local_epsilon, krr_log_excess, krr_log_gamma
from .._validation import check_choice, check_int, check_num_users, check_positive_finite, check_probability, show
from ..pld import PrivacyLossPair
from ._krr_support import (
    ESTIMATE_LIMIT,
    EXACT_SUPPORT_LIMIT,
    MAX_MERGE_SPREAD,
    MAX_MERGED_PAIRS,
    MAX_PAIRS,
    MAX_SUPPORT_POINTS,
    MERGE_TOLERANCE,
    STREAM_GRID_BINS,
    UNMERGED_STREAM_LIMIT,
    tilted_trinomial_support,
    with_zero_atom,
)
from ._krr_adversaries import _ADVERSARIES, _CAVEATS, _MEANING, Adversary
from ._krr_histogram import common_value_pairs
from ._krr_sizing import check_request_size, size_estimates, stream_seconds
from .base import DEFAULT_TAIL_MASS, PairFamily, ShuffleMechanism

__all__ = ["EXACT_SUPPORT_LIMIT", "MAX_PAIRS", "MAX_SUPPORT_POINTS", "MERGE_TOLERANCE", "STREAM_GRID_BINS", "ShuffledKRR"]

#: Smallest supported per-value blanket probability ``γ/k`` (``ε0`` up to about 230).
_MIN_G = 1e-100


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
        Whose view is analysed: ``"weak"`` (default), ``"strong"``, ``"khh21"`` (guarantees) or
        ``"histogram"`` (a lower bound, not a guarantee).  See the module docstring and
        docs/mathematics.md, "k-ary randomized response".  ``"weak"`` and ``"strong"`` give
        DP guarantees; ``"khh21"`` a looser guarantee matching KHH21's figures; ``"histogram"`` a lower
        bound (``k ≥ 3``) that is not a guarantee.

    Notes
    -----
    The strong adversary also sees the differing user's randomisation bit, which its ε0-LDP report
    hides: its ε is not capped by ``ε0`` (nor by ``rounds·ε0``) and exceeds it where ``ε0`` is small
    (``n=1000, k=4``, one round: ``ε0=0.5`` gives ``ε(1e-6)=0.339``, ``ε0=0.001`` gives ``0.120``; the weak
    adversary, a post-processing of the report, gives ``0.046`` and ``2.9e-5``).

    Validity range: every ``2 ≤ n ≤ 2^53``, ``k ≥ 2``, ``γ/k ≥ 1e-100`` (``ε0 ≲ 230``), as long as at
    most :data:`MAX_SUPPORT_POINTS` points are streamed (after merging) and, for ``"weak"`` and
    ``"histogram"``, at most ``MAX_MERGED_PAIRS`` (1e10) cells ``(u, c)`` are laid out (requests whose
    estimates are far above are refused at construction, the exact counts are checked before the
    per-cell and per-point work; :meth:`family_seconds` estimates the time, and the accountant warns
    above ~30 s).  Support sizes ``S`` at the default tail mass (``g = γ/k``; the constants grow like
    ``log(1/tail_mass)^{d/2}`` in ``d`` truncated dimensions):

    * ``"strong"``, ``"khh21"``: ``S ≈ 270 n g sqrt(1-2g)`` -- ``O(n)``; 1.5e4 points at
      ``n=1000, k=4, γ=0.25``, 1.5e5 at ``n=1e4``, 1.5e7 at ``n=1e6``;
    * ``"weak"``: ``S ≈ 3300 (nγ)^{3/2} sqrt((1-γ)(1-2/k)) / k`` -- ``O(n^{3/2})``; 2.0e6 points at
      ``n=1000, k=4, γ=0.25``, 6.5e7 at ``n=1e4``;
    * ``"histogram"``: ``S ≈ 3300 (ng)^{3/2} sqrt((k-1)(1-(k-1)g)(1-2/(k-1)))`` -- ``O(n^{3/2})``;
      1.5e6 points at ``n=1000, k=4, γ=0.25`` (plus the ``O(n)`` common-value pair).

    Supports of at most :data:`EXACT_SUPPORT_LIMIT` points are exact: ``O(S log S)`` time (a sort),
    ``O(S)`` memory.  Larger ones are streamed (never stored) onto a loss lattice of
    :data:`STREAM_GRID_BINS` cells, giving a strict lower and a strict upper pair (the family then has
    ``lower != upper``); for ``"weak"``/``"histogram"`` supports above ``UNMERGED_STREAM_LIMIT`` (2e8)
    points (or above ``5e5`` cells ``(u, c)``) first merge the outer coordinate over blocks of nearly equal
    tilt (``merge_blocks``: mass-weighted rms spread of the tilt ratio :data:`MERGE_TOLERANCE`, narrow where
    the outer coordinate's mass is), which divides the points by the block size (a few blocks across the
    outer window at ``n ≳ 1e5``); the cost is then the layout of the ~``330 nγ sqrt(2(1-γ)(1-2/k)/k)``
    cells ``(u, c)`` (``O(n)``, ~0.15 µs each) and the merged points.  Measured
    on a 2-core machine (``k=4, ε0=2``, whole accountant query, δ=1e-6): strong ``n=1e7`` 64 rounds
    2.0 s, ``n=1e8`` one round 13 s; weak ``n=1e5`` 10 rounds 2.2 s, ``n=1e6`` 10 rounds 7.2 s at
    0.29 GiB peak, ``n=2e6`` 10 rounds 12.8 s at 0.31 GiB (7.8e7 cells) -- with blocks of equal spread 1e-2;
    the finer blocks of ``merge_blocks`` stream ~1.9x the merged points (weak ``n=1e6``: 9.3e7), about
    1.3x the time (the one-round gap at ``n=1e5``: 1.1-2.4e-4 before, at most 1.6e-5 now).

    Examples
    --------
    >>> m = ShuffledKRR(1000, 4, gamma=0.25, adversary="strong")
    >>> round(m.epsilon0, 6)
    2.564949
    >>> fam = m.pair_family()
    >>> fam.is_guarantee
    True
    """

    switch = "adversary"  # the field that selects what is analysed (read by the privacy statements)

    num_users: int
    domain_size: int
    _: KW_ONLY
    gamma: float | None = None
    local_epsilon: float | None = None
    adversary: Adversary = "weak"

    def __post_init__(self) -> None:
        object.__setattr__(self, "num_users", check_num_users(self.num_users))
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
                + (f"gamma={show(self.gamma)}" if self.gamma is not None else f"local_epsilon={show(self.local_epsilon)}")
            )
        self._check_size(DEFAULT_TAIL_MASS)

    def support_estimate(self, *, tail_mass: float = DEFAULT_TAIL_MASS) -> float:
        """Rough size of the truncated support (points), from the box of the coordinate windows; O(1).

        Each truncated coordinate ``Bin(N, π)`` spans about ``2 sqrt(2 log(1/tail_mass)) sqrt(Nπ(1-π)) + 1``
        values at its typical ``N``; the product over the coordinates over-estimates the kept points (an
        ellipsoid in that box) by a factor of about 2.
        """
        return self._size_estimates(check_probability("tail_mass", tail_mass))[1]

    def _size_estimates(self, tail: float) -> tuple[float, float, float]:
        """``(cells, points, merged)`` of this request (:func:`~._krr_sizing.size_estimates`)."""
        return size_estimates(self.num_users, self.domain_size, self.blanket_probability, self.adversary, tail)

    def family_seconds(self, *, tail_mass: float = DEFAULT_TAIL_MASS) -> float:
        """Streaming the (merged) support: :func:`~._krr_sizing.stream_seconds` of its size estimates."""
        return stream_seconds(*self._size_estimates(check_probability("tail_mass", tail_mass)))

    def _check_size(self, tail_mass: float) -> None:
        """Refuse (ValueError) a request whose estimated cost is far above the limits (:func:`~._krr_sizing.check_request_size`)."""
        check_request_size(self.num_users, self.domain_size, self.blanket_probability, self.adversary, tail_mass)

    # ------------------------------------------------------------------ parameters
    def _log_parameters(self) -> tuple[float, float]:
        """``(log γ, log a)`` with ``a = e^{ε0} - 1 = k(1-γ)/γ``, in log space (finite for any valid input)."""
        k = self.domain_size
        if self.gamma is not None:
            return math.log(self.gamma), krr_log_excess(k, self.gamma)
        eps0 = self.local_epsilon
        return krr_log_gamma(k, eps0), eps0 + math.log(-math.expm1(-eps0))

    @property
    def blanket_probability(self) -> float:
        """``γ``: probability that a user reports a uniform value (``k / (e^{ε0} + k - 1)``)."""
        return self.gamma if self.gamma is not None else math.exp(self._log_parameters()[0])

    @property
    def epsilon0(self) -> float:
        """``ε0 = log(1 + k(1-γ)/γ)``: the local privacy level of the randomizer."""
        if self.local_epsilon is not None:
            return self.local_epsilon
        return krr_local_epsilon(self.domain_size, self.gamma)

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
            lower, upper = tilted_trinomial_support(
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
                # With probability γ the differing user randomised: identical views, loss 0.
                weight = min(math.exp(log_one_minus_gamma), 1.0)  # 1 - γ (log space rounds to ~1e-13)
                exact = lower is upper
                upper = with_zero_atom(upper, weight, gamma)
                lower = upper if exact else with_zero_atom(lower, weight, gamma)
                label = "kRR strong adversary"
            else:
                label = "kRR KHH21 figure pair (strong without atom)"
        elif self.adversary == "weak":
            # b ~ Bin(n-1, γ); (n1, n2) | b ~ Mult(b+1; 1/k, 1/k, 1-2/k); tilt γ + (1-γ) k n1 / (b+1).
            lower, upper = tilted_trinomial_support(
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
            label = "kRR weak adversary"
        else:
            # v = n - h0 ~ Bin(n, (k-1)g) outputs differing from the others' value; (h1, h2) | v ~
            # Mult(v; 1/(k-1), 1/(k-1), ·) via c ~ Bin(v, 2/(k-1)); tilt (e^{-ε0}(n-v) + v + (e^{ε0}-1) h1) / n.
            # (Counting v rather than h0 keeps the small probability (k-1)g exact when γ is tiny.)
            eps0 = self.epsilon0

            def log_tilt(v: NDArray[np.int64]) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
                with np.errstate(divide="ignore"):
                    log_base = np.logaddexp(np.log((n - v).astype(np.float64)) - eps0, np.log(v.astype(np.float64)))
                return log_base - log_n, np.full(v.shape, log_a - log_n)

            lower, upper = tilted_trinomial_support(
                outer_trials=n,
                outer_prob=(k - 1) * g,
                inner_trials=lambda v: v,
                inner_prob=2.0 / (k - 1),
                log_tilt=log_tilt,
                tail_mass=tail,
                context=context,
                advice=advice,
            )
            label = "kRR histogram view of (1,3..3) vs (2,3..3)"

        label += f": n={n}, k={k}, gamma={gamma:.6g}"
        if lower is upper:
            uppers = lowers = [PrivacyLossPair(upper, None, label=label)]
        else:
            uppers = [PrivacyLossPair(upper, None, label=label + " (streamed upper bound)")]
            lowers = [PrivacyLossPair(lower, None, label=label + " (streamed lower bound)")]
        if self.adversary == "histogram":
            common_lower, common_upper = common_value_pairs(n, k, self.epsilon0, (k - 1) * g, tail, context, advice)
            uppers, lowers = [*uppers, common_upper], [*lowers, common_lower]
        guarantee = self.adversary != "histogram"
        # The weak and histogram views are post-processings of the differing user's ε0-LDP report; the
        # strong adversary also sees that user's randomisation bit (infinite losses).
        max_loss = self.epsilon0 if self.adversary in ("weak", "histogram") else math.inf
        if all(lo is up for lo, up in zip(lowers, uppers)):
            return PairFamily.exact(*uppers, is_guarantee=guarantee, caveats=_CAVEATS[self.adversary], max_loss=max_loss)
        return PairFamily(tuple(uppers), tuple(lowers), guarantee, _CAVEATS[self.adversary], max_loss=max_loss)
