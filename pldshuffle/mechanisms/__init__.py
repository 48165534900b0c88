"""Shuffle mechanisms: each builds the neighbouring pairs of one round (see :mod:`.base`)."""

from .binary_rr import ShuffledBinaryRR
from .clones import ShuffledLDP
from .generic import PairMechanism
from .krr import ShuffledKRR

__all__ = ["PairMechanism", "ShuffledBinaryRR", "ShuffledKRR", "ShuffledLDP"]
