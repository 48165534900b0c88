"""Module paths of the previous release keep working for one release: each warns and re-exports its new home."""

from __future__ import annotations

import importlib
import subprocess
import sys
import warnings
from pathlib import Path

import pytest

import pldshuffle as ps

ROOT = Path(__file__).resolve().parent.parent
MOVED = {
    "certified": ("pld.certified", "CertifiedPLD"),
    "dominating": ("worstcase.strategy", "family_term"),
    "lattice": ("pld.lattice", "LatticeDirection"),
    "grid": ("pld.discretize", "discretize"),
    "fft": ("pld.fft", "get_backend"),
    "composition": ("pld.composition", "realize"),
    "adaptive": ("worstcase.recursion", "adaptive_profile"),
    "spacing": ("pld.sizing", "choose_spacing"),
}


@pytest.mark.parametrize("old", sorted(MOVED))
def test_old_path_warns_and_reexports(old):
    new, name = MOVED[old]
    # A fresh interpreter: the warning is emitted once, on the first import.
    code = (f"import warnings; warnings.simplefilter('error', DeprecationWarning)\n"
            f"try:\n    import pldshuffle.{old}\nexcept DeprecationWarning as w:\n    print('warned:', w)\n")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True).stdout
    assert f"pldshuffle.{old} is deprecated" in out and f"pldshuffle.{new}" in out
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        module = importlib.import_module(f"pldshuffle.{old}")
    assert getattr(module, name) is getattr(importlib.import_module(f"pldshuffle.{new}"), name)


def test_old_certified_path_keeps_its_helpers():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        from pldshuffle.certified import MemoryBudgetError, invert, relative_target
    from pldshuffle.pld.inversion import invert as new_invert
    from pldshuffle.pld.sizing import MemoryBudgetError as new_error, relative_target as new_target

    assert (MemoryBudgetError, invert, relative_target) == (new_error, new_invert, new_target)


def test_pld_is_the_package_and_exports_without_a_warning():
    code = ("import warnings; warnings.simplefilter('error')\n"
            "from pldshuffle.pld import LossDistribution, PrivacyLossPair, CertifiedPLD, MemoryBudgetError\n"
            "import pldshuffle as ps\nassert ps.PrivacyLossPair is PrivacyLossPair and ps.CertifiedPLD is CertifiedPLD\nprint('ok')\n")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True)
    assert out.returncode == 0 and out.stdout.strip() == "ok", out.stderr
    assert ps.pld.PrivacyLossPair is ps.PrivacyLossPair
