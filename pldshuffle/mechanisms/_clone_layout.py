"""Support layout of the clone pairs (pair F: FMT20/FMT23 and every symmetric labelled clone pair with no
residual; pair K: KHH21), shared by :mod:`pldshuffle.mechanisms.clones` and
:mod:`pldshuffle.mechanisms.labelled_clones`: which outcomes are kept, the mass they drop, and the exact or
streamed pairs built from them by the kernels of :mod:`pldshuffle._kernels.clones`.

The layout, truncation and streaming are described in :mod:`pldshuffle.mechanisms.clones`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import cast

import numpy as np
from numpy.typing import NDArray

from .._kernels import UNIT_ROUNDOFF as _U, clone_fill_support, clone_loss_range, clone_stream, num_threads
from ..pld import MASS_RTOL, LossDistribution, PrivacyLossPair, log_ratio_error
from ._binomial import binomial_cdf, binomial_pmf, binomial_sf, binomial_window, binomial_windows
from ..pld.discretize import lattice_distributions
from ._lattice import lattice_window, stream_in_pieces

__all__ = [
    "EXACT_SUPPORT_LIMIT",
    "MAX_EXACT_SUPPORT",
    "MAX_STREAMED_SUPPORT",
    "POINT_SECONDS",
    "STREAM_GRID_BINS",
    "Layout",
    "direction_from_log_masses",
    "exact_pair",
    "layout",
    "layout_bounds",
    "streaming_seconds",
    "support_estimate",
]

#: Supports up to this size are evaluated exactly, larger ones streamed onto a lattice (faster, O(1)
#: memory, relative ε error ~1e-8).
EXACT_SUPPORT_LIMIT = 2**18
#: :func:`clone_pair` with ``bound="exact"`` refuses larger supports (~100 bytes per point while built).
MAX_EXACT_SUPPORT = 20_000_000
#: Streamed supports above this size are refused up front (time, not memory: ``POINT_SECONDS`` per point,
#: ~13 min at the limit; the accountant warns from ~30 s, i.e. ~8e9 points).
MAX_STREAMED_SUPPORT = 200_000_000_000
#: Number of lattice cells spanning the loss range of a streamed pair.
STREAM_GRID_BINS = 2**16
#: Seconds per streamed point, layout included: FMT20, n = 1e8, ε0 = 1: 4.57e9 points in 17.7 s (2 CPU cores).
POINT_SECONDS = 3.9e-9

_MAX_STREAM_THREADS = 8


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

    def kernel_args(self, first: int = 0, stop: int | None = None) -> tuple:
        """Arguments of the block kernels for blocks ``first .. stop-1`` (all by default)."""
        part = slice(first, stop)
        arrays = (self.totals, self.a_lo, self.a_hi, self.start, self.start_value, self.u, self.v, self.kappa)
        return (*(a[part] for a in arrays), *self.constants)

    @property
    def loss_error(self) -> float:
        """Bound on the error of every computed loss ``log(num/den)`` (:func:`~pldshuffle.pld.log_ratio_error`).

        ``num = e·a + nu·b + kappa`` and ``den = nu·a + mu·b + kappa`` are sums of non-negative terms whose
        inputs (``e = e^{ε0}``, ``kappa``) are within a few ulps, so each is within ~16u; ``den`` is at
        least ``min(1, kappa)`` (``a + b ≥ 1``) and neither exceeds ``e·T + T + kappa``.  O(blocks).
        """
        e = self.constants[0]
        kappa = self.kappa[np.isfinite(self.kappa) & (self.kappa > 0.0)]
        top = e * float(self.totals.max(initial=1)) + float(self.totals.max(initial=1)) + float(kappa.max(initial=0.0))
        bottom = min(1.0, float(kappa.min(initial=1.0)))
        return log_ratio_error(max(math.log(top), -math.log(bottom)), 16.0 * _U)


def support_estimate(num_users: int, clone_probability: float, share: float, tail_mass: float) -> float:
    """Rough number of kept outcomes, O(1): the window of ``C ~ Bin(n-1, p_c)`` times that of
    ``A | C ~ Bin(C, share)`` at the typical ``C``, each about ``2 sqrt(2 log(1/tail_mass))`` standard
    deviations wide (within ~10% of the exact count of :func:`layout`, which costs O(sqrt(n p_c)) scipy
    calls: seconds at n = 1e8)."""
    z = 2.0 * math.sqrt(2.0 * math.log(1.0 / tail_mass))
    n, pc = float(num_users), clone_probability
    return (z * math.sqrt(n * pc * (1.0 - pc)) + 1.0) * (z * math.sqrt(n * pc * share * (1.0 - share)) + 1.0)


def streaming_seconds(support: float) -> float:
    """Estimated seconds to stream ``support`` outcomes (0 up to :data:`EXACT_SUPPORT_LIMIT`, which are
    evaluated exactly in well under a second)."""
    return POINT_SECONDS * support if support > EXACT_SUPPORT_LIMIT else 0.0


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
        kappa: NDArray[np.float64] = np.zeros(totals.size)
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
            kappa = cast(NDArray[np.float64], (n - totals) * (pc / (2.0 * (1.0 - pc))) if pc < 1.0 else np.where(totals < n, np.inf, 0.0))
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
            f"(~{POINT_SECONDS * lay.support / 60:.0f} min); use a larger local epsilon, fewer users, a larger tail_mass, "
            "or an analytic bound"
        )
    return _streamed_pairs(lay, bins, label)


def exact_pair(lay: Layout, label: str) -> PrivacyLossPair:
    offsets = np.zeros(lay.totals.size + 1, dtype=np.int64)
    np.cumsum(lay.a_hi - lay.a_lo + 1, out=offsets[1:])
    losses = np.empty(lay.support)
    masses = np.empty(lay.support)
    infinity = clone_fill_support(*lay.kernel_args(), offsets=offsets, losses=losses, masses=masses)
    direction = LossDistribution(losses, masses, infinity_mass=min(infinity, 1.0), truncated_mass=lay.dropped, loss_error=lay.loss_error)
    return PrivacyLossPair(direction, None, label=label)


def _streamed_pairs(lay: Layout, bins: int, label: str) -> tuple[PrivacyLossPair, PrivacyLossPair]:
    smin, smax = clone_loss_range(lay.totals, lay.a_lo, lay.a_hi, lay.u, lay.v, lay.kappa, *lay.constants)
    if not np.isfinite(smin):  # no finite loss with positive mass: only the infinity atom / truncation
        pair = exact_pair(lay, label)
        return pair, pair
    spacing, j0, size = lattice_window(smin, smax, bins)

    def stream(first: int, stop: int) -> tuple:
        chunks = max(1, min(num_threads(), _MAX_STREAM_THREADS, stop - first))
        return clone_stream(*lay.kernel_args(first, stop), spacing=spacing, j0=j0, size=size, chunks=chunks)

    (cell_mass, cell_tilt), infinity = stream_in_pieces(
        lay.a_hi - lay.a_lo + 1, 2, size, f"streaming {lay.support:,} outcomes onto the loss lattice", stream
    )
    lower, upper = lattice_distributions(cell_mass, cell_tilt, spacing, j0, infinity, lay.dropped, lay.loss_error)
    note = f"; {lay.support:,} outcomes streamed onto a loss lattice of spacing {spacing:.3g}"
    return (
        PrivacyLossPair(lower, None, label=label + note + ", cell-wise mean-preserving contraction (lower bound)"),
        PrivacyLossPair(upper, None, label=label + note + ", mean-preserving spread (upper bound)"),
    )


def direction_from_log_masses(log_num: NDArray[np.float64], log_den: NDArray[np.float64], truncated: float) -> LossDistribution:
    """PLD of ``num/den`` from log masses: finite losses where both are positive, infinity mass where ``den = 0``."""
    finite = np.isfinite(log_num) & np.isfinite(log_den)
    infinite = np.isfinite(log_num) & ~np.isfinite(log_den)
    infinity = float(np.exp(log_num[infinite]).sum()) if np.any(infinite) else 0.0
    # The log-masses are Boost's pmfs (within MASS_RTOL, relative) combined by a few roundings each; their
    # common factor (the others' labels) cancels.
    largest = float(np.max(np.maximum(np.abs(log_num[finite]), np.abs(log_den[finite])), initial=0.0))
    return LossDistribution(
        log_num[finite] - log_den[finite], np.exp(log_num[finite]), infinity_mass=min(infinity, 1.0), truncated_mass=truncated,
        loss_error=log_ratio_error(largest, MASS_RTOL),
    )
