"""The reductions that ``ShuffledLDP(reduction=...)`` selects: their names, the caveats each pair family
carries and the words :meth:`~pldshuffle.ShuffledLDP.describe` uses for them.

The pairs themselves are in :mod:`pldshuffle.mechanisms._clone_pairs` (clone reductions),
:mod:`pldshuffle.mechanisms.labelled_clones` and :mod:`pldshuffle.mechanisms.blanket`; the mathematics in
docs/mathematics.md.
"""

from __future__ import annotations

from typing import Literal, get_args

__all__ = ["LAPLACE_VICTIM_CAVEAT", "Reduction"]


#: The reductions ``reduction`` may select (the command line lists them from this annotation).
Reduction = Literal["blanket", "fmt20", "fmt23", "randomizer", "khh21", "wang24"]
_REDUCTIONS = get_args(Reduction)


_CAVEATS = {
    "blanket": (
        "blanket pair (Balle-Bell-Gascon-Nissim decomposition): a guarantee for this randomizer, never looser than "
        "the labelled clone pairs; the bracket is that of the blanket pair, the exact shuffled randomizer may have a "
        "smaller epsilon",
    ),
    "fmt20": (
        "FMT20 clone reduction (Thm 3.2): a guarantee for every ε0-LDP randomizer; the bracket is that of the "
        "reduction's pair, a specific randomizer may have a smaller ε",
    ),
    "fmt23": (
        "FMT23 clone reduction (Thm 3.1 / errata Thm 7.1, clone probability 2/(e^ε0+1)): valid ONLY for "
        "randomizers in its restricted class, R(z)(y)(e^ε0+1) >= R(x)(y) + R(x')(y) for all inputs x, x', z and outputs y (binary "
        "and k-ary RR; not symmetric RAPPOR, OUE, OLH or subset selection at their true ε0), not for arbitrary "
        "ε0-LDP randomizers; use reduction='fmt20' or pass randomizer=... for those",
    ),
    "khh21": (
        "KHH21 eq. (6.1) clone pair: no proof known; for reproducing KHH21 figures only, not a privacy guarantee",
    ),
    "randomizer": (
        "randomizer-specific clone reduction: labelled clone pair with the randomizer's own ratio p* and clone "
        "probability r* per victim pair (a guarantee for this randomizer; never looser than FMT20); the bracket "
        "is that of the reduction's pairs, the exact shuffled randomizer may have a smaller ε",
    ),
    "wang24": (
        "REPRODUCTION ONLY, NOT A GUARANTEE: Wang et al. (PVLDB 2024) variation-ratio pair with the randomizer's "
        "total variation; when its residual weight g > 0 the real shuffled randomizer can exceed it (e.g. 3-ary "
        "RR, ε0=6, n=1000: the pair gives ε=5.775 at δ=1e-6, the real mechanism has δ(5.775)=1.4e-3)",
    ),
}
#: What the Laplace blanket pair covers (docs/mathematics.md, the Laplace blanket pair).
LAPLACE_VICTIM_CAVEAT = (
    "Laplace randomizer: the blanket pair is computed for the victim inputs at the domain's ends (input_min, input_max); "
    "it is proven to dominate every victim pair symmetric about the midpoint, and was checked numerically (not "
    "proven) to dominate the other pairs (n = 2); the guarantee is proven for victim inputs at the ends or "
    "symmetric about the midpoint"
)
#: How :meth:`ShuffledLDP.describe` names each reduction.
_NAMES = {
    "blanket": "blanket pair (tightest decomposition)",
    "fmt20": "FMT20 clone reduction (any ε0-LDP randomizer)",
    "fmt23": "FMT23 clone reduction (restricted class: R(z)(e^ε0+1) >= R(x)+R(x'))",
    "khh21": "KHH21 eq. (6.1) clone pair (no proof known; figure reproduction only)",
    "randomizer": "randomizer-specific clone reduction (p*, r*)",
    "wang24": "Wang et al. 2024 variation-ratio pair (reproduction only, NOT a guarantee)",
}
