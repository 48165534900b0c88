"""pldshuffle.bounds: validity ranges, the result type, bad input, the registry, docstring examples."""

import doctest
import importlib
import inspect
import math

import numpy as np
import pytest

from pldshuffle import bounds as b

# --- validity ranges: nan with a reason, never ε0

OUT_OF_RANGE = [
    (
        b.efmrtt19_epsilon_result,
        dict(num_users=5000, local_epsilon=0.5, target_delta=1e-6),
        "local_epsilon < 1/2",
    ),
    (
        b.efmrtt19_epsilon_result,
        dict(num_users=999, local_epsilon=0.4, target_delta=1e-6),
        "num_users >= 1000",
    ),
    (b.efmrtt19_epsilon_result, dict(num_users=5000, local_epsilon=0.4, target_delta=0.01), "delta < 1/100"),
    (b.efmrtt19_delta_result, dict(num_users=5000, local_epsilon=0.4, target_epsilon=0.01), "delta < 1/100"),
    (
        b.efmrtt19_local_epsilon_result,
        dict(num_users=5000, target_epsilon=1.0, target_delta=1e-6),
        "local_epsilon < 1/2",
    ),
    (
        b.bbgn19_thm31_epsilon_result,
        dict(num_users=1000, gamma=0.1, domain_size=5, target_delta=1e-7),
        "eps <= 1",
    ),
    (b.bbgn19_thm31_delta_result, dict(num_users=10**5, gamma=0.1, domain_size=5, target_epsilon=1.5), "eps <= 1"),
    (b.bbgn19_thm31_delta_result, dict(num_users=1000, gamma=0.1, domain_size=5, target_epsilon=0.5), "27 / eps"),
    (b.fmt20_epsilon_result, dict(num_users=10**4, local_epsilon=4.0, target_delta=1e-6), "delta >="),
    (
        b.fmt20_epsilon_result,
        dict(num_users=10**4, local_epsilon=4.0, target_delta=3e-5, variant="apple_code"),
        "delta >=",
    ),
    (b.fmt20_delta_result, dict(num_users=100, local_epsilon=4.0, target_epsilon=0.5), "not valid for any delta"),
    (b.fmt20_delta_result, dict(num_users=10**4, local_epsilon=4.0, target_epsilon=0.01), "certifies no epsilon"),
    (b.fmt23_epsilon_result, dict(num_users=10**4, local_epsilon=6.0, target_delta=1e-6), "delta >="),
]


@pytest.mark.parametrize(("function", "kwargs", "phrase"), OUT_OF_RANGE)
def test_outside_validity_is_nan_with_reason(function, kwargs, phrase):
    result = function(**kwargs)
    assert math.isnan(result.value)
    assert phrase in result.reason
    plain = getattr(b, function.__name__.removesuffix("_result"))
    assert math.isnan(plain(**kwargs))


def test_validity_boundaries():
    # FMT20 needs ε0 <= log(n / (16 log(2/δ))); apple's code uses log(4/δ): valid in between only for focs21
    delta = 2.5e-5
    assert not math.isnan(b.fmt20_epsilon(num_users=10**4, local_epsilon=4.0, target_delta=delta))
    assert math.isnan(
        b.fmt20_epsilon(num_users=10**4, local_epsilon=4.0, target_delta=delta, variant="apple_code")
    )
    # FMT23: ε0 <= log(n / (8 log(2/δ)) - 1)
    n, delta = 10**5, 1e-6
    edge = math.log(n / (8 * math.log(2 / delta)) - 1)
    assert not math.isnan(b.fmt23_epsilon(num_users=n, local_epsilon=edge * (1 - 1e-9), target_delta=delta))
    assert math.isnan(b.fmt23_epsilon(num_users=n, local_epsilon=edge * (1 + 1e-9), target_delta=delta))
    # BBGN19 Thm 3.1 at exactly ε = 1 is inside the range
    gamma = 14 * 5 * math.log(2 / 1e-6) / 99_999  # first branch equal to 1 at n = 1e5, k = 5
    eps = b.bbgn19_thm31_epsilon(num_users=10**5, gamma=gamma, domain_size=5, target_delta=1e-6)
    assert eps == pytest.approx(1.0, rel=1e-12)


def test_delta_is_zero_beyond_local_epsilon_and_one_at_zero():
    for function in (
        b.bbgn19_thm53_delta_result,
        b.bbgn19_hoeffding_delta_result,
        b.bbgn19_bennett_delta_result,
    ):
        beyond = function(num_users=1000, local_epsilon=1.0, target_epsilon=1.0)
        assert beyond.value == 0.0 and "post-processing" in beyond.note
        assert function(num_users=1000, local_epsilon=1.0, target_epsilon=0.0).value == 1.0


