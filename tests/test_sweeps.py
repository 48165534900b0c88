"""Sweeps beyond one process: mechanisms, ledgers and results pickle, and the dask recipe of
docs/sweeps.md gives the same answers as the same function run in-process."""

from __future__ import annotations

import pickle
import warnings
import re
from pathlib import Path

import numpy as np
import pytest

import pldshuffle as ps
from pldshuffle.mechanisms.registry import MECHANISMS

ROOT = Path(__file__).resolve().parent.parent

MECHANISM_EXAMPLES = [
    ps.ShuffledBinaryRR(20, 1.0),
    ps.ShuffledBinaryRR(20, 1.0, dataset="khh21"),
    ps.ShuffledKRR(20, 4, gamma=0.3),
    ps.ShuffledKRR(20, 4, local_epsilon=1.0, adversary="strong"),
    ps.ShuffledLDP(20, 1.0),
    ps.ShuffledLDP(20, randomizer=ps.randomizers.OUE(domain_size=8, local_epsilon=1.0)),
    ps.ShuffledLDP(20, randomizer=ps.randomizers.Finite(np.array([[0.7, 0.2, 0.1], [0.2, 0.7, 0.1], [0.1, 0.1, 0.8]]))),
    ps.PairMechanism.from_probability_mass_functions([0.75, 0.25], [0.25, 0.75], label="RR"),
    ps.RandomAllocation(num_steps=4, noise_multiplier=2.0),
]


def test_examples_cover_every_registered_mechanism():
    assert {type(m).__name__ for m in MECHANISM_EXAMPLES} >= {entry.class_name for entry in MECHANISMS}


@pytest.mark.parametrize("mechanism", MECHANISM_EXAMPLES, ids=lambda m: type(m).__name__)
def test_mechanism_round_trip(mechanism):
    copy = pickle.loads(pickle.dumps(mechanism))
    assert type(copy) is type(mechanism) and copy.describe() == mechanism.describe()
    if type(mechanism).__eq__ is not object.__eq__:  # PairMechanism compares by identity
        assert copy == mechanism and hash(copy) == hash(mechanism)
    # The copy is the same mechanism: the same certified bracket, bit for bit.
    original = ps.FourierAccountant().compose(mechanism).get_delta_bounds(0.5)
    again = ps.FourierAccountant().compose(copy).get_delta_bounds(0.5)
    assert (again.lower, again.upper) == (original.lower, original.upper)


def test_ledger_round_trip_before_and_after_queries():
    accountant = ps.FourierAccountant(progress=lambda message: None, relative_gap_target=1e-3)
    warnings.simplefilter("ignore", ps.NotAGuaranteeWarning)
    accountant.compose(ps.ShuffledBinaryRR(20, 1.0, dataset="khh21"), 3).compose(ps.ShuffledKRR(20, 4, gamma=0.3))
    fresh = pickle.loads(pickle.dumps(accountant))  # before any query: the ledger and settings travel
    bounds = accountant.get_epsilon_bounds(1e-6)
    computed = pickle.loads(pickle.dumps(accountant))  # after: the caches (closures) stay behind
    for copy in (fresh, computed):
        assert copy.ledger == accountant.ledger and copy.relative_gap_target == 1e-3
        assert copy.progress is None  # a callback belongs to the sending process
        assert copy.get_epsilon_bounds(1e-6) == bounds
    assert accountant.progress is not None  # pickling does not change the original


def test_results_round_trip():
    accountant = ps.FourierAccountant().compose(ps.ShuffledBinaryRR(20, 1.0, dataset="khh21"), 2)
    epsilon = accountant.get_epsilon_bounds(1e-6)
    delta = accountant.get_delta_bounds(np.array([0.1, 0.5]))
    for result in (epsilon, delta):
        copy = pickle.loads(pickle.dumps(result))
        assert copy.to_dict() == result.to_dict() and copy.is_guarantee is False
    calibration = ps.find_max_rounds(ps.ShuffledBinaryRR(20, 1.0, dataset="khh21"), target_epsilon=2.0, target_delta=1e-3)
    copy = pickle.loads(pickle.dumps(calibration))
    assert copy.to_dict() == calibration.to_dict() and copy.value == calibration.value


def _recipe() -> str:
    """The dask recipe of docs/sweeps.md (its one ``py`` block)."""
    (code,) = re.findall(r"```py\n(.*?)```", (ROOT / "docs" / "sweeps.md").read_text(encoding="utf-8"), flags=re.S)
    return code


@pytest.mark.slow
def test_dask_recipe_matches_in_process(capsys):
    pytest.importorskip("dask.distributed")
    namespace: dict[str, object] = {"__name__": "__sweep_recipe__"}
    exec(compile(_recipe(), "docs/sweeps.md", "exec"), namespace)
    grid, results, certified_epsilon = namespace["grid"], namespace["results"], namespace["certified_epsilon"]
    assert len(results) == len(grid) == 8
    for point, remote in zip(grid, results):
        local = certified_epsilon(*point)  # the same function, in this process
        assert isinstance(remote, ps.EpsilonBounds)
        assert (remote.lower, remote.upper) == (local.lower, local.upper), point
    assert capsys.readouterr().out.count("ε ∈ [") == len(grid)
