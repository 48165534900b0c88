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

import math
from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass
from functools import cached_property
from typing import ClassVar

from .._reporting import build_progress, reporting_to  # what a pair_family reports progress with
from ..pld import PrivacyLossPair

__all__ = [
    "DEFAULT_TAIL_MASS",
    "LEDGER_TAIL_BUDGET",
    "Cell",
    "PairFamily",
    "ShuffleMechanism",
    "build_progress",
    "check_mechanism",
    "reporting_to",
]

#: Default probability mass a mechanism may drop per truncated coordinate (booked at +inf for upper bounds).
DEFAULT_TAIL_MASS = 1e-18
#: Truncated mass a whole ledger may book at +inf by default (the accountant divides it among the rounds):
#: 1 % of δ = 1e-15, so the booked mass never decides ε at the smallest δ users state.
LEDGER_TAIL_BUDGET = 1e-17


class Cell:
    """A set of datasets bracketed by two pairs, refinable for branch-and-bound.

    ``upper`` dominates (Blackwell) the pair of every dataset in the cell; ``lower`` is the pair of one
    dataset in the cell.  ``split()`` returns sub-cells covering the same datasets, or ``()`` when the
    cell is a single dataset (then ``upper`` is exact).  Pairs are built lazily, on first use.
    """

    def __init__(
        self,
        make_upper: Callable[[], PrivacyLossPair] | None = None,
        make_lower: Callable[[], PrivacyLossPair] | None = None,
        split: Callable[[], tuple[Cell, ...]] = tuple,
        label: str = "cell",
        *,
        make_members: Callable[[], tuple[PrivacyLossPair, ...]] | None = None,
    ) -> None:
        """A cell is given either by a dominating pair (``make_upper``, with ``make_lower`` one of its
        datasets, or ``None`` for a single-dataset cell whose upper pair is exact), or by the pairs of all
        its datasets (``make_members``), which the accountant bounds by their envelope."""
        if (make_upper is None) == (make_members is None):
            raise ValueError("give exactly one of make_upper and make_members")
        self._make_upper, self._make_lower, self._split, self.label = make_upper, make_lower, split, label
        self._make_members = make_members

    @cached_property
    def members(self) -> tuple[PrivacyLossPair, ...] | None:
        """The pairs of every dataset of the cell, when the cell enumerates them (else ``None``)."""
        return None if self._make_members is None else self._make_members()

    @cached_property
    def upper(self) -> PrivacyLossPair:
        """Pair dominating every dataset of the cell (the first member for an enumerated cell)."""
        if self._make_upper is not None:
            return self._make_upper()
        members = self.members
        assert members is not None  # a cell without make_upper enumerates its members
        return members[0]

    @property
    def has_own_lower(self) -> bool:
        """Whether ``lower`` is a separate pair (built on first use) rather than the upper pair or a member."""
        return self._make_members is None and self._make_lower is not None

    @cached_property
    def lower(self) -> PrivacyLossPair:
        """Pair of one dataset of the cell (a lower bound on the cell's worst case)."""
        if self._make_members is not None:
            members = self.members
            assert members is not None  # built by _make_members
            return members[0]
        return self.upper if self._make_lower is None else self._make_lower()

    def release_lower(self) -> None:
        """Drop the cached separate lower pair (rebuilt on next use), for a cover that keeps the cell but not
        its dataset."""
        if self.has_own_lower:
            self.__dict__.pop("lower", None)

    def split(self) -> tuple[Cell, ...]:
        """Sub-cells covering the same datasets; empty for a single dataset."""
        return self._split()

    def __repr__(self) -> str:
        return f"Cell({self.label})"


