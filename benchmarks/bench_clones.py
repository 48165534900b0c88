"""Benchmark of the clone reductions (``ShuffledLDP``): time, peak memory and certified ε width.

Grid: n ∈ {1e4, 1e5, 1e6, 1e7} × ε0 ∈ {1, 4, 7, 9} × rounds ∈ {1, 64}, δ = 1e-6 (issue 3).
Each case runs in a fresh Python process so that its peak resident memory (``ru_maxrss``) is its own;
numba kernels are warmed up on a tiny case first (compilation is cached on disk anyway), then the
timed part is ``FourierAccountant().compose(mech, rounds).get_epsilon_bounds(delta)`` including
building the pairs.  Cases refused up front (memory/time budgets) are recorded with the message.

Usage::

    python benchmarks/bench_clones.py                  # full grid -> benchmarks/results/clones.json
    python benchmarks/bench_clones.py --quick          # n <= 1e6, ε0 ∈ {1, 4}
    python benchmarks/bench_clones.py --reductions fmt20 fmt23 --out /tmp/clones.json
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import time
from pathlib import Path

FULL = {"n": [10**4, 10**5, 10**6, 10**7], "eps0": [1.0, 4.0, 7.0, 9.0], "rounds": [1, 64]}
QUICK = {"n": [10**4, 10**5, 10**6], "eps0": [1.0, 4.0], "rounds": [1, 64]}
DEFAULT_OUT = Path(__file__).resolve().parent / "results" / "clones.json"


def run_case(case: dict) -> dict:
    """Run one case in this process (called in the child)."""
    import resource
    import warnings

    import numba

    import pldshuffle as ps
    from pldshuffle.mechanisms import ShuffledLDP
    from pldshuffle.mechanisms.clones import EXACT_SUPPORT_LIMIT

    warnings.simplefilter("ignore", UserWarning)  # the khh21 warning
    # Warm-up: load the cached numba kernels (exact and streamed paths) and the FFT code.
    from pldshuffle.mechanisms.clones import clone_pair_bounds

    clone_pair_bounds(200, 1.0, 0.3, max_exact_support=0, bins=64)
    ps.FourierAccountant().compose(ShuffledLDP(200, 1.0, case["reduction"]), 2).get_epsilon_bounds(case["delta"])
    base_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss

    out = dict(case)
    mech = ShuffledLDP(case["n"], case["eps0"], case["reduction"])
    try:
        support = mech.support_size()
        out["support_points"] = support
        out["evaluation"] = "exact" if support <= EXACT_SUPPORT_LIMIT else "streamed"
        t0, c0 = time.perf_counter(), time.process_time()
        b = ps.FourierAccountant().compose(mech, case["rounds"]).get_epsilon_bounds(case["delta"])
        out.update(
            status="ok",
            time_s=time.perf_counter() - t0,
            cpu_s=time.process_time() - c0,
            eps_lower=b.lower,
            eps_upper=b.upper,
            relative_width=b.relative_gap,
            is_guarantee=b.is_guarantee,
            method=b.diagnostics.get("method"),
            grid_size=b.diagnostics.get("grid_size"),
            value_discretization_interval=b.diagnostics.get("value_discretization_interval"),
        )
    except (ValueError, MemoryError) as exc:
        out.update(status="refused", message=str(exc))
    peak_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    out["peak_rss_mib"] = peak_kib / 1024
    out["rss_growth_mib"] = (peak_kib - base_kib) / 1024
    out["numba_threads"] = numba.get_num_threads()
    return out


def spawn(case: dict, timeout: float) -> dict:
    cmd = [sys.executable, str(Path(__file__).resolve()), "--_case", json.dumps(case)]
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return dict(case, status="timeout", message=f"no result within {timeout:g} s")
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("{")]
    if proc.returncode != 0 or not lines:
        return dict(case, status="error", message=(proc.stderr or proc.stdout)[-2000:])
    return json.loads(lines[-1])


def _cases(quick: bool, reductions: list[str], delta: float) -> list[dict]:
    grid = QUICK if quick else FULL
    return [
        {"reduction": red, "n": n, "eps0": e0, "rounds": r, "delta": delta}
        for red in reductions
        for n in grid["n"]
        for e0 in grid["eps0"]
        for r in grid["rounds"]
    ]


def _common_row(result: dict) -> dict:
    """A case result in the schema of :mod:`benchmarks._common` (for ``python -m benchmarks all``)."""
    from benchmarks._common import make_row

    params = {k: result[k] for k in ("reduction", "n", "eps0", "rounds", "delta")}
    ok = result.get("status") == "ok"
    extra = {k: v for k, v in result.items() if k not in params and k not in ("eps_lower", "eps_upper", "time_s")}
    return make_row(
        f"clones_{result['reduction']}",
        "pldshuffle",
        params,
        value=result.get("eps_upper") if ok else None,
        lower=result.get("eps_lower"),
        upper=result.get("eps_upper"),
        seconds=result.get("time_s"),
        peak_memory_mb=result.get("peak_rss_mib") * 1.048576 if result.get("peak_rss_mib") else None,
        notes=result.get("message", ""),
        status="ok" if ok else ("skipped" if result.get("status") == "refused" else "error"),
        extra=extra,
    )


def run(quick: bool = False, *, reductions: tuple[str, ...] = ("fmt20", "fmt23"), delta: float = 1e-6, timeout: float = 600.0) -> dict:
    """Entry point for ``python -m benchmarks all``: every case in its own process, rows in the common schema."""
    results = [spawn(case, timeout) for case in _cases(quick, list(reductions), delta)]
    return {"rows": [_common_row(r) for r in results], "comparisons": [], "meta": {"suite": "clones", "quick": quick}}


def fmt_row(r: dict) -> str:
    head = f"{r['reduction']:>6} {r['n']:>9.0e} {r['eps0']:>4g} {r['rounds']:>4d}"
    if r.get("status") != "ok":
        return f"{head}  {r.get('status', '?').upper()}: {r.get('message', '')[:110]}"
    return (
        f"{head} {r['eps_lower']:>13.7g} {r['eps_upper']:>13.7g} {r['relative_width']:>9.2e} "
        f"{r['time_s']:>8.2f} {r['cpu_s']:>8.2f} {r['peak_rss_mib']:>8.0f} {r['support_points']:>12,d} {r['evaluation']:>8}"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help="JSON output file (default: %(default)s)")
    parser.add_argument("--quick", action="store_true", help="run the subset n <= 1e6, ε0 ∈ {1, 4}")
    parser.add_argument("--reductions", nargs="+", default=["fmt20"], choices=["fmt20", "fmt23", "khh21"])
    parser.add_argument("--delta", type=float, default=1e-6)
    parser.add_argument("--timeout", type=float, default=600.0, help="seconds per case")
    parser.add_argument("--_case", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)

    if args._case:
        print(json.dumps(run_case(json.loads(args._case))), flush=True)
        return 0

    cases = _cases(args.quick, args.reductions, args.delta)
    header = (
        f"{'red':>6} {'n':>9} {'eps0':>4} {'rnds':>4} {'eps_lower':>13} {'eps_upper':>13} {'rel_width':>9} "
        f"{'wall_s':>8} {'cpu_s':>8} {'peak_MiB':>8} {'support':>12} {'eval':>8}"
    )
    print(header, flush=True)
    results = []
    for case in cases:
        row = spawn(case, args.timeout)
        results.append(row)
        print(fmt_row(row), flush=True)

    import numpy
    import scipy

    import pldshuffle

    meta = {
        "benchmark": "clone reductions (ShuffledLDP), issue 3",
        "date": time.strftime("%Y-%m-%d %H:%M:%S"),
        "python": platform.python_version(),
        "numpy": numpy.__version__,
        "scipy": scipy.__version__,
        "pldshuffle": pldshuffle.__version__,
        "machine": platform.machine(),
        "cpu_count": os.cpu_count(),
        "load_average": os.getloadavg() if hasattr(os, "getloadavg") else None,
        "delta": args.delta,
        "quick": args.quick,
        "notes": "time_s = wall seconds of compose+get_epsilon_bounds (pair construction included, numba warm); "
        "peak_rss_mib = the case's process high-water mark",
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps({"meta": meta, "results": results}, indent=2))
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
