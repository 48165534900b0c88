"""Exact (un-discretised) privacy loss distributions of a neighbouring pair.

A :class:`LossDistribution` is the privacy loss distribution (PLD) of one *direction* ``P/Q`` of a
pair: the law of ``L = log(P(X)/Q(X))`` for ``X ~ P`` on ``{Q > 0}``, plus

* ``infinity_mass`` -- the exact mass ``P({Q = 0})`` at loss ``+inf``;
* ``truncated_mass`` -- probability mass of ``P`` that the mechanism dropped when it truncated its
  support by a tail bound.  Its losses are unknown, so upper bounds book it at ``+inf`` and lower
  bounds delete it (docs/mathematics.md, "Truncation of the supports"); both moves are monotone, hence strict.

A :class:`PrivacyLossPair` holds both directions (one, if the pair is symmetric).  The tight
``δ(ε)`` of a pair is ``max(H_{e^ε}(P||Q), H_{e^ε}(Q||P))`` where the hockey-stick divergence of one
direction is

.. math::  H_{e^\\varepsilon} = \\delta_\\infty + \\sum_{s>\\varepsilon} (1-e^{\\varepsilon-s})\\,\\omega(s).

Floating point.  Masses come from Boost/SciPy pmf evaluations (accurate to ~1e-15 relative near the mode
and to ~5e-12 in the tails at 1e8 trials, measured against mpmath) or from recurrences with a-priori
error bounds below 1e-10; a relative slack of ``MASS_RTOL`` on every mass and an absolute slack
proportional to the summed mass (``SUM_RTOL`` times the mass above ε, covering cancellation in suffix
sums) are booked into the upper and lower bounds so that the bracket stays strict under rounding.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import cached_property

import numpy as np
from numpy.typing import ArrayLike, NDArray

from .._kernels import UNIT_ROUNDOFF as _U, profile_at_points
from .._validation import check_probability, check_real, check_real_array, check_text, show
from .discretize import DiscretizedDirection, discretize

__all__ = ["MASS_RTOL", "SUM_RTOL", "LossDistribution", "PrivacyLossPair", "infinity_apart", "log_ratio_error"]

#: Assumed relative accuracy of each probability mass (Boost's binomial pmf: ≤ 5e-12 up to 1e8 trials).
MASS_RTOL = 1e-10
#: Relative error allowance for sums and suffix-sum cancellation, times the mass involved.
SUM_RTOL = 1e-12


def log_ratio_error(largest_log: float, relative_error: float = 0.0) -> float:
    """Bound on the absolute error of a loss computed as ``log(num) - log(den)`` (or as ``log1p`` of their
    difference over ``den``) in double precision, where the computed ``num`` and ``den`` are each within
    ``relative_error`` of the exact ones and ``|log num|, |log den| ≤ largest_log``.

    The inputs move the exact log-ratio by at most ``2·relative_error/(1 - relative_error)``; each logarithm
    errs by a few ulps of its value and the difference by one of the result.  O(1).
    """
    return 2.0 * relative_error / (1.0 - relative_error) + 8.0 * _U * (1.0 + 3.0 * largest_log)


def _clean(losses: NDArray[np.float64], masses: NDArray[np.float64]) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Sort by loss, drop zero masses and merge bit-identical losses (O(N log N))."""
    keep = masses > 0.0
    if not np.all(keep):
        losses, masses = losses[keep], masses[keep]
    if losses.size < 2 or np.all(losses[1:] > losses[:-1]):  # already sorted and distinct (common)
        return np.ascontiguousarray(losses), np.ascontiguousarray(masses)
    if np.all(losses[1:] < losses[:-1]):  # sorted the other way (the backward order of a monotone pair)
        return np.ascontiguousarray(losses[::-1]), np.ascontiguousarray(masses[::-1])
    order = np.argsort(losses, kind="stable")
    losses, masses = losses[order], masses[order]
    if losses.size > 1:
        unique, start = np.unique(losses, return_index=True)
        if unique.size < losses.size:
            masses = np.add.reduceat(masses, start)
            losses = unique
    return np.ascontiguousarray(losses), np.ascontiguousarray(masses)


