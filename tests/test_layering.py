"""The certified core (``pldshuffle/pld/``) imports nothing above it: no mechanisms, randomizers, worst-case
strategies, accountant, interop or CLI (also not through the deprecated aliases of moved modules).  Every
import statement of every file is read from its syntax tree, including imports inside functions and under
``TYPE_CHECKING``."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "pldshuffle"
CORE = PACKAGE / "pld"
#: Modules the core must not import (a prefix match: their submodules too).
FORBIDDEN = (
    "pldshuffle.mechanisms", "pldshuffle.randomizers", "pldshuffle.worstcase", "pldshuffle.accountant",
    "pldshuffle.interop", "pldshuffle.cli", "pldshuffle._cli_ledger", "pldshuffle._cli_output", "pldshuffle._build",
    "pldshuffle.calibrate",
    # deprecated aliases that re-export the layers above
    "pldshuffle.dominating", "pldshuffle.adaptive", "pldshuffle.certified", "pldshuffle.lattice", "pldshuffle.grid",
    "pldshuffle.fft", "pldshuffle.composition", "pldshuffle.spacing",
)


def imported_modules(source: str, module: str) -> set[str]:
    """Absolute names of every module ``source`` (the text of module ``module``, a dotted name) imports,
    with ``from X import name`` also counted as importing ``X.name`` (it may be a submodule)."""
    package = module.rsplit(".", 1)[0] if not module.endswith(".__init__") else module[: -len(".__init__")]
    found: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                parts = package.split(".")
                base = ".".join(parts[: len(parts) - node.level + 1])
                base = f"{base}.{node.module}" if node.module else base
            else:
                base = node.module or ""
            found.add(base)
            found.update(f"{base}.{alias.name}" for alias in node.names)
    return found


def _violations(source: str, module: str) -> list[str]:
    return sorted(name for name in imported_modules(source, module) if any(name == f or name.startswith(f + ".") for f in FORBIDDEN))


def _core_files() -> list[Path]:
    return sorted(CORE.glob("*.py"))


def test_the_core_exists_and_is_read():
    names = {p.stem for p in _core_files()}
    assert {"__init__", "certified", "distributions", "discretize", "lattice", "composition", "sizing"} <= names


@pytest.mark.parametrize("path", _core_files(), ids=lambda p: p.name)
def test_core_module_imports_nothing_above_it(path):
    module = "pldshuffle.pld." + path.stem
    assert _violations(path.read_text(encoding="utf-8"), module) == []


@pytest.mark.parametrize("source, module, bad", [
    ("from ..worstcase.ledger import LedgerPLD\n", "pldshuffle.pld.certified", "pldshuffle.worstcase.ledger"),
    ("from .. import accountant\n", "pldshuffle.pld.certified", "pldshuffle.accountant"),
    ("def f():\n    import pldshuffle.mechanisms.krr\n", "pldshuffle.pld.lattice", "pldshuffle.mechanisms.krr"),
    ("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from ..interop import x\n", "pldshuffle.pld.sizing", "pldshuffle.interop"),
    ("from ..dominating import family_term\n", "pldshuffle.pld.__init__", "pldshuffle.dominating"),  # from the package itself
])
def test_the_checker_catches_upward_imports(source, module, bad):
    assert bad in _violations(source, module)


def test_the_checker_allows_the_core_and_helpers():
    source = "from .distributions import PrivacyLossPair\nfrom .._kernels import UNIT_ROUNDOFF\nimport numpy as np\n"
    assert _violations(source, "pldshuffle.pld.certified") == []
