"""Laplace randomizer, one round, δ = 1e-6: the blanket pair's certified ε bracket and build time against the
labelled clone pair ("randomizer") and FMT20.  Usage: python benchmarks/bench_laplace.py N,EPS0 ...
(prints one JSON row per case)."""

from __future__ import annotations

import json
import sys
import time
import warnings

import pldshuffle as ps


def row(n: int, eps0: float, delta: float = 1e-6) -> dict:
    R = ps.randomizers.Laplace(eps0)
    out: dict = {"n": n, "local_epsilon": eps0, "delta": delta}
    for reduction in ("blanket", "randomizer", "fmt20"):
        start = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            b = ps.FourierAccountant().compose(ps.ShuffledLDP(n, randomizer=R, reduction=reduction)).get_epsilon_bounds(delta)
        out[reduction] = {"lower": b.lower, "upper": b.upper, "seconds": round(time.perf_counter() - start, 2)}
    out["fmt20_over_blanket"] = out["fmt20"]["upper"] / out["blanket"]["upper"]
    out["blanket_relative_gap"] = (out["blanket"]["upper"] - out["blanket"]["lower"]) / out["blanket"]["upper"]
    return out


if __name__ == "__main__":
    for case in sys.argv[1:]:
        n, eps0 = case.split(",")
        print(json.dumps(row(int(n), float(eps0))), flush=True)
