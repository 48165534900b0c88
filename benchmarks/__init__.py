"""pldshuffle benchmarks: ``python -m benchmarks <suite> [--quick] [--out PATH]`` (run from the repository root).

Suites
------
``core``
    :mod:`benchmarks.core`: shuffled kRR (strong adversary) and 2RR with pldshuffle, side by side with
    dp-accounting on the same explicit pairs in the same process; 2RR scaling in n and in rounds on both
    FFT backends.
``all``
    ``core`` plus every optional suite module listed in :data:`OPTIONAL_SUITES` that is present.  An
    optional suite module exposes ``run(quick: bool) -> dict`` returning ``{"rows": [...],
    "comparisons": [...], "meta": {...}}`` (or just the list of rows), each row following the schema of
    :mod:`benchmarks._common`.

Output: JSON (default ``benchmarks/results/<suite>.json``) plus a Markdown summary with the same stem.
"""

SUITES = ("core", "all")
#: Optional suite modules run by ``all`` when importable (written separately).
OPTIONAL_SUITES = ("benchmarks.bench_clones", "benchmarks.bench_fft", "benchmarks.bench_v2", "benchmarks.bench_blanket",
                   "benchmarks.bench_allocation")
