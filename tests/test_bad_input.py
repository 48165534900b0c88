"""Bad input at every public entry point: a clean ``TypeError``/``ValueError`` naming the parameter.

The first tests are the reported repros (``from_dp_accounting(None)``, complex/str/bool pmf entries, pmfs
that do not sum to 1, calibration ranges, CLI wording); the hypothesis test then feeds every public
constructor and query malformed values of each kind and checks the refusal: right exception class, the
parameter named, no numpy repr (``np.float64(...)``) and no internal message.
"""

from __future__ import annotations

import inspect
import math
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import pldshuffle as ps
from pldshuffle import bounds as b
from pldshuffle import interop
from pldshuffle import randomizers as R
from pldshuffle._validation import MAX_COUNT, show
from pldshuffle.cli import main

RR_PMFS = ([0.75, 0.25], [0.25, 0.75])

# The fixed pair of the khh21 dataset (one dp-accounting member) is a lower bound, and says so.
pytestmark = pytest.mark.filterwarnings("ignore::pldshuffle.NotAGuaranteeWarning")


# ---------------------------------------------------------------------------------------------------
# the repros of the issue


@pytest.mark.parametrize("value", [None, 3, "pld", ps.ShuffledBinaryRR(10, 1.0, dataset="khh21")])
def test_from_dp_accounting_checks_its_argument_type(value):
    pytest.importorskip("dp_accounting")
    with pytest.raises(TypeError, match=r"pld must be a dp_accounting.*PrivacyLossDistribution, got"):
        interop.from_dp_accounting(value)


def test_from_dp_accounting_still_imports_a_pld():
    pytest.importorskip("dp_accounting")
    pld = interop.to_dp_accounting(ps.ShuffledBinaryRR(10, 1.0, dataset="khh21"))
    assert isinstance(interop.from_dp_accounting(pld), ps.PairMechanism)


@pytest.mark.parametrize("factory", [ps.PrivacyLossPair.from_probability_mass_functions, ps.PairMechanism.from_probability_mass_functions])
@pytest.mark.parametrize(
    "bad, what",
    [
        ([0.75 + 0j, 0.25], "complex"),
        (np.array([0.75, 0.25], dtype=complex), "complex"),
        (["0.75", "0.25"], "str"),
        (np.array(["0.75", "0.25"]), "strings"),
        ([True, False], "bool"),
        (np.array([True, False]), "booleans"),
        ([0.75, None], "None"),
    ],
)
def test_non_real_pmf_entries_refused_naming_the_pmf(factory, bad, what):
    for name, args in (("pmf_p", (bad, RR_PMFS[1])), ("pmf_q", (RR_PMFS[0], bad))):
        with pytest.raises(TypeError, match=rf"{name} must .*real numbers.*{what}"):
            factory(*args)


def test_non_real_mapping_pmf_values_refused():
    with pytest.raises(TypeError, match="pmf_p .*bool"):
        ps.PrivacyLossPair.from_probability_mass_functions({"a": True}, {"a": 1.0})
    with pytest.raises(TypeError, match="pmf_q .*str"):
        ps.PrivacyLossPair.from_probability_mass_functions({"a": 1.0}, {"a": "1"})


@pytest.mark.parametrize(
    "matrix, what",
    [([[True, False], [False, True]], "bool"), ([["0.5", "0.5"], ["0.25", "0.75"]], "str"), ([[0.5 + 0j, 0.5], [0.25, 0.75]], "complex")],
)
def test_non_real_finite_matrix_refused_naming_probabilities(matrix, what):
    with pytest.raises(TypeError, match=rf"probabilities must hold real numbers only.*{what}"):
        R.Finite(matrix)
    with pytest.raises(TypeError, match=rf"matrix must hold real numbers only.*{what}"):
        R.clone_constants_of_matrix(matrix)