@dataclass(frozen=True, eq=False)
class LossDistribution:
    """Privacy loss distribution of one direction of a pair (exact support, no grid).

    Parameters
    ----------
    losses, masses : array_like
        Finite privacy losses and their probability masses (under the numerator distribution).
        They are sorted, zero masses dropped and equal losses merged on construction.
    infinity_mass : float
        Mass at loss ``+inf`` (numerator mass where the denominator is 0).
    truncated_mass : float
        Mass dropped by tail truncation, location unknown (``+inf`` for upper bounds, deleted for lower).
    loss_error : float, optional
        Absolute bound on the error of every finite loss (each lies within it of the exact loss).  Bounds on
        the profile count it in full: over ``k`` rounds it can move ε by ``k·loss_error``, so mechanisms
        state the bound of their own computation (shuffled binary randomized response: ~1e-13 at
        ε0 = 1e-3).  Not given (NaN): the rounding of losses computed as ``log p - log q`` from exact
        masses, ``log_ratio_error`` of the largest ``|log p| + |loss| ≥ |log q|`` (a few ulps); give it
        when the losses come from approximate masses (``2·relative error`` of the masses, see
        :func:`log_ratio_error`).
    """

    losses: NDArray[np.float64]
    masses: NDArray[np.float64]
    infinity_mass: float = 0.0
    truncated_mass: float = 0.0
    loss_error: float = math.nan

    def __post_init__(self) -> None:
        losses = check_real_array("losses", self.losses).ravel()
        masses = check_real_array("masses", self.masses).ravel()
        if losses.shape != masses.shape:
            raise ValueError(f"losses and masses must have the same length, got {losses.size} and {masses.size}")
        if not np.all(np.isfinite(losses)):
            raise ValueError("losses must be finite; put mass at +inf into infinity_mass")
        if np.any(~np.isfinite(masses)) or np.any(masses < 0):
            raise ValueError("masses must be finite and non-negative")
        for name in ("infinity_mass", "truncated_mass"):
            check_probability(name, getattr(self, name), low_open=False, high_open=False)
        losses, masses = _clean(losses, masses)
        total = float(masses.sum()) + self.infinity_mass + self.truncated_mass
        if total > 1.0 + 1e-9:
            raise ValueError(f"total probability mass must be <= 1, got {show(total)}")
        object.__setattr__(self, "losses", losses)
        object.__setattr__(self, "masses", masses)
        loss_error = check_real("loss_error", self.loss_error)
        if math.isnan(loss_error):  # not given: a log-ratio's rounding
            # Of log p and log q = log p - loss: masses of 1e-300 round their logarithms far more than the loss.
            largest = float(np.max(np.abs(losses) - np.log(masses), initial=0.0))
            object.__setattr__(self, "loss_error", log_ratio_error(largest))
        elif not (math.isfinite(loss_error) and loss_error >= 0.0):
            raise ValueError(f"loss_error must be a finite float >= 0, got {show(self.loss_error)}")
        else:
            object.__setattr__(self, "loss_error", loss_error)

    # Suffix sums A_j = sum_{i>=j} m_i and B_j = sum_{i>=j} m_i e^{-s_i} (with a trailing 0) give
    # H(eps) = inf + A_j - e^eps B_j for the first j with s_j > eps, in O(log N) per query.  B is kept as
    # log B (log-sum-exp): e^{-s} over- or underflows for |s| > 709, e^{eps} B_j never exceeds A_j.  Built
    # on the first exact query only (most pairs are only discretised).
    @cached_property
    def _suffix_mass(self) -> NDArray[np.float64]:
        return np.concatenate([np.cumsum(self.masses[::-1])[::-1], [0.0]])

    @cached_property
    def _log_suffix_tilted(self) -> NDArray[np.float64]:
        if self.masses.size and self.losses[-1] - self.losses[0] < 600.0 and self.masses.min() > 1e-200:
            # Scaled by the largest e^{-s}: every term is in (1e-200·e^-600, 1], nothing over- or underflows,
            # and a plain suffix sum of positive terms (error ≤ N·u, within SUM_RTOL's slack) replaces the
            # ~10x slower log-sum-exp.
            tilted = self.masses * np.exp(self.losses[0] - self.losses)
            log_suffix = np.log(np.cumsum(tilted[::-1])[::-1]) - self.losses[0]
        else:
            with np.errstate(divide="ignore"):
                log_tilted = np.log(self.masses) - self.losses
            log_suffix = np.logaddexp.accumulate(log_tilted[::-1])[::-1] if self.masses.size else log_tilted
        return np.concatenate([log_suffix, [-np.inf]])

    @property
    def held_bytes(self) -> int:
        """Bytes of every array this direction holds: its support and whatever queries have cached (suffix
        sums); O(1)."""
        return int(sum(v.nbytes for v in self.__dict__.values() if isinstance(v, np.ndarray)))

    def hockey_stick_upper_sorted(self, epsilon: NDArray[np.float64]) -> NDArray[np.float64]:
        """Strict upper bounds on ``H_{e^ε}`` of this direction at ascending ``ε`` (tighter and cheaper than
        :meth:`hockey_stick_bounds` for many points: no suffix sums are built or kept).

        The finite part comes from one positive sweep (:func:`~pldshuffle._kernels.profile_at_points`),
        raised by its rounding (``8u`` per step, steps = support + points) and by ``MASS_RTOL``; it is read
        at ``ε - loss_error``: every exact loss is at most ``loss_error`` above the computed one, and ``H``
        is non-decreasing in each loss.  O(N + K) for K points.
        """
        from .profiles import LargestUpperProfile  # profiles imports this module

        return LargestUpperProfile((self,))(epsilon)

    def hockey_stick_upper_swept(self, epsilon: NDArray[np.float64]) -> NDArray[np.float64]:
        """Strict upper bounds on ``H_{e^ε}`` at ascending finite ``ε`` with the slack of
        :meth:`hockey_stick_bounds` (the losses' error enters as ``loss_error`` times the mass above
        ``ε - loss_error``, not as a shift of ε as in :meth:`hockey_stick_upper_sorted`: a shift costs
        relatively more at tiny ε), from one positive sweep and transient tail sums: nothing is kept.
        O(N + K log N)."""
        eps = np.asarray(epsilon, dtype=np.float64)
        finite = profile_at_points(self.losses, self.masses, eps) * (1.0 + 8.0 * _U * (self.losses.size + eps.size + 2))
        return self._upper_with_slack(finite, eps, keep=False)[0]

    @property
    def finite_mass(self) -> float:
        """Total mass at finite losses."""
        return float(self._suffix_mass[0])

    @property
    def support_size(self) -> int:
        """Number of distinct finite losses."""
        return int(self.losses.size)

    def discretize(self, spacing: float) -> DiscretizedDirection:
        """Upper (connect-the-dots, of the losses raised by ``loss_error``) and lower (merged or rounded-down,
        carrying ``loss_error``) grid PLDs on ``z_j = j·spacing`` (:func:`~pldshuffle.pld.discretize.discretize`); O(N)."""
        return discretize(self.losses, self.masses, self.infinity_mass, self.truncated_mass, spacing, self.loss_error)

    def hockey_stick_bounds(self, epsilon: ArrayLike, *, cache: bool = True) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
        """Strict lower and upper bounds on ``H_{e^ε}`` of this direction (single round, no grid).

        Cost O(K log N) for K epsilons after the O(N) suffix sums built on the first query and kept; with
        ``cache=False`` (and none kept) each point sums its tail instead, O(N - j), keeping nothing: for
        pairs read once, such as the hundreds a worst-case cover ranks (keeping the sums doubled its
        memory).  At ``ε = inf`` only the infinity mass is left (plus the truncated mass above).
        """
        eps = np.atleast_1d(np.asarray(epsilon, dtype=np.float64))
        return infinity_apart(eps, self._at_infinity, lambda finite: self._finite_bounds(finite, cache))

    def _at_infinity(self) -> tuple[float, float]:
        upper = (self.infinity_mass + self.truncated_mass) * (1.0 + MASS_RTOL)
        return self.infinity_mass * (1.0 - MASS_RTOL), min(upper, 1.0)

    def _mass_above(self, j: NDArray[np.intp], keep: bool) -> NDArray[np.float64]:
        """``A_j = Σ_{i≥j} ω_i`` at the given indices: from the suffix sums (built and kept with ``keep``),
        else from a few tails or one transient suffix sum."""
        if keep or "_suffix_mass" in self.__dict__:
            return self._suffix_mass[j]
        if j.size <= 4:
            return np.array([float(np.sum(self.masses[start:])) for start in j.flat]).reshape(j.shape)
        # The sums between the distinct indices, then their suffix sums: one pass over the masses, no
        # transient array of their size (a reversed cumulative sum took 13 % of a one-round query).
        starts, inverse = np.unique(j, return_inverse=True)
        inside = starts[starts < self.masses.size]
        tails = np.zeros(starts.size)
        if inside.size:
            tails[: inside.size] = np.cumsum(np.add.reduceat(self.masses, inside)[::-1])[::-1]
        return tails[inverse].reshape(j.shape)

    def _log_tilted_above(self, j: NDArray[np.intp], keep: bool) -> NDArray[np.float64]:
        """``log B_j = log Σ_{i≥j} ω_i e^{-s_i}`` at the given indices: from the suffix sums (built and kept
        with ``keep``), else from the tails themselves (O(N - j) each), scaled by their largest ``e^{-s}`` so
        nothing overflows."""
        if keep or "_suffix_mass" in self.__dict__:
            return self._log_suffix_tilted[j]
        log_tilted = np.full(j.shape, -np.inf)
        for k, start in enumerate(j.flat):
            if start < self.losses.size:
                scaled = self.masses[start:] * np.exp(self.losses[start] - self.losses[start:])
                log_tilted.flat[k] = math.log(float(np.sum(scaled))) - self.losses[start]
        return log_tilted

    def _below(self, eps: NDArray[np.float64]) -> NDArray[np.float64]:
        """``ε - loss_error``, rounded down (the margins cover the subtraction's rounding)."""
        if self.loss_error == 0.0:
            return eps
        return eps - (self.loss_error * (1.0 + 4.0 * _U) + 2.0 * _U * np.abs(eps))

    def _upper_with_slack(self, finite: NDArray[np.float64], eps: NDArray[np.float64], keep: bool) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
        """``(upper, slack)`` from the finite part of ``H`` at ``eps``: the slack covers rounding of the sums
        (accumulated over the support) and the losses' own error, and the upper end books the masses at +∞
        and their ``MASS_RTOL``.  The exact ``H(ε)`` lies between the computed one at ``ε ± loss_error``,
        which differ from it by at most ``loss_error`` times the mass above ``ε - loss_error`` (``|H'| ≤``
        the mass above ε)."""
        near = self._mass_above(np.searchsorted(self.losses, self._below(eps), side="right"), keep)
        slack = ((SUM_RTOL + 8.0 * _U * self.losses.size) * (1.0 + np.abs(eps)) + self.loss_error * (1.0 + SUM_RTOL)) * near
        upper = (finite + self.infinity_mass + self.truncated_mass) * (1.0 + MASS_RTOL) + slack
        return np.minimum(upper, 1.0), slack

    def _finite_bounds(self, eps: NDArray[np.float64], cache: bool = True) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
        j = np.searchsorted(self.losses, eps, side="right")
        tilted = np.exp(eps + self._log_tilted_above(j, cache))  # ≤ A_j: no overflow
        finite = np.maximum(self._mass_above(j, cache) - tilted, 0.0)
        upper, slack = self._upper_with_slack(finite, eps, cache)
        lower = np.maximum(finite * (1.0 - MASS_RTOL) - slack, 0.0) + self.infinity_mass * (1.0 - MASS_RTOL)
        return lower, upper


