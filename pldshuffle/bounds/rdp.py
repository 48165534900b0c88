"""Rényi DP tools shared by the RDP baselines: pure-DP RDP, composition, RDP→DP conversion.

* :func:`rdp_pure_dp`: the RDP curve implied by ``(ε0, 0)``-DP, in three forms;
* :func:`rdp_compose`: adaptive composition adds RDP curves order by order (Mironov'17 Prop. 1,
  GDDKS21 Lemma 2.2);
* :func:`rdp_to_dp_epsilon_result` / :func:`rdp_to_dp_delta_result`: the conversion of GDDKS21
  Lemma 2.1 (Canonne–Kamath–Steinke'20 Prop. 12, Asoodeh et al.) or Mironov's classic one,
  minimised over a grid of orders.

:data:`DEFAULT_ORDERS` are the integers 2..256 plus 60 geometric integer orders up to 20000: for
``n = 10^6`` the optimal order is about 1500, and a grid capped at 256 inflates ε by almost 3×.
"""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import ArrayLike
from scipy.special import expit

from .._validation import check_choice, check_delta, check_real_array, show
from ._common import BoundResult, check_alpha, check_local_epsilon, check_target_epsilon, plain_float

__all__ = [
    "CONVERSIONS",
    "DEFAULT_ORDERS",
    "PURE_DP_FORMS",
    "rdp_compose",
    "rdp_pure_dp",
    "rdp_to_dp_delta",
    "rdp_to_dp_delta_result",
    "rdp_to_dp_epsilon",
    "rdp_to_dp_epsilon_result",
]

#: RDP orders used when none are given: 2..256 and 60 geometric integer orders up to 20000.
DEFAULT_ORDERS = np.unique(
    np.concatenate([np.arange(2, 257), np.round(np.geomspace(256, 20000, 60))])
).astype(float)
DEFAULT_ORDERS.flags.writeable = False

#: RDP→DP conversions: GDDKS21 Lemma 2.1 ("improved") and Mironov'17 Prop. 3 ("classic").
CONVERSIONS = ("improved", "classic")

#: Forms of the RDP of an ε0-DP mechanism.
PURE_DP_FORMS = ("tight", "bs16", "trivial")


def as_output(values: np.ndarray, alpha: ArrayLike) -> float | np.ndarray:
    """A float for a scalar ``alpha``, else an array of ``alpha``'s shape."""
    return float(values) if np.ndim(alpha) == 0 else values


def tight_pure_dp_rdp(eps0: float, alpha: np.ndarray) -> np.ndarray:
    """Rényi divergence of binary randomized response with parameter ε0 (validated inputs).

    ``(1/(α-1)) log((e^{αε0} + e^{(1-α)ε0}) / (1 + e^{ε0}))``, written as
    ``log1p((1-p) expm1(sε0) + p expm1(-sε0)) / s`` with ``s = α - 1``, ``p = 1/(1+e^{ε0})`` (accurate
    as α → 1), and through ``logaddexp`` when ``s ε0`` is large (no overflow).
    """
    s = alpha - 1.0
    p = expit(-eps0)
    small = s * eps0 <= 50.0
    s_small = np.where(small, s, 0.0)
    near = np.log1p((1.0 - p) * np.expm1(s_small * eps0) + p * np.expm1(-s_small * eps0))
    far = np.logaddexp(alpha * eps0, (1.0 - alpha) * eps0) - np.logaddexp(0.0, eps0)
    rdp: np.ndarray = np.where(small, near, far) / s
    return rdp


def rdp_pure_dp(
    *, local_epsilon: float, alpha: float | np.ndarray, form: str = "tight"
) -> float | np.ndarray:
    """RDP ε(α) implied by ``(ε0, 0)``-DP.

    ========  ====================================================================  =========================
    form      ε(α)                                                                  source
    ========  ====================================================================  =========================
    trivial   ``ε0``                                                                Mironov'17 (D_α <= D_∞)
    bs16      ``α ε0² / 2``                                                         Bun–Steinke'16 Prop. 3.3
    tight     ``(1/(α-1)) log((e^{αε0} + e^{(1-α)ε0}) / (1 + e^{ε0}))``             binary RR (see Notes)
    ========  ====================================================================  =========================

    Parameters
    ----------
    local_epsilon : float
        ε0 > 0.
    alpha : float or array_like
        Orders > 1.
    form : {"tight", "bs16", "trivial"}

    Returns
    -------
    float or numpy.ndarray
        Same shape as ``alpha``.

    Notes
    -----
    ``tight`` is the Rényi divergence of binary randomized response; every ε0-DP pair is a
    post-processing of that pair (Kairouz–Oh–Viswanath'15), so it bounds every ε0-DP mechanism and is
    attained. It never exceeds the other two forms.

    Examples
    --------
    >>> round(rdp_pure_dp(local_epsilon=1.0, alpha=2.0), 6)
    0.735326
    """
    eps0 = check_local_epsilon(local_epsilon)
    orders = check_alpha(alpha)
    name = check_choice("form", form, PURE_DP_FORMS)
    if name == "trivial":
        values = np.full_like(orders, eps0)
    elif name == "bs16":
        values = orders * eps0 * eps0 / 2.0
    else:
        values = tight_pure_dp_rdp(eps0, orders)
    return as_output(values, alpha)


