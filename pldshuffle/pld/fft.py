"""Real FFT backends: pyFFTW when it imports, ``scipy.fft`` otherwise; ``numpy.fft`` for small windows
(the only module that knows pyfftw).

All compute the unnormalised forward transform and the normalised inverse with a Cooley–Tukey-type
algorithm (FFTW; pocketfft in both SciPy and NumPy), so results agree to rounding; the accountant books a
floating-point error term that holds for each.  pyFFTW is optional (``pip install pldshuffle[fftw]``).

``"auto"`` transforms windows of fewer than ``AUTO_SMALL`` points with ``numpy.fft``, which comes with
numpy: importing pyFFTW (which imports ``scipy.fft`` and ``scipy.fftpack``) costs ~0.4 s, more than
such a composition, and planning costs ~50 ms per size.  Larger windows go to pyFFTW, or ``scipy.fft``
without it, and so do many transforms of a small window (``transforms × size ≥ AUTO_WORK``: numpy.fft
takes 2-2.5× FFTW's time per transform there, 19 against 8 µs at 4608 points, which repays the import
after ~1e8 transformed points).  No FFT library is imported with this module.
"""

from __future__ import annotations

import math
import os
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Literal, TypeVar, cast

from functools import cache
from types import ModuleType

import numpy as np
from numpy.typing import NDArray

from .._kernels import UNIT_ROUNDOFF
from .._validation import check_choice

__all__ = [
    "AUTO_SMALL", "AUTO_WORK", "BACKENDS", "ETA", "FFTBackend", "PARALLEL_POINTS", "WORKERS", "available_backends", "check_backend", "fast_size",
    "forward_error", "get_backend", "map_row_ranges", "norm2", "release_plans",
]


def _count_from_environment(name: str, default: int) -> int:
    """The positive integer the environment variable ``name`` sets, else ``default``."""
    value = os.environ.get(name, "").strip()
    if not value:
        return default
    if not value.isdigit() or int(value) < 1:
        raise ValueError(f"the environment variable {name} must be a positive integer (a thread count); got {value!r}")
    return int(value)


BACKENDS = ("auto", "pyfftw", "scipy", "numpy")
#: ``"auto"`` uses numpy.fft below this many points (see the module notes).
AUTO_SMALL = 2**15
#: ... unless a caller's ``transforms × size`` reaches this many points (see the module notes).
AUTO_WORK = 2**27
#: Round-off constant of a Cooley-Tukey FFT with accurately precomputed twiddle factors (Higham,
#: *Accuracy and Stability*, Thm 24.2: ``η = μ + γ_4(√2 + μ)`` with ``μ`` the twiddles' error), taken as
#: ``8u``.
ETA = 8.0 * UNIT_ROUNDOFF
#: Threads inside one transform (override: PLDSHUFFLE_FFT_THREADS): a second one left the compositions'
#: times unchanged on this 2-CPU machine (the year, kRR strong 64 rounds), where the rest of the work is
#: sequential; the adaptive recursions' many rows use both CPUs through :data:`WORKERS` instead.
_THREADS = _count_from_environment("PLDSHUFFLE_FFT_THREADS", 1)
#: Threads that run :func:`map_row_ranges` side by side: each transforms its own rows with its own plans,
#: and FFTW, scipy.fft, numpy.fft and the numba kernels the callers apply to the rows release the GIL
#: (the adaptive recursion: 25 -> 16 ms a round on this 2-CPU machine, 40 rows of 30000 points in 3
#: frames).  The CPUs this process may use, at most 8 (override: PLDSHUFFLE_WORKERS).
WORKERS = _count_from_environment("PLDSHUFFLE_WORKERS", min(8, len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1))
#: Work of fewer points than this (rows × row length) runs on the calling thread: handing parts to the
#: threads costs ~0.3 ms, about what a second thread saves on 40 rows of ~6000 points (measured).
PARALLEL_POINTS = 2**18
_pool: ThreadPoolExecutor | None = None
_pool_lock = threading.Lock()
_POOL_NAME = "pldshuffle-rows"
#: Bytes of FFTW plan buffers kept beyond the most recent plan (each plan owns its input and output arrays,
#: which ``max_memory_bytes`` does not count: a cache of a fixed number of plans held 150 MB more when the
#: row workers' plans joined it, 1e6 rounds of 2RR under a 1 GiB cap).
_PLAN_CACHE_BYTES = 2**26
_plans: OrderedDict[tuple[object, ...], tuple[Any, int]] = OrderedDict()
_plans_lock = threading.Lock()
_T = TypeVar("_T")


def _after_fork_in_child() -> None:
    """A forked child has none of the parent's threads: a pool inherited from the parent would never run
    what is submitted to it, and a lock held by another thread at the fork would never be released."""
    global _pool, _pool_lock, _plans_lock
    _pool, _pool_lock, _plans_lock = None, threading.Lock(), threading.Lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)
#: Rows transformed together by :meth:`FFTBackend.inverse_products` (8 rows of 34560 points: 80 against
#: 90 µs per row one at a time with FFTW, of 4096 points with numpy.fft 8 against 18 µs).
_BATCH_ROWS = 8


