"""The blanket pair (``ShuffledLDP(n, randomizer=R)``, the default reduction) against its peers: scale and gain.

Three parts, JSON rows of :mod:`benchmarks._common`:

* ``gain``: one round, for the named randomizers (OUE d = 32 and 1024, OLH d = 1024, Hadamard response
  d = 10 and 1000, symmetric RAPPOR d = 32, k-ary RR d = 10 and 100, subset selection d = 32) at
  n ∈ {1e3, 1e4, 1e5} and ε0 ∈ {0.1, 1, 2, 4}: the certified ε bracket at δ = 1e-6 and δ = 1e-9 of

  - the blanket pair (``reduction="blanket"``; the row's ``lower``/``upper``),
  - the labelled clone pair of the randomizer (``reduction="randomizer"``) and FMT20's clone pair
    (``reduction="fmt20"``), both certified brackets (``extra``),
  - the analytic bounds of :mod:`pldshuffle.bounds` that apply to the randomizer (``extra["analytic"]``):
    FMT20's closed form (any ε0-LDP randomizer), BBGN19's blanket bounds with Hoeffding and Bennett
    (generic ε0-LDP form; the k-ary RR form for k-ary RR), GDDKS21's RDP bound converted to DP;

  with the times of each reduction (build + compose + first query).  Blanket pairs evaluated by the
  ``grouped`` enumeration (Hadamard response, subset selection, and OUE d = 32 at ε0 = 0.1 from n = 1e4,
  whose hit laws are not close enough to a product) cost ~n^{3/2}: their rows are computed only where the
  pair's own estimate of its build time is under ``--max-seconds`` (30 s) and are recorded as skipped
  (with the estimate) elsewhere.
* ``rounds``: the same comparison after 64 composed rounds for a few rows (analytic bounds composed:
  FMT20 per round with the exact Kairouz-Oh-Viswanath composition, GDDKS21 composed in RDP).
* ``scale``: OUE (d = 1024, ε0 = 1) at n = 1e6 for 64 rounds, δ = 1e-8 (target ≤ 10 s, ≤ 1 GiB), the same
  with participation q = 0.5 (target ≤ 10 s), one round at n = 1e7 (target ≤ 10 s) and at n = 1e8 (feasible).  Each case in a fresh Python process (warm numba
  cache), so that its time (import + build + query) and its peak resident memory (``ru_maxrss``) are its own.

``gain`` and ``rounds`` run in this process after a warm-up (numba kernels are cached on disk).  ``--quick``
(under a minute on 2 cores): OUE d = 32 and k-ary RR d = 10 at n ∈ {1e3, 1e4}, ε0 ∈ {1, 4}, one 64-round
row, no scale rows.

Run: ``python -m benchmarks.bench_blanket [--quick] [--part gain|rounds|scale|all] [--only NAME ...]
[--out PATH]`` (default ``benchmarks/results/blanket.json``; ``--quick``: ``blanket-quick.json``), or as
part of ``python -m benchmarks all``; ``--table JSON`` prints the ratio tables of docs/randomizers.md.  The figure ``docs/_static/blanket_vs_clones.png`` is drawn from the
JSON by ``python -m benchmarks.figures --only blanket_vs_clones``.
"""

from __future__ import annotations

import argparse
import json
import math
import subprocess
import sys
import time
import warnings
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

from ._common import error_row, log, machine_info, make_row, skipped_row, write_json

RESULTS = Path(__file__).resolve().parent / "results"
DEFAULT_OUT = RESULTS / "blanket.json"
DELTAS = (1e-6, 1e-9)
REDUCTIONS = ("blanket", "randomizer", "fmt20")
#: Blanket pairs whose own build-time estimate exceeds this are skipped (the default reduction falls back
#: to the labelled clone pair above the same 30 s).
MAX_BLANKET_SECONDS = 30.0
ROUNDS = 64

