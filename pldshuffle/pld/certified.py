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
  (``δ(ε) ≥ δ_down(ε - t) - P[D < t]``, ``D`` the summed offsets); see :mod:`pldshuffle.pld.discretize`.

Composition is lazy (``compose`` and ``self_compose`` only concatenate terms); the first query realises
the composition once per tilt (:mod:`pldshuffle.pld.composition`) and caches it, so every query of one
object reads the same numbers: ``delta_bounds(epsilon_bounds(δ).upper).upper ≤ δ`` by construction.
The upper value at ε is the minimum over tilts of certified upper values, the lower value the maximum
over tilts, witnesses and shifts of certified lower values; lower ≤ exact ≤ upper is a theorem, never
enforced by clipping one against the other.

The core knows nothing of where its terms come from.  Layers above it add lower ends through two hooks
(:meth:`CertifiedPLD._witness_choices`, :meth:`CertifiedPLD._extra_lower_combinations` and
:meth:`CertifiedPLD._realize_lower`): more witness combinations, or lower ends realised from the composed
object (``pldshuffle.worstcase.ledger.LedgerPLD``).  Any added lower end only raises the lower value, so
the invariant needs each to be a certified lower bound on its own.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import cast

import numpy as np
from numpy.typing import ArrayLike, NDArray

from .._validation import MAX_SPACING, check_delta, check_epsilons, check_positive_finite
from .distributions import MASS_RTOL, PrivacyLossPair, infinity_apart
from .fft import get_backend
from .inversion import invert
from .composites import Composite, ProductLower, direct_realization
from .composition import Factor, Realization
from .far_atoms import FarSplit, MixtureComposite, narrow_direction, split_combination
from .lattice import LatticeDirection, Term, compose_infinity, lower_direction, upper_direction
from .sizing import BYTES_PER_POINT, PLAN_BYTES_PER_POINT, TAIL_TOLERANCE, MemoryBudgetError, _check_memory
from .plans import Combination, Plan, loss_shift as _loss_shift, plan_windows, realize_window
from .tilts import choose_tilts

__all__ = ["CertifiedPLD", "MemoryBudgetError", "invert"]

LowerEnd = Composite | MixtureComposite | ProductLower


