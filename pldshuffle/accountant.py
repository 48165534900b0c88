"""The Fourier accountant: a ledger of shuffled releases, answered from one certified PLD.

The ledger (mechanism, rounds, setting) is turned into ONE :class:`~pldshuffle.pld.certified.CertifiedPLD`
on ONE lattice chosen for the whole ledger, built at the first query and cached until the next
``compose``; every query reads that object, so answers agree with each other
(``get_delta(get_epsilon(δ)) ≤ δ``).  A mechanism whose guarantee is a worst case over datasets enters
as one dominating pair (:mod:`pldshuffle.worstcase`): by default composed per round ("the data may
change between rounds", the usual composition theorem; for a family of cells such as shuffled binary
randomized response, blocks of up to 64 rounds are bounded by the adaptive recursion of
:mod:`pldshuffle.worstcase.recursion`); with ``same_data=True`` the block of rounds is
bounded as a whole, which is tighter but valid only when every round sees the same dataset.

Each ``compose(..., same_data=True)`` call is its own block: the data may change between two calls, so
equal mechanisms are merged only within one call (a block of one round is a round of the default setting).
Entries of the default setting are merged by value (equal mechanisms' counts add), wherever they sit in
the ledger (checked against the exact adaptive worst case of interleaved ledgers in ``tests/test_ledgers.py``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ._validation import MAX_SPACING, check_delta, check_epsilons, check_flag, check_int, check_positive_finite, check_probability
from ._build import build_ledger
from ._estimate import warn_if_slow
from ._reporting import ProgressChannel, reporting_to
from .pld.certified import CertifiedPLD
from .pld.sizing import MemoryBudgetError
from .pld.fft import check_backend
from .mechanisms.base import DEFAULT_TAIL_MASS, LEDGER_TAIL_BUDGET, PairFamily, ShuffleMechanism, check_mechanism
from ._gap import delta_caveat, epsilon_caveat, shifted_epsilons
from .pld.sizing import choose_spacing, gap_scale, relative_target
from .results import DeltaBounds, EpsilonBounds, warn_if_loose, warn_if_not_guarantee

__all__ = ["FourierAccountant"]

#: Pair families smaller than this are never refused for memory (well inside the 300 MiB allowance).
_SMALL_FAMILY_BYTES = 64 * 2**20


def neighboring_relation(mechanism: ShuffleMechanism) -> str:
    """The neighbouring relation ``mechanism``'s guarantee is for (``"replace-one"`` unless it says otherwise)."""
    return str(getattr(mechanism, "neighboring_relation", "replace-one"))


def _check_relation(mechanism: ShuffleMechanism, ledger: list[ShuffleMechanism]) -> None:
    """Refuse a mechanism whose neighbouring relation differs from the ledger's (docs/mathematics.md,
    "Neighbouring relations in one ledger")."""
    new = neighboring_relation(mechanism)
    for other in ledger:
        old = neighboring_relation(other)
        if old != new:
            raise ValueError(
                f"cannot compose {'an' if new[0] in 'aeiou' else 'a'} {new} mechanism ({mechanism.describe()}) into a ledger of {old} mechanisms "
                f"({other.describe()}): replace-one rounds and add/remove steps are different promises (a guarantee "
                "for datasets differing in one user's value vs one having an extra example), and composing them "
                "would certify neither. No conversion is applied automatically (composing the add and remove "
                "pairs is NOT a replace-one bound: the Gaussian mechanism of sensitivity 1 has μ = 2/σ under "
                "replace-one, not √2/σ). If you have shown that a pair dominates under the other relation, "
                "state it: PairMechanism(pair, neighboring_relation=...) or from_dp_accounting(pld, "
                "neighboring_relation=...) for a distribution built for that relation."
            )


