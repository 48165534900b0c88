"""The ``pldshuffle`` command line: certified ε / δ of shuffle-model protocols, and calibration.

Run ``pldshuffle --help`` (or ``python -m pldshuffle --help``) for usage and examples.  Every
subcommand prints a privacy statement in words, or with ``--json`` one JSON object whose schema is
documented in :func:`main`.  Progress goes to stderr: a self-overwriting status line on a terminal,
nothing when stderr is not a terminal unless ``--progress`` (one line per stage), nothing with
``--quiet``.  Errors print one line ``pldshuffle: error: ...`` on stderr and exit with
status 2; no traceback is shown for bad input.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
import warnings
from collections.abc import Callable, Iterator, Sequence
from functools import partial
from typing import Any, NoReturn

from . import __version__
from ._validation import check_delta, check_epsilon, check_positive_finite
from .accountant import FourierAccountant
from .mechanisms.base import ShuffleMechanism
from ._cli_fields import Parameter, all_parameters, flag, mechanism_help, users_of
from ._cli_ledger import CLIError, build_mechanism, ledger_from_args, parse_flag, single_parameters
from .mechanisms.registry import cli_mechanisms
from ._cli_output import record, statement
from ._progress import ProgressReporter, choose_mode
from .results import DeltaBounds, EpsilonBounds, SlowComputationWarning, json_safe

__all__ = ["main"]

_EXIT_USAGE = 2
#: Seconds before the status line appears on a terminal: quick commands print nothing.
_BAR_DELAY = 1.0

_DESCRIPTION = """\
Certified differential-privacy bounds for the shuffle model.

Each of n users randomises its value locally (epsilon0-LDP) and the reports are shuffled.
pldshuffle computes a certified bracket [lower, upper] on the epsilon (or delta) of the
shuffled protocol, composed over rounds; `upper` is the guarantee you can state.

Neighbouring datasets differ in the value of one user (replace-one) for the shuffle mechanisms;
random-allocation (DP-SGD with shuffled batches) is for add/remove of one example, and a
composition may not mix the two. The adversary and the neighbouring pair analysed are named in
each statement.

Subcommands:
  epsilon     certified epsilon at a given delta
  delta       certified delta at a given epsilon
  calibrate   largest local epsilon / smallest number of users / largest number of rounds
              that meets a target (epsilon, delta)

Run `pldshuffle SUBCOMMAND --help` for the options and examples of each.

quick examples:
  pldshuffle epsilon --mechanism binary-rr --num-users 1000 --local-epsilon 1 --delta 1e-6
  pldshuffle delta --mechanism krr --num-users 1000 --domain-size 4 --gamma 0.25 --epsilon 1
  pldshuffle calibrate local-epsilon --mechanism binary-rr --num-users 1000 \\
      --target-epsilon 0.5 --delta 1e-6
"""

#: How several mechanisms are composed (the mechanisms' own list is generated: _cli_fields.mechanism_help).
_COMPOSITION_HELP = """\
heterogeneous composition:
  --compose KIND:KEY=VALUE,KEY=VALUE[:count=N][:same_data=true]
      (repeatable; count defaults to 1)
      e.g. --compose binary-rr:num_users=1000,local_epsilon=1:count=10
           --compose krr:num_users=1000,domain_size=4,gamma=0.25,adversary=strong:count=5
      KEYs are the Python parameter names (the flags above without "--", with "_").
      same_data=true: the entry's rounds all see the SAME dataset (one block, tighter;
      valid only then); by default the data may change between rounds.  Each entry is its
      own block: data may change between entries.
  --spec FILE.json  a JSON list of {"mechanism": KIND, "parameters": {...}, "count": N}
      (optionally "same_data": true; or an object with such a list under "mechanisms",
      e.g. an earlier --json output).
  All of --mechanism (with --rounds), --compose and --spec may be combined.
"""

_EXAMPLES = {
    "epsilon": """\
