"""Local randomizers as objects, for certified shuffle amplification.

Each randomizer knows its true LDP level ``local_epsilon``, its output law (:meth:`Randomizer.matrix`),
its total variation and its certified clone constants ``(p*, r*)`` (:meth:`Randomizer.clone_constants`),
which :class:`pldshuffle.ShuffledLDP` turns into a shuffle guarantee::

    import pldshuffle as ps
    mech = ps.ShuffledLDP(10_000, randomizer=ps.randomizers.KaryRR(domain_size=4, local_epsilon=2.0))

See ``docs/randomizers.md`` for the derivations and the table of constants.
"""

from .base import CloneConstants, Finite, Randomizer, clone_constants_of_matrix
from .continuous import Laplace
from .named import OLH, OUE, RAPPOR, BinaryRR, HadamardResponse, KaryRR, LocalHashing, SubsetSelection
from .registry import RANDOMIZERS, make_randomizer, randomizer_spec

__all__ = [
    "OLH",
    "OUE",
    "RANDOMIZERS",
    "RAPPOR",
    "BinaryRR",
    "CloneConstants",
    "Finite",
    "HadamardResponse",
    "KaryRR",
    "Laplace",
    "LocalHashing",
    "Randomizer",
    "SubsetSelection",
    "clone_constants_of_matrix",
    "make_randomizer",
    "randomizer_spec",
]
