"""The blanket pair of a local randomizer: the tightest proven decomposition bound (docs/mathematics.md#blanket).

Setting: ``n`` users, each applies ``R`` to its input (or, with Poisson participation ``q``, reports with
probability ``q`` and is otherwise void, ``⊥``); the analyst sees the multiset of reports; neighbouring
datasets replace one user's input (the victim's ``x1`` by ``x2``).

Blanket decomposition (Balle, Bell, Gascón, Nissim, CRYPTO 2019): with ``m(y) = min_x R(x)(y)``,
``γ = Σ_y m(y)`` and ``ω = m/γ``, every report is a fresh draw from ``ω`` with probability ``γ``, whatever the
input.  Revealing every other report that is not such a draw (a post-processing in reverse: the analyst is
given more) leaves the pair

    ``P``: the multiset of ``B`` draws from ``ω`` and one draw from ``R(x1)``, ``B ~ Bin(n-1, γ)`` revealed;
    ``Q``: the same with ``R(x2)``,

which dominates the shuffled randomizer on every dataset pair with that victim pair.  Its privacy loss is
``log S_1 - log S_2``, ``S_j = Σ_{i=0..B} ρ_j(Y_i)``, ``ρ_j = R(x_j)/m`` (reports outside the blanket reveal
the victim's report: loss ``log R(x1)(y)/R(x2)(y)``).  Every clone reduction (FMT20, FMT23, a randomizer's
own constants) is such a decomposition with a smaller blanket, so this pair is never looser than them
(Su, Cheng, Wang, IEEE S&P 2026, prove it is the tightest decomposition).

:class:`BlanketPair` chooses an evaluation (:mod:`._blanket_support`): the weak kRR pair itself for
k-ary and binary RR; a tilted trinomial over all ``B`` when no report hits both inputs; the product
convolution of :mod:`._blanket_product` over groups of ``B`` for product hit laws (OUE, symmetric
RAPPOR and local hashing at large domains), and with participation ``q < 1`` the same product pairs over
groups of the number of non-void reports with a chord over the voids' share (:mod:`._blanket_participation`)
where that is estimated faster than the (N1, N2) evaluation of ``R_q``'s hit model (from about 3e5 users);
an (N1, N2) enumeration per group of ``B`` otherwise (Hadamard response, subset selection, local hashing
with a large point mass); exact enumeration of type counts for small finite randomizers, and for larger
ones a dominating hit model of their types spread to two ratio levels
(:func:`~._blanket_model.spread_hit_model`); for the
continuous :class:`~pldshuffle.randomizers.Laplace` randomizer, the certified discretisation of its ratio
sums in :mod:`._blanket_laplace` (victim inputs at the interval's ends).  When none applies (a finite
randomizer with outputs only some inputs give, many types and many users; or more than
:data:`MAX_VICTIM_PAIRS` distinct victim pairs) it says so (:attr:`BlanketPair.unavailable`) and
:class:`~pldshuffle.ShuffledLDP` falls back to the
labelled clone pair.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from .._validation import check_num_users, check_probability, check_real
from ..pld import PrivacyLossPair
from ..randomizers.base import Randomizer
from ..randomizers.continuous import Laplace
from ..randomizers.named import BinaryRR, KaryRR
from ._blanket_model import MAX_LOG_RATIO, HitModel, hit_model, hit_model_of_types, matrix_types, participating_matrix, spread_hit_model, victim_pairs
from ._blanket_support import (
    DEFAULT_GROUP_TOLERANCE,
    MAX_ENUMERATED_POINTS,
    MIXTURE_BINS,
    b_points,
    enumerated_pair,
    enumerated_size,
    fixed_b_cells,
    grouped_bounds,
    hit_width,
    trinomial_bounds,
)
from ._blanket_laplace import laplace_bounds, laplace_seconds
from ._blanket_participation import NODE_OFFSETS, participation_bounds, participation_window_points
from ._blanket_product import product_bounds
from ._krr_sizing import size_estimates, stream_seconds
from ._krr_support import ESTIMATE_LIMIT, EXACT_SUPPORT_LIMIT, MAX_MERGED_PAIRS
from .base import DEFAULT_TAIL_MASS

__all__ = ["BlanketPair", "MAX_VICTIM_PAIRS", "SPREAD_CAVEAT", "check_participation"]

#: A finite randomizer with more distinct victim pairs than this is not analysed by the blanket pair (the
#: envelope would build one pair per victim pair): :class:`ShuffledLDP` falls back to the clone pair.
MAX_VICTIM_PAIRS = 64
#: Caveat of a blanket pair evaluated on spread types (:attr:`BlanketPair.spread`).
SPREAD_CAVEAT = (
    "blanket pair of a finite randomizer with many distinct ratio pairs, evaluated with each output type's ratios "
    "spread to the pair's least and largest ratio (mean-preserving, so the spread pair dominates the exact blanket "
    "pair): a guarantee for this randomizer; the bracket is that of the spread pair, an upper bound on the exact "
    "blanket pair's ε; unlike the exact blanket pair it is not proven never looser than the labelled clone pairs "
    "(measured tighter)"
)
#: Product hit laws use the product evaluation when the point mass ``λ`` of their split costs at most this
#: much probability (``n·λ``, see :mod:`._blanket_product`: the lower pair loses a fraction ``≤ n·λ`` of its
#: mass, moving ε by far less than the 1e-4 gap), otherwise the (N1, N2) enumeration.
PRODUCT_SLACK = 1e-6


#: Hit counts per value of ``B`` beyond which a plan is refused (each is a pmf value held in memory).
MAX_FACTOR_POINTS = 5e7
#: Plans estimated to take longer than this are refused (``ShuffledLDP`` then falls back to the clone pair).
MAX_BLANKET_SECONDS = 3600.0
#: Calibration of :meth:`BlanketPair.build_seconds` (2 CPU cores).
_PRODUCT_GROUP_SECONDS = 0.01
#: ... of the (N1, N2) evaluation (:func:`~._blanket_support.fixed_b_cells`): per value of ``B`` evaluated, the
#: Boost window searches, and per point of its support (the walks, the recurrence and the binning, two
#: threads).  Least squares over Hadamard response, subset selection and OUE d = 32 at n = 1e4 and 1e5,
#: ε0 = 0.1-4 (idle machine): 2.4 ms and 5.0 ns, within 30 % of every case; times 1.6 for a loaded one.
_GROUP_SECONDS, _DEPENDENT_POINT_SECONDS = 0.004, 8e-9
#: Bytes of :meth:`BlanketPair.family_bytes`: per point of an evaluation (its loss and mass, their lattice
#: copies), and the mixture lattices (two accumulators of mass and moment, two distributions of loss and
#: mass, at four times MIXTURE_BINS cells).
_BYTES_PER_POINT = 32.0
_MIXTURE_BYTES = 8.0 * 8.0 * 4.0 * MIXTURE_BINS
#: ... and of the participation evaluation: one product evaluation, one point of its (c, M) window.
_PRODUCT_EVALUATION_SECONDS, _WINDOW_POINT_SECONDS = 0.0025, 5e-9


def _trinomial_sizes(n: int, model: HitModel, tail_mass: float) -> tuple[float, float, float]:
    """``(cells, points, merged)`` of :func:`~._blanket_support.trinomial_bounds`: the weak kRR pair's
    estimates (:func:`~._krr_sizing.size_estimates`) with ``k = 1/π10``, the same tilted trinomial."""
    return size_estimates(n, 1.0 / model.pi10, model.gamma, "weak", tail_mass)


def _dependent_points(b: float, model: HitModel, tail_mass: float) -> float:
    """Support of the fixed-``B`` pair at ``b`` (:func:`~._blanket_support.fixed_b_cells`): the window of ``N1``
    times that of ``N2 | N1`` (``A + C``, their windows' widths added)."""
    z = 2.0 * math.sqrt(2.0 * math.log(1.0 / tail_mass))
    p1 = model.hit_probability
    alpha, beta = model.conditional_hits
    w1 = z * math.sqrt(b * p1 * (1.0 - p1)) + 1.0
    w2 = z * (math.sqrt(b * p1 * alpha * (1.0 - alpha)) + math.sqrt(b * (1.0 - p1) * beta * (1.0 - beta))) + 2.0
    return w1 * w2


def _dependent_seconds(n: int, model: HitModel, tail_mass: float, tolerance: float) -> float:
    """Estimated seconds of the (N1, N2) evaluation over the groups of ``B`` (2 cores): per value of ``B``
    evaluated, :data:`_GROUP_SECONDS` and :data:`_DEPENDENT_POINT_SECONDS` per support point at the mode of ``B``."""
    groups = b_points(n, model.gamma, tail_mass, tolerance).size
    return groups * (_GROUP_SECONDS + _DEPENDENT_POINT_SECONDS * _dependent_points((n - 1) * model.gamma, model, tail_mass))


def check_participation(value: object) -> float:
    """``q ∈ (0, 1]`` or ``ValueError``/``TypeError`` naming ``participation``."""
    q = check_real("participation", value)
    if not 0.0 < q <= 1.0:
        raise ValueError(f"participation must lie in (0, 1] (the probability that a user reports), got {value!r}")
    return q


@dataclass(frozen=True)
class _Plan:
    """How one victim pair's blanket pair is evaluated."""

    method: str  # "krr", "trinomial", "product", "participation", "grouped", "enumerated", "laplace"
    model: HitModel | None = None
    types: object | None = None
    victims: tuple[int, int] = (0, 1)
    base: HitModel | None = None  # "participation": the randomizer's own model (model is R_q's)
    spread: bool = False  # model is the two-level spread of the pair's types (spread_hit_model)


@dataclass(frozen=True)
class BlanketPair:
    """The blanket pair(s) of ``randomizer`` shuffled among ``num_users`` users (module docstring).

    Parameters
    ----------
    num_users : int
        ``2 <= n <= 2**53``, the victim included.
    randomizer : pldshuffle.randomizers.Randomizer
        The local randomizer.
    participation : float
        Probability ``q ∈ (0, 1]`` that a user reports (Poisson participation; the analyst sees how many
        reports arrived).  ``1``: everybody reports.
    group_tolerance : float
        In ``[0, 1]``.  Groups of ``B`` (where grouping is used) near its mode span this fraction of their
        lowest value (wider in the tails); the relative ε gap it leaves is about 0.7 times it.

    Attributes
    ----------
    unavailable : str
        Why no evaluation applies (empty when one does); :meth:`pair_bounds` then raises ``ValueError``.

    Notes
    -----
    One pair serves every victim pair of the named randomizers: their type law (``HitModel``, closed forms
    in docs/mathematics.md#blanket) is the same for every pair of distinct inputs and symmetric in the two;
    a :class:`~pldshuffle.randomizers.Finite` randomizer gets one pair per distinct victim pair (both
    directions in each), whose worst case the accountant takes.  :attr:`methods` names the evaluation per
    pair and :meth:`build_seconds` estimates its time.

    Examples
    --------
    >>> from pldshuffle.randomizers import OUE
    >>> bp = BlanketPair(10_000, OUE(1024, 1.0))
    >>> bp.methods
    ('product',)
    >>> (lower,), (upper,) = bp.pair_bounds()
    >>> bool(lower.delta_bounds(0.05)[0][0] <= upper.delta_bounds(0.05)[1][0])
    True
    """

    num_users: int
    randomizer: Randomizer
    participation: float = 1.0
    group_tolerance: float = DEFAULT_GROUP_TOLERANCE
    _plans: tuple[_Plan, ...] = field(init=False, repr=False, compare=False)
    unavailable: str = field(init=False, default="", compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "num_users", check_num_users(self.num_users))
        if not isinstance(self.randomizer, Randomizer):
            raise TypeError(f"randomizer must be a pldshuffle.randomizers.Randomizer, got {type(self.randomizer).__name__}")
        object.__setattr__(self, "participation", check_participation(self.participation))
        tol = check_real("group_tolerance", self.group_tolerance)
        if not 0.0 <= tol <= 1.0:
            raise ValueError(f"group_tolerance must lie in [0, 1], got {self.group_tolerance!r}")
        plans, reason = self._plan()
        object.__setattr__(self, "_plans", plans)
        object.__setattr__(self, "unavailable", reason)

    # ------------------------------------------------------------------ planning
    def _plan(self) -> tuple[tuple[_Plan, ...], str]:
        n, q, R = self.num_users, self.participation, self.randomizer
        if isinstance(R, Laplace):
            return (_Plan("laplace", victims=(0, 1)),), ""
        model = hit_model(R)
        if model is not None:
            if q == 1.0 and isinstance(R, (KaryRR, BinaryRR)):
                from .krr import ShuffledKRR

                d = 2 if isinstance(R, BinaryRR) else R.domain_size
                try:  # its own size checks (refusals name the request)
                    ShuffledKRR(n, d, local_epsilon=float(R.local_epsilon), adversary="weak")
                except ValueError as exc:
                    return (), str(exc)
                return (_Plan("krr", model),), ""
            plan = self._hit_plan(model.with_participation(q))
            product = self._participation_plan(model)
            # The (N1, N2) evaluation of R_q's hit model is exact per value of B (gaps ~1e-7 at n = 1e3,
            # 3e-5 at 1e5) but costs ~n^{3/2}; the product path with participation, ~n^{1/2}, has chord
            # gaps up to ~8e-4 at n = 1e3: take the grouped one while it is estimated no slower.
            if product is not None and plan.method == "grouped" and self._plan_seconds(product, DEFAULT_TAIL_MASS) < _dependent_seconds(
                n, plan.model, DEFAULT_TAIL_MASS, self.group_tolerance  # type: ignore[arg-type]
            ):
                plan = product
            return (plan,), self._too_large(plan)
        matrix = participating_matrix(R.matrix(), q)
        pairs = victim_pairs(matrix)
        plans: dict[tuple, _Plan] = {}
        for x1, x2 in pairs:
            types = matrix_types(matrix, x1, x2)
            hm = hit_model_of_types(types)
            if hm is not None:
                key: tuple = ("hit", *(round(v, 12) for v in (hm.gamma, hm.log_ratio, hm.pi11, hm.pi10)))
                plans.setdefault(key, self._hit_plan(hm, (x1, x2)))
            else:
                key = ("types", types.gamma, tuple(np.round(types.r1, 12)), tuple(np.round(types.r2, 12)), tuple(np.round(types.prob, 14)),
                       tuple(np.round(types.victim_p, 14)), tuple(np.round(types.victim_q, 14)))
                if key not in plans:
                    size = enumerated_size(n, types.prob.size)
                    if size <= MAX_ENUMERATED_POINTS:
                        plans[key] = _Plan("enumerated", types=types, victims=(x1, x2))
                    elif (spread := spread_hit_model(types)) is not None:
                        plans[key] = self._hit_plan(spread, (x1, x2), spread=True)
                    else:
                        return (), (
                            f"victim pair {(x1, x2)} has {types.prob.size} output types (distinct ratio pairs), no hit "
                            f"structure, and outputs only the victim can give (or ratios beyond e^{MAX_LOG_RATIO:g}), so no "
                            f"two-level spread; enumerating their counts for n={n} visits {size:.3g} vectors, more than "
                            f"{MAX_ENUMERATED_POINTS:,}"
                        )
            if len(plans) > MAX_VICTIM_PAIRS:
                return (), f"more than {MAX_VICTIM_PAIRS} distinct victim pairs"
        if not plans:
            return (), "the randomizer's rows are identical"
        for plan in plans.values():
            if reason := self._too_large(plan):
                return (), reason
        return tuple(plans.values()), ""

    def _too_large(self, plan: _Plan) -> str:
        """Why a hit plan is refused before any work (its windows or its estimated time too large), or ``""``."""
        if plan.model is None:
            return ""
        model, n = plan.model, self.num_users
        z = 2.0 * math.sqrt(2.0 * math.log(1.0 / DEFAULT_TAIL_MASS))
        width = z * math.sqrt(n * model.gamma * model.hit_probability * (1.0 - model.hit_probability)) + 1.0
        if plan.method == "trinomial":
            cells, _, merged = _trinomial_sizes(n, model, DEFAULT_TAIL_MASS)
            if cells > 4 * MAX_MERGED_PAIRS:
                return f"about {cells:.3g} cells (B, N1 + N2), more than {4 * MAX_MERGED_PAIRS:.3g}"
            if merged > ESTIMATE_LIMIT:
                return f"about {merged:.3g} support points, more than {ESTIMATE_LIMIT:.3g}"
        elif plan.method == "participation":
            seconds = self._plan_seconds(plan, DEFAULT_TAIL_MASS)
            if seconds > MAX_BLANKET_SECONDS:
                return f"an estimated {seconds:.3g} s (groups of product items and their window), more than {MAX_BLANKET_SECONDS:g} s"
            return ""
        elif width > MAX_FACTOR_POINTS:
            return f"windows of about {width:.3g} hit counts per value of B, more than {MAX_FACTOR_POINTS:.3g}"
        if plan.method == "grouped":
            seconds = _dependent_seconds(n, model, DEFAULT_TAIL_MASS, self.group_tolerance)
            if seconds > MAX_BLANKET_SECONDS:
                return f"an estimated {seconds:.3g} s of enumeration (hits of both inputs are dependent), more than {MAX_BLANKET_SECONDS:g} s"
        return ""

    def _participation_plan(self, model: HitModel) -> _Plan | None:
        """The product evaluation with participation (:mod:`._blanket_participation`) when ``q < 1`` and the
        randomizer's own hit law has a product split whose point mass costs at most :data:`PRODUCT_SLACK`."""
        q = self.participation
        if q == 1.0:
            return None
        split = model.product_split()
        model_q = model.with_participation(q)
        if split is None or self.num_users * split[1] > PRODUCT_SLACK or model_q.product_split() is None:
            return None
        return _Plan("participation", model_q, base=model)

    def _hit_plan(self, model: HitModel, victims: tuple[int, int] = (0, 1), *, spread: bool = False) -> _Plan:
        if model.pi11 == 0.0:
            return _Plan("trinomial", model, victims=victims, spread=spread)
        split = model.product_split()
        if split is not None:
            if self.num_users * split[1] <= PRODUCT_SLACK:
                return _Plan("product", model, victims=victims, spread=spread)
        return _Plan("grouped", model, victims=victims, spread=spread)

    @property
    def spread(self) -> bool:
        """Whether some victim pair's types were spread to two ratio levels (:func:`~._blanket_model.spread_hit_model`):
        its bracket is then that of a pair dominating the exact blanket pair (:data:`SPREAD_CAVEAT`)."""
        return any(p.spread for p in self._plans)

    @property
    def methods(self) -> tuple[str, ...]:
        """The evaluation used per victim pair (``"krr"``, ``"trinomial"``, ``"product"``, ``"participation"``,
        ``"grouped"``, ``"enumerated"``); empty when :attr:`unavailable`."""
        return tuple(p.method for p in self._plans)

    @property
    def model(self) -> HitModel | None:
        """The hit model of the (first) victim pair, ``None`` for enumerated types."""
        return self._plans[0].model if self._plans else None

    # ------------------------------------------------------------------ sizes
    def group_count(self, *, tail_mass: float = DEFAULT_TAIL_MASS) -> int:
        """Number of groups of ``B`` of the grouped evaluations (0 when none is grouped)."""
        grouped = [p for p in self._plans if p.method in ("product", "grouped", "participation")]
        if not grouped:
            return 0
        return max(b_points(self.num_users, self._group_probability(p), tail_mass, self.group_tolerance).size for p in grouped)

    @staticmethod
    def _group_probability(plan: _Plan) -> float:
        """The success probability of the binomial whose values are grouped (``B``, or ``M`` with participation)."""
        assert plan.model is not None
        if plan.method == "participation":
            split = plan.model.product_split()
            assert split is not None
            return plan.model.gamma * (1.0 - split[1])
        return plan.model.gamma

    def _plan_seconds(self, plan: _Plan, tail_mass: float) -> float:
        """:meth:`build_seconds` of one plan ``"participation"``: per group ``2·(len(NODE_OFFSETS) + 1)`` product
        evaluations, and the kernel's pass over the (c, M) window."""
        assert plan.model is not None
        groups = b_points(self.num_users, self._group_probability(plan), tail_mass, self.group_tolerance).size
        points = participation_window_points(self.num_users, plan.model, tail_mass)
        return groups * 2 * (len(NODE_OFFSETS) + 1) * _PRODUCT_EVALUATION_SECONDS + _WINDOW_POINT_SECONDS * points

    def build_seconds(self, *, tail_mass: float = DEFAULT_TAIL_MASS) -> float:
        """Rough seconds of :meth:`pair_bounds` on a 2-core machine, O(groups) (for the accountant's warning).

        Calibrated on OUE/Hadamard/kRR runs: ~10 ms per group of ``B`` for the product evaluation; for the
        (N1, N2) one ~8 ns per point of each fixed-``B`` support plus ~4 ms of window searches per group
        (Hadamard response and subset selection: 1-2 s at n = 1e4, 2-10 s at n = 1e5 on two idle cores;
        the estimate is about 1.6 times that); the tilted trinomial as the weak kRR pair's.
        """
        total = 0.0
        for plan in self._plans:
            if plan.method == "laplace":
                total += laplace_seconds(self.num_users, float(self.randomizer.local_epsilon), tail_mass, participation=self.participation)
            elif plan.method == "krr":
                from .krr import ShuffledKRR

                d = 2 if isinstance(self.randomizer, BinaryRR) else self.randomizer.domain_size  # type: ignore[attr-defined]
                total += ShuffledKRR(self.num_users, d, local_epsilon=float(self.randomizer.local_epsilon)).family_seconds(tail_mass=tail_mass)
            elif plan.method == "trinomial":
                total += stream_seconds(*_trinomial_sizes(self.num_users, plan.model, tail_mass))  # type: ignore[arg-type]
            elif plan.method == "participation":
                total += self._plan_seconds(plan, tail_mass)
            elif plan.method in ("product", "grouped"):
                model = plan.model
                assert model is not None
                groups = b_points(self.num_users, model.gamma, tail_mass, self.group_tolerance).size
                if plan.method == "product":
                    total += _PRODUCT_GROUP_SECONDS * groups
                else:
                    total += _dependent_seconds(self.num_users, model, tail_mass, self.group_tolerance)
        return total

    def family_bytes(self, *, tail_mass: float = DEFAULT_TAIL_MASS) -> float:
        """A-priori bytes held while :meth:`pair_bounds` runs, summed over the victim pairs; O(1) per pair.

        Per pair: the mixture lattices of the grouped evaluations (:data:`_MIXTURE_BYTES`), plus the largest
        transient arrays, :data:`_BYTES_PER_POINT` per point: the ``(N1, N2)`` evaluation's cells of one fixed
        ``B`` (per thread) and windows, the tilted trinomial's support,
        or the enumerated type counts (``types + 4`` numbers each); the weak kRR pair's own estimate.
        """
        total = 0.0
        n = self.num_users
        z = 2.0 * math.sqrt(2.0 * math.log(1.0 / tail_mass))
        for plan in self._plans:
            if plan.method == "krr":
                from .krr import ShuffledKRR

                d = 2 if isinstance(self.randomizer, BinaryRR) else self.randomizer.domain_size  # type: ignore[attr-defined]
                total += ShuffledKRR(n, d, local_epsilon=float(self.randomizer.local_epsilon), adversary="weak").family_bytes(tail_mass=tail_mass)
            elif plan.method == "enumerated":
                types = plan.types.prob.size  # type: ignore[attr-defined]
                total += 8.0 * (types + 4) * enumerated_size(n, types)
            elif plan.method == "trinomial":
                # exact up to EXACT_SUPPORT_LIMIT points, streamed onto a lattice (in chunks) beyond
                total += _BYTES_PER_POINT * min(_trinomial_sizes(n, plan.model, tail_mass)[1], EXACT_SUPPORT_LIMIT)  # type: ignore[arg-type]
            elif plan.method == "grouped":
                model = plan.model
                assert model is not None
                b = min(n - 1.0, (n - 1) * model.gamma + z * math.sqrt((n - 1) * model.gamma * (1.0 - model.gamma)) + 1.0)
                width = z * math.sqrt((b + 1.0) * model.hit_probability * (1.0 - model.hit_probability)) + 1.0
                total += _MIXTURE_BYTES + 8.0 * 2.0 * 3.0 * MIXTURE_BINS + _BYTES_PER_POINT * width  # the fixed pair's cells (two threads)
            else:  # product, participation, laplace: factor laws of a few thousand cells per evaluation
                total += _MIXTURE_BYTES
        return total

    def describe(self) -> str:
        """One line: the randomizer, n, participation and how the pair is evaluated."""
        part = f", participation q={self.participation:g}" if self.participation < 1.0 else ""
        how = ", ".join(sorted(set(self.methods))) or f"unavailable ({self.unavailable})"
        if self.spread:
            how += "; types spread to two ratio levels"
        return f"blanket pair of {self.randomizer.describe()}, n={self.num_users}{part} [{how}]"

    # ------------------------------------------------------------------ pairs
    def pair_bounds(self, *, tail_mass: float = DEFAULT_TAIL_MASS) -> tuple[tuple[PrivacyLossPair, ...], tuple[PrivacyLossPair, ...]]:
        """Strict ``(lowers, uppers)``: one (lower, upper) privacy-loss pair per distinct victim pair.

        Every upper pair dominates its victim pair's blanket pair (hence the shuffled randomizer on every
        dataset pair with that victim pair); every lower pair is dominated by it.  Truncated tails are
        booked (``+inf`` above, deleted below).
        """
        if not self._plans:
            raise ValueError(f"the blanket pair of {self.randomizer.describe()} is not available here: {self.unavailable}")
        tail = check_probability("tail_mass", tail_mass)
        lowers, uppers = [], []
        for plan in self._plans:
            lower, upper = self._bounds(plan, tail)
            lowers.append(lower)
            uppers.append(upper)
        return tuple(lowers), tuple(uppers)

    def _bounds(self, plan: _Plan, tail: float) -> tuple[PrivacyLossPair, PrivacyLossPair]:
        n = self.num_users
        label = f"blanket pair, victim inputs {plan.victims}{' (types spread to two ratio levels)' if plan.spread else ''}: {self.describe()}"
        context = f"BlanketPair(num_users={n}, randomizer={self.randomizer.describe()}, participation={self.participation:g})"
        advice = "fewer users (num_users), a larger tail_mass, or reduction='randomizer'"
        if plan.method == "enumerated":
            pair = enumerated_pair(n, plan.types, label)  # type: ignore[arg-type]
            return pair, pair
        if plan.method == "laplace":
            label = f"blanket pair, victim inputs (input_min, input_max): {self.describe()}"
            low, up = laplace_bounds(n, float(self.randomizer.local_epsilon), tail, participation=self.participation)
            return (PrivacyLossPair(low, None, label=label + " (lower bound)"),
                    PrivacyLossPair(up, None, label=label + " (upper bound)"))
        if plan.method == "krr":
            from .krr import ShuffledKRR

            d = 2 if isinstance(self.randomizer, BinaryRR) else self.randomizer.domain_size  # type: ignore[attr-defined]
            family = ShuffledKRR(n, d, local_epsilon=float(self.randomizer.local_epsilon), adversary="weak").pair_family(tail_mass=tail)
            return family.lower[0], family.upper[0]
        model = plan.model
        assert model is not None
        if plan.method == "trinomial":
            lower, upper = trinomial_bounds(n, model, tail, context, advice)
        elif plan.method == "product":
            lower, upper = product_bounds(n, model, tail, self.group_tolerance)
        elif plan.method == "participation":
            split = plan.base.product_split() if plan.base is not None else None
            assert split is not None
            lower, upper = participation_bounds(n, model, split[1], self.participation, tail, self.group_tolerance)
        else:
            lower, upper = grouped_bounds(
                n, model.gamma, tail, self.group_tolerance,
                lambda b, h: fixed_b_cells(b, model, tail, h),
                lambda b: hit_width(b, model, tail), model.log_ratio,
            )
        if lower is upper:
            pair = PrivacyLossPair(upper, None, label=label)
            return pair, pair
        return PrivacyLossPair(lower, None, label=label + " (lower bound)"), PrivacyLossPair(upper, None, label=label + " (upper bound)")

