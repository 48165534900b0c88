"""Core suite: the accountant on shuffled kRR and 2RR, side by side with dp-accounting in the same run.

Sections (case names in the JSON):

``krr_strong_side_by_side``
    ``ShuffledKRR(1000, 4, gamma=0.25, adversary="strong")`` at 1 / 64 / 1024 rounds, δ = 1e-6, with the
    accountant's defaults, against dp-accounting on the same pair (the 2-D (n1, n2) pair with the atom of
    mass γ at loss 0, docs/mathematics.md#pairs) built from explicit log-pmf dicts, ``symmetric=False``, pessimistic
    and optimistic, at dx ∈ {1e-3, 1e-4} (plus, in the full suite, the dx at which dp-accounting's
    pessimistic/optimistic gap first drops to ours).
``krr_1d_khh21_side_by_side``, ``2rr_n1000_side_by_side``
    The two pairs of KHH21's comparison (KHH21 eq. (5.1) and the 2RR pair at p = 1/8), same protocol, with
    the published dp-accounting numbers attached for comparison.
``2rr_vs_n``
    ``ShuffledBinaryRR(n, 1.0, dataset=...)`` for n ∈ {1e4, 1e5, 1e6}, both datasets, 1 and 64 rounds.
``2rr_vs_rounds``
    ``ShuffledBinaryRR(10**4, 1.0, dataset="khh21")`` for 1 … 10^4 rounds on both FFT backends.

Timing: every system runs on the same machine in the same process, interleaved repeat by repeat
(pldshuffle, then each dp-accounting configuration), median of up to 3 repeats (1 when a run takes more
than 5 s).  pldshuffle's time is the whole user call: mechanism construction, ``compose`` and
``get_epsilon_bounds``.  dp-accounting's time is ``from_two_probability_mass_functions`` ("build",
reported separately) plus ``self_compose`` and ``get_epsilon_for_delta`` ("compose+query"); the time to
create the log-pmf dicts from NumPy arrays is recorded too but not charged to dp-accounting.
"""

from __future__ import annotations

import math
import statistics
import time
from collections.abc import Callable, Sequence
from typing import Any

from ._common import (
    error_row,
    log,
    make_row,
    optional_import,
    peak_memory,
    skipped_row,
    time_call,
    time_once,
)

DELTA = 1e-6
KRR = {"num_users": 1000, "domain_size": 4, "gamma": 0.25}
RR_N1000 = {"num_users": 1000, "flip_probability": 1.0 / 8.0}  # ε0 = ln 7, equivalent to γ = 0.25 for k = 2
MEMORY_MAX_SECONDS = 30.0  # a separate traced run is made only for cases faster than this
REPEAT_BUDGET_SECONDS = 20.0  # side-by-side: more repeats only while one interleaved pass costs less

#: Published reference values, δ = 1e-6: exact single-round value and dp-accounting dx=1e-4 (pessimistic, optimistic).
ANCHORS_2B = {
    "krr_1d_khh21_side_by_side": {1: (0.64809, 0.64815, 0.64805), 64: (None, 5.3115, 5.3051), 1024: (None, 28.444, 28.342)},
    "2rr_n1000_side_by_side": {1: (0.30974, 0.30976, 0.30966), 64: (None, 2.6705, 2.6641), 1024: (None, 13.144, 13.042)},
}


# ------------------------------------------------------------------------------------------ systems
def _dp_accounting_run(pmfs: tuple[dict, dict], dx: float, rounds: int, pessimistic: bool) -> dict[str, float]:
    """One dp-accounting evaluation exactly as a user writes it (as in KHH21's comparison)."""
    from dp_accounting.pld import privacy_loss_distribution as pld_lib

    log_p, log_q = pmfs
    t0 = time.perf_counter()
    pld = pld_lib.from_two_probability_mass_functions(
        log_probability_mass_function_lower=log_q,
        log_probability_mass_function_upper=log_p,
        pessimistic_estimate=pessimistic,
        value_discretization_interval=dx,
        symmetric=False,
    )
    t1 = time.perf_counter()
    composed = pld.self_compose(rounds) if rounds > 1 else pld
    eps = float(composed.get_epsilon_for_delta(DELTA))
    t2 = time.perf_counter()
    return {"epsilon": eps, "build": t1 - t0, "compose_query": t2 - t1, "total": t2 - t0}


