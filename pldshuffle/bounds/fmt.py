"""Feldman–McMillan–Talwar clone bounds in closed form: FMT20 (FOCS'21) and FMT23 (SODA'23).

Both are ε(δ) statements for shuffled ε0-LDP reports, valid above a minimum δ:

* ``fmt20`` ("Hiding among the clones", Thm 3.1; any, even adaptive, ε0-LDP randomizers), for
  ``ε0 <= log(n / (16 log(2/δ)))``, i.e. ``δ >= 2 exp(-n e^{-ε0} / 16)``:

  .. math:: \\varepsilon \\le \\log\\Big(1 + \\frac{e^{\\varepsilon_0}-1}{e^{\\varepsilon_0}+1}
            \\Big(\\frac{8\\sqrt{e^{\\varepsilon_0}\\log(4/\\delta)}}{\\sqrt n}
            + \\frac{8e^{\\varepsilon_0}}{n}\\Big)\\Big)

  Variants: ``focs21`` (default, above), ``arxiv_v1`` (without the factor
  ``(e^{ε0}-1)/(e^{ε0}+1)``; Koskela et al.'s eq. (C.2)) and ``apple_code`` (the closed form of
  ``apple/ml-shuffling-amplification``: ``log(1 + (1-e^{-ε0})/(1+e^{-ε0-ε1}) (e^{ε1}-1))`` with
  ε1 the ``arxiv_v1`` value, valid for ``ε0 <= log(n / (16 log(4/δ)))``). The two variants are
  looser than ``focs21``.
* ``fmt23`` ("Stronger privacy amplification by shuffling", Thm 3.2 eq. (3)), for
  ``ε0 <= log(n / (8 log(2/δ)) - 1)``, i.e. ``δ >= 2 exp(-n / (8 (e^{ε0} + 1)))``:

  .. math:: \\varepsilon \\le \\log\\Big(1 + (e^{\\varepsilon_0}-1)
            \\Big(\\frac{4\\sqrt{2\\log(4/\\delta)}}{\\sqrt{(e^{\\varepsilon_0}+1)n}}
            + \\frac4n\\Big)\\Big)

  **Restricted class.** By the paper's erratum (§7) the proof of Lemma 3.5 fails for
  ``p < 1/(e^{ε0}+1)``; the theorem holds for the class ``S_ε0``, i.e. randomizers with
  ``R(z)(y)(e^{ε0}+1) ≥ R(x)(y) + R(x')(y)`` for all inputs ``x, x', z`` and outputs ``y`` (k-ary and
  binary RR; the erratum also lists RAPPOR, but symmetric RAPPOR, OUE, OLH and subset selection fail this
  test at their true ε0 -- see :attr:`pldshuffle.randomizers.Randomizer.in_fmt23_class`), not for every
  ε0-LDP randomizer (see ``docs/mathematics.md#baselines`` and ``docs/mathematics.md#clone-reductions``).

Outside the δ range the result is ``nan``. δ(ε) is the numeric inverse: ε(δ) decreases in δ, so the
smallest δ in ``[δ_min, 1]`` with ``ε(δ) <= ε`` is found by a scan in ``log δ`` and ``brentq``; if
ε(δ_min) already satisfies the target, ``δ_min`` is returned with a note.
"""

from __future__ import annotations

import math

import numpy as np

from .._validation import check_choice, check_delta
from ..pld.inversion import first_crossing
from ._common import (
    check_analytic_users,
    BoundResult,
    check_local_epsilon,
    check_target_epsilon,
    no_guarantee,
    plain_float,
)

__all__ = [
    "FMT20_VARIANTS",
    "fmt20_delta",
    "fmt20_delta_result",
    "fmt20_epsilon",
    "fmt20_epsilon_result",
    "fmt23_delta",
    "fmt23_delta_result",
    "fmt23_epsilon",
    "fmt23_epsilon_result",
]

#: Readings of FMT20 Thm 3.1 (see the module docstring).
FMT20_VARIANTS = ("focs21", "arxiv_v1", "apple_code")

