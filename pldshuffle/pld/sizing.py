"""The lattice of a ledger: the spacing Δ chosen once from the relative-gap target, and its size.

One home for the a-priori estimates that size a composition before anything is realised
(:mod:`pldshuffle.pld.certified` realises it; :mod:`pldshuffle._estimate` prices it).
"""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import NDArray

from .composition import CHERNOFF_LAMBDAS, Factor, composed_log_mgf, window
from .far_atoms import mixture_width
from .discretize import lower_error_estimates, moments
from .distributions import PrivacyLossPair
from .inversion import grid_crossing
from ..errors import MemoryBudgetError  # raised here; its home is pldshuffle.errors

__all__ = ["MemoryBudgetError", "check_lattice_span", "choose_spacing", "composed_range", "gap_scale", "relative_target"]

#: Tilted Chernoff tolerance of every realisation window (folded mass, relative after untilting).
TAIL_TOLERANCE = 1e-18
#: Ledgers of at most this many rounds are held to the relative target at every δ ≤ 1e-2.
SHORT_LEDGER = 64
#: Bytes held per window point by one cached realisation (masses, profile, suffix) and, transiently, while
#: realising (measured: ~90 per point beyond what the realisation keeps).
BYTES_PER_POINT = 24
WORK_BYTES_PER_POINT = 96
#: Bytes per point of the aligned buffers kept by the cached FFTW plans of one window size (pyfftw only).
PLAN_BYTES_PER_POINT = 32
#: Bytes per lattice point of one direction discretised for one round (connect-the-dots masses, the lower
#: measure and their profiles; measured: ~80 at the peak, kRR strong n = 100 at Δ = 1e-6).
LATTICE_BYTES_PER_POINT = 96
#: The lattice on which a ledger is first sized (:func:`composed_range`).
_COARSE = 1e-3
#: Automatic spacing keeps the composition window below this many lattice points ...
MAX_POINTS = 2**21
#: ... or, where the lower witnesses would still err by more than half the gap target there, this many.
MAX_REFINED_POINTS = 2**23
#: Where rare far losses split the composition (pldshuffle.pld.far_atoms), one round's dense lattice measure,
#: spanning the bulk and the far losses, holds at most this many points (64 rounds of randomized response,
#: ε0 = 0.1, with a loss of 663 at probability 1e-12: 1.1e7 points at the Δ the windows allowed, ~20 s to
#: discretise).
SPAN_POINTS = 2**22
#: Smallest ε the automatic spacing resolves to the relative target (below it the gap is absolute): short
#: ledgers, held to the target down to δ = 1e-2, and the others.
MIN_SCALE = 0.02
MIN_SCALE_LONG = 0.05
#: ... except where the composition window then still holds at most this many points (a finer lattice is
#: cheap), down to this ε (clones at ε0 = 0.055, n = 556626, 2 rounds, δ = 1e-15: ε = 6.9e-4, gap 1.2 ‰ →
#: 0.10 ‰ with Δ 7.1e-6 → 7.1e-7, no slower; a pair whose losses are 2e-16 apart is looser on the 1e-7 of a
#: floor at 0: δ(0) ≤ 8e-15 instead of 3.5e-18).
CHEAP_POINTS = 2**17
MIN_CHEAP_SCALE = 2e-3
#: One round is answered on exact pairs, relative down to ε ≈ 1e-4, where its refinement stops at an absolute
#: gap of 1e-8 (target 1e-4 times this scale).
ONE_ROUND_SCALE = 1e-4
#: Δ = target·ε/(divisor·√rounds): the coarser divisor where the lower witnesses' estimated error there is
#: at most _LOWER_SHARE of the budget target·ε (merged onto the lattice, dense pairs: O(Δ²) per round), the
#: finer one otherwise (sparse pairs: merging errs O(Δ·gap) per round, rounding down's shift O(Δ√rounds)).
_COARSE_DIVISOR = 2.0
_FINE_DIVISOR = 8.0
_LOWER_SHARE = 0.1