def test_unproven_curves_are_flagged():
    printed = b.bbgn19_bennett_epsilon_result(
        num_users=5000, local_epsilon=0.4, target_delta=1e-6, lemma56_as_printed=True
    )
    corrected = b.bbgn19_bennett_epsilon_result(num_users=5000, local_epsilon=0.4, target_delta=1e-6)
    assert not printed.proven and "not a proven bound" in printed.note
    assert corrected.proven and printed.value != corrected.value
    c1 = b.bbgn19_thm31_delta_result(num_users=1000, gamma=0.1, domain_size=5, target_epsilon=3.0, strict=False)
    assert not c1.proven and 0.0 < c1.value < 1.0


def test_fmt23_results_carry_the_restricted_class_label():
    assert (
        "restricted class"
        in b.fmt23_epsilon_result(num_users=10**5, local_epsilon=2.0, target_delta=1e-6).note
    )
    limited = b.fmt23_delta_result(num_users=10**4, local_epsilon=2.0, target_epsilon=3.0)
    assert "restricted class" in limited.note and "validity range" in limited.note
    assert b.fmt20_epsilon_result(num_users=10**5, local_epsilon=2.0, target_delta=1e-6).note is None


def test_bound_result_invariants():
    with pytest.raises(ValueError, match="reason"):
        b.BoundResult(math.nan)
    with pytest.raises(ValueError, match="reason"):
        b.BoundResult(1.0, reason="no")
    assert float(b.BoundResult(0.5)) == 0.5


def test_plain_float_functions_mirror_results():
    names = [name for name in b.__all__ if name.endswith("_result")]
    assert len(names) == 21
    for name in names:
        plain = getattr(b, name.removesuffix("_result"))
        assert plain.__name__ == name.removesuffix("_result")
        assert inspect.signature(plain).parameters == inspect.signature(getattr(b, name)).parameters
        assert inspect.signature(plain).return_annotation is float


# --- bad input


def bad(function, error, name, base, **overrides):
    """One bad-input case: ``function(**(base | overrides))`` raises ``error`` mentioning ``name``."""
    return function, {**base, **overrides}, error, name


EF = dict(num_users=5000, local_epsilon=0.4, target_delta=1e-6)
FMT = dict(num_users=10**5, local_epsilon=1.0)
KRR = dict(num_users=100, gamma=0.1, domain_size=5, target_delta=1e-6)
BLANKET = dict(num_users=100, local_epsilon=1.0, target_delta=1e-6)
CAL = dict(bound="hoeffding", num_users=100, target_epsilon=0.1, target_delta=1e-6)
RDP = dict(local_epsilon=1.0, alpha=2.0)
RDP_EPS = dict(local_epsilon=1.0, target_epsilon=1.0)
GDP = dict(num_users=10, local_epsilon=1.0, target_delta=1e-6)
COMP = dict(round_epsilon=1.0, round_delta=0.0, rounds=2)

