"""Lower ends of mixed ledgers: worst-case blocks beside other entries.

A ledger holding a worst case over datasets beside other entries gains lower ends that no single witness
combination gives (each a certified lower bound on its own, so the ledger's lower value, their maximum with
the witnesses', stays one):

* :func:`tail_choices`: every entry's witness whose log-MGF at each upper tilt is largest, composed
  together (the witnesses of different entries are listed each in its own order);
* :func:`product_lowers`: a block's adaptive lower measure against the other entries' rounded-down
  witnesses (:class:`~pldshuffle.pld.composites.ProductLower`);
* :func:`strategy_lowers`: a block's strategy witnesses (single realisable adaptive strategies) composed
  with the other entries' first witnesses.

Each is optional: one that would pass the memory cap is left out.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, cast

import numpy as np
from numpy.typing import NDArray

from .._kernels import UNIT_ROUNDOFF as _U
from ..pld.certified import Combination, LowerEnd, _loss_shift
from ..pld.composition import window
from ..pld.discretize import moments
from ..pld.distributions import MASS_RTOL
from ..pld.fft import fast_size
from ..pld.inversion import invert
from ..pld.composites import Composite, ProductLower, direct_realization
from ..pld.lattice import LatticeDirection, compose_infinity
from ..pld.sizing import TAIL_TOLERANCE, MemoryBudgetError, relative_target
from ..pld.tilts import choose_tilts, tail_score
from ..pld.lattice import Term
from .terms import WorstCaseTerm

if TYPE_CHECKING:  # pragma: no cover
    from .ledger import LedgerPLD
    from .witnesses import StrategyWitnesses

__all__ = ["product_lowers", "strategy_lowers", "tail_choices"]

#: The product lower end's window of the other entries' tail masses holds at most this many points
#: (:func:`product_lower`).
_PRODUCT_POINTS = 2**16
#: δ levels at whose upper ε a worst-case block's strategy witnesses aim (:func:`strategy_lowers`).
_STRATEGY_DELTAS = (1e-2, 1e-4, 1e-7)


def tail_choices(pld: LedgerPLD, choices: list[tuple[int, ...]]) -> list[tuple[int, ...]]:
    """Witness choices beyond ``choices``: the witnesses of different entries are listed each in its own
    order (the first attains the envelope at ε = 0), so the same index pairs unrelated datasets.  Also pair,
    at each tilt of the upper end, every entry's witness whose log-MGF there is largest (the heaviest tail at
    that saddle point): three rounds of 2RR at n = 30, 5000, 5000, δ = 1e-10: lower end 11.186 → 11.421."""
    extra: list[tuple[int, ...]] = []
    for d in range(pld._orders):
        for theta in pld._tilts("upper", d)[1:]:
            choice = tuple(int(np.argmax([tail_score(wit[min(d, len(wit) - 1)], pld.spacing, theta) for wit in t.lower])) for t in pld.terms)
            if choice not in choices and choice not in extra:
                extra.append(choice)
    return extra


def adaptive_combination(term: WorstCaseTerm) -> Combination:
    """One block, the whole ledger: its adaptive lower profile is attained at each ε by a strategy of its own
    (a maximum over strategies, not one pair), so it is read directly and never composed."""
    assert term.adaptive_lower is not None
    return [(term.adaptive_lower, 1)]


def strategy_lowers(pld: LedgerPLD, products: list[tuple[int, int, ProductLower]], lowers: list[LowerEnd]) -> list[Composite]:
    """Where the ledger holds other entries besides terms with strategy witnesses (blocks of a worst case
    over datasets: :attr:`~pldshuffle.worstcase.terms.WorstCaseTerm.strategies`), those witnesses composed with the other
    entries' first witnesses, in each order.  A strategy looks only at its own block's outputs, so it is
    realisable in any order of the rounds and composes like a fixed pair.  At the ledger's upper ε(δ)
    for each δ of ``_STRATEGY_DELTAS``, a block's strategy aims at the budget where its product lower
    end (``products``, by term index and order) is largest, and (a second composition) at the ledger's
    ε less the other entries' mean witness losses; neither is best everywhere.  Levels where the other
    ``lowers`` already leave a gap of at most half the default target (:func:`relative_target`)
    are skipped (64 rounds of 2RR beside 1e4 rounds of clones: 0.46 ‰ at δ = 1e-2; the witnesses would
    add 2.9 s to 16.6 s and gain nothing).  Optional: a composition that would pass the memory cap is
    left out."""
    if len(pld.terms) < 2 or all(_strategies(t) is None for t in pld.terms):
        return []
    aims = {(i, d): p for i, d, p in products}
    # The ledger's upper ε at each level, where the others' lower ends already leave a gap worth closing.
    aimed = {}
    for delta in _STRATEGY_DELTAS:
        epsilon = invert(pld._lattice_upper, delta, upper=True)
        reached = invert(lambda e: np.max([c.lower(e) for c in lowers], axis=0), delta, upper=False)
        if math.isfinite(epsilon) and epsilon - reached > 0.5 * relative_target(pld.rounds) * epsilon:
            aimed[delta] = epsilon
    found: list[Composite] = []
    seen: set[tuple[int, ...]] = set()
    for d in range(pld._orders):
        fixed = [t.lower[0][min(d, len(t.lower[0]) - 1)].for_rounds(t.lower_count) for t in pld.terms]
        means = [t.lower_count * _mean_loss(w, pld.spacing) for t, w in zip(pld.terms, fixed)]
        for epsilon in aimed.values():
            for by_product in (True, False):
                combo: list[tuple[LatticeDirection | None, int]] = []
                for i, (t, w, mean) in enumerate(zip(pld.terms, fixed, means)):
                    strategies = _strategies(t)
                    if strategies is None:
                        combo.append((w, t.lower_count))
                        continue
                    product = aims.get((i, d)) if by_product else None
                    budget = product.aim(epsilon) if product is not None else math.nan
                    if not math.isfinite(budget):
                        budget = epsilon - (math.fsum(means) - mean)
                    # Each of the block's t.count repetitions aims at its share of the budget.
                    combo.append((strategies.measure(budget / t.count), t.count))
                key = tuple(id(m) for m, _ in combo)
                if key in seen or any(m is None for m, _ in combo):  # built already, or over the work cap
                    continue
                seen.add(key)
                ready = cast(Combination, combo)  # no None left
                try:
                    # With its own plan a combination is composed whole (never a far-loss mixture).
                    found.append(cast(Composite, pld._composite(ready, upper=False, plan=pld._plan(ready, "lower", choose_tilts(ready, pld.spacing)))))
                except MemoryBudgetError:  # an optional lower end: the others stand without it
                    continue
    return found



def product_lowers(pld: LedgerPLD) -> list[tuple[int, int, ProductLower]]:
    """Where the ledger holds other entries besides a term with an adaptive lower measure (one block of a
    worst case over datasets), that measure against the other entries' first witnesses, rounded down and
    composed, in each order (:class:`~pldshuffle.pld.composites.ProductLower`): the witnesses' composition alone
    gives up the block's adaptive gain (2RR n = 30, ε0 = 3.37, 16 rounds and one round of a negligible
    mechanism, δ = 1e-2: gap 0.24 ‰ alone, 7.3 ‰ with it).  Each comes with its term's index and order."""
    if len(pld.terms) < 2:
        return []
    products = []
    for i, term in enumerate(pld.terms):
        if not isinstance(term, WorstCaseTerm) or term.adaptive_lower is None or term.count != 1:
            continue
        measure = term.adaptive_lower
        strategy = Composite((direct_realization(measure.factor(1), pld.spacing),), compose_infinity([(measure, 1)], upper=False),
                             MASS_RTOL, loss_shift=_loss_shift([(measure, 1)]))
        for d in range(pld._orders):
            combo = []
            for other in pld.terms[:i] + pld.terms[i + 1 :]:
                witness = other.lower[0][min(d, len(other.lower[0]) - 1)]
                if witness.alternative is None:  # only the rounded-down measure bounds the tail masses
                    break
                combo.append((witness.alternative, other.lower_count or other.count))
            else:
                try:
                    products.append((i, d, pld._product_lower(strategy, combo)))
                except MemoryBudgetError:  # an optional lower end: the witnesses' composition stands alone
                    continue
    return products