@dataclass(frozen=True, eq=False)
class PairFamily:
    """Pairs bracketing a mechanism's worst case.

    Attributes
    ----------
    upper : tuple of PrivacyLossPair
        The worst case is at most the maximum over these members (after composition).
    lower : tuple of PrivacyLossPair
        The analysed worst case is at least the δ of any of these members (each is a realisable dataset
        pair, or, for a reduction, a pair dominated by the reduction's pair).
    is_guarantee : bool
        ``False`` when ``upper`` is *not* a proven upper bound on the mechanism's worst case (a pair
        for one specific dataset, or an unproven pair kept only to reproduce a paper's figures).
    caveats : tuple of str
        Plain-language statements users must see next to the numbers.
    cells : tuple of Cell, optional
        A refinable cover of the datasets; lets the accountant tighten the bracket by branch and bound.
    merge_upper : bool
        Compose the ``upper`` members as one dominating envelope (one FFT composition) rather than one
        by one; the lower bound then composes a few representative members.
    max_loss : float
        Every outcome of one round of the mechanism has privacy loss in ``[-max_loss, max_loss]``,
        truncated outcomes included (``local_epsilon`` when the analysed view is a post-processing of
        ``local_epsilon``-LDP reports); ``inf`` when unknown or unbounded.  Then ε ≤ rounds·max_loss at
        every δ (basic composition of pure DP), which caps the upper end where truncated mass booked at
        +∞ would make it infinite.
    """

    upper: tuple[PrivacyLossPair, ...]
    lower: tuple[PrivacyLossPair, ...]
    is_guarantee: bool = True
    caveats: tuple[str, ...] = ()
    cells: tuple[Cell, ...] | None = None  # refinable cover, when the mechanism offers one
    merge_upper: bool = False  # compose the upper members as one envelope rather than one by one
    max_loss: float = math.inf

    def __post_init__(self) -> None:
        if not self.upper or not self.lower:
            raise ValueError("a PairFamily needs at least one upper and one lower member")

    @classmethod
    def from_cells(
        cls, cells: tuple[Cell, ...], *, is_guarantee: bool = True, caveats: tuple[str, ...] = (), max_loss: float = math.inf
    ) -> PairFamily:
        """A family given by a refinable cover of its datasets (the accountant branches and bounds).

        ``upper``/``lower`` are the initial cover's pairs; accountants that do not refine use those.
        """
        return cls(tuple(c.upper for c in cells), tuple(c.lower for c in cells), is_guarantee, caveats, tuple(cells), max_loss=max_loss)

    @classmethod
    def exact(
        cls, *pairs: PrivacyLossPair, is_guarantee: bool = True, caveats: tuple[str, ...] = (), max_loss: float = math.inf
    ) -> PairFamily:
        """A family analysed exactly: the same members bound from above and below."""
        return cls(tuple(pairs), tuple(pairs), is_guarantee, caveats, max_loss=max_loss)


class ShuffleMechanism(ABC):
    """Base class of the shuffle mechanisms (frozen dataclasses in the subclasses).

    Attributes
    ----------
    neighboring_relation : str
        Class attribute: the neighbouring relation the mechanism's pairs are for, a key of
        :data:`pldshuffle.mechanisms.registry.RELATIONS` (``"replace-one"`` unless a class says otherwise).
    switch : str or None
        Class attribute: the name of the field that selects *what* is analysed (``"dataset"``,
        ``"adversary"`` or ``"reduction"``), read by the privacy statements; ``None`` if there is none.
    """

    neighboring_relation: str = "replace-one"  # a class attribute; PairMechanism makes it a field
    switch: ClassVar[str | None] = None

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

    def family_seconds(self, *, tail_mass: float = DEFAULT_TAIL_MASS) -> float:
        """A-priori, order-of-magnitude estimate of the seconds :meth:`pair_family` takes (calibrated on a
        2-core machine), so that the accountant can warn before a long build; O(1).

        Default 0: mechanisms whose pairs are built in well under a second need no estimate.
        """
        return 0.0

    def family_bytes(self, *, tail_mass: float = DEFAULT_TAIL_MASS) -> float:
        """A-priori estimate of the memory (bytes) its pair family holds while the accountant uses it, so
        that a request beyond ``max_memory_bytes`` is refused before anything is built.

        Default 0: mechanisms whose pairs are small next to the composition, or that refuse oversized
        supports themselves, need no estimate.
        """
        return 0.0


def check_mechanism(value: object, name: str = "mechanism") -> ShuffleMechanism:
    """Return ``value`` if it is a mechanism, else raise ``TypeError`` naming ``name`` and, for a pair, how
    to compose it."""
    if isinstance(value, ShuffleMechanism):
        return value
    from .labelled_clones import LabelledClonePair  # on the error path only (it imports the clone kernels)

    if isinstance(value, PrivacyLossPair):
        hint = "; wrap a pair you have shown dominating as PairMechanism(pair)"
    elif isinstance(value, LabelledClonePair):
        hint = ("; a LabelledClonePair is a reduction's pair, not a mechanism: compose ShuffledLDP(num_users, "
                "local_epsilon, reduction=...) or ShuffledLDP(num_users, randomizer=...), or "
                "PairMechanism(pair.pair_bounds()[1]) for its upper pair")
    else:
        hint = ""
    from .registry import MECHANISMS

    names = [entry.class_name for entry in MECHANISMS]
    raise TypeError(
        f"{name} must be a pldshuffle mechanism ({', '.join(names[:-1])} or {names[-1]}), "
        f"got {type(value).__name__}{hint}"
    )
