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

Which pair: worst cases over datasets
-------------------------------------
A mechanism's guarantee may be the worst case over many dataset pairs (e.g. ``ShuffledBinaryRR(n, ε0)``,
whose default ``dataset="worst"`` ranges over every dataset).  One dp-accounting distribution cannot hold a
maximum over pairs, and no single dataset pair is a guarantee: composed over rounds whose data may change,
an adversary that picks each round's dataset after seeing the earlier outputs gets more than any one pair
gives (and more than the largest ε over pairs, each composed with itself: 2RR n = 3, ε0 = 1, 3 rounds,
δ = 0.3 gives 0.4581 that way, while the exact adaptive worst case is 0.5472).

So :func:`to_dp_accounting` exports what the accountant itself composes: the ``count`` rounds are composed
by :class:`~pldshuffle.FourierAccountant` on the lattice of spacing ``value_discretization_interval``, and
their certified dominating measure (every error term folded in, :func:`certified_to_dp_accounting`) is the
exported distribution.  Its privacy profile is at least that of the worst case over datasets in the setting
asked for, at every ε:

* default, "data may change between rounds" (``same_data=False``): valid whatever datasets the rounds see,
  also chosen adaptively, and composable in dp-accounting with anything else;
* ``same_data=True``: the ``count`` rounds as one block on the same dataset (tighter), valid ONLY when every
  one of these rounds sees the same dataset.

Composing that distribution further in dp-accounting (with DP-SGD, or with itself) is sound: a dominating
pair stays dominating under composition, also adaptive.  To compose ``count`` rounds, pass ``count`` here
rather than calling ``self_compose`` there: the accountant bounds the rounds together (adaptively), which is
tighter than composing the one-round dominating pair ``count`` times.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ._kernels import UNIT_ROUNDOFF
from ._validation import MAX_SPACING, check_flag, check_int, check_positive_finite, check_probability, check_text
from .mechanisms.base import DEFAULT_TAIL_MASS, ShuffleMechanism
from .pld import LossDistribution, PrivacyLossPair
from .results import warn_if_not_guarantee

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
    if not isinstance(direction, LossDistribution):
        raise TypeError(f"direction must be a LossDistribution, got {type(direction).__name__}")
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


def _single_pair(source: ShuffleMechanism | PrivacyLossPair, tail_mass: float) -> PrivacyLossPair | None:
    """The one pair that ``source`` is (a :class:`PrivacyLossPair`, or a mechanism of one pair), or ``None``
    for a worst case over several pairs (exported through the accountant, see the module notes)."""
    if isinstance(source, PrivacyLossPair):
        return source
    if not isinstance(source, ShuffleMechanism):
        raise TypeError(
            f"mechanism_or_pair must be a pldshuffle mechanism or a PrivacyLossPair, got {type(source).__name__}"
        )
    family = source.pair_family(tail_mass=tail_mass)
    return family.upper[0] if len(family.upper) == 1 and family.cells is None else None


