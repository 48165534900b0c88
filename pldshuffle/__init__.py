"""pldshuffle: strict differential-privacy accounting for the shuffle model.

Mechanisms build the privacy loss distributions of neighbouring pairs, the :class:`FourierAccountant`
composes them over rounds and returns certified lower and upper bounds on δ(ε) and ε(δ), and
:mod:`pldshuffle.bounds` holds the analytic baselines of the literature.

Names are imported on first access (PEP 562), so ``import pldshuffle`` does not load scipy, numba or
pyfftw; ``pldshuffle.ShuffledKRR`` imports what that class needs.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

from ._kernels import configure_numba_cache
from .mechanisms.registry import MECHANISMS as _MECHANISMS

# Before any module of the package can import numba (cache=True must not write into a read-only install).
configure_numba_cache()

__version__ = "0.3.0"

#: Public name -> submodule defining it (the mechanisms are added from their registry below).
_EXPORTS = {
    "BlanketPair": ".mechanisms.blanket",
    "CalibrationResult": ".calibrate",
    "CertifiedPLD": ".pld.certified",
    "DeltaBounds": ".results",
    "EpsilonBounds": ".results",
    "FourierAccountant": ".accountant",
    "LabelledClonePair": ".mechanisms.labelled_clones",
    "LooseBoundWarning": ".errors",
    "LossDistribution": ".pld",
    "MemoryBudgetError": ".errors",
    "NotAGuaranteeWarning": ".errors",
    "PairFamily": ".mechanisms.base",
    "PrivacyLossPair": ".pld",
    "RandomAllocation": ".mechanisms.allocation",
    "ShuffleMechanism": ".mechanisms.base",
    "SlowComputationWarning": ".errors",
    "calibrate_local_epsilon": ".calibrate",
    "find_max_rounds": ".calibrate",
    "find_min_users": ".calibrate",
}
_EXPORTS.update({entry.class_name: "." + entry.module.removeprefix(__name__ + ".") for entry in _MECHANISMS})
#: Public subpackages, listed by ``dir(pldshuffle)`` and reachable as attributes without an import.
_PUBLIC_MODULES = ("bounds", "interop", "plotting", "randomizers")
#: Further modules reachable as attributes (``pldshuffle.results``) for programs that used them, but not
#: advertised: they are internals whose layout may change.
_SUBMODULES = (
    *_PUBLIC_MODULES, "accountant", "calibrate", "certified", "cli", "composition", "dominating", "errors", "fft", "grid",
    "lattice", "mechanisms", "pld", "results", "worstcase",
)

__all__ = sorted([*_EXPORTS, "__version__", *_PUBLIC_MODULES])

if TYPE_CHECKING:  # pragma: no cover - static analysers see the eager imports
    from .accountant import FourierAccountant
    from . import randomizers
    from .calibrate import CalibrationResult, calibrate_local_epsilon, find_max_rounds, find_min_users
    from .pld.certified import CertifiedPLD
    from .mechanisms.blanket import BlanketPair
    from .mechanisms.labelled_clones import LabelledClonePair
    from .mechanisms.base import PairFamily, ShuffleMechanism
    from .mechanisms.binary_rr import ShuffledBinaryRR
    from .mechanisms.clones import ShuffledLDP
    from .mechanisms.allocation import RandomAllocation
    from .mechanisms.generic import PairMechanism
    from .mechanisms.krr import ShuffledKRR
    from .pld import LossDistribution, PrivacyLossPair
    from .errors import LooseBoundWarning, MemoryBudgetError, NotAGuaranteeWarning, SlowComputationWarning
    from .results import DeltaBounds, EpsilonBounds
    from . import bounds, interop, plotting


def __getattr__(name: str) -> object:
    if name in _EXPORTS:
        value = getattr(importlib.import_module(_EXPORTS[name], __name__), name)
    elif name in _SUBMODULES:
        value = importlib.import_module(f".{name}", __name__)
    else:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    globals()[name] = value  # later accesses skip __getattr__
    return value


def __dir__() -> list[str]:
    """The public API only (what ``__all__`` lists), whatever internals were imported so far."""
    return sorted(__all__)
