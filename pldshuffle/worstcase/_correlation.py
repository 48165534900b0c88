"""Building blocks of the adaptive recursion (:mod:`pldshuffle.worstcase.recursion`): the options' tilted
spectra (:func:`_kernels`), their own profiles, and the pointwise bound on the round-off of correlating a
buffer with them by FFT (:func:`_summed_correlation_error`), which every step of the recursion adds on its
safe side.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import replace
from typing import NamedTuple

import numpy as np
from numpy.typing import NDArray

from .._kernels import UNIT_ROUNDOFF as _U
from ..pld.fft import ETA as _ETA, FFTBackend, forward_error, norm2
from ..pld.lattice import LatticeDirection, profile_at


class _Kernels(NamedTuple):
    """The options of one frame: row ``o`` of ``spectra`` is the half spectrum of option ``o``'s tilted
    masses ``a_i e^{θz_i}`` padded to the FFT length, ``norm1[o]`` their 1-norm, ``error[o]`` a 2-norm bound
    on the spectrum's round-off, ``start[o]`` its start index."""

    spectra: NDArray[np.complex128]
    norm1: list[float]
    error: list[float]
    start: list[int]


def _kernels(
    options: Sequence[LatticeDirection], theta: float, size: int, spacing: float, backend: FFTBackend, *, upper: bool, aligned: bool = False
) -> _Kernels:
    """The options' :class:`_Kernels` in the frame tilted by ``θ``; the tilted masses are rounded up for an
    upper recursion and down for a lower one (the correlated function is ≥ 0 resp. of either sign: see
    :func:`_correlation_error`).  ``aligned``: every row starts at the options' smallest start index (its
    masses placed after as many zeros as its own start lies above), so that products of rows can be summed."""
    spectra = np.empty((len(options), size // 2 + 1), dtype=np.complex128)
    norm1, error = [], []
    first = min(o.start for o in options)
    for row, o in enumerate(options):
        k = o.masses * np.exp(theta * (o.start + np.arange(o.masses.size)) * spacing) * (1.0 + (4.0 if upper else -4.0) * _U)
        buffer = np.zeros(size)
        at = o.start - first if aligned else 0
        buffer[at : at + k.size] = k
        spectra[row] = backend.rfft(buffer)
        norm1.append(float(k.sum()))
        error.append(forward_error(norm2(k), size))
    return _Kernels(spectra, norm1, error, [first if aligned else o.start for o in options])


def _own_profiles(options: Sequence[LatticeDirection], lo: int, hi: int, spacing: float, direction: float) -> list:
    """Each option's finite profile ``E_o[(1 - e^{x-L})_+; L < ∞]`` at ``z_lo .. z_hi``, moved up
    (``direction = 1``) or down (``-1``) by the profile recursion's relative rounding."""
    indices = lo + np.arange(hi - lo + 1)
    return [profile_at(replace(o, infinity=0.0), indices, spacing) * (1.0 + direction * 16.0 * _U * (o.masses.size + 8)) for o in options]


def _largest(parts: Sequence[tuple[NDArray[np.float64], NDArray[np.int64]]]) -> tuple[NDArray[np.float64], NDArray[np.int64]]:
    """The pointwise largest of the parts' values, with the choice of the first part attaining it (the
    parts of :func:`pldshuffle.pld.fft.map_row_ranges`, in order: as if their rows had been scanned in one pass).
    ``choices`` may be empty (untracked)."""
    values, choices = parts[0]
    for other, other_choices in parts[1:]:
        raised = other > values
        values[raised] = other[raised]
        if choices.size:
            choices[raised] = other_choices[raised]
    return values, choices


def _norms(w: NDArray[np.float64]) -> tuple[float, float]:
    """``(‖w‖₁, ‖w‖₂)`` of a correlated buffer, once per frame and round (every option's error uses them).
    A frame tilted far from its buffer's losses (ε in the millions) may overflow: ``inf``, no bound there."""
    with np.errstate(over="ignore"):
        return float(np.abs(w).sum()), norm2(w)


def _correlation_error(norms: tuple[float, float], k1: float, k_err: float, size: int) -> float:
    """Pointwise bound on |computed − exact| of the circular correlation of a buffer ``w`` (any sign; its
    ``norms`` from :func:`_norms`) with a kernel of 1-norm ``k1`` whose spectrum's round-off has 2-norm
    ≤ ``k_err``, by forward FFTs, product, inverse (:func:`_summed_correlation_error` of one part)."""
    return _summed_correlation_error([(norms, k1, k_err)], size)


def _summed_correlation_error(parts: Sequence[tuple[tuple[float, float], float, float]], size: int) -> float:
    """Pointwise bound on |computed − exact| of ``Σ_o w_o ⋆ k_o`` (circular correlations or convolutions)
    computed as one inverse FFT of the summed products of half spectra, each part ``(norms of w_o, ‖k_o‖₁,
    2-norm bound on the round-off of k_o's spectrum)``.

    Higham (*Accuracy and Stability*, Thm 24.2) in 2-norm: ``|Ŵ| ≤ ‖w‖₁``, ``|k̂| ≤ ‖k‖₁`` (plus their
    errors), each complex product rounds by ≤ 3u, the sum of ``S`` products by ≤ (S-1)u times the sum of
    their moduli, and ‖exact output‖₂ ≤ Σ ‖k_o‖₁‖w_o‖₂ (Parseval); the 2-norm of the error vector bounds
    every entry.
    """
    log2, root = math.log2(size), math.sqrt(size)
    prod, output, moduli = 0.0, 0.0, 0.0
    for (w1, w2), k1, k_err in parts:
        w_err = forward_error(w2, size)
        prod += w1 * k_err + (k1 + k_err) * w_err + 3.0 * _U * (k1 + k_err) * (root * w2 + w_err)
        output += k1 * w2
        moduli += (w1 + w_err) * (k1 + k_err)
    if len(parts) > 1:  # (not 0 · moduli: an overflowed frame's moduli are +inf, and the bound must stay +inf)
        prod += (len(parts) - 1) * _U * root * moduli * 1.01
    spectral = math.sqrt(2.0) * prod / root  # the full spectrum has twice the half's energy
    return float(1.01 * (spectral + log2 * _ETA * (output + 2.0 * spectral)))