def composed_range(
    pairs: list[tuple[PrivacyLossPair, int]], *, delta: float = 1e-3, gaussian: bool = False
) -> tuple[float, float]:
    """``(ε, width)`` of a ledger (one representative pair per entry, with its round count), on a coarse lattice.

    ``ε`` estimates ε at ``delta`` over both orders, for the finite losses conditioned on being finite: a
    Chernoff bound or, with ``gaussian``, the smaller of
    it and the ε of the Gaussian with the composition's mean and variance (Chernoff is loose at large δ:
    5× at δ = 1e-2 for 16 rounds of ``ShuffledLDP(1e4, 1)``).  ``width`` is the length of the composition
    window at θ = 0 (Chernoff tails 1e-18); a lattice of spacing Δ needs about ``width/Δ`` points.  Only
    sizes the lattice: no bound depends on it.
    """
    coarse = _COARSE
    epsilon, width = 0.0, 0.0
    for order in (0, 1):
        factors = _finite_factors(pairs, order)
        if not factors:
            continue
        lo, hi = window(factors, coarse, 0.0, TAIL_TOLERANCE)
        width = max(width, hi - lo)
        log_m = composed_log_mgf(factors, coarse, CHERNOFF_LAMBDAS)
        chernoff = float(np.min((log_m - math.log(delta)) / CHERNOFF_LAMBDAS))
        epsilon = max(epsilon, min(chernoff, _gaussian_epsilon(factors, coarse, delta, chernoff)) if gaussian else chernoff)
    return epsilon, width


def _finite_factors(pairs: list[tuple[PrivacyLossPair, int]], order: int) -> list[Factor]:
    """One order of the ledger on the coarse lattice: each entry's finite losses, conditioned on being finite
    (a large mass at +∞ would otherwise pull the estimate to 0 and the lattice to its finest: kRR strong
    n = 100, k = 3, ε0 = 4.7, 64 rounds, where every δ < 1 - 2e-15 has ε = ∞: 8.4e6 points, 1.7 GB, 4.6 s)."""
    factors = []
    for pair, count in pairs:
        direction = pair.directions[min(order, len(pair.directions) - 1)].discretize(_COARSE)
        finite = float(direction.upper.sum())
        if finite > 0:
            factors.append(Factor(direction.upper_start, direction.upper / finite, count))
    return factors


def _order_widths(pairs: list[tuple[PrivacyLossPair, int]]) -> list[tuple[float, float | None]]:
    """Per order of the ledger (:func:`_finite_factors`): the whole composition's θ = 0 window length and,
    where it has rare far losses, that of its widest narrow composition (else None)."""
    widths = []
    for order in (0, 1):
        if factors := _finite_factors(pairs, order):
            lo, hi = window(factors, _COARSE, 0.0, TAIL_TOLERANCE)
            widths.append((hi - lo, mixture_width(factors, _COARSE, TAIL_TOLERANCE)))
    return widths or [(0.0, None)]


def _gaussian_epsilon(factors: list[Factor], spacing: float, delta: float, ceiling: float) -> float:
    """ε at which ``δ(ε) = E[(1 - e^{ε-L})_+] = δ`` for ``L ~ N(μ, s²)``, μ and s² summed over the factors.

    ``δ(ε) = Φ((μ-ε)/s) - e^{ε-μ+s²/2} Φ((μ-ε)/s - s)``, decreasing in ε; bisection on ``[0, ceiling]``.
    """
    from scipy.special import log_ndtr

    mean = var = 0.0
    for f in factors:
        m1, v1 = moments((f.start + np.arange(f.masses.size, dtype=np.float64)) * spacing, f.masses)
        mean, var = mean + f.count * m1, var + f.count * v1
    sd = math.sqrt(var)
    if not sd > 0.0 or not math.isfinite(ceiling) or ceiling <= 0.0:
        return ceiling

    def gaussian_delta(eps: NDArray[np.float64]) -> NDArray[np.float64]:
        x = (mean - eps) / sd
        return np.asarray(np.exp(log_ndtr(x)) - np.exp(eps - mean + 0.5 * var + log_ndtr(x - sd)), dtype=np.float64)

    # A grid bisection, not scipy.optimize: importing it would add ~0.3 s (measured) to every first query;
    # 64³ subintervals are far finer than the estimate needs.
    return grid_crossing(gaussian_delta, delta, 0.0, ceiling, points=65, rounds=3)


