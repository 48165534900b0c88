"""The public surface: what ``dir(pldshuffle)`` shows, where errors and warnings live, and the mechanism
registry that the namespace, the command line and the error messages are generated from."""

from __future__ import annotations

import dataclasses
import importlib
import json
import warnings
from typing import Literal

import pytest

import pldshuffle as ps
from pldshuffle import _cli_fields, errors
from pldshuffle.cli import _parser
from pldshuffle.mechanisms import registry
from pldshuffle.mechanisms.base import check_mechanism

INTERNALS = {"dominating", "lattice", "grid", "fft", "certified", "composition", "adaptive", "spacing", "accountant",
             "results", "calibrate", "cli", "mechanisms", "pld", "worstcase", "errors", "importlib", "configure_numba_cache",
             "TYPE_CHECKING", "annotations"}


def test_dir_lists_the_public_api_only():
    # Touch internals first: importing them must not make them public.
    importlib.import_module("pldshuffle.pld.certified")
    importlib.import_module("pldshuffle.worstcase")
    shown = set(dir(ps))
    assert not shown & INTERNALS, shown & INTERNALS
    assert not [name for name in shown if name.startswith("_") and name != "__version__"]
    assert shown == set(ps.__all__)
    for name in ps.__all__:
        assert getattr(ps, name) is not None, name


def test_errors_have_one_home_and_old_imports_still_work():
    from pldshuffle.pld import MemoryBudgetError
    from pldshuffle.results import NotAGuaranteeWarning, SlowComputationWarning

    with warnings.catch_warnings():  # the deprecated alias of the old module path names the same class
        warnings.simplefilter("ignore", DeprecationWarning)
        assert importlib.import_module("pldshuffle.certified").MemoryBudgetError is errors.MemoryBudgetError

    assert ps.MemoryBudgetError is errors.MemoryBudgetError is MemoryBudgetError
    assert ps.NotAGuaranteeWarning is errors.NotAGuaranteeWarning is NotAGuaranteeWarning
    assert ps.SlowComputationWarning is errors.SlowComputationWarning is SlowComputationWarning
    assert ps.LooseBoundWarning is errors.LooseBoundWarning is importlib.import_module("pldshuffle.results").LooseBoundWarning
    assert issubclass(ps.MemoryBudgetError, ValueError) and issubclass(ps.MemoryBudgetError, MemoryError)
    exc = ps.MemoryBudgetError("too big", needed=10.0, budget=5.0)
    assert (exc.needed, exc.budget, str(exc)) == (10.0, 5.0, "too big")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        float(ps.EpsilonBounds(0.1, 0.2, 1e-6, is_guarantee=False))
    assert [w.category for w in caught] == [ps.NotAGuaranteeWarning]


def test_memory_budget_error_is_raised_and_exported():
    accountant = ps.FourierAccountant(max_memory_bytes=1).compose(ps.ShuffledBinaryRR(10, 1.0, dataset="khh21"))
    with pytest.raises(ps.MemoryBudgetError, match="max_memory_bytes"):
        accountant.get_epsilon_bounds(1e-6)


@pytest.mark.parametrize("entry", registry.MECHANISMS, ids=lambda e: e.class_name)
def test_registered_mechanisms_are_complete(entry):
    cls = entry.load()
    assert issubclass(cls, ps.ShuffleMechanism) and dataclasses.is_dataclass(cls)
    assert getattr(ps, entry.class_name) is cls and getattr(ps.mechanisms, entry.class_name) is cls
    assert cls.neighboring_relation in registry.RELATIONS
    fields = {f.name for f in dataclasses.fields(cls)}
    assert cls.switch is None or cls.switch in fields
    if entry.cli_name is not None:
        assert registry.by_cli_name(entry.cli_name) is entry
        params = _cli_fields.parameters_of(cls)
        assert params and all(p.name in fields for p in params)
        assert all(p.help for p in params), "every command-line parameter needs a docstring entry"
        if cls.switch is not None:
            switch = next(p for p in params if p.name == cls.switch)
            assert switch.kind == "choice" and len(switch.choices) >= 2


def test_cli_flags_are_the_registered_fields():
    """One flag per parameter of the registered mechanisms (and their randomizers), none by hand."""
    (action,) = [a for a in _parser()._actions if a.dest == "command"]
    for command, parser in action.choices.items():
        shown = {opt for a in parser._actions for opt in a.option_strings if opt.startswith("--")}
        generated = {_cli_fields.flag(name) for name in _cli_fields.all_parameters()}
        assert generated <= shown, command
        fixed = {"--help", "--mechanism", "--rounds", "--epochs", "--compose", "--spec", "--json", "--quiet", "--progress", "--delta",
                 "--epsilon", "--target-epsilon"}
        assert shown - generated <= fixed, (command, shown - generated - fixed)