@pytest.mark.parametrize("factory", [ps.PrivacyLossPair.from_probability_mass_functions, ps.PairMechanism.from_probability_mass_functions])
@pytest.mark.parametrize("p", [[0.25, 0.25], [0.0, 0.0], [0.5, 0.5 - 1e-11]])
def test_pmf_with_a_deficit_refused_unless_the_missing_mass_is_named(factory, p):
    with pytest.raises(ValueError, match=r"pmf_p must sum to 1 \(within 1e-12\).*missing_mass='infinity'"):
        factory(p, [0.5, 0.5])
    with pytest.raises(ValueError, match=r"pmf_q must sum to 1"):
        factory([0.5, 0.5], p)


def test_pmf_with_an_excess_is_refused_even_with_missing_mass():
    for missing in (None, "infinity"):
        with pytest.raises(ValueError, match=r"pmf_p must sum to 1 \(within 1e-12\), got a total of 1.0000000001"):
            ps.PrivacyLossPair.from_probability_mass_functions([0.5, 0.5 + 1e-10], [0.5, 0.5], missing_mass=missing)


def test_missing_mass_must_be_a_known_choice():
    with pytest.raises(ValueError, match="missing_mass must be one of 'infinity'"):
        ps.PrivacyLossPair.from_probability_mass_functions([0.25, 0.25], [0.5, 0.5], missing_mass="zero")
    with pytest.raises(TypeError, match="missing_mass must be one of"):
        ps.PrivacyLossPair.from_probability_mass_functions([0.25, 0.25], [0.5, 0.5], missing_mass=True)


def test_pmf_within_the_tolerance_is_accepted():
    pair = ps.PrivacyLossPair.from_probability_mass_functions([0.5, 0.5 - 1e-13], [0.5, 0.5])
    assert pair.forward.truncated_mass <= 1e-12


def _exact_delta(p: list[Fraction], q: list[Fraction], eps: float) -> float:
    """max over both directions of Σ_i max(a_i - e^ε b_i, 0), by enumeration of the outcomes (exact
    masses, one rounding of e^ε)."""
    e = Fraction(math.exp(eps))
    return float(max(sum(max(a - e * c, Fraction(0)) for a, c in zip(x, y)) for x, y in ((p, q), (q, p))))


@pytest.mark.parametrize("eps", [0.0, 0.3, 1.0, 5.0])
def test_named_missing_mass_brackets_every_location_of_that_mass(eps):
    """``missing_mass="infinity"``: the bracket holds wherever the missing mass lies.  P = (0.25, 0.25) on
    the listed outcomes, Q = (0.5, 0.5): P's missing 0.5 lies on an unlisted outcome where Q has no mass
    (Q's total is already 1), so the exact pair is P = (0.25, 0.25, 0.5), Q = (0.5, 0.5, 0)."""
    pair = ps.PrivacyLossPair.from_probability_mass_functions([0.25, 0.25], [0.5, 0.5], missing_mass="infinity")
    exact = _exact_delta([Fraction(1, 4), Fraction(1, 4), Fraction(1, 2)], [Fraction(1, 2), Fraction(1, 2), Fraction(0)], eps)
    lower, upper = pair.delta_bounds(eps)
    assert lower[0] <= exact <= upper[0]
    assert exact >= 0.5  # the δ ≥ 0.5 that a silently accepted typo would have reported
    mech = ps.PairMechanism.from_probability_mass_functions([0.25, 0.25], [0.5, 0.5], missing_mass="infinity")
    bounds = ps.FourierAccountant().compose(mech).get_delta_bounds(eps)
    assert bounds.lower <= exact <= bounds.upper


