"""The exceptions and warnings pldshuffle raises, in one place (all exported from :mod:`pldshuffle`).

* :class:`MemoryBudgetError`: a request would exceed ``max_memory_bytes``; raised before allocating.
* :class:`NotAGuaranteeWarning`: the upper end of a bound that is not a guarantee was used as one.
* :class:`SlowComputationWarning`: a computation is estimated to take more than ~30 s.

Bad parameter values raise the built-in ``ValueError`` / ``TypeError``, naming the parameter, its
value and the valid range.  This module imports nothing heavy (no numpy), so ``except`` clauses and
``warnings`` filters can name these classes cheaply.
"""

from __future__ import annotations

import math

__all__ = ["MemoryBudgetError", "NotAGuaranteeWarning", "SlowComputationWarning"]


class MemoryBudgetError(ValueError, MemoryError):
    """A composition would exceed ``max_memory_bytes``; raised before allocating.  ``needed`` and
    ``budget`` (bytes) are set where the estimate is known (NaN otherwise)."""

    def __init__(self, message: str, needed: float = math.nan, budget: float = math.nan) -> None:
        super().__init__(message)
        self.needed, self.budget = float(needed), float(budget)


class NotAGuaranteeWarning(UserWarning):
    """The upper end of a bound that is not a privacy guarantee was used as a guarantee.

    Raised (as a warning) by ``float(bounds)`` and by the accountant's ``get_epsilon`` / ``get_delta``
    when the composition contains a mechanism option that analyses one specific dataset pair (for
    example ``ShuffledKRR(..., adversary="histogram")`` or ``ShuffledBinaryRR(..., dataset="khh21")``):
    its upper end is a *lower* bound on the worst case over all neighbouring datasets.  Silence it with
    ``warnings.simplefilter("ignore", NotAGuaranteeWarning)`` when the lower bound is what you want.
    """


class SlowComputationWarning(UserWarning):
    """A computation is estimated to take more than ~30 s; the message states the estimate.

    Emitted by :class:`~pldshuffle.FourierAccountant` before building a composition whose rough a-priori
    estimate exceeds 30 s; the same message goes to its ``progress`` callback.  Silence it with
    ``warnings.simplefilter("ignore", SlowComputationWarning)``.
    """
