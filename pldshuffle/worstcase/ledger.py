"""The accountant's ledger as a certified PLD: the core value plus the worst-case layer's lower ends and
single-round queries.

:class:`LedgerPLD` is a :class:`~pldshuffle.pld.certified.CertifiedPLD` (same algebra, same invariant)
whose terms may be :class:`~pldshuffle.worstcase.terms.WorstCaseTerm`.  It decides ONCE, from the shape of
its ledger, what the core cannot know:

* one round of one term with exact pairs: queries go through a
  :class:`~pldshuffle.worstcase.single_round.SingleRoundQuery` beside the PLD;
* one adaptive block that is the whole ledger: its adaptive lower measure is read directly;
* several entries: the mixed-ledger lower ends of :mod:`pldshuffle.worstcase.mixed`.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
from numpy.typing import NDArray

from .._validation import check_delta
from ..pld.certified import CertifiedPLD, Combination, LowerEnd
from ..pld.composites import Composite, ProductLower
from ..pld.lattice import LatticeDirection
from . import mixed
from .single_round import SingleRoundQuery
from .terms import WorstCaseTerm

if TYPE_CHECKING:  # pragma: no cover
    from dp_accounting.pld.privacy_loss_distribution import PrivacyLossDistribution

__all__ = ["LedgerPLD"]


@dataclass(frozen=True, eq=False)
class LedgerPLD(CertifiedPLD):
    """A ledger's certified PLD (see the module notes); built by :func:`pldshuffle._build.build_ledger`."""

    # ------------------------------------------------------------------ the ledger's shape, read once
    def _single_round(self) -> SingleRoundQuery | None:
        """The single-round query, when the ledger is one round of one term (cached)."""
        if "single-round" not in self._cache:
            term = self.terms[0]
            single = len(self.terms) == 1 and term.count == 1 and term.lower_count == 1
            self._cache["single-round"] = SingleRoundQuery(self, term) if single and isinstance(term, WorstCaseTerm) else None
        query = self._cache["single-round"]
        return query if isinstance(query, SingleRoundQuery) else None

    def _exact_curve(self, part: str) -> Callable[[NDArray[np.float64]], NDArray[np.float64]] | None:
        """The exact pairs' curve of ``part`` where the ledger is one round of one term (else None)."""
        query = self._single_round()
        return None if query is None else query.curve(part)

    # ------------------------------------------------------------------ queries
    def _finite_delta_bounds(self, eps: NDArray[np.float64]) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
        query = self._single_round()
        if query is not None:
            query.refine(eps)
        return self._lower(eps), self._upper(eps)

    def epsilon_bounds(self, delta: float) -> tuple[float, float]:
        query = self._single_round()
        if query is None or query.curve("upper") is None:
            return super().epsilon_bounds(delta)
        return query.epsilon_bounds(check_delta(delta))

    def _at_infinity(self) -> tuple[float, float]:
        """``(lower, upper)`` on δ(∞), read as the finite-ε queries are (a single round also from its exact
        pairs; 0 above the loss cap), so δ stays non-increasing up to ε = inf."""
        lower, upper = self.infinity_mass
        at = np.array([np.inf])
        if (exact := self._exact_curve("upper")) is not None:
            upper = min(upper, float(exact(at)[0]))
        if (exact := self._exact_curve("lower")) is not None:
            lower = max(lower, float(exact(at)[0]))
        return lower, (0.0 if math.isfinite(self.loss_cap) else upper)

    def _upper(self, eps: NDArray[np.float64]) -> NDArray[np.float64]:
        exact = self._exact_curve("upper")
        values = self._lattice_upper(eps)
        values = values if exact is None else np.minimum(values, exact(eps))
        return np.where(eps >= self.loss_cap, 0.0, values)  # no composed loss exceeds the cap

    def _lower(self, eps: NDArray[np.float64]) -> NDArray[np.float64]:
        exact = self._exact_curve("lower")
        values = super()._lower(eps)
        return values if exact is None else np.maximum(values, exact(eps))

    def to_dp_accounting(self) -> PrivacyLossDistribution:
        """This object as a dominating dp-accounting ``PrivacyLossDistribution`` (see
        :func:`pldshuffle.interop.certified_to_dp_accounting`)."""
        from ..interop import certified_to_dp_accounting

        return certified_to_dp_accounting(self)

    # ------------------------------------------------------------------ lower ends
    def _witness_choices(self) -> list[tuple[int, ...]]:
        choices = super()._witness_choices()
        return choices + (mixed.tail_choices(self, choices) if len(self.terms) > 1 else [])

    def _extra_lower_combinations(self) -> list[Combination]:
        extra = super()._extra_lower_combinations()
        term = self.terms[0]
        if len(self.terms) == 1 and term.count == 1 and isinstance(term, WorstCaseTerm) and term.adaptive_lower is not None:
            extra.append(mixed.adaptive_combination(term))
        return extra

    def _realize_lower(self) -> list[LowerEnd]:
        composites = super()._realize_lower()
        products = mixed.product_lowers(self)
        lowers: list[LowerEnd] = composites + [p for *_, p in products]
        return lowers + list(mixed.strategy_lowers(self, products, lowers))

    def _product_lower(self, strategy: Composite, combo: list[tuple[LatticeDirection, int]]) -> ProductLower:
        """``strategy`` against the rounded-down witnesses ``combo`` composed (:func:`~pldshuffle.worstcase.mixed.product_lower`)."""
        return mixed.product_lower(self, strategy, combo)
