"""Command line: ``python -m benchmarks <suite> [--quick] [--out PATH]``."""

from __future__ import annotations

import argparse
import datetime as _dt
import importlib
import sys
import time
from pathlib import Path
from typing import Any

from . import OPTIONAL_SUITES, SUITES
from ._common import load_average, log, machine_info, skipped_row, validate_row, write_json
from .report import render
from .targets import evaluate

DEFAULT_DIR = Path(__file__).resolve().parent / "results"


def _normalise(result: Any) -> dict[str, Any]:
    if isinstance(result, dict):
        return {"rows": list(result.get("rows", [])), "comparisons": list(result.get("comparisons", [])), "meta": dict(result.get("meta", {}))}
    return {"rows": list(result or []), "comparisons": [], "meta": {}}


def run_suite(suite: str, quick: bool) -> dict[str, Any]:
    from . import core

    parts = {"core": _normalise(core.run(quick=quick))}
    if suite == "all":
        for name in OPTIONAL_SUITES:
            short = name.rsplit(".", 1)[-1]
            try:
                module = importlib.import_module(name)
            except ImportError as exc:
                parts[short] = {"rows": [skipped_row(short, "pldshuffle", {}, f"suite module not available: {exc}")], "comparisons": [], "meta": {}}
                continue
            runner = getattr(module, "run", None)
            if runner is None:
                parts[short] = {"rows": [skipped_row(short, "pldshuffle", {}, f"{name} has no run(quick=...) entry point")], "comparisons": [], "meta": {}}
                continue
            log(f"suite {short}")
            parts[short] = _normalise(runner(quick=quick))
    rows = [r for p in parts.values() for r in p["rows"]]
    comparisons = [c for p in parts.values() for c in p["comparisons"]]
    meta = {k: p["meta"] for k, p in parts.items()}
    return {"rows": rows, "comparisons": comparisons, "meta": meta}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks", description=__doc__)
    parser.add_argument("suite", choices=SUITES, help="which suite to run")
    parser.add_argument("--quick", action="store_true", help="small subset (under 2 minutes on 2 cores)")
    parser.add_argument("--out", type=Path, default=None, help="JSON output path (default benchmarks/results/<suite>[-quick].json); "
                        "the Markdown summary is written next to it with the suffix .md")
    args = parser.parse_args(argv)

    out = args.out or DEFAULT_DIR / f"{args.suite}{'-quick' if args.quick else ''}.json"
    machine = machine_info()
    started = _dt.datetime.now().astimezone()
    t0 = time.perf_counter()
    log(f"suite {args.suite}{' (quick)' if args.quick else ''} -> {out}")
    result = run_suite(args.suite, args.quick)
    machine["load_average_at_end"] = load_average()
    problems = {i: validate_row(r) for i, r in enumerate(result["rows"])}
    problems = {i: p for i, p in problems.items() if p}
    payload = {
        "suite": args.suite,
        "quick": args.quick,
        "started": started.isoformat(timespec="seconds"),
        "finished": _dt.datetime.now().astimezone().isoformat(timespec="seconds"),
        "wall_seconds": time.perf_counter() - t0,
        "command": " ".join([Path(sys.executable).name, "-m", "benchmarks", *(argv if argv is not None else sys.argv[1:])]),
        "machine": machine,
        "targets": evaluate(result["rows"], result["comparisons"]),
        "rows": result["rows"],
        "comparisons": result["comparisons"],
        "meta": result["meta"],
        "schema_problems": problems,
    }
    write_json(out, payload)
    md = out.with_suffix(".md")
    md.write_text(render(payload), encoding="utf-8")
    log(f"wrote {out} and {md} ({len(result['rows'])} rows, {payload['wall_seconds']:.0f} s)")
    for t in payload["targets"]:
        log(f"target: {t['status']:>12}  {t['target']}")
    if problems:
        log(f"schema problems in rows: {problems}")
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