def _pldshuffle_run(make_mechanism: Callable[[], Any], rounds: int, fft_backend: str = "auto"):
    import pldshuffle as ps

    acc = ps.FourierAccountant(fft_backend=fft_backend)
    acc.compose(make_mechanism(), rounds)
    return acc.get_epsilon_bounds(DELTA)


def _backend_label(bounds) -> str:
    return bounds.diagnostics.get("fft_backend") or "none (exact single round, no grid)"


def _diagnostics(bounds) -> dict[str, Any]:
    keep = ("method", "value_discretization_interval", "grid_size", "fft_backend", "wrap_around_upper",
            "wrap_around_lower", "fft_rounding_error", "upper_infinity_mass", "lower_pairs_composed")
    return {k: bounds.diagnostics[k] for k in keep if k in bounds.diagnostics}


def _ours_row(case: str, params: dict, bounds, walls: list[float], cpus: list[float], memory: tuple | None, notes: str = "") -> dict:
    peak, rss = (memory or (None, None))
    caveats = list(getattr(bounds, "caveats", ()))
    note_parts = [notes] if notes else []
    if not getattr(bounds, "is_guarantee", True):
        note_parts.append("not a guarantee (pair analysed is a lower bound / unproven)")
    return make_row(
        case,
        "pldshuffle",
        params,
        value=bounds.upper,
        lower=bounds.lower,
        upper=bounds.upper,
        relative_gap_value=bounds.relative_gap,
        seconds=statistics.median(walls),
        peak_memory_mb=peak,
        backend=_backend_label(bounds),
        notes="; ".join(note_parts),
        extra={
            "repeats": len(walls),
            "wall_seconds_each": [round(w, 6) for w in walls],
            "cpu_seconds_median": round(statistics.median(cpus), 6),
            "maxrss_increase_mb": rss,
            "diagnostics": _diagnostics(bounds),
            "is_guarantee": getattr(bounds, "is_guarantee", True),
            "caveats": caveats,
        },
    )


