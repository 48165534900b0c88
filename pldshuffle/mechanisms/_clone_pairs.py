"""The clone pairs F (FMT20/FMT23) and K (KHH21 eq. 6.1): exact for small supports, streamed beyond.

Used by :class:`pldshuffle.ShuffledLDP`; the mathematics is in ``docs/mathematics.md#clone-reductions``.
Supports up to ``EXACT_SUPPORT_LIMIT`` points are exact; larger ones are streamed (the layout of
:mod:`pldshuffle.mechanisms._clone_layout`, the kernels of :mod:`pldshuffle._kernels.clones`) onto a lattice
into strict lower and upper pairs in bounded memory.
"""

from __future__ import annotations

import math

from . import _clone_layout as _ck
from ._clone_layout import EXACT_SUPPORT_LIMIT, MAX_EXACT_SUPPORT, STREAM_GRID_BINS
from .._validation import check_choice, check_int, check_local_epsilon, check_num_users, check_probability
from ..pld import PrivacyLossPair
from .base import DEFAULT_TAIL_MASS

__all__ = ["clone_pair", "clone_pair_bounds", "clone_support_size"]


def _check_args(num_users: object, local_epsilon: object, clone_probability: object, tail_mass: object, variant: str) -> tuple[int, float, float, float, str]:
    n = check_num_users(num_users)
    eps0 = check_local_epsilon(local_epsilon)
    pc = check_probability("clone_probability", clone_probability, low_open=True, high_open=False)
    tail = check_probability("tail_mass", tail_mass)
    check_choice("variant", variant, ("F", "K"))
    return n, eps0, pc, tail, variant


def _label(variant: str, n: int, eps0: float, pc: float) -> str:
    name = "clone pair F (FMT20/FMT23)" if variant == "F" else "clone pair K (KHH21 eq. 6.1)"
    return f"{name}, n={n}, ε0={eps0:g}, p_c={pc:.6g}"


# ----------------------------------------------------------------------------- public functions
def clone_support_size(
    num_users: int, local_epsilon: float, clone_probability: float, tail_mass: float = DEFAULT_TAIL_MASS, *, variant: str = "F"
) -> int:
    """Number of kept support points of a clone pair (cost O(√(n p_c)) scipy evaluations)."""
    n, eps0, pc, tail, variant = _check_args(num_users, local_epsilon, clone_probability, tail_mass, variant)
    return _ck.layout(n, math.exp(eps0), math.expm1(eps0), pc, tail, variant).support


def clone_pair(
    num_users: int,
    local_epsilon: float,
    clone_probability: float,
    tail_mass: float = DEFAULT_TAIL_MASS,
    *,
    variant: str = "F",
    bound: str = "exact",
    max_support_points: int = MAX_EXACT_SUPPORT,
) -> PrivacyLossPair:
    """Clone pair (docs/mathematics.md, "Clone reductions") as a symmetric :class:`PrivacyLossPair` (exact, or a strict bound).

    Parameters
    ----------
    num_users : int
        ``2 <= n <= 2**53``.
    local_epsilon : float
        ``ε0 > 0`` (``q = e^{ε0}/(e^{ε0}+1)``), at most 500.
    clone_probability : float
        ``p_c ∈ (0, 1]``: ``e^{-ε0}`` (FMT20 Thm 3.2, every ε0-LDP randomiser) or ``2/(e^{ε0}+1)``
        (FMT23 Thm 3.1 / errata Thm 7.1, restricted class).
    tail_mass : float
        Tail mass dropped per truncated coordinate (``C``, then ``A | C``); the dropped ``P``-mass is
        computed from binomial tails and booked as ``truncated_mass``.
    variant : {"F", "K"}
        ``"F"``: FMT20/FMT23 pair ``P=(A+Δ, C-A+1-Δ)``, ``Q=(A+1-Δ, C-A+Δ)``.  ``"K"``: KHH21 eq. 6.1,
        ``P=(A+Δ, C-A)``, ``Q=(A, C-A+Δ)`` (no proof known; has an infinity atom).
    bound : {"exact", "upper", "lower"}
        ``"exact"`` (default): the truncated pair itself, every kept outcome with its exact mass and
        loss; refused (``ValueError``) above ``max_support_points``.  ``"upper"`` / ``"lower"``: a pair
        dominating / dominated by it for any number of compositions, in bounded memory -- the exact
        pair when its support is at most :data:`EXACT_SUPPORT_LIMIT`, else the streamed lattice pair of
        :func:`clone_pair_bounds` (use ``"upper"`` where only a dominating pair is needed, at any ``n``).
    max_support_points : int
        Refusal threshold of ``bound="exact"`` (default :data:`MAX_EXACT_SUPPORT`, ~2 GiB).

    Returns
    -------
    PrivacyLossPair
        Symmetric (``backward is None``).

    Notes
    -----
    Exact: time O(S log S) for S support points (numba fill, parallel over blocks, then the sort in
    :class:`LossDistribution`), memory about 100 bytes per point.  Pair F has
    S ≈ 155·n·p_c·√(1-p_c) points at the default tail mass (≈ 2.8·10^6 at ``n=10^6, ε0=4,
    p_c=e^{-4}``; ≈ 4.5·10^8 at ``n=10^7, ε0=1``).
    """
    n, eps0, pc, tail, variant = _check_args(num_users, local_epsilon, clone_probability, tail_mass, variant)
    check_choice("bound", bound, ("exact", "upper", "lower"))
    if bound != "exact":
        lower, upper = clone_pair_bounds(n, eps0, pc, tail, variant=variant)
        return upper if bound == "upper" else lower
    limit = check_int("max_support_points", max_support_points, minimum=1)
    lay = _ck.layout(n, math.exp(eps0), math.expm1(eps0), pc, tail, variant)
    if lay.support > limit:
        raise ValueError(
            f"the clone pair for num_users={n}, local_epsilon={eps0:g}, clone_probability={pc:.4g} has "
            f"{lay.support:,} support points, above max_support_points={limit:,} (~{lay.support * 100 / 2**30:.1f} GiB "
            "to materialise); use clone_pair_bounds(...) or bound='upper'/'lower' (strict, bounded memory), "
            "raise max_support_points, or raise tail_mass"
        )
    return _ck.exact_pair(lay, _label(variant, n, eps0, pc))


