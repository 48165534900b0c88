"""Random allocation (balls and bins) for DP-SGD: certified brackets, scale, and the accountings people use.

Cases (rows in the common schema of :mod:`benchmarks._common`):

``allocation_scale``
    ``RandomAllocation(t, noise_multiplier=σ)``, ``E`` epochs, ε(δ = 1e-6): the whole user call (pairs,
    composition, query) with the step cells' cache cleared first.  Target row: t = 1e4, σ = 1, 10 epochs,
    ≤ 10 s with relative gap ≤ 1e-3; t = 1e5 and σ ∈ {0.5, 5} for feasibility.
``allocation_vs_poisson``
    The same runs accounted as Poisson subsampling at rate k/t with dp-accounting's PLD accountant
    (pessimistic estimate, not certified): ``t·E`` compositions of the subsampled Gaussian.
``allocation_decomposition``
    σ = 2, k = 10, t = 100, one epoch (dp-accounting's random-allocation test: ε = 2.4265, a
    decomposition bound); dp-accounting's own ``RandomAllocationDpEvent`` when the installed release has it.
``allocation_epochs`` (not quick)
    ε after E epochs for the figure ``docs/_static/allocation_epochs.png``: allocation (bracket), Poisson
    (dp-accounting) and shuffling without analysis (each example's step known: E Gaussian mechanisms,
    closed form).

Usage::

    python -m benchmarks.bench_allocation [--quick] [--out benchmarks/results/allocation.json] [--figure]
"""

from __future__ import annotations

import argparse
import json
import math
from pathlib import Path
from typing import Any

from ._common import error_row, log, make_row, skipped_row, time_call, write_json

DEFAULT_OUT = Path(__file__).resolve().parent / "results" / "allocation.json"
FIGURE = Path(__file__).resolve().parent.parent / "docs" / "_static" / "allocation_epochs.png"
DELTA = 1e-6


def _certified(t: int, sigma: float, epochs: int, k: int = 1):
    import pldshuffle as ps
    from pldshuffle.mechanisms._allocation_sum import _gaussian_cells

    _gaussian_cells.cache_clear()  # time the whole build, as a fresh process would (numba's cache aside)
    mech = ps.RandomAllocation(t, num_selected=k, noise_multiplier=sigma)
    return ps.FourierAccountant().compose(mech, count=epochs).get_epsilon_bounds(DELTA)


def _poisson(t: int, sigma: float, epochs: int, k: int = 1) -> tuple[float, str]:
    """dp-accounting's pessimistic ε for ``t·epochs`` Poisson-subsampled Gaussian steps at rate ``k/t``, and a
    note on its lattice.

    Its lattice rounding is pessimistic per composition (t·E of them): at Δ = 1e-4 and 1e5 steps ε doubled
    (σ = 5: 0.0433 vs 0.0208 at Δ = 1e-6), so Δ is refined tenfold until ε moves by < 1e-3 (Δ ≥ 1e-7), or
    until one refinement takes over a minute or runs out of memory (then the last value, said in the note:
    pessimistic, so still an upper estimate)."""
    import time

    from dp_accounting.pld import privacy_loss_distribution as pld

    previous, note = math.inf, ""
    for dx in (1e-4, 1e-5, 1e-6, 1e-7):
        start = time.perf_counter()
        try:
            step = pld.from_gaussian_mechanism(sigma, sampling_prob=k / t, value_discretization_interval=dx)
            value = float(step.self_compose(t * epochs).get_epsilon_for_delta(DELTA))
        except MemoryError:
            if math.isinf(previous):
                raise
            return previous, f"not settled: Δ = {dx:g} ran out of memory, value at Δ = {10 * dx:g}"
        note = f"Δ = {dx:g}"
        if abs(previous - value) <= 1e-3 * value:
            return value, note + " (settled within 1e-3)"
        previous = value
        if time.perf_counter() - start > 60.0:
            return value, note + " (not settled: the next refinement would take minutes)"
    return value, note


def _no_analysis(sigma: float, epochs: int) -> float:
    """ε of E Gaussian mechanisms (μ = √E/σ): what a run may claim without analysing the allocation."""
    from scipy.optimize import brentq
    from scipy.stats import norm

    mu = math.sqrt(epochs) / sigma

    def delta(eps: float) -> float:
        return float(norm.cdf(-eps / mu + mu / 2) - math.exp(eps) * norm.cdf(-eps / mu - mu / 2)) - DELTA

    return brentq(delta, 0.0, 200.0)