def test_calibration_checks_its_search_range_before_any_probe():
    probed = []

    def factory(eps0):
        probed.append(eps0)
        return ps.ShuffledBinaryRR(10, eps0)

    for kwargs, match in [
        ({"max_local_epsilon": 1000}, r"max_local_epsilon must lie in \(0, 500\], got 1000 \(beyond it"),
        ({"max_local_epsilon": math.nan}, r"max_local_epsilon must lie in \(0, 500\], got nan \(NaN"),
        ({"min_local_epsilon": 0.0}, r"min_local_epsilon must lie in \(0, 500\], got 0\.0 \(a local ε0 is > 0"),
        ({"min_local_epsilon": 2.0, "max_local_epsilon": 1.0}, r"min_local_epsilon must be < max_local_epsilon, got 2\.0 and 1\.0"),
        ({"accountant_options": {"tail_mass": 2.0}}, r"accountant_options: tail_mass must lie in \(0, 1\)"),
        ({"progress": "yes"}, r"progress must be a callable"),
    ]:
        error = TypeError if "progress" in kwargs else ValueError
        with pytest.raises(error, match=match):
            ps.calibrate_local_epsilon(factory, target_epsilon=1.0, target_delta=1e-3, **kwargs)
    with pytest.raises(TypeError, match="accountant_options: .*unexpected keyword argument 'spacing'"):
        ps.calibrate_local_epsilon(factory, target_epsilon=1.0, target_delta=1e-3, accountant_options={"spacing": 1e-3})
    assert probed == []
    with pytest.raises(TypeError, match=r"make_mechanism must be a callable \(local_epsilon -> ShuffleMechanism\)"):
        ps.calibrate_local_epsilon(None, target_epsilon=1.0, target_delta=1e-3)


def test_user_search_range_checked_up_front():
    with pytest.raises(ValueError, match="min_users must be <= max_users, got 50 and 20"):
        ps.find_min_users(lambda n: ps.ShuffledBinaryRR(n, 1.0), target_epsilon=1.0, target_delta=1e-3, min_users=50, max_users=20)
    with pytest.raises(ValueError, match=r"max_users must be an integer >= 2 and <= 2\*\*53"):
        ps.find_min_users(lambda n: ps.ShuffledBinaryRR(n, 1.0), target_epsilon=1.0, target_delta=1e-3, max_users=10**20)
    with pytest.raises(ValueError, match=r"max_rounds must be an integer >= 1 and <= 2\*\*53"):
        ps.find_max_rounds(ps.ShuffledBinaryRR(10, 1.0), target_epsilon=1.0, target_delta=1e-3, max_rounds=1e300)


@pytest.mark.parametrize(
    "value, reason",
    [("nan", "NaN is not a privacy level"), ("0", "a local ε0 is > 0"), ("-1", "a local ε0 is > 0"), ("1000", "beyond it the randomizer reveals")],
)
def test_cli_says_the_right_thing_for_each_bad_local_epsilon(capsys, value, reason):
    assert main(["epsilon", "--mechanism", "binary-rr", "--num-users", "10", f"--local-epsilon={value}", "--delta", "1e-3"]) == 2
    err = capsys.readouterr().err
    assert reason in err and "np." not in err
    if reason != "beyond it the randomizer reveals":
        assert "reveals its input" not in err


def test_cli_prints_plain_numbers(tmp_path, capsys):
    matrix = tmp_path / "m.json"
    matrix.write_text("[[0.7, 0.3], [0.3, 0.8]]")
    args = ["epsilon", "--mechanism", "ldp", "--num-users", "10", "--randomizer", "finite", "--matrix", str(matrix), "--delta", "1e-3"]
    assert main(args) == 2
    err = capsys.readouterr().err
    assert "row 1 sums to 1.1" in err and "np.float64" not in err
    matrix.write_text("[[true, false], [false, true]]")
    assert main(args) == 2
    assert "matrix must hold real numbers only, got the entry True of type bool" in capsys.readouterr().err


@pytest.mark.parametrize(
    "call",
    [
        lambda: ps.ShuffledBinaryRR(10, np.float64(1e3)),
        lambda: ps.ShuffledKRR(10, 3, gamma=np.float64(1.1)),
        lambda: ps.ShuffledLDP(10, np.float64(-1.0)),
        lambda: R.KaryRR(np.int64(1), 1.0),
        lambda: ps.FourierAccountant(tail_mass=np.float32(2.0)),
    ],
)
def test_numpy_scalars_are_shown_as_plain_numbers(call):
    with pytest.raises(ValueError) as info:
        call()
    assert "np." not in str(info.value)


def test_numpy_real_scalars_are_accepted():
    mech = ps.ShuffledBinaryRR(np.int64(10), np.float32(1.0))
    acc = ps.FourierAccountant().compose(mech, np.int32(2))
    assert acc.get_epsilon(np.float64(1e-3)) > 0