def test_help_lists_every_registered_mechanism_with_its_parameters():
    text = _cli_fields.mechanism_help()
    for kind, entry in registry.cli_mechanisms().items():
        assert f"{kind}:" in text
        for parameter in _cli_fields.parameters_of(entry.load()):
            assert _cli_fields.flag(parameter.name) in text
            for choice in parameter.choices:
                assert choice in text


def test_non_mechanism_error_lists_the_registered_classes():
    with pytest.raises(TypeError) as info:
        check_mechanism(3.0)
    for entry in registry.MECHANISMS:
        assert entry.class_name in str(info.value)


def test_docstring_parameters_first_sentence():
    class Toy:
        """A toy.

        Parameters
        ----------
        alpha : float
            First sentence (with a; semicolon inside). Second sentence.
        beta : {"a", "b"}
            ``"a"`` is the default; ``"b"`` is the other.
        gamma : float
            A probability in (0, 1] (default 1). More.
        """

    assert _cli_fields.docstring_parameters(Toy) == {
        "alpha": "First sentence (with a; semicolon inside).",
        "beta": '"a" is the default',
        "gamma": "A probability in (0, 1] (default 1).",
    }


# ---------------------------------------------------------------------- a new mechanism, registered by one line
@dataclasses.dataclass(frozen=True)
class ToyFlip(ps.ShuffleMechanism):
    """Randomized response on one bit, to exercise the command line's field types.

    Parameters
    ----------
    num_users : int
        Users (unused by the toy).
    flip : float, optional
        Flip probability in (0, 1/2); default 1/4.
    loud : bool
        Whether to add a caveat.
    mode : {"plain", "other"}
        Which pair (both the same here).
    pair : PrivacyLossPair, optional
        Not expressible on the command line (a Python object).
    """

    switch = "mode"
    neighboring_relation = "add-remove"

    num_users: int
    flip: float | None = None
    loud: bool = False
    mode: Literal["plain", "other"] = "plain"
    pair: ps.PrivacyLossPair | None = None

    def pair_family(self, *, tail_mass: float = 1e-18) -> ps.PairFamily:
        p = 0.25 if self.flip is None else self.flip
        pair = ps.PrivacyLossPair.from_probability_mass_functions([1 - p, p], [p, 1 - p])
        return ps.PairFamily.exact(pair, caveats=("loud",) if self.loud else ())

    def describe(self) -> str:
        return f"toy flip {self.flip}, loud={self.loud}, mode={self.mode}"


def test_new_field_types_become_parameters():
    kinds = {p.name: (p.kind, p.required, p.default, p.choices) for p in _cli_fields.parameters_of(ToyFlip)}
    assert kinds == {
        "num_users": ("int", True, None, ()),
        "flip": ("float", False, None, ()),
        "loud": ("bool", False, False, ()),
        "mode": ("choice", False, "plain", ("plain", "other")),
    }


def test_one_registry_line_makes_a_mechanism_usable_from_the_command_line(monkeypatch, capsys):
    line = registry.Registered(f"{__name__}:ToyFlip", "toy-flip")
    monkeypatch.setattr(registry, "MECHANISMS", (*registry.MECHANISMS, line))
    from pldshuffle.cli import main

    code = main(["delta", "--mechanism", "toy-flip", "--num-users", "3", "--flip", "0.25", "--loud", "true",
                 "--mode", "other", "--epsilon", "0", "--json", "--quiet"])
    out, err = capsys.readouterr()
    assert code == 0, err
    record = json.loads(out)
    (entry,) = record["mechanisms"]
    assert entry["mechanism"] == "toy-flip" and record["neighbouring_relation"] == "add-remove"
    assert entry["parameters"]["loud"] is True and entry["parameters"]["mode"] == "other"
    assert record["upper"] == pytest.approx(0.5, abs=1e-9) and "loud" in record["caveats"]
    # --compose keys and words: the bool from a word, the choice checked by nobody but the mechanism
    assert main(["delta", "--compose", "toy-flip:num_users=3,loud=false:count=2", "--epsilon", "0", "--quiet"]) == 0
    statement = capsys.readouterr().out
    assert "toy flip None, loud=False" in statement and "add-remove (one dataset has one more example" in statement
    assert main(["delta", "--mechanism", "toy-flip", "--num-users", "3", "--loud", "maybe", "--epsilon", "0"]) == 2
    assert "argument --loud: the value must be true or false" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["epsilon", "--help"])
    help_text = capsys.readouterr().out
    assert "toy-flip: Randomized response on one bit" in help_text and "--mode plain | other" in help_text
    assert "--pair" not in help_text  # a Python object is not a command-line parameter