examples:
  pldshuffle epsilon --mechanism binary-rr --num-users 1000 --local-epsilon 1 --delta 1e-6
  pldshuffle epsilon --mechanism random-allocation --num-steps 10000 --noise-multiplier 1 \\
      --epochs 10 --delta 1e-6
  pldshuffle epsilon --mechanism krr --num-users 1000 --domain-size 4 --gamma 0.25 \\
      --adversary strong --rounds 10 --delta 1e-6 --json
  pldshuffle epsilon --compose binary-rr:num_users=1000,local_epsilon=1:count=4 \\
      --compose krr:num_users=1000,domain_size=4,gamma=0.25:count=2 --delta 1e-6
  pldshuffle epsilon --mechanism ldp --randomizer oue --domain-size 1024 \\
      --num-users 100000 --local-epsilon 2 --delta 1e-6
  pldshuffle epsilon --mechanism ldp --randomizer oue --domain-size 1024 \\
      --num-users 100000 --local-epsilon 2 --participation 0.5 --reduction blanket --delta 1e-6
""",
    "delta": """\
examples:
  pldshuffle delta --mechanism binary-rr --num-users 1000 --local-epsilon 1 --epsilon 0.2
  pldshuffle delta --mechanism binary-rr --num-users 1000 --local-epsilon 1 --rounds 4 \\
      --epsilon 0.5 --json
""",
    "calibrate": """\
The searched parameter's own flag is not given (e.g. no --local-epsilon for local-epsilon).
The answer is verified by a final accountant call and printed with its certified bracket.

examples:
  pldshuffle calibrate local-epsilon --mechanism binary-rr --num-users 1000 \\
      --target-epsilon 0.5 --delta 1e-6
  pldshuffle calibrate num-users --mechanism binary-rr --local-epsilon 1 \\
      --dataset khh21 --target-epsilon 0.2 --delta 1e-6
  pldshuffle calibrate rounds --mechanism binary-rr --num-users 1000 --local-epsilon 1 \\
      --target-epsilon 0.4 --delta 1e-6
""",
}


class _Parser(argparse.ArgumentParser):
    """Argument parser whose errors are one line on stderr (exit 2) instead of usage + message."""

    def error(self, message: str) -> NoReturn:
        raise CLIError(f"{message} (see `{self.prog} --help`)")


@contextlib.contextmanager
def _reporting(args: argparse.Namespace) -> Iterator[ProgressReporter]:
    """The progress sink of a command; :class:`SlowComputationWarning` is printed through it as one line."""
    reporter = ProgressReporter(sys.stderr, choose_mode(sys.stderr, quiet=args.quiet, lines=args.progress), delay=_BAR_DELAY)
    with reporter, warnings.catch_warnings():
        shown = warnings.showwarning

        def show(message: Warning | str, category: type[Warning], *rest: Any, **options: Any) -> None:
            if issubclass(category, SlowComputationWarning):
                reporter.warn(str(message))
            else:
                shown(message, category, *rest, **options)

        warnings.simplefilter("always", SlowComputationWarning)
        warnings.showwarning = show
        yield reporter


# ---------------------------------------------------------------------- subcommands
def _run_query(args: argparse.Namespace, report: ProgressReporter) -> int:
    ledger = ledger_from_args(args)
    rounds = sum(count for _, count, _ in ledger)
    # Stage messages for every query: a single round of a large mechanism takes seconds too (2RR at 1e9
    # users ~6 s, kRR weak at 1e6 users ~12 s); the bar shows only after a second, so quick ones print nothing.
    accountant = FourierAccountant(progress=report)
    for mechanism, count, same_data in ledger:
        accountant.compose(mechanism, count, same_data=same_data)
    report(f"computing {rounds} composed rounds…" if rounds > 1 else "computing one round…")
    bounds: EpsilonBounds | DeltaBounds
    if args.command == "epsilon":
        value, bounds = args.delta, accountant.get_epsilon_bounds(args.delta)
    else:
        value, bounds = args.epsilon, accountant.get_delta_bounds(args.epsilon)
    report.close()  # the status line ends before the answer goes to the same terminal
    _emit(args, accountant.entries, accountant.rounds, args.command, value, bounds, extra=None)
    return 0


def _emit(
    args: argparse.Namespace,
    ledger: Sequence[tuple[ShuffleMechanism, int, bool]],
    rounds: int,
    query: str,
    value: float,
    bounds: EpsilonBounds | DeltaBounds,
    extra: dict[str, Any] | None,
) -> None:
    """Print the JSON record or the statement (preceded by the calibration line for ``calibrate``)."""
    if args.json:
        entry = record(ledger, rounds, bounds)
        if extra:
            entry["calibration"] = extra
        print(json.dumps(json_safe(entry), indent=2))
        return
    if extra:
        failing = extra["bracket"][1]
        neighbour = (
            "the search limit itself passed; larger values may pass too"
            if failing is None
            else f"{extra['parameter']} = {failing:.6g} does not"
        )
        print(
            f"Calibrated {extra['parameter']} = {extra['value']:.6g}: certified epsilon {bounds.upper:.6g} <= "
            f"target {extra['target_epsilon']:g} at delta {value:g} ({neighbour})."
        )
    print(statement(ledger, rounds, query, value, bounds))


def _run_calibrate(args: argparse.Namespace, report: ProgressReporter) -> int:
    from .calibrate import calibrate_local_epsilon, find_max_rounds, find_min_users

    if args.mechanism is None:
        raise CLIError("--mechanism is required for calibrate (one mechanism kind; --compose/--spec are not supported here)")
    fixed = single_parameters(args)
    target = {"target_epsilon": args.target_epsilon, "target_delta": args.delta, "progress": report}
    rounds = args.rounds if args.rounds is not None else 1
    conflicting = {"local-epsilon": ("local_epsilon",), "num-users": ("num_users",), "rounds": ("rounds",)}
    given = [name for name in conflicting[args.parameter] if getattr(args, name) is not None]
    if given:
        flags = ", ".join(flag(g) for g in given)
        raise CLIError(f"calibrate {args.parameter} searches that parameter: do not pass {flags}")
    if args.parameter == "local-epsilon":
        result = calibrate_local_epsilon(lambda e: build_mechanism(args.mechanism, {**fixed, "local_epsilon": e}), rounds=rounds, **target)
    elif args.parameter == "num-users":
        result = find_min_users(lambda n: build_mechanism(args.mechanism, {**fixed, "num_users": n}), rounds=rounds, **target)
    else:
        result = find_max_rounds(build_mechanism(args.mechanism, fixed), **target)
    record = result.to_dict()
    extra = {key: record[key] for key in ("parameter", "value", "bracket", "target_epsilon", "target_delta")}
    report.close()
    _emit(args, ((result.mechanism, result.rounds, False),), result.rounds, "epsilon", args.delta, result.bounds, extra)
    return 0


# ---------------------------------------------------------------------- parser
def _number(text: str) -> float:
    """A float (range checks happen in the library, with messages naming the parameter)."""
    try:
        return float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None


def _checked(check: Callable[[float], float]) -> Callable[[str], float]:
    """An argparse type: a number passed through a library range check, so that a bad value is reported
    with its flag (``argument --delta: target_delta must lie in (0, 1), got 2.0``)."""

    def convert(text: str) -> float:
        try:
            return check(_number(text))
        except ValueError as exc:
            raise argparse.ArgumentTypeError(str(exc)) from None

    return convert


def _integer(text: str) -> int:
    """Integers, also written as ``1e4``."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer, got {text!r}") from None
    if not value.is_integer():
        raise argparse.ArgumentTypeError(f"expected an integer, got {text!r}")
    return int(value)


