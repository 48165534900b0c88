"""Real FFT backends: pyFFTW when it imports, ``scipy.fft`` otherwise; ``numpy.fft`` for small windows
(the only module that knows pyfftw).

All compute the unnormalised forward transform and the normalised inverse with a Cooley–Tukey-type
algorithm (FFTW; pocketfft in both SciPy and NumPy), so results agree to rounding; the accountant books a
floating-point error term that holds for each.  pyFFTW is optional (``pip install pldshuffle[fftw]``).

``"auto"`` transforms windows of fewer than ``AUTO_SMALL`` points with ``numpy.fft``, which comes with
numpy: importing pyFFTW (which imports ``scipy.fft`` and ``scipy.fftpack``) costs ~0.4 s, more than
such a composition, and planning costs ~50 ms per size.  Larger windows go to pyFFTW, or ``scipy.fft``
without it.  No FFT library is imported with this module.
"""

from __future__ import annotations

import os
from collections import OrderedDict
from typing import Literal

from functools import cache
from types import ModuleType

import numpy as np
from numpy.typing import NDArray

__all__ = ["AUTO_SMALL", "BACKENDS", "FFTBackend", "available_backends", "check_backend", "fast_size", "get_backend"]

BACKENDS = ("auto", "pyfftw", "scipy", "numpy")
#: ``"auto"`` uses numpy.fft below this many points (see the module notes).
AUTO_SMALL = 2**15
#: FFT threads; one thread measured fastest below ~4M points on 2 cores (override: PLDSHUFFLE_FFT_THREADS).
_THREADS = max(1, int(os.environ.get("PLDSHUFFLE_FFT_THREADS", "1")))
_PLAN_CACHE_SIZE = 4
_plans: OrderedDict[int, tuple[object, object]] = OrderedDict()


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


def _fftw_plans(size: int) -> tuple[object, object]:
    """Forward/inverse FFTW plans for real signals of ``size`` points (LRU-cached; planning costs ~50 ms)."""
    if size in _plans:
        _plans.move_to_end(size)
        return _plans[size]
    pyfftw = _pyfftw()
    forward = pyfftw.builders.rfft(pyfftw.empty_aligned(size, dtype="float64"), threads=_THREADS, planner_effort="FFTW_ESTIMATE")
    inverse = pyfftw.builders.irfft(
        pyfftw.empty_aligned(size // 2 + 1, dtype="complex128"), n=size, threads=_THREADS, planner_effort="FFTW_ESTIMATE"
    )
    _plans[size] = (forward, inverse)
    while len(_plans) > _PLAN_CACHE_SIZE:
        _plans.popitem(last=False)
    return forward, inverse


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


def get_backend(name: str = "auto", size: int | None = None) -> FFTBackend:
    """Resolve a backend name; ``"auto"`` picks numpy.fft for windows of fewer than ``AUTO_SMALL`` points
    (``size``), else pyFFTW if importable, else scipy.fft."""
    if check_backend(name) == "auto":
        if size is not None and size < AUTO_SMALL:
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
