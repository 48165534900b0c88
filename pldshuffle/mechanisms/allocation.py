"""Random allocation ("balls and bins") for DP-SGD: each example is used in ``k`` of ``t`` steps chosen
uniformly at random, each step a Gaussian mechanism (sensitivity 1, noise multiplier σ) or any step pair.

Neighbouring relation: add/remove of one example; both directions are analysed (``P`` = the run with the
example, ``Q`` = without it; the pair's forward direction is ``P/Q`` (remove), the backward one ``Q/P``
(add)); the guarantee is the larger of the two.  The mathematics (exact pair, convex-order dominance, the
certified discretisation and the ``k > 1`` decomposition theorem) is in docs/mathematics.md, section
"Random allocation".

* ``k = 1``: the likelihood ratio is ``R = (1/t)·Σ_s ρ(Y_s)`` with ``Y_s`` i.i.d. under Q; its law is built
  by binary powering on grids, a mean-preserving spread at every step for the upper pair and a
  contraction for the lower one (:mod:`._allocation_sum`), every truncated tail and rounding booked.
* ``k > 1``: upper pair = the ``k``-fold composition of the ``1``-of-``⌊t/k⌋`` pair (a proven domination: a
  decomposition bound, said in the caveats); lower pairs = exact enumeration for small finite steps, else
  post-processings of the exact mechanism (Gaussian: the maximum of the ``t`` step outputs and the number
  of outputs above a few thresholds; finite step: one step's output), which are LOWER bounds only.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from scipy.special import ndtr

from .._kernels import UNIT_ROUNDOFF as _U
from .._reporting import throttled_reporter
from .._validation import check_int, check_positive_finite
from ..pld import PrivacyLossPair
from ._allocation_sum import GRID_LOW, RatioLaw, average_law, fineness, gaussian_low, gaussian_step_law, make_grid, power_law, ratio_pair, tail_steps
from .base import DEFAULT_TAIL_MASS, PairFamily, ShuffleMechanism
from .generic import PairMechanism

__all__ = ["RandomAllocation"]


def _norm_sf(z: float) -> float:
    """``Φ̄(z) = Φ(-z)`` (scipy's ``ndtr``, accurate in both tails)."""
    return float(ndtr(-z))


#: Output tuples of a finite step enumerated exactly (``m^t``, m distinct ratios): below, the pair is exact.
EXACT_TUPLES = 2**16
#: Thresholds (in units of σ) of the counting lower pairs for Gaussian k > 1 (the best one varies: measured
#: 0.25 for σ = 2, k = 10, t = 100; 1.75 for σ = 1, k = 10, t = 1000; 5.5 for σ = 1, k = 2, t = 100).
_COUNT_THRESHOLDS = (0.25, 1.0, 1.75, 3.0, 5.0)
#: Largest convolution (operations) of a counting lower pair.
_MAX_COUNT_WORK = 5e7
#: Largest product exponent of the ``k > 1`` decomposition (``k·log ρ_max``) kept in double precision.
_MAX_LOG_PRODUCT = 700.0


@dataclass(frozen=True)
class RandomAllocation(ShuffleMechanism):
    """Random allocation of one example to ``num_selected`` of ``num_steps`` steps (add/remove neighbours).

    Parameters
    ----------
    num_steps : int
        Number of steps ``t ≥ 1`` of one epoch (integral floats accepted).
    num_selected : int, optional
        Steps ``k`` each example is used in, ``1 ≤ k ≤ t`` (default 1: each example once per epoch).
    noise_multiplier : float, optional
        Gaussian steps: noise standard deviation ``σ > 0`` over a sensitivity of 1.
    step : PairMechanism or PrivacyLossPair, optional
        Any step, as the pair (with the example, without it) of one step's output distributions (for
        instance ``PairMechanism.from_probability_mass_functions(A, B)``); both must be probability
        distributions (masses summing to 1).  Pass exactly one of ``noise_multiplier`` and ``step``.

    Notes
    -----
    Compose epochs with ``count``: ``FourierAccountant().compose(RandomAllocation(t, noise_multiplier=σ),
    count=epochs)`` (each epoch a fresh allocation).  ``k = 1`` is certified both ways (lower ≤ exact ≤
    upper).  ``k > 1`` is bounded above by the composition of ``k`` allocations 1-of-``⌊t/k⌋`` (proven in
    docs/mathematics.md; a decomposition bound, not the exact value) and below by a post-processing of
    the exact mechanism; small finite steps (``m^t ≤ 65536`` output ratio tuples) are exact for every k.
    Cost: ``O(log t · N²)`` with grids of ``N ≈ 2000`` points (t = 1e4: ~2 s for both pairs on 2 cores).
    Mixing this add/remove mechanism with replace-one mechanisms in one ledger is refused (see
    :class:`~pldshuffle.FourierAccountant`).

    Examples
    --------
    >>> import pldshuffle as ps
    >>> m = ps.RandomAllocation(1, noise_multiplier=1.0)   # one step: the Gaussian mechanism
    >>> acc = ps.FourierAccountant().compose(m)
    >>> b = acc.get_delta_bounds(1.0)   # the Gaussian mechanism with μ = 1: δ(1) = 0.126937
    >>> b.lower <= 0.126937 <= b.upper, round(b.upper, 3)
    (True, 0.127)
    """

    num_steps: int
    num_selected: int = 1
    noise_multiplier: float | None = None
    step: object | None = None

    #: The neighbouring relation this mechanism's guarantee is for.
    neighboring_relation = "add-remove"  # a class attribute (unannotated: not a dataclass field)

    def __post_init__(self) -> None:
        t = check_int("num_steps", self.num_steps, minimum=1, maximum=2**40)
        object.__setattr__(self, "num_steps", t)
        if isinstance(self.num_selected, (int, float)) and not isinstance(self.num_selected, bool) and self.num_selected > t:
            raise ValueError(f"num_selected must be an integer in [1, num_steps={t}], got {self.num_selected!r}")
        object.__setattr__(self, "num_selected", check_int("num_selected", self.num_selected, minimum=1, maximum=t))
        # Rounding: the masses' relative error grows like ~12u per averaged step, and the k > 1 bound multiplies
        # k laws of ⌊t/k⌋ steps (docs/mathematics.md); the pairs must stay within the library's 1e-9 tolerance on
        # total mass (3e-10 kept for the rest).
        if 12.0 * _U * t > 3e-10:
            raise ValueError(f"num_steps must be at most {int(3e-10 / (12.0 * _U)):,} (the double-precision error budget "
                             f"of the certified sum), got {t}")
        if (self.noise_multiplier is None) == (self.step is None):
            raise ValueError("pass exactly one of noise_multiplier (Gaussian steps) and step (any step pair)")
        if self.noise_multiplier is not None:
            sigma = check_positive_finite("noise_multiplier", self.noise_multiplier)
            if not 0.1 <= sigma <= 1e4:
                raise ValueError(f"noise_multiplier must be in [0.1, 1e4] (the range the grids are built for), got {sigma!r}")
            object.__setattr__(self, "noise_multiplier", sigma)
        else:
            pair = self.step.pair if isinstance(self.step, PairMechanism) else self.step
            if not isinstance(pair, PrivacyLossPair):
                raise TypeError(f"step must be a PairMechanism or a PrivacyLossPair, got {type(self.step).__name__}")
            _step_atoms(pair)  # validates: a pair of probability distributions

    @property
    def _sigma(self) -> float:
        """σ of Gaussian steps (only called on that path)."""
        assert self.noise_multiplier is not None
        return float(self.noise_multiplier)

    @property
    def _step_pair(self) -> PrivacyLossPair:
        """The step pair (only called on that path)."""
        pair = self.step.pair if isinstance(self.step, PairMechanism) else self.step
        assert isinstance(pair, PrivacyLossPair)
        return pair

    # ------------------------------------------------------------------ description
    def describe(self) -> str:
        what = f"Gaussian steps, noise multiplier σ={self.noise_multiplier:g}" if self.step is None else "user-supplied step pair"
        return (f"random allocation: each example in {self.num_selected} of {self.num_steps} steps ({what}); "
                f"add/remove neighbours, both directions")

    # ------------------------------------------------------------------ pairs
    def pair_family(self, *, tail_mass: float = DEFAULT_TAIL_MASS) -> PairFamily:
        t, k = self.num_steps, self.num_selected
        say = throttled_reporter()
        caveats: tuple[str, ...] = ("neighbouring relation: add/remove of one example (both directions; the guarantee is the larger)",)
        if self.step is not None:
            atoms = _step_atoms(self._step_pair)
            if t * math.log(len(atoms[0])) <= math.log(EXACT_TUPLES):
                law = _exact_law(atoms, t, k)
                upper = ratio_pair(law, p_flagged=0.0, q_flagged=0.0, p_singular=_singular(atoms, t, k), label=self._label("exact"))
                lower = ratio_pair(_as_lower(law), p_flagged=0.0, q_flagged=0.0, p_singular=_singular(atoms, t, k), label=self._label("exact"))
                return PairFamily((upper,), (lower,), caveats=caveats)
        m = t // k
        upper = self._one_of(m, True, tail_mass / k, say)
        if k == 1:
            lower = self._one_of(t, False, tail_mass, say)
            return PairFamily((upper,), (lower,), caveats=caveats)
        caveats += (
            f"num_selected={k} > 1: the upper bound is the composition of {k} allocations 1-of-{m} (a proven "
            "decomposition bound, not the exact value); the lower bound is a post-processing of the exact "
            "mechanism (" + ("the maximum of the step outputs, and the number of outputs above a threshold"
                            if self.step is None else "one step's output")
            + "), so the true value lies in between",
        )
        upper_pair = self._compose_upper(m, k, tail_mass, say)
        if self.step is None:
            lower_pairs = (self._max_lower(),) + tuple(self._count_lower(z) for z in _COUNT_THRESHOLDS if self._count_size() <= _MAX_COUNT_WORK)
        else:
            lower_pairs = (self._one_step_lower(),)
        return PairFamily((upper_pair,), lower_pairs, caveats=caveats)

    def _label(self, what: str) -> str:
        return f"random allocation {self.num_selected}-of-{self.num_steps} ({what})"

    def _step(self, upper: bool, tail_each: float, copies: int) -> tuple[RatioLaw, float, float, float, float]:
        """One step's law (spread or contracted), its flagged tail P/Q-masses, its singular P-mass, and its
        standard deviation and maximum ratio (for the grids)."""
        if self.step is None:
            sigma = self._sigma
            sd = math.sqrt(math.expm1(1.0 / sigma**2))
            law, q_tail, p_tail = gaussian_step_law(sigma, tail_each, upper, fineness(copies))
            return law, p_tail, q_tail, 0.0, sd
        atoms, masses, alpha, loc_err, mass_err = _step_atoms(self._step_pair)
        law = RatioLaw(atoms, masses, mass_err, loc_err, upper)
        mean = float(np.sum(atoms * masses))
        sd = math.sqrt(max(float(np.sum(atoms**2 * masses)) - mean**2, 1e-300))
        return law, 0.0, 0.0, alpha, sd

    def _average(self, m: int, upper: bool, tail: float, say: Callable[[str], None] | None) -> tuple[RatioLaw, float, float, float]:
        """The law of R for 1-of-m, with its flagged P- and Q-masses and singular P-mass."""
        law, p_tail, q_tail, alpha, sd = self._step(upper, tail / m, m)
        high = float(law.points[-1])
        fine = fineness(m)
        low = GRID_LOW if self.step is not None else gaussian_low(self._sigma)
        center = max(float(np.sum(law.points * law.masses)), 1e-3)

        def grid_for(n: int) -> np.ndarray:
            return make_grid(center, sd / math.sqrt(n), low, high, **tail_steps(self.noise_multiplier, high, low, fine))

        law = average_law(law, m, grid_for, say)
        # Truncation: E = {some step's ratio beyond the grid}; P(E) = 1 - (1 - p)(1 - q)^(m-1), Q(E) = 1 - (1-q)^m.
        log_keep_q = m * math.log1p(-q_tail) if q_tail < 1 else -math.inf
        q_flag = -math.expm1(log_keep_q)
        p_flag = -math.expm1(math.log1p(-p_tail) + (m - 1) * math.log1p(-q_tail)) if p_tail < 1 else 1.0
        margin = 1.0 + 1e-12
        return law, min(p_flag * margin, 1.0), min(q_flag * margin, 1.0), alpha

    def _one_of(self, m: int, upper: bool, tail: float, say: Callable[[str], None] | None) -> PrivacyLossPair:
        law, p_flag, q_flag, singular = self._average(m, upper, tail, say)
        return ratio_pair(law, p_flagged=p_flag, q_flagged=q_flag, p_singular=singular, trim=tail,
                          label=self._label(f"1-of-{m} {'upper' if upper else 'lower'}"))

    def _compose_upper(self, m: int, k: int, tail: float, say: Callable[[str], None] | None) -> PrivacyLossPair:
        """Upper pair of k-of-t: the k-fold composition of the 1-of-m upper pair (likelihood ratios multiply)."""
        law, p_flag, q_flag, singular = self._average(m, True, tail / k, say)
        log_high = math.log(float(law.points[-1]))
        if k * log_high > _MAX_LOG_PRODUCT:
            raise ValueError(f"num_selected={k} is too large for this step (the composed ratio reaches e^{k * log_high:.0f}); "
                             f"use num_selected <= {int(_MAX_LOG_PRODUCT / log_high)}")
        sd = math.sqrt(max(float(np.sum(law.points**2 * law.masses)) - float(np.sum(law.points * law.masses)) ** 2, 1e-300))
        low = max(float(law.points[law.points > 0][0]), 1e-300)

        def grid_for(n: int) -> np.ndarray:
            top, bottom = float(law.points[-1]) ** n, max(low**n, 1e-300)
            return make_grid(1.0, sd * math.sqrt(n), bottom, top, **tail_steps(self.noise_multiplier, top, bottom))

        composed = power_law(law, k, grid_for)
        # Flags compose: any of the k allocations flagged (union bound), singular: any singular.
        p_any = min(k * p_flag, 1.0)
        q_any = min(k * q_flag, 1.0)
        s_any = -math.expm1(k * math.log1p(-singular)) if singular < 1 else 1.0
        return ratio_pair(composed, p_flagged=p_any, q_flagged=q_any, p_singular=min(s_any * (1 + 1e-12), 1.0), trim=tail,
                          label=self._label(f"{k} x 1-of-{m} composed, upper"))

    def _max_lower(self) -> PrivacyLossPair:
        """LOWER pair for Gaussian k > 1: the law of M = max_s Y_s in bins (a post-processing of the output).

        ``Q(M ≤ c) = Φ(c/σ)^t``, ``P(M ≤ c) = Φ((c-1)/σ)^k Φ(c/σ)^(t-k)`` (mpmath, 40 digits)."""
        import mpmath

        t, k, sigma = self.num_steps, self.num_selected, self._sigma
        with mpmath.workdps(40):
            s = mpmath.mpf(sigma)
            center = sigma * math.sqrt(2.0 * math.log(max(t, 2)))
            cuts = np.linspace(center - 8.0 * sigma, center + 14.0 * sigma + 2.0 * k, 1500)

            def cdfs(c: float) -> tuple:
                x = mpmath.mpf(float(c))
                return mpmath.ncdf(x / s) ** t, mpmath.ncdf((x - 1) / s) ** k * mpmath.ncdf(x / s) ** (t - k)

            values = [(mpmath.mpf(0), mpmath.mpf(0))] + [cdfs(c) for c in cuts] + [(mpmath.mpf(1), mpmath.mpf(1))]
            pts, ms = [], []
            for (q0, p0), (q1, p1) in zip(values[:-1], values[1:]):
                if q1 - q0 > 0:
                    pts.append(float((p1 - p0) / (q1 - q0)))
                    ms.append(float(q1 - q0))
        order = np.argsort(pts, kind="stable")
        law = RatioLaw(np.array(pts)[order], np.array(ms)[order], 2.0 * _U, 2.0 * _U, False)
        return ratio_pair(law, p_flagged=0.0, q_flagged=0.0, label=self._label("maximum of the outputs, LOWER bound"), trim=1e-18)

    def _count_size(self) -> int:
        t, k = self.num_steps, self.num_selected
        return (min(k, t - k) + 1) * (t + 1)

    def _count_lower(self, z: float) -> PrivacyLossPair:
        """LOWER pair for Gaussian k > 1: the number N of step outputs above ``c = z·σ`` (a post-processing).

        ``Q: N ~ Bin(t, p0)``, ``P: N ~ Bin(k, p1) + Bin(t-k, p0)``, ``p0 = Φ̄(z)``, ``p1 = Φ̄(z - 1/σ)``.  The
        pmfs are Boost's (within the library's ``MASS_RTOL``); the convolution of non-negative terms adds at
        most ``(min(k, t-k) + 2)u`` relative.  O(min(k, t-k)·t)."""
        from scipy.stats import binom

        t, k, sigma = self.num_steps, self.num_selected, self._sigma
        p0, p1 = float(_norm_sf(z)), float(_norm_sf(z - 1.0 / sigma))
        q = binom.pmf(np.arange(t + 1), t, p0)
        p = np.convolve(binom.pmf(np.arange(k + 1), k, p1), binom.pmf(np.arange(t - k + 1), t - k, p0))
        keep = (q > 1e-250) & (p > 1e-250)
        conv = (min(k, t - k) + 2) * _U
        law = RatioLaw(p[keep] / q[keep], q[keep], 1e-10 + conv, 2e-10 + 2.0 * conv + 2.0 * _U, False)
        order = np.argsort(law.points, kind="stable")
        law = RatioLaw(law.points[order], law.masses[order], law.mass_error, law.location_error, False)
        return ratio_pair(law, p_flagged=0.0, q_flagged=0.0, label=self._label(f"number of outputs above {z:g}σ, LOWER bound"))

    def _one_step_lower(self) -> PrivacyLossPair:
        """LOWER pair for a finite step and k > 1: one step's output alone, ((k/t)A + (1-k/t)B, B)."""
        t, k = self.num_steps, self.num_selected
        atoms, masses, alpha, loc_err, mass_err = _step_atoms(self._step_pair)
        f = k / t
        law = RatioLaw(f * atoms + (1.0 - f), masses, mass_err + 4 * _U, loc_err + 4 * _U, False)
        return ratio_pair(law, p_flagged=0.0, q_flagged=0.0, p_singular=f * alpha * (1 - 4 * _U),
                          label=self._label("one step's output, LOWER bound"))

    def family_seconds(self, *, tail_mass: float = DEFAULT_TAIL_MASS) -> float:
        levels = 2.0 * math.log2(max(self.num_steps // self.num_selected, 2)) + 2.0 * math.log2(self.num_selected + 1)
        return 2.0 * levels * 2.5e3**2 * 8e-9


# ----------------------------------------------------------------------------- finite steps
def _step_atoms(pair: PrivacyLossPair) -> tuple[np.ndarray, np.ndarray, float, float, float]:
    """The law of ``ρ = dA/dB`` under B for a step pair ``(A, B)``: ``(atoms, B-masses, α, location error,
    mass error)``, ``α = A(B = 0)`` the singular mass; ``ρ = 0`` carries ``B(A = 0)``.  Raises ``ValueError``
    unless both are probability distributions."""
    fwd = pair.forward
    bwd = pair.backward if pair.backward is not None else pair.forward
    if fwd.truncated_mass > 1e-12 or bwd.truncated_mass > 1e-12:
        raise ValueError("step must be a pair of probability distributions (each summing to 1); got masses summing to "
                         f"{1 - fwd.truncated_mass!r} and {1 - bwd.truncated_mass!r}")
    if fwd.support_size and float(np.max(np.abs(fwd.losses))) > 130.0:
        raise ValueError("step ratios beyond e^±130 are not supported (largest |log ratio| "
                         f"{float(np.max(np.abs(fwd.losses))):.4g}); give such outcomes probability 0 under one distribution")
    atoms = np.exp(fwd.losses)
    masses = fwd.masses * np.exp(-fwd.losses)
    total_b = float(masses.sum()) + bwd.infinity_mass
    total_a = float(fwd.masses.sum()) + fwd.infinity_mass
    if abs(total_a - 1.0) > 1e-9 or abs(total_b - 1.0) > 1e-6:
        raise ValueError(f"step must be a pair of probability distributions (each summing to 1); got {total_a!r} and {total_b!r}")
    if bwd.infinity_mass > 0.0:
        atoms = np.concatenate([[0.0], atoms])
        masses = np.concatenate([[bwd.infinity_mass], masses])
    # ρ = e^loss errs by the loss's error (and exp's rounding); B-masses a·e^-loss by that and two roundings.
    loc_err = math.expm1(fwd.loss_error) + 2.0 * _U
    # (the pmfs themselves are taken as exact, as for every pair; the accountant books MASS_RTOL on them)
    mass_err = math.expm1(fwd.loss_error) + 4.0 * _U
    return atoms, masses, float(fwd.infinity_mass), loc_err, mass_err


def _singular(atoms: tuple, t: int, k: int) -> float:
    """P-mass where Q = 0 for k-of-t: some selected step in A's singular part: 1 - (1 - α)^k."""
    alpha = atoms[2]
    return -math.expm1(k * math.log1p(-alpha)) if alpha < 1 else 1.0


def _exact_law(atoms: tuple, t: int, k: int) -> RatioLaw:
    """Exact law under Q of ``R = e_k(ρ_1..ρ_t)/C(t,k)`` by enumerating every tuple of atoms (``m^t``)."""
    pts, ms, alpha, loc_err, mass_err = atoms
    m = len(pts)
    idx = np.array(list(itertools.product(range(m), repeat=t)), dtype=np.int64).reshape(-1, t)
    rho = pts[idx]
    mass = np.prod(ms[idx], axis=1)
    # e_k of each row by the recurrence E_j <- E_j + x·E_{j-1}
    e = np.zeros((rho.shape[0], k + 1))
    e[:, 0] = 1.0
    for s in range(t):
        for j in range(min(s + 1, k), 0, -1):
            e[:, j] += rho[:, s] * e[:, j - 1]
    ratio = e[:, k] / math.comb(t, k)
    order = np.argsort(ratio, kind="stable")
    # relative errors: each mass a product of t pmfs (t roundings); the ratio a sum of C(t,k) products of k
    # atoms (≤ (t + k + 2) roundings of non-negative terms) each within the atoms' error.
    mass_error = (1.0 + mass_err) ** t * (1.0 + 2.0 * t * _U) - 1.0
    location_error = (1.0 + loc_err) ** k * (1.0 + 2.0 * (t + k + 2) * _U) - 1.0
    return RatioLaw(ratio[order], mass[order], mass_error, location_error, True)


def _as_lower(law: RatioLaw) -> RatioLaw:
    """The same exact law, read as a lower law (its errors then deflate the masses)."""
    return RatioLaw(law.points, law.masses, law.mass_error, law.location_error, False)
