"""The integer search behind :func:`~pldshuffle.calibrate.find_min_users` and
:func:`~pldshuffle.calibrate.find_max_rounds`: adjacent integers that pass and fail a target.

Probes climb along a power law of ε in the parameter until one reaches the target's side, then narrow the
bracket by secants through the probes nearest the target (bisection as a fallback).  Only the probes'
pass/fail decides the answer; the law is a guess that saves probes (at most about ``5 log2(answer)``).
"""

from __future__ import annotations

import math
from typing import Any, Protocol

__all__ = ["Probes"]


class Probes(Protocol):
    """What the search reads of an objective: the certified upper ε of every probe so far, the target,
    and a pass/fail probe (computing and recording one)."""

    target_epsilon: float

    @property
    def history(self) -> dict[Any, float]: ...

    def passes(self, x: Any) -> bool: ...


#: A probe that does not yet reach the target's side is followed by one at least twice and at most this many
#: times larger (doubling where no power law is defined).
_MAX_STRIDE = 64.0
#: While looking for the target's side, a probe aims this factor past the power law's crossing, so that it
#: lands beyond it where the law is a little off.
_OVERSHOOT = 1.1
#: Slope of ``log ε`` against ``log x`` assumed from a single probe: amplification by shuffling makes ε fall
#: like ``1/sqrt(n)`` in the users; in the rounds ε grows at most linearly (from ``sqrt(r)`` far out).
_FIRST_SLOPE = {True: -0.5, False: 1.0}


def _power_law_crossing(objective: Probes, a: int, b: int | None, larger_passes: bool) -> float | None:
    """Where the power law ``ε = c·x^s`` through the probes ``a`` and ``b`` (their certified upper ends)
    meets the target; with ``b=None``, the law of slope :data:`_FIRST_SLOPE` through ``a``.  None where it
    is undefined: an ε that is not finite and positive (ε = ∞ below the infinity mass, ε = 0 at large δ),
    equal ε's, or a slope of the wrong sign (ε must fall with the users and grow with the rounds).  A
    guess only: every answer is decided by probes."""
    history = objective.history
    values = [history[x] for x in (a, b) if x is not None]
    if not all(0.0 < v < math.inf for v in values):
        return None
    if b is None:
        slope = _FIRST_SLOPE[larger_passes]
    elif a == b or values[0] == values[1]:
        return None
    else:
        slope = math.log(values[1] / values[0]) / math.log(b / a)
        if (slope < 0.0) != larger_passes:
            return None
    log_x = math.log(a) + math.log(objective.target_epsilon / values[0]) / slope
    return math.exp(min(log_x, 700.0))


def _nearest_probes(objective: Probes) -> list[int]:
    """The two probes whose finite positive ε are nearest the target (in log), the nearest first: the
    secant through them is the best local guess (the bracket's ends may lie far out on a plateau)."""
    history = objective.history
    finite = [x for x, v in history.items() if 0.0 < v < math.inf]
    finite.sort(key=lambda x: abs(math.log(history[x] / objective.target_epsilon)))
    return finite[:2]


def _integer_search(
    objective: Probes, start: int, limit: int, *, larger_passes: bool
) -> tuple[int | None, int | None]:
    """``(passing, failing)`` adjacent integers, searched from ``start`` up to ``limit``.

    ``larger_passes``: larger values meet the target (users); otherwise smaller ones do (rounds).
    An end not found in ``[start, limit]`` is ``None``.

    Probes climb from ``start`` until one reaches the target's side, each aiming :data:`_OVERSHOOT` past
    the crossing of the power law through the last two probes (:func:`_power_law_crossing`; ε of the
    users falls like ``n^{-1/2}``, of the rounds grows like ``r^{1/2}`` to ``r``), held to 2-64 times the
    last probe (the law of one probe where the last but one has no finite ε).  Inside the bracket, each
    probe is the law's crossing through the two probes nearest the target (:func:`_nearest_probes`),
    rounded to the passing side and kept strictly inside; where two probes in a row landed on one side, the
    next steps across the crossing by half as much as the bracket's end last moved (the secant converges from
    one side); after three probes that do not halve the bracket, the midpoint.  So it takes at most about
    ``5 log2(answer)`` probes (the climb at most ``log2``, each halving of the bracket at most four), against
    ``2 log2(answer)`` for doubling and bisection, and typically 6-10
    in all where the law holds (25-35 by bisection for an answer of 1e4-1e5 users).  Only the probes'
    pass/fail decides the answer.
    """
    probe, previous = start, None
    while objective.passes(probe) != larger_passes:
        if probe >= limit:
            return (None, probe) if larger_passes else (probe, None)
        crossing = _power_law_crossing(objective, probe, previous, larger_passes) or _power_law_crossing(objective, probe, None, larger_passes)
        stride = 2.0 if crossing is None else min(max(crossing * _OVERSHOOT / probe, 2.0), _MAX_STRIDE)
        previous, probe = probe, min(math.ceil(probe * stride), limit)
    if previous is None:
        return (probe, None) if larger_passes else (None, probe)
    good, bad = (probe, previous) if larger_passes else (previous, probe)
    toward = 1 if larger_passes else -1  # the direction of the passing side
    mark, stalled = abs(good - bad), 0
    side, run, moved = True, 0, 0  # the last probes' outcome, how many in a row, how far its end moved
    while abs(good - bad) > 1:
        low, high = min(good, bad), max(good, bad)
        nearest = _nearest_probes(objective)
        crossing = _power_law_crossing(objective, nearest[0], nearest[1], larger_passes) if len(nearest) == 2 and stalled < 3 else None
        if crossing is None:
            mid = (low + high) // 2
        else:
            mid = math.ceil(crossing) if larger_passes else math.floor(crossing)
            if run >= 2:  # the law keeps landing on one side: step across its crossing, half as far as the end last moved
                reach = max(1, moved // 2)
                mid = mid - toward * reach if side else mid + toward * (reach - 1)
            mid = min(max(mid, low + 1), high - 1)
        passed = objective.passes(mid)
        moved = abs(mid - (good if passed else bad))
        run, side = (run + 1 if passed == side else 1), passed
        if passed:
            good = mid
        else:
            bad = mid
        if abs(good - bad) <= mark / 2:
            mark, stalled = abs(good - bad), 0
        else:
            stalled += 1
    return good, bad
