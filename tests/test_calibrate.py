"""Calibration: the returned parameter meets the target and the neighbouring one on the unsafe side does not."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import pldshuffle as ps
from pldshuffle.calibrate import CalibrationResult, calibrate_local_epsilon, find_max_rounds, find_min_users

DELTA = 1e-6


def certified(mechanism, rounds=1):
    """The upper end of the analysed pair (for the specific dataset pair ``khh21`` it warns that it is not
    a guarantee, which these tests know)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ps.NotAGuaranteeWarning)
        return ps.FourierAccountant().compose(mechanism, rounds).get_epsilon(DELTA)


def khh21(num_users, local_epsilon):
    return ps.ShuffledBinaryRR(num_users, local_epsilon, dataset="khh21")


def test_local_epsilon_meets_target_and_larger_does_not():
    res = calibrate_local_epsilon(lambda e: khh21(1000, e), target_epsilon=0.5, target_delta=DELTA, rtol=1e-3)
    assert isinstance(res, CalibrationResult) and res.parameter == "local_epsilon"
    assert res.bounds.upper <= 0.5 and res.bounds.target_delta == DELTA
    assert res.mechanism == khh21(1000, res.value) and res.rounds == 1
    assert certified(res.mechanism) == res.bounds.upper  # the final call is reproducible
    passing, failing = res.bracket
    assert passing == res.value < failing <= res.value * (1 + 1e-3) * (1 + 1e-12)
    assert certified(khh21(1000, res.value * 1.002)) > 0.5


def test_local_epsilon_krr_strong_guarantee():
    from pldshuffle.mechanisms.krr import ShuffledKRR

    make = lambda e: ShuffledKRR(1000, 4, local_epsilon=e, adversary="strong")  # noqa: E731
    res = calibrate_local_epsilon(make, target_epsilon=1.0, target_delta=DELTA, rtol=1e-2)
    assert res.bounds.upper <= 1.0 and res.bounds.is_guarantee and res.mechanism.local_epsilon == res.value
    assert certified(make(res.bracket[1])) > 1.0


@pytest.mark.slow
def test_local_epsilon_worst_case_several_rounds():
    make = lambda e: ps.ShuffledBinaryRR(200, e)  # noqa: E731
    res = calibrate_local_epsilon(make, target_epsilon=1.0, target_delta=DELTA, rounds=2, rtol=1e-2)
    assert res.rounds == 2 and res.bounds.upper <= 1.0 and res.bounds.is_guarantee
    assert certified(make(res.bracket[1]), 2) > 1.0


def test_min_users_meets_target_and_fewer_do_not():
    res = find_min_users(lambda n: khh21(n, 1.0), target_epsilon=0.2, target_delta=DELTA, min_users=100)
    assert res.parameter == "num_users" and res.bracket == (res.value, res.value - 1)
    assert res.bounds.upper <= 0.2
    assert certified(khh21(res.value - 1, 1.0)) > 0.2


def test_max_rounds_meets_target_and_more_do_not():
    res = find_max_rounds(khh21(1000, 1.0), target_epsilon=0.2, target_delta=DELTA)
    assert res.parameter == "rounds" and res.value == res.rounds == 2 and res.bracket == (2, 3)
    assert res.bounds.upper <= 0.2
    assert certified(khh21(1000, 1.0), 3) > 0.2


def test_search_limit_passing_is_reported():
    res = find_max_rounds(khh21(1000, 1.0), target_epsilon=5.0, target_delta=DELTA, max_rounds=2)
    assert res.value == 2 and res.bracket == (2, None)
    res = calibrate_local_epsilon(lambda e: khh21(1000, e), target_epsilon=5.0, target_delta=DELTA, max_local_epsilon=1.0)
    assert res.value == 1.0 and res.bracket == (1.0, None)


def test_progress_reports_each_probe():
    lines = []
    find_max_rounds(khh21(1000, 1.0), target_epsilon=0.15, target_delta=DELTA, progress=lines.append)
    assert lines and all("rounds=" in line for line in lines)


