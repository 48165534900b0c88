"""Error-free transformations and double-double arithmetic for the jitted kernels (inlined where used).

``_two_product`` and ``_two_sum`` split a product or sum of doubles into its rounded value and its exact
error; the ``_dd_*`` operations carry a value as an unevaluated sum ``hi + lo`` of two doubles, with the
relative error bounds of Joldes, Muller and Popescu (ACM TOMS 2017).  ``_fma`` is plain Python here and
LLVM's fused multiply-add once :func:`pldshuffle._kernels.compiled` has run.
"""

from __future__ import annotations

from fractions import Fraction

from . import jit as _jit

__all__: list[str] = []


def _fma(a: float, b: float, c: float) -> float:
    """``a·b + c`` rounded once.  Jitted kernels get LLVM's fused multiply-add instead (installed by
    :func:`pldshuffle._kernels.compiled`); this plain-Python version is exact by rationals."""
    return float(Fraction(a) * Fraction(b) + Fraction(c))


@_jit(inline="always")
def _two_product(a, b):  # pragma: no cover - jitted
    """``a·b = p + e`` exactly (the error of a product is a double; one fused multiply-add finds it), unless
    ``|a·b|`` is below ~1e-290, where ``e`` underflows: the walks stop at values far above that."""
    p = a * b
    return p, _fma(a, b, -p)


@_jit(inline="always")
def _two_sum(a, b):  # pragma: no cover - jitted
    """Knuth's ``a + b = s + e`` exactly."""
    s = a + b
    v = s - a
    return s, (a - (s - v)) + (b - v)


@_jit(inline="always")
def _fast_two_sum(a, b):  # pragma: no cover - jitted
    """``a + b = s + e`` exactly when ``|a| ≥ |b|`` (normalises a double-double)."""
    s = a + b
    return s, b - (s - a)


@_jit(inline="always")
def _dd_times(ah, al, b):  # pragma: no cover - jitted
    """Double-double times double, relative error ≤ 2u² (Joldes, Muller, Popescu, ACM TOMS 2017)."""
    p, e = _two_product(ah, b)
    return _fast_two_sum(p, e + al * b)


@_jit(inline="always")
def _dd_times_dd(ah, al, bh, bl):  # pragma: no cover - jitted
    """Double-double product, relative error ≤ 7u² (ibid.)."""
    p, e = _two_product(ah, bh)
    return _fast_two_sum(p, e + (ah * bl + al * bh))


@_jit(inline="always")
def _dd_over(ah, al, b):  # pragma: no cover - jitted
    """Double-double over double, relative error ≤ 12u² (ibid.'s algorithm, 3.5u², with one division: the
    quotient and the correction, ~4u of it, are multiplied by the rounded reciprocal; ``ah - p`` stays
    exact by Sterbenz, p being within 3u of ah)."""
    inv = 1.0 / b
    th = ah * inv
    p, e = _two_product(th, b)
    return _fast_two_sum(th, ((ah - p) - e + al) * inv)


@_jit(inline="always")
def _dd_over_dd(ah, al, bh, bl):  # pragma: no cover - jitted
    """Double-double quotient, relative error ≤ 15u² + 56u³ (ibid.)."""
    th = ah / bh
    rh, rl = _dd_times(bh, bl, th)
    return _fast_two_sum(th, ((ah - rh) + (al - rl)) / bh)
