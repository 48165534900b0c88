"""Numba kernels for the sequential loops of the library (the only module that imports numba).

numba is imported, and every kernel here is jitted, on the first call of a public wrapper, not on import
(``import numba`` alone costs ~0.3 s).  Kernels are compiled with ``cache=True``; before numba is
imported, ``NUMBA_CACHE_DIR`` defaults to ``$XDG_CACHE_HOME/pldshuffle/numba`` (``~/.cache/...``) when the
user has not set it, so that a package installed read-only still reuses its compiled kernels across
processes (set by :func:`configure_numba_cache`, which ``pldshuffle/__init__.py`` calls at import).

Kernels are plain Python functions registered with :func:`_jit`; :func:`_compiled` replaces each by its
numba dispatcher in this module's namespace (so jitted kernels calling each other resolve to
dispatchers) the first time any kernel is needed.
"""

from __future__ import annotations

import math
import os
import sys
from collections.abc import Callable
from pathlib import Path

import numpy as np
from numpy.typing import NDArray

__all__ = [
    "configure_numba_cache",
    "fill_tilted_points",
    "hockey_stick_profile",
    "num_threads",
    "rounding_mgf",
    "stream_tilted_points",
]

_JIT_OPTIONS: dict[str, dict[str, object]] = {}
_READY = False
prange = range  # replaced by numba.prange when the kernels are jitted


def configure_numba_cache() -> None:
    """Default ``NUMBA_CACHE_DIR`` to a per-user cache directory, unless the user set it.

    ``cache=True`` otherwise writes next to the module, which fails silently in a read-only install
    and makes every new process recompile (seconds).  The directory is ``$XDG_CACHE_HOME/pldshuffle/numba``
    (``~/.cache/pldshuffle/numba``); nothing is set if it cannot be created.  If numba is already
    imported, its configuration is updated too (it reads the variable only at import).
    """
    if os.environ.get("NUMBA_CACHE_DIR"):
        return
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    path = os.path.join(base, "pldshuffle", "numba")
    try:
        Path(path).mkdir(parents=True, exist_ok=True)
    except OSError:
        return
    if not os.access(path, os.W_OK):
        return
    os.environ["NUMBA_CACHE_DIR"] = path
    config = sys.modules.get("numba.core.config")
    if config is not None:
        config.CACHE_DIR = path


def _jit(**options: object) -> Callable[[Callable], Callable]:
    """Register a kernel to be jitted with ``numba.njit(cache=True, **options)`` on first use."""

    def register(func: Callable) -> Callable:
        _JIT_OPTIONS[func.__name__] = {"cache": True, **options}
        return func

    return register


def _compiled() -> None:
    """Import numba and replace every registered kernel by its dispatcher (once; compilation is lazy)."""
    global _READY, prange
    if _READY:
        return
    configure_numba_cache()
    import numba

    namespace = globals()
    prange = numba.prange
    for name, options in _JIT_OPTIONS.items():
        namespace[name] = numba.njit(**options)(namespace[name])
    _READY = True


def num_threads() -> int:
    """numba's thread count (imports numba)."""
    _compiled()
    import numba

    return int(numba.get_num_threads())


# ----------------------------------------------------------------------------- grid profile
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


# ----------------------------------------------------------------------------- tilted trinomial pairs (kRR)
@_jit(inline="always")
def _tilted_point(log_m: float, log_a: float, log_b: float, r: float, x: int, y: int) -> tuple[float, float]:  # pragma: no cover
    """``(loss, P-mass)`` of a point of a tilted-trinomial pair (see :func:`fill_tilted_points`)."""
    if r == math.inf:  # B = 0 (gamma = 1): f constant, loss 0
        return 0.0, math.exp(log_m + log_a)
    if r + x == 0.0:  # A = 0 and x = 0: P = 0
        return 0.0, 0.0
    num, den = r + x, r + y
    mass = math.exp(log_m + log_b + math.log(num))
    if den == 0.0:
        return math.inf, mass
    q = num / den  # log(num/den), accurate both near 1 and far from it
    return (math.log1p((x - y) / den) if 0.5 <= q <= 2.0 else math.log(q)), mass


@_jit()
def _fill_points(pair_u, pair_c, log_w, starts, x_lo, x_hi, px_offset, log_px, log_a, log_b, ratio, losses, masses):  # pragma: no cover
    for p in range(pair_u.size):
        i = pair_u[p]
        c = pair_c[p]
        pos = starts[p]
        for x in range(x_lo[p], x_hi[p] + 1):
            losses[pos], masses[pos] = _tilted_point(log_w[p] + log_px[px_offset[p] + x], log_a[i], log_b[i], ratio[i], x, c - x)
            pos += 1