# ------------------------------------------------------------------------------------ side by side
def _side_by_side(
    case: str,
    base_params: dict,
    make_mechanism: Callable[[], Any] | None,
    skip_reason: str | None,
    pmfs: tuple[dict, dict] | None,
    pmf_seconds: float | None,
    rounds_list: Sequence[int],
    dxs: Sequence[float],
    *,
    matched: bool,
    max_repeats: int,
) -> tuple[list[dict], list[dict]]:
    rows: list[dict] = []
    comparisons: list[dict] = []
    anchors = ANCHORS_2B.get(case, {})
    for rounds in rounds_list:
        params = {**base_params, "rounds": rounds, "delta": DELTA}
        log(f"{case}: rounds={rounds}")
        ours_fn = (lambda r=rounds: _pldshuffle_run(make_mechanism, r)) if make_mechanism else None
        dp_keys = [(dx, pess) for dx in dxs for pess in (True, False)] if pmfs else []
        ours_walls: list[float] = []
        ours_cpus: list[float] = []
        ours_bounds = None
        ours_error: BaseException | None = None
        dp_runs: dict[tuple[float, bool], list[dict]] = {k: [] for k in dp_keys}
        dp_errors: dict[float, BaseException] = {}
        for rep in range(max_repeats):
            start = time.perf_counter()
            if ours_fn is not None and ours_error is None:
                try:
                    ours_bounds, wall, cpu = time_once(ours_fn)
                    ours_walls.append(wall)
                    ours_cpus.append(cpu)
                except Exception as exc:  # noqa: BLE001 - recorded as an error row
                    ours_error = exc
            for key in dp_keys:
                if key[0] in dp_errors:
                    continue
                try:
                    run, _, cpu = time_once(lambda k=key: _dp_accounting_run(pmfs, k[0], rounds, k[1]))
                    run["cpu"] = cpu
                    dp_runs[key].append(run)
                except Exception as exc:  # noqa: BLE001
                    dp_errors[key[0]] = exc
            if time.perf_counter() - start > REPEAT_BUDGET_SECONDS:
                break

        # pldshuffle row
        if ours_fn is None:
            rows.append(skipped_row(case, "pldshuffle", params, skip_reason or "mechanism not available"))
        elif ours_error is not None:
            rows.append(error_row(case, "pldshuffle", params, ours_error))
        else:
            memory = None
            if statistics.median(ours_walls) < MEMORY_MAX_SECONDS:
                _, peak, rss = peak_memory(ours_fn)
                memory = (peak, rss)
            anchor = anchors.get(rounds)
            note = ""
            if anchor and anchor[0] is not None:
                note = f"reference exact single-round value {anchor[0]}"
            rows.append(_ours_row(case, params, ours_bounds, ours_walls, ours_cpus, memory, note))

        # dp-accounting rows (one per dx, pessimistic and optimistic together)
        dp_summary = []
        extra_dxs: list[float] = []
        if matched and ours_bounds is not None and rounds > 1 and pmfs:
            dx_m = _matching_dx(ours_bounds, rounds, dxs)
            if dx_m is not None:
                extra_dxs.append(dx_m)
                for pess in (True, False):
                    key = (dx_m, pess)
                    try:
                        run, _, cpu = time_once(lambda k=key: _dp_accounting_run(pmfs, k[0], rounds, k[1]))
                        run["cpu"] = cpu
                        dp_runs[key] = [run]
                    except Exception as exc:  # noqa: BLE001
                        dp_errors[dx_m] = exc
        for dx in list(dxs) + extra_dxs:
            dparams = {**params, "value_discretization_interval": dx, "symmetric": False}
            if not pmfs:
                rows.append(skipped_row(case, "dp-accounting", dparams, "dp-accounting not importable"))
                continue
            if dx in dp_errors:
                rows.append(error_row(case, "dp-accounting", dparams, dp_errors[dx]))
                continue
            pess_runs, opt_runs = dp_runs[(dx, True)], dp_runs[(dx, False)]
            pess, opt = pess_runs[-1]["epsilon"], opt_runs[-1]["epsilon"]
            med = lambda runs, k: statistics.median(r[k] for r in runs)  # noqa: E731
            memory = (None, None)
            if med(pess_runs, "total") < MEMORY_MAX_SECONDS:
                _, peak, rss = peak_memory(lambda d=dx: _dp_accounting_run(pmfs, d, rounds, True))
                memory = (peak, rss)
            anchor = anchors.get(rounds)
            notes = ["lower/upper are dp-accounting's optimistic/pessimistic estimates (not certified)"]
            if dx in extra_dxs:
                notes.append("dx chosen so that dp-accounting's gap is at most pldshuffle's (single repeat)")
            if anchor and dx == 1e-4:
                notes.append(f"published dx=1e-4: pess {anchor[1]} / opt {anchor[2]}")
            gap = (pess - opt) / pess if pess > 0 else 0.0
            rows.append(
                make_row(
                    case,
                    "dp-accounting",
                    dparams,
                    value=pess,
                    lower=opt,
                    upper=pess,
                    relative_gap_value=gap,
                    seconds=med(pess_runs, "total"),
                    peak_memory_mb=memory[0],
                    backend="numpy-fft (dp-accounting self_compose)",
                    notes="; ".join(notes),
                    extra={
                        "repeats": len(pess_runs),
                        "build_seconds": med(pess_runs, "build"),
                        "compose_query_seconds": med(pess_runs, "compose_query"),
                        "cpu_seconds_median": med(pess_runs, "cpu"),
                        "optimistic_seconds": med(opt_runs, "total"),
                        "optimistic_build_seconds": med(opt_runs, "build"),
                        "optimistic_compose_query_seconds": med(opt_runs, "compose_query"),
                        "pess_plus_opt_seconds": med(pess_runs, "total") + med(opt_runs, "total"),
                        "pmf_dict_seconds": pmf_seconds,
                        "wall_seconds_each": [round(r["total"], 6) for r in pess_runs],
                        "maxrss_increase_mb": memory[1],
                        "matched_dx": dx in extra_dxs,
                    },
                )
            )
            dp_summary.append(
                {
                    "dx": dx,
                    "pessimistic": pess,
                    "optimistic": opt,
                    "gap": gap,
                    "seconds_pessimistic": med(pess_runs, "total"),
                    "build_seconds": med(pess_runs, "build"),
                    "compose_query_seconds": med(pess_runs, "compose_query"),
                    "cpu_seconds_pessimistic": med(pess_runs, "cpu"),
                    "seconds_both": med(pess_runs, "total") + med(opt_runs, "total"),
                    "matched_dx": dx in extra_dxs,
                }
            )
        if ours_bounds is not None and dp_summary:
            comparisons.append(_compare(case, params, ours_bounds, ours_walls, ours_cpus, dp_summary, anchors.get(rounds)))
    return rows, comparisons


