"""Numba kernels and support layout of the clone pairs (pair F: FMT20/FMT23 and every symmetric labelled
clone pair with no residual; pair K: KHH21), shared by :mod:`pldshuffle.mechanisms.clones` and
:mod:`pldshuffle.mechanisms.labelled_clones`.

Kept here (not in :mod:`pldshuffle._kernels`) so that the clone machinery has one home that both modules
import without a cycle.  The layout, truncation and streaming are described in
:mod:`pldshuffle.mechanisms.clones`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numba
import numpy as np
from numpy.typing import NDArray

from .mechanisms._binomial import binomial_cdf, binomial_pmf, binomial_sf, binomial_window, binomial_windows
from .pld import LossDistribution, PrivacyLossPair

__all__ = ["EXACT_SUPPORT_LIMIT", "MAX_EXACT_SUPPORT", "MAX_STREAMED_SUPPORT", "STREAM_GRID_BINS", "Layout", "exact_pair", "layout", "layout_bounds"]

#: Supports up to this size are evaluated exactly, larger ones streamed onto a lattice (faster, O(1)
#: memory, relative ε error ~1e-8).
EXACT_SUPPORT_LIMIT = 2**18
#: :func:`clone_pair` with ``bound="exact"`` refuses larger supports (~100 bytes per point while built).
MAX_EXACT_SUPPORT = 20_000_000
#: Streamed supports above this size are refused up front (time, not memory: ~5 ns per point per core).
MAX_STREAMED_SUPPORT = 20_000_000_000
#: Number of lattice cells spanning the loss range of a streamed pair.
STREAM_GRID_BINS = 2**16

_MAX_STREAM_THREADS = 8


# ----------------------------------------------------------------------------- numba kernels
@numba.njit(cache=True, inline="always")
def _loss(a: int, b: int, e: float, lam: float, mu: float, nu: float, kappa: float) -> float:  # pragma: no cover
    """Loss ``log(num/den)`` of outcome ``(a, b)``, ``+inf`` where ``den = 0``.

    ``num = e·a + nu·b + kappa`` and ``den = nu·a + mu·b + kappa`` with ``mu = e`` and ``lam = e - nu``
    (passed accurately, so ``num - den = lam·(a-b)``): pair F has ``nu = 1, kappa = 0``
    (``(e a + b)/(a + e b)``), pair K ``nu = 0, kappa = κ_t`` (``(e a + κ)/(e b + κ)``).  Near 1 the ratio
    goes through ``log1p`` of ``lam·(a-b)/den`` (ulp-accurate small losses).
    """
    den = nu * a + mu * b + kappa
    if den == 0.0:
        return np.inf
    x = lam * (a - b) / den
    if abs(x) < 0.5:
        return math.log1p(x)
    num = e * a + nu * b + kappa
    return math.log(num) - math.log(den)


@numba.njit(cache=True)
def _block_walk(T, a_lo, a_hi, start, start_value, u, v, e, lam, mu, nu, kappa, loss_out, mass_out):  # pragma: no cover
    """Fill ``loss_out[a - a_lo]``, ``mass_out[a - a_lo]`` for one block; returns the infinite-loss mass.

    The kept range is symmetric (``a_lo + a_hi = T``) and so are the pairs: ``Bin(T,1/2)(a)`` is
    symmetric, the mass of ``(T-a, a)`` is ``Bin(T,1/2)(a)·(u (T-a) + v)`` and its loss is minus that of
    ``(a, T-a)``.  So only ``a >= T/2`` is walked, from ``start = ⌈T/2⌉`` (exact value ``start_value``)
    upwards by the ratios ``(T-a+1)/a`` (about one ulp of relative error per step), each step filling
    both ``a`` and its mirror ``T-a``.
    """
    inf_mass = 0.0
    pmf = start_value
    for a in range(start, a_hi + 1):
        if a > start:
            pmf *= (T - a + 1) / a
        b = T - a
        s = _loss(a, b, e, lam, mu, nu, kappa)
        mass = pmf * (u * a + v)
        if mass <= 0.0:
            loss_out[a - a_lo] = 0.0
            mass_out[a - a_lo] = 0.0
        elif s == np.inf:
            inf_mass += mass
            loss_out[a - a_lo] = 0.0
            mass_out[a - a_lo] = 0.0
        else:
            loss_out[a - a_lo] = s
            mass_out[a - a_lo] = mass
        if b < a:
            mirror = pmf * (u * b + v)
            # The mirror of an infinite loss has P = 0 (it is Q's infinity atom): mirror == 0 there.
            if mirror <= 0.0 or s == np.inf:
                loss_out[b - a_lo] = 0.0
                mass_out[b - a_lo] = 0.0
            else:
                loss_out[b - a_lo] = -s
                mass_out[b - a_lo] = mirror
    return inf_mass


@numba.njit(cache=True, parallel=True)
def _fill_support(totals, a_lo, a_hi, start, start_value, u, v, kappa, e, lam, mu, nu, offsets, losses, masses):  # pragma: no cover
    nblocks = totals.size
    infs = np.zeros(nblocks)
    for i in numba.prange(nblocks):
        o0, o1 = offsets[i], offsets[i + 1]
        infs[i] = _block_walk(
            totals[i], a_lo[i], a_hi[i], start[i], start_value[i], u[i], v[i], e, lam, mu, nu, kappa[i],
            losses[o0:o1], masses[o0:o1],
        )
    return infs.sum()


@numba.njit(cache=True)
def _loss_range(totals, a_lo, a_hi, u, v, kappa, e, lam, mu, nu):  # pragma: no cover
    """Min and max finite loss over outcomes of positive mass (losses increase with ``a`` in a block)."""
    smin, smax = np.inf, -np.inf
    for i in range(totals.size):
        T = totals[i]
        for a in range(a_lo[i], a_hi[i] + 1):
            s = _loss(a, T - a, e, lam, mu, nu, kappa[i])
            if u[i] * a + v[i] > 0.0 and s < np.inf:
                smin = min(smin, s)
                break
        for a in range(a_hi[i], a_lo[i] - 1, -1):
            s = _loss(a, T - a, e, lam, mu, nu, kappa[i])
            if u[i] * a + v[i] > 0.0 and s < np.inf:
                smax = max(smax, s)
                break
    return smin, smax


@numba.njit(cache=True, parallel=True)
def _stream(totals, a_lo, a_hi, start, start_value, u, v, kappa, e, lam, mu, nu, spacing, j0, size, chunks):  # pragma: no cover
    """Per lattice cell ``[z_j, z_{j+1})``, ``z_j = j·spacing``, ``j = j0 .. j0+size-1``: the mass
    ``M_j = Σ m`` and the tilt ``T_j = Σ m·expm1(-(s - z_j))`` (``≤ 0``) of the outcomes in it, plus the
    infinite-loss mass.  One row per chunk of blocks (no write races); O(support) time.
    """
    nblocks = totals.size
    mass = np.zeros((chunks, size))
    tilt = np.zeros((chunks, size))
    infs = np.zeros(chunks)
    bad = np.zeros(chunks, dtype=np.int64)
    inv_spacing = 1.0 / spacing
    # For tiny spacings expm1(-d) = -d(1 - d/2 + d²/6 - d³/24) to < 1e-17 relative (0 <= d <= spacing <= 1e-4).
    series = spacing <= 1e-4
    width = 0
    for i in range(nblocks):
        width = max(width, a_hi[i] - a_lo[i] + 1)
    for k in numba.prange(chunks):
        lo_b = (nblocks * k) // chunks
        hi_b = (nblocks * (k + 1)) // chunks
        loss_buf = np.empty(width)
        mass_buf = np.empty(width)
        for i in range(lo_b, hi_b):
            infs[k] += _block_walk(
                totals[i], a_lo[i], a_hi[i], start[i], start_value[i], u[i], v[i], e, lam, mu, nu, kappa[i],
                loss_buf, mass_buf,
            )
            for r in range(a_hi[i] - a_lo[i] + 1):
                m = mass_buf[r]
                if m <= 0.0:
                    continue
                s = loss_buf[r]
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


# ----------------------------------------------------------------------------- layout
@dataclass(frozen=True, eq=False)
class Layout:
    """The kept outcomes as blocks ``T = a + b``, ``a ∈ [a_lo, a_hi]``, mass ``Bin(T,1/2)(a)(u a + v)``."""

    totals: NDArray[np.int64]
    a_lo: NDArray[np.int64]
    a_hi: NDArray[np.int64]
    start: NDArray[np.int64]
    start_value: NDArray[np.float64]
    u: NDArray[np.float64]
    v: NDArray[np.float64]
    kappa: NDArray[np.float64]
    constants: tuple[float, float, float, float]  # e, lam, mu, nu
    dropped: float
    support: int

    def kernel_args(self) -> tuple:
        return (self.totals, self.a_lo, self.a_hi, self.start, self.start_value, self.u, self.v, self.kappa, *self.constants)


def _half_windows(c: NDArray[np.int64], tail_mass: float) -> tuple[NDArray[np.int64], NDArray[np.int64], NDArray[np.float64]]:
    """Central windows ``[lo_c, c - lo_c]`` of ``Bin(c, 1/2)`` with exact dropped mass per ``c``."""
    lo = np.clip(binomial_windows(c, 0.5, tail_mass)[0], 0, c // 2)
    hi = c - lo
    dropped = binomial_cdf(lo - 1, c, 0.5) + binomial_sf(hi, c, 0.5)
    dropped = np.where(lo > 0, dropped, 0.0)  # lo = 0 keeps the whole support (hi = c)
    return lo, hi, dropped


def layout(num_users: int, ratio: float, ratio_m1: float, clone_probability: float, tail_mass: float, variant: str) -> Layout:
    """Kept outcomes of pair F or K with victim ratio ``e = ratio`` (``e^{ε0}``; ``ratio_m1 = e - 1``
    passed accurately) and clone probability ``p_c``."""
    n, e, em1, pc = num_users, ratio, ratio_m1, clone_probability
    q = 1.0 / (1.0 + 1.0 / e)  # e/(e+1)
    one_q = 1.0 / (e + 1.0)
    clo, chi, dropped_c = binomial_window(n - 1, pc, tail_mass)
    # Windows widen with c, so the narrowest one times the number of c's bounds the support from below:
    # refuse hopeless sizes before laying out (and evaluating) ~sqrt(n) windows.
    narrowest = _half_windows(np.array([clo], dtype=np.int64), tail_mass)
    at_least = (chi - clo + 1) * int(narrowest[1][0] - narrowest[0][0] + 1)
    if at_least > MAX_STREAMED_SUPPORT:
        raise ValueError(
            f"the clone pair with n={n} has at least {at_least:.3g} support points, above MAX_STREAMED_SUPPORT="
            f"{MAX_STREAMED_SUPPORT:.3g}; use a larger local epsilon, fewer users, a larger tail_mass, or an analytic bound"
        )
    c = np.arange(clo, chi + 1, dtype=np.int64)
    w = binomial_pmf(c, n - 1, pc)
    lo, hi, dropped_a = _half_windows(c, tail_mass)
    dropped = min(1.0, dropped_c + math.fsum((w * dropped_a).tolist()))
    if variant == "F":
        totals = c + 1
        a_lo, a_hi = lo, hi + 1
        u = 2.0 * w * em1 / ((e + 1.0) * totals)
        v = 2.0 * w / (e + 1.0)
        kappa = np.zeros(totals.size)
        constants = (e, em1, e, 1.0)
    else:
        totals = np.arange(clo, chi + 2, dtype=np.int64)
        big = np.iinfo(np.int64).max
        a_lo = np.minimum(np.append(lo, big), np.insert(lo, 0, big))
        a_hi = np.maximum(np.append(hi, -1), np.insert(hi + 1, 0, -1))
        w_t = binomial_pmf(totals, n - 1, pc)
        w_prev = binomial_pmf(totals - 1, n - 1, pc)
        with np.errstate(divide="ignore", invalid="ignore"):
            u = np.where(totals > 0, 2.0 * q * w_prev / totals, 0.0)
            kappa = (n - totals) * (pc / (2.0 * (1.0 - pc))) if pc < 1.0 else np.where(totals < n, np.inf, 0.0)
        v = one_q * w_t
        kappa = np.asarray(kappa, dtype=np.float64)
        constants = (e, e, e, 0.0)
    if not np.array_equal(a_lo + a_hi, totals):  # the kept set must be symmetric under a <-> b
        raise AssertionError("internal error: asymmetric clone-pair window")
    start = (totals + 1) // 2
    start_value = binomial_pmf(start, totals, 0.5)
    support = int(np.sum(a_hi - a_lo + 1))
    as64 = lambda x: np.ascontiguousarray(x, dtype=np.int64)  # noqa: E731
    asf = lambda x: np.ascontiguousarray(x, dtype=np.float64)  # noqa: E731
    return Layout(
        as64(totals), as64(a_lo), as64(a_hi), as64(start), asf(start_value), asf(u), asf(v), asf(kappa),
        tuple(float(x) for x in constants), float(dropped), support,  # type: ignore[arg-type]
    )


def layout_bounds(lay: Layout, label: str, max_exact: int, bins: int) -> tuple[PrivacyLossPair, PrivacyLossPair]:
    """``(lower, upper)`` of a laid-out pair: exact up to ``max_exact`` support points, else streamed."""
    if lay.support <= max_exact:
        pair = exact_pair(lay, label)
        return pair, pair
    if lay.support > MAX_STREAMED_SUPPORT:
        raise ValueError(
            f"the {label} has {lay.support:.3g} support points, above MAX_STREAMED_SUPPORT={MAX_STREAMED_SUPPORT:.3g} "
            "(it would take minutes); use a larger local epsilon, fewer users, a larger tail_mass, or an analytic bound"
        )
    return _streamed_pairs(lay, bins, label)


def exact_pair(lay: Layout, label: str) -> PrivacyLossPair:
    offsets = np.zeros(lay.totals.size + 1, dtype=np.int64)
    np.cumsum(lay.a_hi - lay.a_lo + 1, out=offsets[1:])
    losses = np.empty(lay.support)
    masses = np.empty(lay.support)
    infinity = float(_fill_support(*lay.kernel_args(), offsets, losses, masses))
    direction = LossDistribution(losses, masses, infinity_mass=min(infinity, 1.0), truncated_mass=lay.dropped)
    return PrivacyLossPair(direction, None, label=label)


def _streamed_pairs(lay: Layout, bins: int, label: str) -> tuple[PrivacyLossPair, PrivacyLossPair]:
    smin, smax = _loss_range(lay.totals, lay.a_lo, lay.a_hi, lay.u, lay.v, lay.kappa, *lay.constants)
    if not np.isfinite(smin):  # no finite loss with positive mass: only the infinity atom / truncation
        pair = exact_pair(lay, label)
        return pair, pair
    width = smax - smin
    spacing = width / bins if width > 0 else max(abs(smax), 1.0) * 1e-9
    j0 = int(math.floor(smin / spacing)) - 1
    size = int(math.floor(smax / spacing)) - j0 + 2
    chunks = max(1, min(numba.get_num_threads(), _MAX_STREAM_THREADS, lay.totals.size))
    cell_mass, cell_tilt, infinity, misplaced = _stream(*lay.kernel_args(), spacing, j0, size, chunks)
    if misplaced:  # cannot happen: the lattice covers [smin, smax] with a cell of margin on both sides
        raise RuntimeError(f"internal error: {misplaced} losses fell outside the streaming lattice")
    grid = np.arange(j0, j0 + size + 1, dtype=np.float64) * spacing
    infinity = min(float(infinity), 1.0)
    # Upper: split M_j between z_j and z_{j+1} keeping mass and e^{-s}-moment (a mean-preserving spread).
    share = np.clip(cell_tilt / math.expm1(-spacing), 0.0, cell_mass)
    up = np.append(cell_mass - share, 0.0)
    up[1:] += share
    # Lower: one atom per cell at the conditional mean of e^{-s} (a mean-preserving contraction).
    with np.errstate(divide="ignore", invalid="ignore"):
        offset = -np.log1p(np.clip(cell_tilt / cell_mass, math.expm1(-spacing), 0.0))
    offset = np.where(cell_mass > 0, np.clip(offset, 0.0, spacing), 0.0)
    lower = LossDistribution(grid[:-1] + offset, cell_mass, infinity_mass=infinity, truncated_mass=lay.dropped)
    upper = LossDistribution(grid, up, infinity_mass=infinity, truncated_mass=lay.dropped)
    note = f"; {lay.support:,} outcomes streamed onto a loss lattice of spacing {spacing:.3g}"
    return (
        PrivacyLossPair(lower, None, label=label + note + ", cell-wise mean-preserving contraction (lower bound)"),
        PrivacyLossPair(upper, None, label=label + note + ", mean-preserving spread (upper bound)"),
    )