_CHILD = """
import json, resource, time
t0 = time.perf_counter()
import pldshuffle as ps
acc = ps.FourierAccountant().compose(ps.ShuffledLDP({n}, randomizer=ps.randomizers.OUE(1024, 1.0), participation={q}), {rounds})
b = acc.get_epsilon_bounds({delta})
print(json.dumps({{"total": time.perf_counter() - t0, "lower": b.lower, "upper": b.upper,
                  "rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}}))
"""

#: (name, n, rounds, δ, target seconds, participation)
SCALE = [
    ("oue_1e6_64_rounds", 10**6, 64, 1e-8, 10.0, 1.0),
    ("oue_1e7_one_round", 10**7, 1, 1e-8, 10.0, 1.0),
    ("oue_1e8_one_round", 10**8, 1, 1e-8, None, 1.0),
    ("oue_1e6_64_rounds_participation_0.5", 10**6, 64, 1e-8, 10.0, 0.5),
]


def _scale_rows(only: set[str] | None) -> list[dict[str, Any]]:
    rows = []
    for name, n, rounds, delta, target, q in SCALE:
        if only and name not in only:
            continue
        params = {"randomizer": "OUE(1024, 1.0)", "n": n, "rounds": rounds, "delta": delta, "participation": q, "target_seconds": target,
                  "target_memory_mb": 1024 if target else None}
        try:
            code = _CHILD.format(n=n, rounds=rounds, delta=delta, q=q)
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


# ---------------------------------------------------------------------------------------------- randomizers
def _subset_size(domain_size: int, eps0: float) -> int:
    """Wang et al.'s (2016) choice of the subset size, ``k ≈ d / (e^{ε0} + 1)``, at least 1."""
    return max(1, round(domain_size / (math.exp(eps0) + 1.0)))


def randomizer_factories() -> dict[str, Callable[[float], Any]]:
    """Case name -> ``ε0 -> randomizer`` (the names are the ``case`` suffixes and the figure's labels' keys)."""
    from pldshuffle.randomizers import OLH, OUE, RAPPOR, HadamardResponse, KaryRR, SubsetSelection

    return {
        "oue_32": partial(OUE, 32),
        "oue_1024": partial(OUE, 1024),
        "olh_1024": partial(OLH, 1024),
        "hadamard_10": partial(HadamardResponse, 10),
        "hadamard_1000": partial(HadamardResponse, 1000),
        "rappor_32": partial(RAPPOR, 32),
        "krr_10": partial(KaryRR, 10),
        "krr_100": partial(KaryRR, 100),
        "subset_32": lambda eps0: SubsetSelection(32, _subset_size(32, eps0), eps0),
    }


#: Short labels for tables and the figure.
LABELS = {
    "oue_32": "OUE, d = 32",
    "oue_1024": "OUE, d = 1024",
    "olh_1024": "OLH, d = 1024",
    "hadamard_10": "Hadamard response, d = 10",
    "hadamard_1000": "Hadamard response, d = 1000",
    "rappor_32": "symmetric RAPPOR, d = 32",
    "krr_10": "k-ary RR, d = 10",
    "krr_100": "k-ary RR, d = 100",
    "subset_32": "subset selection, d = 32",
}

FULL_GAIN = {"names": tuple(LABELS), "n": (10**3, 10**4, 10**5), "eps0": (0.1, 1.0, 2.0, 4.0)}
QUICK_GAIN = {"names": ("oue_32", "krr_10"), "n": (10**3, 10**4), "eps0": (1.0, 4.0)}
#: (name, n, ε0) of the composed rows.
FULL_ROUNDS = [(name, n, eps0) for name in ("oue_1024", "rappor_32", "krr_100") for n in (10**3, 10**4, 10**5) for eps0 in (0.1, 1.0)]
QUICK_ROUNDS = [("oue_32", 10**3, 1.0)]


