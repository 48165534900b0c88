"""Figures of the documentation: ``python -m benchmarks.figures`` writes ``docs/_static/*.png``.

``certified_vs_baselines.png``: the certified ε bracket of pldshuffle against the analytic baselines of
:mod:`pldshuffle.bounds`, for the same assumption (any ε0-LDP randomizer, i.e. the FMT20 clone
reduction), left against δ for one round, right against the number of rounds at δ = 1e-6 (baselines
composed with the Kairouz-Oh-Viswanath bound, the GDDKS21 RDP bound composed in RDP).

``blanket_vs_clones.png``: drawn from ``benchmarks/results/blanket.json`` (``python -m
benchmarks.bench_blanket``; nothing is recomputed): the blanket pair against the labelled clone pair,
FMT20 and the analytic bounds, one round and 64 rounds, and the ratio clone / blanket per randomizer.
"""

from __future__ import annotations

import argparse
import json
import math
from collections.abc import Mapping, Sequence
from functools import partial
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

import pldshuffle as ps  # noqa: E402
from pldshuffle import bounds  # noqa: E402
from pldshuffle.plotting import plot_epsilon_curve  # noqa: E402

OUT = Path(__file__).resolve().parent.parent / "docs" / "_static"
BLANKET_JSON = Path(__file__).resolve().parent / "results" / "blanket.json"
NUM_USERS, LOCAL_EPSILON, DELTA = 10_000, 2.0, 1e-6
ROUNDS = (1, 2, 4, 8, 16, 32, 64)


def certified_vs_baselines(path: Path) -> None:
    mechanism = ps.ShuffledLDP(NUM_USERS, LOCAL_EPSILON, reduction="fmt20")
    setting = {"num_users": NUM_USERS, "local_epsilon": LOCAL_EPSILON}
    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4.2))

    deltas = np.logspace(-10, -3, 15)
    one_round = [
        ("FMT20 Thm 3.1", [bounds.fmt20_epsilon(**setting, target_delta=d) for d in deltas]),
        ("BBGN19 Hoeffding (generic)", [bounds.bbgn19_hoeffding_epsilon(**setting, target_delta=d) for d in deltas]),
        ("GDDKS21 RDP → DP", [bounds.gddks21_dp_epsilon(**setting, target_delta=d) for d in deltas]),
    ]
    plot_epsilon_curve(ps.FourierAccountant().compose(mechanism), deltas, ax=left,
                       label="pldshuffle, certified [lower, upper]", baselines=one_round)
    left.set_title(f"one round, n = {NUM_USERS:,}, ε0 = {LOCAL_EPSILON:g}")

    rounds = np.array(ROUNDS)
    brackets = [ps.FourierAccountant().compose(mechanism, int(r)).get_epsilon_bounds(DELTA) for r in rounds]
    (line,) = right.plot(rounds, [b.upper for b in brackets], marker="o", label="pldshuffle, certified [lower, upper]")
    right.fill_between(rounds, [b.lower for b in brackets], [b.upper for b in brackets], color=line.get_color(), alpha=0.3)
    per_round = partial(bounds.fmt20_epsilon, **setting)
    kov = [bounds.compose_epsilon(per_round, rounds=int(r), target_delta=DELTA, method="kov_exact") for r in rounds]
    rdp = [bounds.gddks21_dp_epsilon(**setting, target_delta=DELTA, rounds=int(r)) for r in rounds]
    right.plot(rounds, kov, linestyle="--", color="C1", label="FMT20 per round + KOV composition")
    right.plot(rounds, rdp, linestyle="--", color="C3", label="GDDKS21 RDP, composed → DP")
    right.plot(rounds, LOCAL_EPSILON * rounds, linestyle=":", color="grey", label="k·ε0 (no amplification)")
    right.set_xscale("log", base=2)
    right.set_yscale("log")
    right.set_xlabel("rounds")
    right.set_ylabel(f"ε at δ = {DELTA:g}")
    right.set_title("composition over rounds")
    right.legend(fontsize=8)
    left.legend(fontsize=8)
    fig.suptitle("Any ε0-LDP randomizer, shuffled: certified bracket vs analytic bounds", fontsize=11)
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)


def _number(value: object) -> float:
    """A JSON number of the benchmark rows ("nan"/"inf" strings back to floats)."""
    return float(value) if isinstance(value, (int, float, str)) else math.nan


def _blanket_rows(rows: Sequence[Mapping], part: str, delta: float) -> list[Mapping]:
    return [r for r in rows if r["status"] == "ok" and r["case"].startswith(f"blanket_{part}_") and r["parameters"]["delta"] == delta]


def _amplified(value: float, eps0: float) -> float:
    """An analytic bound at or above ε0 certifies no amplification: not drawn (NaN)."""
    return value if math.isfinite(value) and value < eps0 else math.nan


