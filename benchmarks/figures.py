"""Figures of the documentation: ``python -m benchmarks.figures`` writes ``docs/_static/*.png``.

``certified_vs_baselines.png``: the certified ε bracket of pldshuffle against the analytic baselines of
:mod:`pldshuffle.bounds`, for the same assumption (any ε0-LDP randomizer, i.e. the FMT20 clone
reduction), left against δ for one round, right against the number of rounds at δ = 1e-6 (baselines
composed with the Kairouz-Oh-Viswanath bound, the GDDKS21 RDP bound composed in RDP).
"""

from __future__ import annotations

import argparse
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


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.figures", description=__doc__)
    parser.add_argument("--out", type=Path, default=OUT, help=f"output folder (default {OUT})")
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    certified_vs_baselines(args.out / "certified_vs_baselines.png")
    print(f"wrote {args.out / 'certified_vs_baselines.png'}")


if __name__ == "__main__":
    main()