def rdp_compose(*curves: float | np.ndarray) -> float | np.ndarray:
    """Adaptive composition of RDP curves evaluated on the same orders: their pointwise sum.

    ``k`` identical rounds are ``k * curve``. Mironov'17 Prop. 1; GDDKS21 Lemma 2.2.

    Parameters
    ----------
    *curves : float or array_like
        ε_t(α) of each round, all on the same orders (same shape).

    Returns
    -------
    float or numpy.ndarray
    """
    if not curves:
        raise ValueError("rdp_compose needs at least one RDP curve")
    arrays = [check_real_array(f"curves[{i}]", c) for i, c in enumerate(curves)]
    shapes = {a.shape for a in arrays}
    if len(shapes) != 1:
        raise ValueError(f"RDP curves must be evaluated on the same orders; got shapes {sorted(shapes)}")
    return as_output(np.sum(arrays, axis=0), curves[0])


def _curve(rdp: ArrayLike, alpha: ArrayLike) -> tuple[np.ndarray, np.ndarray]:
    orders = check_alpha(alpha).ravel()
    values = check_real_array("rdp", rdp).ravel()
    if values.shape != orders.shape:
        raise ValueError(f"rdp and alpha must have the same shape; got {np.shape(rdp)} and {np.shape(alpha)}")
    if np.any(np.isnan(values) | (values < 0.0)):
        raise ValueError(f"rdp values must be >= 0 (inf allowed), got {show(rdp)}")
    return orders, values


def _best(candidates: np.ndarray, orders: np.ndarray) -> tuple[float, float]:
    i = int(np.argmin(candidates))
    return float(candidates[i]), float(orders[i])


def rdp_to_dp_epsilon_result(
    *, rdp: float | np.ndarray, alpha: float | np.ndarray, target_delta: float, conversion: str = "improved"
) -> BoundResult:
    """ε(δ) from an RDP curve, minimised over the given orders.

    .. math:: \\varepsilon = \\min_\\lambda\\ \\varepsilon(\\lambda)
              + \\frac{\\log(1/\\delta) + (\\lambda-1)\\log(1-1/\\lambda) - \\log\\lambda}{\\lambda-1}

    (``improved``; ``classic`` drops the last two terms of the numerator). Clipped at 0.

    Parameters
    ----------
    rdp : float or array_like
        ε(λ) at the orders ``alpha`` (>= 0; ``inf`` allowed).
    alpha : float or array_like
        Orders λ > 1, same shape as ``rdp``.
    target_delta : float
        δ in (0, 1).
    conversion : {"improved", "classic"}

    Returns
    -------
    BoundResult
        ``details["alpha"]`` is the optimal order.

    References
    ----------
    Girgis et al., CCS 2021, Lemma 2.1; Canonne, Kamath, Steinke 2020, Prop. 12; Mironov 2017,
    Prop. 3.
    """
    orders, values = _curve(rdp, alpha)
    log_inv_delta = -math.log(check_delta(target_delta))
    if check_choice("conversion", conversion, CONVERSIONS) == "improved":
        numerator = log_inv_delta + (orders - 1.0) * np.log1p(-1.0 / orders) - np.log(orders)
    else:
        numerator = np.full_like(orders, log_inv_delta)
    value, order = _best(values + numerator / (orders - 1.0), orders)
    return BoundResult(max(0.0, value), details={"alpha": order})


def rdp_to_dp_delta_result(
    *, rdp: float | np.ndarray, alpha: float | np.ndarray, target_epsilon: float, conversion: str = "improved"
) -> BoundResult:
    """δ(ε) from an RDP curve, minimised over the given orders (clipped to 1).

    .. math:: \\delta = \\min_\\lambda \\frac{e^{(\\lambda-1)(\\varepsilon(\\lambda)-\\varepsilon)}}
              {\\lambda-1}\\Big(1-\\frac1\\lambda\\Big)^{\\lambda}

    (``improved``; ``classic`` is ``min_λ e^{(λ-1)(ε(λ)-ε)}``). Parameters and references as in
    :func:`rdp_to_dp_epsilon_result`, with ``target_epsilon`` >= 0.
    """
    orders, values = _curve(rdp, alpha)
    eps = check_target_epsilon(target_epsilon)
    log_delta = (orders - 1.0) * (values - eps)
    if check_choice("conversion", conversion, CONVERSIONS) == "improved":
        log_delta = log_delta + orders * np.log1p(-1.0 / orders) - np.log(orders - 1.0)
    value, order = _best(log_delta, orders)
    return BoundResult(math.exp(min(0.0, value)), details={"alpha": order})


rdp_to_dp_epsilon = plain_float(rdp_to_dp_epsilon_result)
rdp_to_dp_delta = plain_float(rdp_to_dp_delta_result)
