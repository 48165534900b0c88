"""A rough a-priori estimate of the time a ledger takes, to warn before long computations.

The costs that grow without bound are (a) the FFT compositions: each realisation transforms a window
of W lattice points, O(W log W), and there are about tilts × orders × (1 + witnesses) realisations; and
(b) building the mechanisms' pair families, which each mechanism estimates itself
(:meth:`~pldshuffle.ShuffleMechanism.family_seconds`: the branch and bound over the datasets of
:class:`~pldshuffle.ShuffledBinaryRR`, the supports of :class:`~pldshuffle.ShuffledKRR` and of the clone
pairs of :class:`~pldshuffle.ShuffledLDP`).  Everything else (building lattice measures, queries) is
cheaper by orders of magnitude in the measured cases.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable, Sequence

from .pld.sizing import BYTES_PER_POINT, WORK_BYTES_PER_POINT
from .pld.sizing import composed_range
from .mechanisms.base import DEFAULT_TAIL_MASS, PairFamily, ShuffleMechanism
from .results import SlowComputationWarning

__all__ = ["SLOW_SECONDS", "estimated_seconds", "warn_if_slow"]

#: Seconds per (point × log2 points) of one FFT realisation: 4 realisations of 9.7e6 points took 9.0 s
#: (ShuffledKRR(1000, 4, gamma=0.25, adversary="strong"), 1024 rounds, Δ = 1e-5; 2 CPU cores, scipy FFT).
FFT_SECONDS = 1.0e-8
#: A same-data block's cover composes each cell's pair and a dataset of it ``count`` times: about this many
#: compositions of the block's own window (measured on 2RR: 12 s at n = 300, 4 rounds; 22 s at n = 2000,
#: 8 rounds; 35 s at n = 1e4, 16 rounds: 127, 100 and 73 times one composition's FFT cost).
BLOCK_COMPOSITIONS = 100
#: Tilted frames per composition assumed before they are chosen (θ = 0 and one saddle point is usual; at most 3).
TILTS = 2
#: Warn when the estimate exceeds this many seconds.
SLOW_SECONDS = 30.0


def estimated_seconds(
    ledger: Sequence[tuple[ShuffleMechanism, int]],
    window_points: float,
    *,
    directions: int = 2,
    witnesses: int = 1,
    block_points: Sequence[float] = (),
    tail_mass: float = DEFAULT_TAIL_MASS,
) -> float:
    """Rough order-of-magnitude estimate of the seconds the accountant needs to build a ledger.

    Calibrated on one 2-core machine (the constants of this module and of the mechanisms name the
    measurements); expect a factor of 2-3 either way elsewhere.  Method: the sum of

    * the FFT compositions, ``TILTS × directions × (1 + witnesses) × FFT_SECONDS · W log2 W`` (none for a
      single round, which is answered without composing);
    * each distinct mechanism's :meth:`~pldshuffle.ShuffleMechanism.family_seconds` at ``tail_mass``
      (its pair family is built once);
    * for each same-data block of a worst case, its cover, ``BLOCK_COMPOSITIONS × TILTS × directions ×
      FFT_SECONDS · W_b log2 W_b`` for the block's own window ``W_b``.

    Other costs (lattice measures, queries) are not modelled.

    Parameters
    ----------
    ledger : sequence of (mechanism, count)
    window_points : float
        Lattice points W of the composition window (composed loss range / spacing); 0 when not known yet
        (the FFT compositions are then not counted).
    directions : int
        Orders of the neighbouring pair realised (1 for a symmetric ledger, else 2).
    witnesses : int
        Lower-bound witness pairs realised besides the upper measure.
    block_points : sequence of float
        Window points of each same-data block whose mechanism is a worst case over datasets (a family
        with several members).
    tail_mass : float
        The ledger's tail mass per mechanism (the supports' size depends on it).

    Returns
    -------
    float
        Estimated seconds.
    """
    seconds = sum(mechanism.family_seconds(tail_mass=tail_mass) for mechanism in dict.fromkeys(m for m, _ in ledger))
    if sum(count for _, count in ledger) > 1 and window_points > 0:
        points = max(float(window_points), 2.0)
        seconds += TILTS * directions * (1 + witnesses) * FFT_SECONDS * points * math.log2(points)
    for block in block_points:
        points = max(float(block), 2.0)
        seconds += BLOCK_COMPOSITIONS * TILTS * directions * FFT_SECONDS * points * math.log2(points)
    return seconds


def warn_if_slow(
    ledger: Sequence[tuple[ShuffleMechanism, int]],
    report: Callable[[str], None],
    *,
    family: Callable[[ShuffleMechanism], PairFamily] | None = None,
    spacing: float | None = None,
    same_data: Sequence[tuple[ShuffleMechanism, int]] = (),
    tail_mass: float = DEFAULT_TAIL_MASS,
    max_memory_bytes: float = math.inf,
) -> bool:
    """Warn (:class:`SlowComputationWarning`) and report when the ledger is estimated to take > ``SLOW_SECONDS``.

    Parameters
    ----------
    ledger : sequence of (mechanism, count)
    report : callable
        Progress callback; receives the warning's message too.
    family, spacing : optional
        The (cached) pair family of a mechanism and the lattice spacing.  Without them only the costs
        known from the parameters are counted (building the pair families), so that a warning can come
        before the families are built; with them the FFT compositions are counted as well.
    same_data : sequence of (mechanism, count)
        The ledger's same-data blocks; with ``family`` and ``spacing``, the covers of those that are worst
        cases over datasets are counted.
    tail_mass : float
        The ledger's tail mass per mechanism.
    max_memory_bytes : float
        The accountant's memory cap: a window beyond what it holds is coarsened to fit before it is
        composed (``BYTES_PER_POINT`` per held point of every realisation, ``WORK_BYTES_PER_POINT`` for the
        transform at work), so the estimate counts at most that many points.

    Returns
    -------
    bool
        Whether it warned.
    """
    directions, witnesses, points, blocks = 1, 0, 0.0, []
    # A single round is answered without composing: no window to measure.
    if family is not None and spacing is not None and sum(n for _, n in ledger) > 1:
        chosen = [family(m) for m, _ in ledger]
        directions = max(len(f.upper[0].directions) for f in chosen)
        witnesses = max(len(f.lower) for f in chosen)
        points = composed_range([(f.upper[0], n) for f, (_, n) in zip(chosen, ledger)])[1] / spacing
        realisations = TILTS * directions * (1 + witnesses)
        points = min(points, max_memory_bytes / (BYTES_PER_POINT * realisations + WORK_BYTES_PER_POINT))
        for mechanism, count in same_data:
            block = family(mechanism)
            if count > 1 and (block.cells is not None or len(block.upper) > 1):
                blocks.append(composed_range([(block.upper[0], count)])[1] / spacing)
    seconds = estimated_seconds(ledger, points, directions=directions, witnesses=witnesses, block_points=blocks, tail_mass=tail_mass)
    if seconds <= SLOW_SECONDS:
        return False
    # Past ~a day in scientific notation (2**200 rounds: hundreds of digits otherwise).
    duration = f"{seconds:.0f}" if seconds < 1e5 else f"{seconds:.1e}"
    message = f"this composition is estimated to take ~{duration} s (a rough order-of-magnitude estimate)"
    # Warn before reporting: the CLI prints the warning once and skips the identical stage message.
    warnings.warn(message, SlowComputationWarning, stacklevel=4)
    report(message)
    return True