# ---------------------------------------------------------------------------------------------- analytic bounds
def analytic_bounds(name: str, rand: Any, n: int, delta: float, rounds: int = 1) -> dict[str, float]:
    """The closed-form/analytic upper bounds of :mod:`pldshuffle.bounds` that apply to ``rand``.

    NaN where a bound is outside its validity range (FMT20's closed form needs n large enough for ε0 and δ);
    the BBGN19 bounds return ε0 itself where they certify no amplification.
    One round: FMT20's closed form (Feldman-McMillan-Talwar, FOCS 2021; any ε0-LDP randomizer), BBGN19 blanket
    bounds (Balle-Bell-Gascón-Nissim, CRYPTO 2019) with Hoeffding and Bennett, generic ε0-LDP form or the
    k-ary RR form, and GDDKS21 (Girgis et al., CCS 2021) RDP → DP.  ``rounds > 1``: FMT20 per round composed
    with the exact Kairouz-Oh-Viswanath bound, GDDKS21 composed in RDP (the BBGN19 bounds are per round).
    """
    from pldshuffle import bounds

    eps0 = float(rand.local_epsilon)
    out: dict[str, float] = {}

    def safe(key: str, fn: Callable[[], float]) -> None:
        try:
            out[key] = float(fn())
        except (ValueError, ArithmeticError) as exc:  # a bound outside its validity range gives no number
            log(f"  {key} n={n} ε0={eps0:g} δ={delta:g}: {exc}")
            out[key] = math.nan

    setting = {"num_users": n, "local_epsilon": eps0}
    if rounds == 1:
        safe("fmt20_closed_form", lambda: bounds.fmt20_epsilon(**setting, target_delta=delta))
        blanket_kind = {"randomizer": "krr", "domain_size": rand.domain_size} if name.startswith("krr") else {"randomizer": "generic"}
        safe("bbgn19_hoeffding", lambda: bounds.bbgn19_hoeffding_epsilon(**setting, target_delta=delta, **blanket_kind))
        safe("bbgn19_bennett", lambda: bounds.bbgn19_bennett_epsilon(**setting, target_delta=delta, **blanket_kind))
    else:
        per_round = partial(bounds.fmt20_epsilon, **setting)
        safe("fmt20_closed_form_kov", lambda: bounds.compose_epsilon(per_round, rounds=rounds, target_delta=delta, method="kov_exact"))
    safe("gddks21_rdp", lambda: bounds.gddks21_dp_epsilon(**setting, target_delta=delta, rounds=rounds))
    return out


# ---------------------------------------------------------------------------------------------- certified
def _certified(rand: Any, n: int, reduction: str, rounds: int) -> dict[str, Any]:
    """Brackets of one reduction at every δ of :data:`DELTAS`; seconds = build + compose + first query."""
    import pldshuffle as ps

    t0 = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        mech = ps.ShuffledLDP(n, randomizer=rand, reduction=reduction)
        acc = ps.FourierAccountant().compose(mech, rounds)
        first = acc.get_epsilon_bounds(DELTAS[0])
        seconds = time.perf_counter() - t0
        brackets = {DELTAS[0]: (first.lower, first.upper)}
        for delta in DELTAS[1:]:
            b = acc.get_epsilon_bounds(delta)
            brackets[delta] = (b.lower, b.upper)
    return {"brackets": brackets, "seconds": seconds, "reduction": mech.reduction}


