"""Sphinx configuration of the pldshuffle documentation (build: ``sphinx-build -W -b html docs docs/_build/html``)."""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import pldshuffle  # noqa: E402
from pldshuffle.cli import _parser  # noqa: E402

project = "pldshuffle"
author = "The pldshuffle developers"
copyright = "2026, the pldshuffle developers"
release = pldshuffle.__version__
version = ".".join(release.split(".")[:2])

extensions = [
    "myst_parser",
    "numpydoc",
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.mathjax",
    "sphinx.ext.viewcode",
]
source_suffix = {".rst": "restructuredtext", ".md": "markdown"}
exclude_patterns = ["_build", "_generated/*.txt"]
myst_enable_extensions = ["dollarmath", "amsmath", "colon_fence"]
myst_heading_anchors = 3

autodoc_default_options = {"members": True, "member-order": "bysource", "show-inheritance": True}
autodoc_typehints = "none"  # numpydoc renders the types written in the docstrings
numpydoc_show_class_members = False
numpydoc_xref_param_type = False
autosummary_generate = False

html_theme = "pydata_sphinx_theme"
html_title = f"pldshuffle {release}"
html_static_path = ["_static"]
html_theme_options = {"navigation_with_keys": False, "show_toc_level": 2}


def _write_cli_help() -> None:
    """Write ``pldshuffle [SUBCOMMAND] --help`` to ``_generated/`` so the CLI page never goes stale."""
    out = Path(__file__).resolve().parent / "_generated"
    out.mkdir(exist_ok=True)
    parser = _parser()
    (out / "help.txt").write_text(parser.format_help(), encoding="utf-8")
    subparsers = next(a for a in parser._actions if a.__class__.__name__ == "_SubParsersAction")
    for name, sub in subparsers.choices.items():
        (out / f"help-{name}.txt").write_text(sub.format_help(), encoding="utf-8")


_write_cli_help()