def choose_spacing(pairs: list[tuple[PrivacyLossPair, int]], target: float) -> float:
    """Lattice spacing for a ledger (one representative pair per entry, with its round count).

    Δ ≈ target·ε/(c√rounds) from an estimate ε of :func:`composed_range` (for one round, 1e-2·ε: a single
    round is answered off the lattice), never so fine that the composition window exceeds ``MAX_POINTS``
    lattice points -- or ``MAX_REFINED_POINTS`` where the lower witnesses' estimated error at the coarser
    Δ exceeds half the budget ``target·ε`` (Δ is halved while it does); clipped to [1e-7, 1e-2].

    ``c = 2`` where the pairs' lower witnesses are estimated to lose at most a tenth of the budget
    ``target·ε`` on that lattice (:func:`pldshuffle.pld.discretize.lower_error_estimates`): dense pairs,
    merged onto the lattice, whose two ends err by ``O(Δ²)`` per round, so most of the budget goes to
    dominating pairs that are not exact (kRR strong n = 1000, k = 4, γ = 0.25, 1e5 rounds, δ = 1e-6: gap
    0.02, 0.07, 0.24, 1.06 ‰ with c = 8, 4, 2, 1; 2RR worst case n = 1e4, ε0 = 2, from c = 8 to 2: 64 rounds
    0.76 → 0.77 ‰ at δ = 1e-2 in 7.8 → 5.3 s, 1e5 rounds 1.70 → 1.74 ‰ in 15.8 → 5.6 s).  ``c = 8``
    otherwise: sparse pairs (2RR at n = 50, randomized response itself), where merging errs by ``O(Δ·gap)``
    per round and rounding down's certified shift by about six standard deviations of the summed rounding
    offsets, ``6·Δ·√(rounds/12)`` ≈ 0.22·target·ε (2RR n = 50, ε0 = 2, 1024 rounds, δ = 1e-6: 3.1 ‰ with
    c = 2, 2.3 ‰ with c = 8).

    From 2 to ``SHORT_LEDGER`` rounds the 1e-3 target holds at every δ ≤ 1e-2, so ε is estimated at δ = 1e-2
    (the smallest ε, where a given absolute error weighs most; Chernoff and Gaussian) and resolved down to
    ``MIN_SCALE``.  Longer ledgers are held to their 2e-3 target down to δ = 1e-3, estimated there likewise
    (floor ``MIN_SCALE_LONG``; Chernoff alone was 2.8× too large after 1e6 rounds of kRR weak, n = 3,
    ε0 = 1e-3).  Below those floors the gap is absolute, except that a ledger whose window would still hold at
    most ``CHEAP_POINTS`` points at the finer Δ resolves ε down to ``MIN_CHEAP_SCALE``.  A single round keeps the 1e-2·ε rule: it is answered on the exact pairs, and a
    finer lattice measured looser there (2RR n = 1e7, δ = 1e-8: gap 6.3e-4 instead of 4.1e-4).
    """
    rounds = sum(n for _, n in pairs)
    short = 1 < rounds <= SHORT_LEDGER  # one round is answered off the lattice (exact pairs)
    epsilon, width = composed_range(pairs, delta=1e-2 if short else 1e-3, gaussian=rounds > 1)
    scale = max(epsilon, MIN_SCALE if short else MIN_SCALE_LONG)
    if rounds > 1:
        # Below the floor the gap is absolute, except where the window is narrow enough for a finer lattice
        # to stay cheap: the floor then falls to the scale whose window holds CHEAP_POINTS points, at most
        # to MIN_CHEAP_SCALE.
        scale = max(epsilon, min(scale, max(MIN_CHEAP_SCALE, width * _COARSE_DIVISOR * math.sqrt(rounds) / (target * CHEAP_POINTS))))

    def clipped(spacing: float, points: int = MAX_POINTS) -> float:
        wide = width
        if width / spacing > points:
            # Where rare far losses make the window too wide, the composition is a mixture of narrow ones
            # (pldshuffle.pld.far_atoms): each order is sized by the widest window it will actually realise.
            wide = max(narrow or whole if whole / spacing > points else whole for whole, narrow in _order_widths(pairs))
            # One round's lattice measure still spans its whole loss range densely: at most SPAN_POINTS points.
            span = max((float(np.ptp(d.losses)) for pair, _ in pairs for d in pair.directions if d.losses.size), default=0.0)
            wide = max(wide, span * points / SPAN_POINTS)
        return float(np.clip(max(spacing, wide / points), 1e-7, 1e-2))

    def lower_error(spacing: float) -> float:
        return sum(_lower_error(pair, count, spacing) for pair, count in pairs)

    if rounds == 1:
        return clipped(1e-2 * scale)
    budget = target * scale
    coarse = clipped(budget / (_COARSE_DIVISOR * math.sqrt(rounds)))
    if lower_error(coarse) <= _LOWER_SHARE * budget:
        return coarse
    spacing = clipped(budget / (_FINE_DIVISOR * math.sqrt(rounds)))
    # Sparse pairs over ~1e6 rounds whose per-round losses are small against the composition's spread fill
    # MAX_POINTS before their fine spacing, and their lower witnesses then miss the target (2RR n = 2,
    # ε0 = 1e-3, 1e6 rounds, δ = 1e-8: gap 5.5e-3; kRR n = 3, ε0 = 0.02: 2.0e-3): halve Δ, up to
    # MAX_REFINED_POINTS, while they are estimated to take more than half the budget.
    finest = clipped(budget / (_FINE_DIVISOR * math.sqrt(rounds)), MAX_REFINED_POINTS)
    while spacing > finest and lower_error(spacing) > budget / 2.0:
        spacing = max(spacing / 2.0, finest)
    return spacing


