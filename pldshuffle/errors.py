"""The exceptions and warnings pldshuffle raises, in one place (all exported from :mod:`pldshuffle`).

* :class:`MemoryBudgetError`: a request would exceed ``max_memory_bytes``; raised before allocating.
* :class:`NotAGuaranteeWarning`: the upper end of a bound that is not a guarantee was used as one.
* :class:`LooseBoundWarning`: a certified bracket ended wider than the ledger's relative-gap target.
* :class:`SlowComputationWarning`: a computation is estimated to take more than ~30 s.

Bad parameter values raise the built-in ``ValueError`` / ``TypeError``, naming the parameter, its
value and the valid range.  This module imports nothing heavy (no numpy), so ``except`` clauses and
``warnings`` filters can name these classes cheaply.
"""

from __future__ import annotations

import math

__all__ = ["LooseBoundWarning", "MemoryBudgetError", "NotAGuaranteeWarning", "SlowComputationWarning"]


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


class LooseBoundWarning(UserWarning):
    """A certified bracket ended wider than the ledger's relative-gap target.

    Issued by the accountant's queries (``get_epsilon_bounds``, ``get_delta_bounds`` and what calls them)
    when a bracket misses the target (the accountant's ``relative_gap_target``, by default 1e-4 for one
    round, 1e-3 up to 64 rounds, 2e-3 beyond; ``docs/mathematics.md#loose-brackets`` states the exact rule,
    the absolute allowance at small ε and the infinite cases); the result's caveats state the gap and the
    target.  The bracket is still certified -- the upper end remains a guarantee -- it is only less tight
    than promised.  Silence it with ``warnings.simplefilter("ignore", LooseBoundWarning)``.
    """


class SlowComputationWarning(UserWarning):
    """A computation is estimated to take more than ~30 s; the message states the estimate.

    Emitted by :class:`~pldshuffle.FourierAccountant` before building a composition whose rough a-priori
    estimate exceeds 30 s; the same message goes to its ``progress`` callback.  Silence it with
    ``warnings.simplefilter("ignore", SlowComputationWarning)``.
    """
