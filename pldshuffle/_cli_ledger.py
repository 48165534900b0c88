"""The command line's ledger: building registered mechanisms from flags, ``--compose`` and ``--spec``.

Mechanisms and their parameters come from :mod:`pldshuffle.mechanisms.registry` and the classes'
dataclass fields (:mod:`pldshuffle._cli_fields`); nothing here names a mechanism.  Errors are :class:`CLIError` (one line naming the flag, exit status 2), raised for the entry point
:mod:`pldshuffle.cli`.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import re
from typing import Any

from ._cli_fields import all_parameters, flag, parameters_of, randomizer_parameters
from ._validation import check_int
from .mechanisms.base import ShuffleMechanism
from .mechanisms.registry import cli_mechanisms

__all__ = ["CLIError", "build_mechanism", "flag", "kind_of", "ledger_from_args", "parse_flag", "single_parameters"]


class CLIError(Exception):
    """A user error: printed as one line, exit status 2."""


# ---------------------------------------------------------------------- mechanisms
def _mechanism_class(kind: str) -> type:
    entry = cli_mechanisms().get(kind)
    if entry is None:
        raise CLIError(f"unknown mechanism {kind!r}; choose one of {', '.join(cli_mechanisms())}")
    try:
        return entry.load()
    except (ImportError, AttributeError) as exc:
        raise CLIError(f"mechanism {kind!r} is not available in this installation ({exc})") from None


def _with_randomizer(parameters: dict[str, Any], field: str) -> dict[str, Any]:
    """Replace ``field=NAME`` (or a ``{"randomizer": NAME, ...}`` object from a JSON spec) and the
    randomizer's own keys (:func:`~pldshuffle._cli_fields.randomizer_parameters`) by the randomizer object."""
    from .randomizers import make_randomizer

    own_keys = (*randomizer_parameters(), "probabilities")  # a spec written by hand may name the array
    parameters = dict(parameters)
    spec = parameters.pop(field)
    if isinstance(spec, dict):
        spec = dict(spec)
        name, own = spec.pop("randomizer", None), spec
    else:
        name, own = spec, {k: parameters.pop(k) for k in own_keys if k in parameters}
    try:
        parameters[field] = make_randomizer(str(name), **own)
    except (TypeError, ValueError) as exc:
        raise CLIError(f"{flag(field)} {name}: {exc}") from None
    return parameters


def _coerce(kind: str, value: Any, where: str) -> Any:
    """A ``--compose`` / ``--spec`` value of a ``bool`` field becomes a boolean (other kinds: unchanged)."""
    return parse_flag(value, where) if kind == "bool" else value


def build_mechanism(kind: str, parameters: dict[str, Any], origin: str | None = None) -> ShuffleMechanism:
    """Construct mechanism ``kind``; errors name the flags (``origin=None``: --mechanism and its flags)
    or the parameter keys of ``origin`` (a --compose or --spec entry)."""
    cls = _mechanism_class(kind)
    for parameter in parameters_of(cls):
        if parameter.kind == "randomizer" and parameters.get(parameter.name) is not None:
            parameters = _with_randomizer(parameters, parameter.name)
        elif parameter.name in parameters:
            where = flag(parameter.name) if origin is None else f"{origin}: {parameter.name}"
            parameters = {**parameters, parameter.name: _coerce(parameter.kind, parameters[parameter.name], where)}
    fields = dataclasses.fields(cls)
    valid = tuple(f.name for f in fields)
    name = flag if origin is None else str
    where = f"--mechanism {kind}" if origin is None else f"{origin} (mechanism {kind!r})"
    unknown = sorted(set(parameters) - set(valid))
    if unknown:
        raise CLIError(
            f"{', '.join(map(name, unknown))} not valid for {where}; valid: {', '.join(map(name, valid))}"
        )
    missing = [f.name for f in fields if f.name not in parameters and f.init
               and f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING]
    if missing:
        raise CLIError(f"{', '.join(map(name, missing))} {'is' if len(missing) == 1 else 'are'} required for {where}")
    try:
        mechanism: ShuffleMechanism = cls(**parameters)
    except (TypeError, ValueError) as exc:  # the library names Python parameters: translate them for the user
        message = str(exc)
        if origin is None:
            for key in sorted(valid, key=len, reverse=True):
                message = re.sub(rf"(?<![\w-]){key}(?!\w)", flag(key), message)
        raise CLIError(f"{where}: {message}") from None
    return mechanism


def kind_of(mechanism: ShuffleMechanism) -> str:
    """The command-line kind of a mechanism (its class name if the command line cannot build it)."""
    for kind, entry in cli_mechanisms().items():
        if type(mechanism).__module__ == entry.module and type(mechanism).__name__ == entry.class_name:
            return kind
    return type(mechanism).__name__


def _parse_value(text: str) -> Any:
    """``"1000"`` -> 1000, ``"1e-3"`` -> 0.001, anything else stays a string."""
    for convert in (int, float):
        try:
            return convert(text)
        except ValueError:
            continue
    return text


