"""The ``pldshuffle`` command line: statements, ``--json`` schema, exit codes, calibration."""

from __future__ import annotations

import argparse
import io
import json
import os
import shutil
import subprocess
import sys

import pytest

import pldshuffle
import pldshuffle as ps
from pldshuffle import _estimate, cli
from pldshuffle._progress import ProgressReporter, choose_mode
from pldshuffle.cli import _parser, main

BINARY = ["--mechanism", "binary-rr", "--num-users", "1000", "--local-epsilon", "1"]
KHH21 = [*BINARY, "--dataset", "khh21"]


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "pldshuffle", *args], capture_output=True, text=True, timeout=300)


def test_statement_names_everything():
    proc = run("epsilon", "--mechanism", "binary-rr", "--num-users", "200", "--local-epsilon", "1", "--delta", "1e-6")
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    for text in ("binary randomized response", "n=200", "ε0=1", "worst case over all neighbouring datasets",
                 "replace-one", "adversary:", "delta: 1e-06", "certified epsilon bracket: [0.318243, 0.318243]",
                 "satisfies (0.318243, 1e-06)-DP"):
        assert text in out, text
    assert "NOT A PRIVACY GUARANTEE" not in out
    assert proc.stderr == ""


def test_json_schema_and_loud_non_guarantee():
    proc = run("epsilon", *KHH21, "--rounds", "2", "--delta", "1e-6", "--json", "--progress")
    assert proc.returncode == 0, proc.stderr
    record = json.loads(proc.stdout)
    assert set(record) >= {"mechanisms", "rounds", "target_delta", "lower", "upper", "is_guarantee", "caveats", "diagnostics"}
    (entry,) = record["mechanisms"]
    assert entry["mechanism"] == "binary-rr" and entry["count"] == 2
    assert entry["parameters"] == {"num_users": 1000, "local_epsilon": 1.0, "dataset": "khh21"}
    assert "binary randomized response" in entry["description"]
    assert record["rounds"] == 2 and record["target_delta"] == 1e-6
    assert 0 < record["lower"] <= record["upper"]
    assert record["is_guarantee"] is False and record["caveats"]
    assert "computing" in proc.stderr  # progress lines for multi-round runs with --progress
    assert all(line.startswith("pldshuffle: [") for line in proc.stderr.splitlines())


def test_no_progress_on_stderr_when_not_a_terminal():
    proc = run("epsilon", *KHH21, "--rounds", "2", "--delta", "1e-6", "--json")
    assert proc.returncode == 0 and proc.stderr == ""
    assert json.loads(proc.stdout)["rounds"] == 2


