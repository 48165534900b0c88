"""Brackets of several same-data blocks of 2RR (ε0 = 1): relative gaps and time per ledger.

Run from the repository root: ``python -W ignore benchmarks/blocks_gap.py`` (~30 s).  Each row: n, blocks × rounds,
seconds for the three queries, and ε brackets at δ = 0.3, 1e-3, 1e-6 with their relative gaps.
"""

import sys
import time

sys.path.insert(0, ".")

import pldshuffle as ps  # noqa: E402

for n in (3, 20):
    for k, q in ((2, 2), (2, 3), (4, 2), (3, 3)):
        m = ps.ShuffledBinaryRR(n, 1.0)
        began = time.time()
        acc = ps.FourierAccountant()
        for _ in range(q):
            acc.compose(m, k, same_data=True)
        row = []
        for d in (0.3, 1e-3, 1e-6):
            b = acc.get_epsilon_bounds(d)
            row.append(f"d={d:g}: [{b.lower:.6f}, {b.upper:.6f}] gap={(b.upper - b.lower) / max(b.upper, 1e-300):.2e}")
        print(f"n={n} blocks={q}x{k}: {time.time() - began:.1f}s", "; ".join(row), flush=True)