def to_dp_accounting(
    mechanism_or_pair: ShuffleMechanism | PrivacyLossPair,
    *,
    value_discretization_interval: float = 1e-4,
    pessimistic_estimate: bool = True,
    count: int = 1,
    same_data: bool = False,
    tail_mass: float = DEFAULT_TAIL_MASS,
) -> Any:
    """Export ``count`` rounds of a mechanism (or a pair) as a ``dp_accounting`` ``PrivacyLossDistribution``.

    Parameters
    ----------
    mechanism_or_pair : ShuffleMechanism or PrivacyLossPair
        A mechanism or a pair.  A mechanism of one pair, or a pair, is exported from its pmfs (module
        notes).  A worst case over datasets (several pairs, e.g. ``ShuffledBinaryRR(n, ε0)``) is composed
        by :class:`~pldshuffle.FourierAccountant` and its certified dominating measure is exported.
    value_discretization_interval : float
        dp-accounting's grid spacing (for a worst case over datasets, also the accountant's lattice).
        Distributions composed in dp-accounting must share it.
    pessimistic_estimate : bool
        dp-accounting's rounding direction for one pair (``True``: rounds losses up, an upper bound up to
        its floating-point error).  A worst case over datasets is exported pessimistically only:
        ``False`` is refused there.
    count : int
        Number of rounds.  One pair: its distribution self-composed ``count`` times (dp-accounting's
        ``self_compose``).  A worst case over datasets: the ``count`` rounds composed by the accountant,
        in the setting ``same_data`` names.
    same_data : bool
        ``False`` (default): the data may change between the ``count`` rounds (chosen adaptively or not);
        the export is a guarantee for any datasets.  ``True``: every one of the ``count`` rounds sees the
        SAME dataset, a tighter export that is valid only under that assumption.  Makes no difference
        for one pair or for ``count=1``.
    tail_mass : float
        Mass each pair may drop by truncation (booked at ``+inf`` in the export).

    Returns
    -------
    dp_accounting.pld.privacy_loss_distribution.PrivacyLossDistribution
        Compose it with others (``.compose``) and query ``get_epsilon_for_delta`` there.  For a mechanism
        whose result is not a guarantee (``is_guarantee=False``, e.g. ``dataset="khh21"``: one dataset pair,
        a lower bound on the worst case), neither is the export; a :class:`~pldshuffle.NotAGuaranteeWarning`
        says so.

    Raises
    ------
    ImportError
        If ``dp_accounting`` is not installed.
    ValueError
        For ``pessimistic_estimate=False`` with a worst case over datasets, or a ``count`` (with
        ``value_discretization_interval``) whose composition does not fit the accountant's memory cap.

    Notes
    -----
    Cost: one pair, dp-accounting's discretisation and ``self_compose``.  A worst case over datasets, the
    accountant's composition (:class:`~pldshuffle.FourierAccountant`) on the fixed lattice.

    Examples
    --------
    >>> import math
    >>> import pldshuffle as ps
    >>> from pldshuffle.interop import to_dp_accounting
    >>> coin = ps.PrivacyLossPair.from_probability_mass_functions([0.75, 0.25], [0.25, 0.75])
    >>> pld = to_dp_accounting(coin, count=4)  # one pair (randomized response with e^ε = 3), 4 rounds
    >>> abs(pld.get_epsilon_for_delta(1e-6) - 4 * math.log(3)) < 1e-3  # the largest loss, 4 ln 3
    True

    A worst case over datasets, 3 rounds whose data may change (the default): a guarantee.

    >>> worst = to_dp_accounting(ps.ShuffledBinaryRR(3, 1.0), count=3)
    >>> round(worst.get_epsilon_for_delta(0.3), 3)
    0.547
    """
    _, privacy_loss_distribution = _dp_accounting_pld_module()
    check_positive_finite("value_discretization_interval", value_discretization_interval, MAX_SPACING)
    count = check_int("count", count, minimum=1)
    same_data = check_flag("same_data", same_data)
    pessimistic_estimate = check_flag("pessimistic_estimate", pessimistic_estimate)
    tail_mass = check_probability("tail_mass", tail_mass)
    pair = _single_pair(mechanism_or_pair, tail_mass)
    if pair is None:
        return _worst_case_to_dp_accounting(mechanism_or_pair, value_discretization_interval, pessimistic_estimate,  # type: ignore[arg-type]
                                            count, same_data, tail_mass)
    if isinstance(mechanism_or_pair, ShuffleMechanism):
        family = mechanism_or_pair.pair_family(tail_mass=tail_mass)
        warn_if_not_guarantee(family.is_guarantee, family.caveats)
    log_q, log_p = to_log_pmfs(pair.forward)
    pld = privacy_loss_distribution.from_two_probability_mass_functions(
        log_q,
        log_p,
        pessimistic_estimate=bool(pessimistic_estimate),
        value_discretization_interval=float(value_discretization_interval),
        symmetric=pair.backward is None,
    )
    return pld if count == 1 else pld.self_compose(count)


def _worst_case_to_dp_accounting(
    mechanism: ShuffleMechanism, spacing: float, pessimistic_estimate: bool, count: int, same_data: bool, tail_mass: float
) -> Any:
    """A worst case over datasets: the accountant's certified dominating measure of the ``count`` rounds."""
    from .accountant import FourierAccountant

    if not pessimistic_estimate:
        raise ValueError(
            f"pessimistic_estimate=False is refused for {mechanism.describe()}: a worst case over datasets is "
            "exported as its certified dominating pair only (an optimistic estimate of a maximum over pairs "
            "would bound nothing)"
        )
    accountant = FourierAccountant(value_discretization_interval=spacing, tail_mass=tail_mass)
    pld = accountant.compose(mechanism, count, same_data=same_data).certified_pld()
    warn_if_not_guarantee(pld.is_guarantee, pld.caveats)
    return certified_to_dp_accounting(pld)


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
    from .pld.certified import CertifiedPLD

    if not isinstance(pld, CertifiedPLD):
        raise TypeError(f"pld must be a pldshuffle CertifiedPLD (FourierAccountant.certified_pld()), got {type(pld).__name__}")
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
    TypeError
        If ``pld`` is not a dp-accounting ``PrivacyLossDistribution``.
    ValueError
        If the distribution was built with ``pessimistic_estimate=False`` (an optimistic estimate is not
        an upper bound and cannot enter a certified ledger).
    """
    from .mechanisms.generic import PairMechanism

    _, privacy_loss_distribution = _dp_accounting_pld_module()
    if not isinstance(pld, privacy_loss_distribution.PrivacyLossDistribution):
        raise TypeError(
            "pld must be a dp_accounting.pld.privacy_loss_distribution.PrivacyLossDistribution, got "
            f"{type(pld).__name__}"
        )
    check_text("description", description)
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
