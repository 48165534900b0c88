"""The certified core: exact privacy loss distributions, their discretisation on a lattice, the tilted FFT
realisation of a composition with its certified error terms, and :class:`CertifiedPLD`.

The core knows nothing of mechanisms, worst cases over datasets, the accountant or interop (a test parses
every module here to keep it so).  Modules:

* :mod:`~pldshuffle.pld.distributions` -- exact distributions (:class:`PrivacyLossPair`, :class:`LossDistribution`);
* :mod:`~pldshuffle.pld.discretize` -- one lattice discretisation, of atoms and of streamed cells;
* :mod:`~pldshuffle.pld.lattice` -- lattice measures, terms and realised compositions;
* :mod:`~pldshuffle.pld.fft`, :mod:`~pldshuffle.pld.composition`, :mod:`~pldshuffle.pld.tilts` -- the tilted
  FFT realisation and its error terms;
* :mod:`~pldshuffle.pld.sizing` -- the choice of Δ, windows, byte constants and memory checks;
* :mod:`~pldshuffle.pld.inversion` -- monotone inversion of certified δ-curves;
* :mod:`~pldshuffle.pld.certified` -- :class:`CertifiedPLD`.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

from .distributions import (
    MASS_RTOL,
    SUM_RTOL,
    LossDistribution,
    PrivacyLossPair,
    infinity_apart,
    log_ratio_error,
)
from .profiles import LargestUpperProfile

__all__ = [
    "CertifiedPLD", "LargestUpperProfile", "LossDistribution", "MASS_RTOL", "MemoryBudgetError", "PrivacyLossPair", "SUM_RTOL",
    "infinity_apart", "log_ratio_error",
]

#: Names loaded on first access (the FFT realisation imports scipy).
_LAZY = {"CertifiedPLD": ".certified", "MemoryBudgetError": ".sizing"}

if TYPE_CHECKING:  # pragma: no cover
    from .certified import CertifiedPLD
    from .sizing import MemoryBudgetError


def __getattr__(name: str) -> object:
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name], __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