@dataclass(frozen=True, eq=False)
class CertifiedPLD:
    """A certified discrete privacy loss distribution (see the module notes for the invariant).

    For every ``ε ≥ 0``, ``delta_bounds(ε)`` returns ``(lower, upper)`` with
    ``lower ≤ δ_exact(ε) ≤ upper`` where ``δ_exact`` is the tight δ of the composed worst case (both
    orders of the neighbouring pair).  Build one with :meth:`pldshuffle.FourierAccountant.certified_pld`
    or :meth:`from_pair`; the accountant's ledgers are
    ``pldshuffle.worstcase.ledger.LedgerPLD``, which adds the worst-case layer's lower ends and single-round queries.

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
    lower_witnesses : tuple
        Extra lower combinations of the whole composition (:meth:`add_lower_witness`).
    """

    spacing: float
    terms: tuple[Term, ...]
    is_guarantee: bool = True
    caveats: tuple[str, ...] = ()
    fft_backend: str = "auto"
    max_memory_bytes: int = 2**31
    lower_witnesses: tuple[tuple[tuple[LatticeDirection, int], ...], ...] = ()
    _cache: dict[str, object] = field(default_factory=dict, repr=False, compare=False)

    # ------------------------------------------------------------------ algebra
    @classmethod
    def from_pair(cls, pair: PrivacyLossPair, spacing: float, *, fft_backend: str = "auto", max_memory_bytes: int = 2**31) -> CertifiedPLD:
        """One round of an exact pair, discretised on the lattice of the given spacing (O(support))."""
        if not isinstance(pair, PrivacyLossPair):
            raise TypeError(f"pair must be a PrivacyLossPair, got {type(pair).__name__}")
        spacing = check_positive_finite("spacing", spacing, MAX_SPACING)
        up = tuple(upper_direction(d.discretize(spacing)) for d in pair.directions)
        low = tuple(lower_direction(d.discretize(spacing)) for d in pair.directions)
        return cls(spacing, (Term(up, (low,), 1),), fft_backend=fft_backend, max_memory_bytes=max_memory_bytes)

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
            lower_witnesses=(),  # a witness of one part is not one of the composition
            _cache={},
        )

    def self_compose(self, count: int) -> CertifiedPLD:
        """``count``-fold composition with itself."""
        if isinstance(count, bool) or not isinstance(count, (int, np.integer)) or count < 1:
            raise ValueError(f"count must be an integer >= 1, got {count!r}")
        return replace(self, terms=tuple(t.scaled(int(count)) for t in self.terms), lower_witnesses=(), _cache={})

    def add_lower_witness(self, combination: Sequence[tuple[LatticeDirection, int]]) -> CertifiedPLD:
        """This composition with one more lower witness: ``combination``, lattice measures each composed the
        given number of times, read like the terms' own witnesses (max with the other lower ends).

        The caller proves that the composition of ``combination`` is dominated by the composed mechanism's
        worst case (e.g. it is a realisable pair of the whole ledger, or a post-processing of one): only then
        does the lower end stay a lower bound.  It can only raise the lower values.  Composing the result
        again drops the witness (it bounds this composition, not a longer one).  O(1); realised lazily.
        """
        combo = tuple((d, int(n)) for d, n in combination)
        if not combo or any(n < 1 for _, n in combo):
            raise ValueError(f"combination must hold at least one (measure, rounds >= 1), got {[n for _, n in combo]!r}")
        return replace(self, lower_witnesses=self.lower_witnesses + (combo,), _cache={})

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
        m lattice points); later ones cost O(1) per ε (O(shifts) for the lower end).  ``ε = inf`` gives the
        bracket on the composed mass at +∞ (:meth:`_at_infinity`), the limit of δ(ε).
        """
        eps = np.atleast_1d(check_epsilons(epsilon, allow_inf=True)).astype(np.float64)
        return infinity_apart(eps, self._at_infinity, self._finite_delta_bounds)

    def _finite_delta_bounds(self, eps: NDArray[np.float64]) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
        return self._lower(eps), self._upper(eps)

    def lower_delta(self, epsilon: ArrayLike) -> NDArray[np.float64]:
        """Certified lower δ at each finite ``ε ≥ 0`` as the object stands (a single round's cover is not
        refined: cheaper than :meth:`delta_bounds`, never higher).  O(1) per ε after the realisation."""
        return self._lower(np.atleast_1d(np.asarray(epsilon, dtype=np.float64)))

    def epsilon_bounds(self, delta: float) -> tuple[float, float]:
        """Certified ``(lower, upper)`` on the smallest ε with δ(ε) ≤ ``delta`` (bisection on the same object)."""
        delta = check_delta(delta)
        return invert(self._lower, delta, upper=False), min(invert(self._upper, delta, upper=True), self.loss_cap)

    @property
    def infinity_mass(self) -> tuple[float, float]:
        """Certified ``(lower, upper)`` on the composed mass at ``+∞`` (ε is ∞ below it)."""
        ups = self._composites("upper")
        lows = self._composites("lower")
        return max(c.infinity for c in lows), max(c.infinity for c in ups)


    def _at_infinity(self) -> tuple[float, float]:
        """``(lower, upper)`` on δ(∞), the composed mass at +∞ (0 above the loss cap), so δ stays
        non-increasing up to ε = inf."""
        lower, upper = self.infinity_mass
        return lower, (0.0 if math.isfinite(self.loss_cap) else upper)

    def diagnostics(self) -> dict[str, object]:
        """Lattice, tilts, window sizes and the largest error terms, for reports."""
        ups: list[LowerEnd] = list(self._upper_composites())
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
        return cast(NDArray[np.float64], np.max([c.upper(eps) for c in self._upper_composites()], axis=0))

    def _upper(self, eps: NDArray[np.float64]) -> NDArray[np.float64]:
        values = self._lattice_upper(eps)
        return np.where(eps >= self.loss_cap, 0.0, values)  # no composed loss exceeds the cap

    def _lower(self, eps: NDArray[np.float64]) -> NDArray[np.float64]:
        return cast(NDArray[np.float64], np.max([c.lower(eps) for c in self._composites("lower")], axis=0))

    def _composites(self, part: str) -> list[LowerEnd]:
        if "upper" not in self._cache and "lower" not in self._cache:
            self.check_budget()
        if part not in self._cache:
            self._cache[part] = self._realize_upper() if part == "upper" else self._realize_lower()
        return cast(list[LowerEnd], self._cache[part])

    def _upper_composites(self) -> list[Composite | MixtureComposite]:
        """The realised upper combinations (one per order)."""
        return cast(list[Composite | MixtureComposite], self._composites("upper"))

    @property
    def _orders(self) -> int:
        """Orders of the directions composed: one for a symmetric ledger, else both."""
        return 1 if self.symmetric else 2

    def _combinations(self, part: str) -> list[Combination]:
        """Direction choices: all terms forward, or all backward; lower: witness ``w`` of every term (for each
        choice of :meth:`_witness_choices`), then :meth:`_extra_lower_combinations`."""
        width = self._orders
        if part == "upper":
            return [[(t.upper[min(d, len(t.upper) - 1)], t.count) for t in self.terms] for d in range(width)]
        if "lower-combinations" in self._cache:
            return cast(list[Combination], self._cache["lower-combinations"])
        combos = []
        for choice in self._witness_choices():
            for d in range(width):
                combo = []
                for t, w in zip(self.terms, choice):
                    wit = t.lower[w]
                    combo.append((wit[min(d, len(wit) - 1)].for_rounds(t.lower_count), t.lower_count))
                combos.append(combo)
        combos += self._extra_lower_combinations()
        self._cache["lower-combinations"] = combos
        return combos

    def _witness_choices(self) -> list[tuple[int, ...]]:
        """Which witness of each term every lower combination composes: the ``w``-th of each (its last where
        it has fewer).  A hook: layers above add choices (each is a realisable composition)."""
        witnesses = max(len(t.lower) for t in self.terms)
        return [tuple(min(w, len(t.lower) - 1) for t in self.terms) for w in range(witnesses)]

    def _extra_lower_combinations(self) -> list[Combination]:
        """Lower combinations beyond the terms' witnesses: those added by :meth:`add_lower_witness` (a hook for
        layers above too).  Each must be a certified lower measure of the whole composition; they are sized
        and realised with the others."""
        return [list(combo) for combo in self.lower_witnesses]

    def _tilts(self, part: str, index: int) -> list[float]:
        """θ = 0 and the saddle points of combination ``index`` of ``part`` (:func:`~pldshuffle.pld.tilts.choose_tilts`, cached)."""
        key = f"tilts-{part}-{index}"
        if key not in self._cache:
            self._cache[key] = choose_tilts(self._combinations(part)[index], self.spacing)
        return cast(list[float], self._cache[key])

    def _realize_upper(self) -> list[LowerEnd]:
        return [self._composite(combo, upper=True, index=i) for i, combo in enumerate(self._combinations("upper"))]

    def _realize_lower(self) -> list[LowerEnd]:
        """The lower ends: each lower combination composed.  A hook: layers above append lower ends built
        from the realised object (each a certified lower bound on its own)."""
        return [self._composite(combo, upper=False, index=i) for i, combo in enumerate(self._combinations("lower"))]

    def dominating_measures(self) -> list[LatticeDirection]:
        """The composed upper measures (one per order) as lattice measures with every error folded in.

        The round-off bound is added to every mass (from the tilt that makes it smallest there), the mass
        missing below the window is placed at its lowest point and the mass above it at ``+∞``: each
        profile dominates the composition's at every x.
        """
        return [c.dominating_measure(self.spacing) for c in self._upper_composites()]

    def _windows(self, part: str) -> list[Plan]:
        """Per combination of ``part``: certified shifts, their penalties and the ``(θ, first index, size)`` of
        each realisation window (none when the finite part is empty or there is one round: no FFT)."""
        key = f"windows-{part}"
        if key in self._cache:
            return cast(list[Plan], self._cache[key])
        # Every combination is realised at its own saddle points: one order's tail can be far heavier than the
        # other's (2RR n = 105, ε0 = 5.4, the dataset m = 104, 64 rounds: its backward direction reaches
        # δ = 1e-10 near the loss cap, where frames tilted for the forward one left ε ≤ 327.90 against 326.88
        # below; 327.00 with its own), and a witness's than the upper combination's (2RR n = 3000, ε0 = 8,
        # 200 rounds: m = 0 reaches δ = 1e-12 at ε = 950, where shared tilts' windows had ended; the lower
        # end was 894.5).
        plans = [self._mixture_plan(combo, part) if self._far_split(combo) is not None else self._plan(combo, part, self._tilts(part, index))
                 for index, combo in enumerate(self._combinations(part))]
        self._cache[key] = plans
        return plans

    def _plan(self, combo: Combination, part: str, tilts: list[float]) -> Plan:
        """:func:`~pldshuffle.pld.plans.plan_windows` of one combination on this lattice."""
        return plan_windows(combo, self.spacing, part, tilts)

    def _far_split(self, combo: Combination) -> tuple[FarSplit, list[Combination]] | None:
        """The combination as a binomial mixture of narrow compositions where it has rare far losses
        (:mod:`pldshuffle.pld.far_atoms`), with each narrow composition's lattice measures; else None.  Cached."""
        key = f"far-{tuple((id(d), n) for d, n in combo)}"
        if key not in self._cache:
            split = None
            if all(d.finite_mass > 0.0 for d, _ in combo):
                split = split_combination([(d.start, d.masses, n) for d, n in combo], self.spacing, TAIL_TOLERANCE)
            found = None
            if split is not None:
                found = (split, [[(narrow_direction(combo[p.origin][0], p), p.count) for p in parts] for *_, parts in split.terms])
            self._cache[key] = found
        return cast("tuple[FarSplit, list[Combination]] | None", self._cache[key])

    def _mixture_plan(self, combo: Combination, part: str) -> Plan:
        """A split combination's plan: no shift, and the windows of all its narrow compositions (what the
        memory check counts)."""
        split = self._far_split(combo)
        assert split is not None
        windows = [w for narrow in split[1] for w in self._narrow_plan(narrow, part)[2]]
        return np.zeros(1), np.zeros(1), windows

    def _narrow_plan(self, narrow: Combination, part: str) -> Plan:
        """The plan of one narrow composition at its own saddle points (cached)."""
        key = f"far-plan-{part}-{tuple((id(d), n) for d, n in narrow)}"
        if key not in self._cache:
            self._cache[key] = self._plan(narrow, part, choose_tilts(narrow, self.spacing))
        return cast(Plan, self._cache[key])

    def _mixture(self, combo: Combination, *, upper: bool) -> MixtureComposite:
        """A split combination realised: each narrow composition on its own windows, weighted (rounded up for
        the upper end, down for the lower), the combination's mass at +∞ and, above, the left-out weight."""
        split = self._far_split(combo)
        assert split is not None
        far, narrows = split
        part = "upper" if upper else "lower"
        parts = tuple(
            (w_up if upper else w_low, cast(Composite, self._composite(narrow, upper=upper, plan=self._narrow_plan(narrow, part))))
            for (w_up, w_low, _), narrow in zip(far.terms, narrows)
        )
        return MixtureComposite(parts, compose_infinity(combo, upper=upper), far.booked if upper else 0.0)

    def check_budget(self) -> None:
        """Refuse, before realising anything, a composition whose windows together exceed the memory cap."""
        sizes = [size for part in ("upper", "lower") for *_, windows in self._windows(part) for _, _, size in windows]
        if sizes:
            plans = PLAN_BYTES_PER_POINT * sum(n for n in set(sizes) if get_backend(self.fft_backend, n).name == "pyfftw")
            _check_memory(max(sizes), self.max_memory_bytes, self.spacing, self._terms_bytes() + BYTES_PER_POINT * sum(sizes) + plans)

    def _terms_bytes(self) -> int:
        """Bytes of the terms' own lattice measures (:meth:`~pldshuffle.pld.lattice.Term.measures`): held while
        the windows are realised, so they count against ``max_memory_bytes`` too (a 2RR block of 4 rounds
        beside a randomizer's round held 30 MB, which took the peak to 834 MB under a 512 MiB cap)."""
        return sum(d.masses.nbytes for t in self.terms for d in t.measures())

    def _composite(self, combo: Combination, *, upper: bool, index: int = -1, plan: Plan | None = None) -> Composite | MixtureComposite:
        """Combination ``index`` of its part realised, or ``combo`` with its own ``plan`` (:meth:`_plan`); a
        combination with rare far losses as a mixture of narrow compositions (:meth:`_mixture`)."""
        if plan is None and self._far_split(combo) is not None:
            return self._mixture(combo, upper=upper)
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

    def _realize_window(self, factors: list[Factor], theta: float, lo_index: int, size: int, spacing: float | None = None) -> Realization:
        """:func:`~pldshuffle.pld.plans.realize_window` within this composition's memory cap, on the ledger's
        lattice or a coarser ``spacing``."""
        return realize_window(factors, theta, lo_index, size, self.spacing if spacing is None else spacing, fft_backend=self.fft_backend,
                              max_memory_bytes=self.max_memory_bytes, cache=self._cache, terms_bytes=self._terms_bytes)
