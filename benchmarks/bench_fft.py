"""FFT backends side by side: pyFFTW vs ``scipy.fft`` (pyfftw is an optional extra, ``pldshuffle[fftw]``).

Cases (rows in the common schema of :mod:`benchmarks._common`, ``backend`` set on every row):

``fft_roundtrip``
    One forward ``rfft`` plus one inverse ``irfft`` of a real signal of ``2^p`` points through
    :class:`pldshuffle.pld.fft.FFTBackend` (plans warmed up first), ``p ∈ 16..22`` (quick: 16, 18, 20).
    ``value`` is the round-trip time in seconds; ``extra.max_abs_error`` the round-trip error.
``krr_strong_fft_backend``
    ``ShuffledKRR(1000, 4, gamma=0.25, adversary="strong")``, 64 rounds, ε(δ = 1e-6) with
    ``FourierAccountant(fft_backend=...)``: the whole user call (pair construction, compose, query).

Both backends run in the same process, interleaved repeat by repeat, median of up to 3 repeats; FFT
threads as configured by ``PLDSHUFFLE_FFT_THREADS`` (default 1).  A backend that is not importable
gives ``skipped`` rows.

Usage::

    python -m benchmarks all                    # includes this suite
    python -m benchmarks.bench_fft [--quick] [--out benchmarks/results/fft.json]
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

import numpy as np

from ._common import error_row, log, make_row, skipped_row, time_call, write_json

BACKENDS = ("pyfftw", "scipy")
DEFAULT_OUT = Path(__file__).resolve().parent / "results" / "fft.json"


def _fft_rows(quick: bool) -> list[dict[str, Any]]:
    from pldshuffle.pld.fft import available_backends, get_backend

    rows = []
    powers = (16, 18, 20) if quick else tuple(range(16, 23))
    rng = np.random.default_rng(0)
    for p in powers:
        size = 2**p
        signal = rng.random(size)
        params = {"points": size, "log2_points": p}
        for name in BACKENDS:
            if name not in available_backends():
                rows.append(skipped_row("fft_roundtrip", "pldshuffle", params, f"{name} is not importable"))
                continue
            backend = get_backend(name)

            def roundtrip(backend=backend, signal=signal, size=size):
                return backend.irfft(backend.rfft(signal), size)

            try:
                roundtrip()  # plan / cache warm-up
                timing = time_call(roundtrip, repeats=3)
                error = float(np.max(np.abs(timing.result - signal)))
                rows.append(make_row("fft_roundtrip", "pldshuffle", params, value=timing.seconds, seconds=timing.seconds,
                                     backend=name, extra={**timing.as_extra(), "max_abs_error": error}))
            except Exception as exc:  # noqa: BLE001 - recorded in the row
                rows.append(error_row("fft_roundtrip", "pldshuffle", params, exc))
        log(f"fft 2^{p} done")
    return rows


def _krr_rows(quick: bool) -> list[dict[str, Any]]:
    import pldshuffle as ps
    from pldshuffle.pld.fft import available_backends

    params = {"num_users": 1000, "domain_size": 4, "gamma": 0.25, "adversary": "strong", "rounds": 64, "delta": 1e-6}
    mechanism = ps.ShuffledKRR(1000, 4, gamma=0.25, adversary="strong")
    ps.FourierAccountant(fft_backend="scipy").compose(mechanism, 2).get_epsilon_bounds(1e-6)  # numba warm-up
    rows = []
    for name in BACKENDS:
        if name not in available_backends():
            rows.append(skipped_row("krr_strong_fft_backend", "pldshuffle", params, f"{name} is not importable"))
            continue

        def query(name=name):
            return ps.FourierAccountant(fft_backend=name).compose(mechanism, 64).get_epsilon_bounds(1e-6)

        try:
            timing = time_call(query, repeats=1 if quick else 3)
            b = timing.result
            rows.append(make_row("krr_strong_fft_backend", "pldshuffle", params, value=b.upper, lower=b.lower, upper=b.upper,
                                 seconds=timing.seconds, backend=name, extra=timing.as_extra()))
        except Exception as exc:  # noqa: BLE001 - recorded in the row
            rows.append(error_row("krr_strong_fft_backend", "pldshuffle", params, exc))
    log("krr fft backends done")
    return rows


def run(quick: bool = False) -> dict[str, Any]:
    """Entry point for ``python -m benchmarks all``."""
    rows = _fft_rows(quick) + _krr_rows(quick)
    return {"rows": rows, "comparisons": [], "meta": {"suite": "fft", "quick": quick}}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="sizes 2^16, 2^18, 2^20 and one kRR repeat")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help="JSON output file (default: %(default)s)")
    args = parser.parse_args(argv)
    result = run(args.quick)
    write_json(args.out, result)
    for row in result["rows"]:
        log(json.dumps({k: row.get(k) for k in ("case", "backend", "parameters", "seconds", "status")}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
