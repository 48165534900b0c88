"""The blanket pair (``ShuffledLDP(n, randomizer=R)``, the default reduction): scale and gain.

Two parts:

* ``scale``: OUE (d = 1024, ε0 = 1) at n = 1e6 for 64 rounds, δ = 1e-8 (target ≤ 10 s, ≤ 1 GiB), one round at
  n = 1e7 (target ≤ 10 s) and at n = 1e8 (feasible).  Each case in a fresh Python process (warm numba cache),
  so that its time (import + build + query) and its peak resident memory (``ru_maxrss``) are its own.
* ``gain``: one round at δ = 1e-6, the certified ε bracket of the blanket pair, the labelled clone pair
  (``reduction="randomizer"``) and FMT20's clone pair, for the named randomizers at n ∈ {1e3, 1e4, 1e5} and
  ε0 ∈ {0.1, 1, 2, 4} (in this process; Hadamard response only where its blanket pair takes under a minute).

Run: ``python -m benchmarks.bench_blanket [--part scale|gain] [--only NAME ...] [--out PATH]``
(JSON rows of ``benchmarks/_common.py`` to ``benchmarks/results/blanket.json``).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
import warnings
from pathlib import Path
from typing import Any

from ._common import error_row, log, machine_info, make_row, write_json

DEFAULT_OUT = Path(__file__).resolve().parent / "results" / "blanket.json"

_CHILD = """
import json, resource, time
t0 = time.perf_counter()
import pldshuffle as ps
acc = ps.FourierAccountant().compose(ps.ShuffledLDP({n}, randomizer=ps.randomizers.OUE(1024, 1.0)), {rounds})
b = acc.get_epsilon_bounds({delta})
print(json.dumps({{"total": time.perf_counter() - t0, "lower": b.lower, "upper": b.upper,
                  "rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}}))
"""

#: (name, n, rounds, δ, target seconds)
SCALE = [
    ("oue_1e6_64_rounds", 10**6, 64, 1e-8, 10.0),
    ("oue_1e7_one_round", 10**7, 1, 1e-8, 10.0),
    ("oue_1e8_one_round", 10**8, 1, 1e-8, None),
]


def _scale_rows(only: set[str] | None) -> list[dict[str, Any]]:
    rows = []
    for name, n, rounds, delta, target in SCALE:
        if only and name not in only:
            continue
        params = {"randomizer": "OUE(1024, 1.0)", "n": n, "rounds": rounds, "delta": delta, "target_seconds": target,
                  "target_memory_mb": 1024 if target else None}
        try:
            code = _CHILD.format(n=n, rounds=rounds, delta=delta)
            proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=900, check=False)
            if proc.returncode != 0:
                raise RuntimeError(proc.stderr.strip().splitlines()[-1] if proc.stderr.strip() else f"exit {proc.returncode}")
            out = json.loads(proc.stdout.strip().splitlines()[-1])
        except Exception as exc:  # noqa: BLE001 - a benchmark row records the failure
            rows.append(error_row(f"blanket_scale_{name}", "pldshuffle", params, exc))
            continue
        met = target is None or (out["total"] <= target and out["rss_mb"] <= 1024)
        rows.append(make_row(
            f"blanket_scale_{name}", "pldshuffle", params, value=out["upper"], lower=out["lower"], upper=out["upper"],
            seconds=out["total"], peak_memory_mb=out["rss_mb"],
            notes=(("meets" if met else "MISSES") + " the target") if target else "feasibility",
            extra={"whole_process_seconds": out["total"], "peak_rss_mb": out["rss_mb"]},
        ))
        log(f"{name}: [{out['lower']:.6g}, {out['upper']:.6g}] {out['total']:.2f} s, {out['rss_mb']:.0f} MB")
    return rows


def _gain_cases() -> list[tuple[str, Any, list[int]]]:
    from pldshuffle.randomizers import OLH, OUE, RAPPOR, HadamardResponse, KaryRR

    cases = []
    for eps0 in (0.1, 1.0, 2.0, 4.0):
        cases += [
            ("oue_1024", OUE(1024, eps0), [10**3, 10**4, 10**5]),
            ("olh_1024", OLH(1024, eps0), [10**3, 10**4, 10**5]),
            ("rappor_32", RAPPOR(32, eps0), [10**3, 10**4, 10**5]),
            ("krr_10", KaryRR(10, eps0), [10**3, 10**4, 10**5]),
            ("krr_100", KaryRR(100, eps0), [10**3, 10**4, 10**5]),
            ("hadamard_10", HadamardResponse(10, eps0), [10**3]),
        ]
    return cases


def _gain_rows(only: set[str] | None) -> list[dict[str, Any]]:
    import pldshuffle as ps

    rows = []
    for name, rand, sizes in _gain_cases():
        if only and name not in only:
            continue
        for n in sizes:
            params = {"randomizer": rand.describe(), "n": n, "eps0": rand.local_epsilon, "rounds": 1, "delta": 1e-6}
            try:
                out = {}
                for reduction in ("blanket", "randomizer", "fmt20"):
                    t0 = time.perf_counter()
                    with warnings.catch_warnings():
                        warnings.simplefilter("ignore")
                        mech = ps.ShuffledLDP(n, randomizer=rand, reduction=reduction)
                        b = ps.FourierAccountant().compose(mech).get_epsilon_bounds(1e-6)
                    out[reduction] = (b.lower, b.upper, time.perf_counter() - t0)
            except Exception as exc:  # noqa: BLE001
                rows.append(error_row(f"blanket_gain_{name}", "pldshuffle", params, exc))
                continue
            lo, up, seconds = out["blanket"]
            rows.append(make_row(
                f"blanket_gain_{name}", "pldshuffle", params, value=up, lower=lo, upper=up, seconds=seconds,
                notes="blanket pair; extra holds the labelled clone pair and FMT20 brackets",
                extra={"clone_randomizer": out["randomizer"][:2], "fmt20": out["fmt20"][:2],
                       "clone_over_blanket": out["randomizer"][1] / up, "fmt20_over_blanket": out["fmt20"][1] / up},
            ))
            log(f"{name} n={n} ε0={rand.local_epsilon:g}: blanket [{lo:.6g}, {up:.6g}] ({seconds:.1f} s), "
                f"clone {out['randomizer'][1]:.6g} ({out['randomizer'][1] / up:.2f}x), fmt20 {out['fmt20'][1]:.6g}")
    return rows


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--part", choices=("scale", "gain", "all"), default="all")
    parser.add_argument("--only", nargs="*", help="case names (scale: oue_1e6_64_rounds, ...; gain: oue_1024, krr_10, ...)")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    args = parser.parse_args(argv)
    only = set(args.only) if args.only else None
    rows = []
    if args.part in ("scale", "all"):
        rows += _scale_rows(only)
    if args.part in ("gain", "all"):
        rows += _gain_rows(only)
    write_json(args.out, {"machine": machine_info(), "rows": rows})


if __name__ == "__main__":
    main()
