"""The a-priori time estimate and the SlowComputationWarning (no slow computation is run here)."""

from __future__ import annotations

import warnings

import pytest

import pldshuffle as ps
import pldshuffle.pld.sizing  # noqa: F401 - ps.pld.sizing below
from pldshuffle import _estimate
from pldshuffle._estimate import SLOW_SECONDS, estimated_seconds, warn_if_slow

KRR = ps.ShuffledKRR(1000, 4, gamma=0.25, adversary="strong")


def test_estimate_is_monotone_in_the_number_of_users():
    seconds = [estimated_seconds([(ps.ShuffledBinaryRR(n, 1.0), 1)], 0) for n in (10**3, 10**5, 10**7, 10**9)]
    assert seconds == sorted(seconds) and seconds[0] < seconds[-1]


def test_estimate_is_monotone_in_the_rounds():
    family = KRR.pair_family()
    seconds = []
    for rounds in (2, 16, 256, 4096):
        pairs = [(family.upper[0], rounds)]
        points = ps.pld.sizing.composed_range(pairs)[1] / 1e-5
        seconds.append(estimated_seconds([(KRR, rounds)], points, directions=1, witnesses=1))
    assert seconds == sorted(seconds) and seconds[0] < seconds[-1]


def test_a_single_round_has_no_fft_cost():
    assert estimated_seconds([(KRR, 1)], 10**9) == 0.0
    assert estimated_seconds([(KRR, 2)], 10**9) > SLOW_SECONDS


def _no_family(mechanism):
    raise RuntimeError("no family may be built before the warning or refusal")


def test_big_case_warns_before_any_work():
    """2RR worst case with n = 1e11 (~1 min: restarts of the recurrence, O(n) per pair): warned before the
    families are built."""
    messages: list[str] = []
    acc = ps.FourierAccountant(progress=messages.append, max_memory_bytes=2**34).compose(ps.ShuffledBinaryRR(10**11, 1.0))
    acc._family = _no_family  # the warning must come first; stop there instead of computing
    with pytest.warns(ps.SlowComputationWarning, match=r"estimated to take ~\d+ s") as record, pytest.raises(RuntimeError):
        acc.get_epsilon_bounds(1e-8)
    assert len(record) == 1 and messages == [str(record[0].message)]
    assert record[0].filename == __file__  # points at the user's query


@pytest.mark.parametrize(
    "mechanism",
    [
        # ~75 s: the layout of ~5e8 cells (u, c), merged blocks of u (weak kRR at 2e6 users took 12.8 s, estimated 15.6 s)
        ps.ShuffledKRR(10**7, 4, local_epsilon=2.0, adversary="weak"),
        # ~95 s: 2.4e10 clone outcomes streamed (n = 1e8 took 17.7 s, estimated 18.9 s)
        ps.ShuffledLDP(5 * 10**8, 1.0),
        # ~40 s: 8.6e9 estimated points streamed (n = 1e8 took 13 s, estimated 12.9 s)
        ps.ShuffledKRR(3 * 10**8, 4, local_epsilon=2.0, adversary="strong"),
    ],
)
def test_long_family_builds_warn_before_any_work(mechanism):
    """Each mechanism estimates its own pair family's build (``family_seconds``): long ones are announced
    before anything is built."""
    assert mechanism.family_seconds() > SLOW_SECONDS
    messages: list[str] = []
    acc = ps.FourierAccountant(progress=messages.append).compose(mechanism, 4)
    acc._family = _no_family
    with pytest.warns(ps.SlowComputationWarning, match=r"estimated to take ~\d+ s"), pytest.raises(RuntimeError):
        acc.get_epsilon_bounds(1e-8)
    assert messages and "estimated to take" in messages[0]


