"""Shuffle amplification for *any* ε0-LDP randomiser: the blanket pair and the clone reductions.

:class:`ShuffledLDP` analyses a given randomizer by its blanket pair (:mod:`pldshuffle.mechanisms.blanket`,
the default) and every certified clone reduction (FMT20, FMT23, a randomizer's own constants)
through the one pair class :class:`~pldshuffle.mechanisms.labelled_clones.LabelledClonePair`; pair F below
is that class with ``r0 = r1 = p_c/2`` and no residual; its layout lives in
:mod:`pldshuffle.mechanisms._clone_layout` and its kernels in :mod:`pldshuffle._kernels.clones`.  :func:`clone_pair` / :func:`clone_pair_bounds` expose pair F and
KHH21's pair K by ``(ε0, p_c)`` directly.

Common ingredients: ``q = e^{ε0}/(e^{ε0}+1)``, a clone probability ``p_c`` and

.. math::  C \\sim \\mathrm{Bin}(n-1, p_c),\\quad A\\mid C \\sim \\mathrm{Bin}(C, 1/2),\\quad
           \\Delta \\sim \\mathrm{Bern}(q).

* **Pair F** (FMT20 Thm 3.2; FMT23 Thm 3.1 / errata Thm 7.1): ``P = (A+Δ, C-A+1-Δ)``,
  ``Q = (A+1-Δ, C-A+Δ)``.  With ``T = a+b = c+1`` (``C`` is observed)

  .. math::  P(a,b) = \\mathrm{Bin}(n-1,p_c)(c)\\;2\\,\\mathrm{Bin}(T,\\tfrac12)(a)\\;\\frac{q a+(1-q) b}{T},
             \\qquad s(a,b) = \\log\\frac{e^{\\varepsilon_0}a+b}{a+e^{\\varepsilon_0}b}\\in[-\\varepsilon_0,\\varepsilon_0].

  Symmetric (``a ↔ b``), no infinity mass.
* **Pair K** (KHH21 eq. 6.1): ``P = (A+Δ, C-A)``, ``Q = (A, C-A+Δ)``; ``C`` is *not* observed
  (``t = a+b = C+Δ``).  With ``w_i = Bin(n-1,p_c)(i)`` and ``κ_t = (n-t) p_c / (2(1-p_c))``

  .. math::  P(a,b) = 2\\,\\mathrm{Bin}(t,\\tfrac12)(a)\\Big[q\\,w_{t-1}\\frac{a}{t}+(1-q)\\frac{w_t}{2}\\Big],\\qquad
             s(a,b) = \\log\\frac{e^{\\varepsilon_0}a+\\kappa_t}{e^{\\varepsilon_0}b+\\kappa_t},

  symmetric, with an infinity atom ``P(n,0) = 2^{-(n-1)} e^{-(n-2)ε0}/(e^{ε0}+1)``.

Every outcome ``(a, b)`` lies in a *block* ``T = a+b`` in which the mass is
``Bin(T,1/2)(a)·(u_T a + v_T)`` and the loss is increasing in ``a`` and odd under ``a ↔ T-a``; the
kernels below walk half of each block with a ratio recurrence for ``Bin(T,1/2)`` started from an
exact (Boost) value at the block's centre and fill the mirrored half from it, so a support point
costs a few flops and half a logarithm.

Truncation (docs/mathematics.md, "Truncation of the supports").  ``C`` is restricted to the exact-tail window of
:func:`~pldshuffle.mechanisms._binomial.binomial_window` and, for every kept ``c``, ``A | C=c`` to a
central window ``[lo_c, c-lo_c]`` of ``Bin(c,1/2)`` whose two tails are each ``≤ tail_mass/2``.  Every
generative point ``(c, A, Δ)`` inside both windows lands on a kept outcome, so the dropped ``P``-mass
is at most ``Pr[C ∉ window] + Σ_c Pr[C=c]·Pr[A ∉ window_c]``, computed with the binomial cdf/sf and
booked as ``truncated_mass`` (upper bounds: at ``+inf``; lower bounds: deleted).  Each kept outcome
carries its *exact* ``P``-mass and loss from the closed forms above (never a truncated sum), and the
kept set is symmetric under ``a ↔ b``, so the truncated pair is still symmetric.

Large supports.  At the default tail mass pair F has ``S ≈ 155·n·p_c·√(1-p_c)`` kept outcomes
(``≈ 2.8·10^6`` for ``n = 10^6, ε0 = 4, p_c = e^{-4}``; ``≈ 4.5·10^8`` for ``n = 10^7, ε0 = 1``).
:func:`clone_pair` materialises them exactly (refusing above ``max_support_points``).
:func:`clone_pair_bounds` -- what :class:`ShuffledLDP` uses -- does so only up to
:data:`EXACT_SUPPORT_LIMIT`; above, it streams the blocks through a numba kernel that records, for
every cell of a fine lattice ``z_j = j·h``, the mass and the ``e^{-s}``-moment of the outcomes in it.
The *upper* pair splits each cell's mass between its two ends (a mean-preserving spread of
``U = e^{-L}``), the *lower* pair puts it at the single loss with the same moment (a mean-preserving
contraction).  δ of any number of compositions is convex in each round's ``U``, so the two bracket
the exact pair strictly, with errors second order in ``h``; memory is ``O(bins + √(n p_c))``
whatever ``n``, time ``O(S)`` (~4 ns per outcome on 2 cores: ``n = 10^8, ε0 = 1`` 18 s, ``n = 10^9,
ε0 = 3`` 30 s), in pieces with a progress report between them; supports above
:data:`MAX_STREAMED_SUPPORT` (2·10^11, ~13 min) are refused.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass

from ._clone_layout import EXACT_SUPPORT_LIMIT, MAX_EXACT_SUPPORT, MAX_STREAMED_SUPPORT, STREAM_GRID_BINS, streaming_seconds, support_estimate
from .._validation import check_choice, check_local_epsilon, check_num_users, check_real, check_size, show
from ..randomizers.base import Randomizer
from .blanket import SPREAD_CAVEAT, BlanketPair, check_participation
from ._clone_pairs import clone_pair, clone_pair_bounds, clone_support_size
from .base import DEFAULT_TAIL_MASS, PairFamily, ShuffleMechanism
from .labelled_clones import LabelledClonePair
from ._clone_reductions import _CAVEATS, _NAMES, _REDUCTIONS, LAPLACE_VICTIM_CAVEAT, Reduction

__all__ = [
    "BLANKET_DEFAULT_SECONDS",
    "EXACT_SUPPORT_LIMIT",
    "MAX_EXACT_SUPPORT",
    "MAX_STREAMED_SUPPORT",
    "STREAM_GRID_BINS",
    "ShuffledLDP",
    "clone_pair",
    "clone_pair_bounds",
    "clone_support_size",
]


#: The default of ``reduction`` (a sentinel): chosen from whether a randomizer is given (see the class docstring).
_DEFAULT = "default"
#: The default reduction with a randomizer is the blanket pair unless its estimated build time
#: (:meth:`~pldshuffle.mechanisms.blanket.BlanketPair.build_seconds`) is above this; then the labelled clone
#: pair ``"randomizer"`` (the caveats say so).  ``reduction="blanket"`` always computes it.
BLANKET_DEFAULT_SECONDS = 30.0


@dataclass(frozen=True)
class ShuffledLDP(ShuffleMechanism):
    """An ε0-LDP randomizer shuffled among ``num_users`` users, via a (labelled) clone reduction.

    Parameters
    ----------
    num_users : int
        ``2 <= n <= 2**53``, including the user whose input differs.
    local_epsilon : float, optional
        ``ε0 > 0`` (at most 500) of the local randomizer.  Taken from ``randomizer`` when one is given
        (then it must be omitted or equal the randomizer's true ε0).
    reduction : {"blanket", "fmt20", "fmt23", "randomizer", "khh21", "wang24"}, optional
        Default: ``"blanket"`` when a randomizer is given (the tightest proven choice; ``"randomizer"`` where
        the blanket pair is not available or estimated to take more than :data:`BLANKET_DEFAULT_SECONDS`,
        as the caveats say), else ``"fmt20"``.

        * ``"blanket"``: the blanket pair of the randomizer
          (:class:`~pldshuffle.mechanisms.blanket.BlanketPair`; Balle, Bell, Gascón, Nissim, CRYPTO 2019):
          every report is a fresh draw from ``ω = min_x R(x)/γ`` with probability ``γ = Σ_y min_x R(x)(y)``;
          the pair reveals how many such draws there are and compares the victim's report among them.  A
          guarantee, never looser than the labelled clone pairs (every clone reduction is a coarser
          decomposition); for k-ary and binary RR it is the weak kRR pair of
          :class:`~pldshuffle.ShuffledKRR`.  A finite randomizer whose output types are too many to
          enumerate gets a dominating pair of its types spread to two ratio levels (its caveat says so;
          measured, not proven, tighter than the clone pairs).

        * ``"fmt20"``: labelled clone pair with ``p = e^{ε0}``, ``r = e^{-ε0}/2`` -- Feldman, McMillan,
          Talwar, "Hiding among the clones" (FOCS 2021), Thm 3.2.  Valid for **every** ε0-LDP
          randomizer (also adaptive).
        * ``"fmt23"``: ``p = e^{ε0}``, ``r = 1/(e^{ε0}+1)`` (clone probability ``2/(e^{ε0}+1)``) -- Feldman,
          McMillan, Talwar, SODA 2023, Thm 3.1 as corrected by the errata (arXiv 2208.04591, Thm 7.1).
          Valid **only** for randomizers with ``R(z)(y)(e^{ε0}+1) ≥ R(x)(y) + R(x')(y)`` for all
          ``x, x', z, y`` (binary and k-ary RR, Hadamard response with ``d ≤ 3``, ...; **not** symmetric
          RAPPOR, OUE, OLH or subset selection at their true ε0).  With a randomizer that fails the
          test the result is marked ``is_guarantee=False``.
        * ``"randomizer"``: the randomizer's own constants ``(p*, r*)`` per victim pair
          (:meth:`pldshuffle.randomizers.Randomizer.clone_constants`); a guarantee, never looser than
          ``"fmt20"``, equal to ``"fmt23"`` for randomizers in its class, tighter for finite randomizers
          with larger ``r*``.
        * ``"khh21"``: pair K of Koskela, Heikkilä, Honkela (2021), eq. (6.1), clone probability
          ``e^{-ε0}``: **no proof known**; for reproducing KHH21's figures (``is_guarantee=False``, and a
          ``UserWarning`` is emitted on construction).
        * ``"wang24"``: Wang et al., "Privacy amplification via shuffling: unified, simplified, and
          tightened" (PVLDB 17(8) 2024), Thm 4.7 with ``p = q = e^{ε0}`` and ``β`` the randomizer's total
          variation.  **Reproduction only, not a guarantee** (``is_guarantee=False``, ``UserWarning``):
          whenever ``β < (e^{ε0}-1)/(e^{ε0}+1)`` the pair has a residual and the real shuffled
          randomizer can exceed it (3-ary RR, ε0 = 6, n = 1000, δ = 1e-6: 5.775 vs δ(5.775) = 1.4e-3).
    randomizer : pldshuffle.randomizers.Randomizer, optional
        The local randomizer (needed for ``"blanket"``, ``"randomizer"`` and ``"wang24"``; with ``"fmt23"``
        its class membership is checked).  A continuous one (:class:`~pldshuffle.randomizers.Laplace`) works
        with every reduction; its blanket pair covers the victim inputs at the interval's ends (caveat).
    participation : float, optional
        Poisson participation: each user reports with probability ``q ∈ (0, 1]`` (default 1) and the analyst
        sees how many reports arrived.  ``"blanket"`` uses it (a void report every input gives equally joins
        the blanket: ``γ_q = 1 - q + qγ``); ``"fmt20"``, ``"fmt23"`` and ``"randomizer"`` accept it but their
        pairs do not change (the void report leaves their constants as they are); the reproduction-only
        reductions refuse it.

    Notes
    -----
    Neighbouring relation: replace one user's input; the analyst sees the shuffled reports.  The
    analysed quantity is the δ(ε) of the reduction's pair(s) (for ``"randomizer"``: the maximum over the
    non-dominated victim pairs' members), bracketed strictly.  Support S ≈ 155·n·2r·√(1-2r) points
    (tail mass 1e-18): up to :data:`EXACT_SUPPORT_LIMIT` it is evaluated exactly (time O(S log S));
    beyond, it is streamed in O(1) memory onto a lattice of :data:`STREAM_GRID_BINS` cells (time O(S),
    ~40 ns per point and core; strict lower/upper pairs with a relative ε error ~1e-8).  ``n = 10^6,
    ε0 = 4``: S ≈ 2.8·10^6, well under a second for one round.

    Examples
    --------
    >>> import pldshuffle as ps
    >>> mech = ShuffledLDP(10_000, 1.0)
    >>> b = ps.FourierAccountant().compose(mech).get_epsilon_bounds(1e-6)
    >>> b.lower <= b.upper < 1.0
    True
    >>> oue = ShuffledLDP(10_000, randomizer=ps.randomizers.OUE(domain_size=1024, local_epsilon=1.0))
    >>> oue.reduction, oue.local_epsilon
    ('blanket', 1.0)
    """

    switch = "reduction"  # the field that selects what is analysed (read by the privacy statements)

    num_users: int
    local_epsilon: float | None = None
    reduction: Reduction = _DEFAULT  # type: ignore[assignment]  # a sentinel: chosen from randomizer
    randomizer: Randomizer | None = None
    participation: float = 1.0

    def __post_init__(self) -> None:
        object.__setattr__(self, "num_users", check_num_users(self.num_users))
        object.__setattr__(self, "participation", check_participation(self.participation))
        if self.randomizer is not None and not isinstance(self.randomizer, Randomizer):
            raise TypeError(
                f"randomizer must be a pldshuffle.randomizers.Randomizer, got {type(self.randomizer).__name__}"
            )
        if self.randomizer is not None:
            true_eps0 = float(self.randomizer.local_epsilon)
            if self.local_epsilon is not None and not math.isclose(
                check_real("local_epsilon", self.local_epsilon), true_eps0, rel_tol=1e-12
            ):
                raise ValueError(
                    f"local_epsilon={show(self.local_epsilon)} differs from the randomizer's true ε0 = {show(true_eps0)}; "
                    "omit local_epsilon when passing randomizer"
                )
            object.__setattr__(self, "local_epsilon", true_eps0)
        elif self.local_epsilon is None:
            raise TypeError("ShuffledLDP needs local_epsilon or randomizer")
        fallback = ""
        if self.reduction == _DEFAULT:
            reduction = "fmt20"
            if self.randomizer is not None:
                reduction = "blanket"
                blanket = self._blanket_pair()
                fallback = blanket.unavailable
                if not fallback and (seconds := blanket.build_seconds()) > BLANKET_DEFAULT_SECONDS:
                    fallback = (f"its estimated build time, {seconds:.3g} s, is above {BLANKET_DEFAULT_SECONDS:g} s; "
                                "pass reduction='blanket' to compute it anyway")
                if fallback:
                    reduction = "randomizer"
        else:
            reduction = self.reduction
        check_choice("reduction", reduction, _REDUCTIONS)
        object.__setattr__(self, "reduction", reduction)
        object.__setattr__(self, "_fallback", fallback)
        if reduction in ("blanket", "randomizer", "wang24") and self.randomizer is None:
            raise ValueError(f"reduction={reduction!r} needs randomizer=...")
        if reduction == "blanket" and self._blanket_pair().unavailable:
            raise ValueError(
                f"reduction='blanket' is not available for {self.randomizer.describe()} with num_users={self.num_users}: "  # type: ignore[union-attr]
                f"{self._blanket_pair().unavailable}; use reduction='randomizer' (the labelled clone pair)"
            )
        if self.participation < 1.0 and reduction in ("khh21", "wang24"):
            raise ValueError(
                f"participation={self.participation!r} is supported with reductions 'blanket', 'randomizer', 'fmt20' and "
                f"'fmt23', not with the reproduction-only reduction={reduction!r}; use participation=1"
            )
        eps0 = check_real("local_epsilon", self.local_epsilon)
        finite_ok = reduction in ("randomizer", "blanket")  # a randomizer with a zero output probability has ε0 = inf
        if not (finite_ok and eps0 == math.inf):
            eps0 = check_local_epsilon(self.local_epsilon)
        object.__setattr__(self, "local_epsilon", eps0)
        if reduction in ("khh21", "wang24"):
            what = "KHH21's eq. (6.1) clone pair, for which no proof is known" if reduction == "khh21" else (
                "Wang et al.'s variation-ratio pair, which is not a valid bound when it has a residual (g > 0)"
            )
            warnings.warn(
                f"ShuffledLDP(reduction={reduction!r}) uses {what}: use it only to reproduce published figures; "
                "results are not a privacy guarantee",
                UserWarning,
                stacklevel=3,  # __post_init__ <- dataclass __init__ <- user code
            )
        self._check_size()

    def _blanket_pair(self) -> BlanketPair:
        """The blanket pair of the randomizer (built once: its plan inspects the randomizer's types)."""
        cached = self.__dict__.get("_blanket")
        if cached is None:
            cached = BlanketPair(self.num_users, self.randomizer, self.participation)  # type: ignore[arg-type]
            object.__setattr__(self, "_blanket", cached)
        return cached

    @property
    def blanket_pair(self) -> BlanketPair | None:
        """The :class:`~pldshuffle.mechanisms.blanket.BlanketPair` analysed (``reduction="blanket"``), else ``None``."""
        return self._blanket_pair() if self.reduction == "blanket" else None

    @property
    def _eps0(self) -> float:
        """``local_epsilon`` after validation (always set by ``__post_init__``)."""
        assert self.local_epsilon is not None
        return self.local_epsilon

    @property
    def clone_probability(self) -> float:
        """Smallest ``p_c = r0 + r1`` among the pairs used: ``e^{-ε0}`` (fmt20, khh21), ``2/(e^{ε0}+1)``
        (fmt23), ``2 min r*`` (randomizer), ``r0 + r1`` of Wang's pair (wang24); NaN for ``"blanket"`` (no
        clones: see :attr:`blanket_pair`)."""
        if self.reduction == "khh21":
            return float(math.exp(-self._eps0))
        if self.reduction == "blanket":
            return math.nan
        return float(min(p.r0 + p.r1 for p in self.labelled_pairs()))

    @property
    def variant(self) -> str:
        """Clone pair used: ``"K"`` (khh21) or ``"F"`` (the labelled clone pairs)."""
        return "K" if self.reduction == "khh21" else "F"

    def labelled_pairs(self) -> tuple[LabelledClonePair, ...]:
        """The labelled clone pairs whose worst case is analysed (empty for ``"khh21"`` and ``"blanket"``)."""
        n, eps0 = self.num_users, self._eps0
        if self.reduction == "fmt20":
            return (LabelledClonePair.fmt20(n, eps0),)
        if self.reduction == "fmt23":
            return (LabelledClonePair.fmt23(n, eps0),)
        if self.reduction == "randomizer":
            return tuple(
                LabelledClonePair(n, m.ratio, m.clone_probability, m.clone_probability)
                for m in self.randomizer.clone_constants()  # type: ignore[union-attr]
            )
        if self.reduction == "wang24":
            e = math.exp(eps0)
            beta = min(self.randomizer.total_variation(), (e - 1.0) / (e + 1.0))  # type: ignore[union-attr]
            return (LabelledClonePair.from_variation_ratio(n, e, beta, e),)
        return ()

    def support_size(self, *, tail_mass: float = DEFAULT_TAIL_MASS) -> int:
        """Number of support points of the truncated pair(s) (decides exact vs streamed evaluation)."""
        if self.reduction == "khh21":
            return clone_support_size(self.num_users, self._eps0, self.clone_probability, tail_mass, variant="K")
        if self.reduction == "blanket":
            return sum(d.support_size for pair in self._blanket_pair().pair_bounds(tail_mass=tail_mass)[1] for d in pair.directions)
        return sum(p.support_size(tail_mass=tail_mass) for p in self.labelled_pairs())

    def family_seconds(self, *, tail_mass: float = DEFAULT_TAIL_MASS) -> float:
        """Streaming the clone pairs' supports (``POINT_SECONDS`` per point of their O(1) estimate)."""
        if self.reduction == "khh21":
            return streaming_seconds(support_estimate(self.num_users, self.clone_probability, 0.5, tail_mass))
        if self.reduction == "blanket":
            return self._blanket_pair().build_seconds(tail_mass=tail_mass)
        return sum(p.build_seconds(tail_mass=tail_mass) for p in self.labelled_pairs())

    def family_bytes(self, *, tail_mass: float = DEFAULT_TAIL_MASS) -> float:
        """The blanket pair's :meth:`~pldshuffle.mechanisms.blanket.BlanketPair.family_bytes`; 0 for the clone
        reductions (their streamed supports are refused above :data:`MAX_STREAMED_SUPPORT` points)."""
        if self.reduction == "blanket":
            return self._blanket_pair().family_bytes(tail_mass=tail_mass)
        return 0.0

    def _check_size(self) -> None:
        """Refuse (ValueError) at construction a pair whose O(1) support estimate at the default tail mass
        is far (4×) above :data:`MAX_STREAMED_SUPPORT`; the exact count is checked when the pair is laid out."""
        if self.reduction == "blanket":
            return  # BlanketPair refuses oversized requests itself (its plan)
        if self.reduction == "khh21":
            estimate = support_estimate(self.num_users, self.clone_probability, 0.5, DEFAULT_TAIL_MASS)
        else:
            estimate = max(p.support_estimate() for p in self.labelled_pairs())
        check_size(
            estimate, 4 * MAX_STREAMED_SUPPORT, what="support points",
            request=f"ShuffledLDP(num_users={self.num_users}, local_epsilon={self._eps0:g}, reduction={self.reduction!r})",
            advice="fewer users (num_users), a larger local_epsilon, or an analytic bound (pldshuffle.bounds)",
        )

    def describe(self) -> str:
        what = "ε0-LDP randomizer" if self.randomizer is None else self.randomizer.describe()
        if self.reduction == "khh21":
            constants = f"clone probability {self.clone_probability:.6g}"
        elif self.reduction == "blanket":
            bp = self._blanket_pair()
            if bp.methods == ("laplace",):
                constants = "victim inputs at the domain's ends, certified discretisation of the ratio sums"
            elif bp.spread:
                constants = (f"{len(bp.methods)} victim pair(s), output types spread to two ratio levels (dominating); "
                             f"first pair: {bp.model.describe() if bp.model is not None else 'enumerated'}")
            else:
                constants = bp.model.describe() if bp.model is not None else f"{len(bp.methods)} victim pair(s), evaluated exactly"
        else:
            constants = "; ".join(
                f"p={p.ratio:.6g}, r0={p.r0:.6g}, r1={p.r1:.6g}, g={p.residual:.6g}" for p in self.labelled_pairs()
            )
        eps0 = f"ε0={self._eps0:g}, " if self.randomizer is None else ""  # the randomizer names its ε0
        part = f"participation q={self.participation:g} (the analyst sees how many reported), " if self.participation < 1.0 else ""
        return (
            f"shuffled {what}, n={self.num_users}, {eps0}{part}replace-one neighbours, "
            f"analyst sees the shuffled reports; {_NAMES[self.reduction]}: {constants}"
        )

    def pair_family(self, *, tail_mass: float = DEFAULT_TAIL_MASS) -> PairFamily:
        caveats: tuple[str, ...] = _CAVEATS[self.reduction]
        if self.reduction == "blanket" and self._blanket_pair().spread:
            caveats = (SPREAD_CAVEAT,)  # not the exact blanket pair's "never looser than the clone pairs"
        guarantee = self.reduction not in ("khh21", "wang24")
        if self.reduction == "fmt23" and self.randomizer is not None:
            if self.randomizer.in_fmt23_class:
                caveats = ("FMT23 clone reduction: the randomizer passes the class test "
                           "R(z)(y)(e^ε0+1) >= R(x)(y) + R(x')(y), so the bound is a guarantee",)
            else:
                guarantee = False
                caveats = ("NOT A GUARANTEE: the randomizer fails FMT23's class test R(z)(y)(e^ε0+1) >= R(x)(y) + "
                           "R(x')(y) at its true ε0; use reduction='blanket' (the default), 'randomizer' or 'fmt20'",)
        fallback = self.__dict__.get("_fallback", "")
        if fallback:
            caveats = (*caveats, f"the blanket pair (the default) is not available here ({fallback}): the labelled clone "
                       "pair 'randomizer' was used instead")
        if self.reduction == "blanket" and self._blanket_pair().methods == ("laplace",):
            caveats = (*caveats, LAPLACE_VICTIM_CAVEAT)
        if self.participation < 1.0 and self.reduction != "blanket":
            caveats = (*caveats, "participation: this clone reduction does not use it (the void report leaves its "
                       "constants unchanged); reduction='blanket' does")
        if self.reduction == "khh21":
            args = (self.num_users, self._eps0, self.clone_probability, tail_mass)
            lower, upper = clone_pair_bounds(*args, variant="K")
            brackets = [(lower, upper)]
        elif self.reduction == "blanket":
            lowers, uppers = self._blanket_pair().pair_bounds(tail_mass=tail_mass)
            brackets = list(zip(lowers, uppers))
        else:
            brackets = [p.pair_bounds(tail_mass=tail_mass) for p in self.labelled_pairs()]
        # The shuffled reports are a post-processing of the differing user's ε0-LDP report, so no outcome's
        # loss exceeds ε0 (and the clone pairs' own losses stay within it: measured ≤ ε0(1 + 7e-16), float
        # rounding); the reproduction-only pairs keep their own, uncapped behaviour.
        max_loss = self._eps0 if guarantee else math.inf
        if all(lo is up for lo, up in brackets):
            return PairFamily.exact(*(up for _, up in brackets), is_guarantee=guarantee, caveats=caveats, max_loss=max_loss)
        return PairFamily(tuple(up for _, up in brackets), tuple(lo for lo, _ in brackets), guarantee, caveats, max_loss=max_loss)