def test_show_is_plain():
    assert [show(np.float64(1.1)), show(np.int64(3)), show(True), show(math.nan), show(10**400)[:5]] == ["1.1", "3", "True", "nan", "10000"]
    assert len(show(10**400)) < 80


# ---------------------------------------------------------------------------------------------------
# every public entry point, fed malformed values of each kind

_RR = ps.ShuffledBinaryRR(10, 1.0, dataset="khh21")
_ACC = ps.FourierAccountant().compose(_RR)
_PAIR = ps.PrivacyLossPair.from_probability_mass_functions(*RR_PMFS)
_DIRECTION = _PAIR.forward

#: Malformed values by kind: (value, expected exception).  "type" values are refused with TypeError
#: wherever a number is expected; range violations with ValueError.
_TYPE_BAD = [None, "1.0", "abc", True, False, np.bool_(True), 1 + 0j, np.complex128(0.5), b"1", object()]
_SCALAR_TYPE_BAD = [*_TYPE_BAD, [1.0], (0.5,), {"x": 1.0}]


def _typed(values, error):
    return st.sampled_from([(v, error) for v in values])


def _type_errors(scalar: bool = True):
    return st.one_of(
        _typed(_SCALAR_TYPE_BAD if scalar else _TYPE_BAD, TypeError),
        st.text(max_size=5).map(lambda s: (s, TypeError)),
        st.complex_numbers(allow_nan=False, max_magnitude=10).map(lambda z: (z, TypeError)),
    )


_NEGATIVE = st.floats(max_value=-1e-300, allow_infinity=False, allow_nan=False) | st.integers(max_value=-1)


def _values(*values):
    return _typed(values, ValueError)