class FourierAccountant:
    """Compose shuffle mechanisms over rounds and bracket the resulting (ε, δ) strictly.

    Parameters
    ----------
    value_discretization_interval : float, optional
        Lattice spacing Δ, at most 100 (nats).  Default: chosen once per ledger from the relative-gap target
        and an estimate of ε (Δ ≈ target·ε/(2√rounds), or /(8√rounds) for sparse pairs:
        :func:`pldshuffle.pld.sizing.choose_spacing`), coarsened if the memory cap requires it.
    tail_mass : float, optional
        Probability mass each mechanism may drop per truncated coordinate (booked at +∞ by the upper
        bound, never lost).  Default: ``min(1e-18, 1e-17/rounds)``, so the mass booked by a whole ledger
        stays near 1e-17 however many rounds it composes (supports grow only as √log(1/tail_mass)).
    fft_backend : {"auto", "pyfftw", "scipy", "numpy"}
        "auto": numpy.fft below 2**15 points, else pyFFTW if installed, else scipy.fft (:mod:`pldshuffle.pld.fft`).
    max_memory_bytes : int
        Refuse (:class:`~pldshuffle.pld.sizing.MemoryBudgetError`, a ``ValueError``, before allocating) a
        composition whose working set would exceed this even on a coarser automatic lattice, or a ledger
        whose neighbouring pairs alone would take more than half of it (worst-case covers of
        :class:`~pldshuffle.ShuffledBinaryRR` at ~1e10 users: ``ShuffleMechanism.family_bytes``).
    relative_gap_target : float, optional
        Override the automatic relative ε-gap target (1e-4 / 1e-3 / 2e-3 for 1 / ≤64 / more rounds).  It sizes
        the lattice and the worst-case covers; a long ledger of a worst case over datasets whose adaptive
        blocks would miss it is redone in longer blocks (:func:`pldshuffle.worstcase.strategy.family_term`; tens of
        seconds, announced like any slow computation).
    progress : callable, optional
        Called with a short message at each stage of building the composition.  A composition estimated
        to take more than ~30 s (:func:`pldshuffle._estimate.estimated_seconds`) is announced there and
        with a :class:`~pldshuffle.SlowComputationWarning` first.

    Examples
    --------
    >>> import pldshuffle as ps
    >>> acc = ps.FourierAccountant().compose(ps.ShuffledBinaryRR(1000, 2.0), count=4)
    >>> b = acc.get_epsilon_bounds(1e-6)
    >>> b.lower <= b.upper
    True

    Notes
    -----
    Cost: building each mechanism's lattice measure (O(support), plus branch and bound over dataset
    cells for worst cases), then a few FFT compositions (one per tilt, order and witness) of
    O(m log m) on windows of m ≈ (composed loss range)/Δ points.
    """

    def __init__(
        self,
        *,
        value_discretization_interval: float | None = None,
        tail_mass: float | None = None,
        fft_backend: str = "auto",
        max_memory_bytes: int = 2 * 2**30,
        relative_gap_target: float | None = None,
        progress: Callable[[str], None] | None = None,
    ) -> None:
        if value_discretization_interval is not None:
            value_discretization_interval = check_positive_finite("value_discretization_interval", value_discretization_interval, MAX_SPACING)
        self.value_discretization_interval = value_discretization_interval
        self.tail_mass = None if tail_mass is None else check_probability("tail_mass", tail_mass)
        self.fft_backend = check_backend(fft_backend)  # "auto" is resolved per window, importing nothing now
        self.max_memory_bytes = check_int("max_memory_bytes", max_memory_bytes, minimum=1)
        if relative_gap_target is not None:
            relative_gap_target = check_probability("relative_gap_target", relative_gap_target)
        self.relative_gap_target = relative_gap_target
        if progress is not None and not callable(progress):
            raise TypeError(f"progress must be callable or None, got {type(progress).__name__}")
        self.progress = progress
        self._progress_channel: ProgressChannel | None = None
        # (mechanism, block) -> rounds; block 0 holds the rounds whose data may change (merged by value),
        # block b > 0 the b-th same-data call (never merged with another call: the data may change between calls).
        self._ledger: dict[tuple[ShuffleMechanism, int], int] = {}
        self._same_data_calls = 0
        self._families: dict[tuple[ShuffleMechanism, float], PairFamily] = {}
        self._pld: CertifiedPLD | None = None

    # ------------------------------------------------------------------ pickling (sweeps on other processes)
    def __getstate__(self) -> dict[str, object]:
        """What a pickle keeps: the settings and the ledger.  The computed pairs and composition are
        caches (rebuilt, bit for bit the same, on the first query) and may hold closures; the ``progress``
        callback belongs to this process's terminal or bar, so the copy has none."""
        state = dict(self.__dict__)
        state.update(progress=None, _progress_channel=None, _families={}, _pld=None)
        return state

    # ------------------------------------------------------------------ ledger
    def compose(self, mechanism: ShuffleMechanism, count: int = 1, *, same_data: bool = False) -> FourierAccountant:
        """Add ``count`` rounds of ``mechanism``; returns ``self`` for chaining.

        ``same_data=True`` declares that the ``count`` rounds of THIS call all see the same dataset (tighter
        for worst cases over datasets; the default assumes the data may change between rounds).  Each such
        call is its own block: the data may change between two calls, so two calls of 2 same-data rounds are
        two blocks, not one block of 4 rounds.  Rounds of the default setting are merged with earlier ones
        of an equal mechanism (their counts add; see the module notes).  Every entry must be for the same
        neighbouring relation (``neighboring_relation``: replace-one for the shuffle mechanisms, add/remove
        for :class:`~pldshuffle.RandomAllocation` and imported dp-accounting distributions); mixing them
        raises ``ValueError``.

        Examples
        --------
        >>> import pldshuffle as ps
        >>> m = ps.ShuffledBinaryRR(3, 1.0)
        >>> acc = ps.FourierAccountant().compose(m, 2, same_data=True).compose(m, 2, same_data=True)
        >>> [(count, same) for _, count, same in acc.entries]  # two blocks of the same data, not one of 4 rounds
        [(2, True), (2, True)]
        """
        check_mechanism(mechanism)
        count = check_int("count", count, minimum=1)
        _check_relation(mechanism, [m for (m, _) in self._ledger])
        same_data = check_flag("same_data", same_data)
        if same_data and count > 1:
            self._same_data_calls += 1
            key = (mechanism, self._same_data_calls)
        else:  # one round sees one dataset in either setting: it joins the default rounds
            key = (mechanism, 0)
        self._ledger[key] = self._ledger.get(key, 0) + count
        self._pld = None
        return self

    @property
    def ledger(self) -> tuple[tuple[ShuffleMechanism, int], ...]:
        """The composed ``(mechanism, count)`` entries in insertion order (see :attr:`entries` for the setting)."""
        return tuple((m, n) for (m, _), n in self._ledger.items())

    @property
    def entries(self) -> tuple[tuple[ShuffleMechanism, int, bool], ...]:
        """The composed ``(mechanism, count, same_data)`` entries in insertion order: one per same-data block
        (``compose(..., same_data=True)`` call of more than one round), one per distinct mechanism otherwise."""
        return tuple((m, n, block > 0) for (m, block), n in self._ledger.items())

    @property
    def rounds(self) -> int:
        """Total number of composed rounds."""
        return sum(self._ledger.values())

    @property
    def ledger_tail_mass(self) -> float:
        """The ``tail_mass`` each mechanism of the current ledger is truncated with (see the class notes)."""
        if self.tail_mass is not None:
            return self.tail_mass
        return min(DEFAULT_TAIL_MASS, LEDGER_TAIL_BUDGET / max(self.rounds, 1))

    def _family(self, mechanism: ShuffleMechanism) -> PairFamily:
        key = (mechanism, self.ledger_tail_mass)
        if key not in self._families:
            # Families truncated for another ledger size are not needed again (they can be large).
            self._families = {k: v for k, v in self._families.items() if k[1] == key[1]}
            # Reported before the work: some families take seconds (kRR weak at 1e6 users: ~12 s).
            self._report(f"building the neighbouring pairs of {mechanism.describe()}")
            with reporting_to(self._channel):
                self._families[key] = mechanism.pair_family(tail_mass=key[1])
        return self._families[key]

    @property
    def _channel(self) -> ProgressChannel | None:
        """``progress`` with the time of its last message, shared by every stage and step of this
        accountant (so a step that starts after seconds of other work reports at its first tick)."""
        if self.progress is None:
            return None
        if self._progress_channel is None or self._progress_channel.callback is not self.progress:
            self._progress_channel = ProgressChannel(self.progress)
        return self._progress_channel

    def _report(self, message: str) -> None:
        if (channel := self._channel) is not None:
            channel(message)

    # ------------------------------------------------------------------ the composed object
    def certified_pld(self) -> CertifiedPLD:
        """The ledger's composed certified PLD (built once, cached until the next ``compose``)."""
        if not self._ledger:
            raise ValueError("nothing composed yet: call compose(mechanism, count) before querying")
        if self._pld is None:
            self._check_family_memory()
            # From the parameters alone, before building families.
            warned = warn_if_slow(self.ledger, self._report, tail_mass=self.ledger_tail_mass)
            target = self.relative_gap_target or relative_target(self.rounds)
            spacing = self.value_discretization_interval or choose_spacing([(self._family(m).upper[0], n) for m, n in self.ledger], target)
            if not warned:
                blocks = [(m, n) for m, n, same in self.entries if same]
                # An automatic lattice is coarsened to fit the memory cap and a fixed one beyond it is refused,
                # so no composition larger than the cap allows is timed (Δ = 1e-300 had warned of 1e297 s).
                warn_if_slow(self.ledger, self._report, family=self._family, spacing=spacing, same_data=blocks,
                             tail_mass=self.ledger_tail_mass, max_memory_bytes=self.max_memory_bytes)
            options = dict(fft_backend=self.fft_backend, max_memory_bytes=self.max_memory_bytes)
            entries = [((m, same), n) for m, n, same in self.entries]
            self._pld = build_ledger(entries, self._family, spacing, coarsen=self.value_discretization_interval is None,
                                     tolerance=self.relative_gap_target or 1e-3, options=options, report=self._channel or self._report, target=target)
        return self._pld

    def _check_family_memory(self) -> None:
        """Refuse, before building anything, a ledger whose pair families alone would take more than the
        half of ``max_memory_bytes`` that the worst-case covers may hold (the composition has the rest).

        Families under ``_SMALL_FAMILY_BYTES`` are built whatever the cap (a branch and bound over datasets
        then stops refining at once: sound, only looser), so tiny caps still answer small ledgers.
        """
        # One family per distinct mechanism (cached): same-data blocks of one mechanism share it.
        needed = sum(m.family_bytes(tail_mass=self.ledger_tail_mass) for m in dict.fromkeys(m for m, _ in self.ledger))
        budget = self.max_memory_bytes / 2
        if needed > max(budget, _SMALL_FAMILY_BYTES):
            raise MemoryBudgetError(
                f"the mechanisms' neighbouring pairs alone need ~{needed / 2**30:.2f} GiB, above half of "
                f"max_memory_bytes={self.max_memory_bytes:,} (the other half is the composition's); raise "
                "max_memory_bytes or use fewer users (a bound for fewer users also holds for more, by post-processing)",
                needed,
                budget,
            )

    # ------------------------------------------------------------------ queries
    def _labels(self) -> tuple[bool, tuple[str, ...], dict[str, Any]]:
        pld = self.certified_pld()
        diag = pld.diagnostics()
        diag["setting"] = (
            "same data within each same-data block (one compose call with same_data=True); data may change "
            "between blocks and between all other rounds"
            if any(same for _, _, same in self.entries)
            else "data may change between rounds"
        )
        return pld.is_guarantee, pld.caveats, diag

    @property
    def gap_target(self) -> float:
        """The ledger's relative ε-gap target: ``relative_gap_target``, or 1e-4 / 1e-3 / 2e-3 for one / at most
        64 / more rounds.  A query whose bracket ends wider carries a caveat saying so and issues a
        :class:`~pldshuffle.LooseBoundWarning` (the rule, with its absolute allowance at small ε:
        ``docs/mathematics.md#loose-brackets``)."""
        return self.relative_gap_target or relative_target(self.rounds)

    def _delta_caveat(self, pld: CertifiedPLD, eps: NDArray[np.float64], lower: NDArray[np.float64], upper: NDArray[np.float64]) -> str | None:
        target, scale = self.gap_target, gap_scale(self.rounds)
        shifted = shifted_epsilons(eps, target=target, scale=scale)
        finite = np.isfinite(shifted)
        shifted_lower = np.zeros(eps.shape)
        shifted_lower[finite] = pld.lower_delta(shifted[finite])
        return delta_caveat(eps, lower, upper, shifted_lower, target=target, scale=scale)

    def _epsilon_caveat(self, pld: CertifiedPLD, delta: float, lower: float, upper: float) -> str | None:
        infinity = float(pld.delta_bounds(np.inf)[1][0]) if np.isinf(upper) else 0.0
        return epsilon_caveat(lower, upper, delta=delta, target=self.gap_target, scale=gap_scale(self.rounds), infinity_upper=infinity)

    def get_delta_bounds(self, target_epsilon: ArrayLike) -> DeltaBounds:
        """Certified bracket on δ at ``target_epsilon`` (a float or an array of floats ≥ 0; ``inf`` gives
        the bracket on the composed mass at +∞, below which every ε is ∞).  Warns with
        :class:`~pldshuffle.LooseBoundWarning` (and says so in ``caveats``) where it misses :attr:`gap_target`."""
        eps = check_epsilons(target_epsilon, allow_inf=True)
        pld = self.certified_pld()
        with reporting_to(self._channel):  # a single round's query may refine its cover for seconds
            lower, upper = pld.delta_bounds(eps.ravel())
        guarantee, caveats, diag = self._labels()
        if (loose := self._delta_caveat(pld, eps.ravel().astype(np.float64), lower, upper)) is not None:
            caveats += (loose,)
            warn_if_loose(loose)
        if eps.ndim == 0:
            return DeltaBounds(float(lower[0]), float(upper[0]), float(eps), guarantee, caveats, diag)
        return DeltaBounds(lower.reshape(eps.shape), upper.reshape(eps.shape), eps, guarantee, caveats, diag)

    def get_epsilon_bounds(self, target_delta: float) -> EpsilonBounds:
        """Certified bracket on the smallest ε with δ(ε) ≤ ``target_delta``.  Warns with
        :class:`~pldshuffle.LooseBoundWarning` (and says so in ``caveats``) where it misses :attr:`gap_target`."""
        delta = check_delta(target_delta)
        pld = self.certified_pld()
        with reporting_to(self._channel):  # a single round's query may refine its cover for seconds
            lower, upper = pld.epsilon_bounds(delta)
        guarantee, caveats, diag = self._labels()
        if (loose := self._epsilon_caveat(pld, delta, lower, upper)) is not None:
            caveats += (loose,)
            warn_if_loose(loose)
        return EpsilonBounds(lower, upper, delta, guarantee, caveats, diag)

    def epsilon_curve(self, target_deltas: ArrayLike) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
        """``(lower, upper)`` arrays of certified ε brackets at each δ (one composed object); warns with
        :class:`~pldshuffle.LooseBoundWarning` if any misses :attr:`gap_target`."""
        if isinstance(target_deltas, (str, bytes)):
            raise TypeError(f"target_deltas must be an array of numbers in (0, 1), got {target_deltas!r}")
        deltas = [check_delta(d, "target_deltas") for d in np.atleast_1d(np.asarray(target_deltas, dtype=object)).ravel()]
        if not deltas:
            raise ValueError("target_deltas must hold at least one value in (0, 1)")
        pld = self.certified_pld()
        with reporting_to(self._channel):
            pairs = [pld.epsilon_bounds(d) for d in deltas]
        loose = [c for d, (lo, up) in zip(deltas, pairs) if (c := self._epsilon_caveat(pld, d, lo, up)) is not None]
        if loose:
            warn_if_loose(f"{len(loose)} of {len(deltas)} epsilon brackets: {loose[0]}" if len(deltas) > 1 else loose[0])
        return np.array([p[0] for p in pairs]), np.array([p[1] for p in pairs])

    def delta_curve(self, target_epsilons: ArrayLike) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
        """``(lower, upper)`` arrays of certified δ brackets at each ε (one composed object)."""
        b = self.get_delta_bounds(np.atleast_1d(check_epsilons(target_epsilons, "target_epsilons", allow_inf=True)))
        return np.asarray(b.lower), np.asarray(b.upper)

    def get_delta(self, target_epsilon: ArrayLike) -> Any:
        """The guarantee: upper end of :meth:`get_delta_bounds` (warns if the ledger is not a guarantee)."""
        b = self.get_delta_bounds(target_epsilon)
        warn_if_not_guarantee(b.is_guarantee, b.caveats)
        return b.upper

    def get_epsilon(self, target_delta: float) -> float:
        """The guarantee: upper end of :meth:`get_epsilon_bounds` (warns if the ledger is not a guarantee)."""
        b = self.get_epsilon_bounds(target_delta)
        warn_if_not_guarantee(b.is_guarantee, b.caveats)
        return b.upper

    def to_dp_accounting(self) -> Any:
        """The whole ledger as one dominating dp-accounting ``PrivacyLossDistribution`` (pessimistic).

        Its privacy profile is at least the ledger's exact one at every ε, each entry in its own setting
        (rounds whose data may change; each same-data block on one dataset, the data changing between
        blocks), so it stays a guarantee when composed further in dp-accounting
        (:func:`pldshuffle.interop.certified_to_dp_accounting`)."""
        from .interop import certified_to_dp_accounting

        return certified_to_dp_accounting(self.certified_pld())
