"""pldshuffle: strict differential-privacy accounting for the shuffle model.

Mechanisms build the privacy loss distributions of neighbouring pairs, the :class:`FourierAccountant`
composes them over rounds and returns certified lower and upper bounds on δ(ε) and ε(δ), and
:mod:`pldshuffle.bounds` holds the analytic baselines of the literature.
"""

from . import randomizers
from .accountant import FourierAccountant
from .certified import CertifiedPLD
from .calibrate import CalibrationResult, calibrate_local_epsilon, find_max_rounds, find_min_users
from .mechanisms.base import PairFamily, ShuffleMechanism
from .mechanisms.binary_rr import ShuffledBinaryRR
from .mechanisms.clones import ShuffledLDP
from .mechanisms.krr import ShuffledKRR
from .mechanisms.labelled_clones import LabelledClonePair
from .mechanisms.generic import PairMechanism
from .pld import LossDistribution, PrivacyLossPair
from .results import DeltaBounds, EpsilonBounds, NotAGuaranteeWarning

__version__ = "0.2.0"

__all__ = [
    "CalibrationResult",
    "CertifiedPLD",
    "DeltaBounds",
    "EpsilonBounds",
    "FourierAccountant",
    "LabelledClonePair",
    "LossDistribution",
    "NotAGuaranteeWarning",
    "PairFamily",
    "PairMechanism",
    "PrivacyLossPair",
    "ShuffleMechanism",
    "ShuffledBinaryRR",
    "ShuffledKRR",
    "ShuffledLDP",
    "__version__",
    "calibrate_local_epsilon",
    "find_max_rounds",
    "find_min_users",
    "randomizers",
]