def _lower_error(pair: PrivacyLossPair, count: int, spacing: float) -> float:
    """Estimated error in ε of the pair's lower witness (the worse order) composed ``count`` times at ``spacing``."""
    return max(min(lower_error_estimates(d.discretize(spacing).lower_errors(), count)) for d in pair.directions)


def gap_scale(rounds: int) -> float:
    """Smallest ε at which a ledger of ``rounds`` rounds is held to its relative-gap target; below it the
    target is absolute, ``target·gap_scale(rounds)`` (``ONE_ROUND_SCALE`` for one round, ``MIN_SCALE`` up to
    ``SHORT_LEDGER`` rounds, ``MIN_SCALE_LONG`` beyond).  Used to judge a bracket loose
    (:mod:`pldshuffle._gap`)."""
    if rounds <= 1:
        return ONE_ROUND_SCALE
    return MIN_SCALE if rounds <= SHORT_LEDGER else MIN_SCALE_LONG


def relative_target(rounds: int) -> float:
    """Default certified relative ε gap: 1e-4 for one round, 1e-3 up to ``SHORT_LEDGER`` rounds, 2e-3 beyond."""
    if rounds == 1:
        return 1e-4
    return 1e-3 if rounds <= SHORT_LEDGER else 2e-3


def check_lattice_span(points: float, budget: float, spacing: float) -> None:
    """Refuse, before discretising anything, pairs whose single-round lattices (``points`` lattice points in
    all, ``LATTICE_BYTES_PER_POINT`` each) exceed the memory cap ``budget``: a lattice far finer than the
    pairs' loss range allocates that much before any composition is sized (kRR strong n = 100, ε0 = 0.01,
    Δ = 1e-6: 7.2e6 points, ~0.65 GiB at 96 bytes a point)."""
    needed = points * LATTICE_BYTES_PER_POINT
    if needed > budget:
        raise MemoryBudgetError(
            f"one round of the ledger's pairs needs {_points_and_bytes(points, needed)} at "
            f"value_discretization_interval={spacing:.3g}, above max_memory_bytes={budget:,.0f}; pass a larger "
            "value_discretization_interval or raise max_memory_bytes",
            needed,
            budget,
        )


def _points_and_bytes(points: float, needed: float, held: float = 0.0) -> str:
    """``"N lattice points (~G GiB)"`` for a refusal, with the bytes ``held`` beside them if any; past 1e15
    points (Δ = 1e-300, 2**200 rounds) in scientific notation rather than in hundreds of digits."""
    count = f"{points:,.0f}" if points < 1e15 else f"{points:.3g}"
    beside = f", {_bytes(held)} of it held by the ledger's terms" if held > 0 else ""
    return f"{count} lattice points (~{_bytes(needed)}{beside})"


def _bytes(size: float) -> str:
    """``size`` in GiB, or in MiB below one GiB (a small cap's refusal would read "~0.00 GiB")."""
    if size < 2**30:
        return f"{size / 2**20:.1f} MiB"
    return f"{size / 2**30:,.2f} GiB" if size < 1e15 * 2**30 else f"{size / 2**30:.3g} GiB"


def _check_memory(size: int, budget: int, spacing: float, held: int) -> None:
    needed = size * WORK_BYTES_PER_POINT + held
    if needed > budget:
        raise MemoryBudgetError(
            f"the composition needs a window of {_points_and_bytes(size, needed, held)} at "
            f"value_discretization_interval={spacing:.3g}, above max_memory_bytes={budget:,}; pass a larger "
            "value_discretization_interval or relative_gap_target, compose fewer rounds, or raise max_memory_bytes",
            needed,
            budget,
        )