def _kind(name: str):
    """Strategy of (malformed value, expected exception class) for a parameter kind; a trailing ``?``
    marks a parameter whose ``None`` means "default" (so ``None`` is not malformed there)."""
    if name.endswith("?"):
        return _kind(name[:-1]).filter(lambda case: case[0] is not None)
    non_finite = _values(math.nan, math.inf, -math.inf)
    if name == "local_epsilon":  # (0, 500]
        return _type_errors() | non_finite | _values(0, 0.0, 500.5, 1e300, 10**400) | _NEGATIVE.map(lambda x: (x, ValueError))
    if name == "positive":  # (0, inf) finite
        return _type_errors() | non_finite | _values(0.0, 10**400) | _NEGATIVE.map(lambda x: (x, ValueError))
    if name == "spacing":  # (0, 100]
        return _type_errors() | non_finite | _values(0.0, 101.0, 1e300) | _NEGATIVE.map(lambda x: (x, ValueError))
    if name in ("count", "users", "domain"):  # integers >= 1 (>= 2 for users and domains), <= 2**53
        low = {"count": 0, "users": 1, "domain": 1}[name]
        return (_type_errors() | non_finite | _values(2.5, low, 2**53 + 1, 1e300, 10**400)
                | st.integers(max_value=low).map(lambda x: (x, ValueError))
                | st.integers(min_value=MAX_COUNT + 1, max_value=10**30).map(lambda x: (x, ValueError)))
    if name == "analytic_users":  # closed-form baselines: <= 1e18
        return _type_errors() | non_finite | _values(0, -5, 2.5, 10**18 + 1, 1e300, 10**400)
    if name == "probability":  # (0, 1)
        return (_type_errors() | non_finite | _values(0.0, 1.0, 1.5, 1e300)
                | _NEGATIVE.map(lambda x: (x, ValueError)) | st.floats(min_value=1.0, max_value=1e300).map(lambda x: (x, ValueError)))
    if name == "probabilities":  # arrays of numbers in (0, 1)
        return (_type_errors(scalar=False) | _values(0.0, 1.0, math.nan, [1e-3, 1.5], [[0.5], [-1.0]], [])
                | _typed([[1e-3, "x"], [True], [0.5, 1j], [None]], TypeError))
    if name == "closed_probability":  # [0, 1]
        return _type_errors() | non_finite | _values(1.0 + 1e-9, 2.0, 1e300) | _NEGATIVE.map(lambda x: (x, ValueError))
    if name == "epsilon":  # [0, inf) finite
        return _type_errors() | _values(math.nan, math.inf, -math.inf) | _NEGATIVE.map(lambda x: (x, ValueError))
    if name == "epsilon_query":  # [0, inf] and arrays of such
        return (_type_errors(scalar=False) | _values(math.nan, -math.inf, [0.1, math.nan], [[0.1], [-1.0]])
                | _typed([[0.1, "x"], [0.1, None], [True], [0.1, 1j]], TypeError)
                | _NEGATIVE.map(lambda x: (x, ValueError)))
    if name == "pmf":
        return (_typed([None, "0.5", 0.5 + 0j, [0.5, "0.5"], [True, False], [0.5, 0.5 + 0j], [[0.5], [0.5, 0.0]], {1: 2}], TypeError)
                | _values([math.nan, 0.5], [math.inf, 0.0], [-0.5, 1.5], [0.25, 0.25], [0.0, 0.0], [0.7, 0.7], [1e300, 0.0], [10**400, 0.0], []))
    if name == "array":  # losses / masses of a LossDistribution
        return _typed([None, "0.5", [0.5, "0.5"], [True, False], [0.5 + 0j, 0.5], {1: 2}], TypeError) | _values([math.nan, 0.5], [10**400, 0.5])
    if name == "matrix":
        return (_typed([None, "m", [[True, False], [False, True]], [["0.5", "0.5"], [0.5, 0.5]], [[0.5 + 0j, 0.5], [0.5, 0.5]]], TypeError)
                | _values(0.5, [0.5, 0.5], [[1.0]], [[0.7, 0.7], [0.5, 0.5]], [[math.nan, 1.0], [0.5, 0.5]], [[-0.5, 1.5], [0.5, 0.5]]))
    if name == "alpha":  # RDP orders > 1
        return _type_errors(scalar=False) | _values(1.0, 0.5, math.nan, math.inf, [2.0, 0.5], []) | _typed([[2.0, "3"], [True]], TypeError)
    if name == "rdp":  # RDP values >= 0 (inf allowed)
        return _type_errors(scalar=False) | _values(-1.0, math.nan) | _typed([["0.5"], [True]], TypeError)
    if name == "text":
        return _typed([None, 1, 1.0, True, [], ["a"], 1j, b"label"], TypeError)
    if name == "flag":
        return _typed([None, 1, 0, 1.0, "yes", "True", [], 1j], TypeError)
    if name == "choice":
        return _typed([None, 1, 1.0, True, [], 1j], TypeError) | _values("no-such-choice", "")
    if name == "callable":
        return _typed([None, 1, 1.0, "f", [], True, 1j], TypeError)
    if name == "mapping":
        return _typed(["tail_mass=1", 1, 1.0, True, [("tail_mass", 0.1)], 1j], TypeError)
    if name == "object":  # a mechanism, pair, distribution or dp-accounting PLD
        return _typed([None, 1, 1.0, "mechanism", [], True, 1j, object()], TypeError)
    raise AssertionError(name)


def _mech(n: int = 10) -> ps.ShuffledBinaryRR:
    return ps.ShuffledBinaryRR(n, 1.0, dataset="khh21")