def blanket_vs_clones(path: Path, results: Path = BLANKET_JSON, *, delta: float = 1e-6, names: Sequence[str] = ("oue_1024", "rappor_32", "krr_100"),
                      sweep_eps0: float = 0.1, ratio_n: int = 1_000) -> None:
    """Blanket pair vs labelled clone pair vs FMT20 vs analytic bounds, from ``bench_blanket``'s JSON.

    Left: one round, ε against n at ε0 = ``sweep_eps0`` for the randomizers ``names`` (certified upper ends;
    the brackets are narrower than the markers), with FMT20's closed form and BBGN19's Bennett bound.
    Middle: the same after 64 composed rounds (analytic: FMT20 per round + exact KOV composition, GDDKS21
    composed in RDP).  Right: ratio ε(labelled clone pair) / ε(blanket pair) against ε0 at n = ``ratio_n``
    for every randomizer measured.  Analytic bounds at or above ε0 (no amplification) are not drawn.
    """
    from .bench_blanket import LABELS

    rows = json.loads(results.read_text(encoding="utf-8"))["rows"]
    fig, (left, middle, right) = plt.subplots(1, 3, figsize=(15, 5.2))
    for i, name in enumerate(names):
        for ax, part in ((left, "gain"), (middle, "rounds")):
            sel = sorted((r for r in _blanket_rows(rows, part, delta) if r["parameters"]["name"] == name
                          and r["parameters"]["eps0"] == sweep_eps0), key=lambda r: r["parameters"]["n"])
            if not sel:
                continue
            n = [r["parameters"]["n"] for r in sel]
            # one colour per randomizer in every panel; earlier lines drawn wider so that coinciding ones stay visible
            color, width = f"C{list(LABELS).index(name) % 10}", 3.2 - 0.9 * i
            ax.plot(n, [r["upper"] for r in sel], marker="o", markersize=2 * width + 2, linewidth=width, color=color,
                    label=f"{LABELS[name]}: blanket (certified)")
            ax.plot(n, [r["extra"]["clone_randomizer"][1] for r in sel], marker="s", markersize=2 * width + 2, linewidth=width,
                    linestyle="--", color=color, label=f"{LABELS[name]}: labelled clone (certified)")
            if i == 0:
                eps0 = sel[0]["parameters"]["eps0"]
                ax.plot(n, [r["extra"]["fmt20"][1] for r in sel], marker="^", linestyle=":", color="grey", label="FMT20 clone pair (certified)")
                keys = (("fmt20_closed_form", "FMT20 closed form"), ("bbgn19_bennett", "BBGN19 Bennett (generic)")) if part == "gain" else (
                    ("fmt20_closed_form_kov", "FMT20 closed form + KOV"), ("gddks21_rdp", "GDDKS21 RDP"))
                for (key, label), style in zip(keys, ("-.", (0, (1, 3)))):
                    ax.plot(n, [_amplified(_number(r["extra"]["analytic"].get(key)), eps0 * (1 if part == "gain" else 64)) for r in sel],
                            linestyle=style, color="black", label=label)
    for ax, title in ((left, "one round"), (middle, "64 rounds")):
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("n (users)")
        ax.set_ylabel(f"ε at δ = {delta:g}")
        ax.set_title(f"{title}, ε0 = {sweep_eps0:g}")
    handles, labels = left.get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=4, fontsize=7.5, frameon=False)
    middle.legend([h for h, lab in zip(*middle.get_legend_handles_labels()) if "closed form + KOV" in lab or "GDDKS21" in lab],
                  [lab for lab in middle.get_legend_handles_labels()[1] if "closed form + KOV" in lab or "GDDKS21" in lab], fontsize=7.5)
    ratio_rows = [r for r in _blanket_rows(rows, "gain", delta) if r["parameters"]["n"] == ratio_n]
    for i, name in enumerate(LABELS):
        sel = sorted((r for r in ratio_rows if r["parameters"]["name"] == name), key=lambda r: r["parameters"]["eps0"])
        if sel:
            right.plot([r["parameters"]["eps0"] for r in sel], [r["extra"]["clone_over_blanket"] for r in sel], marker="o",
                       color=f"C{i % 10}", label=LABELS[name])
    right.axhline(1.0, color="grey", linewidth=0.8)
    right.set_xscale("log")
    right.set_yscale("log")
    eps0s = sorted({r["parameters"]["eps0"] for r in ratio_rows})
    right.set_xticks(eps0s, [f"{e:g}" for e in eps0s])
    right.set_yticks([1, 2, 3, 5, 10], ["1", "2", "3", "5", "10"])
    right.minorticks_off()
    right.set_xlabel("ε0")
    right.set_ylabel("ε(labelled clone) / ε(blanket)")
    right.set_title(f"gain of the blanket pair, n = {ratio_n:,}, one round")
    right.legend(fontsize=7)
    fig.suptitle(f"Shuffled LDP randomizers: the blanket pair against the clone pairs and analytic bounds (δ = {delta:g})", fontsize=11)
    fig.tight_layout(rect=(0, 0.14, 1, 1))
    fig.savefig(path, dpi=90)
    plt.close(fig)


FIGURES = {"certified_vs_baselines": certified_vs_baselines, "blanket_vs_clones": blanket_vs_clones}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.figures", description=__doc__)
    parser.add_argument("--out", type=Path, default=OUT, help=f"output folder (default {OUT})")
    parser.add_argument("--only", nargs="*", choices=tuple(FIGURES), default=list(FIGURES), help="which figures (default all)")
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    for name in args.only:
        FIGURES[name](args.out / f"{name}.png")
        print(f"wrote {args.out / (name + '.png')}")


if __name__ == "__main__":
    main()
