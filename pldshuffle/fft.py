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

import os
from collections import OrderedDict
from collections.abc import Callable, Iterator
from typing import Any, Literal

from functools import cache
from types import ModuleType

import numpy as np
from numpy.typing import NDArray

__all__ = ["AUTO_SMALL", "AUTO_WORK", "BACKENDS", "FFTBackend", "available_backends", "check_backend", "fast_size", "get_backend"]

BACKENDS = ("auto", "pyfftw", "scipy", "numpy")
#: ``"auto"`` uses numpy.fft below this many points (see the module notes).
AUTO_SMALL = 2**15
#: ... unless a caller's ``transforms × size`` reaches this many points (see the module notes).
AUTO_WORK = 2**27
#: FFT threads; one thread measured fastest below ~4M points on 2 cores (override: PLDSHUFFLE_FFT_THREADS).
_THREADS = max(1, int(os.environ.get("PLDSHUFFLE_FFT_THREADS", "1")))
#: FFTW plans kept (single transforms by size, batched ones by rows and size).
_PLAN_CACHE_SIZE = 4
_plans: OrderedDict[tuple[int, ...], Any] = OrderedDict()
#: Rows transformed together by :meth:`FFTBackend.inverse_products` (8 rows of 34560 points: 80 against
#: 90 µs per row one at a time with FFTW, of 4096 points with numpy.fft 8 against 18 µs; a second thread
#: gained nothing on this 2-CPU machine).
_BATCH_ROWS = 8


@cache
def _pyfftw() -> ModuleType | None:
    """The pyfftw module, or ``None`` if it does not import (imported once, on first need)."""
    try:  # pragma: no cover - depends on the environment
        import pyfftw
    except ImportError:  # pragma: no cover
        return None
    return pyfftw


def _scipy_fft() -> ModuleType:
    import scipy.fft

    return scipy.fft


def _cached_plan(key: tuple[int, ...], build: Callable[[], object]) -> Any:
    """The FFTW plan(s) ``build()`` makes for ``key``, kept in an LRU cache of ``_PLAN_CACHE_SIZE`` entries."""
    if key in _plans:
        _plans.move_to_end(key)
        return _plans[key]
    _plans[key] = plan = build()
    while len(_plans) > _PLAN_CACHE_SIZE:
        _plans.popitem(last=False)
    return plan


def _fftw_plans(size: int) -> tuple[Any, Any]:
    """Forward/inverse FFTW plans for real signals of ``size`` points (cached; planning costs ~50 ms)."""
    pyfftw = _pyfftw()
    return _cached_plan((size,), lambda: (
        pyfftw.builders.rfft(pyfftw.empty_aligned(size, dtype="float64"), threads=_THREADS, planner_effort="FFTW_ESTIMATE"),
        pyfftw.builders.irfft(pyfftw.empty_aligned(size // 2 + 1, dtype="complex128"), n=size, threads=_THREADS, planner_effort="FFTW_ESTIMATE"),
    ))


def _fftw_batch_plan(rows: int, size: int) -> Any:
    """An inverse FFTW plan for ``rows`` half-spectra of real signals of ``size`` points (cached)."""
    pyfftw = _pyfftw()
    return _cached_plan((rows, size), lambda: pyfftw.builders.irfft(
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
            return forward().copy()  # the plan reuses its output buffer
        if self.name == "numpy":
            return np.fft.rfft(x)
        return _scipy_fft().rfft(x, workers=_THREADS)

    def irfft(self, spectrum: NDArray[np.complex128], size: int) -> NDArray[np.float64]:
        """Inverse of :meth:`rfft` for a real signal of length ``size``."""
        if self.name == "pyfftw":
            _, inverse = _fftw_plans(size)
            inverse.input_array[:] = spectrum
            return inverse().copy()
        if self.name == "numpy":
            return np.fft.irfft(spectrum, n=size)
        return _scipy_fft().irfft(spectrum, n=size, workers=_THREADS)

    def inverse_products(self, spectrum: NDArray[np.complex128], kernels: NDArray[np.complex128], size: int) -> Iterator[tuple[int, NDArray[np.float64]]]:
        """``(i, irfft(spectrum · kernels[i], size))`` for every row ``i`` of ``kernels`` (half-spectra), in
        order.  Rows are transformed ``_BATCH_ROWS`` at a time (fewer calls, one plan), each by the same
        kind of algorithm as one at a time, so the same round-off bounds hold.  A yielded array may be
        overwritten once the next is requested.  O(rows · size log size)."""
        for first in range(0, kernels.shape[0], _BATCH_ROWS):
            block = kernels[first : first + _BATCH_ROWS]
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
    """``name`` if it is one of ``BACKENDS`` and importable, else ``ValueError``; ``"auto"`` imports nothing."""
    if not isinstance(name, str) or name not in BACKENDS:
        raise ValueError(f"fft_backend must be one of {', '.join(map(repr, BACKENDS))}; got {name!r}")
    if name == "pyfftw" and _pyfftw() is None:
        raise ValueError(
            "fft_backend='pyfftw' requested but pyfftw is not importable (install it with "
            "'pip install pldshuffle[fftw]'); use 'scipy', 'numpy' or 'auto'"
        )
    return name