#: (label, call(**overrides), {parameter: kind}).
ENTRY_POINTS: list[tuple[str, object, dict[str, str]]] = [
    ("ShuffledBinaryRR", lambda **k: ps.ShuffledBinaryRR(**{"num_users": 10, "local_epsilon": 1.0, **k}),
     {"num_users": "users", "local_epsilon": "local_epsilon", "dataset": "choice"}),
    ("ShuffledKRR", lambda **k: ps.ShuffledKRR(**{"num_users": 10, "domain_size": 3, "local_epsilon": 1.0, **k}),
     {"num_users": "users", "domain_size": "domain", "local_epsilon": "local_epsilon?", "adversary": "choice"}),
    ("ShuffledKRR(gamma)", lambda **k: ps.ShuffledKRR(**{"num_users": 10, "domain_size": 3, "gamma": 0.5, **k}), {"gamma": "closed_probability?"}),
    ("ShuffledLDP", lambda **k: ps.ShuffledLDP(**{"num_users": 10, "local_epsilon": 1.0, **k}),
     {"num_users": "users", "local_epsilon": "local_epsilon", "reduction": "choice"}),
    ("ShuffledLDP(randomizer)", lambda **k: ps.ShuffledLDP(**{"num_users": 10, "randomizer": R.BinaryRR(1.0), **k}), {"randomizer": "object"}),
    ("LabelledClonePair", lambda **k: ps.LabelledClonePair(**{"num_users": 10, "ratio": 2.0, "r0": 0.2, "r1": 0.2, **k}),
     {"num_users": "users", "r0": "closed_probability", "r1": "closed_probability"}),
    ("PairMechanism", lambda **k: ps.PairMechanism(**{"pair": _PAIR, **k}), {"pair": "object", "description": "text"}),
    ("PairMechanism.from_probability_mass_functions",
     lambda **k: ps.PairMechanism.from_probability_mass_functions(**{"pmf_p": RR_PMFS[0], "pmf_q": RR_PMFS[1], **k}),
     {"pmf_p": "pmf", "pmf_q": "pmf", "label": "text", "missing_mass": "choice?"}),
    ("PrivacyLossPair.from_probability_mass_functions",
     lambda **k: ps.PrivacyLossPair.from_probability_mass_functions(**{"pmf_p": RR_PMFS[0], "pmf_q": RR_PMFS[1], **k}),
     {"pmf_p": "pmf", "pmf_q": "pmf", "label": "text", "missing_mass": "choice?"}),
    ("PrivacyLossPair", lambda **k: ps.PrivacyLossPair(**{"forward": _DIRECTION, **k}), {"forward": "object", "label": "text"}),
    ("LossDistribution", lambda **k: ps.LossDistribution(**{"losses": [0.5, -0.5], "masses": [0.5, 0.5], **k}),
     {"losses": "array", "masses": "array", "infinity_mass": "closed_probability", "truncated_mass": "closed_probability"}),
    ("FourierAccountant", lambda **k: ps.FourierAccountant(**k),
     {"value_discretization_interval": "spacing?", "tail_mass": "probability?", "fft_backend": "choice",
      "max_memory_bytes": "count", "relative_gap_target": "probability?"}),
    ("compose", lambda **k: ps.FourierAccountant().compose(**{"mechanism": _RR, **k}), {"mechanism": "object", "count": "count", "same_data": "flag"}),
    ("get_delta", lambda **k: _ACC.get_delta(**{"target_epsilon": 1.0, **k}), {"target_epsilon": "epsilon_query"}),
    ("get_delta_bounds", lambda **k: _ACC.get_delta_bounds(**{"target_epsilon": 1.0, **k}), {"target_epsilon": "epsilon_query"}),
    ("epsilon_curve", lambda **k: _ACC.epsilon_curve(**{"target_deltas": [1e-3], **k}), {"target_deltas": "probabilities"}),
    ("delta_curve", lambda **k: _ACC.delta_curve(**{"target_epsilons": [1.0], **k}), {"target_epsilons": "epsilon_query"}),
    ("CertifiedPLD.from_pair", lambda **k: ps.CertifiedPLD.from_pair(**{"pair": _PAIR, "spacing": 1e-2, **k}), {"pair": "object", "spacing": "spacing"}),
    ("LabelledClonePair.fmt20", lambda **k: ps.LabelledClonePair.fmt20(**{"num_users": 10, "local_epsilon": 1.0, **k}),
     {"num_users": "users", "local_epsilon": "local_epsilon"}),
    # The name is positional-only; messages call it what the command line does: randomizer.
    ("make_randomizer", lambda **k: R.make_randomizer(k.get("randomizer", "binary-rr"), local_epsilon=1.0), {"randomizer": "choice"}),
    ("get_epsilon", lambda **k: _ACC.get_epsilon(**{"target_delta": 1e-3, **k}), {"target_delta": "probability"}),
    ("get_epsilon_bounds", lambda **k: _ACC.get_epsilon_bounds(**{"target_delta": 1e-3, **k}), {"target_delta": "probability"}),
    ("calibrate_local_epsilon",
     lambda **k: ps.calibrate_local_epsilon(**{"make_mechanism": lambda e: ps.ShuffledBinaryRR(10, e), "target_epsilon": 1.0, "target_delta": 1e-3, **k}),
     {"make_mechanism": "callable", "target_epsilon": "positive", "target_delta": "probability", "rounds": "count",
      "min_local_epsilon": "local_epsilon", "max_local_epsilon": "local_epsilon", "rtol": "probability",
      "accountant_options": "mapping", "progress": "callable?"}),
    ("find_min_users",
     lambda **k: ps.find_min_users(**{"make_mechanism": _mech, "target_epsilon": 1.0, "target_delta": 1e-3, **k}),
     {"make_mechanism": "callable", "target_epsilon": "positive", "target_delta": "probability", "rounds": "count",
      "min_users": "users", "max_users": "users", "accountant_options": "mapping", "progress": "callable?"}),
    ("find_max_rounds",
     lambda **k: ps.find_max_rounds(**{"mechanism": _RR, "target_epsilon": 1.0, "target_delta": 1e-3, **k}),
     {"mechanism": "object", "target_epsilon": "positive", "target_delta": "probability", "max_rounds": "count",
      "accountant_options": "mapping", "progress": "callable?"}),
    ("Finite", lambda **k: R.Finite(**{"probabilities": [[0.75, 0.25], [0.25, 0.75]], **k}), {"probabilities": "matrix", "name": "text"}),
    ("clone_constants_of_matrix", lambda **k: R.clone_constants_of_matrix(**{"matrix": [[0.75, 0.25], [0.25, 0.75]], **k}), {"matrix": "matrix"}),
    ("BinaryRR", lambda **k: R.BinaryRR(**{"local_epsilon": 1.0, **k}), {"local_epsilon": "local_epsilon"}),
    *[
        (cls.__name__, (lambda c: lambda **k: c(**{"domain_size": 3, "local_epsilon": 1.0, **k}))(cls),
         {"domain_size": "domain", "local_epsilon": "local_epsilon"})
        for cls in (R.KaryRR, R.RAPPOR, R.OUE, R.HadamardResponse, R.OLH)
    ],
    ("SubsetSelection", lambda **k: R.SubsetSelection(**{"domain_size": 4, "subset_size": 2, "local_epsilon": 1.0, **k}),
     {"domain_size": "domain", "subset_size": "count", "local_epsilon": "local_epsilon"}),
    ("LocalHashing", lambda **k: R.LocalHashing(**{"domain_size": 4, "hash_range": 2, "local_epsilon": 1.0, **k}),
     {"domain_size": "domain", "hash_range": "domain", "local_epsilon": "local_epsilon"}),
]