_LOG2 = math.log(2.0)
_LOG4 = math.log(4.0)


def _log_delta_min(bound: str, n: int, eps0: float) -> float:
    """``log`` of the smallest δ inside the validity range."""
    if bound == "fmt23":
        return _LOG2 - n * math.exp(-eps0) / (8.0 * (1.0 + math.exp(-eps0)))  # n / (8 (e^{ε0} + 1))
    log_numerator = _LOG4 if bound == "apple_code" else _LOG2
    return log_numerator - n * math.exp(-eps0) / 16.0


def _epsilon(bound: str, n: int, eps0: float, log_delta: float) -> float:
    """The closed form ε(δ) (no range check)."""
    log_four_over_delta = _LOG4 - log_delta
    if bound == "fmt23":
        growth = 4.0 * math.sqrt(2.0 * log_four_over_delta / ((math.exp(eps0) + 1.0) * n)) + 4.0 / n
        return math.log1p(math.expm1(eps0) * growth)
    # arxiv_v1 core: e^{ε1} - 1 = 8 sqrt(e^{ε0} log(4/δ) / n) + 8 e^{ε0} / n
    v1 = 8.0 * math.sqrt(math.exp(eps0) * log_four_over_delta / n) + 8.0 * math.exp(eps0) / n
    if bound == "arxiv_v1":
        return math.log1p(v1)
    if bound == "focs21":
        return math.log1p(math.tanh(eps0 / 2.0) * v1)  # tanh(ε0/2) = (e^{ε0}-1)/(e^{ε0}+1)
    eps1 = math.log1p(v1)  # apple_code
    return math.log1p(-math.expm1(-eps0) * v1 / (1.0 + math.exp(-eps0 - eps1)))


def _label(bound: str) -> str:
    return "FMT23 Thm 3.2" if bound == "fmt23" else f"FMT20 Thm 3.1 ({bound})"


_RESTRICTED = (
    "FMT23 holds only for the restricted class S_eps0: R(z)(y)(e^eps0+1) >= R(x)(y) + R(x')(y) for all x, x', z, y "
    "(k-ary and binary RR; not symmetric RAPPOR, OUE, OLH or subset selection at their true eps0)"
)


def _result(bound: str, value: float, note: str | None = None, **details: float) -> BoundResult:
    """A result; FMT23's always carries the restricted-class label in ``note``."""
    if bound == "fmt23":
        note = _RESTRICTED if note is None else f"{_RESTRICTED}; {note}"
    return BoundResult(value, note=note, details=details)


def _epsilon_result(
    bound: str, num_users: object, local_epsilon: object, target_delta: object
) -> BoundResult:
    n = check_analytic_users(num_users)
    eps0 = check_local_epsilon(local_epsilon)
    log_delta = math.log(check_delta(target_delta))
    log_delta_min = _log_delta_min(bound, n, eps0)
    if log_delta < log_delta_min:
        return no_guarantee(
            f"{_label(bound)} needs delta >= {math.exp(log_delta_min):.6g} for num_users={n}, "
            f"local_epsilon={eps0:g} (its condition on local_epsilon fails)"
        )
    return _result(bound, _epsilon(bound, n, eps0, log_delta))


def _delta_result(bound: str, num_users: object, local_epsilon: object, target_epsilon: object) -> BoundResult:
    n = check_analytic_users(num_users)
    eps0 = check_local_epsilon(local_epsilon)
    eps = check_target_epsilon(target_epsilon)
    log_delta_min = _log_delta_min(bound, n, eps0)
    if log_delta_min >= 0.0:
        return no_guarantee(
            f"{_label(bound)} is not valid for any delta < 1 at num_users={n}, local_epsilon={eps0:g}"
        )
    grid = np.linspace(log_delta_min, 0.0, 200)
    log_delta = first_crossing(lambda x: _epsilon(bound, n, eps0, x), eps, grid)
    if log_delta is None:
        return no_guarantee(f"{_label(bound)} certifies no epsilon <= {eps:g} for any delta <= 1")
    if log_delta == log_delta_min:
        note = "limited by the validity range: smaller deltas are outside the theorem's range"
        return _result(bound, math.exp(log_delta), note, delta_min=math.exp(log_delta_min))
    return _result(bound, math.exp(log_delta))


