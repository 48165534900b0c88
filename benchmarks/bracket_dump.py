"""Dump certified brackets bit for bit (``float.hex``) to compare two versions of the package.

Evaluates (1) ``count`` ledgers drawn deterministically (hypothesis, derandomized) from the strategy of
``tests/test_ledgers.py`` -- δ brackets at its ε grid and ε brackets at δ = 0.3, 1e-3 -- and (2) the quick
and mixed rows of ``benchmarks/bench_v2.py`` (plus two more of its fast cases), one JSON line each.

Run from the repository root: ``python -W ignore benchmarks/bracket_dump.py quick 30 > before.txt``, change
the code, run again and ``cmp`` the two files (a refactoring must leave them identical).  ~2 minutes.
"""

import json
import sys

sys.path.insert(0, "tests")
sys.path.insert(0, ".")

from hypothesis import HealthCheck, Phase, given, settings  # noqa: E402

import pldshuffle as ps  # noqa: E402
import test_ledgers as tl  # noqa: E402
from benchmarks.bench_v2 import _CASES  # noqa: E402

CASES = ("krr_strong_64_rounds_all_deltas", "krr_strong_64_rounds_one_query", "krr_strong_1024_rounds", "2rr_worst_1e4_64_rounds",
         "mixed_2rr_block_beside_2rr_round", "mixed_2rr_block_beside_krr_round", "mixed_three_2rr_entries", "2rr_worst_300_64_rounds",
         "clones_fmt20_1e6_1_round")
out = []


def h(x):
    return float(x).hex()


def record(tag, acc):
    b = acc.get_delta_bounds(tl.EPS)
    out.append((tag, "delta", [h(v) for v in b.lower], [h(v) for v in b.upper]))
    for d in (0.3, 1e-3):
        e = acc.get_epsilon_bounds(d)
        out.append((tag, "eps", d, h(e.lower), h(e.upper)))


@settings(max_examples=int(sys.argv[2]) if len(sys.argv) > 2 else 25, deadline=None, derandomize=True, database=None,
          phases=[Phase.generate], suppress_health_check=list(HealthCheck))
@given(ledger=tl._LEDGERS)
def gen(ledger):
    tag = repr([(repr(m), c, s) for m, c, s, _ in ledger])
    record(tag, tl._accountant(ledger))


gen()
for case, setup, deltas, params in _CASES:
    if case in CASES:
        ns = {"ps": ps}
        exec(setup, ns)
        acc = ns["acc"]
        acc.get_epsilon_bounds(0.5)
        for d in deltas:
            b = acc.get_epsilon_bounds(d)
            out.append((case, d, h(b.lower), h(b.upper)))
        print(case, flush=True)
for line in out:
    print(json.dumps(line))
