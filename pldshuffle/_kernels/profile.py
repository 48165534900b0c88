"""Hockey-stick profiles of lattice measures and the rounding-offset MGF (see :mod:`pldshuffle._kernels`)."""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import NDArray

from . import compiled as _compiled
from . import jit as _jit

__all__ = ["connect_the_dots", "hockey_stick_profile", "lower_hull", "max_shifted_sum", "profile_at_points", "rounding_mgf"]


@_jit()
def _profile(masses: np.ndarray, decay: float) -> tuple[np.ndarray, np.ndarray]:  # pragma: no cover - jitted
    m = masses.size
    profile = np.zeros(m + 1)
    suffix = np.zeros(m + 1)
    one_minus = 1.0 - decay
    for j in range(m - 1, -1, -1):
        suffix[j] = suffix[j + 1] + masses[j]
        # H_j = e^{-dx} H_{j+1} + (1 - e^{-dx}) A_{j+1}: every term is non-negative, so no cancellation.
        profile[j] = decay * profile[j + 1] + one_minus * suffix[j + 1]
    return profile, suffix


def hockey_stick_profile(masses: NDArray[np.float64], spacing: float) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Finite part of the hockey-stick curve of a grid PLD at its own grid points.

    For masses ``a_j`` at losses ``z_j = z_0 + j·dx`` returns ``(H, A)`` with
    ``H_j = Σ_{l>j} a_l (1 - e^{z_j - z_l})`` and ``A_j = Σ_{l≥j} a_l`` (both with a trailing 0 entry),
    by the positive recursion ``H_{j-1} = e^{-dx} H_j + (1 - e^{-dx}) A_j``.  O(m), no cancellation.
    """
    _compiled()
    return _profile(np.ascontiguousarray(masses, dtype=np.float64), float(np.exp(-spacing)))


@_jit()
def _max_shifted_sum(worst: np.ndarray, values: np.ndarray, offset: int, add: np.ndarray, scalar: float) -> None:  # pragma: no cover - jitted
    for j in range(worst.size):
        v = values[offset + j] + add[j] + scalar
        if v > worst[j]:
            worst[j] = v


def max_shifted_sum(worst: NDArray[np.float64], values: NDArray[np.float64], offset: int, add: NDArray[np.float64], scalar: float) -> None:
    """``worst[j] = max(worst[j], values[offset + j] + add[j] + scalar)`` in place, in one pass (O(m))."""
    _compiled()
    _max_shifted_sum(worst, values, int(offset), add, float(scalar))


@_jit()
def _lower_hull(x: np.ndarray, y: np.ndarray) -> np.ndarray:  # pragma: no cover - jitted
    hull = np.empty(x.size, dtype=np.int64)
    top = 0
    for j in range(x.size):
        while top >= 2:
            i, k = hull[top - 2], hull[top - 1]
            if (y[k] - y[i]) * (x[j] - x[i]) >= (y[j] - y[i]) * (x[k] - x[i]):
                top -= 1
            else:
                break
        hull[top] = j
        top += 1
    return hull[:top]


def lower_hull(x: NDArray[np.float64], y: NDArray[np.float64]) -> NDArray[np.int64]:
    """Indices of the lower convex hull of the points ``(x_j, y_j)``, ``x`` increasing (monotone chain, O(m))."""
    _compiled()
    return _lower_hull(np.ascontiguousarray(x, dtype=np.float64), np.ascontiguousarray(y, dtype=np.float64))


@_jit()
def _profile_at_points(losses: np.ndarray, masses: np.ndarray, points: np.ndarray) -> np.ndarray:  # pragma: no cover - jitted
    out = np.zeros(points.size)
    i = losses.size - 1
    x, h, above = np.inf, 0.0, 0.0  # position, profile there, mass above it
    for q in range(points.size - 1, -1, -1):
        z = points[q]
        while i >= 0 and losses[i] > z:
            # Walk down to the next atom, then take it in: H(y) = e^{y-x} H(x) + (1 - e^{y-x}) A(x), with
            # e^{y-x} = 1 + expm1(y-x): one transcendental call per step (see the wrapper's error note).
            drop = -math.expm1(losses[i] - x)
            h = (1.0 - drop) * h + drop * above
            x = losses[i]
            above += masses[i]
            i -= 1
        drop = -math.expm1(z - x)
        h = (1.0 - drop) * h + drop * above
        x = z
        out[q] = h
    return out


def profile_at_points(
    losses: NDArray[np.float64], masses: NDArray[np.float64], points: NDArray[np.float64]
) -> NDArray[np.float64]:
    """``H(z) = Σ_{s > z} m_s (1 - e^{z - s})`` of an atomic measure at ascending ``points`` (losses ascending).

    One downward sweep merging atoms and points, ``H(y) = e^{y-x} H(x) + (1 - e^{y-x}) A(x)`` between
    consecutive positions ``y < x`` (``A`` the mass above): every term is non-negative, so each of the
    ``len(losses) + len(points)`` steps adds at most ~5 roundings of relative error (``e^{y-x}`` is taken as
    ``1 + expm1(y-x)``: its absolute error, ≤ u, multiplies ``H(x) ≤ A(x)``, and the new value is at least
    ``H(x)``).  O(len(losses) + len(points)).
    """
    _compiled()
    arrays = (np.ascontiguousarray(a, dtype=np.float64) for a in (losses, masses, points))
    return _profile_at_points(*arrays)


@_jit()
def _rounding_mgf(scales: np.ndarray, frac: np.ndarray, masses: np.ndarray) -> np.ndarray:  # pragma: no cover - jitted
    out = np.zeros(scales.size)
    for i in range(frac.size):
        for c in range(scales.size):
            out[c] += masses[i] * np.exp(-scales[c] * frac[i])
    return out


def rounding_mgf(scales: NDArray[np.float64], frac: NDArray[np.float64], masses: NDArray[np.float64]) -> NDArray[np.float64]:
    """``Σ_i masses_i exp(-scales_c frac_i)`` for every scale, in O(len(scales)) memory."""
    _compiled()
    return _rounding_mgf(np.ascontiguousarray(scales), np.ascontiguousarray(frac), np.ascontiguousarray(masses))


@_jit()
def _connect_the_dots(losses, masses, spacing, start, size):  # pragma: no cover - jitted
    upper = np.zeros(size)
    denominator = math.expm1(-spacing)
    for i in range(losses.size):
        scaled = losses[i] / spacing
        j = math.floor(scaled)
        share = masses[i] * (math.expm1(-min(max(scaled - j, 0.0), 1.0) * spacing) / denominator)
        upper[j - start] += masses[i] - share
        upper[j - start + 1] += share
    return upper


def connect_the_dots(losses: NDArray[np.float64], masses: NDArray[np.float64], spacing: float) -> tuple[int, NDArray[np.float64]]:
    """Connect-the-dots masses of a PLD on the lattice ``z_j = j·spacing``: ``(first index, masses)``.

    The mass ``m`` at a loss ``s = (j + f)·spacing`` (``f ∈ [0, 1)``) is split between ``z_j`` and
    ``z_{j+1}``, the share ``m·(e^{-f·Δ} - 1)/(e^{-Δ} - 1)`` going up, so that both the mass and the
    ``e^{-s}``-moment are preserved (see :mod:`pldshuffle.grid`).  O(N) in one pass.
    """
    _compiled()
    if losses.size == 0:
        return 0, np.zeros(1)
    start = int(np.floor(np.min(losses) / spacing))
    size = int(np.floor(np.max(losses) / spacing)) + 2 - start
    return start, _connect_the_dots(losses, masses, float(spacing), start, size)