def _boolean(text: str) -> bool:
    """``true`` / ``false`` (any case), as ``same_data=`` of ``--compose``."""
    try:
        return parse_flag(text, "the value")
    except CLIError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


#: How a parameter's text is read, by its kind (choices, words and names are checked by the mechanism).
_READERS: dict[str, Callable[[str], Any]] = {"int": _integer, "float": _number, "bool": _boolean}


def _add_parameter(group: argparse._ArgumentGroup, parameter: Parameter) -> None:
    """One flag per parameter of the registered mechanisms (and their randomizers), with its users."""
    users = ", ".join(users_of(parameter.name))
    shown = f" ({' | '.join(parameter.choices)})" if parameter.choices else ""
    metavar = {"randomizer": "NAME", "file": "FILE"}.get(parameter.kind, parameter.name.upper())
    group.add_argument(flag(parameter.name), dest=parameter.name, type=_READERS.get(parameter.kind, str), metavar=metavar,
                       help=f"for {users}{shown}")


def _add_mechanism_options(parser: argparse.ArgumentParser, *, compose: bool) -> None:
    group = parser.add_argument_group("mechanism")
    group.add_argument("--mechanism", choices=tuple(cli_mechanisms()), help="mechanism kind (see the list below)")
    for parameter in all_parameters().values():
        _add_parameter(group, parameter)
    group.add_argument("--rounds", "--epochs", dest="rounds", type=_integer, metavar="R",
                       help="rounds of --mechanism (epochs of random-allocation; default 1)")
    if compose:
        group.add_argument("--compose", action="append", default=[], metavar="SPEC",
                           help="add KIND:KEY=VALUE,...[:count=N] to the composition (repeatable)")
        group.add_argument("--spec", metavar="FILE.json", help="add the mechanisms of a JSON spec file")
    else:
        parser.set_defaults(compose=[], spec=None)


