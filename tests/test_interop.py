"""dp-accounting export: its pessimistic ε on the exported pair lies within or above our certified bracket."""

from __future__ import annotations

import math

import numpy as np
import pytest

import pldshuffle as ps
from pldshuffle.interop import to_dp_accounting, to_log_pmfs

pytest.importorskip("dp_accounting")

DELTA = 1e-6


def _krr_strong():
    krr = pytest.importorskip("pldshuffle.mechanisms.krr")
    return krr.ShuffledKRR(1000, 4, gamma=0.25, adversary="strong")


@pytest.mark.filterwarnings("ignore::pldshuffle.NotAGuaranteeWarning")  # khh21: one pair, warned (below)
@pytest.mark.parametrize("count", [1, 4])
@pytest.mark.parametrize("make", [lambda: ps.ShuffledBinaryRR(1000, 1.0, dataset="khh21"), _krr_strong], ids=["2rr-khh21", "krr-strong"])
def test_pessimistic_epsilon_not_below_our_bracket(make, count):
    mechanism = make()
    ours = ps.FourierAccountant().compose(mechanism, count).get_epsilon_bounds(DELTA)
    theirs = to_dp_accounting(mechanism, count=count).get_epsilon_for_delta(DELTA)
    assert theirs >= ours.lower - 1e-9
    # ... and not far above: dp-accounting's pessimistic rounding costs about count * dx.
    assert theirs <= ours.upper + count * 1e-4 + 1e-6


def test_worst_case_families_export_the_accountants_dominating_measure():
    """A worst case over datasets is exported as the accountant's certified dominating measure on the same
    lattice: dp-accounting's ε is the accountant's upper end (up to its own rounding), not a member's."""
    mechanism = ps.ShuffledBinaryRR(20, 1.0)
    assert len(mechanism.pair_family().upper) > 1
    for count, same_data in ((1, False), (4, False), (4, True)):
        acc = ps.FourierAccountant(value_discretization_interval=1e-4).compose(mechanism, count, same_data=same_data)
        ours = acc.get_epsilon_bounds(DELTA)
        theirs = to_dp_accounting(mechanism, count=count, same_data=same_data).get_epsilon_for_delta(DELTA)
        assert ours.upper - 1e-9 <= theirs <= ours.upper + 1e-4 + 1e-6
    with pytest.raises(TypeError, match="member"):  # the per-member export (a lower bound) is gone
        to_dp_accounting(mechanism, member=0)
    with pytest.raises(ValueError, match="pessimistic_estimate=False"):
        to_dp_accounting(mechanism, pessimistic_estimate=False)


def test_export_of_a_lower_bound_warns():
    with pytest.warns(ps.NotAGuaranteeWarning, match="lower bound"):
        to_dp_accounting(ps.ShuffledBinaryRR(100, 1.0, dataset="khh21"))


def test_reconstructed_pmfs_reproduce_both_directions():
    pair = ps.PrivacyLossPair.from_probability_mass_functions([0.5, 0.3, 0.2, 0.0], [0.1, 0.3, 0.4, 0.2])
    log_q, log_p = to_log_pmfs(pair.forward)
    p = {k: math.exp(v) for k, v in log_p.items()}
    q = {k: math.exp(v) for k, v in log_q.items()}
    assert math.isclose(sum(p.values()), 1.0) and math.isclose(sum(q.values()), 1.0)
    rebuilt = ps.PrivacyLossPair.from_probability_mass_functions(p, q)
    for eps in (0.0, 0.5, 1.0):
        for a, b in zip(rebuilt.delta_bounds(eps), pair.delta_bounds(eps)):
            np.testing.assert_allclose(a, b, rtol=1e-9, atol=1e-15)


def test_pair_export_and_errors():
    pair = ps.PrivacyLossPair.from_probability_mass_functions([0.75, 0.25], [0.25, 0.75])
    assert math.isclose(to_dp_accounting(pair).get_epsilon_for_delta(0.0), math.log(3), rel_tol=1e-3)
    with pytest.raises(TypeError, match="same_data"):
        to_dp_accounting(pair, same_data="yes")
    with pytest.raises(TypeError, match="mechanism"):
        to_dp_accounting("2RR")
    with pytest.raises(ValueError, match="count"):
        to_dp_accounting(pair, count=0)
