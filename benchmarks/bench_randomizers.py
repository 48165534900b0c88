"""Benchmark of the randomizer-specific clone reduction (``ShuffledLDP(n, randomizer=..., reduction="randomizer")``), δ = 1e-6.

(The default with a randomizer is now the blanket pair: ``benchmarks/bench_blanket.py``.)

Two parts, each case in this process after a warm-up (numba kernels are cached on disk):

* ``speed``: n = 1e6, ε0 ∈ {1, 2, 4}, rounds ∈ {1, 64}, for k-ary RR (d = 10, FMT23 constants) and
  OUE (d = 1024, FMT20 constants): wall time of ``compose(...).get_epsilon_bounds(1e-6)`` including
  building the pairs, and the certified bracket.
* ``wang24``: the variation-ratio pairs (reproduction only, NOT guarantees) next to the values of the
  authors' code (Wang et al., PVLDB 2024; ``amplificationUB/LB``, T = 20), which took 1-17 s per UB+LB
  evaluation at n <= 1e5 on our machine and report 15 s at n = 1e8.

Usage::

    python -m benchmarks.bench_randomizers [--out benchmarks/results/randomizers.json]
"""

from __future__ import annotations

import argparse
import json
import platform
import time
import warnings
from pathlib import Path

DEFAULT_OUT = Path(__file__).resolve().parent / "results" / "randomizers.json"
#: (d, ε0, n) -> authors' code [LB, UB] at δ = 1e-6 (k-ary RR row of their table; "general" = FMT23 pair).
AUTHORS = {
    ("general", 4.0, 10_000): (0.410809, 0.410816),
    ("general", 1.0, 1_000): (0.148670, 0.148671),
    (10, 1.0, 1_000): (0.080094, 0.080095),
    (10, 4.0, 10_000): (0.380451, 0.380459),
    (10, 2.0, 100_000): (0.023111, 0.023115),
}


def _timed(mech, rounds: int) -> dict:
    import pldshuffle as ps

    t0 = time.perf_counter()
    b = ps.FourierAccountant().compose(mech, rounds).get_epsilon_bounds(1e-6)
    return {"time_s": time.perf_counter() - t0, "eps_lower": b.lower, "eps_upper": b.upper, "is_guarantee": b.is_guarantee}


def run() -> dict:
    import pldshuffle as ps
    from pldshuffle.randomizers import OUE, KaryRR

    _timed(ps.ShuffledLDP(300, 1.0), 2)  # warm-up: kernels and FFT code
    speed = []
    for eps0 in (1.0, 2.0, 4.0):
        for rand in (KaryRR(10, eps0), OUE(1024, eps0)):
            mech = ps.ShuffledLDP(10**6, randomizer=rand, reduction="randomizer")
            for rounds in (1, 64):
                row = {"randomizer": rand.describe(), "n": 10**6, "eps0": eps0, "rounds": rounds,
                       "support_points": mech.support_size()}
                row.update(_timed(mech, rounds))
                speed.append(row)
    wang = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        for (d, eps0, n), (lb, ub) in AUTHORS.items():
            mech = (ps.ShuffledLDP(n, eps0, "fmt23") if d == "general"
                    else ps.ShuffledLDP(n, randomizer=KaryRR(d, eps0), reduction="wang24"))
            row = {"row": f"{d}-RR" if d != "general" else "general (FMT23 pair)", "n": n, "eps0": eps0,
                   "authors_lower": lb, "authors_upper": ub}
            row.update(_timed(mech, 1))
            wang.append(row)
    return {"machine": platform.platform(), "processor": platform.processor(), "speed": speed, "wang24": wang}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    args = parser.parse_args()
    result = run()
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2), encoding="utf-8")
    for row in result["speed"]:
        print(f"{row['randomizer']:42s} rounds={row['rounds']:3d}  {row['time_s']:6.2f} s  "
              f"ε ∈ [{row['eps_lower']:.6f}, {row['eps_upper']:.6f}]")
    for row in result["wang24"]:
        print(f"{row['row']:22s} n={row['n']:>7d} ε0={row['eps0']:g}: ours [{row['eps_lower']:.6f}, {row['eps_upper']:.6f}] "
              f"authors [{row['authors_lower']:.6f}, {row['authors_upper']:.6f}]  {row['time_s']:.2f} s")


if __name__ == "__main__":
    main()