BAD_INPUT = [
    bad(b.efmrtt19_epsilon, TypeError, "num_users", EF, num_users=True),
    bad(b.efmrtt19_epsilon, ValueError, "num_users", EF, num_users=1000.5),
    bad(b.efmrtt19_epsilon, ValueError, "local_epsilon", EF, local_epsilon=-1.0),
    bad(b.efmrtt19_epsilon, TypeError, "local_epsilon", EF, local_epsilon="0.4"),
    bad(b.fmt20_epsilon, ValueError, "target_delta", FMT, target_delta=0.0),
    bad(b.fmt20_epsilon, ValueError, "target_delta", FMT, target_delta=1.0),
    bad(b.fmt20_epsilon, ValueError, "variant", FMT, target_delta=1e-6, variant="v2"),
    bad(b.fmt20_delta, ValueError, "epsilon", FMT, target_epsilon=-0.1),
    bad(b.fmt23_delta, ValueError, "local_epsilon", FMT, local_epsilon=math.inf, target_epsilon=0.1),
    bad(b.bbgn19_thm31_epsilon, ValueError, "num_users", KRR, num_users=1),
    bad(b.bbgn19_thm31_epsilon, ValueError, "gamma", KRR, gamma=1.5),
    bad(b.bbgn19_thm31_epsilon, ValueError, "exactly one", KRR, gamma=None),
    bad(b.bbgn19_thm31_epsilon, ValueError, "exactly one", KRR, local_epsilon=1.0),
    bad(b.bbgn19_thm31_epsilon, ValueError, "domain_size", KRR, domain_size=1),
    bad(b.bbgn19_thm31_epsilon, TypeError, "strict", KRR, strict="no"),
    bad(b.bbgn19_hoeffding_epsilon, ValueError, "randomizer", BLANKET, randomizer="gauss"),
    bad(b.bbgn19_hoeffding_epsilon, ValueError, "domain_size", BLANKET, domain_size=4),
    bad(b.bbgn19_hoeffding_epsilon, TypeError, "local_epsilon", BLANKET, local_epsilon=None),  # a missing argument
    bad(b.bbgn19_hoeffding_epsilon, ValueError, "gamma must be < 1", KRR, gamma=1.0, randomizer="krr"),
    bad(b.bbgn19_bennett_delta, TypeError, "lemma56_as_printed", FMT, target_epsilon=0.1, lemma56_as_printed=1),
    bad(b.bbgn19_local_epsilon, ValueError, "bound", CAL, bound="chernoff"),
    bad(b.bbgn19_local_epsilon, ValueError, "thm53", CAL, bound="thm53", randomizer="krr", domain_size=2),
    bad(b.bbgn19_local_epsilon, ValueError, "max_local_epsilon", CAL, max_local_epsilon=0.05),
    bad(b.bbgn19_local_epsilon, ValueError, "lemma56_as_printed", CAL, lemma56_as_printed=True),
    bad(b.blanket_parameters, ValueError, "must be < local_epsilon", dict(randomizer="generic"), **RDP_EPS),
    bad(b.rdp_pure_dp, ValueError, "alpha", RDP, alpha=1.0),
    bad(b.rdp_pure_dp, ValueError, "alpha", RDP, alpha=[2.0, np.nan]),
    bad(b.rdp_pure_dp, TypeError, "alpha", RDP, alpha="2"),
    bad(b.rdp_pure_dp, ValueError, "form", RDP, form="zcdp"),
    bad(b.gddks21_rdp_upper, ValueError, "num_users", RDP, num_users=0),
    bad(b.gddks21_rdp_lower, ValueError, "alpha", RDP, num_users=10, alpha=0.5),
    bad(b.gddks21_dp_epsilon, ValueError, "rounds", GDP, rounds=0),
    bad(b.gddks21_dp_epsilon, ValueError, "conversion", GDP, conversion="optimal"),
    bad(b.rdp_to_dp_epsilon, ValueError, "same shape", dict(rdp=[0.1, 0.2], alpha=[2.0], target_delta=1e-6)),
    bad(b.rdp_to_dp_epsilon, ValueError, "rdp", dict(rdp=[-0.1], alpha=[2.0], target_delta=1e-6)),
    bad(b.rdp_to_dp_delta, TypeError, "rdp", dict(rdp=["x"], alpha=[2.0], target_epsilon=1.0)),
    bad(b.basic_composition, ValueError, "round_delta", COMP, round_delta=1.0),
    bad(b.advanced_composition, ValueError, "slack_delta", COMP, slack_delta=0.0),
    bad(b.kov_composition_bound, ValueError, "round_epsilon", COMP, round_epsilon=-1.0, slack_delta=0.1),
    bad(b.kov_exact_delta, ValueError, "rounds", COMP, rounds=2.5, target_epsilon=1.0),
    bad(b.kov_exact_epsilon, ValueError, "target_delta", COMP, target_delta=2.0),
    bad(b.get_baseline, ValueError, "name", dict(name="fmt21")),
]


@pytest.mark.parametrize(("function", "kwargs", "error", "name"), BAD_INPUT)
def test_bad_input_names_the_parameter(function, kwargs, error, name):
    with pytest.raises(error, match=name):
        function(**kwargs)


def test_compose_epsilon_bad_input():
    with pytest.raises(TypeError, match="epsilon_of_delta"):
        b.compose_epsilon(0.5, rounds=2, target_delta=1e-6)
    per_round = lambda target_delta: 0.5  # noqa: E731
    with pytest.raises(ValueError, match="method"):
        b.compose_epsilon(per_round, rounds=2, target_delta=1e-6, method="moments")
    with pytest.raises(ValueError, match="rounds"):
        b.compose_epsilon(per_round, rounds=0, target_delta=1e-6)
    with pytest.raises(ValueError, match="same orders"):
        b.rdp_compose([1.0, 2.0], [1.0])
    with pytest.raises(ValueError, match="at least one"):
        b.rdp_compose()


def test_rdp_compose_adds():
    alpha = np.array([2.0, 4.0])
    one = b.rdp_pure_dp(local_epsilon=1.0, alpha=alpha)
    np.testing.assert_allclose(b.rdp_compose(one, one, one), 3 * one)
    assert b.rdp_compose(0.5, 0.25) == 0.75


# --- composition of baselines


