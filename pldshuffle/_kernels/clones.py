"""Clone pairs (pair F: FMT20/FMT23 and the symmetric labelled clone pairs; pair K: KHH21), walked block by
block (see :mod:`pldshuffle._kernels`; the layout of the blocks is :mod:`pldshuffle.mechanisms._clone_layout`).

A block is a total ``T = a + b`` with kept ``a ∈ [a_lo, a_hi]`` (symmetric: ``a_lo + a_hi = T``), mass
``Bin(T, 1/2)(a)·(u a + v)`` and loss ``log(num/den)``, ``num = e·a + nu·b + kappa``,
``den = nu·a + mu·b + kappa``.
"""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import NDArray

from . import compiled as _compiled
from . import jit as _jit
from .tilted import _add

__all__ = ["clone_fill_support", "clone_loss_range", "clone_stream"]

prange = range  # numba.prange once jitted


@_jit(inline="always")
def _loss(a: int, b: int, e: float, lam: float, mu: float, nu: float, kappa: float) -> float:  # pragma: no cover
    """Loss ``log(num/den)`` of outcome ``(a, b)``, ``+inf`` where ``den = 0``.

    ``mu = e`` and ``lam = e - nu`` are passed accurately, so ``num - den = lam·(a-b)``: pair F has
    ``nu = 1, kappa = 0`` (``(e a + b)/(a + e b)``), pair K ``nu = 0, kappa = κ_t`` (``(e a + κ)/(e b + κ)``).
    Near 1 the ratio goes through ``log1p`` of ``lam·(a-b)/den`` (ulp-accurate small losses).
    """
    den = nu * a + mu * b + kappa
    if den == 0.0:
        return math.inf
    x = lam * (a - b) / den
    if abs(x) < 0.5:
        return math.log1p(x)
    num = e * a + nu * b + kappa
    return math.log(num) - math.log(den)