def product_lower(pld: LedgerPLD, strategy: Composite, combo: list[tuple[LatticeDirection, int]]) -> ProductLower:
    """``strategy`` against the rounded-down witnesses ``combo`` composed (θ = 0 only: the product reads
    their tail masses, not tilted profiles)."""
    rounds = sum(n for _, n in combo)
    relative = (1.0 + MASS_RTOL) ** rounds - 1.0
    infinity = compose_infinity(combo, upper=False)
    # Each rounded-down mass sits at most a step and the loss error above the exact losses it stands for.
    shift = math.fsum(n * (pld.spacing + d.loss_error) for d, n in combo) * (1.0 + 4.0 * _U * (len(combo) + 1))
    if any(d.finite_mass <= 0.0 for d, _ in combo):
        return ProductLower(strategy, None, infinity, relative, shift)
    # On a lattice coarse enough for a window of _PRODUCT_POINTS: rounding further down keeps every mass
    # above the exact losses it stands for (the shift stays), and where the others' losses spread over
    # more points than that the product gains little anyway (1e4 rounds of clones beside 64 of 2RR:
    # nothing, for 5.5 s on the ledger's own lattice).
    lo, hi = window([d.factor(n) for d, n in combo], pld.spacing, 0.0, TAIL_TOLERANCE)
    coarsening = max(1, math.ceil((hi - lo) / pld.spacing / _PRODUCT_POINTS))
    spacing = pld.spacing * coarsening
    factors = [_rounded_down(d, coarsening).factor(n) for d, n in combo]
    if rounds == 1:
        return ProductLower(strategy, direct_realization(factors[0], spacing), infinity, relative, shift)
    if coarsening > 1:
        lo, hi = window(factors, spacing, 0.0, TAIL_TOLERANCE)
    lo_index = int(math.floor(lo / spacing)) - 1
    size = fast_size(int(math.ceil(hi / spacing)) + 2 - lo_index)
    return ProductLower(strategy, pld._realize_window(factors, 0.0, lo_index, size, spacing), infinity, relative, shift)



def _mean_loss(direction: LatticeDirection, spacing: float) -> float:
    """Mean finite loss of one round of a lattice measure (0 without finite mass)."""
    return moments((direction.start + np.arange(direction.masses.size, dtype=np.float64)) * spacing, direction.masses)[0]




def _rounded_down(direction: LatticeDirection, coarsening: int) -> LatticeDirection:
    """``direction``'s finite masses moved down to a lattice ``coarsening`` times coarser (sums rounded
    down: at most its masses); O(support)."""
    if coarsening == 1:
        return direction
    first = direction.start // coarsening
    index = (direction.start + np.arange(direction.masses.size)) // coarsening - first
    masses = cast(NDArray[np.float64], np.bincount(index, weights=direction.masses) * (1.0 - 2.0 * _U * (coarsening + 1)))
    return LatticeDirection(first, masses, direction.infinity)


def _strategies(term: Term) -> StrategyWitnesses | None:
    """The term's strategy witnesses (only a worst-case block has them)."""
    return term.strategies if isinstance(term, WorstCaseTerm) else None
