"""A registry of the baselines, so notebooks and cross-checks can loop over them.

``BASELINES`` maps a name to a :class:`Baseline`: the callables for ε(δ), δ(ε) and/or RDP ε(α)
plus metadata (paper, theorem, what it bounds, validity, kind). Example::

    from pldshuffle.bounds import BASELINES

    setting = dict(num_users=10**4, local_epsilon=2.0, domain_size=4, target_delta=1e-6)
    for name, b in BASELINES.items():
        if b.epsilon is not None and b.kind == "upper":
            print(name, b.evaluate("epsilon", **setting).value)
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from types import MappingProxyType
from typing import Any

from .._validation import check_choice
from .bbgn19_bounds import (
    bbgn19_bennett_delta_result,
    bbgn19_bennett_epsilon_result,
    bbgn19_hoeffding_delta_result,
    bbgn19_hoeffding_epsilon_result,
    bbgn19_thm53_delta_result,
    bbgn19_thm53_epsilon_result,
)
from .bbgn19_thm31 import bbgn19_thm31_delta_result, bbgn19_thm31_epsilon_result
from .efmrtt19 import efmrtt19_delta_result, efmrtt19_epsilon_result
from .fmt import fmt20_delta_result, fmt20_epsilon_result, fmt23_delta_result, fmt23_epsilon_result
from .gddks21 import gddks21_dp_delta_result, gddks21_dp_epsilon_result, gddks21_rdp_lower, gddks21_rdp_upper
from .rdp import rdp_pure_dp

__all__ = ["BASELINES", "KINDS", "QUANTITIES", "Baseline", "get_baseline"]

#: ``upper``: a proven upper bound; ``lower``: a lower bound on the worst case; ``unproven``: a
#: curve kept for figure parity only, not a privacy guarantee.
KINDS = ("upper", "lower", "unproven")

#: The quantity keyword each callable takes on top of the model parameters.
QUANTITIES = MappingProxyType({"epsilon": "target_delta", "delta": "target_epsilon", "rdp": "alpha"})


@dataclass(frozen=True)
class Baseline:
    """One analytic baseline and what it rests on.

    Attributes
    ----------
    name : str
        Registry key.
    paper, theorem : str
        Source.
    bounds : str
        What is bounded, and for which randomizers / adversary.
    validity : str
        Range where the source proves it (``nan`` outside).
    kind : {"upper", "lower", "unproven"}
        See :data:`KINDS`.
    parameters : tuple of str
        Model keywords accepted (``num_users``, ``local_epsilon``, ``domain_size``, ``gamma``,
        ``rounds``), besides the quantity keyword of :data:`QUANTITIES`.
    epsilon, delta : callable or None
        ``*_result`` functions for ε(δ) (keyword ``target_delta``) and δ(ε) (keyword ``target_epsilon``),
        returning :class:`~pldshuffle.bounds.BoundResult`.
    rdp : callable or None
        RDP ε(α) (keyword ``alpha``), returning a float or an array.
    """

    name: str
    paper: str
    theorem: str
    bounds: str
    validity: str
    kind: str
    parameters: tuple[str, ...]
    epsilon: Callable | None = None
    delta: Callable | None = None
    rdp: Callable | None = None

    @property
    def proven_upper_bound(self) -> bool:
        """Whether the values are proven upper bounds (``kind == "upper"``)."""
        return self.kind == "upper"

    def evaluate(self, quantity: str, **kwargs: Any) -> Any:
        """Call the ``quantity`` function with those of ``kwargs`` it accepts; the rest are ignored.

        This lets one loop pass a superset of settings (e.g. ``domain_size`` to non-kRR baselines);
        kRR baselines still need exactly one of ``gamma`` / ``local_epsilon``. Raises ``ValueError``
        if this baseline does not provide ``quantity``.
        """
        check_choice("quantity", quantity, tuple(QUANTITIES))
        function = getattr(self, quantity)
        if function is None:
            raise ValueError(f"baseline {self.name!r} provides no {quantity!r} function")
        accepted = {*self.parameters, QUANTITIES[quantity]}
        return function(**{key: value for key, value in kwargs.items() if key in accepted})


_SHUFFLE = ("num_users", "local_epsilon")
_KRR = ("num_users", "domain_size", "gamma", "local_epsilon")
_BBGN = "Balle, Bell, Gascón, Nissim, The privacy blanket of the shuffle model, CRYPTO 2019"
_FMT20 = "Feldman, McMillan, Talwar, Hiding among the clones, FOCS 2021"
_GDDKS = "Girgis, Data, Diggavi, Kairouz, Suresh, On the Rényi DP of the shuffle model, CCS 2021"
_RANDOMIZER_TEXT = {
    "generic": ("any ε0-LDP randomizer", _SHUFFLE, "Lemmas 5.3, 5.4"),
    "krr": ("k-ary randomized response", _KRR, "Lemmas 5.3, 5.7"),
    "laplace": ("the Laplace mechanism on [0, 1]", _SHUFFLE, "Lemmas 5.3, 5.8"),
}


def _blanket_entries() -> list[Baseline]:
    entries = []
    for randomizer, (text, parameters, lemmas) in _RANDOMIZER_TEXT.items():
        for bound, epsilon_fn, delta_fn, lemma in (
            (
                "hoeffding",
                bbgn19_hoeffding_epsilon_result,
                bbgn19_hoeffding_delta_result,
                "Lemma 5.5 (Hoeffding)",
            ),
            (
                "bennett",
                bbgn19_bennett_epsilon_result,
                bbgn19_bennett_delta_result,
                "Lemma 5.6 corrected (Bennett)",
            ),
        ):
            entries.append(
                Baseline(
                    name=f"bbgn19_{bound}_{randomizer}",
                    paper=_BBGN,
                    theorem=f"{lemmas}, {lemma}",
                    bounds=f"ε(δ), δ(ε) of one round, shuffled {text}",
                    validity="all n, ε0, ε (ε(δ) = ε0 with a note when nothing below ε0 is certified)",
                    kind="upper",
                    parameters=parameters,
                    epsilon=partial(epsilon_fn, randomizer=randomizer),
                    delta=partial(delta_fn, randomizer=randomizer),
                )
            )
        entries.append(
            Baseline(
                name=f"bbgn19_bennett_{randomizer}_lemma56_as_printed",
                paper=_BBGN,
                theorem=f"{lemmas}, Lemma 5.6 as printed (typo 1/(a m))",
                bounds=f"CRYPTO Fig. 3 Bennett curve, shuffled {text}; NOT a bound",
                validity="figure parity only",
                kind="unproven",
                parameters=parameters,
                epsilon=partial(
                    bbgn19_bennett_epsilon_result, randomizer=randomizer, lemma56_as_printed=True
                ),
                delta=partial(bbgn19_bennett_delta_result, randomizer=randomizer, lemma56_as_printed=True),
            )
        )
    return entries


def _fmt20_entries() -> list[Baseline]:
    readings = {
        "focs21": ("fmt20", "Thm 3.1 (published form)", "δ >= 2 exp(-n e^{-ε0}/16)"),
        "arxiv_v1": (
            "fmt20_arxiv_v1",
            "Thm 3.1, arXiv v1 form = Koskela et al. eq. (C.2)",
            "δ >= 2 exp(-n e^{-ε0}/16)",
        ),
        "apple_code": (
            "fmt20_apple_code",
            "closed form of apple/ml-shuffling-amplification",
            "δ >= 4 exp(-n e^{-ε0}/16)",
        ),
    }
    return [
        Baseline(
            name=name,
            paper=_FMT20,
            theorem=theorem,
            bounds="ε(δ), δ(ε) of one round, shuffled (adaptive) ε0-LDP randomizers",
            validity=validity,
            kind="upper",
            parameters=_SHUFFLE,
            epsilon=partial(fmt20_epsilon_result, variant=variant),
            delta=partial(fmt20_delta_result, variant=variant),
        )
        for variant, (name, theorem, validity) in readings.items()
    ]


def _build() -> dict[str, Baseline]:
    entries = [
        Baseline(
            name="efmrtt19",
            paper=(
                "Erlingsson, Feldman, Mironov, Raghunathan, Talwar, Thakurta, "
                "Amplification by shuffling, SODA 2019"
            ),
            theorem="Thm 7 (BBGN19 Thm 5.1)",
            bounds="ε(δ), δ(ε) of one round, shuffled (adaptive) ε0-LDP randomizers",
            validity="ε0 < 1/2, n >= 1000, δ < 1/100",
            kind="upper",
            parameters=_SHUFFLE,
            epsilon=efmrtt19_epsilon_result,
            delta=efmrtt19_delta_result,
        ),
        Baseline(
            name="bbgn19_thm31",
            paper=_BBGN,
            theorem="Thm 3.1 (Chernoff)",
            bounds="ε(δ), δ(ε) of one round, shuffled kRR, blanket (strong) adversary",
            validity="ε <= 1 and γ >= 27k/((n-1)ε)",
            kind="upper",
            parameters=_KRR,
            epsilon=bbgn19_thm31_epsilon_result,
            delta=bbgn19_thm31_delta_result,
        ),
        Baseline(
            name="bbgn19_thm31_unrestricted_C1",
            paper=f"{_BBGN}; Koskela, Heikkilä, Honkela 2021, App. C.1",
            theorem="eq. (C.1): Thm 3.1's first branch without ε <= 1",
            bounds="Koskela et al. Fig. 3 curve for shuffled kRR; NOT a proven bound above ε = 1",
            validity="figure parity only",
            kind="unproven",
            parameters=_KRR,
            epsilon=partial(bbgn19_thm31_epsilon_result, strict=False),
            delta=partial(bbgn19_thm31_delta_result, strict=False),
        ),
        Baseline(
            name="bbgn19_thm53",
            paper=_BBGN,
            theorem="Thm 5.3, eq. (4)",
            bounds="ε(δ), δ(ε) of one round, shuffled ε0-LDP randomizers",
            validity="all n, ε0, ε",
            kind="upper",
            parameters=_SHUFFLE,
            epsilon=bbgn19_thm53_epsilon_result,
            delta=bbgn19_thm53_delta_result,
        ),
        *_blanket_entries(),
        *_fmt20_entries(),
        Baseline(
            name="fmt23",
            paper="Feldman, McMillan, Talwar, Stronger privacy amplification by shuffling, SODA 2023",
            theorem="Thm 3.2, eq. (3) (with the §7 erratum)",
            bounds="ε(δ), δ(ε) of one round; RESTRICTED CLASS S_ε0 only (R(z)(e^ε0+1) >= R(x)+R(x'): kRR, binary RR; not RAPPOR/OUE/OLH/subset)",
            validity="δ >= 2 exp(-n / (8 (e^{ε0} + 1)))",
            kind="upper",
            parameters=_SHUFFLE,
            epsilon=fmt23_epsilon_result,
            delta=fmt23_delta_result,
        ),
        Baseline(
            name="gddks21_rdp_upper",
            paper=_GDDKS,
            theorem="Thm 3.1 and eq. (7), min with the RDP of ε0-DP",
            bounds="RDP ε(α) of one round, shuffled discrete ε0-LDP randomizers",
            validity="all n, ε0, α > 1",
            kind="upper",
            parameters=_SHUFFLE,
            rdp=gddks21_rdp_upper,
        ),
        Baseline(
            name="gddks21_rdp_lower",
            paper=_GDDKS,
            theorem="§3.2 construction (binary RR, 0^n vs 0^{n-1}1), exact",
            bounds="lower bound on the worst-case RDP ε(α) of one round",
            validity="all n, ε0, α > 1",
            kind="lower",
            parameters=_SHUFFLE,
            rdp=gddks21_rdp_lower,
        ),
        Baseline(
            name="rdp_pure_dp",
            paper="Mironov 2017; Kairouz, Oh, Viswanath 2015 (dominance of randomized response)",
            theorem="Rényi divergence of binary RR with parameter ε0",
            bounds="RDP ε(α) of any ε0-DP mechanism (no amplification)",
            validity="all ε0, α > 1",
            kind="upper",
            parameters=("local_epsilon",),
            rdp=rdp_pure_dp,
        ),
        Baseline(
            name="gddks21_dp",
            paper=_GDDKS,
            theorem="Thm 3.1 (capped) + Lemma 2.2 (composition) + Lemma 2.1 (conversion)",
            bounds="ε(δ), δ(ε) after `rounds` rounds, shuffled discrete ε0-LDP randomizers",
            validity="all n, ε0, rounds",
            kind="upper",
            parameters=(*_SHUFFLE, "rounds"),
            epsilon=gddks21_dp_epsilon_result,
            delta=gddks21_dp_delta_result,
        ),
    ]
    return {entry.name: entry for entry in entries}


#: Every baseline by name (read-only).
BASELINES = MappingProxyType(_build())


def get_baseline(name: str) -> Baseline:
    """The :class:`Baseline` registered as ``name`` (``ValueError`` listing the names otherwise)."""
    return BASELINES[check_choice("name", name, tuple(BASELINES))]
