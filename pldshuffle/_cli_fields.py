"""The command line's parameters, read from the mechanisms' dataclass fields.

Every registered mechanism (:mod:`pldshuffle.mechanisms.registry`) is a dataclass; each of its init
fields whose type the command line can express becomes a parameter: a flag ``--field-name`` for
``--mechanism``, a key ``field_name=VALUE`` for ``--compose`` and a key of a ``--spec`` entry.  What a
field's type means here:

* ``int``, ``float``, ``str``, ``bool`` (optionally ``... | None``): a number, a word, ``true``/``false``;
* ``Literal["a", "b"]``: one of the listed words (the mechanism checks the value; help lists them);
* :class:`~pldshuffle.randomizers.Randomizer`: a randomizer *name* (``--randomizer oue``) whose own
  parameters are further flags, read from the randomizer classes' fields in the same way (the array
  of a ``Finite`` randomizer is given as ``--matrix FILE``);
* anything else (a pair object, say): not a command-line parameter; the mechanism is then available
  from Python only for that field.

The help of a parameter is the first sentence of its entry in the class docstring's numpy-style
*Parameters* section.  Nothing here is specific to one mechanism.
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
import re
import textwrap
import types
import typing
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

from .mechanisms.registry import cli_mechanisms
from .randomizers import RANDOMIZERS, Randomizer

__all__ = [
    "Parameter",
    "RANDOMIZER_FILE_KEY",
    "all_parameters",
    "flag",
    "mechanism_help",
    "parameters_of",
    "randomizer_parameters",
    "users_of",
]

#: A finite randomizer's matrix is given under this key (a file name or a nested list), not as an array.
RANDOMIZER_FILE_KEY = "matrix"

Kind = Literal["int", "float", "str", "bool", "choice", "randomizer", "file"]


@dataclass(frozen=True)
class Parameter:
    """One command-line parameter of a mechanism (or of a randomizer)."""

    name: str  # the Python field name; its flag is flag(name)
    kind: Kind
    required: bool
    default: Any = None
    choices: tuple[str, ...] = ()
    help: str = ""


def flag(name: str) -> str:
    """Command-line flag of a parameter: ``local_epsilon`` -> ``--local-epsilon``."""
    return "--" + name.replace("_", "-")


def _kind(annotation: Any) -> tuple[Kind, tuple[str, ...]] | None:
    """What a (resolved) field type is on the command line, with its choices; ``None``: not expressible."""
    arguments = [a for a in typing.get_args(annotation) if a is not type(None)]
    if typing.get_origin(annotation) in (typing.Union, types.UnionType):
        literal = [c for a in arguments if typing.get_origin(a) is Literal for c in typing.get_args(a)]
        if literal and len(literal) == sum(len(typing.get_args(a)) for a in arguments):
            return "choice", tuple(str(c) for c in literal)  # a union of Literals (e.g. a sentinel default)
        if len(arguments) != 1:
            return ("float", ()) if set(arguments) == {int, float} else None
        annotation = arguments[0]
    if typing.get_origin(annotation) is Literal:
        return "choice", tuple(str(c) for c in typing.get_args(annotation))
    simple: dict[Any, Kind] = {bool: "bool", int: "int", float: "float", str: "str"}
    if annotation in simple:
        return simple[annotation], ()
    if isinstance(annotation, type) and issubclass(annotation, Randomizer):
        return "randomizer", tuple(RANDOMIZERS)
    return None


def docstring_parameters(cls: type) -> dict[str, str]:
    """``name -> first sentence`` of each entry of the numpy-style *Parameters* section of ``cls``."""
    doc = textwrap.dedent("\n".join((cls.__doc__ or "").splitlines()[1:]))
    section = re.search(r"^Parameters\n-+\n(.*?)(?:^\S[^\n]*\n-+\n|\Z)", doc, flags=re.S | re.M)
    out: dict[str, str] = {}
    if section is None:
        return out
    for name, body in re.findall(r"^(\w+)\s*:[^\n]*\n((?:[ \t]+[^\n]*\n?|\n)*)", section.group(1), flags=re.M):
        out[name] = _first_sentence(_plain(" ".join(body.split())))
    return out


def _plain(text: str) -> str:
    """reStructuredText literals and roles as plain text: ````n``` -> ``n``."""
    return re.sub(r"``(.*?)``|:\w+:`~?(.*?)`", lambda m: m.group(1) or m.group(2), text)


def _first_sentence(text: str) -> str:
    """Up to the first ``.`` or ``;`` followed by a space outside brackets (without a final ``;``).  Any
    closing bracket closes any opening one: intervals such as ``(0, 1]`` are balanced."""
    depth = 0
    for i, char in enumerate(text):
        depth = max(0, depth + (char in "([{") - (char in ")]}"))
        if depth == 0 and char in ".;" and text[i + 1 : i + 2] in (" ", ""):
            return text[: i + (char == ".")]
    return text


@functools.cache
def parameters_of(cls: type) -> tuple[Parameter, ...]:
    """The command-line parameters of a dataclass ``cls``, in field order (see the module docstring)."""
    hints = typing.get_type_hints(cls)
    helps = docstring_parameters(cls)
    out = []
    for field in dataclasses.fields(cls):
        kind = _kind(hints.get(field.name)) if field.init else None
        if kind is None:
            continue
        missing = field.default is dataclasses.MISSING and field.default_factory is dataclasses.MISSING
        default = None if missing or field.default is dataclasses.MISSING else field.default
        out.append(Parameter(field.name, kind[0], missing, default, kind[1], helps.get(field.name, "")))
    return tuple(out)


@functools.cache
def randomizer_parameters() -> dict[str, tuple[Parameter, tuple[str, ...]]]:
    """``name -> (parameter, randomizers taking it)`` over every registered randomizer class.

    Numeric fields become parameters; the array of ``Finite`` is :data:`RANDOMIZER_FILE_KEY` (a file);
    string fields (labels shown in descriptions) are not parameters.
    """
    out: dict[str, tuple[Parameter, tuple[str, ...]]] = {}
    for name, make in RANDOMIZERS.items():  # classes and functions (OLH) alike: their signature
        hints = typing.get_type_hints(make)
        for field in inspect.signature(make).parameters:
            kind = _kind(hints.get(field))
            if kind is not None and kind[0] in ("int", "float"):
                parameter = Parameter(field, kind[0], False)
            elif kind is None and field == "probabilities":  # the array: read from a file
                parameter = Parameter(RANDOMIZER_FILE_KEY, "file", False)
            else:
                continue
            previous = out.get(parameter.name, (parameter, ()))
            out[parameter.name] = (previous[0], (*previous[1], name))
    return out


def all_parameters() -> dict[str, Parameter]:
    """Every command-line parameter of every registered mechanism and randomizer, by name (first
    declaration wins for the help; a name that is an ``int`` in one class and a ``float`` in another is a
    ``float``)."""
    out: dict[str, Parameter] = {}
    entries: list[tuple[Parameter, tuple[str, ...]]] = [
        (p, ()) for entry in cli_mechanisms().values() for p in parameters_of(entry.load())
    ]
    if any(p.kind == "randomizer" for p, _ in entries):
        entries += list(randomizer_parameters().values())
    for parameter, _ in entries:
        known = out.get(parameter.name)
        if known is None:
            out[parameter.name] = parameter
        elif {known.kind, parameter.kind} == {"int", "float"}:
            out[parameter.name] = dataclasses.replace(known, kind="float")
    return out


def users_of(name: str) -> list[str]:
    """Command-line kinds of the mechanisms that have parameter ``name`` (plus ``--randomizer NAME``s)."""
    users = [kind for kind, entry in cli_mechanisms().items() if any(p.name == name for p in parameters_of(entry.load()))]
    taken = randomizer_parameters().get(name)
    if taken is not None:
        users.append("--randomizer " + "|".join(taken[1]))
    return users


def _describe(parameter: Parameter) -> str:
    """``--dataset worst | khh21 (default: worst)`` or ``--num-users (required)``."""
    text = flag(parameter.name)
    if parameter.choices:
        text += " " + " | ".join(parameter.choices)
    if parameter.required:
        text += " (required)"
    elif parameter.default is not None and (not parameter.choices or parameter.default in parameter.choices):
        text += f" (default: {parameter.default})"  # a default outside the choices is a sentinel the docstring explains
    return text


def _summary(cls: type) -> str:
    return _plain((cls.__doc__ or cls.__name__).strip().splitlines()[0].rstrip("."))


def mechanism_help(*, width: int = 100) -> str:
    """The list of mechanisms and their parameters for ``--help``, generated from the registry."""
    lines = ["mechanisms (choose one with --mechanism, or several with --compose / --spec):"]
    wrap: Callable[[str, str], list[str]] = lambda text, indent: textwrap.wrap(
        text, width=width, initial_indent=indent, subsequent_indent=indent + "  "
    )
    for kind, entry in cli_mechanisms().items():
        cls = entry.load()
        lines += wrap(f"{kind}: {_summary(cls)} ({cls.__name__}; neighbours: {getattr(cls, 'neighboring_relation', '?')})", "  ")
        for parameter in parameters_of(cls):
            text = _describe(parameter) + (f"  {parameter.help}" if parameter.help else "")
            lines += wrap(text, "      ")
            if parameter.kind == "randomizer":
                for name, (own, takers) in randomizer_parameters().items():
                    lines += wrap(f"{flag(own.name)}  with --randomizer {' | '.join(takers)}"
                                  + ("  (.json, .csv or .npy: rows = inputs, columns = outputs)" if own.kind == "file" else ""),
                                  "        ")
    return "\n".join(lines) + "\n"