def test_quiet_wins_over_progress(capsys):
    assert main(["epsilon", *KHH21, "--rounds", "2", "--delta", "1e-6", "--progress", "--quiet"]) == 0
    assert capsys.readouterr().err == ""


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_status_line_on_a_terminal(monkeypatch, capsys):
    """On a terminal: one line redrawn with \r, cut to the terminal width, ended with a newline; stdout as before."""
    terminal = _Terminal()
    monkeypatch.setattr(sys, "stderr", terminal)
    monkeypatch.setattr(cli, "_BAR_DELAY", 0.0)
    monkeypatch.setattr(shutil, "get_terminal_size", lambda fallback=None: os.terminal_size((40, 24)))
    assert main(["epsilon", *KHH21, "--rounds", "2", "--delta", "1e-6", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["rounds"] == 2
    err = terminal.getvalue()
    assert err.startswith("\r") and err.endswith("\n") and err.count("\n") == 1
    frames = err.rstrip("\n").split("\r")[1:]
    assert frames and all(len(frame) == 39 for frame in frames)
    assert any("stage" in frame for frame in frames) and "[" in frames[-1]


def test_status_line_is_ended_on_error_and_quick_commands_print_nothing(monkeypatch):
    terminal = _Terminal()
    with pytest.raises(RuntimeError), ProgressReporter(terminal, "bar", delay=0.0) as report:
        report("a stage")
        raise RuntimeError
    assert terminal.getvalue().startswith("\rpldshuffle: ") and terminal.getvalue().endswith("\n")
    quick = _Terminal()
    with ProgressReporter(quick, "bar", delay=60.0) as report:
        report("a quick stage")
    assert quick.getvalue() == ""


def test_progress_modes():
    assert choose_mode(_Terminal(), quiet=False, lines=False) == "bar"
    assert choose_mode(io.StringIO(), quiet=False, lines=False) == "off"
    assert choose_mode(io.StringIO(), quiet=False, lines=True) == "lines"
    assert choose_mode(_Terminal(), quiet=True, lines=True) == "quiet"
    clock = iter([0.0, 1.5, 2.0]).__next__
    lines = io.StringIO()
    report = ProgressReporter(lines, "lines", clock=clock)
    report("first")
    report.warn("slow")
    report("slow")  # the warning's own stage message is not repeated
    assert lines.getvalue() == "pldshuffle: [   1.5 s] first\npldshuffle: warning: slow\n"
    off = io.StringIO()
    ProgressReporter(off, "off")("stage")
    ProgressReporter(off, "off").warn("slow")
    assert off.getvalue() == "pldshuffle: warning: slow\n"
    quiet = io.StringIO()
    ProgressReporter(quiet, "quiet").warn("slow")
    assert quiet.getvalue() == ""


@pytest.mark.parametrize("flags, expected", [((), 1), (("--progress",), 1), (("--quiet",), 0)])
def test_slow_computation_warning_is_one_line(flags, expected, monkeypatch, capsys):
    monkeypatch.setattr(_estimate, "SLOW_SECONDS", 0.0)
    assert main(["epsilon", *KHH21, "--rounds", "2", "--delta", "1e-6", *flags]) == 0
    err = capsys.readouterr().err
    assert err.count("pldshuffle: warning: this composition is estimated to take") == expected
    assert err.count("estimated") == expected and "Warning" not in err


def test_loud_line_when_not_a_guarantee(capsys):
    assert main(["epsilon", *KHH21, "--delta", "1e-6"]) == 0
    assert "!!! NOT A PRIVACY GUARANTEE" in capsys.readouterr().out


def test_bad_input_one_line_exit_2():
    proc = run("epsilon", *BINARY[:-1], "-1", "--delta", "1e-6")
    assert proc.returncode == 2
    assert proc.stdout == ""
    assert proc.stderr.count("\n") == 1 and proc.stderr.startswith("pldshuffle: error:")
    assert "--local-epsilon" in proc.stderr and "Traceback" not in proc.stderr


@pytest.mark.parametrize(
    "argv, needle",
    [
        (["epsilon", *BINARY, "--delta", "2"], "target_delta"),
        (["epsilon", *BINARY, "--delta", "0"], "argument --delta: target_delta must lie in (0, 1)"),
        (["delta", *BINARY, "--epsilon", "-1"], "argument --epsilon: target_epsilon must be a number >= 0 (inf allowed)"),
        (["calibrate", "rounds", *BINARY, "--target-epsilon", "0", "--delta", "1e-6"], "argument --target-epsilon"),
        (["epsilon", "--mechanism", "foo", "--delta", "1e-6"], "invalid choice"),
        (["epsilon", "--delta", "1e-6"], "no mechanism"),
        (["epsilon", *BINARY, "--gamma", "0.2", "--delta", "1e-6"], "gamma"),
        (["epsilon", *BINARY, "--delta", "x"], "expected a number"),
        (["epsilon", "--mechanism", "binary-rr", "--num-users", "10.5", "--local-epsilon", "1", "--delta", "1e-6"], "integer"),
        (["epsilon", "--compose", "krr:num_users=10", "--delta", "1e-6"], "domain_size"),
        (["epsilon", "--compose", "binary-rr", "--delta", "1e-6"], "KIND:KEY=VALUE"),
        (["epsilon", "--compose", "binary-rr:num_users=100,local_epsilon=1:rounds=3", "--delta", "1e-6"], "count=N"),
        (["epsilon", "--spec", "/nonexistent/spec.json", "--delta", "1e-6"], "cannot read"),
        # A count error names the flag that set it.
        (["epsilon", *BINARY, "--rounds", "0", "--delta", "1e-6"], "--rounds must be an integer >= 1, got 0"),
        (["epsilon", "--compose", "binary-rr:num_users=100,local_epsilon=1:count=0", "--delta", "1e-6"],
         "--compose 'binary-rr:num_users=100,local_epsilon=1:count=0': count must be an integer >= 1"),
        (["epsilon", *BINARY], "--delta"),
        (["calibrate", "local-epsilon", *BINARY, "--target-epsilon", "1", "--delta", "1e-6"], "do not pass --local-epsilon"),
        (["calibrate", "rounds", *BINARY, "--target-epsilon", "1e-9", "--delta", "1e-6", "--quiet"], "infeasible"),
        (["epsilon", "--mechanism", "krr", "--num-users", "100", "--gamma", "0.2", "--delta", "1e-6"],
         "--domain-size is required for --mechanism krr"),
        (["epsilon", "--mechanism", "ldp", "--num-users", "100", "--delta", "1e-6"],
         "--local-epsilon or --randomizer"),
        (["epsilon", "--mechanism", "krr", "--num-users", "100", "--domain-size", "4", "--gamma", "0.2",
          "--local-epsilon", "1", "--delta", "1e-6"], "exactly one of --gamma"),
        (["epsilon", *BINARY, "--adversary", "strong", "--delta", "1e-6"], "--adversary not valid for --mechanism binary-rr"),
        (["epsilon", "--num-users", "100", "--rounds", "2", "--delta", "1e-6"], "--num-users, --rounds given without --mechanism"),
        (["calibrate", "rounds", "--mechanism", "krr", "--num-users", "100", "--target-epsilon", "1", "--delta", "1e-6"],
         "--domain-size is required for --mechanism krr"),
        (["calibrate", "num-users", "--num-users", "100", "--target-epsilon", "1", "--delta", "1e-6"],
         "--mechanism is required for calibrate"),
        (["calibrate", "rounds", *BINARY, "--rounds", "3", "--target-epsilon", "1", "--delta", "1e-6"],
         "do not pass --rounds"),
        ([], ""),
    ],
)
def test_exit_code_2(argv, needle, capsys):
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert needle in err
    if argv:
        assert err.startswith("pldshuffle: error:") and err.count("\n") == 1


def test_compose_and_spec_round_trip(tmp_path, capsys):
    argv = ["delta", "--compose", "binary-rr:num_users=1000,local_epsilon=1,dataset=khh21:count=2",
            "--compose", "binary-rr:num-users=500,local-epsilon=0.5,dataset=khh21:1", "--epsilon", "0.3", "--json", "--quiet"]
    assert main(argv) == 0
    first = json.loads(capsys.readouterr().out)
    assert [m["count"] for m in first["mechanisms"]] == [2, 1] and first["rounds"] == 3
    assert first["target_epsilon"] == 0.3 and first["quantity"] == "delta" and 0 <= first["lower"] <= first["upper"]
    spec = tmp_path / "spec.json"
    spec.write_text(json.dumps(first))
    assert main(["delta", "--spec", str(spec), "--epsilon", "0.3", "--json", "--quiet"]) == 0
    second = json.loads(capsys.readouterr().out)
    assert second["upper"] == first["upper"] and second["mechanisms"] == first["mechanisms"]


def test_calibrate_subprocess():
    proc = run("calibrate", "local-epsilon", "--mechanism", "binary-rr", "--num-users", "1000", "--dataset", "khh21",
               "--target-epsilon", "0.5", "--delta", "1e-6", "--json", "--progress")
    assert proc.returncode == 0, proc.stderr
    record = json.loads(proc.stdout)
    cal = record["calibration"]
    assert cal["parameter"] == "local_epsilon" and cal["target_epsilon"] == 0.5
    passing, failing = cal["bracket"]
    assert passing == cal["value"] < failing <= passing * 1.002
    assert record["upper"] <= 0.5
    assert record["mechanisms"][0]["parameters"]["local_epsilon"] == cal["value"]
    assert "local_epsilon=" in proc.stderr  # progress per probe


def test_calibrate_rounds_statement(capsys):
    assert main(["calibrate", "rounds", *KHH21, "--target-epsilon", "0.2", "--delta", "1e-6", "--quiet"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("Calibrated rounds = 2: certified epsilon ") and "rounds = 3 does not" in out
    assert "total rounds composed: 2" in out


@pytest.mark.parametrize("argv", [["--help"], ["epsilon", "--help"], ["delta", "--help"], ["calibrate", "--help"]])
def test_help_has_examples(argv, capsys):
    with pytest.raises(SystemExit) as info:
        main(argv)
    assert info.value.code == 0
    out = capsys.readouterr().out
    assert "examples" in out and "binary-rr" in out


def test_version(capsys):
    with pytest.raises(SystemExit) as info:
        main(["--version"])
    assert info.value.code == 0
    assert capsys.readouterr().out.strip() == f"pldshuffle {pldshuffle.__version__}"


SMALL = ["--num-users", "50", "--local-epsilon", "1"]
#: For every subcommand, invocations that together use each flag its --help shows (checked below).
FLAG_RUNS = {
    "epsilon": [
        ["--mechanism", "binary-rr", *SMALL, "--dataset", "khh21", "--rounds", "2", "--delta", "1e-3", "--json",
         "--progress"],
        ["--mechanism", "krr", "--num-users", "50", "--domain-size", "3", "--gamma", "0.5", "--adversary", "strong",
         "--delta", "1e-3", "--quiet"],
        ["--mechanism", "ldp", *SMALL, "--reduction", "fmt23", "--delta", "1e-3"],
        ["--compose", "binary-rr:num_users=50,local_epsilon=1,dataset=khh21:count=2", "--spec", "SPEC", "--delta", "1e-3"],
        ["--mechanism", "ldp", "--num-users", "200", "--randomizer", "subset", "--domain-size", "6", "--subset-size", "2",
         "--local-epsilon", "1", "--participation", "0.5", "--delta", "1e-3"],
        ["--mechanism", "ldp", "--num-users", "200", "--randomizer", "local-hashing", "--domain-size", "20",
         "--hash-range", "4", "--local-epsilon", "1", "--delta", "1e-3"],
        ["--mechanism", "ldp", "--num-users", "30", "--randomizer", "finite", "--matrix", "MATRIX", "--delta", "1e-3"],
        ["--mechanism", "ldp", "--num-users", "30", "--randomizer", "laplace", "--local-epsilon", "1", "--input-min", "-1",
         "--input-max", "2", "--delta", "1e-3"],
        ["--mechanism", "random-allocation", "--num-steps", "4", "--num-selected", "1", "--noise-multiplier", "3",
         "--epochs", "2", "--delta", "1e-3"],
    ],
    "delta": [
        ["--mechanism", "binary-rr", *SMALL, "--dataset", "khh21", "--rounds", "2", "--epsilon", "0.5", "--json",
         "--progress"],
        ["--mechanism", "krr", "--num-users", "50", "--domain-size", "3", "--gamma", "0.5", "--adversary", "weak",
         "--epsilon", "0.5", "--quiet"],
        ["--mechanism", "ldp", *SMALL, "--reduction", "fmt20", "--epsilon", "0.5"],
        ["--compose", "binary-rr:num_users=50,local_epsilon=1,dataset=khh21", "--spec", "SPEC", "--epsilon", "0.5"],
        ["--mechanism", "ldp", "--num-users", "200", "--randomizer", "subset", "--domain-size", "6", "--subset-size", "2",
         "--local-epsilon", "1", "--participation", "0.5", "--epsilon", "0.5"],
        ["--mechanism", "ldp", "--num-users", "200", "--randomizer", "local-hashing", "--domain-size", "20",
         "--hash-range", "4", "--local-epsilon", "1", "--epsilon", "0.5"],
        ["--mechanism", "ldp", "--num-users", "30", "--randomizer", "finite", "--matrix", "MATRIX", "--epsilon", "0.5"],
        ["--mechanism", "ldp", "--num-users", "30", "--randomizer", "laplace", "--local-epsilon", "1", "--input-min", "-1",
         "--input-max", "2", "--epsilon", "0.5"],
        ["--mechanism", "random-allocation", "--num-steps", "4", "--num-selected", "1", "--noise-multiplier", "3",
         "--epochs", "2", "--epsilon", "0.5"],
    ],
    "calibrate": [
        ["rounds", "--mechanism", "binary-rr", *SMALL, "--dataset", "khh21", "--target-epsilon", "2", "--delta", "1e-3",
         "--json", "--quiet"],
        ["local-epsilon", "--mechanism", "binary-rr", "--num-users", "50", "--dataset", "khh21", "--rounds", "2",
         "--target-epsilon", "1", "--delta", "1e-3", "--quiet"],
        ["num-users", "--mechanism", "ldp", "--local-epsilon", "1", "--reduction", "fmt23", "--target-epsilon", "1",
         "--delta", "1e-3", "--quiet"],
        ["rounds", "--mechanism", "krr", "--num-users", "50", "--domain-size", "3", "--gamma", "0.5",
         "--adversary", "strong", "--target-epsilon", "2", "--delta", "1e-3", "--progress"],
        ["rounds", "--mechanism", "ldp", "--num-users", "200", "--randomizer", "subset", "--domain-size", "6",
         "--subset-size", "2", "--local-epsilon", "1", "--participation", "0.5", "--target-epsilon", "2", "--delta", "1e-3"],
        ["rounds", "--mechanism", "ldp", "--num-users", "200", "--randomizer", "local-hashing", "--domain-size", "20",
         "--hash-range", "4", "--local-epsilon", "1", "--target-epsilon", "2", "--delta", "1e-3"],
        ["rounds", "--mechanism", "ldp", "--num-users", "30", "--randomizer", "finite", "--matrix", "MATRIX",
         "--target-epsilon", "2", "--delta", "1e-3"],
        ["rounds", "--mechanism", "ldp", "--num-users", "30", "--randomizer", "laplace", "--local-epsilon", "1",
         "--input-min", "-1", "--input-max", "2", "--target-epsilon", "2", "--delta", "1e-3"],
        ["rounds", "--mechanism", "random-allocation", "--num-steps", "4", "--num-selected", "1", "--noise-multiplier", "3",
         "--target-epsilon", "0.8", "--delta", "1e-3", "--quiet"],
        ["local-epsilon", "--mechanism", "binary-rr", "--num-users", "50", "--dataset", "khh21", "--epochs", "2",
         "--target-epsilon", "1", "--delta", "1e-3", "--quiet"],
    ],
}


def _subparsers() -> dict[str, argparse.ArgumentParser]:
    (action,) = [a for a in _parser()._actions if isinstance(a, argparse._SubParsersAction)]
    return dict(action.choices)


@pytest.mark.parametrize("command", sorted(FLAG_RUNS))
def test_every_shown_flag_is_exercised(command):
    shown = {opt for a in _subparsers()[command]._actions for opt in a.option_strings if opt.startswith("--")}
    used = {word for argv in FLAG_RUNS[command] for word in argv if word.startswith("--")}
    assert used == shown - {"--help"}


@pytest.mark.parametrize("command, index", [(c, i) for c, runs in sorted(FLAG_RUNS.items()) for i in range(len(runs))])
def test_every_shown_flag_works(command, index, tmp_path, capsys):
    spec = tmp_path / "spec.json"
    spec.write_text(json.dumps([{"mechanism": "binary-rr", "parameters": {"num_users": 40, "local_epsilon": 0.5,
                                                                          "dataset": "khh21"}}]))
    matrix = tmp_path / "matrix.json"
    matrix.write_text("[[0.6, 0.3, 0.1], [0.3, 0.6, 0.1], [0.2, 0.2, 0.6]]")
    files = {"SPEC": str(spec), "MATRIX": str(matrix)}
    argv = [command, *(files.get(word, word) for word in FLAG_RUNS[command][index])]
    code = main(argv)
    out, err = capsys.readouterr()
    assert code == 0, err
    if "--json" in argv:
        assert json.loads(out)["upper"] is not None
    else:
        assert "Privacy statement" in out
    if "--quiet" in argv:
        assert err == ""
    if "--progress" in argv:
        assert err.startswith("pldshuffle: [")


def test_infinite_epsilon_statement_explains(capsys):
    argv = ["epsilon", "--mechanism", "krr", "--num-users", "50", "--domain-size", "4", "--gamma", "0.25",
            "--adversary", "strong", "--delta", "1e-12", "--quiet"]
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert "certified epsilon bracket: [inf, inf]" in out and "note: no finite epsilon is certified" in out


def test_delta_at_infinite_epsilon_is_the_infinity_mass(capsys):
    # --epsilon inf asks for δ(∞), the mass at infinite privacy loss: the API's bracket, in JSON as "inf".
    import json
    import math

    mech = ["--mechanism", "krr", "--num-users", "30", "--domain-size", "4", "--gamma", "0.3", "--adversary", "strong"]
    assert main(["delta", *mech, "--rounds", "3", "--epsilon", "inf", "--json", "--quiet"]) == 0
    out = json.loads(capsys.readouterr().out)
    expected = ps.FourierAccountant().compose(ps.ShuffledKRR(30, 4, gamma=0.3, adversary="strong"), 3).get_delta_bounds(math.inf)
    assert out["target_epsilon"] == "inf" and (out["lower"], out["upper"]) == (expected.lower, expected.upper) and out["upper"] > 0


def _main_out(argv: list[str], capsys) -> tuple[int, str, str]:
    """Run the CLI in this process (the subprocess tests above cover a real process's streams)."""
    code = main(argv)
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_ldp_randomizer_flags(capsys):
    code, out, err = _main_out(["epsilon", "--mechanism", "ldp", "--randomizer", "krr", "--domain-size", "4",
                                "--num-users", "10000", "--local-epsilon", "4", "--reduction", "randomizer",
                                "--delta", "1e-6", "--json", "--quiet"], capsys)
    assert code == 0, err
    record = json.loads(out)
    assert record["is_guarantee"] and 0.410809 - 1e-6 <= record["upper"] <= 0.410816 + 1e-6
    (entry,) = record["mechanisms"]
    assert entry["parameters"]["reduction"] == "randomizer"
    assert entry["parameters"]["randomizer"] == {"randomizer": "krr", "domain_size": 4, "local_epsilon": 4.0}
    code, out, _ = _main_out(["epsilon", "--mechanism", "ldp", "--randomizer", "oue", "--domain-size", "1024",
                              "--num-users", "1000", "--local-epsilon", "1", "--delta", "1e-6", "--quiet"], capsys)
    assert code == 0 and "optimized unary encoding, d=1024" in out


def test_ldp_randomizer_spec_round_trip_and_errors(tmp_path, capsys):
    matrix = tmp_path / "m.json"
    matrix.write_text("[[0.7, 0.2, 0.1], [0.5, 0.4, 0.1], [0.1, 0.1, 0.8]]")
    code, first, err = _main_out(["epsilon", "--mechanism", "ldp", "--randomizer", "finite", "--matrix", str(matrix),
                                  "--num-users", "500", "--delta", "1e-6", "--json", "--quiet"], capsys)
    assert code == 0, err
    spec = tmp_path / "spec.json"
    spec.write_text(first)
    code, again, err = _main_out(["epsilon", "--spec", str(spec), "--delta", "1e-6", "--json", "--quiet"], capsys)
    assert code == 0, err
    assert json.loads(again)["upper"] == json.loads(first)["upper"]
    code, _, err = _main_out(["epsilon", "--mechanism", "ldp", "--randomizer", "subset", "--domain-size", "10",
                              "--num-users", "1000", "--local-epsilon", "1", "--delta", "1e-6"], capsys)
    assert code == 2 and "subset_size" in err and "Traceback" not in err
    code, _, err = _main_out(["epsilon", "--mechanism", "ldp", "--randomizer", "nope", "--num-users", "1000",
                              "--delta", "1e-6"], capsys)
    assert code == 2 and "randomizer must be one of" in err


def test_ldp_wang24_is_loudly_not_a_guarantee(capsys):
    with pytest.warns(UserWarning, match="wang24"):
        code, out, err = _main_out(["epsilon", "--mechanism", "ldp", "--randomizer", "krr", "--domain-size", "3",
                                    "--num-users", "1000", "--local-epsilon", "6", "--reduction", "wang24",
                                    "--delta", "1e-6", "--quiet"], capsys)
    assert code == 0, err
    assert "NOT A PRIVACY GUARANTEE" in out and "REPRODUCTION ONLY" in out
