"""The blanket pair's a-priori size and time estimates: oversized requests are refused before any pair is
built (as for the other mechanisms), and the estimates follow the evaluation chosen."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import pldshuffle as ps
from pldshuffle.randomizers import OUE, Finite, HadamardResponse, KaryRR, SubsetSelection


def _no_family(mechanism):
    raise RuntimeError("no family may be built before the refusal")


def test_blanket_pair_beyond_the_memory_cap_is_refused_before_any_work():
    """A finite randomizer with 10 output types enumerated exactly at n = 14 (1.96e6 type-count vectors of
    10 counts) holds ~220 MB; a 256 MiB cap (half for the pairs) refuses it up front, naming the estimate
    and how to shrink the request.  The tilted trinomial (1-subset selection at n = 1e5, sized as the weak
    kRR pair) and the (N1, N2) evaluation of Hadamard response stream their points onto lattices and hold
    little."""
    rng = np.random.default_rng(3)
    M = rng.random((2, 10)) + 0.05
    M /= M.sum(axis=1, keepdims=True)
    mechanism = ps.ShuffledLDP(14, randomizer=Finite(M), reduction="blanket")
    assert mechanism.blanket_pair.methods == ("enumerated",)
    assert mechanism.family_bytes() > 2**28 / 2
    assert ps.ShuffledLDP(10**5, randomizer=SubsetSelection(32, 1, 4.0), reduction="blanket").family_bytes() < 64 * 2**20
    assert ps.ShuffledLDP(10**5, randomizer=HadamardResponse(64, 1.0), reduction="blanket").family_bytes() < 64 * 2**20
    acc = ps.FourierAccountant(max_memory_bytes=2**28).compose(mechanism)
    acc._family = _no_family
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ps.SlowComputationWarning)
        with pytest.raises(ps.pld.MemoryBudgetError, match=r"GiB, above half of max_memory_bytes=.*fewer users") as info:
            acc.get_epsilon_bounds(1e-8)
    assert info.value.needed > info.value.budget == 2**28 / 2


def test_estimates_follow_the_evaluation():
    small = ps.ShuffledLDP(10**6, randomizer=OUE(1024, 1.0))
    assert small.blanket_pair.methods == ("product",) and 0 < small.family_bytes() < 64 * 2**20
    part = ps.ShuffledLDP(10**6, randomizer=OUE(1024, 1.0), participation=0.5)
    assert part.blanket_pair.methods == ("participation",) and 0 < part.family_bytes() < 64 * 2**20
    assert 0.5 < part.family_seconds() < 60.0  # measured ~3 s for the pair
    seconds = [ps.ShuffledLDP(n, randomizer=HadamardResponse(64, 1.0), reduction="blanket").family_seconds() for n in (10**3, 10**4, 10**5)]
    assert seconds == sorted(seconds)
    grouped = [ps.ShuffledLDP(n, randomizer=HadamardResponse(64, 1.0), reduction="blanket").family_bytes() for n in (10**3, 10**4, 10**5)]
    assert grouped == sorted(grouped)
    assert ps.ShuffledLDP(1000, randomizer=KaryRR(4, 1.0)).family_bytes() >= 0.0
    assert ps.ShuffledLDP(1000, 1.0, reduction="fmt20").family_bytes() == 0.0