def _scale_rows(quick: bool) -> list[dict[str, Any]]:
    rows = []
    cases = [(10_000, 1.0, 10)] if quick else [(10_000, 1.0, 10), (10_000, 0.5, 10), (10_000, 5.0, 10),
                                                (100_000, 1.0, 10), (100_000, 0.5, 10), (100_000, 5.0, 10)]
    for t, sigma, epochs in cases:
        params = {"num_steps": t, "noise_multiplier": sigma, "epochs": epochs, "delta": DELTA}
        try:
            timing = time_call(lambda: _certified(t, sigma, epochs), repeats=1)
            b = timing.result
            rows.append(make_row("allocation_scale", "pldshuffle", params, value=b.upper, lower=b.lower, upper=b.upper,
                                 seconds=timing.seconds, extra=timing.as_extra(),
                                 notes="target: t=1e4, σ=1, 10 epochs in <= 10 s at gap <= 1e-3" if (t, sigma) == (10_000, 1.0) else ""))
            log(f"allocation t={t} σ={sigma}: [{b.lower:.6g}, {b.upper:.6g}] in {timing.seconds:.1f} s")
        except Exception as exc:  # noqa: BLE001 - recorded in the row
            rows.append(error_row("allocation_scale", "pldshuffle", params, exc))
        if quick:  # dp-accounting's refined lattice takes minutes at these sizes
            rows.append(skipped_row("allocation_vs_poisson", "dp-accounting", params, "skipped with --quick (minutes)"))
            continue
        try:
            timing = time_call(lambda: _poisson(t, sigma, epochs), repeats=1)
            value, note = timing.result
            rows.append(make_row("allocation_vs_poisson", "dp-accounting", {**params, "sampling_prob": 1 / t}, value=value,
                                 upper=value, seconds=timing.seconds, backend="numpy-fft",
                                 notes=f"Poisson subsampling at rate 1/t, pessimistic estimate (not certified); {note}"))
        except ImportError as exc:
            rows.append(skipped_row("allocation_vs_poisson", "dp-accounting", params, f"dp-accounting not importable: {exc}"))
        except Exception as exc:  # noqa: BLE001
            rows.append(error_row("allocation_vs_poisson", "dp-accounting", params, exc))
    return rows


def _decomposition_rows() -> list[dict[str, Any]]:
    params = {"num_steps": 100, "num_selected": 10, "noise_multiplier": 2.0, "epochs": 1, "delta": DELTA}
    rows = []
    try:
        timing = time_call(lambda: _certified(100, 2.0, 1, k=10), repeats=1)
        b = timing.result
        rows.append(make_row("allocation_decomposition", "pldshuffle", params, value=b.upper, lower=b.lower, upper=b.upper,
                             seconds=timing.seconds, notes="upper: decomposition bound (10 x 1-of-10); lower: max of the outputs. "
                             "dp-accounting's test value (uncertified decomposition): 2.4265"))
    except Exception as exc:  # noqa: BLE001
        rows.append(error_row("allocation_decomposition", "pldshuffle", params, exc))
    try:
        from dp_accounting import dp_event
        from dp_accounting.pld import pld_privacy_accountant

        if not hasattr(dp_event, "RandomAllocationDpEvent"):
            raise ImportError("the installed dp-accounting has no RandomAllocationDpEvent")
        event = dp_event.RandomAllocationDpEvent(event=dp_event.GaussianDpEvent(2.0), num_selected=10, num_steps=100)
        acc = pld_privacy_accountant.PLDAccountant()
        acc.compose(event)
        value = float(acc.get_epsilon(DELTA))
        rows.append(make_row("allocation_decomposition", "dp-accounting", params, value=value, upper=value, backend="numpy-fft"))
    except ImportError as exc:
        rows.append(skipped_row("allocation_decomposition", "dp-accounting", params, str(exc)))
    except Exception as exc:  # noqa: BLE001
        rows.append(error_row("allocation_decomposition", "dp-accounting", params, exc))
    try:
        value, note = _poisson(100, 2.0, 1, k=10)
        rows.append(make_row("allocation_vs_poisson", "dp-accounting", {**params, "sampling_prob": 0.1}, value=value, upper=value,
                             backend="numpy-fft", notes=f"Poisson subsampling at rate k/t = 0.1, pessimistic estimate; {note}"))
    except Exception as exc:  # noqa: BLE001
        rows.append(error_row("allocation_vs_poisson", "dp-accounting", params, exc))
    return rows


