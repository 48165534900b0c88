"""Shuffle mechanisms: each builds the neighbouring pairs of one round (see :mod:`.base`)."""

from .binary_rr import ShuffledBinaryRR
from .clones import ShuffledLDP
from .generic import PairMechanism
from .krr import ShuffledKRR
from .labelled_clones import LabelledClonePair

__all__ = ["LabelledClonePair", "PairMechanism", "ShuffledBinaryRR", "ShuffledKRR", "ShuffledLDP"]
