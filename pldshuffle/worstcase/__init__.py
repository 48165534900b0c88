"""The worst-case layer: pair families → terms of a :class:`~pldshuffle.pld.certified.CertifiedPLD`.

A mechanism whose guarantee is a maximum over datasets (a family of neighbouring pairs) is turned into
terms whose upper measures dominate every member and whose lower witnesses are realisable:

* :mod:`~pldshuffle.worstcase.strategy` -- the one place that chooses the strategy from (family, count,
  same_data): :func:`family_term`;
* :mod:`~pldshuffle.worstcase.envelope` -- one lattice measure dominating many pairs;
* :mod:`~pldshuffle.worstcase.cover` -- cells with branch and bound, refined at queried points;
* :mod:`~pldshuffle.worstcase.blocks`, :mod:`~pldshuffle.worstcase.recursion` -- adaptive blocks (the
  adaptive recursion) and their lengths; :mod:`~pldshuffle.worstcase.witnesses` -- their lower ends;
* :mod:`~pldshuffle.worstcase.same_data` -- several same-data blocks bounded together (the recursion over blocks);
* :mod:`~pldshuffle.worstcase.ledger` -- the accountant's ledger as a certified PLD, with the single-round
  queries (:mod:`~pldshuffle.worstcase.single_round`) and mixed-ledger lower ends (:mod:`~pldshuffle.worstcase.mixed`).
"""

from __future__ import annotations

from .ledger import LedgerPLD
from .strategy import family_term
from .terms import WorstCaseTerm
from .witnesses import MAX_WITNESSES

__all__ = ["LedgerPLD", "MAX_WITNESSES", "WorstCaseTerm", "family_term"]
