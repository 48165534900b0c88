"""Calibration with the BBGN19 §5 bounds: the largest local ε0 that certifies a target (ε, δ).

Balle, Bell, Gascón, Nissim, "The privacy blanket of the shuffle model", CRYPTO 2019, §6.  The bounds
themselves are in :mod:`pldshuffle.bounds.bbgn19_bounds`.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from .._validation import check_choice, check_delta, check_flag, check_local_epsilon, check_positive_finite, show
from ..pld.inversion import last_feasible_of_first_run
from ._common import BoundResult, plain_float
from .bbgn19_bounds import BBGN19_BOUNDS, _blanket

__all__ = ["bbgn19_local_epsilon", "bbgn19_local_epsilon_result"]


def bbgn19_local_epsilon_result(
    *,
    bound: str,
    num_users: int,
    target_epsilon: float,
    target_delta: float,
    randomizer: str = "generic",
    domain_size: int | None = None,
    max_local_epsilon: float = 10.0,
    lemma56_as_printed: bool = False,
) -> BoundResult:
    """Largest ε0 for which a BBGN19 §5 bound certifies ``(ε, δ)`` after shuffling.

    Scans a 200-point linear grid of ε0 on ``[ε, max_local_epsilon]`` (``ε0 = ε`` is always
    feasible, δ = 0) and refines the end of the first feasible run with ``brentq``. If the whole
    grid is feasible, ``max_local_epsilon`` is returned with a ``note``.

    Parameters
    ----------
    bound : {"thm53", "hoeffding", "bennett"}
        The §5 bound (``thm53`` only with ``randomizer="generic"``).
    num_users : int
        Number of users n.
    target_epsilon : float
        Target central ε > 0.
    target_delta : float
        Target δ in (0, 1).
    randomizer : {"generic", "krr", "laplace"}
        As in :func:`bbgn19_hoeffding_delta_result`.
    domain_size : int, optional
        k for ``randomizer="krr"``.
    max_local_epsilon : float
        Upper end of the ε0 search (default 10, as in the authors' code).
    lemma56_as_printed : bool
        As in :func:`bbgn19_bennett_delta_result` (figure parity only).

    Returns
    -------
    BoundResult

    References
    ----------
    Balle, Bell, Gascón, Nissim, CRYPTO 2019, §6 (calibration of ε0).
    """
    name = check_choice("bound", bound, BBGN19_BOUNDS)
    eps = check_positive_finite("target_epsilon", target_epsilon)
    delta = check_delta(target_delta)
    top = check_local_epsilon(max_local_epsilon, "max_local_epsilon")
    if not top > eps:
        raise ValueError(f"max_local_epsilon must be > target_epsilon = {show(eps)}, got {show(max_local_epsilon)}")
    if name == "thm53" and randomizer != "generic":
        raise ValueError(f"bound='thm53' applies to randomizer='generic' only, got randomizer={randomizer!r}")
    if check_flag("lemma56_as_printed", lemma56_as_printed) and name != "bennett":
        raise ValueError(f"lemma56_as_printed applies to bound='bennett' only, got bound={name!r}")
    base = _blanket(name, num_users, randomizer, top, domain_size, None, lemma56_as_printed)

    def delta_at(eps0: float) -> float:
        return replace(base, local_epsilon=eps0).delta(eps)

    value = last_feasible_of_first_run(delta_at, delta, np.linspace(eps, top, 200))
    if value is None:  # cannot happen: delta_at(eps) = 0 (no amplification needed at local_epsilon = target_epsilon)
        raise RuntimeError(f"no feasible local_epsilon found for target_epsilon={eps!r}, delta={delta!r}")
    if value == top:
        return base.result(top, note="every local_epsilon up to max_local_epsilon is feasible; raise it")
    return base.result(value)


bbgn19_local_epsilon = plain_float(bbgn19_local_epsilon_result)