def infinity_apart(
    eps: NDArray[np.float64],
    at_infinity: Callable[[], tuple[float, float]],
    finite: Callable[[NDArray[np.float64]], tuple[NDArray[np.float64], NDArray[np.float64]]],
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """``(lower, upper)`` on δ at each ε: ``at_infinity()`` (the mass at +∞, the limit of δ) where ε is
    infinite, ``finite(ε)`` at the others (called only if there are any)."""
    infinite = np.isinf(eps)
    if not infinite.any():
        return finite(eps)
    lower, upper = np.empty(eps.shape), np.empty(eps.shape)
    lower[infinite], upper[infinite] = at_infinity()
    if not infinite.all():
        lower[~infinite], upper[~infinite] = finite(eps[~infinite])
    return lower, upper


@dataclass(frozen=True, eq=False)
class PrivacyLossPair:
    """Both directions of a neighbouring pair ``(P, Q)`` as exact loss distributions.

    Parameters
    ----------
    forward : LossDistribution
        PLD of ``P/Q``.
    backward : LossDistribution or None
        PLD of ``Q/P``; ``None`` declares the pair symmetric (a bijection of outcomes swaps P and Q),
        in which case both directions coincide.
    label : str
        Human-readable description of the pair (shown in result diagnostics).
    """

    forward: LossDistribution
    backward: LossDistribution | None = None
    label: str = "pair"

    def __post_init__(self) -> None:
        if not isinstance(self.forward, LossDistribution):
            raise TypeError(f"forward must be a LossDistribution, got {type(self.forward).__name__}")
        if self.backward is not None and not isinstance(self.backward, LossDistribution):
            raise TypeError(f"backward must be a LossDistribution or None, got {type(self.backward).__name__}")
        check_text("label", self.label)

    @property
    def directions(self) -> tuple[LossDistribution, ...]:
        """The distinct directions (one if symmetric)."""
        return (self.forward,) if self.backward is None else (self.forward, self.backward)

    @property
    def max_abs_loss(self) -> float:
        """Largest finite |loss| over both directions (0 for an empty support)."""
        values = [np.max(np.abs(d.losses)) for d in self.directions if d.support_size]
        return float(max(values, default=0.0))

    def delta_bounds(self, epsilon: ArrayLike, *, cache: bool = True) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
        """Strict bounds on the single-round tight ``δ(ε) = max`` over both directions (``cache``: keep the
        directions' suffix sums for later queries, see :meth:`LossDistribution.hockey_stick_bounds`)."""
        bounds = [d.hockey_stick_bounds(epsilon, cache=cache) for d in self.directions]
        lower = np.max([b[0] for b in bounds], axis=0)
        upper = np.max([b[1] for b in bounds], axis=0)
        return lower, upper

    def delta_upper(self, epsilon: ArrayLike) -> NDArray[np.float64]:
        """Strict upper bounds on the single-round ``δ`` at each ``ε`` (at ``inf``, the mass at +∞), from one
        sweep per direction (:meth:`LossDistribution.hockey_stick_upper_swept`) that keeps nothing: for
        the hundreds of pairs a refined cover reads (:meth:`delta_bounds` keeps O(N) suffix sums per
        direction, doubling what a pair holds).  O(N + K log K) for K points."""
        eps = np.atleast_1d(np.asarray(epsilon, dtype=np.float64))
        return infinity_apart(eps, lambda: (0.0, max(d._at_infinity()[1] for d in self.directions)), self._swept_upper)[1]

    def _swept_upper(self, eps: NDArray[np.float64]) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
        """``(0, upper)`` at finite ε in any order (the sweep needs them ascending)."""
        order = np.argsort(eps, kind="stable")
        upper = np.empty(eps.shape)
        upper[order] = np.max([d.hockey_stick_upper_swept(eps[order]) for d in self.directions], axis=0)
        return np.zeros(eps.shape), upper

    @classmethod
    def from_probability_mass_functions(
        cls,
        pmf_p: Mapping[object, float] | ArrayLike,
        pmf_q: Mapping[object, float] | ArrayLike,
        *,
        label: str = "user-supplied pair",
        missing_mass: str | None = None,
    ) -> PrivacyLossPair:
        """Build the pair from two probability mass functions on a common finite space.

        Parameters
        ----------
        pmf_p, pmf_q : mapping or array_like
            Either dicts ``outcome -> probability`` (missing outcomes have probability 0) or two arrays of
            equal length indexed by outcome, of real numbers (booleans, complex numbers and strings are
            refused with a ``TypeError``).  Each must be non-negative and sum to 1 within ``1e-12``.
        label : str
            Description shown in results.
        missing_mass : {None, "infinity"}
            ``None`` (default): a pmf summing to less than 1 is refused (a dropped entry would otherwise
            read as a large δ).  ``"infinity"``: the deficit ``1 - sum`` of each pmf is mass on outcomes
            not listed, whose other-side mass is unknown; it is booked at privacy loss ``+inf`` for the
            upper bound and dropped for the lower bound (a bracket valid wherever that mass lies).

        Raises
        ------
        TypeError
            For non-real entries, or one mapping and one array.
        ValueError
            For negative or non-finite entries, unequal lengths, or a total other than 1 (see
            ``missing_mass``).

        Examples
        --------
        Plain randomized response with ε0 = log 3:

        >>> pair = PrivacyLossPair.from_probability_mass_functions([0.75, 0.25], [0.25, 0.75])
        >>> lower, upper = pair.delta_bounds(0.0)  # exact δ(0) = 0.5, bracketed strictly
        >>> bool(lower[0] <= 0.5 <= upper[0] < 0.5 + 1e-9)
        True
        """
        from .pmf_pairs import pmf_directions  # it builds LossDistributions: imported here, not at the top

        return cls(*pmf_directions(pmf_p, pmf_q, label, missing_mass), label=label)

