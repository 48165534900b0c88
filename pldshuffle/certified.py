"""The certified discrete privacy loss distribution: one immutable value that composes and answers queries.

A :class:`CertifiedPLD` is a product of *terms*, each ``count`` rounds of one mechanism discretised on
the common lattice ``z_j = j·Δ``.  A term holds

* ``upper``: one or two lattice measures (the two orders of the neighbouring pair) whose privacy
  profile ``h(x) = Σ ω(z)(1 - e^{x-z})_+ + ω(∞)`` is ≥ the mechanism's exact profile at *every* real
  ``x`` -- a dominating pair (connect-the-dots of an exact pair, or of the envelope of a family of
  pairs).  Profile domination at every ``x`` is preserved by convolution with any non-negative measure,
  so the composition of the upper measures dominates any composition of the true pairs, whatever
  dataset each round uses.
* ``lower``: witnesses -- specific realisable pairs, merged onto the lattice (outcomes merged into groups
  whose loss is exactly a lattice point: a post-processing, so every composition of them is dominated by
  the true one) or, for sparse pairs, rounded *down* onto it (each loss can only decrease, so δ can only
  decrease) with the moment generating function of the rounding offsets, which certifies a shift back up
  (``δ(ε) ≥ δ_down(ε - t) - P[D < t]``, ``D`` the summed offsets); see :mod:`pldshuffle.grid`.

Composition is lazy (``compose`` and ``self_compose`` only concatenate terms); the first query realises
the composition once per tilt (:mod:`pldshuffle.composition`) and caches it, so every query of one
object reads the same numbers: ``delta_bounds(epsilon_bounds(δ).upper).upper ≤ δ`` by construction.
The upper value at ε is the minimum over tilts of certified upper values, the lower value the maximum
over tilts, witnesses and shifts of certified lower values; lower ≤ exact ≤ upper is a theorem, never
enforced by clipping one against the other.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ._kernels import UNIT_ROUNDOFF as _U
from ._reporting import throttled_reporter
from ._validation import check_delta, check_epsilons
from .errors import MemoryBudgetError  # raised here; its home is errors.py
from .composition import CHERNOFF_LAMBDAS, Realization, composed_log_mgf, log_mgf, realize, window
from .fft import fast_size, get_backend
from .grid import moments
from .lattice import (
    Composite,
    LatticeDirection,
    ProductLower,
    Term,
    compose_infinity,
    direct_realization,
    lower_direction,
    shift_certificate,
    upper_direction,
)
from .pld import MASS_RTOL, PrivacyLossPair, infinity_apart

__all__ = ["CertifiedPLD", "MemoryBudgetError", "invert"]

#: Tilted Chernoff tolerance of every realisation window (folded mass, relative after untilting).
TAIL_TOLERANCE = 1e-18
#: The product lower end's window of the other entries' tail masses holds at most this many points
#: (:meth:`CertifiedPLD._product_lower`).
_PRODUCT_POINTS = 2**16
#: A single round's cover is refined at each ε of δ queries of at most this many points, until its upper ε
#: is within this (relative, see _refined_epsilon_gap) of the lower end: the one-round target is 1e-4.
_REFINED_POINTS = 4
_REFINED_EPSILON_GAP = 3e-5
#: An ε query repeats that refinement (each pass up to ``dominating._QUERY_SPLITS`` splits) at most this
#: many times while its bracket misses the one-round target and is wider than ``_QUERY_ABSOLUTE_GAP``: as
#: ε → 0 the relative gap is ill-conditioned (δ's relative error times δ/(ε·P[L > ε])), and passes spent
#: there cost 5× the time (2RR n = 3e6, ε0 = 0.1, δ = 1e-5, ε = 3.4e-5: 2.2e-4 → 1.0e-4 in 3.7 → 19 s).
_QUERY_REFINES = 4
_QUERY_ABSOLUTE_GAP = 1e-8
#: Realisable pairs inverted for a single round's lower ε (any subset is a lower bound).
_LOWER_PAIRS = 16
#: δ levels whose Chernoff saddle points set the tilts (θ = 0 is always included) ...
_TILT_DELTAS = (1e-8, 1e-14)
#: ... and for ledgers of more rounds also this one: the FFT's certified round-off grows with the rounds
#: (``n·r^{n-1}`` times the forward error per spectral entry), and untilted it reached ~5e-5 in δ after 1e6
#: rounds of a sparse pair (randomized response, ε0 = 1e-3: gap 4.0e-2 at δ = 1e-3, 5.1e-4 with this tilt;
#: 1e5 rounds at ε0 = 3e-3: 9.4e-3 and 1.2e-4; 1e4 rounds at ε0 = 1e-2: 1.1e-3 and 2.4e-4; 2000 rounds at
#: ε0 = 3e-2: 2.1e-4 and 1.7e-5).
_LONG_TILT_DELTA, _LONG_LEDGER = 1e-3, 2000
#: Ledgers of at most this many rounds are held to the relative target at every δ ≤ 1e-2.
SHORT_LEDGER = 64
#: δ levels at whose upper ε a worst-case block's strategy witnesses aim (:meth:`CertifiedPLD._strategy_lowers`).
_STRATEGY_DELTAS = (1e-2, 1e-4, 1e-7)
#: Bytes held per window point by one cached realisation (masses, profile, suffix) and, transiently, while
#: realising (measured: ~90 per point beyond what the realisation keeps).
BYTES_PER_POINT = 24
WORK_BYTES_PER_POINT = 96
#: Bytes per point of the aligned buffers kept by the cached FFTW plans of one window size (pyfftw only).
PLAN_BYTES_PER_POINT = 32
#: Bytes per lattice point of one direction discretised for one round (connect-the-dots masses, the lower
#: measure and their profiles; measured: ~80 at the peak, kRR strong n = 100 at Δ = 1e-6).
LATTICE_BYTES_PER_POINT = 96


@dataclass(frozen=True, eq=False)
class CertifiedPLD:
    """A certified discrete privacy loss distribution (see the module notes for the invariant).

    For every ``ε ≥ 0``, ``delta_bounds(ε)`` returns ``(lower, upper)`` with
    ``lower ≤ δ_exact(ε) ≤ upper`` where ``δ_exact`` is the tight δ of the composed worst case (both
    orders of the neighbouring pair).  Build one with :meth:`pldshuffle.FourierAccountant.certified_pld`
    or :meth:`from_pair`.

    Parameters
    ----------
    spacing : float
        Lattice spacing Δ shared by every term.
    terms : tuple of Term
    is_guarantee : bool
        False when a term's upper measure is not proven to dominate its mechanism's worst case.
    caveats : tuple of str
    fft_backend : str
    max_memory_bytes : int
        Refuse (before allocating) a realisation whose working set would exceed this.
    """

    spacing: float
    terms: tuple[Term, ...]
    is_guarantee: bool = True
    caveats: tuple[str, ...] = ()
    fft_backend: str = "auto"
    max_memory_bytes: int = 2**31
    _cache: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    # ------------------------------------------------------------------ algebra
    @classmethod
    def from_pair(cls, pair: PrivacyLossPair, spacing: float, **options: Any) -> CertifiedPLD:
        """One round of an exact pair, discretised on the lattice of the given spacing."""
        up = tuple(upper_direction(d.discretize(spacing)) for d in pair.directions)
        low = tuple(lower_direction(d.discretize(spacing)) for d in pair.directions)
        return cls(spacing, (Term(up, (low,), 1, (pair,), (pair,)),), **options)

    def compose(self, other: CertifiedPLD) -> CertifiedPLD:
        """The composition of both (lazy: realised at the first query)."""
        if not isinstance(other, CertifiedPLD):
            raise TypeError(f"other must be a CertifiedPLD, got {type(other).__name__}")
        if other.spacing != self.spacing:
            raise ValueError(f"cannot compose lattices of spacing {self.spacing!r} and {other.spacing!r}: build both with one spacing")
        return replace(
            self,
            terms=self.terms + other.terms,
            is_guarantee=self.is_guarantee and other.is_guarantee,
            caveats=tuple(dict.fromkeys(self.caveats + other.caveats)),
            _cache={},
        )

    def self_compose(self, count: int) -> CertifiedPLD:
        """``count``-fold composition with itself."""
        if isinstance(count, bool) or not isinstance(count, (int, np.integer)) or count < 1:
            raise ValueError(f"count must be an integer >= 1, got {count!r}")
        return replace(self, terms=tuple(t.scaled(int(count)) for t in self.terms), _cache={})

    def realize(self) -> CertifiedPLD:
        """Realise (and cache) the composition now; later queries only read it.  Returns ``self``."""
        self._composites("upper")
        self._composites("lower")
        return self

    @property
    def rounds(self) -> int:
        """Composed rounds (a same-data block of k rounds counts k)."""
        return sum(t.lower_count for t in self.terms)

    @property
    def loss_cap(self) -> float:
        """``Σ rounds·max_loss`` over the terms: the composed loss never exceeds it, so δ(ε) = 0 and ε(δ) ≤ it
        at every δ (basic composition of pure DP; ``inf`` unless every term's mechanism bounds its loss)."""
        return float(sum(t.lower_count * t.max_loss for t in self.terms))

    @property
    def symmetric(self) -> bool:
        return all(len(t.upper) == 1 and all(len(w) == 1 for w in t.lower) for t in self.terms)

    # ------------------------------------------------------------------ queries
    def delta_bounds(self, epsilon: ArrayLike) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
        """Certified ``(lower, upper)`` arrays on δ at each ``ε ≥ 0``.

        The first query realises the composition (O(m log m) FFTs per tilt, order and witness on windows of
        m lattice points); later ones cost O(1) per ε (O(shifts) for the lower end).  A single round of a
        worst case over datasets, queried at up to 4 points, first refines its cover there
        (:class:`~pldshuffle.dominating.QueryRefinement`).  ``ε = inf`` gives the bracket on the composed
        mass at +∞ (:meth:`_at_infinity`), the limit of δ(ε).
        """
        eps = np.atleast_1d(check_epsilons(epsilon, allow_inf=True)).astype(np.float64)
        return infinity_apart(eps, self._at_infinity, self._finite_delta_bounds)

    def _finite_delta_bounds(self, eps: NDArray[np.float64]) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
        refiner = self._refiner()
        if refiner is not None and eps.size <= _REFINED_POINTS:
            for e in eps:
                # Split until the upper δ at ε is at most the realisable δ a little to its left (an ε gap).
                left = np.array([max(float(e) - _refined_epsilon_gap(float(e)), 0.0)])
                realisable = float(_exact_lower(refiner.lower_pairs, left)[0])
                refiner.refine(float(e), threshold=realisable + refiner.booked)  # upper ends carry the booked mass
        return self._lower(eps), self._upper(eps)

    def epsilon_bounds(self, delta: float) -> tuple[float, float]:
        """Certified ``(lower, upper)`` on the smallest ε with δ(ε) ≤ ``delta`` (bisection on the same object)."""
        delta = check_delta(delta)
        if self._single_exact("upper") is None:
            return invert(self._lower, delta, upper=False), min(invert(self._upper, delta, upper=True), self.loss_cap)
        # One round on exact pairs: bracket the costly exact curves by the lattice ones, and read only the
        # pairs that can matter (_single_lower_epsilon, _single_upper_epsilon).
        lattice = invert(self._lattice_upper, delta, upper=True)
        lower = self._single_lower_epsilon(delta, lattice)
        refiner = self._refiner()

        def upper_end() -> float:
            return min(self._single_upper_epsilon(delta, lower, lattice), self.loss_cap)

        if refiner is None or not 0.0 < lower < math.inf:
            return lower, upper_end()
        target, gap = relative_target(1), math.nan
        for done in range(1, _QUERY_REFINES + 1):
            # Split the cells that keep ε slightly above the lower end from being certified; again while the
            # bracket misses the one-round target, splits are still made and the passes left would reach the
            # target if the gap kept shrinking as in the last pass (where ε is small its relative gap is most
            # sensitive to δ's: 2RR n = 75576, ε0 = 0.186, δ = 1e-4: 1.9e-4 after one pass, 1.0e-4 after two).
            splits = refiner.refine(lower + _refined_epsilon_gap(lower), threshold=delta)
            lower = self._single_lower_epsilon(delta, lattice)  # datasets revealed by the splits may raise it
            upper = upper_end()
            previous, gap = gap, (upper - lower) / upper
            shrinking = min(gap / previous, 1.0) if done > 1 else 0.0  # the first pass always may go on
            if (splits == 0 or gap <= target or upper - lower <= _QUERY_ABSOLUTE_GAP or not refiner.has_room()
                    or gap * shrinking ** (_QUERY_REFINES - done) > target):
                break
        return lower, upper

    def _single_lower_epsilon(self, delta: float, probe: float) -> float:
        """Lower end of ε for one round: any subset of the realisable pairs gives a lower bound, so only the
        ``_LOWER_PAIRS`` largest at the lattice curves' answers (``probe`` is the upper one) are inverted,
        then the largest at that answer."""
        lattice_lower = lambda eps: np.max([c.lower(eps) for c in self._composites("lower")], axis=0)  # noqa: E731
        every = list(self._exact_pairs("lower"))
        if len(every) <= _LOWER_PAIRS or not math.isfinite(probe):
            return invert(lambda eps: np.maximum(lattice_lower(eps), _exact_lower(every, eps)), delta, upper=False)
        # The largest at the lattice curves' two answers, then at the answer they give (the binding pair is
        # among the largest at the answer).
        lower, probes = 0.0, [invert(lattice_lower, delta, upper=False), probe]
        for _ in range(2):
            at = np.array([p.delta_bounds(np.array(probes), cache=False)[0] for p in every])
            keep = sorted({int(i) for column in at.T for i in np.argsort(column)[::-1][:_LOWER_PAIRS]})
            pairs = [every[i] for i in keep]
            curve = lambda eps: np.maximum(lattice_lower(eps), _exact_lower(pairs, eps))  # noqa: E731
            lower = max(lower, invert(curve, delta, upper=False))
            probes = [lower]
        return lower

    def _single_upper_epsilon(self, delta: float, lower: float, lattice: float) -> float:
        """Upper end of ε for one round: the smallest ε in ``[lower, lattice]`` where the lattice curve or
        every kept pair is at most ``delta``.  Pairs already at most ``delta`` at ``lower`` are left out of
        the bisection and checked at its answer (bounds need not be monotone to the last bit); any that
        exceed ``delta`` there join and the bisection is repeated.  Reading a refined cover's pairs takes
        seconds at 10^7 users: the bisection reports (:func:`~pldshuffle._reporting.throttled_reporter`)."""
        if not (math.isfinite(lower) and math.isfinite(lattice) and lower < lattice):
            return invert(self._upper, delta, upper=True)
        pairs = list(self._exact_pairs("upper"))
        say = throttled_reporter()
        say(lambda: f"one round on exact pairs: bounding ε on {len(pairs)} pairs of the cover")
        # One coarse pass narrows the bracket to a 32nd, and the pairs to those above δ at its left end (the
        # others stay at most δ beyond it; the check at the answer below still reads them): a refined cover
        # keeps hundreds of pairs above δ at the lower end, each read per bisection step.
        grid = np.linspace(lower, lattice, 33)
        values = np.array([p.delta_upper(grid) for p in pairs])
        passing = np.flatnonzero(np.minimum(self._lattice_upper(grid), values.max(axis=0)) <= delta)
        k = int(passing[0]) if passing.size else 0  # the first grid point that passes
        bracket = (float(grid[k - 1]), float(grid[k])) if k > 0 else (lower, lattice)
        active = [p for p, v in zip(pairs, values[:, max(k, 1) - 1]) if v > delta]
        while True:
            def curve(eps: NDArray[np.float64]) -> NDArray[np.float64]:
                say(lambda: f"one round on exact pairs: bisection for ε over {len(active)} pairs")
                exact = _exact_upper(active, eps) if active else np.zeros(eps.shape)
                return np.minimum(self._lattice_upper(eps), exact)

            upper = invert(curve, delta, upper=True, bracket=bracket)
            if upper == bracket[1] == lattice:  # the lattice curve's own answer: no pair is involved
                return upper
            rest = [p for p in pairs if all(p is not q for q in active)]
            late = [p for p, v in zip(rest, _exact_upper_each(rest, upper)) if v > delta]
            if not late:
                return upper
            active += late

    @property
    def infinity_mass(self) -> tuple[float, float]:
        """Certified ``(lower, upper)`` on the composed mass at ``+∞`` (ε is ∞ below it)."""
        ups = self._composites("upper")
        lows = self._composites("lower")
        return max(c.infinity for c in lows), max(c.infinity for c in ups)

    def _at_infinity(self) -> tuple[float, float]:
        """``(lower, upper)`` on δ(∞), the composed mass at +∞, read as the finite-ε queries are (a single
        round also from its exact pairs; 0 above the loss cap), so δ stays non-increasing up to ε = inf."""
        lower, upper = self.infinity_mass
        at = np.array([np.inf])
        if (exact := self._single_exact("upper")) is not None:
            upper = min(upper, float(exact(at)[0]))
        if (exact := self._single_exact("lower")) is not None:
            lower = max(lower, float(exact(at)[0]))
        return lower, (0.0 if math.isfinite(self.loss_cap) else upper)

    def to_dp_accounting(self) -> Any:
        """This object as a dominating dp-accounting ``PrivacyLossDistribution`` (see
        :func:`pldshuffle.interop.certified_to_dp_accounting`)."""
        from .interop import certified_to_dp_accounting

        return certified_to_dp_accounting(self)

    def diagnostics(self) -> dict[str, Any]:
        """Lattice, tilts, window sizes and the largest error terms, for reports."""
        ups = self._composites("upper")
        reals = [r for c in ups + self._composites("lower") for r in c.realizations]
        return {
            "value_discretization_interval": self.spacing,
            "rounds": self.rounds,
            "tilts": sorted({r.theta for r in reals}),
            "grid_size": max((r.size for r in reals), default=0),
            "fft_rounding_error": max((r.fp_error for r in reals), default=0.0),
            "wrap_around": max((r.folded_tilted for r in reals), default=0.0),
            "upper_infinity_mass": max(c.infinity for c in ups),
            "fft_backend": "+".join(sorted({get_backend(self.fft_backend, r.size).name for r in reals})) or "none",
            "lower_witnesses": max(len(t.lower) for t in self.terms),
            "loss_cap": self.loss_cap,
        }

    # ------------------------------------------------------------------ machinery
    def _lattice_upper(self, eps: NDArray[np.float64]) -> NDArray[np.float64]:
        return np.max([c.upper(eps) for c in self._composites("upper")], axis=0)

    def _upper(self, eps: NDArray[np.float64]) -> NDArray[np.float64]:
        exact = self._single_exact("upper")
        values = self._lattice_upper(eps)
        values = values if exact is None else np.minimum(values, exact(eps))
        return np.where(eps >= self.loss_cap, 0.0, values)  # no composed loss exceeds the cap

    def _lower(self, eps: NDArray[np.float64]) -> NDArray[np.float64]:
        exact = self._single_exact("lower")
        values = np.max([c.lower(eps) for c in self._composites("lower")], axis=0)
        return values if exact is None else np.maximum(values, exact(eps))

    def _exact_pairs(self, part: str) -> tuple[PrivacyLossPair, ...]:
        """The exact pairs of a single round (``()`` unless the ledger is one round of one term)."""
        if len(self.terms) != 1 or self.terms[0].count != 1 or self.terms[0].lower_count != 1:
            return ()
        term = self.terms[0]
        if term.refiner is not None:
            return term.refiner.upper_pairs if part == "upper" else term.refiner.lower_pairs
        return term.exact_upper if part == "upper" else term.exact_lower

    def _single_exact(self, part: str):
        """The exact pairs' curve of ``part`` (upper: the max of their upper δ; lower: of their lower δ)."""
        pairs = self._exact_pairs(part)
        if not pairs:
            return None
        return (lambda eps: _exact_upper(pairs, eps)) if part == "upper" else (lambda eps: _exact_lower(pairs, eps))

    def _refiner(self) -> Any:
        """The single round's query refinement, when the ledger is one round answered on exact pairs."""
        if self._single_exact("upper") is None:
            return None
        return self.terms[0].refiner

    def _composites(self, part: str) -> list[Any]:
        if "upper" not in self._cache and "lower" not in self._cache:
            self.check_budget()
        if part not in self._cache:
            self._cache[part] = self._realize_upper() if part == "upper" else self._realize_lower()
        return self._cache[part]

    @property
    def _orders(self) -> int:
        """Orders of the directions composed: one for a symmetric ledger, else both."""
        return 1 if self.symmetric else 2

    def _combinations(self, part: str) -> list[list[tuple[LatticeDirection, int]]]:
        """Direction choices: all terms forward, or all backward; lower: witness ``w`` of every term."""
        width = self._orders
        if part == "upper":
            return [[(t.upper[min(d, len(t.upper) - 1)], t.count) for t in self.terms] for d in range(width)]
        if "lower-combinations" in self._cache:
            return self._cache["lower-combinations"]
        witnesses = max(len(t.lower) for t in self.terms)
        choices = [tuple(min(w, len(t.lower) - 1) for t in self.terms) for w in range(witnesses)]
        if len(self.terms) > 1:
            # The witnesses of different entries are listed each in its own order (the first attains the
            # envelope at ε = 0), so the same index pairs unrelated datasets.  Also pair, at each tilt of the
            # upper end, every entry's witness whose log-MGF there is largest (the heaviest tail at that
            # saddle point): three rounds of 2RR at n = 30, 5000, 5000, δ = 1e-10: lower end 11.186 → 11.421.
            for d in range(width):
                for theta in self._tilts("upper", d)[1:]:
                    choice = tuple(int(np.argmax([tail_score(wit[min(d, len(wit) - 1)], self.spacing, theta) for wit in t.lower])) for t in self.terms)
                    if choice not in choices:
                        choices.append(choice)
        combos = []
        for choice in choices:
            for d in range(width):
                combo = []
                for t, w in zip(self.terms, choice):
                    wit = t.lower[w]
                    combo.append((wit[min(d, len(wit) - 1)].for_rounds(t.lower_count), t.lower_count))
                combos.append(combo)
        if len(self.terms) == 1 and self.terms[0].count == 1 and self.terms[0].adaptive_lower is not None:
            # One block, the whole ledger: its adaptive lower profile is attained at each ε by a strategy of
            # its own (a maximum over strategies, not one pair), so it is read directly and never composed.
            combos.append([(self.terms[0].adaptive_lower, 1)])
        self._cache["lower-combinations"] = combos
        return combos

    def _tilts(self, part: str, index: int) -> list[float]:
        """θ = 0 and the saddle points of combination ``index`` of ``part`` (:func:`_choose_tilts`, cached)."""
        key = f"tilts-{part}-{index}"
        if key not in self._cache:
            self._cache[key] = _choose_tilts(self._combinations(part)[index], self.spacing)
        return self._cache[key]

    def _realize_upper(self) -> list[Composite]:
        return [self._composite(combo, upper=True, index=i) for i, combo in enumerate(self._combinations("upper"))]

    def _realize_lower(self) -> list[Composite | ProductLower]:
        composites: list[Composite | ProductLower] = [self._composite(combo, upper=False, index=i) for i, combo in enumerate(self._combinations("lower"))]
        products = self._product_lowers()
        lowers = composites + [p for *_, p in products]
        return lowers + self._strategy_lowers(products, lowers)

    def _strategy_lowers(self, products: list[tuple[int, int, ProductLower]], lowers: list[Any]) -> list[Composite]:
        """Where the ledger holds other entries besides terms with strategy witnesses (blocks of a worst case
        over datasets: :attr:`~pldshuffle.lattice.Term.strategies`), those witnesses composed with the other
        entries' first witnesses, in each order.  A strategy looks only at its own block's outputs, so it is
        realisable in any order of the rounds and composes like a fixed pair.  At the ledger's upper ε(δ)
        for each δ of ``_STRATEGY_DELTAS``, a block's strategy aims at the budget where its product lower
        end (``products``, by term index and order) is largest, and (a second composition) at the ledger's
        ε less the other entries' mean witness losses; neither is best everywhere.  Levels where the other
        ``lowers`` already leave a gap of at most half the default target (:func:`relative_target`)
        are skipped (64 rounds of 2RR beside 1e4 rounds of clones: 0.46 ‰ at δ = 1e-2; the witnesses would
        add 2.9 s to 16.6 s and gain nothing).  Optional: a composition that would pass the memory cap is
        left out."""
        if len(self.terms) < 2 or all(t.strategies is None for t in self.terms):
            return []
        aims = {(i, d): p for i, d, p in products}
        # The ledger's upper ε at each level, where the others' lower ends already leave a gap worth closing.
        aimed = {}
        for delta in _STRATEGY_DELTAS:
            epsilon = invert(self._lattice_upper, delta, upper=True)
            reached = invert(lambda e: np.max([c.lower(e) for c in lowers], axis=0), delta, upper=False)
            if math.isfinite(epsilon) and epsilon - reached > 0.5 * relative_target(self.rounds) * epsilon:
                aimed[delta] = epsilon
        found: list[Composite] = []
        seen: set[tuple[int, ...]] = set()
        for d in range(self._orders):
            fixed = [t.lower[0][min(d, len(t.lower[0]) - 1)].for_rounds(t.lower_count) for t in self.terms]
            means = [t.lower_count * _mean_loss(w, self.spacing) for t, w in zip(self.terms, fixed)]
            for epsilon in aimed.values():
                for by_product in (True, False):
                    combo = []
                    for i, (t, w, mean) in enumerate(zip(self.terms, fixed, means)):
                        if t.strategies is None:
                            combo.append((w, t.lower_count))
                            continue
                        product = aims.get((i, d)) if by_product else None
                        budget = product.aim(epsilon) if product is not None else math.nan
                        if not math.isfinite(budget):
                            budget = epsilon - (math.fsum(means) - mean)
                        # Each of the block's t.count repetitions aims at its share of the budget.
                        combo.append((t.strategies.measure(budget / t.count), t.count))
                    key = tuple(id(m) for m, _ in combo)
                    if key in seen or any(m is None for m, _ in combo):  # built already, or over the work cap
                        continue
                    seen.add(key)
                    try:
                        found.append(self._composite(combo, upper=False, plan=self._plan(combo, "lower", _choose_tilts(combo, self.spacing))))
                    except MemoryBudgetError:  # an optional lower end: the others stand without it
                        continue
        return found

    def _product_lowers(self) -> list[tuple[int, int, ProductLower]]:
        """Where the ledger holds other entries besides a term with an adaptive lower measure (one block of a
        worst case over datasets), that measure against the other entries' first witnesses, rounded down and
        composed, in each order (:class:`~pldshuffle.lattice.ProductLower`): the witnesses' composition alone
        gives up the block's adaptive gain (2RR n = 30, ε0 = 3.37, 16 rounds and one round of a negligible
        mechanism, δ = 1e-2: gap 0.24 ‰ alone, 7.3 ‰ with it).  Each comes with its term's index and order."""
        if len(self.terms) < 2:
            return []
        products = []
        for i, term in enumerate(self.terms):
            if term.adaptive_lower is None or term.count != 1:
                continue
            measure = term.adaptive_lower
            strategy = Composite((direct_realization(measure.factor(1), self.spacing),), compose_infinity([(measure, 1)], upper=False),
                                 MASS_RTOL, loss_shift=_loss_shift([(measure, 1)]))
            for d in range(self._orders):
                combo = []
                for other in self.terms[:i] + self.terms[i + 1 :]:
                    witness = other.lower[0][min(d, len(other.lower[0]) - 1)]
                    if witness.alternative is None:  # only the rounded-down measure bounds the tail masses
                        break
                    combo.append((witness.alternative, other.lower_count or other.count))
                else:
                    try:
                        products.append((i, d, self._product_lower(strategy, combo)))
                    except MemoryBudgetError:  # an optional lower end: the witnesses' composition stands alone
                        continue
        return products

    def _product_lower(self, strategy: Composite, combo: list[tuple[LatticeDirection, int]]) -> ProductLower:
        """``strategy`` against the rounded-down witnesses ``combo`` composed (θ = 0 only: the product reads
        their tail masses, not tilted profiles)."""
        rounds = sum(n for _, n in combo)
        relative = (1.0 + MASS_RTOL) ** rounds - 1.0
        infinity = compose_infinity(combo, upper=False)
        # Each rounded-down mass sits at most a step and the loss error above the exact losses it stands for.
        shift = math.fsum(n * (self.spacing + d.loss_error) for d, n in combo) * (1.0 + 4.0 * _U * (len(combo) + 1))
        if any(d.finite_mass <= 0.0 for d, _ in combo):
            return ProductLower(strategy, None, infinity, relative, shift)
        # On a lattice coarse enough for a window of _PRODUCT_POINTS: rounding further down keeps every mass
        # above the exact losses it stands for (the shift stays), and where the others' losses spread over
        # more points than that the product gains little anyway (1e4 rounds of clones beside 64 of 2RR:
        # nothing, for 5.5 s on the ledger's own lattice).
        lo, hi = window([d.factor(n) for d, n in combo], self.spacing, 0.0, TAIL_TOLERANCE)
        coarsening = max(1, math.ceil((hi - lo) / self.spacing / _PRODUCT_POINTS))
        spacing = self.spacing * coarsening
        factors = [_rounded_down(d, coarsening).factor(n) for d, n in combo]
        if rounds == 1:
            return ProductLower(strategy, direct_realization(factors[0], spacing), infinity, relative, shift)
        if coarsening > 1:
            lo, hi = window(factors, spacing, 0.0, TAIL_TOLERANCE)
        lo_index = int(math.floor(lo / spacing)) - 1
        size = fast_size(int(math.ceil(hi / spacing)) + 2 - lo_index)
        return ProductLower(strategy, self._realize_window(factors, 0.0, lo_index, size, spacing), infinity, relative, shift)

    def dominating_measures(self) -> list[LatticeDirection]:
        """The composed upper measures (one per order) as lattice measures with every error folded in.

        The round-off bound is added to every mass (from the tilt that makes it smallest there), the mass
        missing below the window is placed at its lowest point and the mass above it at ``+∞``: each
        profile dominates the composition's at every x.
        """
        return [c.dominating_measure(self.spacing) for c in self._composites("upper")]

    def _windows(self, part: str) -> list[tuple[NDArray[np.float64], NDArray[np.float64], list[tuple[float, int, int]]]]:
        """Per combination of ``part``: certified shifts, their penalties and the ``(θ, first index, size)`` of
        each realisation window (none when the finite part is empty or there is one round: no FFT)."""
        key = f"windows-{part}"
        if key in self._cache:
            return self._cache[key]
        # Every combination is realised at its own saddle points: one order's tail can be far heavier than the
        # other's (2RR n = 105, ε0 = 5.4, the dataset m = 104, 64 rounds: its backward direction reaches
        # δ = 1e-10 near the loss cap, where frames tilted for the forward one left ε ≤ 327.90 against 326.88
        # below; 327.00 with its own), and a witness's than the upper combination's (2RR n = 3000, ε0 = 8,
        # 200 rounds: m = 0 reaches δ = 1e-12 at ε = 950, where shared tilts' windows had ended; the lower
        # end was 894.5).
        plans = [self._plan(combo, part, self._tilts(part, index)) for index, combo in enumerate(self._combinations(part))]
        self._cache[key] = plans
        return plans

    def _plan(self, combo: list[tuple[LatticeDirection, int]], part: str, tilts: list[float]) -> tuple[NDArray[np.float64], NDArray[np.float64], list[tuple[float, int, int]]]:
        """Certified shifts, their penalties and the ``(θ, first index, size)`` of each realisation window of
        one combination (no window when its finite part is empty or it has one round: no FFT)."""
        shifts, penalties = np.zeros(1), np.zeros(1)
        if part == "lower" and all(d.finite_mass > 0.0 for d, _ in combo):
            shifts, penalties = shift_certificate(combo, self.spacing)
        windows = []
        if all(d.finite_mass > 0.0 for d, _ in combo) and sum(n for _, n in combo) > 1:
            factors = [d.factor(n) for d, n in combo]
            for theta in tilts:
                # Not widened down to ε = 0: below its start a window's upper values add the mass it misses
                # there (Realization.bottom_mass, ≤ TAIL_TOLERANCE at θ = 0), where a window from 0 held a
                # million rounds' mean loss in lattice points (2RR n = 1000, ε0 = 8, 1e6 rounds: ε ≈ 5.5e6,
                # coarsened to Δ ≈ 1 to fit; gap 9 %).
                lo, hi = window(factors, self.spacing, theta, TAIL_TOLERANCE)
                lo_index = int(math.floor(lo / self.spacing)) - 1
                windows.append((theta, lo_index, fast_size(int(math.ceil(hi / self.spacing)) + 2 - lo_index)))
        return shifts, penalties, windows

    def check_budget(self) -> None:
        """Refuse, before realising anything, a composition whose windows together exceed the memory cap."""
        sizes = [size for part in ("upper", "lower") for *_, windows in self._windows(part) for _, _, size in windows]
        if sizes:
            plans = PLAN_BYTES_PER_POINT * sum(n for n in set(sizes) if get_backend(self.fft_backend, n).name == "pyfftw")
            _check_memory(max(sizes), self.max_memory_bytes, self.spacing, self._terms_bytes() + BYTES_PER_POINT * sum(sizes) + plans)

    def _terms_bytes(self) -> int:
        """Bytes of the terms' own lattice measures (upper, witnesses, adaptive lower ends): held while the
        windows are realised, so they count against ``max_memory_bytes`` too (a 2RR block of 4 rounds beside
        a randomizer's round held 30 MB, which took the peak to 834 MB under a 512 MiB cap)."""
        directions = [d for t in self.terms for d in t.upper]
        directions += [d for t in self.terms for witness in t.lower for d in witness]
        directions += [t.adaptive_lower for t in self.terms if t.adaptive_lower is not None]
        return sum(d.masses.nbytes for d in directions)

    def _composite(self, combo: list[tuple[LatticeDirection, int]], *, upper: bool, index: int = -1, plan: tuple | None = None) -> Composite:
        """Combination ``index`` of its part realised, or ``combo`` with its own ``plan`` (:meth:`_plan`)."""
        rounds = sum(n for _, n in combo)
        relative = (1.0 + MASS_RTOL) ** rounds - 1.0
        infinity = compose_infinity(combo, upper=upper)
        if any(d.finite_mass <= 0.0 for d, _ in combo):  # the finite part of the composition is empty
            return Composite((), infinity, relative)
        factors = [d.factor(n) for d, n in combo]
        shifts, penalties, windows = plan if plan is not None else self._windows("upper" if upper else "lower")[index]
        loss_shift = 0.0 if upper else _loss_shift(combo)
        if rounds == 1:  # nothing to compose: the lattice measure itself, no FFT, no round-off
            return Composite((direct_realization(factors[0], self.spacing),), infinity, relative, shifts, penalties, loss_shift=loss_shift)
        reals = [self._realize_window(factors, theta, lo_index, size) for theta, lo_index, size in windows]
        return Composite(tuple(reals), infinity, relative, shifts, penalties, loss_shift=loss_shift)

    def _realize_window(self, factors: list, theta: float, lo_index: int, size: int, spacing: float | None = None) -> Realization:
        """:func:`~pldshuffle.composition.realize` within the memory cap (checked before allocating), on the
        ledger's lattice or a coarser ``spacing``."""
        spacing = self.spacing if spacing is None else spacing
        backend = get_backend(self.fft_backend, size)
        sizes = self._cache.setdefault("sizes", set())
        # Every new window size adds a pair of cached FFTW plans with their buffers.
        if "bytes" not in self._cache:  # the terms are held from the first window on
            self._cache["bytes"] = self._terms_bytes()
        held = self._cache["bytes"] + (PLAN_BYTES_PER_POINT * size if backend.name == "pyfftw" and size not in sizes else 0)
        _check_memory(size, self.max_memory_bytes, spacing, held)
        throttled_reporter()(lambda: f"composition: realising a window of {size:,} points (tilt θ = {theta:.3g})")
        real = realize(factors, spacing, theta, lo_index, size, backend)
        self._cache["bytes"] = held + size * BYTES_PER_POINT
        sizes.add(size)
        return real


def relative_target(rounds: int) -> float:
    """Default certified relative ε gap: 1e-4 for one round, 1e-3 up to ``SHORT_LEDGER`` rounds, 2e-3 beyond."""
    if rounds == 1:
        return 1e-4
    return 1e-3 if rounds <= SHORT_LEDGER else 2e-3


def _mean_loss(direction: LatticeDirection, spacing: float) -> float:
    """Mean finite loss of one round of a lattice measure (0 without finite mass)."""
    return moments((direction.start + np.arange(direction.masses.size, dtype=np.float64)) * spacing, direction.masses)[0]


def _loss_shift(combo: list[tuple[LatticeDirection, int]]) -> float:
    """How much further right a lower composition of ``combo`` is read: its witnesses' losses may exceed
    the exact ones by their loss error, every round (the sum rounded up)."""
    return math.fsum(n * d.loss_error for d, n in combo) * (1.0 + 4.0 * _U * len(combo))


def _rounded_down(direction: LatticeDirection, coarsening: int) -> LatticeDirection:
    """``direction``'s finite masses moved down to a lattice ``coarsening`` times coarser (sums rounded
    down: at most its masses); O(support)."""
    if coarsening == 1:
        return direction
    first = direction.start // coarsening
    index = (direction.start + np.arange(direction.masses.size)) // coarsening - first
    masses = np.bincount(index, weights=direction.masses) * (1.0 - 2.0 * _U * (coarsening + 1))
    return LatticeDirection(first, masses, direction.infinity)


def check_lattice_span(points: float, budget: float, spacing: float) -> None:
    """Refuse, before discretising anything, pairs whose single-round lattices (``points`` lattice points in
    all, ``LATTICE_BYTES_PER_POINT`` each) exceed the memory cap ``budget``: a lattice far finer than the
    pairs' loss range allocates that much before any composition is sized (kRR strong n = 100, ε0 = 0.01,
    Δ = 1e-6: 7.2e6 points, ~0.65 GiB at 96 bytes a point)."""
    needed = points * LATTICE_BYTES_PER_POINT
    if needed > budget:
        raise MemoryBudgetError(
            f"one round of the ledger's pairs needs {_points_and_bytes(points, needed)} at "
            f"value_discretization_interval={spacing:.3g}, above max_memory_bytes={budget:,.0f}; pass a larger "
            "value_discretization_interval or raise max_memory_bytes",
            needed,
            budget,
        )


def _points_and_bytes(points: float, needed: float, held: float = 0.0) -> str:
    """``"N lattice points (~G GiB)"`` for a refusal, with the bytes ``held`` beside them if any; past 1e15
    points (Δ = 1e-300, 2**200 rounds) in scientific notation rather than in hundreds of digits."""
    count = f"{points:,.0f}" if points < 1e15 else f"{points:.3g}"
    beside = f", {_bytes(held)} of it held by the ledger's terms" if held > 0 else ""
    return f"{count} lattice points (~{_bytes(needed)}{beside})"


def _bytes(size: float) -> str:
    """``size`` in GiB, or in MiB below one GiB (a small cap's refusal would read "~0.00 GiB")."""
    if size < 2**30:
        return f"{size / 2**20:.1f} MiB"
    return f"{size / 2**30:,.2f} GiB" if size < 1e15 * 2**30 else f"{size / 2**30:.3g} GiB"


def _check_memory(size: int, budget: int, spacing: float, held: int) -> None:
    needed = size * WORK_BYTES_PER_POINT + held
    if needed > budget:
        raise MemoryBudgetError(
            f"the composition needs a window of {_points_and_bytes(size, needed, held)} at "
            f"value_discretization_interval={spacing:.3g}, above max_memory_bytes={budget:,}; pass a larger "
            "value_discretization_interval or relative_gap_target, compose fewer rounds, or raise max_memory_bytes",
            needed,
            budget,
        )


def _choose_tilts(combo: list[tuple[LatticeDirection, int]], spacing: float) -> list[float]:
    """θ = 0 and the Chernoff saddle points of the δ levels in ``_TILT_DELTAS`` (and ``_LONG_TILT_DELTA`` for
    ledgers of more than ``_LONG_LEDGER`` rounds)."""
    factors = [d.factor(n) for d, n in combo if d.finite_mass > 0]
    if not factors or sum(n for _, n in combo) == 1:
        return [0.0]
    # Small losses need large θ (≈ 450 at ε ≈ 0.09, 7e5 at ε ≈ 5e-5); ~23 candidates per decade.
    thetas = np.geomspace(1e-2, CHERNOFF_LAMBDAS[-1], 208)
    log_m = composed_log_mgf(factors, spacing, thetas)
    long = sum(n for _, n in combo) > _LONG_LEDGER
    levels = ((_LONG_TILT_DELTA,) if long else ()) + _TILT_DELTAS
    return distinct_tilts(float(thetas[int(np.argmin((log_m - math.log(delta)) / thetas))]) for delta in levels)


def tail_score(direction: LatticeDirection, spacing: float, theta: float) -> float:
    """log E[e^{θL}; L < ∞] of one round of ``direction`` (−∞ without finite losses): how heavy its tail is
    near the saddle point θ, where the witness with the largest score is the one to compose."""
    if direction.finite_mass <= 0.0:
        return -math.inf
    return float(log_mgf(direction.factor(1), spacing, np.array([theta]), exact=True)[0])


def distinct_tilts(candidates: Iterable[float]) -> list[float]:
    """θ = 0 and each candidate (in order) above 1.4 times the last one kept: frames closer than that add
    FFTs without lowering the round-off bound much."""
    tilts = [0.0]
    for theta in candidates:
        if theta > 1.4 * tilts[-1]:
            tilts.append(float(theta))
    return tilts


def _refined_epsilon_gap(epsilon: float) -> float:
    """ε gap a single round's refinement aims at: 3e-5 relative at every ε (the one-round target is 1e-4).

    Relative even at small ε (large n, small ε0): the answer is read off the exact pairs, not the lattice,
    so nothing resolves it more coarsely; the split budget and ``max_memory_bytes`` bound the work."""
    return _REFINED_EPSILON_GAP * epsilon


def _exact_upper(pairs, eps: NDArray[np.float64]) -> NDArray[np.float64]:
    """Max over the pairs of their strict single-round upper δ at each ε: one sweep per pair, nothing kept
    (a refined cover holds hundreds of pairs; suffix sums would double their memory)."""
    return np.max([p.delta_upper(eps) for p in pairs], axis=0)


def _exact_lower(pairs, eps: NDArray[np.float64]) -> NDArray[np.float64]:
    """Max over the (few) realisable pairs of their strict single-round lower δ at each ε."""
    return np.max([p.delta_bounds(eps)[0] for p in pairs], axis=0)


def _exact_upper_each(pairs, epsilon: float) -> list[float]:
    """Each pair's strict upper δ at one ε (one sweep, nothing kept: every pair of a cover is read here)."""
    eps = np.array([epsilon])
    return [float(p.delta_upper(eps)[0]) for p in pairs]


def invert(delta_fn, delta: float, *, upper: bool, bracket: tuple[float, float] | None = None) -> float:
    """Smallest ε ≥ 0 with ``delta_fn(ε) ≤ delta``, strict in the stated direction.

    For an upper δ-curve the returned ε satisfies the inequality (a valid upper bound on ε); for a lower
    curve the returned ε is a point where the curve still exceeds δ (a valid lower bound on ε), or 0.
    The first passing point is searched on a geometric grid over [1e-6, 1e6], then over [1e6, 1e308]; each
    step then evaluates 33 points at once, shrinking the bracket 32-fold, down to a relative width 1e-12.
    ``bracket=(lo, hi)``, when ``delta_fn(hi) ≤ delta`` is known (e.g. a curve above it passes there), skips
    the initial search; the answer still only ever moves to points where ``delta_fn ≤ delta``.
    """

    def f(e: NDArray[np.float64]) -> NDArray[np.float64]:
        with np.errstate(over="ignore"):
            return np.asarray(delta_fn(np.asarray(e, dtype=np.float64)), dtype=np.float64)

    if bracket is not None and math.isfinite(bracket[1]) and 0.0 <= bracket[0] < bracket[1]:
        lo, hi = bracket
    else:
        if f(np.array([0.0]))[0] <= delta:
            return 0.0
        probes = np.geomspace(1e-6, 1e6, 97)
        passing = np.flatnonzero(f(probes) <= delta)
        if passing.size == 0:
            # Beyond 1e6 (e.g. a million rounds at ε0 = 3): probe on up to the largest doubles.  Above
            # them only the mass at +∞ is left, so no pass means ε = ∞ in both directions.
            far = np.geomspace(1e6, 1e308, 303)
            passing = np.flatnonzero(f(far) <= delta)
            if passing.size == 0:
                return math.inf
            probes = far
        k = int(passing[0])
        lo, hi = (0.0 if k == 0 else float(probes[k - 1])), float(probes[k])
    while hi - lo > 1e-12 * hi:
        grid = np.linspace(lo, hi, 33)
        ok = np.flatnonzero(f(grid[1:-1]) <= delta)
        if ok.size:
            hi = float(grid[ok[0] + 1])
            lo = float(grid[ok[0]]) if ok[0] > 0 else lo
        else:
            lo = float(grid[-2])
        if grid[1] in (lo, hi) and grid[-2] in (lo, hi):
            break
    return hi if upper else lo
