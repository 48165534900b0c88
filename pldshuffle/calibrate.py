"""Calibration: the largest ε0, the smallest number of users or the largest number of rounds for a target (ε, δ).

Each function searches on the **strict upper bound** ``FourierAccountant().compose(mechanism,
rounds).get_epsilon(target_delta)``, then verifies its answer with one final accountant call and
returns it together with that call's :class:`~pldshuffle.results.EpsilonBounds`.

The certified ε is increasing in ``local_epsilon`` and in the number of rounds and decreasing in
``num_users`` (observed for every mechanism of the package; not assumed blindly: the returned value is
always one at which the final call met the target, and the search steps to the safe side if it did not).

Cost: every probe is one accountant query (one mechanism build plus, for several rounds, one FFT
composition).  ``calibrate_local_epsilon`` uses Brent's method on ``log ε0`` (typically 8-12 probes),
the integer searches doubling then bisection (about ``2 log2(answer)`` probes).

Examples
--------
>>> import pldshuffle as ps
>>> from pldshuffle.calibrate import calibrate_local_epsilon
>>> res = calibrate_local_epsilon(
...     lambda eps0: ps.ShuffledBinaryRR(1000, eps0, dataset="khh21"),
...     target_epsilon=0.5, target_delta=1e-6, rounds=1)
>>> res.bounds.upper <= 0.5
True
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy import optimize

from ._validation import check_delta, check_int, check_positive_finite, check_probability
from .accountant import FourierAccountant
from .mechanisms.base import ShuffleMechanism
from .results import EpsilonBounds, JsonRecord, json_safe

__all__ = ["CalibrationResult", "calibrate_local_epsilon", "find_max_rounds", "find_min_users"]

Progress = Callable[[str], None]


@dataclass(frozen=True, repr=False)
class CalibrationResult(JsonRecord):
    """Outcome of a calibration search, verified by a final accountant call.

    Attributes
    ----------
    parameter : {"local_epsilon", "num_users", "rounds"}
        The searched parameter.
    value : float or int
        The calibrated value: ``bounds.upper <= target_epsilon`` holds at it.
    bounds : EpsilonBounds
        Result of the final accountant call at ``value`` (``bounds.upper`` is the guarantee when
        ``bounds.is_guarantee``).
    bracket : tuple
        ``(passing, failing)``: the last probed value that met the target (``== value``) and the
        nearest probed value that did not; ``failing`` is ``None`` when the search limit itself passed
        (the answer may then lie beyond the limit).
    mechanism : ShuffleMechanism
        The mechanism at ``value``.
    rounds : int
        Rounds composed at ``value``.
    target_epsilon, target_delta : float
        The target.

    ``str(result)`` is one readable line; :meth:`to_dict` / :meth:`to_json` give the JSON form.
    """

    parameter: str
    value: float | int
    bounds: EpsilonBounds
    bracket: tuple[float | int, float | int | None]
    mechanism: ShuffleMechanism
    rounds: int
    target_epsilon: float
    target_delta: float

    def to_dict(self) -> dict[str, Any]:
        """JSON-safe dictionary of the result.

        Keys: ``parameter``, ``value``, ``bracket`` (``[passing, failing]``, ``failing`` ``null`` when
        the search limit passed), ``rounds``, ``target_epsilon``, ``target_delta``, ``mechanism``
        (``{"type": class name, "description": describe(), "parameters": {...}}``) and ``bounds``
        (:meth:`EpsilonBounds.to_dict`).  Non-finite numbers are strings (``"inf"``).
        """
        mechanism = self.mechanism
        parameters: dict[str, Any] = (
            {f.name: getattr(mechanism, f.name) for f in dataclasses.fields(mechanism)}
            if dataclasses.is_dataclass(mechanism) else {}
        )
        record: dict[str, Any] = json_safe({
            "parameter": self.parameter,
            "value": self.value,
            "bracket": self.bracket,
            "rounds": self.rounds,
            "target_epsilon": self.target_epsilon,
            "target_delta": self.target_delta,
            "mechanism": {"type": type(mechanism).__name__, "description": mechanism.describe(),
                          "parameters": parameters},
            "bounds": self.bounds.to_dict(),
        })
        return record

    def __str__(self) -> str:
        failing = self.bracket[1]
        neighbour = "the search limit itself passed" if failing is None else f"{self.parameter} = {failing:.6g} does not"
        return (
            f"{self.parameter} = {self.value:.6g} meets ε ≤ {self.target_epsilon:g} at δ = {self.target_delta:g} "
            f"({neighbour}); certified {self.bounds} for {self.rounds} round(s) of {self.mechanism.describe()}"
        )

    def __repr__(self) -> str:
        return (
            f"CalibrationResult(parameter={self.parameter!r}, value={self.value:.6g}, "
            f"bracket=({', '.join('None' if b is None else f'{b:.6g}' for b in self.bracket)}), "
            f"bounds={self.bounds!r}, rounds={self.rounds}, "
            f"target_epsilon={self.target_epsilon:g}, target_delta={self.target_delta:g})"
        )


class _Objective:
    """Certified ε upper bound of ``make(x)`` composed ``rounds(x)`` times; one fresh accountant per probe."""

    def __init__(
        self,
        make: Callable[[Any], ShuffleMechanism],
        rounds: Callable[[Any], int],
        target_epsilon: float,
        target_delta: float,
        accountant_options: Mapping[str, Any] | None,
        progress: Progress | None,
        name: str,
    ) -> None:
        self.make, self.rounds = make, rounds
        self.target_epsilon, self.target_delta = target_epsilon, target_delta
        self.options = dict(accountant_options or {})
        self.progress, self.name = progress, name
        self.history: dict[Any, float] = {}

    def bounds(self, x: Any) -> tuple[ShuffleMechanism, EpsilonBounds]:
        mechanism = self.make(x)
        if not isinstance(mechanism, ShuffleMechanism):
            raise TypeError(f"the mechanism factory must return a pldshuffle mechanism, got {type(mechanism).__name__}")
        count = self.rounds(x)
        result = FourierAccountant(**self.options).compose(mechanism, count).get_epsilon_bounds(self.target_delta)
        self.history[x] = result.upper
        if self.progress is not None:
            self.progress(f"{self.name}={x:.6g}: certified ε ≤ {result.upper:.6g} (target {self.target_epsilon:g})")
        return mechanism, result

    def passes(self, x: Any) -> bool:
        return self.bounds(x)[1].upper <= self.target_epsilon

    def describe_target(self) -> str:
        return f"target_epsilon={self.target_epsilon:g} at target_delta={self.target_delta:g}"


def _check_target(target_epsilon: float, target_delta: float) -> tuple[float, float]:
    return check_positive_finite("target_epsilon", target_epsilon), check_delta(target_delta)


def _finish(
    objective: _Objective,
    parameter: str,
    passing: float | int,
    failing: float | int | None,
    safer: Callable[[Any], Any | None],
) -> CalibrationResult:
    """Verify ``passing`` with one final accountant call; if it fails, step with ``safer`` until it passes."""
    value: Any = passing
    for _ in range(64):
        mechanism, bounds = objective.bounds(value)
        if bounds.upper <= objective.target_epsilon:
            return CalibrationResult(
                parameter, value, bounds, (value, failing), mechanism, objective.rounds(value),
                objective.target_epsilon, objective.target_delta,
            )
        failing, value = value, safer(value)
        if value is None:
            break
    raise RuntimeError(
        f"calibration of {parameter} could not verify a value meeting {objective.describe_target()} "
        f"(the certified bound is not monotone here); last value tried: {failing!r}"
    )


def calibrate_local_epsilon(
    make_mechanism: Callable[[float], ShuffleMechanism],
    *,
    target_epsilon: float,
    target_delta: float,
    rounds: int = 1,
    min_local_epsilon: float = 1e-3,
    max_local_epsilon: float = 20.0,
    rtol: float = 1e-3,
    accountant_options: Mapping[str, Any] | None = None,
    progress: Progress | None = None,
) -> CalibrationResult:
    """Largest local ε0 whose certified ε over ``rounds`` rounds is at most ``target_epsilon`` at δ.

    Parameters
    ----------
    make_mechanism : callable
        ``eps0 -> mechanism``, e.g. ``lambda e: ShuffledKRR(10_000, 4, local_epsilon=e, adversary="strong")``.
    target_epsilon, target_delta : float
        The target: certified ``ε(target_delta) <= target_epsilon``.
    rounds : int
        Rounds of the mechanism composed (the same ε0 in every round).
    min_local_epsilon, max_local_epsilon : float
        Search range.  If ``min_local_epsilon`` already fails, ``ValueError``; if ``max_local_epsilon``
        passes it is returned with ``bracket[1] is None``.
    rtol : float
        Relative width of the final bracket: the answer is within a factor ``1 + rtol`` of the true
        largest ε0 (always on the safe side).
    accountant_options : mapping, optional
        Keyword arguments for :class:`~pldshuffle.FourierAccountant`.
    progress : callable, optional
        Called with one line of text per probe.

    Returns
    -------
    CalibrationResult
        ``parameter="local_epsilon"``; ``value`` meets the target, ``bracket[1]`` does not.

    Raises
    ------
    ValueError
        If the target is infeasible in the range (message names the parameters), or for bad input.
    """
    target_epsilon, target_delta = _check_target(target_epsilon, target_delta)
    rounds = check_int("rounds", rounds, minimum=1)
    lo = check_positive_finite("min_local_epsilon", min_local_epsilon)
    hi = check_positive_finite("max_local_epsilon", max_local_epsilon)
    if lo >= hi:
        raise ValueError(f"min_local_epsilon must be < max_local_epsilon, got {lo!r} and {hi!r}")
    rtol = check_probability("rtol", rtol)
    floor = lo
    objective = _Objective(make_mechanism, lambda _: rounds, target_epsilon, target_delta,
                           accountant_options, progress, "local_epsilon")

    if not objective.passes(lo):
        raise ValueError(
            f"infeasible: even local_epsilon={lo:g} (min_local_epsilon) does not meet "
            f"{objective.describe_target()} with rounds={rounds}; use more users, fewer rounds, a "
            "larger target, or a smaller min_local_epsilon"
        )
    if objective.passes(hi):
        return _finish(objective, "local_epsilon", hi, None, lambda x: None)
    # Brent's method on log ε0 (ε0 spans orders of magnitude) until the bracket is within a factor 1 + rtol;
    # ε = inf is capped so the objective stays finite.  The bracket is read off the probes themselves.
    cap = 4.0 * target_epsilon
    ends = {math.log(lo): lo, math.log(hi): hi}

    def excess(t: float) -> float:
        x = ends.get(t, math.exp(t))
        upper = objective.history[x] if x in objective.history else objective.bounds(x)[1].upper
        return min(upper, cap) - target_epsilon

    optimize.brentq(excess, math.log(lo), math.log(hi), xtol=math.log1p(rtol) / 2.0, rtol=4.0 * np.finfo(float).eps)
    hi = min(x for x, eps in objective.history.items() if eps > target_epsilon)
    lo = max(x for x, eps in objective.history.items() if eps <= target_epsilon and x < hi)
    return _finish(objective, "local_epsilon", lo, hi, lambda x: x / (1.0 + rtol) if x / (1.0 + rtol) >= floor else None)


def _integer_search(
    objective: _Objective, start: int, limit: int, *, larger_passes: bool
) -> tuple[int | None, int | None]:
    """``(passing, failing)`` adjacent integers by doubling from ``start`` up to ``limit``, then bisection.

    ``larger_passes``: larger values meet the target (users); otherwise smaller ones do (rounds).
    An end not found in ``[start, limit]`` is ``None``.
    """
    probe, previous = start, None
    while objective.passes(probe) != larger_passes:
        previous = probe
        if probe >= limit:
            return (None, probe) if larger_passes else (probe, None)
        probe = min(2 * probe, limit)
    if previous is None:
        return (probe, None) if larger_passes else (None, probe)
    good, bad = (probe, previous) if larger_passes else (previous, probe)
    while abs(good - bad) > 1:
        mid = (good + bad) // 2
        if objective.passes(mid):
            good = mid
        else:
            bad = mid
    return good, bad


def find_min_users(
    make_mechanism: Callable[[int], ShuffleMechanism],
    *,
    target_epsilon: float,
    target_delta: float,
    rounds: int = 1,
    min_users: int = 2,
    max_users: int = 10**6,
    accountant_options: Mapping[str, Any] | None = None,
    progress: Progress | None = None,
) -> CalibrationResult:
    """Smallest number of users whose certified ε over ``rounds`` rounds is at most ``target_epsilon``.

    Parameters
    ----------
    make_mechanism : callable
        ``num_users -> mechanism``, e.g. ``lambda n: ShuffledBinaryRR(n, 1.0)``.
    target_epsilon, target_delta : float
        The target.
    rounds : int
        Rounds composed.
    min_users, max_users : int
        Search range.  The search probes ``min_users, 2·min_users, 4·min_users, …`` until one passes,
        then bisects to adjacent integers.  ``ValueError`` if ``max_users`` fails.
    accountant_options, progress
        As in :func:`calibrate_local_epsilon`.

    Returns
    -------
    CalibrationResult
        ``parameter="num_users"``; ``value`` meets the target and ``value - 1`` (``bracket[1]``) does
        not, unless ``value == min_users`` (then ``bracket[1] is None``).
    """
    target_epsilon, target_delta = _check_target(target_epsilon, target_delta)
    rounds = check_int("rounds", rounds, minimum=1)
    min_users = check_int("min_users", min_users, minimum=2)
    max_users = check_int("max_users", max_users, minimum=min_users)
    objective = _Objective(make_mechanism, lambda _: rounds, target_epsilon, target_delta,
                           accountant_options, progress, "num_users")
    passing, failing = _integer_search(objective, min_users, max_users, larger_passes=True)
    if passing is None:
        raise ValueError(
            f"infeasible: even num_users={max_users} (max_users) does not meet {objective.describe_target()} "
            f"with rounds={rounds}; use a smaller local epsilon, fewer rounds, a larger target, or raise max_users"
        )
    return _finish(objective, "num_users", passing, failing, lambda n: n + 1 if n < max_users else None)


def find_max_rounds(
    mechanism: ShuffleMechanism,
    *,
    target_epsilon: float,
    target_delta: float,
    max_rounds: int = 10_000,
    accountant_options: Mapping[str, Any] | None = None,
    progress: Progress | None = None,
) -> CalibrationResult:
    """Largest number of rounds of ``mechanism`` whose certified ε is at most ``target_epsilon`` at δ.

    Parameters
    ----------
    mechanism : ShuffleMechanism
        The mechanism run in every round.
    target_epsilon, target_delta : float
        The target.
    max_rounds : int
        Search limit; returned with ``bracket[1] is None`` if it passes.
    accountant_options, progress
        As in :func:`calibrate_local_epsilon`.

    Returns
    -------
    CalibrationResult
        ``parameter="rounds"``; ``value`` meets the target and ``value + 1`` (``bracket[1]``) does not.
    """
    target_epsilon, target_delta = _check_target(target_epsilon, target_delta)
    if not isinstance(mechanism, ShuffleMechanism):
        raise TypeError(f"mechanism must be a pldshuffle mechanism, got {type(mechanism).__name__}")
    max_rounds = check_int("max_rounds", max_rounds, minimum=1)
    objective = _Objective(lambda _: mechanism, lambda r: r, target_epsilon, target_delta,
                           accountant_options, progress, "rounds")
    passing, failing = _integer_search(objective, 1, max_rounds, larger_passes=False)
    if passing is None:
        raise ValueError(
            f"infeasible: even one round of {mechanism.describe()} does not meet {objective.describe_target()}; "
            "use a smaller local epsilon, more users, or a larger target"
        )
    return _finish(objective, "rounds", passing, failing, lambda r: r - 1 if r > 1 else None)
