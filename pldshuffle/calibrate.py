"""Calibration: the largest ε0, the smallest number of users or the largest number of rounds for a target (ε, δ).

Each function searches on the **strict upper bound** ``FourierAccountant().compose(mechanism,
rounds).get_epsilon(target_delta)`` and returns its answer together with the
:class:`~pldshuffle.EpsilonBounds` of the accountant call made at it (each value is computed once:
the answer is a probe that met the target).

The certified ε is increasing in ``local_epsilon`` and in the number of rounds and decreasing in
``num_users`` (observed for every mechanism of the package; not assumed blindly: the returned value is
always one at which an accountant call met the target, and the search steps to the safe side if it did not).

Cost: every probe is one accountant query (one mechanism build plus, for several rounds, one FFT
composition).  ``calibrate_local_epsilon`` uses Brent's method on ``log ε0`` (typically 8-12 probes),
the integer searches climb and then narrow a bracket along a power law of ε in the parameter (typically
6-10 probes; at most about ``5 log2(answer)``, see ``_integer_search``).

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

from ._validation import (
    check_callable,
    check_delta,
    check_int,
    check_local_epsilon,
    check_mapping,
    check_positive_finite,
    check_probability,
    show,
)
from ._integer_search import _integer_search
from .accountant import FourierAccountant
from .mechanisms.base import ShuffleMechanism, check_mechanism
from .results import EpsilonBounds, JsonRecord

__all__ = ["CalibrationResult", "calibrate_local_epsilon", "find_max_rounds", "find_min_users"]

Progress = Callable[[str], None]


@dataclass(frozen=True, repr=False)
class CalibrationResult(JsonRecord):
    """Outcome of a calibration search, with the accountant's bounds at the answer.

    Attributes
    ----------
    parameter : {"local_epsilon", "num_users", "rounds"}
        The searched parameter.
    value : float or int
        The calibrated value: ``bounds.upper <= target_epsilon`` holds at it.
    bounds : EpsilonBounds
        Result of the accountant call at ``value`` (``bounds.upper`` is the guarantee when
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

    #: Keys of :meth:`to_dict`: ``bracket`` is ``[passing, failing]`` (``failing`` ``null`` when the search
    #: limit passed), ``mechanism`` is ``{"type": class name, "description": describe(), "parameters": {...}}``
    #: and ``bounds`` is :meth:`EpsilonBounds.to_dict`.  Non-finite numbers are strings (``"inf"``).
    _record_keys = ("parameter", "value", "bracket", "rounds", "target_epsilon", "target_delta", "mechanism", "bounds")

    def _record_value(self, key: str, value: Any) -> Any:
        if key != "mechanism":
            return super()._record_value(key, value)
        parameters: dict[str, Any] = (
            {f.name: getattr(value, f.name) for f in dataclasses.fields(value)} if dataclasses.is_dataclass(value) else {}
        )
        return {"type": type(value).__name__, "description": value.describe(), "parameters": parameters}

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
    """Certified ε upper bound of ``make(x)`` composed ``rounds(x)`` times; one fresh accountant per probed
    value, each computed once (``results``: the mechanisms and bounds; ``history``: their upper ends)."""

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
        self.results: dict[Any, tuple[ShuffleMechanism, EpsilonBounds]] = {}

    @property
    def history(self) -> dict[Any, float]:
        """The certified upper ε of every value probed so far."""
        return {x: bounds.upper for x, (_, bounds) in self.results.items()}

    def bounds(self, x: Any) -> tuple[ShuffleMechanism, EpsilonBounds]:
        if x in self.results:
            return self.results[x]
        mechanism = check_mechanism(self.make(x), "the mechanism factory's result")
        count = self.rounds(x)
        result = FourierAccountant(**self.options).compose(mechanism, count).get_epsilon_bounds(self.target_delta)
        self.results[x] = mechanism, result
        if self.progress is not None:
            self.progress(f"{self.name}={x:.6g}: certified ε ≤ {result.upper:.6g} (target {self.target_epsilon:g})")
        return mechanism, result

    def passes(self, x: Any) -> bool:
        return self.bounds(x)[1].upper <= self.target_epsilon

    def describe_target(self) -> str:
        return f"target_epsilon={self.target_epsilon:g} at target_delta={self.target_delta:g}"


def _check_target(target_epsilon: float, target_delta: float) -> tuple[float, float]:
    return check_positive_finite("target_epsilon", target_epsilon), check_delta(target_delta)


def _check_options(accountant_options: object, progress: object) -> dict[str, Any]:
    """``accountant_options`` as a dict that :class:`FourierAccountant` accepts (tried once, up front, so a
    bad option is named before any probe), and ``progress`` None or callable."""
    options = check_mapping("accountant_options", accountant_options)
    try:
        FourierAccountant(**options)
    except TypeError as exc:
        raise TypeError(f"accountant_options: {exc}") from None
    except ValueError as exc:
        raise ValueError(f"accountant_options: {exc}") from None
    if progress is not None:
        check_callable("progress", progress, "called with one line of text per probe, or None")
    return options


def _finish(
    objective: _Objective,
    parameter: str,
    passing: float | int,
    failing: float | int | None,
    safer: Callable[[Any], Any | None],
) -> CalibrationResult:
    """The result at ``passing`` (a probe's, reused); if it fails, step with ``safer`` until a value passes."""
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
        Search range, within a local ε0's valid range ``(0, 500]`` and checked before any probe.  If
        ``min_local_epsilon`` already fails, ``ValueError``; if ``max_local_epsilon`` passes it is
        returned with ``bracket[1] is None``.
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
    check_callable("make_mechanism", make_mechanism, "local_epsilon -> ShuffleMechanism")
    target_epsilon, target_delta = _check_target(target_epsilon, target_delta)
    rounds = check_int("rounds", rounds, minimum=1)
    # The search range is checked whole before any probe: every probed ε0 must be a valid local ε0.
    lo = check_local_epsilon(min_local_epsilon, "min_local_epsilon")
    hi = check_local_epsilon(max_local_epsilon, "max_local_epsilon")
    if lo >= hi:
        raise ValueError(f"min_local_epsilon must be < max_local_epsilon, got {show(lo)} and {show(hi)}")
    rtol = check_probability("rtol", rtol)
    accountant_options = _check_options(accountant_options, progress)
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
        upper = objective.bounds(x)[1].upper
        return min(upper, cap) - target_epsilon

    optimize.brentq(excess, math.log(lo), math.log(hi), xtol=math.log1p(rtol) / 2.0, rtol=4.0 * np.finfo(float).eps)
    hi = min(x for x, eps in objective.history.items() if eps > target_epsilon)
    lo = max(x for x, eps in objective.history.items() if eps <= target_epsilon and x < hi)
    return _finish(objective, "local_epsilon", lo, hi, lambda x: x / (1.0 + rtol) if x / (1.0 + rtol) >= floor else None)


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
        Search range.  The search probes upwards from ``min_users`` (2-64 times further each step, aimed
        where ε ∝ ``n^{-1/2}`` through the last probes meets the target) until one passes, then narrows to
        adjacent integers.  ``ValueError`` if ``max_users`` fails.
    accountant_options, progress
        As in :func:`calibrate_local_epsilon`.

    Returns
    -------
    CalibrationResult
        ``parameter="num_users"``; ``value`` meets the target and ``value - 1`` (``bracket[1]``) does
        not, unless ``value == min_users`` (then ``bracket[1] is None``).
    """
    check_callable("make_mechanism", make_mechanism, "num_users -> ShuffleMechanism")
    target_epsilon, target_delta = _check_target(target_epsilon, target_delta)
    rounds = check_int("rounds", rounds, minimum=1)
    min_users = check_int("min_users", min_users, minimum=2)
    max_users = check_int("max_users", max_users, minimum=2)
    if min_users > max_users:
        raise ValueError(f"min_users must be <= max_users, got {min_users} and {max_users}")
    accountant_options = _check_options(accountant_options, progress)
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
    check_mechanism(mechanism)
    max_rounds = check_int("max_rounds", max_rounds, minimum=1)
    accountant_options = _check_options(accountant_options, progress)
    objective = _Objective(lambda _: mechanism, lambda r: r, target_epsilon, target_delta,
                           accountant_options, progress, "rounds")
    passing, failing = _integer_search(objective, 1, max_rounds, larger_passes=False)
    if passing is None:
        raise ValueError(
            f"infeasible: even one round of {mechanism.describe()} does not meet {objective.describe_target()}; "
            "use a smaller local epsilon, more users, or a larger target"
        )
    return _finish(objective, "rounds", passing, failing, lambda r: r - 1 if r > 1 else None)