_HAS_DP_ACCOUNTING = True
try:
    import dp_accounting  # noqa: F401
except ImportError:  # pragma: no cover - the optional dependency is installed in CI
    _HAS_DP_ACCOUNTING = False
if _HAS_DP_ACCOUNTING:
    ENTRY_POINTS += [
        ("to_dp_accounting", lambda **k: interop.to_dp_accounting(**{"mechanism_or_pair": _RR, **k}),
         {"mechanism_or_pair": "object", "value_discretization_interval": "spacing", "pessimistic_estimate": "flag",
          "count": "count", "tail_mass": "probability"}),
        ("from_dp_accounting", lambda **k: interop.from_dp_accounting(**{"pld": interop.to_dp_accounting(_RR), **k}),
         {"pld": "object", "description": "text"}),
    ]

#: Kinds of the analytic baselines' parameters, by name.
_BOUND_KINDS = {
    "num_users": "analytic_users", "local_epsilon": "local_epsilon", "max_local_epsilon": "local_epsilon",
    "target_epsilon": "epsilon", "target_delta": "probability", "slack_delta": "probability",
    "round_epsilon": "epsilon", "round_delta": "round_delta", "rounds": "count", "domain_size": "domain",
    "alpha": "alpha", "rdp": "rdp", "randomizer": "choice", "bound": "choice", "variant": "choice",
    "conversion": "choice", "form": "choice", "strict": "flag", "lemma56_as_printed": "flag", "both_directions": "flag",
}
_BOUND_DEFAULTS = {
    "num_users": 1000, "local_epsilon": 0.4, "target_epsilon": 0.3, "target_delta": 1e-6, "domain_size": 4, "rounds": 2,
    "round_epsilon": 0.5, "round_delta": 1e-6, "slack_delta": 1e-6, "alpha": 2.0, "rdp": 0.5, "bound": "hoeffding", "randomizer": "generic",
    "max_local_epsilon": 10.0,
}
for _name in sorted(b.__all__):
    _function = getattr(b, _name)
    if not inspect.isfunction(_function) or _name in ("get_baseline", "rdp_compose", "compose_epsilon", "compose_epsilon_result"):
        continue
    _signature = inspect.signature(_function).parameters
    _base = {p: _BOUND_DEFAULTS[p] for p, v in _signature.items() if v.default is inspect.Parameter.empty}
    if "local_epsilon" in _signature and _signature["local_epsilon"].default is None:
        _base["local_epsilon"] = 0.4  # one of gamma / local_epsilon (krr) or the generic randomizer's ε0
    _kinds = {}
    for _parameter, _spec in _signature.items():
        if _parameter not in _BOUND_KINDS:
            continue
        if _spec.default is None:
            if _parameter not in ("alpha", "local_epsilon"):
                continue  # e.g. domain_size: applies only with randomizer="krr", refused otherwise as such
            _kinds[_parameter] = _BOUND_KINDS[_parameter] + "?"
        else:
            _kinds[_parameter] = _BOUND_KINDS[_parameter]
    if _name == "bbgn19_local_epsilon" or _name == "bbgn19_local_epsilon_result":
        _kinds.pop("max_local_epsilon")  # must also exceed target_epsilon: checked in test_bounds
    ENTRY_POINTS.append((f"bounds.{_name}", (lambda f, base: lambda **k: f(**{**base, **k}))(_function, _base), _kinds))


