"""Import-time behaviour: lazy public names, heavy dependencies loaded on first use, numba cache location.

Each check runs in a fresh interpreter (``sys.modules`` of the test process already holds everything).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import pldshuffle as ps
from pldshuffle.pld import fft
from pldshuffle._kernels import kernel_sources_digest

ROOT = Path(__file__).resolve().parent.parent
HEAVY = ("scipy", "scipy.stats", "scipy.special", "scipy.fft", "numba", "pyfftw", "matplotlib", "dp_accounting")


def fresh(code: str, **env: str) -> dict:
    """Run ``code`` (which prints a JSON value) in a new interpreter at the repository root."""
    environ = {k: v for k, v in os.environ.items() if k != "NUMBA_CACHE_DIR"}
    environ.update(env)
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=environ, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-3000:]
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_import_loads_no_heavy_dependency():
    loaded = fresh(f"import json, sys, pldshuffle; print(json.dumps([m for m in {HEAVY!r} if m in sys.modules]))")
    assert loaded == []


def test_accountant_and_krr_do_not_load_numba_or_scipy_stats_until_used():
    loaded = fresh(
        "import json, sys, pldshuffle as ps; ps.FourierAccountant; ps.ShuffledKRR; ps.PairFamily; "
        f"print(json.dumps([m for m in {HEAVY!r} if m in sys.modules]))"
    )
    assert loaded == []


def test_public_names_resolve_and_are_listed():
    for name in ps.__all__:
        assert getattr(ps, name) is not None
        assert name in dir(ps)
    assert {"ShuffledKRR", "ShuffledBinaryRR", "ShuffledLDP", "FourierAccountant", "PairFamily"} <= set(ps.__all__)
    assert ps.ShuffledKRR is ps.mechanisms.krr.ShuffledKRR and ps.bounds.BASELINES
    with pytest.raises(AttributeError, match="no_such_name"):
        ps.no_such_name  # noqa: B018


def test_numba_cache_defaults_to_user_cache_dir(tmp_path):
    env = fresh("import json, os, pldshuffle; print(json.dumps(os.environ.get('NUMBA_CACHE_DIR')))", XDG_CACHE_HOME=str(tmp_path))
    expected = tmp_path / "pldshuffle" / "numba" / kernel_sources_digest(Path(ps._kernels.__file__).parent)
    assert env == str(expected) and expected.is_dir()
    mine = str(tmp_path / "mine")
    env = fresh("import json, os, pldshuffle; print(json.dumps(os.environ.get('NUMBA_CACHE_DIR')))", NUMBA_CACHE_DIR=mine)
    assert env == mine  # a user setting wins


def test_numba_cache_directory_changes_with_any_kernel_module(tmp_path):
    # numba re-validates a cached kernel against its own file only; the directory names every kernel file, so
    # editing a module whose kernels another module inlines starts a fresh cache.
    (tmp_path / "caller.py").write_text("from .callee import f\n")
    (tmp_path / "callee.py").write_text("def f(x):\n    return x\n")
    before = kernel_sources_digest(tmp_path)
    assert kernel_sources_digest(tmp_path) == before and len(before) == 16
    (tmp_path / "callee.py").write_text("def f(x):\n    return x + 1\n")
    assert kernel_sources_digest(tmp_path) != before


def test_pyfftw_missing_falls_back_to_scipy(monkeypatch):
    monkeypatch.setattr(fft, "_pyfftw", lambda: None)
    assert fft.available_backends() == ("scipy", "numpy")
    assert fft.get_backend("auto").name == "scipy"
    assert fft.get_backend("auto", size=fft.AUTO_SMALL).name == "scipy"
    assert fft.get_backend("auto", size=fft.AUTO_SMALL - 2).name == "numpy"
    with pytest.raises(ValueError, match=r"pyfftw.*pldshuffle\[fftw\]"):
        fft.get_backend("pyfftw")


def test_no_module_calls_blas():
    """No library code calls BLAS (``@``, ``dot``, ``matmul``, ``linalg``...): OpenBLAS's threads spin for a
    while after each call and took a core from the recursion's worker threads (2-3x slower)."""
    import ast

    blas = {"dot", "vdot", "inner", "matmul", "tensordot", "linalg", "outer", "kron"}
    found = []
    for path in sorted((ROOT / "pldshuffle").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, (ast.BinOp, ast.AugAssign)) and isinstance(node.op, ast.MatMult):
                found.append(f"{path.name}:{node.lineno} @")
            elif isinstance(node, ast.Attribute) and node.attr in blas:
                found.append(f"{path.name}:{node.lineno} .{node.attr}")
    assert not found, found


@pytest.mark.parametrize("value, expected", [("3", 3), ("1", 1), ("0", None), ("two", None), ("-2", None)])
def test_thread_counts_from_the_environment(value, expected):
    """PLDSHUFFLE_WORKERS sets the recursions' threads; anything but a positive integer is refused by name."""
    environ = {**os.environ, "PLDSHUFFLE_WORKERS": value}
    out = subprocess.run([sys.executable, "-c", "import pldshuffle.pld.fft as f; print(f.WORKERS)"], cwd=ROOT, env=environ,
                         capture_output=True, text=True, timeout=120)
    if expected is None:
        assert out.returncode != 0 and "PLDSHUFFLE_WORKERS must be a positive integer" in out.stderr and repr(value) in out.stderr
    else:
        assert out.returncode == 0 and int(out.stdout) == expected
