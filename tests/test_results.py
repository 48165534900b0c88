"""Result objects: float() is the guarantee, JSON-safe dictionaries, short reprs, NotAGuaranteeWarning."""

from __future__ import annotations

import json
import math
import warnings

import numpy as np
import pytest

import pldshuffle as ps
from pldshuffle.calibrate import CalibrationResult
from pldshuffle.results import DeltaBounds, EpsilonBounds, NotAGuaranteeWarning, json_safe, warn_if_not_guarantee


def test_float_is_the_upper_end_without_warning():
    bounds = EpsilonBounds(0.31, 0.32, 1e-6)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert float(bounds) == 0.32
        assert float(DeltaBounds(1e-7, 2e-7, 0.5)) == 2e-7
        assert float(DeltaBounds(np.array([1e-7]), np.array([2e-7]), np.array([0.5]))) == 2e-7
    assert tuple(bounds) == (0.31, 0.32) and bounds.relative_gap == pytest.approx(1 / 32)


def test_float_of_a_non_guarantee_warns():
    bounds = EpsilonBounds(0.31, 0.32, 1e-6, is_guarantee=False, caveats=("one dataset pair",))
    with pytest.warns(NotAGuaranteeWarning, match="one dataset pair") as record:
        assert float(bounds) == 0.32
    assert record[0].filename == __file__  # points at the user's line
    with pytest.warns(NotAGuaranteeWarning):
        float(DeltaBounds(1e-7, 2e-7, 0.5, is_guarantee=False))
    assert issubclass(NotAGuaranteeWarning, UserWarning) and ps.NotAGuaranteeWarning is NotAGuaranteeWarning


def test_warn_helper():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        warn_if_not_guarantee(True, ("caveat",))
    with pytest.warns(NotAGuaranteeWarning, match="NOT a privacy guarantee"):
        warn_if_not_guarantee(False, ())


def test_float_of_an_array_delta_bounds_is_a_type_error():
    bounds = DeltaBounds(np.zeros(3), np.ones(3), np.arange(3.0))
    with pytest.raises(TypeError, match="holds 3 values.*bounds.upper"):
        float(bounds)


def test_to_dict_is_json_safe():
    record = EpsilonBounds(1.0, math.inf, 1e-12, diagnostics={"grid_size": np.int64(8), "x": np.array([1.5])}).to_dict()
    assert record == {
        "quantity": "epsilon", "lower": 1.0, "upper": "inf", "target_delta": 1e-12, "relative_gap": "inf",
        "is_guarantee": True, "caveats": [], "diagnostics": {"grid_size": 8, "x": [1.5]},
    }
    assert json.loads(json.dumps(record)) == record
    delta = DeltaBounds(np.array([0.0, 0.1]), np.array([0.0, 0.2]), np.array([1.0, 0.5]), False, ("c",))
    assert json.loads(delta.to_json()) == {
        "quantity": "delta", "lower": [0.0, 0.1], "upper": [0.0, 0.2], "target_epsilon": [1.0, 0.5],
        "is_guarantee": False, "caveats": ["c"], "diagnostics": {},
    }
    assert json_safe((float("nan"), -math.inf)) == ["nan", "-inf"]


def test_short_reprs():
    assert repr(EpsilonBounds(0.318243123, 0.3182432, 1e-6)) == "EpsilonBounds(lower=0.318243, upper=0.318243, target_delta=1e-06)"
    text = repr(DeltaBounds(np.zeros(100), np.ones(100), np.linspace(0, 1, 100), False, ("a", "b"), {"big": np.zeros(10**4)}))
    assert text.startswith("DeltaBounds(lower=[0, 0, 0, ..., 0, 0, 0], upper=") and len(text) < 250
    assert text.endswith("is_guarantee=False, caveats=<2>)")


def test_accountant_results_round_trip():
    acc = ps.FourierAccountant().compose(ps.ShuffledBinaryRR(50, 1.0, dataset="khh21"), count=1)
    bounds = acc.get_epsilon_bounds(1e-3)
    assert not bounds.is_guarantee
    with pytest.warns(NotAGuaranteeWarning):
        assert float(bounds) == bounds.upper
    assert json.loads(bounds.to_json())["upper"] == bounds.upper


def test_calibration_result_dict_and_text():
    mechanism = ps.ShuffledBinaryRR(50, 1.0)
    bounds = EpsilonBounds(0.4, 0.41, 1e-6)
    result = CalibrationResult("num_users", 50, bounds, (50, None), mechanism, 2, 0.5, 1e-6)
    record = json.loads(result.to_json())
    assert record["parameter"] == "num_users" and record["value"] == 50 and record["bracket"] == [50, None]
    assert record["mechanism"]["type"] == "ShuffledBinaryRR"
    assert record["mechanism"]["parameters"] == {"num_users": 50, "local_epsilon": 1.0, "dataset": "worst"}
    assert record["bounds"] == bounds.to_dict() and record["rounds"] == 2
    assert str(result).startswith("num_users = 50 meets ε ≤ 0.5 at δ = 1e-06 (the search limit itself passed)")
    assert repr(result) == (
        "CalibrationResult(parameter='num_users', value=50, bracket=(50, None), "
        "bounds=EpsilonBounds(lower=0.4, upper=0.41, target_delta=1e-06), rounds=2, "
        "target_epsilon=0.5, target_delta=1e-06)"
    )


def test_infinite_epsilon_is_explained():
    assert "no finite epsilon is certified" in str(EpsilonBounds(math.inf, math.inf, 1e-12))
    assert "no finite epsilon" not in str(EpsilonBounds(1.0, 1.0, 1e-12))