@cache
def _pyfftw() -> ModuleType | None:
    """The pyfftw module, or ``None`` if it does not import (imported once, on first need)."""
    try:  # pragma: no cover - depends on the environment
        import pyfftw
    except ImportError:  # pragma: no cover
        return None
    return cast(ModuleType, pyfftw)


def _scipy_fft() -> ModuleType:
    import scipy.fft

    return cast(ModuleType, scipy.fft)


def _fftw() -> ModuleType:
    """The pyfftw module where a backend named "pyfftw" was chosen (so it imports)."""
    module = _pyfftw()
    if module is None:  # pragma: no cover - get_backend only names pyfftw where it imports
        raise RuntimeError("the pyfftw backend needs pyfftw installed (pip install pldshuffle[fftw])")
    return module


def _cached_plan(key: tuple[object, ...], build: Callable[[], Any]) -> Any:
    """The FFTW plan(s) ``build()`` makes for ``key`` and the calling thread, kept in an LRU cache whose
    plans other than the most recent hold at most ``_PLAN_CACHE_BYTES`` of buffers.  A plan owns its input
    and output buffers, so no two threads may run the same one: each thread has its own (the workers of
    :func:`map_row_ranges`, and callers that compose on several threads at once)."""
    key = (*key, threading.get_ident())
    with _plans_lock:
        if key in _plans:
            _plans.move_to_end(key)
            return _plans[key][0]
        plan = build()
        held = sum(p.input_array.nbytes + p.output_array.nbytes for p in (plan if isinstance(plan, tuple) else (plan,)))
        _plans[key] = (plan, held)
        while len(_plans) > 1 and sum(size for _, size in _plans.values()) - held > _PLAN_CACHE_BYTES:
            _plans.popitem(last=False)
        return plan


def release_plans() -> None:
    """Drop every cached FFTW plan (and its buffers, up to ``_PLAN_CACHE_BYTES`` beyond the latest): called
    before a ledger's composition, whose memory check counts only the plans it makes itself (the adaptive
    recursions' plans are of other sizes).  Later transforms plan again (up to ~50 ms a size).  O(plans)."""
    with _plans_lock:
        _plans.clear()


