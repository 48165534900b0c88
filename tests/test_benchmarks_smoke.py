"""Smoke test of the benchmark harness: ``python -m benchmarks core --quick`` writes schema-valid JSON.

Runs the quick suite in a subprocess (about 30 s on 2 shared cores), so it is marked slow.
"""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def quick_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("bench") / "core-quick.json"
    proc = subprocess.run(
        [sys.executable, "-m", "benchmarks", "core", "--quick", "--out", str(out)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr[-4000:]
    return out, json.loads(out.read_text(encoding="utf-8"))


def test_outputs_written(quick_run):
    out, payload = quick_run
    assert out.with_suffix(".md").read_text(encoding="utf-8").startswith("# Benchmark suite `core` (quick)")
    assert payload["suite"] == "core" and payload["quick"] is True
    assert payload["schema_problems"] == {}
    for key in ("platform", "cpu_count", "python", "versions"):
        assert key in payload["machine"]
    for dist in ("numpy", "scipy", "pyfftw", "dp_accounting"):
        assert dist in payload["machine"]["versions"]


def test_row_schema(quick_run):
    from benchmarks._common import ROW_KEYS, validate_row

    _, payload = quick_run
    rows = payload["rows"]
    assert rows
    for row in rows:
        assert set(ROW_KEYS) <= set(row), row
        assert validate_row(row) == [], row
    ok = [r for r in rows if r["status"] == "ok"]
    assert {r["system"] for r in ok} >= {"pldshuffle"}
    for r in ok:
        assert r["seconds"] >= 0
        if r["system"] == "pldshuffle":
            assert 0 <= r["lower"] <= r["upper"]
            assert math.isclose(r["value"], r["upper"])
            assert r["relative_gap"] >= 0
    cases = {r["case"] for r in rows}
    assert {"krr_strong_side_by_side", "2rr_vs_n", "2rr_vs_rounds"} <= cases


def test_side_by_side_and_targets(quick_run):
    _, payload = quick_run
    have_dp = any(r["system"] == "dp-accounting" and r["status"] == "ok" for r in payload["rows"])
    if have_dp:
        assert payload["comparisons"]
        for c in payload["comparisons"]:
            assert c["consistency"]["ok"], c["consistency"]["violations"]
            for e in c["dp_accounting"]:
                assert e["optimistic"] <= e["pessimistic"]
                assert e["build_seconds"] >= 0 and e["compose_query_seconds"] >= 0
    statuses = {t["status"] for t in payload["targets"]}
    assert statuses <= {"pass", "FAIL", "not measured"} | {s for s in statuses if s.startswith("info")}