def _matching_dx(bounds, rounds: int, dxs: Sequence[float]) -> float | None:
    """dp-accounting's gap is ≈ rounds·dx/ε (see benchmarks/README.md); pick dx a bit below ours·ε/rounds, 2 digits."""
    target = 0.9 * bounds.relative_gap * bounds.upper / rounds
    if not math.isfinite(target) or target <= 0:
        return None
    exponent = math.floor(math.log10(target))
    dx = math.floor(target / 10**exponent * 10) / 10 * 10**exponent
    if dx < 1e-5:  # dp-accounting's grid (and time) grows as 1/dx: not attempted below this
        return None
    if dx >= min(dxs):  # the finest listed dx already gives a gap at most ours
        return None
    return float(f"{dx:.2g}")


def _compare(case, params, ours, walls, cpus, dp_summary, anchor) -> dict:
    our_gap = ours.relative_gap
    our_seconds = statistics.median(walls)
    our_cpu = statistics.median(cpus)

    def ratio_entry(entry: dict | None, how: str) -> dict | None:
        if entry is None:
            return None
        return {
            "dx": entry["dx"],
            "dp_gap": entry["gap"],
            "how_chosen": how,
            "ratio_pessimistic_only": entry["seconds_pessimistic"] / our_seconds,
            "ratio_pessimistic_plus_optimistic": entry["seconds_both"] / our_seconds,
            "ratio_cpu_pessimistic": entry["cpu_seconds_pessimistic"] / our_cpu if our_cpu > 0 else None,
            "ratio_compose_query_only": entry["compose_query_seconds"] / our_seconds,
        }

    at_least_ours = [e for e in dp_summary if e["gap"] >= our_gap]
    at_most_ours = [e for e in dp_summary if e["gap"] <= our_gap]
    # (a) dp-accounting configuration whose gap is >= ours and closest to it (our gap is equal or narrower)
    conservative = min(at_least_ours, key=lambda e: e["gap"]) if at_least_ours else None
    # (b) cheapest dp-accounting configuration that is at least as narrow as ours
    matched = min(at_most_ours, key=lambda e: e["seconds_pessimistic"]) if at_most_ours else None

    violations = []
    for e in dp_summary:
        tol = 1e-9 * max(1.0, abs(e["pessimistic"]))
        if ours.upper < e["optimistic"] - tol:
            violations.append(f"dx={e['dx']:g}: certified upper {ours.upper!r} < dp-accounting optimistic {e['optimistic']!r}")
        if ours.lower > e["pessimistic"] + tol:
            violations.append(f"dx={e['dx']:g}: certified lower {ours.lower!r} > dp-accounting pessimistic {e['pessimistic']!r}")
    anchor_check = None
    if anchor is not None:
        exact, a_pess, a_opt = anchor
        anchor_check = {
            "anchors_exact": exact,
            "anchors_dx1e-4_pessimistic": a_pess,
            "anchors_dx1e-4_optimistic": a_opt,
            "ours_contains_anchor_exact": None if exact is None else bool(ours.lower <= exact + 5e-6 and exact - 5e-6 <= ours.upper),
            "ours_within_anchor_dp_bracket": bool(a_opt - 1e-4 <= ours.upper and ours.lower <= a_pess + 1e-4),
        }
    return {
        "case": case,
        "parameters": params,
        "pldshuffle": {"lower": ours.lower, "upper": ours.upper, "gap": our_gap, "seconds": our_seconds, "cpu_seconds": our_cpu},
        "dp_accounting": dp_summary,
        "at_equal_or_narrower_gap": ratio_entry(conservative, "dp-accounting dx whose gap is >= pldshuffle's, closest to it"),
        "dp_accounting_matched": ratio_entry(matched, "cheapest dp-accounting dx whose gap is <= pldshuffle's"),
        "consistency": {"ok": not violations, "violations": violations},
        "anchors": anchor_check,
    }


