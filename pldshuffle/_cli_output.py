"""What the command line prints: a privacy statement in words, or one JSON record."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from typing import Any

from . import __version__
from ._cli_ledger import kind_of
from .mechanisms.base import ShuffleMechanism
from .mechanisms.registry import RELATIONS
from .randomizers import Randomizer, randomizer_spec
from .results import INFINITE_EPSILON_NOTE, DeltaBounds, EpsilonBounds

__all__ = ["mechanism_record", "record", "statement"]


def mechanism_record(mechanism: ShuffleMechanism, count: int, same_data: bool = False) -> dict[str, Any]:
    """One ledger entry as a ``--spec`` entry (``"same_data": true`` only for a same-data block)."""
    return {
        "mechanism": kind_of(mechanism),
        "description": mechanism.describe(),
        "parameters": {
            f.name: spec_value(getattr(mechanism, f.name)) for f in dataclasses.fields(mechanism)  # type: ignore[arg-type]
        },
        "count": count,
        **({"same_data": True} if same_data else {}),
    }


def spec_value(value: Any) -> Any:
    """A mechanism parameter as it is written in a JSON spec (a randomizer becomes its spec object)."""
    return randomizer_spec(value) if isinstance(value, Randomizer) else value


def adversary(mechanism: ShuffleMechanism) -> str:
    """The adversary line: from the mechanism's ``switch`` field (``adversary`` names the view analysed, a
    ``dataset`` other than its default fixes one dataset pair); else the standard DP adversary."""
    switch = mechanism.switch
    value = getattr(mechanism, switch) if switch is not None else None
    if switch == "adversary":
        return f"{value!r} (see the mechanism line)"
    if switch == "dataset":
        default = next(f.default for f in dataclasses.fields(mechanism) if f.name == "dataset")  # type: ignore[arg-type]
        if value != default:
            return f"one fixed dataset pair (dataset={value!r}), see the mechanism line"
    if mechanism.neighboring_relation == "add-remove":  # e.g. random allocation: examples, not users
        return "standard DP adversary: sees every output and knows every other example"
    return "standard DP adversary: sees all shuffled reports and knows every other user's data"


def relation(ledger: Sequence[tuple[ShuffleMechanism, int, bool]]) -> str:
    """The neighbouring relation of a ledger's mechanisms (the accountant composes one relation only)."""
    relations = sorted({entry[0].neighboring_relation for entry in ledger})
    return relations[0] if len(relations) == 1 else " + ".join(relations)


def fmt(x: float) -> str:
    return f"{x:.6g}"


def statement(ledger: Sequence[tuple[ShuffleMechanism, int, bool]], rounds: int, query: str, value: float, bounds: EpsilonBounds | DeltaBounds) -> str:
    lines = ["Privacy statement (pldshuffle %s)" % __version__]
    for mechanism, count, same_data in ledger:
        lines.append(f"  mechanism: {mechanism.describe()}")
        setting = " (one block on the same dataset)" if same_data else ""
        lines.append(f"    rounds of this mechanism: {count}{setting}")
        lines.append(f"    adversary: {adversary(mechanism)}")
    lines.append(f"  total rounds composed: {rounds}")
    name = relation(ledger)
    lines.append(f"  neighbouring relation: {name}" + (f" ({RELATIONS[name]})" if name in RELATIONS else ""))
    if query == "epsilon":
        lines.append(f"  delta: {value:g}")
        lines.append(f"  certified epsilon bracket: [{fmt(bounds.lower)}, {fmt(bounds.upper)}]")
        if math.isinf(bounds.upper):
            lines.append(f"  note: {INFINITE_EPSILON_NOTE}")
        claim = f"({fmt(bounds.upper)}, {value:g})-DP"
    else:
        lines.append(f"  epsilon: {value:g}")
        lines.append(f"  certified delta bracket: [{bounds.lower:.6g}, {bounds.upper:.6g}]")
        claim = f"({value:g}, {bounds.upper:.6g})-DP"
    if bounds.is_guarantee:
        lines.append(f"The composed protocol satisfies {claim}.")
    else:
        lines.append(
            f"!!! NOT A PRIVACY GUARANTEE: {claim} holds only for the analysed pair; the upper end is a "
            "LOWER bound on the worst case. !!!"
        )
    lines += [f"  caveat: {c}" for c in bounds.caveats]
    return "\n".join(lines)


def record(ledger: Sequence[tuple[ShuffleMechanism, int, bool]], rounds: int, bounds: EpsilonBounds | DeltaBounds) -> dict[str, Any]:
    return {
        "mechanisms": [mechanism_record(m, c, same) for m, c, same in ledger],
        "rounds": rounds,
        "neighbouring_relation": relation(ledger),
        **bounds.to_dict(),
    }
