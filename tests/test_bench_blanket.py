"""The blanket benchmark's rows (``benchmarks/bench_blanket.py``) on tiny cases, and its committed JSON.

The rows compare brackets computed by the library, so what can be checked independently is the ordering the
mathematics imposes: the blanket pair is never looser than the labelled clone pair, which is never looser than
FMT20's clone pair (exact values inside the brackets), and FMT20's closed form bounds the FMT20 pair's exact ε
from above (it is a bound on that pair).  The figure is drawn from the JSON without recomputing anything.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from benchmarks._common import validate_row
from benchmarks.bench_blanket import DELTAS, _comparison_rows, analytic_bounds, randomizer_factories

RESULTS = Path(__file__).resolve().parent.parent / "benchmarks" / "results" / "blanket.json"


def _check_ordering(row: dict) -> None:
    assert validate_row(row) == [], row
    lo, up = row["lower"], row["upper"]
    clone, fmt20 = row["extra"]["clone_randomizer"], row["extra"]["fmt20"]
    assert 0 <= lo <= up and clone[0] <= clone[1] and fmt20[0] <= fmt20[1]
    # exact blanket ε <= exact labelled clone ε <= exact FMT20 ε: each lower end below the next upper end
    assert lo <= clone[1] and clone[0] <= fmt20[1]
    assert row["extra"]["clone_over_blanket"] == pytest.approx(clone[1] / up)
    closed = float(row["extra"]["analytic"].get("fmt20_closed_form", math.nan))
    if math.isfinite(closed):
        assert closed >= fmt20[0]


@pytest.mark.parametrize("name", ["oue_32", "krr_10", "hadamard_10", "subset_32"])
def test_rows_order_the_pairs(name):
    rand = randomizer_factories()[name](1.0)
    rows = _comparison_rows(name, rand, 100, 1, max_seconds=30.0)
    assert [r["parameters"]["delta"] for r in rows] == list(DELTAS)
    for row in rows:
        assert row["status"] == "ok", row["notes"]
        _check_ordering(row)
    # a smaller δ can only need a larger ε
    assert rows[1]["upper"] >= rows[0]["lower"]


def test_slow_blanket_pairs_are_skipped_with_their_estimate():
    rand = randomizer_factories()["hadamard_1000"](1.0)
    rows = _comparison_rows("hadamard_1000", rand, 10**6, 1, max_seconds=30.0)  # estimated ~8 min
    assert {r["status"] for r in rows} == {"skipped"}
    assert all("estimated build time" in r["notes"] for r in rows)


def test_analytic_bounds_choose_the_krr_form_for_krr():
    krr = randomizer_factories()["krr_10"](1.0)
    oue = randomizer_factories()["oue_32"](1.0)
    a_krr, a_oue = analytic_bounds("krr_10", krr, 10**4, 1e-6), analytic_bounds("oue_32", oue, 10**4, 1e-6)
    assert set(a_krr) == set(a_oue) == {"fmt20_closed_form", "bbgn19_hoeffding", "bbgn19_bennett", "gddks21_rdp"}
    # k-ary RR's own blanket mass beats the generic e^{-ε0}: BBGN19's k-ary form is tighter
    assert a_krr["bbgn19_bennett"] < a_oue["bbgn19_bennett"]
    composed = analytic_bounds("oue_32", oue, 10**4, 1e-6, rounds=64)
    assert set(composed) == {"fmt20_closed_form_kov", "gddks21_rdp"}


def test_committed_results_are_consistent():
    payload = json.loads(RESULTS.read_text(encoding="utf-8"))
    ok = [r for r in payload["rows"] if r["status"] == "ok" and r["case"].startswith(("blanket_gain_", "blanket_rounds_"))]
    assert ok
    for row in ok:
        _check_ordering(row)
    names = {r["parameters"]["name"] for r in ok}
    assert {"oue_32", "oue_1024", "olh_1024", "rappor_32", "krr_10", "krr_100", "hadamard_10", "subset_32"} <= names


def test_figure_from_committed_results(tmp_path):
    pytest.importorskip("matplotlib")
    from benchmarks.figures import blanket_vs_clones

    out = tmp_path / "blanket_vs_clones.png"
    blanket_vs_clones(out, RESULTS)
    assert out.stat().st_size > 10_000
