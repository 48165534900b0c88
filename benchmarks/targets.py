"""The project's accuracy and speed targets, evaluated on a suite's rows and comparisons.

| case | target |
|---|---|
| any mechanism, 1 round | certified relative ε gap ≤ 1e-4 |
| ≤ 64 rounds | gap ≤ 1e-3 |
| 65 rounds up to 1e5–1e6 rounds, δ ≥ 1e-12 | gap ≤ 2e-3 |
| ShuffledLDP(10**6, 4.0, "fmt20"), 1 round, δ=1e-6 | ≤ 0.5 s, the first call in a fresh process included |
| same, 64 rounds | ≤ 2 s, likewise |
| ShuffledKRR(1000, 4, gamma=0.25, adversary="strong"), 1024 rounds, δ=1e-6 | ≥ 10× faster than dp-accounting at a narrower certified gap, side by side in one run |
| same, 64 and 1024 rounds, whole process (import + one query) | ≥ 3× faster than dp-accounting's (``bench_v2``: at its default Δx = 1e-4 and at a narrower gap) |
| n up to 10^7 | no memory blow-up on 24 GiB; requests that would not fit are refused up front |
| blanket pair, OUE d=1024, ε0=1, δ=1e-8: n=1e6 and 64 rounds / one round at n=1e7 | ≤ 10 s and ≤ 1 GiB / ≤ 10 s, whole process (``bench_blanket``) |
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

PASS, FAIL, NOT_MEASURED = "pass", "FAIL", "not measured"


def _num(x: Any) -> float | None:
    return float(x) if isinstance(x, (int, float)) else (float("inf") if x == "inf" else None)


def _ours(rows: Sequence[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    return [r for r in rows if r["system"] == "pldshuffle" and r["status"] == "ok"]


def _gap_target(rows, name: str, target: float, select) -> dict[str, Any]:
    chosen = [r for r in _ours(rows) if select(int(r["parameters"].get("rounds", 0)), float(r["parameters"].get("delta", 1.0)))]
    if not chosen:
        return {"target": name, "threshold": target, "status": NOT_MEASURED, "measured": None, "details": "no rows"}
    worst = max(chosen, key=lambda r: _num(r["relative_gap"]) or 0.0)
    failing = [r for r in chosen if (_num(r["relative_gap"]) or 0.0) > target]
    details = f"{len(chosen)} rows; worst {worst['case']} ({_describe(worst)})"
    if failing:
        details += "; over target: " + "; ".join(f"{r['case']} ({_describe(r)}): {_num(r['relative_gap']):.3g}" for r in failing)
    return {
        "target": name,
        "threshold": target,
        "status": FAIL if failing else PASS,
        "measured": _num(worst["relative_gap"]),
        "details": details,
    }


def _describe(row: Mapping[str, Any]) -> str:
    p = row["parameters"]
    keys = ("num_users", "local_epsilon", "dataset", "adversary", "pair", "rounds", "fft_backend")
    return ", ".join(f"{k}={p[k]}" for k in keys if k in p)


def _ldp_target(rows, rounds: int, limit: float) -> dict[str, Any]:
    """The spec counts the first call in a fresh process: ``bench_v2``'s clone rows measure exactly that
    (its cases run in fresh processes); ``bench_clones``' rows are timed after a warm-up, so they are used
    only when no fresh-process row exists, and say so."""
    name = f'ShuffledLDP(10**6, 4.0, "fmt20"), {rounds} round{"s" if rounds > 1 else ""}, δ=1e-6: ≤ {limit:g} s, first call in a fresh process included'
    fresh_case = f"clones_fmt20_1e6_{rounds}_round{'s' if rounds > 1 else ''}"
    for r in _ours(rows):
        if r["case"] == fresh_case:
            sec = _num(r["seconds"])
            return {"target": name, "threshold": limit, "status": PASS if sec is not None and sec <= limit else FAIL,
                    "measured": sec, "details": f"row {r['case']} (bench_v2, fresh process)"}
    for r in _ours(rows):
        p = r["parameters"]
        n = p.get("num_users", p.get("n"))
        eps0 = p.get("local_epsilon", p.get("eps0"))
        if n == 10**6 and eps0 == 4.0 and p.get("reduction", "fmt20") == "fmt20" and p.get("rounds") == rounds and "LDP" in str(p.get("mechanism", "")):
            sec = _num(r["seconds"])
            return {"target": name, "threshold": limit, "status": NOT_MEASURED, "measured": sec,
                    "details": f"row {r['case']} is timed after a warm-up (first call excluded); bench_v2 measures the target"}
    return {"target": name, "threshold": limit, "status": NOT_MEASURED, "measured": None,
            "details": "measured by benchmarks/bench_v2.py (suite 'all')"}


def _speed_target(comparisons) -> dict[str, Any]:
    name = 'ShuffledKRR(1000, 4, gamma=0.25, "strong"), 1024 rounds: ≥ 10x faster than dp-accounting at a narrower gap'
    for c in comparisons:
        if c["case"] == "krr_strong_side_by_side" and c["parameters"].get("rounds") == 1024:
            cons = c.get("at_equal_or_narrower_gap")
            matched = c.get("dp_accounting_matched")
            if cons is None and matched is None:
                return {"target": name, "threshold": 10.0, "status": NOT_MEASURED, "measured": None, "details": "no dp-accounting run to compare"}
            primary = cons or matched
            ratio = primary["ratio_pessimistic_only"]
            parts = [
                f"pldshuffle gap {c['pldshuffle']['gap']:.3g} in {c['pldshuffle']['seconds']:.3f} s",
                f"dp-accounting dx={primary['dx']:g} gap {primary['dp_gap']:.3g} ({primary['how_chosen']}): "
                f"{ratio:.2f}x (pessimistic run only), {primary['ratio_pessimistic_plus_optimistic']:.2f}x (pess+opt)",
            ]
            if matched is not None and matched is not primary:
                parts.append(f"cheapest dp-accounting dx with gap <= ours: dx={matched['dx']:g} gap {matched['dp_gap']:.3g}: "
                             f"{matched['ratio_pessimistic_only']:.2f}x")
            return {"target": name, "threshold": 10.0, "status": PASS if ratio >= 10.0 else FAIL, "measured": ratio, "details": "; ".join(parts)}
    return {"target": name, "threshold": 10.0, "status": NOT_MEASURED, "measured": None, "details": "1024-round kRR comparison not in this run"}


def _whole_process_targets(comparisons) -> list[dict[str, Any]]:
    """``bench_v2``'s whole-process comparisons (import + one query, fresh processes), one entry per basis:
    dp-accounting at its default Δx = 1e-4 (pessimistic estimate only, a gap far wider than ours) and at the
    finest Δx of its ladder (the spec's basis, a narrower certified gap on our side)."""
    out = []
    for c in comparisons:
        if not str(c.get("case", "")).endswith("_rounds_whole_process"):
            continue
        ratio = _num(c.get("ratio"))
        out.append({"target": f"{c['case']}: whole process ≥ 3x faster than dp-accounting ({c['basis']})", "threshold": 3.0,
                    "status": PASS if ratio is not None and ratio >= 3.0 else FAIL, "measured": ratio,
                    "details": f"pldshuffle {c['pldshuffle_process_seconds']:.2f} s, dp-accounting {c['dp_accounting_process_seconds']:.2f} s"})
    return out or [{"target": "whole process ≥ 3x faster than dp-accounting", "threshold": 3.0, "status": NOT_MEASURED,
                    "measured": None, "details": "measured by benchmarks/bench_v2.py (suite 'all')"}]


def _blanket_scale_targets(rows) -> list[dict[str, Any]]:
    """``bench_blanket``'s scale rows (fresh processes: import + build + compose + query, peak RSS)."""
    wanted = (("blanket_scale_oue_1e6_64_rounds", "blanket pair, OUE d=1024 ε0=1, n=1e6, 64 rounds, δ=1e-8: ≤ 10 s and ≤ 1 GiB, whole process"),
              ("blanket_scale_oue_1e7_one_round", "blanket pair, OUE d=1024 ε0=1, n=1e7, one round, δ=1e-8: ≤ 10 s, whole process"))
    out = []
    for case, name in wanted:
        row = next((r for r in _ours(rows) if r["case"] == case), None)
        if row is None:
            out.append({"target": name, "threshold": 10.0, "status": NOT_MEASURED, "measured": None,
                        "details": "measured by benchmarks/bench_blanket.py (suite 'all', not --quick)"})
            continue
        sec, mem = _num(row["seconds"]), _num(row["peak_memory_mb"])
        met = sec is not None and sec <= 10.0 and (mem is None or mem <= 1024.0)
        out.append({"target": name, "threshold": 10.0, "status": PASS if met else FAIL, "measured": sec,
                    "details": f"{sec:.2f} s, peak RSS {mem:.0f} MB" if sec is not None and mem is not None else str(row["notes"])})
    return out


def evaluate(rows: Sequence[Mapping[str, Any]], comparisons: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """One entry per target: target, threshold, status (pass / FAIL / not measured), measured, details."""
    out = [
        _gap_target(rows, "any mechanism, 1 round: relative ε gap ≤ 1e-4", 1e-4, lambda r, d: r == 1),
        _gap_target(rows, "2-64 rounds: gap ≤ 1e-3", 1e-3, lambda r, d: 1 < r <= 64),
        _gap_target(rows, "65-1024 rounds: gap ≤ 2e-3", 2e-3, lambda r, d: 64 < r <= 1024),
        _gap_target(rows, "more than 1024 rounds, δ ≥ 1e-12: gap ≤ 2e-3", 2e-3, lambda r, d: r > 1024 and d >= 1e-12),
        _ldp_target(rows, 1, 0.5),
        _ldp_target(rows, 64, 2.0),
        _speed_target(comparisons),
        *_whole_process_targets(comparisons),
        *_blanket_scale_targets(rows),
        {"target": "n up to 10^7: no memory blow-up; oversize requests refused up front", "threshold": None,
         "status": NOT_MEASURED, "measured": None, "details": "not part of the core suite"},
    ]
    return out