def _round_delta():  # [0, 1)
    return _type_errors() | _typed([math.nan, math.inf, -math.inf, 1.0, 1.5], ValueError) | _NEGATIVE.map(lambda x: (x, ValueError))


CASES = [(label, call, parameter, kind) for label, call, kinds in ENTRY_POINTS for parameter, kind in kinds.items()]


def test_every_case_is_valid_without_the_bad_value():
    """The table's base calls succeed, so a refusal in the property test is the bad value's doing."""
    for label, call, _ in ENTRY_POINTS:
        if label.startswith(("calibrate", "find_")):
            continue  # searches: seconds each; their base calls are the calibration tests'
        call()
    assert len(CASES) > 250


def _check_refusal(data, case) -> None:
    label, call, parameter, kind = case
    strategy = _round_delta() if kind == "round_delta" else _kind(kind)
    value, error = data.draw(strategy, label=f"{label}({parameter}=...)")
    with pytest.raises((TypeError, ValueError)) as info:
        call(**{parameter: value})
    message = str(info.value)
    assert parameter in message, f"{label}({parameter}={value!r}): {type(info.value).__name__}: {message}"
    assert isinstance(info.value, error), f"{label}({parameter}={value!r}) raised {type(info.value).__name__}: {message}"
    assert "np.float" not in message and "np.int" not in message and "np.bool" not in message, message


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data(), case=st.sampled_from(CASES))
def test_malformed_values_get_a_clean_error_naming_the_parameter(data, case):
    _check_refusal(data, case)


@pytest.mark.slow
@settings(max_examples=6000, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data(), case=st.sampled_from(CASES))
def test_malformed_values_get_a_clean_error_naming_the_parameter_sweep(data, case):
    _check_refusal(data, case)
