"""Balle–Bell–Gascón–Nissim, CRYPTO'19, Thm 3.1: shuffled k-ary randomized response (Chernoff).

The shuffled kRR with blanket probability γ (BBGN19 Alg. 1: report uniform on ``[k]`` w.p. γ, else
the truth) is ``(ε, δ)``-DP for ``ε <= 1``, ``δ ∈ (0, 1]`` whenever

.. math:: \\gamma \\ge \\max\\Big\\{\\frac{14k\\log(2/\\delta)}{(n-1)\\varepsilon^2},
          \\frac{27k}{(n-1)\\varepsilon}\\Big\\}.

Solved for the smallest certified ε and, conversely, for δ. The proof is for the blanket adversary
(the server knows who randomized), i.e. Koskela et al.'s "strong adversary".

``strict=False`` drops the condition ``ε <= 1`` and keeps only the first branch; that is the curve
Koskela–Heikkilä–Honkela (2021) plot from their eq. (C.1), which is **not a proven bound** above
ε = 1. It is offered for figure parity only and its results carry ``proven=False``.
"""

from __future__ import annotations

import math

from .._validation import check_delta
from ._common import (
    check_analytic_users,
    BoundResult,
    check_flag,
    check_target_epsilon,
    krr_parameters,
    no_guarantee,
    plain_float,
)

__all__ = [
    "bbgn19_thm31_delta",
    "bbgn19_thm31_delta_result",
    "bbgn19_thm31_epsilon",
    "bbgn19_thm31_epsilon_result",
]

_UNPROVEN = (
    "Koskela et al. (2021) eq. (C.1) curve: BBGN19 Thm 3.1 without its condition eps <= 1; "
    "not a proven bound"
)


def _scale(num_users: object, domain_size: object, gamma: object, local_epsilon: object) -> float:
    """``(n - 1) γ / k``, the effective number of blanket reports per output symbol."""
    n = check_analytic_users(num_users, minimum=2)
    k, g, _ = krr_parameters(domain_size, gamma, local_epsilon)
    return (n - 1) * g / k


def _unproven(value: float) -> BoundResult:
    return BoundResult(value, proven=False, note=_UNPROVEN)


def bbgn19_thm31_epsilon_result(
    *,
    num_users: int,
    domain_size: int,
    target_delta: float,
    gamma: float | None = None,
    local_epsilon: float | None = None,
    strict: bool = True,
) -> BoundResult:
    """Smallest ε certified by BBGN19 Thm 3.1 for shuffled kRR.

    .. math:: \\varepsilon(\\delta) = \\max\\Big\\{\\sqrt{\\frac{14k\\log(2/\\delta)}{(n-1)\\gamma}},
              \\frac{27k}{(n-1)\\gamma}\\Big\\}

    Parameters
    ----------
    num_users : int
        Number of users ``n >= 2``.
    domain_size : int
        Domain size ``k >= 2``.
    target_delta : float
        δ in (0, 1).
    gamma, local_epsilon : float
        Exactly one: the blanket probability γ in (0, 1], or ε0 with ``γ = k/(e^{ε0}+k-1)``
        (BBGN19 Lemma 5.1).
    strict : bool
        ``True`` (default): ``nan`` when the certified ε exceeds 1 (the theorem's range).
        ``False``: the first branch only, for every δ: Koskela et al.'s eq. (C.1) curve, **not a
        proven bound** (``proven=False`` on the result).

    Returns
    -------
    BoundResult

    References
    ----------
    Balle, Bell, Gascón, Nissim, CRYPTO 2019, Thm 3.1; Koskela, Heikkilä, Honkela, "Tight accounting
    in the shuffle model of differential privacy" (2021), App. C.1, eq. (C.1).
    """
    scale = _scale(num_users, domain_size, gamma, local_epsilon)
    delta = check_delta(target_delta)
    strict = check_flag("strict", strict)
    chernoff = math.sqrt(14.0 * math.log(2.0 / delta) / scale)
    if not strict:
        return _unproven(chernoff)
    value = max(chernoff, 27.0 / scale)
    if value > 1.0:
        return no_guarantee(f"BBGN19 Thm 3.1 requires eps <= 1; the smallest certified eps is {value:.6g}")
    return BoundResult(value)


def bbgn19_thm31_delta_result(
    *,
    num_users: int,
    domain_size: int,
    target_epsilon: float,
    gamma: float | None = None,
    local_epsilon: float | None = None,
    strict: bool = True,
) -> BoundResult:
    """δ(ε) of BBGN19 Thm 3.1: ``2 exp(-(n-1) γ ε² / (14 k))``, clipped to 1.

    Valid for ``ε <= 1`` and ``(n-1) γ / k >= 27 / ε``; ``nan`` otherwise (unless ``strict=False``,
    which drops both conditions and returns the unproven eq. (C.1) curve).

    Parameters
    ----------
    num_users, domain_size, gamma, local_epsilon, strict
        As in :func:`bbgn19_thm31_epsilon_result`.
    target_epsilon : float
        ε >= 0 at which δ is evaluated.

    Returns
    -------
    BoundResult

    References
    ----------
    Balle, Bell, Gascón, Nissim, CRYPTO 2019, Thm 3.1.
    """
    scale = _scale(num_users, domain_size, gamma, local_epsilon)
    eps = check_target_epsilon(target_epsilon)
    strict = check_flag("strict", strict)
    value = min(1.0, 2.0 * math.exp(-scale * eps * eps / 14.0))
    if not strict:
        return _unproven(value)
    if eps > 1.0:
        return no_guarantee(f"BBGN19 Thm 3.1 requires eps <= 1, got target_epsilon = {eps!r}")
    if scale * eps < 27.0:
        return no_guarantee(
            f"BBGN19 Thm 3.1 requires (n-1) gamma / k >= 27 / eps; here (n-1) gamma / k = {scale:.6g} "
            f"< {27.0 / eps if eps > 0 else math.inf:.6g}"
        )
    return BoundResult(value)


bbgn19_thm31_epsilon = plain_float(bbgn19_thm31_epsilon_result)
bbgn19_thm31_delta = plain_float(bbgn19_thm31_delta_result)