def fill_tilted_points(pair_u, pair_c, log_w, starts, x_lo, x_hi, px_offset, log_px, log_a, log_b, ratio, losses, masses) -> None:
    """Losses and P-masses of every kept point of a tilted-trinomial pair, pair ``(u, c)`` by pair, in place.

    Point ``(u, c, x)``, ``y = c - x``: ``P = p(u, c) Bin(c, 1/2)(x) (A + B x)`` with
    ``log(A + B x) = log B + log(A/B + x)`` (``log A`` when ``A/B = inf``), ``log p(u, c) = log_w[p]`` and
    ``log Bin(c, 1/2)(x) = log_px[px_offset[p] + x]``; loss ``log((A/B + x) / (A/B + y))``, taken as
    ``log1p((x - y) / (A/B + y))`` when the ratio is near 1, ``+inf`` where ``A/B + y = 0`` (``Q = 0``).
    Points with P-mass 0 get loss 0 and mass 0.  Writes ``losses[starts[p] + x - x_lo[p]]``.
    O(S) time for S points, no allocation.
    """
    _compiled()
    _fill_points(pair_u, pair_c, log_w, starts, x_lo, x_hi, px_offset, log_px, log_a, log_b, ratio, losses, masses)


@_jit(parallel=True)
def _stream_points(pair_u, pair_c, log_w, x_lo, x_hi, px_offset, log_px, log_a, log_b, ratio, spacing, j0, size, chunks):  # pragma: no cover
    npairs = pair_u.size
    mass = np.zeros((chunks, size))
    tilt = np.zeros((chunks, size))
    infs = np.zeros(chunks)
    bad = np.zeros(chunks, dtype=np.int64)
    inv_spacing = 1.0 / spacing
    series = spacing <= 1e-4  # expm1(-d) = -d(1 - d/2 + d²/6 - d³/24) to < 1e-17 relative for 0 <= d <= 1e-4
    for k in prange(chunks):
        for p in range((npairs * k) // chunks, (npairs * (k + 1)) // chunks):
            i = pair_u[p]
            c = pair_c[p]
            for x in range(x_lo[p], x_hi[p] + 1):
                s, m = _tilted_point(log_w[p] + log_px[px_offset[p] + x], log_a[i], log_b[i], ratio[i], x, c - x)
                if m <= 0.0:
                    continue
                if s == math.inf:
                    infs[k] += m
                    continue
                j = int(math.floor(s * inv_spacing))
                if j * spacing > s:
                    j -= 1
                elif (j + 1) * spacing <= s:
                    j += 1
                idx = j - j0
                if idx < 0 or idx >= size:
                    bad[k] += 1
                    continue
                d = min(max(s - j * spacing, 0.0), spacing)
                if series:
                    em = -d * (1.0 - d * (0.5 - d * (1.0 / 6.0 - d * (1.0 / 24.0))))
                else:
                    em = math.expm1(-d)
                mass[k, idx] += m
                tilt[k, idx] += m * em
    return mass.sum(axis=0), tilt.sum(axis=0), infs.sum(), bad.sum()


def stream_tilted_points(
    pair_u, pair_c, log_w, x_lo, x_hi, px_offset, log_px, log_a, log_b, ratio, spacing: float, j0: int, size: int, chunks: int
) -> tuple[NDArray[np.float64], NDArray[np.float64], float, int]:
    """The points of :func:`fill_tilted_points`, streamed onto lattice cells instead of stored.

    For every cell ``[z_j, z_{j+1})``, ``z_j = j·spacing``, ``j = j0 .. j0+size-1``, returns the P-mass
    ``M_j = Σ m`` and the tilt ``T_j = Σ m·expm1(-(s - z_j))`` (``≤ 0``) of the points in it, the mass at
    ``+inf`` and the number of finite points that fell outside the lattice (a caller error).  Parallel over
    ``chunks`` contiguous ranges of pairs, one accumulator row each (no write races).
    O(S) time for S points, O(chunks·size) memory.
    """
    _compiled()
    return _stream_points(
        pair_u, pair_c, log_w, x_lo, x_hi, px_offset, log_px, log_a, log_b, ratio, float(spacing), int(j0), int(size), int(chunks)
    )