def fmt20_epsilon_result(
    *, num_users: int, local_epsilon: float, target_delta: float, variant: str = "focs21"
) -> BoundResult:
    """ε(δ) of Feldman–McMillan–Talwar, "Hiding among the clones", Thm 3.1.

    Parameters
    ----------
    num_users : int
        Number of users n.
    local_epsilon : float
        ε0 > 0 of any (adaptive) ε0-LDP randomizers.
    target_delta : float
        δ in (0, 1); valid for ``δ >= 2 exp(-n e^{-ε0}/16)`` (``4 exp(...)`` for ``apple_code``).
    variant : {"focs21", "arxiv_v1", "apple_code"}
        Which reading of the theorem (module docstring); ``focs21`` is the published one.

    Returns
    -------
    BoundResult
        ε, or ``nan`` below the minimum δ.

    References
    ----------
    Feldman, McMillan, Talwar, FOCS 2021 (arXiv:2012.12803), Thm 3.1; Koskela, Heikkilä, Honkela
    (2021) eq. (C.2); ``apple/ml-shuffling-amplification``, ``computeamplification.py``.
    """
    return _epsilon_result(
        check_choice("variant", variant, FMT20_VARIANTS), num_users, local_epsilon, target_delta
    )


def fmt20_delta_result(
    *, num_users: int, local_epsilon: float, target_epsilon: float, variant: str = "focs21"
) -> BoundResult:
    """δ(ε) of FMT20 Thm 3.1: the smallest valid δ whose ε(δ) is at most ``target_epsilon``.

    Parameters as in :func:`fmt20_epsilon_result`, with ``target_epsilon`` >= 0. ``nan`` when no δ in the
    validity range reaches ``target_epsilon``.
    """
    return _delta_result(check_choice("variant", variant, FMT20_VARIANTS), num_users, local_epsilon, target_epsilon)


def fmt23_epsilon_result(*, num_users: int, local_epsilon: float, target_delta: float) -> BoundResult:
    """ε(δ) of Feldman–McMillan–Talwar, "Stronger amplification by shuffling", Thm 3.2 eq. (3).

    **Restricted class**: valid for randomizers in ``S_ε0`` (``R(z)(y)(e^{ε0}+1) ≥ R(x)(y) + R(x')(y)``:
    k-ary and binary RR; not symmetric RAPPOR, OUE, OLH or subset selection at their true ε0), not for
    every ε0-LDP randomizer (paper's erratum, §7).

    Parameters
    ----------
    num_users : int
        Number of users n.
    local_epsilon : float
        ε0 > 0.
    target_delta : float
        δ in (0, 1); valid for ``δ >= 2 exp(-n / (8 (e^{ε0} + 1)))``.

    Returns
    -------
    BoundResult
        ε, or ``nan`` below the minimum δ.

    References
    ----------
    Feldman, McMillan, Talwar, SODA 2023 (arXiv:2208.04591), Thm 3.2 eq. (3) and §7.
    """
    return _epsilon_result("fmt23", num_users, local_epsilon, target_delta)


def fmt23_delta_result(*, num_users: int, local_epsilon: float, target_epsilon: float) -> BoundResult:
    """δ(ε) of FMT23 Thm 3.2 (restricted class), the numeric inverse of :func:`fmt23_epsilon_result`."""
    return _delta_result("fmt23", num_users, local_epsilon, target_epsilon)


fmt20_epsilon = plain_float(fmt20_epsilon_result)
fmt20_delta = plain_float(fmt20_delta_result)
fmt23_epsilon = plain_float(fmt23_epsilon_result)
fmt23_delta = plain_float(fmt23_delta_result)