def _add_output_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--json", action="store_true", help="print one JSON object instead of the statement")
    parser.add_argument("--quiet", action="store_true", help="nothing on stderr but errors (wins over --progress)")
    parser.add_argument("--progress", action="store_true",
                        help="one progress line per stage on stderr, also when it is not a terminal (for logs); "
                        "by default a status line is shown on a terminal only")


def _parser() -> argparse.ArgumentParser:
    formatter = argparse.RawDescriptionHelpFormatter
    help_text = mechanism_help() + "\n" + _COMPOSITION_HELP
    parser = _Parser(prog="pldshuffle", description=_DESCRIPTION, epilog=help_text, formatter_class=formatter)
    parser.add_argument("--version", action="version", version=f"pldshuffle {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="SUBCOMMAND", parser_class=_Parser)

    eps = sub.add_parser("epsilon", help="certified epsilon at a given delta", formatter_class=formatter,
                         description="Certified bracket on epsilon at a given delta.",
                         epilog=help_text + "\n" + _EXAMPLES["epsilon"])
    eps.add_argument("--delta", type=_checked(check_delta), required=True, help="target delta in (0, 1)")
    _add_mechanism_options(eps, compose=True)
    _add_output_options(eps)

    dlt = sub.add_parser("delta", help="certified delta at a given epsilon", formatter_class=formatter,
                         description="Certified bracket on delta at a given epsilon.",
                         epilog=help_text + "\n" + _EXAMPLES["delta"])
    dlt.add_argument("--epsilon", type=_checked(partial(check_epsilon, allow_inf=True)), required=True,
                     help="target epsilon (>= 0; inf: the mass at infinite privacy loss)")
    _add_mechanism_options(dlt, compose=True)
    _add_output_options(dlt)

    cal = sub.add_parser("calibrate", help="largest epsilon0 / fewest users / most rounds for a target",
                         formatter_class=formatter,
                         description="Search the largest local epsilon, the smallest number of users or the "
                         "largest number of rounds whose certified epsilon meets --target-epsilon at --delta.",
                         epilog=mechanism_help() + "\n" + _EXAMPLES["calibrate"])
    cal.add_argument("parameter", choices=("local-epsilon", "num-users", "rounds"), help="the parameter to search")
    cal.add_argument("--target-epsilon", dest="target_epsilon", type=_checked(partial(check_positive_finite, "target_epsilon")),
                     required=True, help="target epsilon (> 0)")
    cal.add_argument("--delta", type=_checked(check_delta), required=True, help="target delta in (0, 1)")
    _add_mechanism_options(cal, compose=False)
    _add_output_options(cal)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; return the exit status (0 success, 2 bad input).

    With ``--json`` the output is one object::

        {"mechanisms": [{"mechanism": kind, "description": describe(), "parameters": {...}, "count": N}, ...],
         "rounds": total rounds, "neighbouring_relation": "replace-one" | "add-remove",
         ...the keys of EpsilonBounds.to_dict() (subcommands epsilon, calibrate) or DeltaBounds.to_dict()
         (delta): "quantity": "epsilon" | "delta", "lower", "upper", "target_delta" | "target_epsilon",
         "is_guarantee", "caveats": [str, ...], "diagnostics": {...} (and "relative_gap" for epsilon),
         "calibration": {"parameter", "value", "bracket": [passing, failing], "target_epsilon",
                         "target_delta"}  (calibrate only)}

    Non-finite numbers are written as the strings ``"inf"``, ``"-inf"``, ``"nan"``.
    """
    parser = _parser()
    try:
        args = parser.parse_args(argv)
        if args.command is None:
            parser.print_help()
            return _EXIT_USAGE
        with _reporting(args) as report:
            return (_run_calibrate if args.command == "calibrate" else _run_query)(args, report)
    except (CLIError, ValueError, TypeError, ArithmeticError, MemoryError) as exc:
        print(f"pldshuffle: error: {exc}", file=sys.stderr)
        return _EXIT_USAGE
    except KeyboardInterrupt:
        print("pldshuffle: interrupted", file=sys.stderr)
        return 130