# ------------------------------------------------------------------------------------------ sections
def _warm_up(krr_cls) -> dict[str, float]:
    """Trigger numba compilation and FFT plan caches so the first timed case is not charged for them."""
    import pldshuffle as ps

    out = {}
    t0 = time.perf_counter()
    for backend in ("pyfftw", "scipy"):
        try:
            for rounds in (1, 3):
                acc = ps.FourierAccountant(fft_backend=backend).compose(ps.ShuffledBinaryRR(300, 1.0, dataset="khh21"), rounds)
                acc.get_epsilon_bounds(DELTA)
        except Exception as exc:  # noqa: BLE001
            out[f"warm_up_{backend}_error"] = f"{type(exc).__name__}: {exc}"
    out["binary_rr_seconds"] = time.perf_counter() - t0
    if krr_cls is not None:
        t0 = time.perf_counter()
        try:
            for rounds in (1, 3):
                acc = ps.FourierAccountant().compose(krr_cls(300, 4, gamma=0.25, adversary="strong"), rounds)
                acc.get_epsilon_bounds(DELTA)
        except Exception as exc:  # noqa: BLE001
            out["warm_up_krr_error"] = f"{type(exc).__name__}: {exc}"
        out["krr_seconds"] = time.perf_counter() - t0
    return out


def _build_pmfs(builder: Callable[[], tuple[dict, dict]], have_dp: bool) -> tuple[tuple | None, float | None, dict]:
    if not have_dp:
        return None, None, {}
    from ._pairs import dict_totals

    pmfs, wall, _ = time_once(builder)
    return pmfs, wall, dict_totals(*pmfs)