def _parse_compose(spec: str) -> tuple[str, dict[str, Any], Any, Any]:
    """``KIND:KEY=VALUE,...[:count=N][:same_data=true]`` -> ``(kind, parameters, count, same_data)``."""
    parts = spec.split(":")
    same_data: Any = False
    if len(parts) == 4 or (len(parts) == 3 and parts[2].partition("=")[0].strip().replace("-", "_") == "same_data"):
        key, sep, value = parts.pop().partition("=")
        if key.strip().replace("-", "_") != "same_data" or not sep:
            raise CLIError(f"--compose {spec!r}: the last field must be same_data=true or same_data=false")
        same_data = parse_flag(value.strip(), f"--compose {spec!r}: same_data")
    if not 2 <= len(parts) <= 3 or not parts[0]:
        raise CLIError(f"--compose {spec!r}: expected KIND:KEY=VALUE,KEY=VALUE[:count=N][:same_data=true]")
    kind, body = parts[0].strip(), parts[1]
    parameters: dict[str, Any] = {}
    for item in filter(None, (x.strip() for x in body.split(","))):
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise CLIError(f"--compose {spec!r}: {item!r} is not KEY=VALUE")
        parameters[key.strip().replace("-", "_")] = _parse_value(value.strip())
    count: Any = 1
    if len(parts) == 3:
        key, sep, value = parts[2].partition("=")
        if sep and key.strip() != "count":
            raise CLIError(f"--compose {spec!r}: the third field must be count=N")
        count = _parse_value((value if sep else key).strip())
    return kind, parameters, count, same_data


def parse_flag(value: Any, where: str) -> bool:
    """A boolean (``same_data``, a ``bool`` field): ``true``/``false`` (any case) on the command line, a JSON
    boolean in a spec; else a :class:`CLIError` naming ``where``."""
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.lower() in ("true", "false"):
        return value.lower() == "true"
    raise CLIError(f"{where} must be true or false, got {value!r}")


def _read_spec(path: str) -> list[tuple[str, dict[str, Any], Any, Any, str]]:
    """``(kind, parameters, count, same_data, origin)`` of every entry of a JSON spec file."""
    try:
        with open(path, encoding="utf-8") as handle:
            data = json.load(handle)
    except OSError as exc:
        raise CLIError(f"--spec {path}: cannot read ({exc.strerror})") from None
    except json.JSONDecodeError as exc:
        raise CLIError(f"--spec {path}: invalid JSON ({exc})") from None
    entries = data.get("mechanisms") if isinstance(data, dict) else data
    if not isinstance(entries, list) or not entries:
        raise CLIError(f"--spec {path}: expected a non-empty list of {{\"mechanism\", \"parameters\", \"count\"}} objects")
    out = []
    for i, entry in enumerate(entries):
        if not isinstance(entry, dict) or "mechanism" not in entry or not isinstance(entry.get("parameters", {}), dict):
            raise CLIError(f"--spec {path}: entry {i} needs \"mechanism\" and a \"parameters\" object")
        origin = f"--spec {path} entry {i}"
        same_data = parse_flag(entry.get("same_data", False), f"{origin}: \"same_data\"")
        out.append((str(entry["mechanism"]), dict(entry.get("parameters", {})), entry.get("count", 1), same_data, origin))
    return out


def single_parameters(args: argparse.Namespace) -> dict[str, Any]:
    """Parameters given by the single-mechanism flags (only those actually set)."""
    return {name: getattr(args, name) for name in all_parameters() if getattr(args, name, None) is not None}


def ledger_from_args(args: argparse.Namespace) -> list[tuple[ShuffleMechanism, int, bool]]:
    """``(mechanism, count, same_data)`` of every entry, in order (``same_data``: the entry's rounds are one
    block on the same dataset, :meth:`pldshuffle.FourierAccountant.compose`)."""
    entries: list[tuple[str, dict[str, Any], Any, bool, str | None]] = []
    single = single_parameters(args)
    if args.mechanism is not None:
        entries.append((args.mechanism, single, args.rounds if args.rounds is not None else 1, False, None))
    elif single or args.rounds is not None:
        flags = [flag(name) for name in (*single, *(("rounds",) if args.rounds is not None else ()))]
        raise CLIError(f"{', '.join(flags)} given without --mechanism (they set its parameters)")
    entries += [(*_parse_compose(s), f"--compose {s!r}") for s in args.compose]
    if args.spec is not None:
        entries += _read_spec(args.spec)
    if not entries:
        raise CLIError("no mechanism given: use --mechanism (see --help), --compose or --spec")
    # The count is checked here so that the error names the flag that set it (compose() says "count").
    return [(build_mechanism(kind, params, origin), check_int("--rounds" if origin is None else f"{origin}: count", count, minimum=1),
             same_data)
            for kind, params, count, same_data, origin in entries]


