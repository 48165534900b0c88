"""Shuffled binary randomised response (2RR) -- KHH21 §4 with the worst case over datasets (docs/mathematics.md, "Binary randomized response").

Each of ``n`` users reports its bit flipped with probability ``p = 1/(e^{ε0}+1)``; the analyst sees the
number of ones.  For neighbouring datasets differing in user ``n`` (bit 0 vs 1) with ``m`` ones among
the other users,

.. math::  P_m = N_m + \\mathrm{Bern}(p),\\quad Q_m = N_m + \\mathrm{Bern}(1-p),\\quad
           N_m = \\mathrm{Bin}(m, 1-p) + \\mathrm{Bin}(n-1-m, p),

and ``δ_m = δ_{n-1-m}``.  KHH21 analyse ``m = 0`` only, which is **not** the worst case (docs/mathematics.md: at
``n=3, e^{ε0}=3, ε=0`` it gives 0.28125 while ``m=1`` gives 0.3125).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal, get_args
from weakref import WeakValueDictionary

import numpy as np
from numpy.typing import NDArray

from .._validation import check_choice, check_int, check_local_epsilon, check_num_users
from ..pld import MASS_RTOL, LossDistribution, PrivacyLossPair
from .._kernels import UNIT_ROUNDOFF as _U, binomial_walk, rr_pair_from_noise, two_binomial_pmf, window_dot_error
from ._binomial import binomial_pmf, two_binomial_tails
from .base import DEFAULT_TAIL_MASS, Cell, PairFamily, ShuffleMechanism

__all__ = ["ShuffledBinaryRR"]

#: Bytes per standard deviation of N_m held while one dataset pair is built (binomial windows of ±13 sd, their
#: convolution, cumulative sums and the pair's two directions: ~10 float64 arrays of ~26 sd points).
_BYTES_PER_SD = 2048
#: Bytes per standard deviation of N_m that a finished dataset pair holds (losses and masses of both
#: directions over the ~18.6 sd between the Chernoff cuts at tail 1e-18: 588 measured at n = 1e10).
_HELD_BYTES_PER_SD = 640
#: Dataset pairs larger than this are refused up front.
_MAX_PAIR_BYTES = 2**33
#: Cells of the initial cover of the datasets m = 0..(n-1)/2 (refined by the accountant's branch and bound).
_INITIAL_CELLS = 16
#: Seconds per unit of (n·p(1-p))^(1/4) of the worst-case branch and bound (its pairs cost O(√(n p(1-p)))
#: each, by recurrence, and fewer cells are needed as n grows), and per unit of n·p(1-p) for the recurrence's
#: restarts (O(window) each, O(√(n p(1-p))) of them per pair): one round at ε0 = 1 took 1.2 s at n = 1e5,
#: 2.9 s at 1e6, 4.9 s at 1e7, 4.5 s at 1e8, 5.2 s at 1e9, 13 s at 1e10 and 53 s at 1e11 (2 CPU cores).
COVER_SECONDS, RESTART_SECONDS = 0.065, 1.5e-9
#: A cell's upper pair books this fraction of ``tail_mass`` for its varying users' types (``_cell``).  It
#: adds to the cell's profile where only the pairs' own truncation (~``tail_mass``) is left, so it is kept
#: well below the branch and bound's relative tolerance there (1e-3); a smaller fraction costs little
#: (the cut moves by ~0.1 sd of ``Bin(w, p)`` per decade).
_TYPE_TAIL = 1e-4
#: Cells with fewer datasets than this enumerate them (envelope) instead of one dominating pair (``_cell``).
_ENUMERATED_CELL = 8
# Binomial factors of N_m are windowed with this tail (the dropped mass is booked as truncated): kept pmf
# values exceed ~1e-24 even at n = 1e8, so the window changes them (and the losses, which are log-ratios of
# neighbours) by < 1e-12 relative, far below the 1e-10 mass slack and the 1e-9 loss slack.
_INNER_TAIL = 1e-36
#: N comes from the recurrence when both binomial windows hold at least this many points ...
_RECURRENCE_WINDOW = 64
#: ... in segments of at most this many points (each restarted from two windowed dot products, which cost
#: as much as the segment's steps at n = 1e7: 4096-point segments took 0.41 ms a pair there, these 0.30) ...
_SEGMENT = 12288
#: ... if its a-priori relative error bound is below this, else from the convolution.  The masses may be off
#: by MASS_RTOL = 1e-10 relative (the rest of a mass's rounding is a few u); the losses, functions of
#: neighbours' ratios, by the bound :func:`_pair_from_noise` states.  The windows (double-double walks) and
#: the start values (compensated dot products) take ~1e-14 of it at any n, the segments ≤ 3.3e-11 (24u a
#: step), what the windows drop over the smallest start value ≤ 2e-12 (kept values exceed ~1e-24).
_RECURRENCE_RTOL = 8e-11

#: The dataset pairs ``dataset`` may select (the command line lists them from this annotation).
Dataset = Literal["worst", "khh21"]


@dataclass(frozen=True)
class ShuffledBinaryRR(ShuffleMechanism):
    """Binary randomised response with ``local_epsilon``-LDP, shuffled among ``num_users`` users.

    Parameters
    ----------
    num_users : int
        ``n >= 2``, including the user whose bit differs.
    local_epsilon : float
        ``ε0 > 0`` of the local randomiser (flip probability ``1/(e^{ε0}+1)``).
    dataset : {"worst", "khh21"}
        Which datasets are analysed: ``"worst"`` (default) all of them, a guarantee, or ``"khh21"`` the
        single pair of KHH21, a lower bound on the worst case.  ``"worst"`` bounds the maximum over all neighbouring datasets (the DP guarantee).
        The datasets ``m = 0..⌊(n-1)/2⌋`` are covered by 16 interval cells; a cell ``[a, b]`` of
        width ``w = b - a`` is dominated by the dataset pair of ``n - w + 2r`` users with ``m = a + r``
        (``r ≈ wp``: each varying user's report is a ``Bern(p)``, a ``Bern(1-p)`` or its bit, with
        probabilities ``p, p, 1-2p`` whatever the bit, and the types are revealed; see ``_cell``), and the
        accountant splits only the cells that could hold the maximum
        (branch and bound), so the bracket converges to the exact worst case at a cost of
        O(log n) cells near the maximisers (typically m ≈ 0 and m ≈ (n-1)/2), each O(√n) support.
        ``"khh21"`` analyses the single dataset pair ``0^n`` vs ``10^{n-1}`` of KHH21 eq. (4.1)
        (a lower bound on the worst case).

    Notes
    -----
    Neighbouring relation: replace one user's bit.  Source: Koskela, Heikkilä, Honkela (2021),
    "Tight differential privacy for discrete-valued mechanisms and for the subsampled Gaussian
    mechanism using FFT" / "Numerical accounting in the shuffle model", §4, eq. (4.1); worst case over
    ``m``: docs/mathematics.md, "Binary randomized response".
    """

    switch = "dataset"  # the field that selects what is analysed (read by the privacy statements)

    num_users: int
    local_epsilon: float
    dataset: Dataset = "worst"

    def __post_init__(self) -> None:
        object.__setattr__(self, "num_users", check_num_users(self.num_users))
        object.__setattr__(self, "local_epsilon", check_local_epsilon(self.local_epsilon))
        check_choice("dataset", self.dataset, get_args(Dataset))
        p = self.flip_probability
        # A dataset pair holds O(√(n p(1-p))) outcomes: refuse sizes no machine can hold, before any work.
        needed = _BYTES_PER_SD * math.sqrt(self.num_users * p * (1.0 - p))
        if needed > _MAX_PAIR_BYTES:
            raise ValueError(
                f"num_users={self.num_users} needs ~{needed / 2**30:.0f} GiB per dataset pair of shuffled binary "
                f"randomized response (more than {_MAX_PAIR_BYTES / 2**30:.0f} GiB): use fewer users (a bound for "
                "fewer users also holds for more, by post-processing) or an analytic bound from pldshuffle.bounds"
            )

    @property
    def flip_probability(self) -> float:
        """``p = 1/(e^{ε0}+1)``."""
        return float(1.0 / (np.exp(self.local_epsilon) + 1.0))

    def describe(self) -> str:
        what = (
            "worst case over all neighbouring datasets"
            if self.dataset == "worst"
            else "dataset pair 0^n vs 10^(n-1) only (KHH21): a lower bound on the worst case"
        )
        return (
            f"shuffled binary randomized response, n={self.num_users}, ε0={self.local_epsilon:g}, "
            f"replace-one neighbours, analyst sees the count of ones; {what}"
        )

    def pair_family(self, *, tail_mass: float = DEFAULT_TAIL_MASS) -> PairFamily:
        if self.dataset == "khh21":
            caveat = "dataset pair 0^n vs 10^(n-1) only: a lower bound on the worst case over datasets"
            return PairFamily.exact(
                self.dataset_pair(0, tail_mass=tail_mass), is_guarantee=False, caveats=(caveat,), max_loss=self.local_epsilon
            )
        half = (self.num_users - 1) // 2  # δ_m = δ_{n-1-m}
        edges = np.unique(np.linspace(0, half + 1, min(_INITIAL_CELLS, half + 1) + 1).astype(np.int64))
        # A split cell's children revisit one of its pairs.  The cache only finds pairs that something
        # still holds (weak references): a strong cache would keep every pair of O(√n) outcomes alive.
        cache: WeakValueDictionary[tuple[int, int, float], PrivacyLossPair] = WeakValueDictionary()

        def pair(users: int, m: int, booked: float = 0.0) -> PrivacyLossPair:
            found = cache.get((users, m, booked))
            if found is None:
                found = cache[users, m, booked] = _dataset_pair(users, self.local_epsilon, m, tail_mass, booked)
            return found

        cells = tuple(self._cell(int(a), int(b) - 1, pair, tail_mass) for a, b in zip(edges[:-1], edges[1:]))
        # Every dataset's view is a post-processing of the differing user's ε0-LDP report, so no outcome's
        # loss exceeds ε0 (what a cell's pair books at +∞ belongs to the bound, not to any view).
        return PairFamily.from_cells(cells, max_loss=self.local_epsilon)

    def _cell(self, first: int, last: int, pair: Callable[..., PrivacyLossPair], tail_mass: float) -> Cell:
        """Datasets with ``m ∈ [first, last]`` ones among the others.

        Upper pair: write each of the ``w = last - first`` users whose bit varies inside the cell as
        reporting a ``Bern(p)`` draw, a ``Bern(1-p)`` draw or its own bit, with probabilities ``p, p, 1-2p``
        (``p·p + p(1-p) + (1-2p)·bit`` is its report's mean either way), and reveal each one's type and,
        for the third type, its report.  The counts ``(U, V)`` of the first two types are
        ``Mult(w; p, p, 1-2p)`` *whatever the dataset*, and given them the view is the dataset pair of
        ``n - w + U + V`` users with ``first + U`` ones among the others (up to a revealed shift); more
        users only add noise (a post-processing).  So the pair of ``n - w + 2r`` users with ``m = first + r``
        dominates every dataset of the cell once ``U, V ≥ r``, where ``r - 1`` is the Chernoff cut of
        ``Bin(w, p)`` at ``τ/2``, ``τ = _TYPE_TAIL·tail_mass`` (:func:`two_binomial_tails`); the chance that
        ``U`` or ``V`` falls below ``r`` (≤ ``τ``) is booked as truncated mass (a fully revealing branch).  It keeps
        ``≈ 2pw`` of the ``w`` varying users' noise (revealing them all, as KHH21-style covers do, keeps none):
        cells can be ``1/(1-2p)`` times wider for the same excess (2.2× at ε0 = 1, 20× at ε0 = 0.1).
        """
        n = self.num_users
        width = last - first
        half = (n - 1) // 2
        exact_m = first if first <= half - last else last  # the end nearer 0 or (n-1)/2, where maxima occur

        label = f"m in [{first}, {last}]"
        if width == 0:
            return Cell(lambda: pair(n, first), label=f"m = {first}")

        def split() -> tuple[Cell, ...]:
            mid = (first + last) // 2
            return (self._cell(first, mid, pair, tail_mass), self._cell(mid + 1, last, pair, tail_mass))

        if width < _ENUMERATED_CELL:
            # Few datasets: bound them by their own envelope, tight because neighbours are nearly equal.
            members = lambda: tuple(pair(n, m) for m in range(first, last + 1))  # noqa: E731
            return Cell(split=split, label=label, make_members=members)

        def upper() -> PrivacyLossPair:
            # P[Bin(w, p) < kept] ≤ _TYPE_TAIL·tail_mass/2 for each of U and V.
            kept = two_binomial_tails(0, width, self.flip_probability, _TYPE_TAIL * tail_mass)[0] + 1
            return pair(n - width + 2 * kept, first + kept, _TYPE_TAIL * tail_mass if kept > 0 else 0.0)

        return Cell(upper, lambda: pair(n, exact_m), split, label)

    def family_seconds(self, *, tail_mass: float = DEFAULT_TAIL_MASS) -> float:
        """The worst case's branch and bound over datasets, ``COVER_SECONDS · (n·p(1-p))^(1/4) +
        RESTART_SECONDS · n·p(1-p)`` (``p = 1/(e^ε0 + 1)``); 0 for ``dataset="khh21"`` (one pair)."""
        if self.dataset != "worst":
            return 0.0
        p = self.flip_probability
        variance = self.num_users * p * (1.0 - p)
        return COVER_SECONDS * math.sqrt(math.sqrt(variance)) + RESTART_SECONDS * variance

    def family_bytes(self, *, tail_mass: float = DEFAULT_TAIL_MASS) -> float:
        """Bytes the worst-case cover holds at least: the initial cells' upper and lower dataset pairs
        (``_HELD_BYTES_PER_SD`` per sd of N_m each) and one pair being built (``_BYTES_PER_SD``);
        one pair for ``dataset="khh21"``."""
        p = self.flip_probability
        sd = math.sqrt(self.num_users * p * (1.0 - p))
        pairs = 1 if self.dataset == "khh21" else 2 * min(_INITIAL_CELLS, (self.num_users - 1) // 2 + 1)
        return (pairs * _HELD_BYTES_PER_SD + _BYTES_PER_SD) * sd

    def dataset_pair(self, ones_among_others: int, *, tail_mass: float = DEFAULT_TAIL_MASS) -> PrivacyLossPair:
        """Exact pair ``(P_m, Q_m)`` for ``m = ones_among_others`` (O(√n) time and support after windowing).

        Outcomes whose pmf is not computed exactly are dropped and their ``P``-mass booked as
        truncated mass (at most ``tail_mass`` plus 1e-59).
        """
        m = check_int("ones_among_others", ones_among_others, minimum=0, maximum=self.num_users - 1)
        return _dataset_pair(self.num_users, self.local_epsilon, m, tail_mass)


def _dataset_pair(n: int, eps0: float, m: int, tail_mass: float, booked: float = 0.0) -> PrivacyLossPair:
    """The pair ``(P_m, Q_m)`` of ``n`` users with ``m`` ones among the others (see
    :meth:`ShuffledBinaryRR.dataset_pair`), with ``booked`` more truncated mass in both directions."""
    p = float(1.0 / (np.exp(eps0) + 1.0))
    noise, below, above = _noise(m, n - 1 - m, p, tail_mass)
    return _pair_from_noise(noise, below, above, p, f"2RR dataset pair, n={n}, m={m}", booked)


def _noise(ones: int, zeros: int, p: float, tail_mass: float) -> tuple[NDArray[np.float64], float, float]:
    """pmf of ``N = Bin(ones, 1-p) + Bin(zeros, p)`` on a kept range ``[first, last]`` and upper bounds on
    ``P[N < first]`` and ``P[N > last]``: ``(pmf, below, above)``, each tail at most ~``tail_mass/2``.

    ``Bin(ones, 1-p)`` is evaluated as ``ones - Bin(ones, p)``: ``1 - p`` rounds to 1 for ε0 ≳ 37 (and
    loses relative accuracy in ``p`` well before), which would make the ones deterministic.  Both binomials
    are windowed (:func:`~pldshuffle._kernels.binomial_walk`, dropping ≤ 1e-36 each).  When both windows
    are wide, ``N`` comes from the three-term recurrence of :func:`~pldshuffle._kernels.two_binomial_pmf`
    between Chernoff cuts (O(√n)) if its a-priori relative error bound is ≤ ``_RECURRENCE_RTOL``;
    otherwise from the direct convolution of the windows (O(window²), sums of positive terms).
    """
    flips, dropped, errors = [], 0.0, 0.0
    for trials in (ones, zeros):
        # One more point each side than the tail needs: an outcome next to the window's end may carry most
        # of the mass of the other hypothesis (e.g. a one-point window when p is tiny).
        lo, pmf, d, error = binomial_walk(trials, p, _pmf_of(trials, p), _INNER_TAIL)
        flips.append((lo, lo + pmf.size - 1, pmf))
        dropped, errors = dropped + d, errors + error
    (lo1, hi1, flipped), (lo0, hi0, raised) = flips
    if min(flipped.size, raised.size) >= _RECURRENCE_WINDOW:
        cut_lo, cut_hi = two_binomial_tails(ones, zeros, p, tail_mass)
        # Reported ones range over ones - hi1 + lo0 .. ones - lo1 + hi0 in the windows.
        first, last = max(cut_lo + 1, ones - hi1 + lo0 + 1), min(cut_hi - 1, ones - lo1 + hi0 - 1)
        if first == cut_lo + 1 and last == cut_hi - 1 and last - first > 2:
            noise, smallest, growth = two_binomial_pmf(flipped, lo1, raised, lo0, ones, zeros, p, first, last, _SEGMENT)
            # Start values: the windows' errors and the compensated dot products'; then the recurrence's.
            error = errors + window_dot_error(min(flipped.size, raised.size)) + growth
            if smallest > 0.0 and dropped / smallest + error <= _RECURRENCE_RTOL:
                half = tail_mass / 2.0
                return noise, half, half
    # Direct (not FFT) convolution: a sum of positive terms, accurate to a few ulps relative.
    noise = np.convolve(flipped[::-1], raised)
    # N(i) = 0 exactly below 0 and above n-1: pad so boundary outcomes of N + X are kept.
    at_bottom, at_top = hi1 == ones and lo0 == 0, lo1 == 0 and hi0 == zeros
    noise = np.concatenate([[0.0] if at_bottom else [], noise, [0.0] if at_top else []])
    cdf = np.cumsum(noise)
    sf = np.cumsum(noise[::-1])[::-1]
    half = tail_mass / 2.0
    # One more point on each side: a window of one point would keep no outcome (each needs N(j), N(j-1)).
    first = max(0, int(np.searchsorted(cdf, half, side="right")) - 2)
    last = min(noise.size - 1, noise.size - int(np.searchsorted(sf[::-1], half, side="right")) + 1)
    below = (cdf[first - 1] if first > 0 else 0.0) + dropped
    above = sf[last + 1] if last + 1 < noise.size else 0.0
    return noise[first : last + 1], below, above


def _pmf_of(trials: int, p: float) -> Callable[[NDArray[np.int64]], NDArray[np.float64]]:
    """The binomial(``trials``, ``p``) pmf as a function of the outcomes (for :func:`~pldshuffle._kernels.binomial_walk`)."""
    return lambda k: binomial_pmf(k, trials, p)


def _pair_from_noise(
    noise: NDArray[np.float64], below: float, above: float, p: float, label: str, booked: float = 0.0
) -> PrivacyLossPair:
    """Pair ``(N + Bern(p), N + Bern(1-p))`` from the pmf of N on a range ``[first, last]`` (``noise``) and
    bounds on its mass below and above it; with ``booked > 0``, the mixture giving it weight ``1 - booked``
    and a fully revealing branch (mass at +∞ in both directions) weight ``booked``, which dominates every
    mixture whose revealing branch is lighter.

    Outcome ``j`` is kept when ``N(j)`` and ``N(j-1)`` both lie in the range; the P- and Q-mass of the other
    outcomes is booked.  The loss falls with ``j`` (N is log-concave), so the forward direction is passed in
    reverse and both arrive sorted (zero masses are dropped by :class:`~pldshuffle.pld.LossDistribution`);
    one kernel pass (:func:`~pldshuffle._kernels.rr_pair_from_noise`).
    """
    q = 1.0 - p
    eps0 = math.log1p(-p) - math.log(p)
    # Losses from the neighbours' ratio r = N(j-1)/N(j) (an ulp-accurate division), not a difference of log-pmfs.
    forward_losses, forward_masses, backward_losses, backward_masses = rr_pair_from_noise(noise, p, q, eps0)
    # Each N is within MASS_RTOL of the exact pmf, so the ratio within 2·MASS_RTOL (and a rounding), and
    # |d loss / d log r| = |p - q|·r/((q + pr)(p + qr)) ≤ |p - q| as (q + pr)(p + qr) ≥ r; the rest is a
    # few roundings of the quotient and logarithm (and of p itself), relative to 1 + ε0.  ~1e-13 at
    # ε0 = 1e-3, where a default allowance of 2e-9 per round had moved ε by 2e-3 over 1e6 rounds.
    loss_error = 2.01 * MASS_RTOL * abs(q - p) + 16.0 * _U * (1.0 + eps0)

    def direction(stay: float, move: float, losses: NDArray[np.float64], masses: NDArray[np.float64]) -> LossDistribution:
        # P(N + X = j) = stay·N(j) + move·N(j-1); both weights passed exactly (1 - (1 - p) is not p).
        # Unkept: below and above the range, N(first) without its lower neighbour, N(last) without its upper one.
        unkept = below + noise[0] * stay + above + noise[-1] * move
        if booked:
            masses, unkept = masses * (1.0 - booked), unkept * (1.0 - booked) + booked
        # The tails' bounds may exceed what the kept masses leave (a large tail_mass): the unkept mass is
        # at most 1 - (true kept mass), and the kept masses are within MASS_RTOL of the true ones.
        room = max(1.0 - float(np.sum(masses)) * (1.0 - 5.0 * MASS_RTOL), 0.0)
        return LossDistribution(losses, masses, truncated_mass=min(unkept, room, 1.0), loss_error=loss_error)

    return PrivacyLossPair(direction(q, p, forward_losses, forward_masses), direction(p, q, backward_losses, backward_masses), label=label)
