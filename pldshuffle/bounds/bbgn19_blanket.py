"""Balle–Bell–Gascón–Nissim, CRYPTO'19, §5: parameters of the privacy amplification variable.

For a local randomizer with total variation similarity γ and blanket ω, the privacy amplification
random variable is ``L = (μ_x(W) - e^ε μ_x'(W)) / ω(W)`` with ``W ~ ω`` and ``E L = 1 - e^ε``.
The blanket bounds of §5 need γ, the maximum ``b_+`` of ``L``, its range ``b`` and a bound ``c`` on
``E L²``:

============  =======================  ==========================================  ==========================
randomizer    γ                        b_+                                          source
============  =======================  ==========================================  ==========================
``generic``   ``[e^{-ε0}, 1]``         ``γ e^{ε0} (1 - e^{ε-2ε0})``                 Lemmas 5.2, 5.4
``krr``       ``k / (e^{ε0} + k - 1)`` ``γ (1 - e^ε) + (1 - γ) k``                  Lemmas 5.1(1), 5.7
``laplace``   ``e^{-ε0/2}``            ``e^{ε0/2} (1 - e^{ε-ε0})``                  Lemmas 5.1(2), 5.8
============  =======================  ==========================================  ==========================

For the generic randomizer γ is unknown; as in the authors' code ``1/γ`` and the binomial use
``γ_lb = e^{-ε0}`` while ``b``, ``b_+`` and ``c`` use ``γ_ub = 1`` (and ``γ_lb`` inside ``c``).
Every quantity is kept as a logarithm so that ε0 up to about 700 neither overflows nor cancels.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from .._validation import check_choice, show
from .._krr_gamma import krr_log_gamma
from ._common import check_local_epsilon, check_target_epsilon, krr_parameters, log1mexp, log_expm1, logaddexp

__all__ = ["RANDOMIZERS", "BlanketParameters", "blanket_parameters"]

#: Local randomizers with specialised blanket parameters (BBGN19 Lemmas 5.4, 5.7, 5.8).
RANDOMIZERS = ("generic", "krr", "laplace")

_LOG2 = math.log(2.0)


@dataclass(frozen=True)
class BlanketParameters:
    """Natural logarithms of the §5 quantities for one randomizer, ε0 and ε (with ``ε < ε0``).

    Attributes
    ----------
    log_gamma_lower, log_gamma_upper : float
        Bounds on the total variation similarity γ (equal unless ``randomizer="generic"``).
    log_max_loss : float
        ``log b_+``, the upper end of the range of ``L``.
    log_loss_range : float
        ``log b`` with ``b = b_+ - b_-``.
    log_second_moment : float
        ``log c`` with ``c >= E L²`` (exact for kRR).
    """

    log_gamma_lower: float
    log_gamma_upper: float
    log_max_loss: float
    log_loss_range: float
    log_second_moment: float


def _generic(eps0: float, eps: float) -> BlanketParameters:
    log_cosh_term = logaddexp(2.0 * eps, 0.0)
    return BlanketParameters(
        log_gamma_lower=-eps0,
        log_gamma_upper=0.0,
        log_max_loss=eps0 + log1mexp(eps - 2.0 * eps0),
        log_loss_range=logaddexp(eps, 0.0) + eps0 + log1mexp(-2.0 * eps0),
        # c = e^{ε0}(e^{2ε}+1) - 2 γ_lb e^{ε-2ε0}, factored as e^{ε0}(e^{2ε}+1)(1 - 2e^{ε-4ε0}/(e^{2ε}+1))
        log_second_moment=eps0 + log_cosh_term + log1mexp(_LOG2 + eps - 4.0 * eps0 - log_cosh_term),
    )


def _krr(eps0: float, eps: float, k: int) -> BlanketParameters:
    log_gamma = krr_log_gamma(k, eps0)
    log_denominator = math.log(k) - log_gamma  # log(e^{ε0} + k - 1)
    log_one_minus_gamma = log_expm1(eps0) - log_denominator
    log_var_blanket = log_gamma + math.log1p(math.exp(log_one_minus_gamma)) + 2.0 * log_expm1(eps)
    log_var_rest = 2.0 * log_one_minus_gamma + math.log(k) + logaddexp(2.0 * eps, 0.0)
    return BlanketParameters(
        log_gamma_lower=log_gamma,
        log_gamma_upper=log_gamma,
        # γ(1 - e^ε) + (1 - γ)k = k (e^{ε0} - e^ε) / (e^{ε0} + k - 1)
        log_max_loss=math.log(k) + eps0 + log1mexp(eps - eps0) - log_denominator,
        log_loss_range=log_one_minus_gamma + math.log(k) + logaddexp(eps, 0.0),
        log_second_moment=logaddexp(log_var_blanket, log_var_rest),
    )


def _laplace(eps0: float, eps: float) -> BlanketParameters:
    log_positive = logaddexp(2.0 * eps, 0.0) - math.log(3.0) + logaddexp(_LOG2 + eps0 / 2.0, -eps0)
    log_negative = _LOG2 + eps - eps0 / 2.0 + math.log(2.0 - math.exp(-eps0 / 2.0))
    return BlanketParameters(
        log_gamma_lower=-eps0 / 2.0,
        log_gamma_upper=-eps0 / 2.0,
        log_max_loss=eps0 / 2.0 + log1mexp(eps - eps0),
        log_loss_range=logaddexp(eps, 0.0) + eps0 / 2.0 + log1mexp(-eps0),
        log_second_moment=log_positive + log1mexp(log_negative - log_positive),
    )


def log_blanket_parameters(randomizer: str, eps0: float, eps: float, k: int | None) -> BlanketParameters:
    """Unchecked core of :func:`blanket_parameters` (validated inputs, ``0 <= eps < eps0``)."""
    if randomizer == "generic":
        return _generic(eps0, eps)
    if randomizer == "krr":
        if k is None:
            raise ValueError("randomizer='krr' needs the domain size k")
        return _krr(eps0, eps, k)
    return _laplace(eps0, eps)


def resolve_randomizer(
    randomizer: object, local_epsilon: object, domain_size: object, gamma: object
) -> tuple[str, float, int | None]:
    """Validate the randomizer description; return ``(randomizer, ε0, k)``.

    ``krr`` needs ``domain_size`` and exactly one of ``gamma`` / ``local_epsilon``; ``generic`` and
    ``laplace`` need ``local_epsilon`` and accept neither ``domain_size`` nor ``gamma``.
    """
    name = check_choice("randomizer", randomizer, RANDOMIZERS)
    if name == "krr":
        k, _, eps0 = krr_parameters(domain_size, gamma, local_epsilon)
        if eps0 == 0.0:
            raise ValueError(
                f"gamma must be < 1 for the blanket bounds (gamma = 1 is eps0 = 0), got {show(gamma)}"
            )
        return name, eps0, k
    if domain_size is not None or gamma is not None:
        raise ValueError(
            f"domain_size and gamma apply only to randomizer='krr'; got randomizer={name!r}, "
            f"domain_size={domain_size!r}, gamma={gamma!r}"
        )
    if local_epsilon is None:
        # A missing argument, as Python itself reports one: TypeError.
        raise TypeError(f"local_epsilon is required for randomizer={name!r}")
    return name, check_local_epsilon(local_epsilon), None


def blanket_parameters(
    *,
    randomizer: str,
    target_epsilon: float,
    local_epsilon: float | None = None,
    domain_size: int | None = None,
    gamma: float | None = None,
) -> BlanketParameters:
    """Log-parameters (γ, b_+, b, c) of BBGN19's privacy amplification variable.

    Parameters
    ----------
    randomizer : {"generic", "krr", "laplace"}
        Any ε0-LDP randomizer (Lemma 5.4), k-ary randomized response (Lemma 5.7), or the Laplace
        mechanism on [0, 1] (Lemma 5.8).
    target_epsilon : float
        Central ε, ``0 <= ε < ε0``.
    local_epsilon : float, optional
        ε0 > 0 (required except for ``krr`` given by ``gamma``).
    domain_size, gamma : optional
        ``krr`` only: k >= 2, and γ in (0, 1] instead of ``local_epsilon``.

    Returns
    -------
    BlanketParameters
        Natural logarithms of γ_lb, γ_ub, b_+, b and c.

    Examples
    --------
    >>> import math
    >>> p = blanket_parameters(randomizer="krr", target_epsilon=0.25, local_epsilon=4.0, domain_size=2)
    >>> round(math.exp(p.log_max_loss), 6)
    1.917838

    References
    ----------
    Balle, Bell, Gascón, Nissim, CRYPTO 2019, Lemmas 5.1, 5.2, 5.4, 5.7, 5.8.
    """
    name, eps0, k = resolve_randomizer(randomizer, local_epsilon, domain_size, gamma)
    eps = check_target_epsilon(target_epsilon)
    if not eps < eps0:
        raise ValueError(
            f"epsilon must be < local_epsilon (the amplification variable is only used there); "
            f"got target_epsilon={eps!r}, local_epsilon={eps0!r}"
        )
    return log_blanket_parameters(name, eps0, eps, k)
