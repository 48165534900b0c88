"""Export to Google's ``dp_accounting``: compose shuffle rounds with DP-SGD or any other mechanism there.

``dp_accounting`` is an optional dependency (``pip install dp-accounting``), imported on use.

How a pair is exported
----------------------
dp-accounting builds a privacy loss distribution from two probability mass functions
(``from_two_probability_mass_functions(log_pmf_lower=Q, log_pmf_upper=P, ...)``, loss ``log P/Q``
under ``P``).  A pldshuffle pair holds privacy loss distributions, not pmfs, so a dominating pmf pair
is reconstructed from the forward direction ``P/Q`` (losses ``s_i``, masses ``ω_i``):

* one outcome per loss: ``P = ω_i``, ``Q = ω_i e^{-s_i}`` (the ``P/Q`` loss is ``s_i``);
* one outcome with ``P = infinity_mass + truncated_mass``, ``Q = 0`` (loss ``+inf``; truncated mass is
  booked there, pessimistically);
* one outcome with ``P = 0``, ``Q = 1 - Σ ω_i e^{-s_i}``: the rest of ``Q``, at ``Q/P`` loss ``+inf``.

The ``P/Q`` direction of this pair equals the forward distribution; its ``Q/P`` direction has the exact
``Q/P`` losses on the kept outcomes and all other ``Q`` mass at ``+inf``, so it dominates the true
backward direction.  (The reconstructed masses carry float64 rounding, about 1e-16 absolute, far below
dp-accounting's own unreported rounding errors.)  The export is therefore an upper bound in both directions (before dp-accounting's
own rounding), and is passed with ``symmetric=False`` unless the pair is declared symmetric.

Which pair
----------
A mechanism's upper bound may be the worst case over several pairs (e.g. ``ShuffledBinaryRR(n,
..., dataset="worst")`` has one pair per dataset).  A single dp-accounting distribution cannot
represent a maximum over pairs, so such families are refused unless ``member`` picks one; a guarantee
then needs the largest ε over all members (``len(mechanism.pair_family().upper)`` of them).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ._kernels import UNIT_ROUNDOFF
from ._validation import check_int, check_positive_finite
from .mechanisms.base import DEFAULT_TAIL_MASS, ShuffleMechanism
from .pld import LossDistribution, PrivacyLossPair

__all__ = ["certified_to_dp_accounting", "from_dp_accounting", "from_dp_event", "to_dp_accounting", "to_log_pmfs"]

_Q_REST = "Q-only"
_P_INFINITY = "P-only"


def to_log_pmfs(direction: LossDistribution) -> tuple[dict[Any, float], dict[Any, float]]:
    """Dominating pmf pair ``(log_pmf_lower = Q, log_pmf_upper = P)`` whose ``P/Q`` PLD is ``direction``.

    Parameters
    ----------
    direction : LossDistribution
        The ``P/Q`` privacy loss distribution.

    Returns
    -------
    (dict, dict)
        Natural-log masses keyed by outcome (``0..N-1`` for the finite losses, ``"P-only"`` and
        ``"Q-only"`` for the two extra outcomes; see the module notes).
    """
    losses, masses = direction.losses, direction.masses
    log_p = np.log(masses)
    log_q = log_p - losses
    upper: dict[Any, float] = dict(enumerate(log_p.tolist()))
    lower: dict[Any, float] = dict(enumerate(log_q.tolist()))
    p_infinity = direction.infinity_mass + direction.truncated_mass
    if p_infinity > 0.0:
        upper[_P_INFINITY] = math.log(p_infinity)
    q_rest = 1.0 - math.fsum(np.exp(log_q).tolist())
    if q_rest > 0.0:
        lower[_Q_REST] = math.log(q_rest)
    return lower, upper


def _select_pair(source: ShuffleMechanism | PrivacyLossPair, member: int | None, tail_mass: float) -> PrivacyLossPair:
    if isinstance(source, PrivacyLossPair):
        if member is not None:
            raise ValueError("member applies to mechanisms only; a PrivacyLossPair is exported as is")
        return source
    if not isinstance(source, ShuffleMechanism):
        raise TypeError(f"expected a pldshuffle mechanism or PrivacyLossPair, got {type(source).__name__}")
    family = source.pair_family(tail_mass=tail_mass)
    members = family.upper
    if member is None:
        if len(members) > 1:
            raise ValueError(
                f"{source.describe()}: its upper bound is the worst case over {len(members)} pairs, which one "
                f"dp_accounting distribution cannot represent; pass member=0..{len(members) - 1} and take the "
                "largest ε over all members for a guarantee"
            )
        member = 0
    index = check_int("member", member, minimum=0, maximum=len(members) - 1)
    return members[index]


def to_dp_accounting(
    mechanism_or_pair: ShuffleMechanism | PrivacyLossPair,
    *,
    value_discretization_interval: float = 1e-4,
    pessimistic_estimate: bool = True,
    count: int = 1,
    member: int | None = None,
    tail_mass: float = DEFAULT_TAIL_MASS,
) -> Any:
    """Export one round (or ``count`` rounds) as a ``dp_accounting`` ``PrivacyLossDistribution``.

    Parameters
    ----------
    mechanism_or_pair : ShuffleMechanism or PrivacyLossPair
        A mechanism (its upper-bound pair is exported) or a pair.
    value_discretization_interval : float
        dp-accounting's grid spacing.
    pessimistic_estimate : bool
        dp-accounting's rounding direction (``True``: rounds losses up, an upper bound up to its
        floating-point error).
    count : int
        Self-compose the exported distribution ``count`` times (dp-accounting's ``self_compose``).
    member : int, optional
        Index into ``mechanism.pair_family().upper`` for mechanisms whose upper bound is a maximum over
        several pairs (required for those; see the module notes).
    tail_mass : float
        Passed to ``pair_family`` (mass dropped by truncation, booked at ``+inf`` in the export).

    Returns
    -------
    dp_accounting.pld.privacy_loss_distribution.PrivacyLossDistribution
        Compose it with others (``.compose``) and query ``get_epsilon_for_delta`` there.  For a
        mechanism whose result is not a guarantee (``is_guarantee=False``), neither is the export.

    Raises
    ------
    ImportError
        If ``dp_accounting`` is not installed.

    Examples
    --------
    >>> import pldshuffle as ps
    >>> from pldshuffle.interop import to_dp_accounting
    >>> pld = to_dp_accounting(ps.ShuffledBinaryRR(1000, 1.0, dataset="khh21"), count=4)
    >>> 0.25 < pld.get_epsilon_for_delta(1e-6) < 0.27
    True
    """
    try:
        from dp_accounting.pld import privacy_loss_distribution
    except ImportError as exc:
        raise ImportError(
            "to_dp_accounting needs the optional dependency dp-accounting: `pip install dp-accounting` "
            "(or `pip install pldshuffle[dp-accounting]`)"
        ) from exc
    check_positive_finite("value_discretization_interval", value_discretization_interval)
    count = check_int("count", count, minimum=1)
    pair = _select_pair(mechanism_or_pair, member, tail_mass)
    log_q, log_p = to_log_pmfs(pair.forward)
    pld = privacy_loss_distribution.from_two_probability_mass_functions(
        log_q,
        log_p,
        pessimistic_estimate=bool(pessimistic_estimate),
        value_discretization_interval=float(value_discretization_interval),
        symmetric=pair.backward is None,
    )
    return pld if count == 1 else pld.self_compose(count)


def _dp_accounting_pld_module() -> Any:
    try:
        from dp_accounting.pld import pld_pmf, privacy_loss_distribution
    except ImportError as exc:
        raise ImportError(
            "this export/import needs the optional dependency dp-accounting: `pip install dp-accounting` "
            "(or `pip install pldshuffle[dp-accounting]`)"
        ) from exc
    return pld_pmf, privacy_loss_distribution


def certified_to_dp_accounting(pld: Any) -> Any:
    """Export a composed :class:`~pldshuffle.CertifiedPLD` (a whole ledger) to ``dp_accounting``.

    The exported distribution is the ledger's dominating measure (one per order) on the same lattice,
    with every certified error term folded in (round-off added to each mass, wrap-around and truncated
    mass at ``+∞``), so its privacy profile is ≥ the ledger's exact profile at every ε: compose it there
    with DP-SGD or any other mechanism and dp-accounting's own answers stay upper bounds (up to
    dp-accounting's own unreported floating point).

    Returns
    -------
    dp_accounting.pld.privacy_loss_distribution.PrivacyLossDistribution
    """
    pld_pmf, privacy_loss_distribution = _dp_accounting_pld_module()
    pmfs = []
    for measure in pld.dominating_measures():
        nz = np.flatnonzero(measure.masses > 0)
        probs = {int(measure.start + i): float(measure.masses[i]) for i in nz}
        pmfs.append(
            pld_pmf.create_pmf(probs, float(pld.spacing), min(1.0, float(measure.infinity)), pessimistic_estimate=True)
        )
    return privacy_loss_distribution.PrivacyLossDistribution(pmfs[0], pmfs[1] if len(pmfs) > 1 else None)


def from_dp_accounting(pld: Any, *, description: str = "privacy loss distribution imported from dp-accounting",
                       neighboring_relation: str = "add-remove") -> Any:
    """Import a ``dp_accounting`` ``PrivacyLossDistribution`` (e.g. DP-SGD's) as a composable mechanism.

    Both of its loss distributions (remove and add) become the two orders of a
    :class:`~pldshuffle.PairMechanism`, with their exact lattice losses and infinity masses; the ledger
    then discretises and composes them like any other pair.  The result is a guarantee for the original
    mechanism exactly when the imported distribution dominates it -- true for dp-accounting's
    pessimistic estimates (``pessimistic_estimate=True``, its default), which is checked here.

    ``neighboring_relation`` is the relation the distribution was built for: dp-accounting's default
    (and DP-SGD's) is add/remove of one example, ``"add-remove"``.  A ledger refuses to mix relations; to
    compose DP-SGD with replace-one shuffle rounds, build the distribution for replace-one neighbours
    (e.g. the Gaussian mechanism with ``sensitivity=2``, or dp-accounting's ``NeighboringRelation.REPLACE_ONE``)
    and state it here with ``neighboring_relation="replace-one"``: that statement is yours to make.

    Raises
    ------
    ValueError
        If the distribution was built with ``pessimistic_estimate=False`` (an optimistic estimate is not
        an upper bound and cannot enter a certified ledger).
    """
    from .mechanisms.generic import PairMechanism

    directions = []
    for pmf in (pld._pmf_remove, pld._pmf_add):
        dense = pmf.to_dense_pmf()
        if not dense._pessimistic_estimate:
            raise ValueError("pld must be a pessimistic estimate (pessimistic_estimate=True) to enter a certified ledger")
        losses = (dense._lower_loss + np.arange(dense._probs.size)) * dense._discretization
        masses = np.asarray(dense._probs, dtype=np.float64)
        # dp-accounting's masses may sum to 1 + O(1e-10) (its rounding); the excess is within our slack.
        scale = min(1.0, (1.0 - dense._infinity_mass) / max(masses.sum(), 1e-300))
        # The imported lattice is the pair: its losses err only by the rounding of (lower + i)·Δ.
        error = 4.0 * UNIT_ROUNDOFF * (1.0 + float(np.max(np.abs(losses), initial=0.0)))
        directions.append(LossDistribution(losses, masses * scale, infinity_mass=float(dense._infinity_mass), loss_error=error))
    backward = None if pld._symmetric else directions[1]
    return PairMechanism(PrivacyLossPair(directions[0], backward, label=description), description=description,
                         neighboring_relation=neighboring_relation)


def from_dp_event(event: Any) -> ShuffleMechanism:
    """The pldshuffle mechanism of a dp-accounting ``DpEvent``, where one exists.

    * ``RandomAllocationDpEvent(event=GaussianDpEvent(σ), num_selected=k, num_steps=t)`` (dp-accounting
      releases after 0.6.0) -> :class:`~pldshuffle.RandomAllocation` ``(t, k, noise_multiplier=σ)``;
    * ``GaussianDpEvent(σ)`` -> ``RandomAllocation(1, noise_multiplier=σ)`` (one Gaussian step).

    Both are for add/remove neighbours, as in dp-accounting.  Events are recognised by their class name and
    fields, so no particular dp-accounting release is needed.  Compose epochs with ``count=``.

    Raises
    ------
    ValueError
        For any other event (named in the message), or a random allocation of non-Gaussian steps.
    """
    from .mechanisms.allocation import RandomAllocation

    name = type(event).__name__
    if name == "GaussianDpEvent":
        return RandomAllocation(1, noise_multiplier=float(event.noise_multiplier))
    if name == "RandomAllocationDpEvent":
        inner = event.event
        if type(inner).__name__ != "GaussianDpEvent":
            raise ValueError(f"from_dp_event supports random allocation of Gaussian steps only, got steps {type(inner).__name__}")
        return RandomAllocation(int(event.num_steps), num_selected=int(event.num_selected), noise_multiplier=float(inner.noise_multiplier))
    raise ValueError(f"from_dp_event supports RandomAllocationDpEvent and GaussianDpEvent, got {name}")
