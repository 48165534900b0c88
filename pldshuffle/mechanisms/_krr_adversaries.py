"""The four views of shuffled kRR that ``ShuffledKRR(adversary=...)`` selects: their names, the meaning
each gives the bound (:meth:`~pldshuffle.ShuffledKRR.describe`) and the caveats its family carries.

The mathematics of each view is in :mod:`pldshuffle.mechanisms.krr` and docs/mathematics.md,
"k-ary randomized response".
"""

from __future__ import annotations

from typing import Literal, get_args

__all__ = ["Adversary"]


#: The views ``adversary`` may select (the command line lists them from this annotation).
Adversary = Literal["weak", "strong", "khh21", "histogram"]
_ADVERSARIES = get_args(Adversary)

_MEANING = {
    "weak": "weak adversary (KHH21 Def. 9: knows the other users' data and randomisation bits; exact "
    "(b, n1, n2) pair): strict bounds on the worst case over all neighbouring datasets",
    "strong": "strong adversary (also knows whether the differing user randomised; exact pair with the "
    "γ atom): strict bounds on the worst case over all neighbouring datasets, dominating 'weak'",
    "khh21": "KHH21 figure-code pair (strong pair without the γ atom): a valid but looser upper bound, "
    "kept to reproduce KHH21's figures",
    "histogram": "histogram-only analyst on the dataset pairs (1,3..3) vs (2,3..3) and (1,1..1) vs (2,1..1): "
    "exact for those pairs, i.e. a LOWER bound on the worst case, not a guarantee",
}

_CAVEATS = {
    "weak": (),
    "strong": (),
    "khh21": (
        "adversary='khh21' reproduces the pair of KHH21's figure code (the strong-adversary pair without "
        "the atom of mass gamma at loss 0); it is a valid upper bound but looser than adversary='strong'.",
    ),
    "histogram": (
        "adversary='histogram' is exact only for the dataset pairs (1,3,..,3) vs (2,3,..,3) and (1,1,..,1) vs "
        "(2,1,..,1) seen through the output histogram (the worse of the two is reported): it is a LOWER bound "
        "on the mechanism's worst-case privacy loss, not a guarantee.",
    ),
}