def test_family_estimates_grow_with_the_users_and_vanish_for_small_supports():
    for make in (
        lambda n: ps.ShuffledKRR(n, 4, local_epsilon=2.0, adversary="weak"),
        lambda n: ps.ShuffledKRR(n, 4, local_epsilon=2.0, adversary="strong"),
        lambda n: ps.ShuffledLDP(n, 1.0),
        lambda n: ps.ShuffledBinaryRR(n, 1.0),
    ):
        seconds = [make(n).family_seconds() for n in (10**3, 10**5, 10**7)]
        assert seconds == sorted(seconds) and seconds[0] < 0.5 < seconds[-1], seconds
    assert ps.ShuffledKRR(1000, 4, gamma=0.25, adversary="strong").family_seconds() == 0.0
    assert ps.ShuffledBinaryRR(10**6, 1.0, dataset="khh21").family_seconds() == 0.0


@pytest.mark.parametrize("num_users,max_memory_bytes", [(10**11, 2 * 2**30), (10**10, 2**29), (10**9, 2**27)])
def test_pairs_beyond_the_memory_cap_are_refused_before_any_work(num_users, max_memory_bytes):
    """The worst-case cover holds ~32 dataset pairs of ~640 bytes per sd of N_m: refused up front, with the
    estimate and how to shrink the request, when that exceeds half the cap."""
    mechanism = ps.ShuffledBinaryRR(num_users, 1.0)
    assert mechanism.family_bytes() > max_memory_bytes / 2
    acc = ps.FourierAccountant(max_memory_bytes=max_memory_bytes).compose(mechanism)
    acc._family = _no_family
    with pytest.raises(ps.pld.MemoryBudgetError, match=r"GiB, above half of max_memory_bytes=.*fewer users") as info:
        acc.get_epsilon_bounds(1e-8)
    assert info.value.needed > info.value.budget == max_memory_bytes / 2


def test_fft_cost_warns_once_spacing_is_known():
    messages: list[str] = []
    assert warn_if_slow([(KRR, 1024)], messages.append) is False  # nothing known from the parameters
    with pytest.warns(ps.SlowComputationWarning):
        assert warn_if_slow([(KRR, 1024)], messages.append, family=lambda m: m.pair_family(), spacing=1e-7)
    assert len(messages) == 1 and "estimated" in messages[0]


def test_small_cases_do_not_warn(monkeypatch):
    messages: list[str] = []
    with warnings.catch_warnings():
        warnings.simplefilter("error", ps.SlowComputationWarning)
        acc = ps.FourierAccountant(progress=messages.append).compose(KRR, 1024)
        acc.compose(ps.ShuffledBinaryRR(1000, 1.0), 4)
        assert acc.get_epsilon_bounds(1e-6).upper > 0
    assert not any("estimated" in m for m in messages)
    monkeypatch.setattr(_estimate, "SLOW_SECONDS", 0.0)
    with pytest.warns(ps.SlowComputationWarning):
        ps.FourierAccountant().compose(KRR, 4).get_epsilon_bounds(1e-6)


def test_same_data_blocks_of_a_worst_case_are_counted():
    """A same-data block of the 2RR worst case costs ~100 compositions of its window (measured 35 s at
    n = 1e4, 16 rounds on a lattice 4× finer than its default, 12 s on the default): it warns, the same
    rounds with changing data do not."""
    mech = ps.ShuffledBinaryRR(10**4, 1.0)
    family = mech.pair_family()
    spacing = ps.pld.sizing.choose_spacing([(family.upper[0], 16)], ps.pld.sizing.relative_target(16)) / 4
    messages: list[str] = []
    assert warn_if_slow([(mech, 16)], messages.append, family=lambda m: family, spacing=spacing) is False
    with pytest.warns(ps.SlowComputationWarning):
        assert warn_if_slow([(mech, 16)], messages.append, family=lambda m: family, spacing=spacing,
                            same_data=[(mech, 16)])
    # A block of a single pair (no cover) costs nothing extra.
    assert warn_if_slow([(KRR, 16)], messages.append, family=lambda m: m.pair_family(), spacing=1e-4,
                        same_data=[(KRR, 16)]) is False