def _comparison_rows(name: str, rand: Any, n: int, rounds: int, max_seconds: float) -> list[dict[str, Any]]:
    """One row per δ: the blanket bracket, the clone brackets, the analytic bounds and the ratios."""
    import pldshuffle as ps

    part = "gain" if rounds == 1 else "rounds"
    case = f"blanket_{part}_{name}"
    eps0 = float(rand.local_epsilon)
    base = {"name": name, "randomizer": rand.describe(), "n": n, "eps0": eps0, "rounds": rounds}
    pair = ps.BlanketPair(n, rand)
    estimate = pair.build_seconds()
    if estimate > max_seconds:
        return [skipped_row(case, "pldshuffle", {**base, "delta": d},
                            f"blanket pair's estimated build time {estimate:.3g} s > {max_seconds:g} s ({'/'.join(pair.methods)} evaluation)")
                for d in DELTAS]
    try:
        runs = {red: _certified(rand, n, red, rounds) for red in REDUCTIONS}
    except Exception as exc:  # noqa: BLE001 - a benchmark row records the failure
        return [error_row(case, "pldshuffle", {**base, "delta": d}, exc) for d in DELTAS]
    rows = []
    for delta in DELTAS:
        lo, up = runs["blanket"]["brackets"][delta]
        clone, fmt20 = runs["randomizer"]["brackets"][delta], runs["fmt20"]["brackets"][delta]
        analytic = analytic_bounds(name, rand, n, delta, rounds)
        rows.append(make_row(
            case, "pldshuffle", {**base, "delta": delta}, value=up, lower=lo, upper=up,
            seconds=runs["blanket"]["seconds"],
            notes="blanket pair; extra: labelled clone pair, FMT20 clone pair (certified brackets), analytic upper bounds",
            extra={
                "blanket_estimated_seconds": estimate,
                "clone_randomizer": list(clone), "clone_randomizer_seconds": runs["randomizer"]["seconds"],
                "fmt20": list(fmt20), "fmt20_seconds": runs["fmt20"]["seconds"],
                "analytic": analytic,
                "clone_over_blanket": clone[1] / up, "fmt20_over_blanket": fmt20[1] / up,
                "analytic_over_blanket": {k: v / up for k, v in analytic.items()},
                "seconds_note": "build + compose + query at δ = 1e-6; the δ = 1e-9 query reuses the accountant",
            },
        ))
    r = rows[0]["extra"]
    lo, up = rows[0]["lower"], rows[0]["upper"]
    log(f"{name} n={n} ε0={eps0:g} rounds={rounds} δ={DELTAS[0]:g}: blanket [{lo:.6g}, {up:.6g}] ({runs['blanket']['seconds']:.1f} s), "
        f"clone ×{r['clone_over_blanket']:.2f} ({runs['randomizer']['seconds']:.1f} s), fmt20 ×{r['fmt20_over_blanket']:.2f}")
    return rows


def _warm_up() -> None:
    import pldshuffle as ps
    from pldshuffle.randomizers import OUE, HadamardResponse, KaryRR

    for rand in (OUE(8, 1.0), KaryRR(4, 1.0), HadamardResponse(4, 1.0)):
        for reduction in REDUCTIONS:
            _certified(rand, 200, reduction, 2)
    ps.FourierAccountant().compose(ps.ShuffledLDP(200, 1.0), 2).get_epsilon_bounds(1e-6)


def run(quick: bool = False, *, parts: tuple[str, ...] = ("gain", "rounds", "scale"), only: tuple[str, ...] = (),
        max_seconds: float = MAX_BLANKET_SECONDS) -> dict[str, Any]:
    """Entry point of ``python -m benchmarks all``: ``{"rows", "comparisons", "meta"}``."""
    selected = set(only) or None
    factories = randomizer_factories()
    rows: list[dict[str, Any]] = []
    if {"gain", "rounds"} & set(parts):
        _warm_up()
    if "gain" in parts:
        grid = QUICK_GAIN if quick else FULL_GAIN
        for eps0 in grid["eps0"]:
            for name in grid["names"]:
                if selected and name not in selected:
                    continue
                for n in grid["n"]:
                    rows += _comparison_rows(name, factories[name](eps0), n, 1, max_seconds)
    if "rounds" in parts:
        for name, n, eps0 in QUICK_ROUNDS if quick else FULL_ROUNDS:
            if selected and name not in selected:
                continue
            rows += _comparison_rows(name, factories[name](eps0), n, ROUNDS, max_seconds)
    if "scale" in parts and not quick:
        rows += _scale_rows(selected)
    return {"rows": rows, "comparisons": [], "meta": {"suite": "blanket", "quick": quick, "parts": list(parts), "only": list(only)}}


