"""Every code block of README.md and of the documentation pages (docs/*.md) runs as written (python
in-process; shell lines: ``pldshuffle`` via the CLI, ``python -c`` snippets in-process; ``pip``/``pytest``
set-up lines are what CI itself runs)."""

from __future__ import annotations

import re
import shlex
import sys
import types
from pathlib import Path

import pytest

from pldshuffle.cli import main

ROOT = Path(__file__).resolve().parent.parent
DOCS = [path for path in (ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))) if path.exists()]
BLOCKS = [
    (path, language, code)
    for path in DOCS
    for language, code in re.findall(r"```(python|bash)\n(.*?)```", path.read_text(encoding="utf-8"), flags=re.S)
]


def _commands(script: str) -> list[list[str]]:
    """Shell lines split on ``&&`` into argument lists (``#`` comments dropped)."""
    out = []
    for line in script.replace("\\\n", " ").splitlines():
        words = shlex.split(line, comments=True)
        while words:
            cut = words.index("&&") if "&&" in words else len(words)
            out.append(words[:cut])
            words = words[cut + 1 :]
    return [c for c in out if c]


def _cli(argv: list[str]) -> int:
    """Exit status of the command line run in-process (``--version`` / ``--help`` exit via SystemExit)."""
    try:
        return main(argv)
    except SystemExit as exc:
        return int(exc.code or 0)


@pytest.mark.parametrize(
    "path, language, code", BLOCKS,
    ids=[f"{path.name}-block{i}-{lang}" for i, (path, lang, _) in enumerate(BLOCKS)],
)
def test_block_runs(path, language, code, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    if language == "python":
        if "dp_accounting" in code:
            pytest.importorskip("dp_accounting")
        if "matplotlib" in code:
            pytest.importorskip("matplotlib")
        # As a user's script: a module of its own (dataclasses and typing look their class's module up),
        # without this file's ``from __future__`` flags.
        module = types.ModuleType("__doc_block__")
        monkeypatch.setitem(sys.modules, module.__name__, module)
        exec(compile(code, str(path), "exec", dont_inherit=True), module.__dict__)
        return
    for argv in _commands(code):
        if argv[0] == "pip" or argv[:3] == ["python", "-m", "pytest"]:
            continue  # installation and the test command itself: what CI runs around this test
        if argv[:2] == ["python", "-c"]:
            exec(compile(argv[2], str(path), "exec"), {"__name__": "__doc_block__"})
            continue
        assert argv[0] == "pldshuffle", argv
        assert _cli(argv[1:]) == 0, argv