def test_infeasible_targets_name_the_parameters():
    with pytest.raises(ValueError, match="infeasible.*local_epsilon=0.001.*target_epsilon=1e-05"):
        calibrate_local_epsilon(lambda e: khh21(100, e), target_epsilon=1e-5, target_delta=DELTA)
    with pytest.raises(ValueError, match="infeasible.*num_users=64.*max_users"):
        find_min_users(lambda n: khh21(n, 1.0), target_epsilon=0.01, target_delta=DELTA, max_users=64)
    with pytest.raises(ValueError, match="infeasible.*one round"):
        find_max_rounds(khh21(100, 1.0), target_epsilon=0.01, target_delta=DELTA)


def test_bad_arguments():
    with pytest.raises(ValueError, match="target_epsilon"):
        find_max_rounds(khh21(100, 1.0), target_epsilon=-1.0, target_delta=DELTA)
    with pytest.raises(ValueError, match="min_local_epsilon"):
        calibrate_local_epsilon(lambda e: khh21(100, e), target_epsilon=1.0, target_delta=DELTA,
                                min_local_epsilon=2.0, max_local_epsilon=1.0)
    with pytest.raises(TypeError, match="mechanism"):
        find_max_rounds("2RR", target_epsilon=1.0, target_delta=DELTA)
    with pytest.raises(TypeError, match="factory"):
        calibrate_local_epsilon(lambda e: None, target_epsilon=1.0, target_delta=DELTA)


class _Synthetic:
    """A stand-in for the calibration objective: ε(x) given by a vectorised function, every probe recorded."""

    def __init__(self, epsilon, target_epsilon):
        self.epsilon, self.target_epsilon = epsilon, target_epsilon
        self.history = {}

    def passes(self, x):
        self.history[x] = float(self.epsilon(np.array([x]))[0])
        return self.history[x] <= self.target_epsilon


@settings(max_examples=200, deadline=None)
@given(
    larger_passes=st.booleans(),
    shape=st.sampled_from(["power", "exponential", "step"]),
    exponent=st.floats(0.05, 3.0),
    scale=st.floats(1e-3, 1e3),
    floor=st.floats(0.0, 0.5),
    flat=st.integers(1, 5000),
    cap=st.sampled_from([math.inf, 1.0, 10.0]),
    noise=st.sampled_from([0.0, 1e-4, 1e-2]),
    target=st.floats(1e-3, 50.0),
    start=st.integers(1, 50),
    limit=st.integers(50, 200_000),
)
def test_integer_search_against_a_scan(larger_passes, shape, exponent, scale, floor, flat, cap, noise, target, start, limit):
    """On ε(x) of many shapes (power laws, exponentials and steps at ``flat``; a plateau up to ``flat``
    capped at ``cap`` or at ε = ∞, an offset ``floor``, a non-monotone ripple of relative size ``noise``),
    the search returns adjacent
    integers that pass and fail, the first change of a scan where ε is monotone, within the probe budget
    of its docstring (about 5·log2(limit))."""
    from pldshuffle.calibrate import _integer_search

    sign = -1.0 if larger_passes else 1.0

    def epsilon(x):
        x = np.asarray(x, dtype=np.float64)
        base = np.maximum(x, flat) if larger_passes else x
        if shape == "power":
            law = base ** (sign * exponent)
        elif shape == "exponential":
            law = np.exp(np.clip(sign * exponent * base / 1000.0, -700.0, 700.0))
        else:
            law = np.where((x >= flat) == larger_passes, 1e-3, 1e3) ** exponent
        value = np.minimum(floor + scale * law, cap) * (1.0 + noise * np.sin(x))
        if larger_passes and cap == math.inf:
            value = np.where(x < flat, math.inf, value)
        return value

    objective = _Synthetic(epsilon, target)
    passing, failing = _integer_search(objective, start, limit, larger_passes=larger_passes)
    if passing is not None:
        assert objective.history[passing] <= target
    if failing is not None:
        assert objective.history[failing] > target
    if passing is not None and failing is not None:
        assert abs(passing - failing) == 1 and (passing > failing) == larger_passes
    assert len(objective.history) <= 5 * math.log2(limit) + 8
    if noise == 0.0:  # monotone: the answer is the scan's first change
        passes = epsilon(np.arange(start, limit + 1)) <= target
        change = np.flatnonzero(passes != passes[0])
        if larger_passes:
            assert passing == (start if passes[0] else None if change.size == 0 else start + int(change[0]))
        else:
            assert passing == (None if not passes[0] else limit if change.size == 0 else start + int(change[0]) - 1)
