"""Analytic and prior-art privacy bounds for the shuffle model, as baselines for the accountant.

Every bound is a documented function citing its paper and theorem; which bound is valid where, and
which published forms are corrected, is explained in ``docs/mathematics.md#baselines``.

Calling convention
------------------
All arguments are keyword-only and named as in the core API: ``num_users`` (n), ``local_epsilon``
(ε0), ``domain_size`` (k), ``gamma`` (kRR blanket probability), ``target_delta`` (δ of an ε(δ)
query), ``epsilon`` (ε of a δ(ε) query), ``rounds`` and ``alpha`` (RDP order). Bad input raises
``TypeError`` / ``ValueError`` naming the parameter, its value and the valid range.

Results and validity (one design throughout)
---------------------------------------------
Each single-round or converted bound comes as a pair:

* ``<bound>_result(...) -> BoundResult``: a frozen record with ``value``, ``reason`` (why
  ``value`` is ``nan``; ``None`` otherwise), ``proven`` (``False`` for figure-parity curves that are
  not guarantees), ``note`` (e.g. "no amplification certified") and ``details`` (e.g. the optimal
  RDP order, the chosen δ split);
* ``<bound>(...) -> float``: the same call returning ``.value`` only.

Outside the range where its source proves it, a bound's value is ``nan`` ("no guarantee from this
bound") with the reason attached; it is never replaced by ε0. (Shuffled ε0-LDP reports are always
``(ε0, 0)``-DP, so a caller may take ``min(ε, ε0)`` explicitly.) RDP curves (``gddks21_rdp_upper``,
``gddks21_rdp_lower``, ``rdp_pure_dp``) hold for every order and return floats or arrays.

Modules
-------
``efmrtt19``, ``bbgn19_thm31``, ``bbgn19_blanket`` (parameters of §5), ``bbgn19_bounds`` (Thm 5.3,
Hoeffding, Bennett, ε0 calibration), ``fmt`` (FMT20 / FMT23), ``rdp`` (pure-DP RDP, composition,
conversion), ``gddks21`` (RDP upper / lower, converted DP), ``composition`` (basic, advanced, KOV,
applied to any ε(δ) baseline), ``registry`` (``BASELINES`` for loops).
"""

from ._common import BoundResult
from .bbgn19_blanket import RANDOMIZERS, BlanketParameters, blanket_parameters
from .bbgn19_bounds import (
    BBGN19_BOUNDS,
    bbgn19_bennett_delta,
    bbgn19_bennett_delta_result,
    bbgn19_bennett_epsilon,
    bbgn19_bennett_epsilon_result,
    bbgn19_hoeffding_delta,
    bbgn19_hoeffding_delta_result,
    bbgn19_hoeffding_epsilon,
    bbgn19_hoeffding_epsilon_result,
    bbgn19_thm53_delta,
    bbgn19_thm53_delta_result,
    bbgn19_thm53_epsilon,
    bbgn19_thm53_epsilon_result,
)
from .bbgn19_calibration import bbgn19_local_epsilon, bbgn19_local_epsilon_result
from .bbgn19_thm31 import (
    bbgn19_thm31_delta,
    bbgn19_thm31_delta_result,
    bbgn19_thm31_epsilon,
    bbgn19_thm31_epsilon_result,
)
from .composition import (
    COMPOSITION_METHODS,
    DPGuarantee,
    advanced_composition,
    basic_composition,
    compose_epsilon,
    compose_epsilon_result,
    kov_composition_bound,
    kov_exact_delta,
    kov_exact_epsilon,
)
from .efmrtt19 import (
    efmrtt19_delta,
    efmrtt19_delta_result,
    efmrtt19_epsilon,
    efmrtt19_epsilon_result,
    efmrtt19_local_epsilon,
    efmrtt19_local_epsilon_result,
)
from .fmt import (
    FMT20_VARIANTS,
    fmt20_delta,
    fmt20_delta_result,
    fmt20_epsilon,
    fmt20_epsilon_result,
    fmt23_delta,
    fmt23_delta_result,
    fmt23_epsilon,
    fmt23_epsilon_result,
)
from .gddks21 import (
    gddks21_dp_delta,
    gddks21_dp_delta_result,
    gddks21_dp_epsilon,
    gddks21_dp_epsilon_result,
    gddks21_rdp_lower,
    gddks21_rdp_upper,
)
from .rdp import (
    CONVERSIONS,
    DEFAULT_ORDERS,
    PURE_DP_FORMS,
    rdp_compose,
    rdp_pure_dp,
    rdp_to_dp_delta,
    rdp_to_dp_delta_result,
    rdp_to_dp_epsilon,
    rdp_to_dp_epsilon_result,
)
from .registry import BASELINES, KINDS, QUANTITIES, Baseline, get_baseline

__all__ = [
    "BASELINES",
    "BBGN19_BOUNDS",
    "COMPOSITION_METHODS",
    "CONVERSIONS",
    "DEFAULT_ORDERS",
    "FMT20_VARIANTS",
    "KINDS",
    "PURE_DP_FORMS",
    "QUANTITIES",
    "RANDOMIZERS",
    "Baseline",
    "BlanketParameters",
    "BoundResult",
    "DPGuarantee",
    "advanced_composition",
    "basic_composition",
    "bbgn19_bennett_delta",
    "bbgn19_bennett_delta_result",
    "bbgn19_bennett_epsilon",
    "bbgn19_bennett_epsilon_result",
    "bbgn19_hoeffding_delta",
    "bbgn19_hoeffding_delta_result",
    "bbgn19_hoeffding_epsilon",
    "bbgn19_hoeffding_epsilon_result",
    "bbgn19_local_epsilon",
    "bbgn19_local_epsilon_result",
    "bbgn19_thm31_delta",
    "bbgn19_thm31_delta_result",
    "bbgn19_thm31_epsilon",
    "bbgn19_thm31_epsilon_result",
    "bbgn19_thm53_delta",
    "bbgn19_thm53_delta_result",
    "bbgn19_thm53_epsilon",
    "bbgn19_thm53_epsilon_result",
    "blanket_parameters",
    "compose_epsilon",
    "compose_epsilon_result",
    "efmrtt19_delta",
    "efmrtt19_delta_result",
    "efmrtt19_epsilon",
    "efmrtt19_epsilon_result",
    "efmrtt19_local_epsilon",
    "efmrtt19_local_epsilon_result",
    "fmt20_delta",
    "fmt20_delta_result",
    "fmt20_epsilon",
    "fmt20_epsilon_result",
    "fmt23_delta",
    "fmt23_delta_result",
    "fmt23_epsilon",
    "fmt23_epsilon_result",
    "gddks21_dp_delta",
    "gddks21_dp_delta_result",
    "gddks21_dp_epsilon",
    "gddks21_dp_epsilon_result",
    "gddks21_rdp_lower",
    "gddks21_rdp_upper",
    "get_baseline",
    "kov_composition_bound",
    "kov_exact_delta",
    "kov_exact_epsilon",
    "rdp_compose",
    "rdp_pure_dp",
    "rdp_to_dp_delta",
    "rdp_to_dp_delta_result",
    "rdp_to_dp_epsilon",
    "rdp_to_dp_epsilon_result",
]