# ---------------------------------------------------------------------------------------------- tables
_SUPERSCRIPT = str.maketrans("0123456789", "⁰¹²³⁴⁵⁶⁷⁸⁹")


def _power(n: int) -> str:
    k = round(math.log10(n))
    return f"10{str(k).translate(_SUPERSCRIPT)}" if 10**k == n else f"{n:,}"


def ratio_table(payload: dict[str, Any], *, part: str = "gain") -> str:
    """Markdown table of ``clone / blanket`` ratios (δ = 1e-6 · δ = 1e-9) and the blanket ε at δ = 1e-6.

    One line per randomizer and n, one column per ε0; skipped rows show why in a footnote mark.
    """
    cells: dict[tuple[str, int], dict[float, str]] = {}
    eps0s: set[float] = set()
    rows = [r for r in payload["rows"] if r["case"].startswith(f"blanket_{part}_")]
    for r in rows:
        p = r["parameters"]
        if p["delta"] != DELTAS[0]:
            continue
        eps0s.add(p["eps0"])
        key = (p["name"], p["n"])
        if r["status"] != "ok":
            cells.setdefault(key, {})[p["eps0"]] = "skipped†" if r["status"] == "skipped" else "error"
            continue
        other = next((o for o in rows if o["status"] == "ok" and o["parameters"] == {**p, "delta": DELTAS[1]}), None)
        r9 = f" · {other['extra']['clone_over_blanket']:.2f}×" if other else ""
        cells.setdefault(key, {})[p["eps0"]] = f"{r['extra']['clone_over_blanket']:.2f}×{r9} ({r['upper']:.3g})"
    columns = sorted(eps0s)
    lines = ["| randomizer | n | " + " | ".join(f"ε0 = {e:g}" for e in columns) + " |", "|---|---|" + "---|" * len(columns)]
    order = list(LABELS)
    last = None
    for name, n in sorted(cells, key=lambda k: (order.index(k[0]), k[1])):
        label = LABELS[name] if name != last else "〃"
        last = name
        lines.append(f"| {label} | {_power(n)} | " + " | ".join(cells[name, n].get(e, "–") for e in columns) + " |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="OUE d=32 and k-ary RR d=10, n <= 1e4, ε0 in {1, 4}, one 64-round row, no scale rows (< 1 min)")
    parser.add_argument("--part", choices=("gain", "rounds", "scale", "all"), default="all")
    parser.add_argument("--only", nargs="*", default=[], help="case names (gain/rounds: oue_1024, krr_10, ...; scale: oue_1e6_64_rounds, ...)")
    parser.add_argument("--max-seconds", type=float, default=MAX_BLANKET_SECONDS, help="skip blanket pairs estimated slower than this")
    parser.add_argument("--out", type=Path, default=None)
    parser.add_argument("--table", type=Path, default=None, metavar="JSON",
                        help="print the Markdown ratio tables (one round and 64 rounds) of a results file and exit")
    args = parser.parse_args(argv)
    if args.table is not None:
        payload = json.loads(args.table.read_text(encoding="utf-8"))
        print(ratio_table(payload, part="gain") + "\n\n" + ratio_table(payload, part="rounds"))
        return
    parts = ("gain", "rounds", "scale") if args.part == "all" else (args.part,)
    out = args.out or RESULTS / ("blanket-quick.json" if args.quick else "blanket.json")
    machine = machine_info()
    t0 = time.perf_counter()
    result = run(args.quick, parts=parts, only=tuple(args.only), max_seconds=args.max_seconds)
    command = " ".join(["python", "-m", "benchmarks.bench_blanket", *(argv if argv is not None else sys.argv[1:])])
    write_json(out, {"suite": "blanket", "quick": args.quick, "command": command, "wall_seconds": time.perf_counter() - t0,
                     "machine": machine, "rows": result["rows"], "meta": result["meta"]})
    log(f"wrote {out} ({len(result['rows'])} rows, {time.perf_counter() - t0:.0f} s)")


if __name__ == "__main__":
    main()