def _fftw_plans(size: int) -> tuple[Any, Any]:
    """Forward/inverse FFTW plans for real signals of ``size`` points (cached; planning costs ~50 ms)."""
    pyfftw = _fftw()
    return cast(tuple[Any, Any], _cached_plan(("single", size), lambda: (
        pyfftw.builders.rfft(pyfftw.empty_aligned(size, dtype="float64"), threads=_THREADS, planner_effort="FFTW_ESTIMATE"),
        pyfftw.builders.irfft(pyfftw.empty_aligned(size // 2 + 1, dtype="complex128"), n=size, threads=_THREADS, planner_effort="FFTW_ESTIMATE"),
    )))


def _fftw_batch_plan(rows: int, size: int) -> Any:
    """An inverse FFTW plan for ``rows`` half-spectra of real signals of ``size`` points (cached)."""
    pyfftw = _fftw()
    return _cached_plan(("batch", rows, size), lambda: pyfftw.builders.irfft(
        pyfftw.empty_aligned((rows, size // 2 + 1), dtype="complex128"), n=size, axis=-1, threads=_THREADS, planner_effort="FFTW_ESTIMATE"))


class FFTBackend:
    """A named pair of real FFT functions (forward ``rfft``, inverse ``irfft``)."""

    def __init__(self, name: Literal["pyfftw", "scipy", "numpy"]) -> None:
        self.name = name

    def rfft(self, x: NDArray[np.float64]) -> NDArray[np.complex128]:
        """Unnormalised forward real FFT."""
        if self.name == "pyfftw":
            forward, _ = _fftw_plans(x.size)
            forward.input_array[:] = x
            return cast(NDArray[np.complex128], forward().copy())  # the plan reuses its output buffer
        if self.name == "numpy":
            return np.fft.rfft(x)
        return cast(NDArray[np.complex128], _scipy_fft().rfft(x, workers=_THREADS))

    def irfft(self, spectrum: NDArray[np.complex128], size: int) -> NDArray[np.float64]:
        """Inverse of :meth:`rfft` for a real signal of length ``size``."""
        if self.name == "pyfftw":
            _, inverse = _fftw_plans(size)
            inverse.input_array[:] = spectrum
            return cast(NDArray[np.float64], inverse().copy())
        if self.name == "numpy":
            return np.fft.irfft(spectrum, n=size)
        return cast(NDArray[np.float64], _scipy_fft().irfft(spectrum, n=size, workers=_THREADS))

    def inverse_products(
        self, spectrum: NDArray[np.complex128], kernels: NDArray[np.complex128], size: int, rows: range | None = None
    ) -> Iterator[tuple[int, NDArray[np.float64]]]:
        """``(i, irfft(spectrum · kernels[i], size))`` for every row ``i`` of ``kernels`` (half-spectra) in
        ``rows`` (default: all), in order.  Rows are transformed ``_BATCH_ROWS`` at a time (fewer calls, one
        plan), each by the same kind of algorithm as one at a time, so the same round-off bounds hold.  A
        yielded array may be overwritten once the next is requested.  O(rows · size log size)."""
        rows = range(kernels.shape[0]) if rows is None else rows
        for first in range(rows.start, rows.stop, _BATCH_ROWS):
            block = kernels[first : min(first + _BATCH_ROWS, rows.stop)]
            if self.name == "pyfftw":
                plan = _fftw_batch_plan(block.shape[0], size)
                np.multiply(block, spectrum, out=plan.input_array)
                out = plan()
            elif self.name == "numpy":
                out = np.fft.irfft(block * spectrum, n=size, axis=-1)
            else:
                out = _scipy_fft().irfft(block * spectrum, n=size, axis=-1, workers=_THREADS)
            for row in range(block.shape[0]):
                yield first + row, out[row]

    def __repr__(self) -> str:
        return f"FFTBackend({self.name!r})"


def map_row_ranges(rows: int, work: Callable[[range], _T], size: int) -> list[_T]:
    """``[work(part) for each part]`` over at most :data:`WORKERS` contiguous parts of ``range(rows)`` (rows
    of ``size`` points each), in order, of equal sizes (±1), run side by side on threads when there are
    several; work of fewer than :data:`PARALLEL_POINTS` points does not repay the hand-over and runs in one
    part, on the calling thread."""
    global _pool
    # A part that itself maps rows runs them inline: waiting on the pool from inside it could deadlock.
    inside = threading.current_thread().name.startswith(_POOL_NAME)
    parts = min(WORKERS, rows) if rows * size >= PARALLEL_POINTS and not inside else 1
    if parts <= 1:
        return [work(range(rows))]
    ranges = [range(rows * k // parts, rows * (k + 1) // parts) for k in range(parts)]
    with _pool_lock:
        if _pool is None:
            _pool = ThreadPoolExecutor(max_workers=WORKERS, thread_name_prefix=_POOL_NAME)
    futures = [_pool.submit(work, part) for part in ranges]
    return [future.result() for future in futures]


def norm2(values: NDArray[np.float64]) -> float:
    """Euclidean norm of a 1-D array, without BLAS (``np.dot`` would wake OpenBLAS's threads, which then
    spin between calls and slow the FFT threads down: see ``_THREADS``).  O(m)."""
    return math.sqrt(float(np.einsum("i,i->", values, values)))


def forward_error(norm: float, size: int) -> float:
    """Bound on every entry's error of the computed forward FFT of a signal of 2-norm ``norm`` (padded to
    ``size`` points, e.g. ``norm2(values)``): the 2-norm bound ``log2(m)·η·√m·‖x‖₂`` of Higham (*Accuracy
    and Stability*, Thm 24.2), 1 % above for the rounding of the bound itself.  O(1)."""
    return math.log2(size) * ETA * math.sqrt(size) * norm * 1.01


def fast_size(size: int) -> int:
    """Smallest even 2-3-5-7-smooth length ``>= size`` (every backend transforms those quickly); O(log³ size)."""
    size = max(int(size), 2)
    best = 2 * size  # a power of two >= size is at most this
    p7 = 1
    while p7 < best:
        p5 = p7
        while p5 < best:
            p3 = p5
            while p3 < best:
                n = p3 * 2  # even
                while n < size:
                    n *= 2
                best = min(best, n)
                p3 *= 3
            p5 *= 5
        p7 *= 7
    return best


def available_backends() -> tuple[str, ...]:
    """Names of the concrete backends importable here."""
    return ("pyfftw", "scipy", "numpy") if _pyfftw() is not None else ("scipy", "numpy")


def get_backend(name: str = "auto", size: int | None = None, transforms: int = 1) -> FFTBackend:
    """Resolve a backend name; ``"auto"`` picks numpy.fft for ``transforms`` transforms of a window of fewer
    than ``AUTO_SMALL`` points (``size``) that hold fewer than ``AUTO_WORK`` points together, else pyFFTW if
    importable, else scipy.fft."""
    if check_backend(name) == "auto":
        if size is not None and size < AUTO_SMALL and size * transforms < AUTO_WORK:
            name = "numpy"
        else:
            name = "pyfftw" if _pyfftw() is not None else "scipy"
    return FFTBackend(name)  # type: ignore[arg-type]


def check_backend(name: object) -> str:
    """``name`` if it is one of ``BACKENDS`` and importable, else ``ValueError`` (``TypeError`` for a
    non-string); ``"auto"`` imports nothing."""
    name = check_choice("fft_backend", name, BACKENDS)
    if name == "pyfftw" and _pyfftw() is None:
        raise ValueError(
            "fft_backend='pyfftw' requested but pyfftw is not importable (install it with "
            "'pip install pldshuffle[fftw]'); use 'scipy', 'numpy' or 'auto'"
        )
    return name
