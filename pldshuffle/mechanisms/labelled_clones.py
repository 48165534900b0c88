"""The labelled clone pair: one pair class for the FMT20, FMT23, randomizer-specific and variation-ratio reductions.

Setting.  ``n`` users, user 1 is the victim.  Every *other* user independently draws a label ``0`` with
probability ``r0``, ``1`` with probability ``r1`` and ``⊥`` with probability ``r2 = 1 - r0 - r1``.  The
victim draws label ``0`` / ``1`` / ``⊥`` with probabilities ``(u, v, g)`` under ``P`` and ``(v, u, g)``
under ``Q``, where

.. math::  u = p\\,\\alpha,\\quad v = \\alpha,\\quad \\alpha = \\frac{1-g}{p+1}\\qquad(p = \\infty:\\ u = 1-g,\\ v = 0).

The released statistic is ``(a, b)``, the numbers of labels 0 and 1 among all ``n`` users.  With
``C ~ Bin(n-1, r0+r1)`` the others' labelled count and ``A | C ~ Bin(C, ρ)``, ``ρ = r0/(r0+r1)``:

.. math::  P(a,b) = w_{T-1}\\,[u\\,B_{T-1}(a-1) + v\\,B_{T-1}(a)] + g\\,w_T\\,B_T(a),\\qquad T = a+b,

with ``w_c = Bin(n-1, r0+r1)(c)`` and ``B_c = Bin(c, ρ)``; ``Q`` swaps ``u`` and ``v``.  The privacy loss
satisfies ``|ℓ| ≤ log p`` and increases with ``a`` at fixed ``T``; for ``p = ∞`` the outcomes with
``b = 0`` (``P``) or ``a = 0`` (``Q``) are infinite-loss atoms.

Which constants are *proven* upper bounds (replace-one neighbours, analyst sees the multiset of reports):

* ``g = 0``, ``r0 = r1 = r`` with a randomizer ``R`` and a victim pair ``(x, x')`` such that
  ``R(x)(y) ≤ p R(x')(y)``, ``R(x')(y) ≤ p R(x)(y)`` and ``R(z)(y) ≥ r (R(x)(y) + R(x')(y))`` for every
  input ``z`` and output ``y``.  Proof: write ``R(x) = p/(p+1) Ṽ0 + 1/(p+1) Ṽ1`` with
  ``Ṽ0 = (pR(x) - R(x'))/(p-1)``, ``Ṽ1 = (pR(x') - R(x))/(p-1)`` (and symmetrically ``R(x')``); every
  other user ``z`` reports from ``Ṽ0`` w.p. ``r``, from ``Ṽ1`` w.p. ``r`` and from
  ``(R(z) - rṼ0 - rṼ1)/(1-2r) ≥ 0`` otherwise.  The victim is never ``⊥``, so given ``(a, b)`` the set of
  ``⊥`` users is uniform among the others under *both* hypotheses and the multiset of reports is a
  post-processing of ``(a, b)`` (this is the argument of Feldman, McMillan, Talwar, FOCS 2021, Thm 3.2,
  with general constants; ``p = ∞`` is the limit ``Ṽ0 = R(x)``, ``Ṽ1 = R(x')``).

  - every ε0-LDP randomizer satisfies it with ``p = e^{ε0}, r = e^{-ε0}/2`` (:meth:`LabelledClonePair.fmt20`,
    FMT20 Thm 3.2);
  - ``p = e^{ε0}, r = 1/(e^{ε0}+1)`` (:meth:`LabelledClonePair.fmt23`, Feldman, McMillan, Talwar, SODA 2023,
    Thm 3.1 with the errata's restricted class) holds exactly when
    ``R(z)(y)(e^{ε0}+1) ≥ R(x)(y) + R(x')(y)`` for all ``x, x', z, y``;
  - the randomizer's own ``p*``, ``r*`` (:mod:`pldshuffle.randomizers`) are the tightest constants of this form.

  Ordering: the pair ``(p, r)`` is dominated by ``(p', r')`` whenever ``p ≤ p'`` and
  ``r' ≤ min(r, 1/(p+1))``: the pair ``(p, r)`` is itself the shuffled output of the label randomizer
  ``x ↦ (p, 1, 0)/(p+1)``, ``x' ↦ (1, p, 0)/(p+1)``, ``z ↦ (r, r, 1-2r)``, which satisfies the condition
  above with ``(p', r')``.  Hence randomizer-specific constants are never worse than FMT20.
* ``g > 0`` (Wang et al., PVLDB 17(8) 2024, "variation-ratio" reduction, Lemma 4.5): **not a valid upper
  bound** in general -- the victim's residual differs from the others' residuals, and the shuffled reports
  reveal more than ``(a, b)``.  Shuffled 3-ary RR with ε0 = 1, n = 2 already exceeds it (see
  :meth:`LabelledClonePair.from_variation_ratio`).  Kept for reproducing published numbers only.

Evaluation.  :meth:`LabelledClonePair.delta` gives the exact single-round ``δ(ε)`` in O(n) per ε.
:meth:`LabelledClonePair.pair_bounds` gives strict ``(lower, upper)`` privacy-loss pairs for composition:
symmetric pairs with ``g = 0`` and finite ``p`` go through the block kernels of
:mod:`pldshuffle.mechanisms._clone_layout` (exact, or streamed onto a lattice above
:data:`~pldshuffle.mechanisms._clone_layout.EXACT_SUPPORT_LIMIT` points); all other constants are enumerated exactly
over a truncated ``(a, b)`` window (refused above :data:`MAX_ENUMERATED_SUPPORT` points).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray

from . import _clone_layout as _ck
from ._clone_layout import direction_from_log_masses
from .._validation import check_int, check_num_users, check_probability, check_real, show
from ..pld import PrivacyLossPair
from ._binomial import binomial_cdf, binomial_pmf, binomial_sf
from .._validation import MAX_LOCAL_EPSILON, check_local_epsilon
from ._binomial import binomial_logpmf_within, binomial_window, binomial_windows
from .base import DEFAULT_TAIL_MASS

__all__ = ["MAX_ENUMERATED_SUPPORT", "MAX_EXACT_COUNTS", "LabelledClonePair"]

#: Supports of pairs that cannot use the block kernels (``g > 0``, ``r0 ≠ r1`` or ``p = ∞``) are enumerated
#: in memory (~100 bytes per point); larger ones are refused.
MAX_ENUMERATED_SUPPORT = 5_000_000
#: ``p`` beyond this is treated as an error unless it is exactly ``inf`` (use ``math.inf`` for ``p = ∞``).
MAX_RATIO = math.exp(MAX_LOCAL_EPSILON)
#: The exact single-round sum skips the others' labelled counts outside a binomial window of this tail mass.
_NEGLIGIBLE = 1e-250
#: :meth:`LabelledClonePair.delta` sums over at most this many counts (~10 arrays of them in memory).
MAX_EXACT_COUNTS = 20_000_000


@dataclass(frozen=True)
class LabelledClonePair:
    """Labelled clone pair with constants ``(p, r0, r1, g)`` (see the module docstring).

    Parameters
    ----------
    num_users : int
        ``2 <= n <= 2**53``, the victim included.
    ratio : float
        Victim variation ratio ``p > 1``; ``math.inf`` is allowed (the victim's label is then
        deterministic: infinite-loss atoms).
    r0, r1 : float
        Probabilities that another user is labelled 0 / 1; both 0 or both positive, and ``r0 + r1 ≤ 1``
        (``r0 + r1 < 1`` when ``g > 0``).
    residual : float
        Victim residual weight ``g ∈ [0, 1)``; ``0`` for every certified reduction.

    Notes
    -----
    The pair with ``g = 0`` and ``r0 = r1`` is FMT20's pair F with clone probability ``2r``.
    """

    num_users: int
    ratio: float
    r0: float
    r1: float
    residual: float = 0.0

    def __post_init__(self) -> None:
        object.__setattr__(self, "num_users", check_num_users(self.num_users))
        p = check_real("ratio", self.ratio)
        if not (p > 1.0 and (p <= MAX_RATIO or p == math.inf)):
            raise ValueError(f"ratio must be > 1 and either <= e^500 or exactly inf, got {show(self.ratio)}")
        object.__setattr__(self, "ratio", p)
        for name in ("r0", "r1"):
            object.__setattr__(self, name, check_probability(name, getattr(self, name), low_open=False, high_open=False))
        g = check_probability("residual", self.residual, low_open=False, high_open=True)
        object.__setattr__(self, "residual", g)
        if (self.r0 == 0.0) != (self.r1 == 0.0):
            raise ValueError(f"r0 and r1 must be both 0 or both > 0, got r0={show(self.r0)}, r1={show(self.r1)}")
        if self.r0 + self.r1 > 1.0 or (g > 0.0 and self.r0 + self.r1 >= 1.0):
            bound = "< 1 (residual > 0)" if g > 0.0 else "<= 1"
            raise ValueError(f"r0 + r1 must be {bound}, got r0={show(self.r0)}, r1={show(self.r1)}")

    # ------------------------------------------------------------------ constructors
    @classmethod
    def fmt20(cls, num_users: int, local_epsilon: float) -> LabelledClonePair:
        """FMT20's clone pair (Feldman, McMillan, Talwar, FOCS 2021, Thm 3.2): ``p = e^{ε0}``,
        ``r0 = r1 = e^{-ε0}/2``, ``g = 0``.  A guarantee for every ε0-LDP randomizer."""
        eps0 = check_local_epsilon(local_epsilon)
        return cls(num_users, math.exp(eps0), math.exp(-eps0) / 2.0, math.exp(-eps0) / 2.0)

    @classmethod
    def fmt23(cls, num_users: int, local_epsilon: float) -> LabelledClonePair:
        """FMT23's stronger clone pair (Feldman, McMillan, Talwar, SODA 2023, Thm 3.1 / errata Thm 7.1):
        ``p = e^{ε0}``, ``r0 = r1 = 1/(e^{ε0}+1)``, ``g = 0``.  A guarantee only for randomizers with
        ``R(z)(y)(e^{ε0}+1) ≥ R(x)(y) + R(x')(y)`` for all inputs ``x, x', z`` and outputs ``y``."""
        eps0 = check_local_epsilon(local_epsilon)
        r = 1.0 / (math.exp(eps0) + 1.0)
        return cls(num_users, math.exp(eps0), r, r)

    @classmethod
    def from_variation_ratio(
        cls, num_users: int, ratio: float, total_variation: float, q0: float, q1: float | None = None
    ) -> LabelledClonePair:
        """Wang et al.'s pair for the ``(p, β, q)``-variation property (PVLDB 17(8) 2024, Thm 4.7).

        ``α = β/(p-1)``, ``r0 = αp/q0``, ``r1 = αp/q1``, ``g = 1 - (p+1)α``.  **Not a valid upper bound
        when** ``g > 0`` (``β < (p-1)/(p+1)``): e.g. 3-ary RR with ε0 = 1, two users, on ``(0, 0)`` vs
        ``(1, 0)`` has ``δ(0.75) = 0.0734`` but this pair gives ``0.0503``.  With ``g = 0`` it is the
        certified pair with ``r = αp/q``, valid when ``R(z) ≥ r (R(x) + R(x'))`` holds.

        Parameters
        ----------
        ratio : float
            ``p > 1`` (finite).
        total_variation : float
            ``β ∈ (0, (p-1)/(p+1)]``.
        q0, q1 : float
            Ratio bounds of the victim's outputs against the others' (``q1`` defaults to ``q0``);
            ``αp/q0 + αp/q1 ≤ 1`` is required.
        """
        p = check_real("ratio", ratio)
        if not (1.0 < p < math.inf):
            raise ValueError(f"ratio must be a finite number > 1, got {show(ratio)}")
        beta = check_real("total_variation", total_variation)
        beta_max = (p - 1.0) / (p + 1.0)
        if not (0.0 < beta <= beta_max * (1.0 + 1e-12)):
            raise ValueError(f"total_variation must lie in (0, (p-1)/(p+1)] = (0, {beta_max:.6g}], got {show(total_variation)}")
        q1 = q0 if q1 is None else q1
        for name, q in (("q0", q0), ("q1", q1)):
            if not check_real(name, q) >= 1.0:
                raise ValueError(f"{name} must be a number >= 1, got {show(q)}")
        alpha = min(beta, beta_max) / (p - 1.0)
        g = max(0.0, 1.0 - (p + 1.0) * alpha)
        return cls(num_users, p, alpha * p / float(q0), alpha * p / float(q1), g)

    # ------------------------------------------------------------------ properties
    @property
    def victim_weights(self) -> tuple[float, float, float]:
        """``(u, v, g)``: the victim's label probabilities 0 / 1 / ⊥ under ``P`` (``Q`` swaps ``u`` and ``v``)."""
        g = self.residual
        if self.ratio == math.inf:
            return 1.0 - g, 0.0, g
        return self.ratio * (1.0 - g) / (self.ratio + 1.0), (1.0 - g) / (self.ratio + 1.0), g

    @property
    def is_symmetric(self) -> bool:
        """``r0 == r1``: then ``P(a, b) = Q(b, a)`` and one direction suffices."""
        return self.r0 == self.r1

    @property
    def uses_block_kernels(self) -> bool:
        """Symmetric, no residual, finite ratio: pair F, evaluated by the (streaming) block kernels."""
        return self.is_symmetric and self.residual == 0.0 and self.ratio < math.inf

    def describe(self) -> str:
        """One line naming the constants."""
        return (
            f"labelled clone pair, n={self.num_users}, p={self.ratio:.6g}, r0={self.r0:.6g}, r1={self.r1:.6g}, "
            f"g={self.residual:.6g}"
        )

    # ------------------------------------------------------------------ exact single round
    def delta(self, epsilon: ArrayLike) -> NDArray[np.float64]:
        """Exact single-round ``δ(ε) = max(H_{e^ε}(P‖Q), H_{e^ε}(Q‖P))``, O(n) per ``ε``.

        For ``t = e^ε < p`` the outcomes with loss above ``ε`` are, at each total ``T = a+b``, those with
        ``a`` above ``low_T(t) = [(tu - v)T/r1 + (t-1) g (n-T)/r2] / [(u - tv)/r0 + (tu - v)/r1]``, so

        .. math::  H_t(P\\|Q) = \\sum_c w_c\\,[(u - tv) S_c(a^*_{c+1}-1) + (v - tu) S_c(a^*_{c+1}) + (1-t) g\\, S_c(a^*_c)]

        with ``S_c(k) = Pr[Bin(c, ρ) ≥ k]`` and ``a*_T`` the smallest ``a > low_T(t)`` (computed from the
        ``b`` side, ``b < T - low_T``, so that ``b = 0`` stays in the region for any ``t``); ``Q‖P`` is the same with ``r0``
        and ``r1`` exchanged.  Counts ``c`` outside a window of ``Bin(n-1, r0+r1)`` of tail mass 1e-250 are
        skipped (error below ``1e-250·(1+e^ε)``); the rest is float arithmetic (relative error ~1e-12 of the
        mass above ``ε``), not a certified bracket.

        Parameters
        ----------
        epsilon : float or array_like
            ``ε ≥ 0``.
        """
        eps = np.atleast_1d(np.asarray(epsilon, dtype=np.float64))
        if np.any(~(eps >= 0.0)):
            raise ValueError(f"epsilon must be >= 0 (and not NaN), got {show(epsilon)}")
        forward = self._hockey_stick(eps, self.r0, self.r1)
        backward = forward if self.is_symmetric else self._hockey_stick(eps, self.r1, self.r0)
        return np.clip(np.maximum(forward, backward), 0.0, 1.0)

    def _hockey_stick(self, eps: NDArray[np.float64], r0: float, r1: float) -> NDArray[np.float64]:
        n, p = self.num_users, self.ratio
        u, v, g = self.victim_weights
        s = r0 + r1
        out = np.zeros(eps.size)
        if s == 0.0:  # nobody else is labelled: the outcome is the victim's label alone
            for i, t in enumerate(np.exp(eps)):
                out[i] = max(u - t * v, 0.0) + max(v - t * u, 0.0)
            return out
        lo, hi, _ = binomial_window(n - 1, s, _NEGLIGIBLE)
        if hi - lo + 1 > MAX_EXACT_COUNTS:  # before allocating arrays of them (n = 2**53: ~1e9 counts)
            raise ValueError(
                f"the exact single-round delta of the {self.describe()} sums over {hi - lo + 1:,} counts, more than "
                f"MAX_EXACT_COUNTS={MAX_EXACT_COUNTS:,}; use fewer users, or pair_bounds() and the FourierAccountant"
            )
        c = np.arange(lo, hi + 1, dtype=np.int64)
        w = binomial_pmf(c, n - 1, s)
        rho = r0 / s
        r2 = 1.0 - s

        def tail(k: NDArray[np.int64], trials: NDArray[np.int64]) -> NDArray[np.float64]:
            return binomial_sf(k - 1, trials, rho)  # Pr[Bin(trials, ρ) >= k]; 1 for k <= 0, 0 for k > trials

        for i, t in enumerate(np.exp(eps)):
            if t >= p:  # |loss| <= log p: nothing above ε (p = inf never gets here)
                continue
            slope = (u - t * v) / r0 + (t * u - v) / r1  # > 0 for 1 <= t < p

            def first_above(total: NDArray[np.int64], t: float = t, slope: float = slope) -> NDArray[np.int64]:
                # a > low_T  <=>  b = T - a < T - low_T = [(u - tv)T/r0 - (t-1) g (n-T)/r2] / slope.  The b-side
                # form keeps b = 0 (the infinite-loss atom when p = inf) inside the region however large t is.
                resid = (t - 1.0) * g * (n - total) / r2 if g > 0.0 else 0.0
                b_limit = ((u - t * v) * total / r0 - resid) / slope
                # Ties (loss exactly ε) contribute P - tQ = 0, so rounding at the boundary is harmless.
                return total - np.ceil(b_limit).astype(np.int64) + 1

            a_lab = first_above(c + 1)
            terms = (u - t * v) * tail(a_lab - 1, c) + (v - t * u) * tail(a_lab, c)
            if g > 0.0:
                terms = terms + (1.0 - t) * g * tail(first_above(c), c)
            out[i] = math.fsum((w * terms).tolist())
        return out

    # ------------------------------------------------------------------ pairs for composition
    def support_size(self, *, tail_mass: float = DEFAULT_TAIL_MASS) -> int:
        """Number of kept support points at this tail mass (decides exact vs streamed evaluation)."""
        tail = check_probability("tail_mass", tail_mass)
        if self.uses_block_kernels:
            return self._layout(tail).support
        return int(self._outcome_hull(tail)[3].sum())

    def support_estimate(self, *, tail_mass: float = DEFAULT_TAIL_MASS) -> float:
        """Rough number of kept support points, O(1) (:meth:`support_size` is exact but costs O(√n) scipy
        calls: seconds at n = 1e8)."""
        tail = check_probability("tail_mass", tail_mass)
        s = self.r0 + self.r1
        share = self.r0 / s if s > 0.0 else 0.5
        return _ck.support_estimate(self.num_users, s, share, tail)

    def build_seconds(self, *, tail_mass: float = DEFAULT_TAIL_MASS) -> float:
        """Estimated seconds of :meth:`pair_bounds`, O(1): streaming its support when it uses the block
        kernels (the enumerated pairs hold at most :data:`MAX_ENUMERATED_SUPPORT` points, a few seconds)."""
        if not self.uses_block_kernels:
            return 0.0
        return _ck.streaming_seconds(self.support_estimate(tail_mass=tail_mass))

    def pair_bounds(
        self,
        *,
        tail_mass: float = DEFAULT_TAIL_MASS,
        max_exact_support: int = _ck.EXACT_SUPPORT_LIMIT,
        bins: int = _ck.STREAM_GRID_BINS,
    ) -> tuple[PrivacyLossPair, PrivacyLossPair]:
        """Strict ``(lower, upper)`` privacy-loss pairs of this pair, for any number of compositions.

        Truncation: ``C`` to a window of ``Bin(n-1, r0+r1)`` and ``A | C`` to a window of ``Bin(C, ρ)``,
        each dropping at most ``tail_mass``; every kept generative point lands on a kept outcome, whose
        exact mass and loss are used, and the dropped ``P``- (``Q``-) mass is booked as
        ``truncated_mass``.  Symmetric pairs with ``g = 0`` and finite ``p`` use the block kernels
        (exact up to ``max_exact_support`` points, else streamed onto ``bins`` lattice cells: a
        mean-preserving spread above and a contraction below, relative ε error ~1e-8).  Other pairs are
        enumerated exactly (both directions), refused above :data:`MAX_ENUMERATED_SUPPORT` points.
        """
        tail = check_probability("tail_mass", tail_mass)
        max_exact = check_int("max_exact_support", max_exact_support, minimum=0)
        bins = check_int("bins", bins, minimum=2)
        if self.uses_block_kernels:
            return _ck.layout_bounds(self._layout(tail), self.describe(), max_exact, bins)
        pair = self._enumerated_pair(tail)
        return pair, pair

    def _layout(self, tail: float) -> _ck.Layout:
        return _ck.layout(self.num_users, self.ratio, self.ratio - 1.0, 2.0 * self.r0, tail, "F")

    def _windows(self, tail: float) -> tuple[NDArray[np.int64], NDArray[np.int64], NDArray[np.int64], float]:
        """Kept others' counts ``c`` with windows ``[lo_c, hi_c]`` of ``A | C = c``, and the dropped mass bound."""
        n, s = self.num_users, self.r0 + self.r1
        clo, chi, dropped_c = binomial_window(n - 1, s, tail)
        if chi - clo + 1 > MAX_ENUMERATED_SUPPORT:  # each kept count holds a point: refused before allocating
            raise ValueError(
                f"the {self.describe()} has at least {chi - clo + 1:,} support points to enumerate, above "
                f"MAX_ENUMERATED_SUPPORT={MAX_ENUMERATED_SUPPORT:,}; use fewer users or a larger tail_mass"
            )
        c = np.arange(clo, chi + 1, dtype=np.int64)
        rho = self.r0 / s if s > 0.0 else 0.5
        lo, hi = binomial_windows(c, rho, tail)
        dropped_a = binomial_cdf(lo - 1, c, rho) + binomial_sf(hi, c, rho)
        w = binomial_pmf(c, n - 1, s)
        return c, lo, hi, min(1.0, dropped_c + math.fsum((w * dropped_a).tolist()))

    def _outcome_hull(self, tail: float) -> tuple[NDArray[np.int64], NDArray[np.int64], NDArray[np.int64], NDArray[np.int64], float]:
        """Kept outcomes as blocks: totals ``T = a+b``, ranges ``[a_lo, a_hi]``, their sizes, and the dropped mass.

        ``T = c + 1`` (victim labelled) keeps the hull ``[lo_c, hi_c + 1]`` of its generative points and, with a
        residual, ``T = c`` (victim ⊥) keeps ``[lo_c, hi_c]``: every kept generative point has its image kept.
        """
        c, lo, hi, dropped = self._windows(tail)
        t_min = int(c[0]) + (0 if self.residual > 0.0 else 1)
        totals = np.arange(t_min, int(c[-1]) + 2, dtype=np.int64)
        a_lo = np.full(totals.size, np.iinfo(np.int64).max)
        a_hi = np.full(totals.size, -1)
        np.minimum.at(a_lo, c + 1 - t_min, lo)
        np.maximum.at(a_hi, c + 1 - t_min, hi + 1)
        if self.residual > 0.0:
            np.minimum.at(a_lo, c - t_min, lo)
            np.maximum.at(a_hi, c - t_min, hi)
        return totals, a_lo, a_hi, a_hi - a_lo + 1, dropped

    def _enumerated_pair(self, tail: float) -> PrivacyLossPair:
        n, s = self.num_users, self.r0 + self.r1
        u, v, g = self.victim_weights
        estimate = self.support_estimate(tail_mass=tail)
        if estimate > 4 * MAX_ENUMERATED_SUPPORT:  # far above (the estimate is within ~25 %): before any window search
            raise ValueError(
                f"the {self.describe()} has about {estimate:.3g} support points to enumerate, above MAX_ENUMERATED_SUPPORT="
                f"{MAX_ENUMERATED_SUPPORT:,}; use fewer users or a larger tail_mass"
            )
        totals, a_lo, _, sizes, dropped = self._outcome_hull(tail)
        support = int(sizes.sum())
        if support > MAX_ENUMERATED_SUPPORT:
            raise ValueError(
                f"the {self.describe()} has {support:,} support points to enumerate, above MAX_ENUMERATED_SUPPORT="
                f"{MAX_ENUMERATED_SUPPORT:,}; use fewer users or a larger tail_mass"
            )
        T = np.repeat(totals, sizes)
        a = np.repeat(a_lo - np.concatenate([[0], np.cumsum(sizes)[:-1]]), sizes) + np.arange(support)
        rho = self.r0 / s if s > 0.0 else 0.5
        log_w = binomial_logpmf_within(T - 1, n - 1, s)  # others labelled T-1, victim labelled
        left, right = binomial_logpmf_within(a - 1, T - 1, rho), binomial_logpmf_within(a, T - 1, rho)  # victim 0 / victim 1
        with np.errstate(divide="ignore"):
            log_u, log_v = math.log(u) if u > 0 else -math.inf, math.log(v) if v > 0 else -math.inf
            log_p = log_w + np.logaddexp(log_u + left, log_v + right)
            log_q = log_w + np.logaddexp(log_v + left, log_u + right)
            if g > 0.0:
                resid = math.log(g) + binomial_logpmf_within(T, n - 1, s) + binomial_logpmf_within(a, T, rho)
                log_p, log_q = np.logaddexp(log_p, resid), np.logaddexp(log_q, resid)
        # Masses below the smallest double underflow; book their (negligible) total as truncated.
        lost = support * float(np.finfo(np.float64).smallest_subnormal)
        label = self.describe()
        forward = direction_from_log_masses(log_p, log_q, min(1.0, dropped + lost))
        if self.is_symmetric:
            return PrivacyLossPair(forward, None, label=label)
        return PrivacyLossPair(forward, direction_from_log_masses(log_q, log_p, min(1.0, dropped + lost)), label=label)
