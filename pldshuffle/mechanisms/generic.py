"""Any finite neighbouring pair supplied by the user, as a composable mechanism."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from numpy.typing import ArrayLike

from .._validation import check_text
from ..pld import PrivacyLossPair
from .base import DEFAULT_TAIL_MASS, PairFamily, ShuffleMechanism

__all__ = ["PairMechanism"]


@dataclass(frozen=True, eq=False)
class PairMechanism(ShuffleMechanism):
    """A mechanism given directly by its (dominating) neighbouring pair.

    The bracket the accountant returns is for this pair; it is a guarantee for your mechanism exactly
    when the pair dominates every neighbouring pair of the mechanism -- that is for you to establish.
    Instances compare by identity (two separately built pairs are composed as distinct mechanisms).

    Examples
    --------
    >>> import pldshuffle as ps
    >>> rr = ps.PairMechanism.from_probability_mass_functions([0.75, 0.25], [0.25, 0.75], label="RR, eps0=log 3")
    >>> round(ps.FourierAccountant().compose(rr).get_delta(0.0), 9)
    0.5
    """

    pair: PrivacyLossPair
    description: str = "user-supplied neighbouring pair"
    #: The neighbouring relation the pair dominates under ("replace-one", the shuffle mechanisms' relation,
    #: unless stated; dp-accounting imports are "add-remove").  Ledgers refuse to mix relations.
    neighboring_relation: str = "replace-one"

    def __post_init__(self) -> None:
        if not isinstance(self.pair, PrivacyLossPair):
            raise TypeError(f"pair must be a PrivacyLossPair, got {type(self.pair).__name__}")
        check_text("description", self.description)
        if self.neighboring_relation not in ("replace-one", "add-remove"):
            raise ValueError(f"neighboring_relation must be 'replace-one' or 'add-remove', got {self.neighboring_relation!r}")

    @classmethod
    def from_probability_mass_functions(
        cls,
        pmf_p: Mapping[object, float] | ArrayLike,
        pmf_q: Mapping[object, float] | ArrayLike,
        *,
        label: str = "user-supplied pair",
        missing_mass: str | None = None,
        neighboring_relation: str = "replace-one",
    ) -> PairMechanism:
        """Build from two pmfs on a common space, each summing to 1 unless ``missing_mass="infinity"`` says
        where the rest lies (see :meth:`PrivacyLossPair.from_probability_mass_functions`); the pair dominates
        under ``neighboring_relation``."""
        pair = PrivacyLossPair.from_probability_mass_functions(pmf_p, pmf_q, label=label, missing_mass=missing_mass)
        return cls(pair, description=label, neighboring_relation=neighboring_relation)

    def pair_family(self, *, tail_mass: float = DEFAULT_TAIL_MASS) -> PairFamily:
        return PairFamily.exact(self.pair)

    def describe(self) -> str:
        return self.description