def test_compose_epsilon_reports_the_split_and_skips_nan():
    def per_round(target_delta):
        return b.fmt20_epsilon(num_users=10**4, local_epsilon=4.0, target_delta=target_delta)

    result = b.compose_epsilon_result(per_round, rounds=4, target_delta=1e-4, method="advanced")
    d = result.details
    assert 4 * d["round_delta"] + d["slack_delta"] == pytest.approx(1e-4, rel=1e-12)
    assert d["round_delta"] >= 2.1e-5 / 4 or math.isnan(
        per_round(d["round_delta"])
    )  # FMT20 needs δ >= 2.1e-5
    assert result.value == pytest.approx(
        b.advanced_composition(
            round_epsilon=d["round_epsilon"],
            round_delta=d["round_delta"],
            rounds=4,
            slack_delta=d["slack_delta"],
        ).epsilon
    )
    nothing = b.compose_epsilon_result(per_round, rounds=4, target_delta=1e-6, method="kov_exact")
    assert math.isnan(nothing.value) and "no guarantee" in nothing.reason


def test_compose_epsilon_methods_ranked():
    per_round = lambda target_delta: b.fmt20_epsilon(
        num_users=10**6, local_epsilon=2.0, target_delta=target_delta
    )  # noqa: E731
    values = {
        m: b.compose_epsilon(per_round, rounds=50, target_delta=1e-6, method=m) for m in b.COMPOSITION_METHODS
    }
    assert values["kov_exact"] <= values["kov_bound"] <= values["advanced"] < values["basic"]


def test_compose_accepts_result_functions():
    from functools import partial

    per_round = partial(b.bbgn19_thm31_epsilon_result, num_users=10**5, gamma=0.25, domain_size=4)
    result = b.compose_epsilon_result(per_round, rounds=2, target_delta=1e-6, method="basic")
    assert result.value == pytest.approx(2 * per_round(target_delta=5e-7).value)


# --- registry


SETTING = dict(num_users=10**4, local_epsilon=2.0, domain_size=4, target_delta=1e-6, target_epsilon=0.5, rounds=2)


@pytest.mark.parametrize("name", list(b.BASELINES))
def test_registry_entries_evaluate(name):
    entry = b.get_baseline(name)
    assert entry.name == name and entry.kind in b.KINDS and entry.paper and entry.theorem and entry.validity
    assert entry.proven_upper_bound == (entry.kind == "upper")
    provided = [q for q in b.QUANTITIES if getattr(entry, q) is not None]
    assert provided
    for quantity in provided:
        if quantity == "rdp":
            value = entry.evaluate("rdp", alpha=np.array([2.0, 8.0]), **SETTING)
            assert np.all(value > 0)
        else:
            result = entry.evaluate(quantity, **SETTING)
            assert isinstance(result, b.BoundResult)
            assert result.proven == (entry.kind != "unproven")
            assert math.isnan(result.value) or result.value >= 0


def test_registry_rejects_missing_quantity():
    with pytest.raises(ValueError, match="no 'rdp'"):
        b.get_baseline("fmt20").evaluate("rdp", alpha=2.0)
    with pytest.raises(ValueError, match="quantity"):
        b.get_baseline("fmt20").evaluate("renyi", alpha=2.0)


# --- docstring examples


@pytest.mark.parametrize("module", ["bbgn19_blanket", "rdp", "composition"])
def test_docstring_examples(module):
    result = doctest.testmod(importlib.import_module(f"pldshuffle.bounds.{module}"))
    assert result.attempted > 0 and result.failed == 0


@pytest.mark.parametrize(
    "call, match",
    [
        (lambda: b.gddks21_rdp_lower(num_users=2**53, local_epsilon=1.0, alpha=2.0), "gddks21_rdp_upper"),
        (lambda: b.bbgn19_bennett_epsilon(num_users=10**18, randomizer="generic", local_epsilon=1.0,
                                               target_delta=1e-8, lemma56_as_printed=True), "lemma56_as_printed=False"),
    ],
)
def test_linear_baselines_refuse_huge_users_up_front(call, match):
    """The baselines that sum over every count 0..n raised MemoryError (64 PiB) at n = 2**53; they are
    refused up front, naming the limit and the alternative."""
    with pytest.raises(ValueError, match=rf"num_users must be <= 1e\+08.*{match}"):
        call()
    # The corrected Bennett bound and the RDP upper bound are O(1) in n and still answer.
    assert b.bbgn19_bennett_epsilon(num_users=10**18, randomizer="generic", local_epsilon=1.0, target_delta=1e-8) > 0
    assert b.gddks21_rdp_upper(num_users=2**53, local_epsilon=1.0, alpha=2.0) > 0
