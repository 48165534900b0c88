"""Markdown summary of a suite's JSON payload (written next to the JSON)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ._common import fmt, markdown_table, short_parameters

_COMMON_PARAMS = ("delta", "mechanism", "pair", "symmetric")


def machine_section(machine: Mapping[str, Any]) -> str:
    v = machine.get("versions", {})
    lines = [
        f"- CPU: {machine.get('cpu_model')} — {machine.get('cpu_count')} logical CPUs "
        f"(affinity {machine.get('cpu_affinity')}), memory {machine.get('memory_gib')} GiB",
        f"- OS: {machine.get('platform')}",
        f"- load average at start / end: {machine.get('load_average_at_start')} / {machine.get('load_average_at_end')}",
        "- Python {py}; numpy {numpy}, scipy {scipy}, numba {numba}, pyfftw {pyfftw}, dp-accounting {dp}; "
        "pldshuffle {pl} (commit {git})".format(
            py=machine.get("python"), numpy=v.get("numpy"), scipy=v.get("scipy"), numba=v.get("numba"), pyfftw=v.get("pyfftw"),
            dp=v.get("dp_accounting"), pl=v.get("pldshuffle"), git=machine.get("git_commit"),
        ),
    ]
    return "\n".join(lines)


def targets_section(targets) -> str:
    return markdown_table(
        ("target", "measured", "status", "details"),
        ([t["target"], fmt(t["measured"], "gap" if (t["threshold"] or 1) < 0.1 else "g"), t["status"], t["details"]] for t in targets),
    )


def comparison_section(comparisons) -> str:
    out = []
    for c in comparisons:
        p = c["parameters"]
        ours = c["pldshuffle"]
        head = f"**{c['case']}**, rounds = {p['rounds']}, δ = {p['delta']:g}"
        rows = [[
            "pldshuffle (defaults)", "certified", fmt(ours["lower"]), fmt(ours["upper"]), fmt(ours["gap"], "gap"),
            "–", "–", fmt(ours["seconds"], "s"), "1.00x",
        ]]
        for e in c["dp_accounting"]:
            rows.append([
                f"dp-accounting dx={e['dx']:g}" + (" (matched)" if e.get("matched_dx") else ""),
                "estimates",
                fmt(e["optimistic"]),
                fmt(e["pessimistic"]),
                fmt(e["gap"], "gap"),
                fmt(e["build_seconds"], "s"),
                fmt(e["compose_query_seconds"], "s"),
                fmt(e["seconds_pessimistic"], "s"),
                fmt(e["seconds_pessimistic"] / ours["seconds"], "x"),
            ])
        table = markdown_table(
            ("system", "kind", "lower / optimistic", "upper / pessimistic", "rel. gap", "build s", "compose+query s", "total s", "time / pldshuffle"),
            rows,
        )
        notes = []
        cons, matched = c.get("at_equal_or_narrower_gap"), c.get("dp_accounting_matched")
        if cons:
            notes.append(
                f"At equal or narrower gap (dp-accounting dx={cons['dx']:g}, its gap {cons['dp_gap']:.3g} ≥ ours "
                f"{ours['gap']:.3g}): dp-accounting / pldshuffle = {cons['ratio_pessimistic_only']:.2f}x "
                f"(pessimistic run only), {cons['ratio_pessimistic_plus_optimistic']:.2f}x (pessimistic + optimistic), "
                f"{fmt(cons['ratio_cpu_pessimistic'], 'x')} in CPU time."
            )
        else:
            notes.append("No dp-accounting configuration had a gap at least ours (dp-accounting was narrower at every dx tried).")
        if matched and matched is not cons:
            notes.append(
                f"Cheapest dp-accounting run with a gap at most ours: dx={matched['dx']:g} (gap {matched['dp_gap']:.3g}): "
                f"{matched['ratio_pessimistic_only']:.2f}x."
            )
        cons_check = c["consistency"]
        notes.append(
            "Consistency with dp-accounting (our upper ≥ its optimistic, our lower ≤ its pessimistic at every dx): "
            + ("ok." if cons_check["ok"] else "**VIOLATED**: " + "; ".join(cons_check["violations"]))
        )
        if c.get("anchors"):
            a = c["anchors"]
            notes.append(
                f"published reference: exact {a['anchors_exact']}, dx=1e-4 pess/opt {a['anchors_dx1e-4_pessimistic']} / "
                f"{a['anchors_dx1e-4_optimistic']}; ours contains the exact value: {fmt(a['ours_contains_anchor_exact'])}."
            )
        out.append(head + "\n\n" + table + "\n\n" + "\n".join(f"- {n}" for n in notes))
    return "\n\n".join(out)


def rows_section(rows) -> str:
    by_case: dict[str, list] = {}
    for r in rows:
        by_case.setdefault(r["case"], []).append(r)
    parts = []
    for case, items in by_case.items():
        table = markdown_table(
            ("system", "parameters", "lower", "upper", "rel. gap", "seconds", "peak MiB", "backend", "status", "notes"),
            (
                [
                    r["system"],
                    short_parameters(r["parameters"], _COMMON_PARAMS),
                    fmt(r["lower"]),
                    fmt(r["upper"]),
                    fmt(r["relative_gap"], "gap"),
                    fmt(r["seconds"], "s"),
                    fmt(r["peak_memory_mb"], "mb"),
                    r["backend"] or "–",
                    r["status"],
                    (r["notes"][:160] + "…") if len(r["notes"]) > 160 else r["notes"],
                ]
                for r in items
            ),
        )
        parts.append(f"### {case}\n\n{table}")
    return "\n\n".join(parts)


def render(payload: Mapping[str, Any]) -> str:
    lines = [
        f"# Benchmark suite `{payload['suite']}`" + (" (quick)" if payload.get("quick") else ""),
        "",
        f"Started {payload['started']}, finished {payload['finished']} ({payload['wall_seconds']:.0f} s).",
        "",
        "## Machine",
        "",
        machine_section(payload["machine"]),
        "",
        "## Targets",
        "",
        targets_section(payload["targets"]),
        "",
    ]
    if payload.get("comparisons"):
        lines += ["## pldshuffle vs dp-accounting, same pair, same run", "", comparison_section(payload["comparisons"]), ""]
    lines += ["## All rows", "", rows_section(payload["rows"]), ""]
    return "\n".join(lines)
