"""Numba kernels for the sequential loops of the library (the only package that imports numba).

numba is imported, and every kernel here is jitted, on the first call of a public wrapper, not on import
(``import numba`` alone costs ~0.3 s).  Kernels are compiled with ``cache=True``; before numba is
imported, ``NUMBA_CACHE_DIR`` defaults to ``$XDG_CACHE_HOME/pldshuffle/numba`` (``~/.cache/...``) when the
user has not set it, so that a package installed read-only still reuses its compiled kernels across
processes (set by :func:`configure_numba_cache`, which ``pldshuffle/__init__.py`` calls at import), in a
subdirectory named by a digest of this package's sources (see :func:`configure_numba_cache`).

Kernels are plain Python functions registered with :func:`jit`; :func:`compiled` replaces each by its
numba dispatcher in every kernel module's namespace (so jitted kernels calling each other, across modules
too, resolve to dispatchers) the first time any kernel is needed, and a module's ``_fma`` by LLVM's fused
multiply-add.  Submodules by topic: :mod:`.profile` (lattice hockey-stick profiles, rounding MGFs),
:mod:`.tilted` (kRR tilted trinomial pairs, lattice cells), :mod:`.clones` (clone pairs) and
:mod:`.binomial` (2RR binomial windows and sums of two binomials), on the double-double arithmetic of
:mod:`.double_double`.
"""

from __future__ import annotations

import hashlib
import os
import sys
import threading
from collections.abc import Callable
from pathlib import Path

__all__ = [
    "UNIT_ROUNDOFF",
    "bin_points",
    "binomial_log_rows",
    "binomial_walk",
    "clone_fill_support",
    "clone_loss_range",
    "clone_stream",
    "compiled",
    "configure_numba_cache",
    "connect_the_dots",
    "dependent_fixed_b_cells",
    "fill_tilted_points",
    "hockey_stick_profile",
    "jit",
    "kernel_sources_digest",
    "largest_upper_profiles",
    "lower_hull",
    "max_shifted_sum",
    "merge_to_lattice",
    "num_threads",
    "participation_weights",
    "profile_at_points",
    "rounding_mgf",
    "rr_pair_from_noise",
    "stream_tilted_points",
    "two_binomial_cuts",
    "two_binomial_pmf",
    "window_dot_error",
]

#: Unit roundoff of IEEE double precision, ``u = 2^-53`` (half the machine epsilon): a correctly rounded
#: operation has relative error at most ``u``.  The one home of the constant for every error bound.
UNIT_ROUNDOFF = 2.0**-53

_JIT_OPTIONS: dict[tuple[str, str], dict[str, object]] = {}
_READY = False
_COMPILING = threading.Lock()


def configure_numba_cache() -> None:
    """Default ``NUMBA_CACHE_DIR`` to a per-user cache directory, unless the user set it.

    ``cache=True`` otherwise writes next to the module, which fails silently in a read-only install
    and makes every new process recompile (seconds).  The directory is
    ``$XDG_CACHE_HOME/pldshuffle/numba/<digest>`` (``~/.cache/...``), ``<digest>`` naming the contents of the
    kernel modules (:func:`kernel_sources_digest`): numba invalidates a cached kernel only when *its own*
    source file changes, so a kernel inlining one from another module (``clones`` calls ``tilted._add``)
    would otherwise keep the old code after an upgrade or edit of that module.  Nothing is set if the
    directory cannot be created.  If numba is already imported, its configuration is updated too (it reads
    the variable only at import).
    """
    if os.environ.get("NUMBA_CACHE_DIR"):
        return
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    path = os.path.join(base, "pldshuffle", "numba", kernel_sources_digest(Path(__file__).parent))
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


def kernel_sources_digest(directory: Path) -> str:
    """First 16 hex digits of the SHA-256 of the ``*.py`` files in ``directory`` (names and contents, in
    name order): equal exactly when no kernel module changed.  O(total source size), ~0.1 ms."""
    digest = hashlib.sha256()
    for source in sorted(directory.glob("*.py")):
        digest.update(source.name.encode() + b"\0" + source.read_bytes() + b"\0")
    return digest.hexdigest()[:16]


def jit(**options: object) -> Callable[[Callable], Callable]:
    """Register a kernel to be jitted with ``numba.njit(cache=True, **options)`` on first use."""

    def register(func: Callable) -> Callable:
        _JIT_OPTIONS[func.__module__, func.__name__] = {"cache": True, **options}
        return func

    return register


def compiled() -> None:
    """Import numba and replace every registered kernel by its dispatcher, and ``prange`` by
    ``numba.prange``, in every kernel module (the kernel's own and those importing it; once, compilation
    is lazy)."""
    global _READY
    if _READY:
        return
    with _COMPILING:  # the recursions' worker threads may call kernels first
        if not _READY:
            _install_dispatchers()


def _install_dispatchers() -> None:
    """:func:`compiled`'s work, done once."""
    global _READY
    configure_numba_cache()
    import numba

    fma = _fma_intrinsic()
    dispatchers = {}
    for (module, name), options in _JIT_OPTIONS.items():
        function = sys.modules[module].__dict__[name]
        dispatchers[function] = numba.njit(**options)(function)
    for module in {module for module, _ in _JIT_OPTIONS}:
        namespace = sys.modules[module].__dict__
        for name, value in list(namespace.items()):
            # A kernel imported by another kernel module is rebound there too.
            if callable(value) and value in dispatchers:
                namespace[name] = dispatchers[value]
        if "prange" in namespace:
            namespace["prange"] = numba.prange
        if "_fma" in namespace:
            namespace["_fma"] = fma
    _READY = True


def _fma_intrinsic() -> Callable:
    """numba intrinsic for LLVM's ``llvm.fma.f64``: ``a·b + c`` rounded once (a hardware instruction on
    x86-64 with FMA3 and on ARMv8; LLVM calls libm's correctly rounded ``fma`` elsewhere).  Kernels name it
    ``_fma``; :func:`compiled` installs it in their modules in place of the plain-Python version."""
    from llvmlite import ir
    from numba import types
    from numba.extending import intrinsic

    @intrinsic
    def fma(typingctx, a, b, c):  # pragma: no cover - runs while numba types a kernel
        double = ir.DoubleType()

        def codegen(context, builder, signature, args):
            function = builder.module.declare_intrinsic("llvm.fma", [double], ir.FunctionType(double, [double] * 3))
            return builder.call(function, args)

        return types.float64(types.float64, types.float64, types.float64), codegen

    return fma


def num_threads() -> int:
    """numba's thread count (imports numba)."""
    compiled()
    import numba

    return int(numba.get_num_threads())


from .binomial import binomial_log_rows, binomial_walk, rr_pair_from_noise, two_binomial_cuts, two_binomial_pmf, window_dot_error  # noqa: E402  (the submodules register with jit)
from .profile import connect_the_dots, hockey_stick_profile, largest_upper_profiles, lower_hull, max_shifted_sum, merge_to_lattice, profile_at_points, rounding_mgf  # noqa: E402
from .tilted import bin_points, fill_tilted_points, stream_tilted_points  # noqa: E402
from .clones import clone_fill_support, clone_loss_range, clone_stream  # noqa: E402
from .blanket import dependent_fixed_b_cells, participation_weights  # noqa: E402