@_jit()
def _block_walk(T, a_lo, a_hi, start, start_value, u, v, e, lam, mu, nu, kappa, loss_out, mass_out):  # pragma: no cover
    """Fill ``loss_out[a - a_lo]``, ``mass_out[a - a_lo]`` for one block; returns the infinite-loss mass.

    ``Bin(T,1/2)(a)`` is symmetric, the mass of ``(T-a, a)`` is ``Bin(T,1/2)(a)·(u (T-a) + v)`` and its
    loss is minus that of ``(a, T-a)``.  So only ``a >= T/2`` is walked, from ``start = ⌈T/2⌉`` (exact
    value ``start_value``) upwards by the ratios ``(T-a+1)/a`` (about one ulp of relative error per
    step), each step filling both ``a`` and its mirror ``T-a``.
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
        elif s == math.inf:
            inf_mass += mass
            loss_out[a - a_lo] = 0.0
            mass_out[a - a_lo] = 0.0
        else:
            loss_out[a - a_lo] = s
            mass_out[a - a_lo] = mass
        if b < a:
            mirror = pmf * (u * b + v)
            # The mirror of an infinite loss has P = 0 (it is Q's infinity atom): mirror == 0 there.
            if mirror <= 0.0 or s == math.inf:
                loss_out[b - a_lo] = 0.0
                mass_out[b - a_lo] = 0.0
            else:
                loss_out[b - a_lo] = -s
                mass_out[b - a_lo] = mirror
    return inf_mass


@_jit(parallel=True)
def _fill_support(totals, a_lo, a_hi, start, start_value, u, v, kappa, e, lam, mu, nu, offsets, losses, masses):  # pragma: no cover
    nblocks = totals.size
    infs = np.zeros(nblocks)
    for i in prange(nblocks):
        o0, o1 = offsets[i], offsets[i + 1]
        infs[i] = _block_walk(
            totals[i], a_lo[i], a_hi[i], start[i], start_value[i], u[i], v[i], e, lam, mu, nu, kappa[i],
            losses[o0:o1], masses[o0:o1],
        )
    return infs.sum()


def clone_fill_support(*layout_args: object, offsets: NDArray[np.int64], losses: NDArray[np.float64], masses: NDArray[np.float64]) -> float:
    """Every kept outcome's loss and P-mass, block ``i`` at ``offsets[i] .. offsets[i+1]-1``, in place
    (infinite losses and zero masses stored as loss 0, mass 0); returns the mass at ``+inf``.

    ``layout_args``: ``(totals, a_lo, a_hi, start, start_value, u, v, kappa, e, lam, mu, nu)``.
    O(S) time for S outcomes, parallel over blocks, no allocation.
    """
    _compiled()
    return float(_fill_support(*layout_args, offsets, losses, masses))


@_jit()
def _loss_range(totals, a_lo, a_hi, u, v, kappa, e, lam, mu, nu):  # pragma: no cover
    smin, smax = math.inf, -math.inf
    for i in range(totals.size):
        T = totals[i]
        for a in range(a_lo[i], a_hi[i] + 1):
            s = _loss(a, T - a, e, lam, mu, nu, kappa[i])
            if u[i] * a + v[i] > 0.0 and s < math.inf:
                smin = min(smin, s)
                break
        for a in range(a_hi[i], a_lo[i] - 1, -1):
            s = _loss(a, T - a, e, lam, mu, nu, kappa[i])
            if u[i] * a + v[i] > 0.0 and s < math.inf:
                smax = max(smax, s)
                break
    return smin, smax


def clone_loss_range(totals, a_lo, a_hi, u, v, kappa, e, lam, mu, nu) -> tuple[float, float]:
    """Min and max finite loss over outcomes of positive mass (losses increase with ``a`` in a block, so
    each block is scanned from its two ends only); ``(inf, -inf)`` if there is none."""
    _compiled()
    smin, smax = _loss_range(totals, a_lo, a_hi, u, v, kappa, float(e), float(lam), float(mu), float(nu))
    return float(smin), float(smax)


@_jit(parallel=True)
def _stream(totals, a_lo, a_hi, start, start_value, u, v, kappa, e, lam, mu, nu, spacing, j0, size, chunks):  # pragma: no cover
    nblocks = totals.size
    mass = np.zeros((chunks, size))
    tilt = np.zeros((chunks, size))
    infs = np.zeros(chunks)
    bad = np.zeros(chunks, dtype=np.int64)
    inv_spacing = 1.0 / spacing
    series = spacing <= 1e-4
    width = 0
    for i in range(nblocks):
        width = max(width, a_hi[i] - a_lo[i] + 1)
    for k in prange(chunks):
        loss_buf = np.empty(width)
        mass_buf = np.empty(width)
        for i in range((nblocks * k) // chunks, (nblocks * (k + 1)) // chunks):
            infs[k] += _block_walk(
                totals[i], a_lo[i], a_hi[i], start[i], start_value[i], u[i], v[i], e, lam, mu, nu, kappa[i],
                loss_buf, mass_buf,
            )
            for r in range(a_hi[i] - a_lo[i] + 1):
                if mass_buf[r] > 0.0 and not _add(mass, tilt, k, loss_buf[r], mass_buf[r], spacing, inv_spacing, series, j0, size):
                    bad[k] += 1
    return mass.sum(axis=0), tilt.sum(axis=0), infs.sum(), bad.sum()


def clone_stream(
    *layout_args: object, spacing: float, j0: int, size: int, chunks: int
) -> tuple[NDArray[np.float64], NDArray[np.float64], float, int]:
    """The outcomes streamed onto lattice cells ``[z_j, z_{j+1})``, ``z_j = j·spacing``, ``j = j0 .. j0+size-1``.

    Returns ``(M, T, infinity, misplaced)``: per cell the P-mass ``M_j = Σ m`` and the tilt
    ``T_j = Σ m·expm1(-(s - z_j))`` (``≤ 0``) of the outcomes in it, the mass at ``+inf`` and the number
    of finite outcomes off the lattice (a caller error).  One accumulator row per chunk of blocks (no
    write races).  O(S) time for S outcomes (~5-10 ns each per thread), O(chunks·size + widest block) memory.
    """
    _compiled()
    mass, tilt, infinity, bad = _stream(*layout_args, float(spacing), int(j0), int(size), int(chunks))
    return mass, tilt, float(infinity), int(bad)
