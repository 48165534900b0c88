"""Realisation plans of one combination of lattice measures: its certified shifts and its FFT windows.

A *combination* is a list of ``(lattice measure, rounds)``, one per term of a
:class:`~pldshuffle.pld.certified.CertifiedPLD`; its *plan* says how it is realised: the certified shifts
of a lower composition (:func:`~pldshuffle.pld.lattice.shift_certificate`) with their penalties, and the
``(θ, first index, size)`` of the window realised at each tilt θ (:func:`~pldshuffle.pld.composition.window`); and the
realisation of one such window within the composition's memory cap (:func:`realize_window`).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import cast

import numpy as np
from numpy.typing import NDArray

from .._kernels import UNIT_ROUNDOFF as _U
from .._reporting import throttled_reporter
from .composition import Factor, Realization, realize, window
from .fft import fast_size, get_backend
from .lattice import LatticeDirection, shift_certificate
from .sizing import BYTES_PER_POINT, PLAN_BYTES_PER_POINT, TAIL_TOLERANCE, _check_memory

__all__ = ["Combination", "Plan", "loss_shift", "plan_windows", "realize_window"]

#: A combination of terms: one lattice measure per term and the rounds it is composed.
Combination = list[tuple[LatticeDirection, int]]
#: Certified shifts, their penalties and the ``(θ, first index, size)`` of each realisation window.
Plan = tuple[NDArray[np.float64], NDArray[np.float64], list[tuple[float, int, int]]]


def plan_windows(combo: Combination, spacing: float, part: str, tilts: list[float]) -> Plan:
    """Certified shifts, their penalties and the ``(θ, first index, size)`` of each realisation window of
    one combination (no window when its finite part is empty or it has one round: no FFT)."""
    shifts, penalties = np.zeros(1), np.zeros(1)
    if part == "lower" and all(d.finite_mass > 0.0 for d, _ in combo):
        shifts, penalties = shift_certificate(combo, spacing)
    windows = []
    if all(d.finite_mass > 0.0 for d, _ in combo) and sum(n for _, n in combo) > 1:
        factors = [d.factor(n) for d, n in combo]
        for theta in tilts:
            # Not widened down to ε = 0: below its start a window's upper values add the mass it misses
            # there (Realization.bottom_mass, ≤ TAIL_TOLERANCE at θ = 0), where a window from 0 held a
            # million rounds' mean loss in lattice points (2RR n = 1000, ε0 = 8, 1e6 rounds: ε ≈ 5.5e6,
            # coarsened to Δ ≈ 1 to fit; gap 9 %).
            lo, hi = window(factors, spacing, theta, TAIL_TOLERANCE)
            lo_index = int(math.floor(lo / spacing)) - 1
            windows.append((theta, lo_index, fast_size(int(math.ceil(hi / spacing)) + 2 - lo_index)))
    return shifts, penalties, windows


def loss_shift(combo: list[tuple[LatticeDirection, int]]) -> float:
    """How much further right a lower composition of ``combo`` is read: its witnesses' losses may exceed
    the exact ones by their loss error, every round (the sum rounded up)."""
    return math.fsum(n * d.loss_error for d, n in combo) * (1.0 + 4.0 * _U * len(combo))


def realize_window(factors: list[Factor], theta: float, lo_index: int, size: int, spacing: float, *, fft_backend: str,
                  max_memory_bytes: int, cache: dict[str, object], terms_bytes: Callable[[], int]) -> Realization:
    """:func:`~pldshuffle.pld.composition.realize` within the memory cap (checked before allocating), on the
    ledger's lattice or a coarser ``spacing``.  ``cache`` is the composition's: it keeps the window sizes
    realised (``"sizes"``) and the bytes held (``"bytes"``, from ``terms_bytes()``: the terms' own measures)."""
    backend = get_backend(fft_backend, size)
    sizes = cast(set[int], cache.setdefault("sizes", set()))
    # Every new window size adds a pair of cached FFTW plans with their buffers.
    if "bytes" not in cache:  # the terms are held from the first window on
        cache["bytes"] = terms_bytes()
    held = cast(int, cache["bytes"]) + (PLAN_BYTES_PER_POINT * size if backend.name == "pyfftw" and size not in sizes else 0)
    _check_memory(size, max_memory_bytes, spacing, held)
    throttled_reporter()(lambda: f"composition: realising a window of {size:,} points (tilt θ = {theta:.3g})")
    real = realize(factors, spacing, theta, lo_index, size, backend)
    cache["bytes"] = held + size * BYTES_PER_POINT
    sizes.add(size)
    return real