def _epoch_rows(t: int = 10_000, sigma: float = 1.0, epochs: tuple[int, ...] = (1, 2, 5, 10, 20)) -> list[dict[str, Any]]:
    import pldshuffle as ps

    rows = []
    mech = ps.RandomAllocation(t, noise_multiplier=sigma)
    acc = ps.FourierAccountant()
    done = 0
    for e in epochs:
        acc.compose(mech, count=e - done)  # the ledger keeps the pairs: only the composition is redone
        done = e
        params = {"num_steps": t, "noise_multiplier": sigma, "epochs": e, "delta": DELTA}
        b = acc.get_epsilon_bounds(DELTA)
        rows.append(make_row("allocation_epochs", "pldshuffle", params, value=b.upper, lower=b.lower, upper=b.upper))
        try:
            p, note = _poisson(t, sigma, e)
            rows.append(make_row("allocation_epochs", "dp-accounting", {**params, "sampling_prob": 1 / t}, value=p, upper=p,
                                 notes=f"Poisson subsampling; {note}"))
        except Exception as exc:  # noqa: BLE001
            rows.append(error_row("allocation_epochs", "dp-accounting", params, exc))
        rows.append(make_row("allocation_epochs", "pldshuffle", {**params, "accounting": "no amplification"},
                             value=_no_analysis(sigma, e), notes="E Gaussian mechanisms, closed form (shuffling without analysis)"))
        log(f"epochs {e}: allocation [{b.lower:.4g}, {b.upper:.4g}]")
    return rows


def figure(rows: list[dict[str, Any]], path: Path = FIGURE) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    alloc = [(r["parameters"]["epochs"], r["lower"], r["upper"]) for r in rows
             if r["system"] == "pldshuffle" and "accounting" not in r["parameters"] and r["status"] == "ok"]
    poisson = [(r["parameters"]["epochs"], r["value"]) for r in rows if r["system"] == "dp-accounting" and r["status"] == "ok"]
    plain = [(r["parameters"]["epochs"], r["value"]) for r in rows if r["parameters"].get("accounting") == "no amplification"]
    fig, ax = plt.subplots(figsize=(6, 4))
    ax.plot([a[0] for a in plain], [a[1] for a in plain], "k:", label="shuffled, no amplification claimed (E Gaussians)")
    ax.plot([a[0] for a in poisson], [a[1] for a in poisson], "C1--", label="Poisson subsampling, rate 1/t (dp-accounting)")
    ax.fill_between([a[0] for a in alloc], [a[1] for a in alloc], [a[2] for a in alloc], color="C0", alpha=0.4)
    ax.plot([a[0] for a in alloc], [a[2] for a in alloc], "C0-", label="random allocation, certified (pldshuffle)")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("epochs E")
    ax.set_ylabel("ε at δ = 1e-6")
    t, sigma = rows[0]["parameters"]["num_steps"], rows[0]["parameters"]["noise_multiplier"]
    ax.set_title(f"DP-SGD, t = {t} steps per epoch, σ = {sigma:g}")
    ax.legend(fontsize=8)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=120)
    plt.close(fig)


def run(quick: bool = False) -> dict[str, Any]:
    """Entry point for ``python -m benchmarks all``."""
    rows = _scale_rows(quick) + _decomposition_rows()
    if not quick:
        rows += _epoch_rows()
    return {"rows": rows, "comparisons": [], "meta": {"suite": "allocation", "quick": quick}}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="the target row and the decomposition row only")
    # (without --figure: the scale and decomposition rows; `python -m benchmarks all` adds the epochs rows)
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help="JSON output file (default: %(default)s)")
    parser.add_argument("--figure", action="store_true", help="only the epochs rows, and draw docs/_static/allocation_epochs.png")
    args = parser.parse_args(argv)
    if args.figure:
        rows = _epoch_rows()
        figure(rows)
        result = {"rows": rows, "comparisons": [], "meta": {"suite": "allocation-epochs"}}
        out = args.out.with_name(args.out.stem + "_epochs.json")
    else:  # the epochs rows take minutes: with --figure only
        rows = _scale_rows(args.quick) + _decomposition_rows()
        result = {"rows": rows, "comparisons": [], "meta": {"suite": "allocation", "quick": args.quick}}
        out = args.out
    write_json(out, result)
    for row in result["rows"]:
        log(json.dumps({k: row.get(k) for k in ("case", "system", "parameters", "lower", "upper", "value", "seconds", "status")}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
