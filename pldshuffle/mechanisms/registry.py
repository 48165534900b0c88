"""The mechanism registry: one line per mechanism.

Each :class:`Registered` line names a mechanism class (imported on first use) and, for the command
line, the kind under which ``--mechanism``, ``--compose`` and ``--spec`` know it.  Everything else the
package needs is read from the class itself:

* its parameters are the dataclass fields (the command line builds one flag per field, its help from
  the class docstring's *Parameters* section, its choices from ``Literal[...]`` annotations);
* ``neighboring_relation`` (a class attribute of :class:`~pldshuffle.mechanisms.base.ShuffleMechanism`,
  ``"replace-one"`` unless the class says otherwise) is stated in every privacy statement;
* ``switch`` names the field that selects *what* is analysed (``dataset``, ``adversary`` or
  ``reduction``), so that statements can say which adversary or dataset pair a number is for.

The package namespace (``pldshuffle.ShuffledKRR``), :mod:`pldshuffle.mechanisms`, the command line
and the error message for a non-mechanism all read this table: adding a mechanism means its module,
its exact reference test and one line below (see ``docs/writing-a-mechanism.md``).
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass

__all__ = ["MECHANISMS", "RELATIONS", "Registered", "by_cli_name", "cli_mechanisms"]


@dataclass(frozen=True)
class Registered:
    """One registered mechanism.

    Attributes
    ----------
    path : str
        ``"module:ClassName"`` of the mechanism class (imported by :meth:`load`, not before).
    cli_name : str or None
        The kind used by the command line and JSON specs (kebab-case, e.g. ``"binary-rr"``); ``None``
        for mechanisms the command line cannot build (their parameters are Python objects).
    """

    path: str
    cli_name: str | None = None

    @property
    def module(self) -> str:
        return self.path.partition(":")[0]

    @property
    def class_name(self) -> str:
        return self.path.partition(":")[2]

    def load(self) -> type:
        """The mechanism class (imports its module)."""
        cls: type = getattr(importlib.import_module(self.module), self.class_name)
        return cls


#: Every mechanism of the package, in the order help texts list them.
MECHANISMS: tuple[Registered, ...] = (
    Registered("pldshuffle.mechanisms.binary_rr:ShuffledBinaryRR", "binary-rr"),
    Registered("pldshuffle.mechanisms.krr:ShuffledKRR", "krr"),
    Registered("pldshuffle.mechanisms.clones:ShuffledLDP", "ldp"),
    Registered("pldshuffle.mechanisms.allocation:RandomAllocation", "random-allocation"),
    Registered("pldshuffle.mechanisms.generic:PairMechanism"),
)

#: Neighbouring relations a mechanism may declare, with the words statements use for them.
RELATIONS: dict[str, str] = {
    "replace-one": "the datasets differ in the value of one user",
    "add-remove": "one dataset has one more example than the other",
}


def cli_mechanisms() -> dict[str, Registered]:
    """``cli_name -> entry`` of the mechanisms the command line can build, in registry order."""
    return {entry.cli_name: entry for entry in MECHANISMS if entry.cli_name is not None}


def by_cli_name(name: str) -> Registered | None:
    """The entry whose command-line kind is ``name`` (``None`` if there is none)."""
    return cli_mechanisms().get(name)