def clone_pair_bounds(
    num_users: int,
    local_epsilon: float,
    clone_probability: float,
    tail_mass: float = DEFAULT_TAIL_MASS,
    *,
    variant: str = "F",
    max_exact_support: int = EXACT_SUPPORT_LIMIT,
    bins: int = STREAM_GRID_BINS,
) -> tuple[PrivacyLossPair, PrivacyLossPair]:
    """Strict ``(lower, upper)`` pairs of a clone pair, in bounded memory.

    If the truncated support has at most ``max_exact_support`` points both are the exact pair
    (the same object).  Otherwise the support is streamed block by block (never materialised) into
    the cells ``[z_j, z_{j+1})`` of a lattice ``z_j = j·h``, ``h = (loss range)/bins``, recording the
    mass ``M_j`` and the moment ``Σ m e^{-s}`` of each cell:

    * ``upper`` splits ``M_j`` between ``z_j`` and ``z_{j+1}`` keeping mass and ``e^{-s}``-moment -- a
      mean-preserving *spread* of ``U = e^{-L}``;
    * ``lower`` puts ``M_j`` at the one loss with the same ``e^{-s}``-moment (inside the cell) -- a
      mean-preserving *contraction*.

    δ after any number of compositions is ``E[(1 - e^ε Π U_i)_+]``, convex in each ``U_i``, so by
    Jensen ``δ_lower ≤ δ_pair ≤ δ_upper`` for every number of rounds (cf. :mod:`pldshuffle.pld.discretize`).
    Both errors are second order in ``h`` (relative ε error ~1e-8 at the default ``bins``).  Both
    carry the exact infinity mass and the booked truncated mass.

    Parameters are those of :func:`clone_pair`, plus ``max_exact_support`` and ``bins`` (lattice cells
    across the loss range).

    Notes
    -----
    Streamed: time O(S) for S support points (numba, ~4 ns per point on 2 cores, parallel over chunks of
    blocks); memory O(bins · threads + √(n p_c)), independent of S.  Refused (``ValueError``) above
    :data:`MAX_STREAMED_SUPPORT` points (time).
    """
    n, eps0, pc, tail, variant = _check_args(num_users, local_epsilon, clone_probability, tail_mass, variant)
    max_exact = check_int("max_exact_support", max_exact_support, minimum=0)
    bins = check_int("bins", bins, minimum=2)
    lay = _ck.layout(n, math.exp(eps0), math.expm1(eps0), pc, tail, variant)
    return _ck.layout_bounds(lay, _label(variant, n, eps0, pc), max_exact, bins)


# ----------------------------------------------------------------------------- mechanism
