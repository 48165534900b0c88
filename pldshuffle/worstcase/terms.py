"""The worst-case layer's terms: a core :class:`~pldshuffle.pld.lattice.Term` plus what only this layer reads.

* ``exact_upper`` / ``exact_lower``: the exact (off-lattice) pairs, when known; a ledger of one round of one
  term is then answered on them directly (:class:`~pldshuffle.worstcase.single_round.SingleRoundQuery`).
* ``refiner``: for a single round of a family's cover, its exact pairs refined at queried points (in place
  of ``exact_upper``/``exact_lower``; :class:`~pldshuffle.worstcase.cover.QueryRefinement`).
* ``adaptive_lower``: a lower measure of one block of rounds: at each ε its profile is attained by some
  realisable adaptive strategy.  A maximum over strategies, not one pair, so it is only read when the block
  is the whole ledger (never composed).
* ``strategies``: lower witnesses of single realisable adaptive strategies over one block (each looks at the
  block's own outputs only), composable like fixed pairs beside other entries too
  (:class:`~pldshuffle.worstcase.witnesses.StrategyWitnesses`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..pld import PrivacyLossPair
from ..pld.lattice import LatticeDirection, Term

if TYPE_CHECKING:  # pragma: no cover
    from .cover import QueryRefinement
    from .witnesses import StrategyWitnesses

__all__ = ["WorstCaseTerm"]


@dataclass(frozen=True, eq=False)
class WorstCaseTerm(Term):
    """A :class:`~pldshuffle.pld.lattice.Term` with the worst-case layer's exact pairs and block witnesses
    (see the module notes)."""

    exact_upper: tuple[PrivacyLossPair, ...] = ()
    exact_lower: tuple[PrivacyLossPair, ...] = ()
    refiner: QueryRefinement | None = None
    adaptive_lower: LatticeDirection | None = None
    strategies: StrategyWitnesses | None = None

    def measures(self) -> list[LatticeDirection]:
        return super().measures() + ([self.adaptive_lower] if self.adaptive_lower is not None else [])