def run(quick: bool = False) -> dict[str, Any]:
    """Run the core suite; returns ``{"rows": [...], "comparisons": [...], "meta": {...}}``."""
    import pldshuffle as ps

    from . import _pairs

    rows: list[dict] = []
    comparisons: list[dict] = []
    meta: dict[str, Any] = {}

    krr_module, krr_reason = optional_import("pldshuffle.mechanisms.krr")
    krr_cls = getattr(krr_module, "ShuffledKRR", None) if krr_module else None
    if krr_module is not None and krr_cls is None:
        krr_reason = "pldshuffle.mechanisms.krr has no ShuffledKRR"
    dp_module, dp_reason = optional_import("dp_accounting.pld.privacy_loss_distribution")
    have_dp = dp_module is not None
    meta["skipped_components"] = {k: v for k, v in (("ShuffledKRR", krr_reason), ("dp_accounting", dp_reason)) if v}

    log("warm-up (numba compilation, FFT plans)")
    meta["warm_up"] = _warm_up(krr_cls)

    side_rounds = (1, 64) if quick else (1, 64, 1024)
    side_dxs = (1e-3,) if quick else (1e-3, 1e-4)
    repeats = 1 if quick else 3

    # 1. kRR strong, n=1000, k=4, γ=0.25
    case = "krr_strong_side_by_side"
    pmfs, pmf_s, totals = _build_pmfs(lambda: _pairs.krr_strong_pmfs(**KRR, atom=True), have_dp)
    meta[f"{case}_pmf_dicts"] = {**totals, "seconds": pmf_s}
    make = (lambda: krr_cls(KRR["num_users"], KRR["domain_size"], gamma=KRR["gamma"], adversary="strong")) if krr_cls else None
    r, c = _side_by_side(
        case,
        {"mechanism": "ShuffledKRR", **KRR, "adversary": "strong", "pair": "2-D (n1,n2) + atom"},
        make,
        krr_reason,
        pmfs,
        pmf_s,
        side_rounds,
        side_dxs,
        matched=not quick,
        max_repeats=repeats,
    )
    rows += r
    comparisons += c

    # 1b. the two pairs of KHH21's comparison
    one_d_rounds = (1,) if quick else side_rounds
    case = "krr_1d_khh21_side_by_side"
    pmfs, pmf_s, totals = _build_pmfs(lambda: _pairs.krr_1d_khh21_pmfs(**KRR), have_dp)
    meta[f"{case}_pmf_dicts"] = {**totals, "seconds": pmf_s}
    arrays = _pairs.krr_1d_khh21_arrays(**KRR)
    caveat = "KHH21 eq. (5.1) 1-D pair: a marginal, can fall below the real mechanism (docs/mathematics.md#pairs); benchmark parity only"
    make_1d = lambda: _pairs.explicit_pair_mechanism(arrays[0], arrays[1], "KHH21 (5.1) pair", caveat)  # noqa: E731
    r, c = _side_by_side(
        case,
        {"mechanism": "explicit pair (PrivacyLossPair.from_probability_mass_functions)", **KRR, "pair": "KHH21 eq. (5.1) 1-D"},
        make_1d,
        None,
        pmfs,
        pmf_s,
        one_d_rounds,
        side_dxs,
        matched=False,
        max_repeats=repeats,
    )
    rows += r
    comparisons += c

    case = "2rr_n1000_side_by_side"
    pmfs, pmf_s, totals = _build_pmfs(lambda: _pairs.binary_rr_khh21_pmfs(**RR_N1000), have_dp)
    meta[f"{case}_pmf_dicts"] = {**totals, "seconds": pmf_s}
    eps0 = math.log(7.0)
    r, c = _side_by_side(
        case,
        {"mechanism": "ShuffledBinaryRR", "num_users": RR_N1000["num_users"], "local_epsilon": eps0, "dataset": "khh21",
         "pair": "Bin(n,p) vs Bin(n-1,p)+Bern(1-p), p=1/8"},
        lambda: ps.ShuffledBinaryRR(RR_N1000["num_users"], eps0, dataset="khh21"),
        None,
        pmfs,
        pmf_s,
        one_d_rounds,
        side_dxs,
        matched=False,
        max_repeats=repeats,
    )
    rows += r
    comparisons += c

    # 2. 2RR vs n
    case = "2rr_vs_n"
    grid = [(10**4, "khh21", 1), (10**4, "khh21", 64)] if quick else [
        (n, ds, rounds) for n in (10**4, 10**5, 10**6) for ds in ("khh21", "worst") for rounds in (1, 64)
    ]
    for n, ds, rounds in grid:
        params = {"mechanism": "ShuffledBinaryRR", "num_users": n, "local_epsilon": 1.0, "dataset": ds, "rounds": rounds, "delta": DELTA}
        log(f"{case}: n={n} dataset={ds} rounds={rounds}")
        rows.append(_single(case, params, lambda n=n, ds=ds: ps.ShuffledBinaryRR(n, 1.0, dataset=ds), rounds, "auto", repeats))

    # 3. 2RR vs rounds, both backends
    case = "2rr_vs_rounds"
    rounds_list = (1, 16) if quick else (1, 4, 16, 64, 256, 1024, 4096, 10_000)
    for backend in ("pyfftw", "scipy"):
        for rounds in rounds_list:
            params = {"mechanism": "ShuffledBinaryRR", "num_users": 10**4, "local_epsilon": 1.0, "dataset": "khh21",
                      "rounds": rounds, "delta": DELTA, "fft_backend": backend}
            log(f"{case}: backend={backend} rounds={rounds}")
            rows.append(_single(case, params, lambda: ps.ShuffledBinaryRR(10**4, 1.0, dataset="khh21"), rounds, backend, repeats))
    return {"rows": rows, "comparisons": comparisons, "meta": meta}


def _single(case: str, params: dict, make: Callable[[], Any], rounds: int, backend: str, repeats: int) -> dict:
    fn = lambda: _pldshuffle_run(make, rounds, backend)  # noqa: E731
    t0 = time.perf_counter()
    try:
        timing = time_call(fn, repeats=repeats)
    except Exception as exc:  # noqa: BLE001 - recorded
        return error_row(case, "pldshuffle", params, exc, seconds=time.perf_counter() - t0)
    memory = None
    if timing.seconds < MEMORY_MAX_SECONDS:
        _, peak, rss = peak_memory(fn)
        memory = (peak, rss)
    notes = "" if timing.seconds < MEMORY_MAX_SECONDS else "slow case: no separate traced-memory run"
    return _ours_row(case, params, timing.result, timing.walls, timing.cpus, memory, notes)
