"""Every code block of README.md runs as written (python in-process; shell lines: ``pldshuffle`` via the CLI,
``python -c`` snippets in-process; ``pip``/``pytest`` set-up lines are what CI itself runs)."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest

from pldshuffle.cli import main

DOC = Path(__file__).resolve().parent.parent / "README.md"
BLOCKS = re.findall(r"```(python|bash)\n(.*?)```", DOC.read_text(encoding="utf-8"), flags=re.S) if DOC.exists() else []


def _commands(script: str) -> list[list[str]]:
    """Shell lines split on ``&&`` into argument lists."""
    out = []
    for line in script.replace("\\\n", " ").splitlines():
        words = shlex.split(line)
        while words:
            cut = words.index("&&") if "&&" in words else len(words)
            out.append(words[:cut])
            words = words[cut + 1 :]
    return [c for c in out if c]


@pytest.mark.parametrize("language, code", BLOCKS, ids=[f"block{i}-{lang}" for i, (lang, _) in enumerate(BLOCKS)])
def test_block_runs(language, code, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    if language == "python":
        if "dp_accounting" in code:
            pytest.importorskip("dp_accounting")
        exec(compile(code, str(DOC), "exec"), {"__name__": "__doc_block__"})
        return
    for argv in _commands(code):
        if argv[0] == "pip" or argv[:3] == ["python", "-m", "pytest"]:
            continue  # installation and the test command itself: what CI runs around this test
        if argv[:2] == ["python", "-c"]:
            exec(compile(argv[2], str(DOC), "exec"), {"__name__": "__doc_block__"})
            continue
        assert argv[0] == "pldshuffle", argv
        assert main(argv[1:]) == 0, argv
