"""When a certified bracket counts as loose: the rule behind :class:`~pldshuffle.LooseBoundWarning`.

Every ledger has a relative-gap target ``t`` (the accountant's ``relative_gap_target``, by default
:func:`pldshuffle.pld.sizing.relative_target`) and a scale ``s`` (:func:`pldshuffle.pld.sizing.gap_scale`) below
which the target is absolute.  A bracket is loose when

* **ε bracket** ``[lower, upper]`` at δ: ``upper - lower > t·max(upper, s)``.  An infinite upper end is
  not loose where δ is below the certified mass at +∞ (no finite ε exists there, or δ sits inside the
  bracket on that mass) or where the lower end is infinite too; it is loose where δ exceeds that mass, so
  that only the certified error terms keep ε from being finite.
* **δ bracket** ``[lower, upper]`` at ε: the upper end exceeds the certified *lower* δ at
  ``ε - t·max(ε, s)`` -- the bracket is wider than an ε bracket of the target's width would make it (a
  relative gap in δ alone is no measure: near δ = 1e-10 an ε gap of 1e-3 moves δ by several per cent) --
  and its relative gap in δ, ``(upper - lower)/upper``, exceeds ``t`` too (where δ is flat in ε, as where
  all the mass sits at +∞, no ε shift moves the lower end, and a bracket known to a relative ``t`` is tight).
  Upper ends of at most ``DELTA_FLOOR`` are never loose (the booked truncation mass, ~1e-17 a ledger,
  sits there, and the targets are stated for δ ≥ 1e-15), nor is δ at ε = ∞ (the mass at +∞).

Pure functions of numbers: no composition is built here.  O(1) per value.
"""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import NDArray

__all__ = ["DELTA_FLOOR", "delta_caveat", "epsilon_caveat", "shifted_epsilons"]

#: δ brackets whose upper end is at most this are never loose (see the module notes).
DELTA_FLOOR = 1e-15


def epsilon_caveat(lower: float, upper: float, *, delta: float, target: float, scale: float, infinity_upper: float) -> str | None:
    """The caveat of a loose ε bracket at ``delta`` (None when it meets the target).

    ``infinity_upper`` is the certified upper bound on the composed mass at +∞.
    """
    if math.isinf(upper):
        if math.isinf(lower) or delta < infinity_upper:
            return None
        return (
            f"loose bracket: no finite upper epsilon is certified at delta = {delta:.3g}, although delta exceeds the "
            f"composed mass at +inf (at most {infinity_upper:.3g}): the certified error terms exceed delta "
            f"(relative gap target {target:.3g})"
        )
    gap = upper - lower
    if gap <= target * max(upper, scale):
        return None
    return (
        f"loose bracket: relative gap {gap / upper:.3g} (absolute {gap:.3g}) exceeds the relative gap target {target:.3g}"
        + (f" (absolute {target * scale:.3g} below epsilon = {scale:.3g})" if upper < scale else "")
    )


def shifted_epsilons(epsilon: NDArray[np.float64], *, target: float, scale: float) -> NDArray[np.float64]:
    """``max(ε - t·max(ε, s), 0)``: where a δ bracket's lower end is compared (:func:`delta_caveat`)."""
    eps = np.asarray(epsilon, dtype=np.float64)
    with np.errstate(invalid="ignore"):  # ε = inf gives nan here; such points are never loose
        return np.maximum(eps - target * np.maximum(eps, scale), 0.0)


def delta_caveat(
    epsilon: NDArray[np.float64],
    lower: NDArray[np.float64],
    upper: NDArray[np.float64],
    shifted_lower: NDArray[np.float64],
    *,
    target: float,
    scale: float,
) -> str | None:
    """The caveat of δ brackets ``[lower, upper]`` loose at some of the ``epsilon`` (None when all meet the
    target).  ``shifted_lower`` holds the certified lower δ at :func:`shifted_epsilons` of ``epsilon``.
    """
    eps, here, up, low = (np.atleast_1d(np.asarray(a, dtype=np.float64)) for a in (epsilon, lower, upper, shifted_lower))
    loose = np.isfinite(eps) & (up > DELTA_FLOOR) & (up > low) & (up - here > target * up)
    if not np.any(loose):
        return None
    worst = int(np.argmax(np.where(loose, up / np.maximum(low, 1e-300), -np.inf)))
    where = f"at {int(loose.sum())} of {eps.size} epsilons, e.g. " if eps.size > 1 else ""
    return (
        f"loose bracket: {where}delta <= {up[worst]:.6g} at epsilon = {eps[worst]:.6g} exceeds the certified lower delta "
        f"{low[worst]:.6g} at epsilon = {float(shifted_epsilons(eps[worst], target=target, scale=scale)):.6g}: wider than "
        f"the relative gap target {target:.3g} in epsilon allows"
    )
