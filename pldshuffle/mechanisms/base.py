"""The interface every shuffle mechanism implements.

A mechanism is a frozen, hashable dataclass that describes *what* is released; it knows nothing about
grids or FFTs.  It hands the accountant a :class:`PairFamily`: the neighbouring pairs whose worst case
(maximum of δ over the members, the same member in every round of this mechanism) is the quantity being
bounded.  ``upper`` members bound it from above, ``lower`` members from below; for an exact analysis
both tuples are the same.  When the exact worst case is out of reach a mechanism may put a proven
dominating pair in ``upper`` and specific dataset pairs (lower bounds) in ``lower``, and says so in
``caveats``.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass

from ..pld import PrivacyLossPair

__all__ = ["DEFAULT_TAIL_MASS", "PairFamily", "ShuffleMechanism"]

#: Default probability mass a mechanism may drop per truncated coordinate (booked at +inf for upper bounds).
DEFAULT_TAIL_MASS = 1e-18


@dataclass(frozen=True, eq=False)
class PairFamily:
    """Pairs bracketing a mechanism's worst case.

    Attributes
    ----------
    upper : tuple of PrivacyLossPair
        The worst case is at most the maximum over these members (after composition).
    lower : tuple of PrivacyLossPair
        The worst case is at least the δ of any of these members (each is a realisable dataset pair).
    is_guarantee : bool
        ``False`` when ``upper`` is *not* a proven upper bound on the mechanism's worst case (a pair
        for one specific dataset, or an unproven pair kept only to reproduce a paper's figures).
    caveats : tuple of str
        Plain-language statements users must see next to the numbers.
    """

    upper: tuple[PrivacyLossPair, ...]
    lower: tuple[PrivacyLossPair, ...]
    is_guarantee: bool = True
    caveats: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if not self.upper or not self.lower:
            raise ValueError("a PairFamily needs at least one upper and one lower member")

    @classmethod
    def exact(cls, *pairs: PrivacyLossPair, is_guarantee: bool = True, caveats: tuple[str, ...] = ()) -> PairFamily:
        """A family analysed exactly: the same members bound from above and below."""
        return cls(tuple(pairs), tuple(pairs), is_guarantee, caveats)


class ShuffleMechanism(ABC):
    """Base class of the shuffle mechanisms (frozen dataclasses in the subclasses)."""

    @abstractmethod
    def pair_family(self, *, tail_mass: float = DEFAULT_TAIL_MASS) -> PairFamily:
        """Build the neighbouring pairs of one round.

        Parameters
        ----------
        tail_mass : float
            Probability mass the construction may drop per truncated coordinate; the dropped mass is
            measured exactly and booked (upper bound: at +inf; lower bound: deleted).
        """

    @abstractmethod
    def describe(self) -> str:
        """One line naming the mechanism, its parameters, the neighbouring relation and adversary."""
