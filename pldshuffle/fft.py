"""Real FFT backends: pyFFTW when it imports, ``scipy.fft`` otherwise (the only module that knows pyfftw).

Both compute the unnormalised forward transform and the normalised inverse, so results agree to
rounding; the accountant books a floating-point error term that holds for either.  pyFFTW is optional
(``pip install pldshuffle[fftw]``).  Neither library is imported with this module: ``scipy.fft`` on the
first transform, ``pyfftw`` when a backend is resolved (``get_backend``, ``available_backends``).
"""

from __future__ import annotations

import os
from collections import OrderedDict
from typing import Literal

from functools import cache
from types import ModuleType

import numpy as np
from numpy.typing import NDArray

__all__ = ["BACKENDS", "FFTBackend", "available_backends", "get_backend"]

BACKENDS = ("auto", "pyfftw", "scipy")
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

    def __init__(self, name: Literal["pyfftw", "scipy"]) -> None:
        self.name = name

    def rfft(self, x: NDArray[np.float64]) -> NDArray[np.complex128]:
        """Unnormalised forward real FFT."""
        if self.name == "pyfftw":
            forward, _ = _fftw_plans(x.size)
            forward.input_array[:] = x
            return forward().copy()  # the plan reuses its output buffer
        return _scipy_fft().rfft(x, workers=_THREADS)

    def irfft(self, spectrum: NDArray[np.complex128], size: int) -> NDArray[np.float64]:
        """Inverse of :meth:`rfft` for a real signal of length ``size``."""
        if self.name == "pyfftw":
            _, inverse = _fftw_plans(size)
            inverse.input_array[:] = spectrum
            return inverse().copy()
        return _scipy_fft().irfft(spectrum, n=size, workers=_THREADS)

    @staticmethod
    def fast_size(size: int) -> int:
        """Smallest length >= size that both backends transform quickly (a 2-3-5-7-smooth even number)."""
        n = _scipy_fft().next_fast_len(int(size), real=True)
        return n + (n % 2)

    def __repr__(self) -> str:
        return f"FFTBackend({self.name!r})"


def available_backends() -> tuple[str, ...]:
    """Names of the concrete backends importable here."""
    return ("pyfftw", "scipy") if _pyfftw() is not None else ("scipy",)


def get_backend(name: str = "auto") -> FFTBackend:
    """Resolve ``"auto"`` (pyfftw if importable) or a concrete backend name."""
    if name not in BACKENDS:
        raise ValueError(f"fft_backend must be one of {', '.join(map(repr, BACKENDS))}; got {name!r}")
    if name == "auto":
        name = "pyfftw" if _pyfftw() is not None else "scipy"
    if name == "pyfftw" and _pyfftw() is None:
        raise ValueError(
            "fft_backend='pyfftw' requested but pyfftw is not importable (install it with "
            "'pip install pldshuffle[fftw]'); use 'scipy' or 'auto'"
        )
    return FFTBackend(name)  # type: ignore[arg-type]
