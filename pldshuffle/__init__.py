"""pldshuffle: strict differential-privacy accounting for the shuffle model.

Mechanisms build the privacy loss distributions of neighbouring pairs, the :class:`FourierAccountant`
composes them over rounds and returns certified lower and upper bounds on δ(ε) and ε(δ), and
:mod:`pldshuffle.bounds` holds the analytic baselines of the literature.
"""

from .accountant import FourierAccountant
from .mechanisms.base import PairFamily, ShuffleMechanism
from .mechanisms.binary_rr import ShuffledBinaryRR
from .mechanisms.generic import PairMechanism
from .pld import LossDistribution, PrivacyLossPair
from .results import DeltaBounds, EpsilonBounds

__version__ = "0.1.0"

__all__ = [
    "DeltaBounds",
    "EpsilonBounds",
    "FourierAccountant",
    "LossDistribution",
    "PairFamily",
    "PairMechanism",
    "PrivacyLossPair",
    "ShuffleMechanism",
    "ShuffledBinaryRR",
    "__version__",
]
