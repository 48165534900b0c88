"""Local randomizers as objects: their true ε0, their output law and their clone constants.

A *clone constant* pair ``(p, r)`` for a victim pair of inputs ``(x, x')`` means

    ``R(x)(y) ≤ p·R(x')(y)``,  ``R(x')(y) ≤ p·R(x)(y)``  and  ``R(z)(y) ≥ r·(R(x)(y) + R(x')(y))``

for every input ``z`` (any other user's value, ``x`` and ``x'`` included) and every output ``y``.  Then
the shuffled randomizer on any two datasets differing in one user's value, ``x`` vs ``x'``, is dominated
(in every divergence obeying data processing) by the labelled clone pair with ratio ``p``, clone
probabilities ``r0 = r1 = r`` and no residual (see :mod:`pldshuffle.mechanisms.labelled_clones` for the
proof).  The tightest constants for a pair are

    ``p*(x, x') = max_y max(R(x)(y)/R(x')(y), R(x')(y)/R(x)(y))``,
    ``r*(x, x') = min_y  min_z R(z)(y) / (R(x)(y) + R(x')(y))``.

Every ε0-LDP randomizer has ``p* ≤ e^{ε0}`` and ``r* ≥ e^{-ε0}/2`` (FMT20's constants), and always
``r* ≤ 1/(p*+1)``.  A randomizer with an output of probability 0 under ``x'`` but not under ``x``
(``p* = ∞``, no finite ε0) has ``r* = 0`` (take ``z = x'``): this reduction then gives no amplification
(``δ = 1``), which is valid but trivial.  FMT23's constant ``r = 1/(e^{ε0}+1)`` is valid exactly when every pair has
``r* ≥ 1/(e^{ε0}+1)`` (:attr:`Randomizer.in_fmt23_class`).
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from dataclasses import dataclass, field

import numpy as np
from numpy.typing import ArrayLike, NDArray

from .._validation import check_real_array, check_text, show

__all__ = [
    "MAX_CLONE_MEMBERS",
    "MAX_MATRIX_ENTRIES",
    "CloneConstants",
    "Finite",
    "Randomizer",
    "clone_constants_of_matrix",
    "pareto_members",
]

#: :meth:`Randomizer.matrix` refuses output laws with more entries than this (inputs × outputs).
MAX_MATRIX_ENTRIES = 2**24
#: At most this many distinct (p, r) members are kept per randomizer; beyond, neighbouring members are
#: merged into (max p, min r), which still dominates each of them.
MAX_CLONE_MEMBERS = 8
#: Relative tolerance of the FMT23 class test (floating point in the output law).
CLASS_RTOL = 1e-12
#: Rows of a row-stochastic matrix must sum to 1 within this.
ROW_SUM_ATOL = 1e-9


@dataclass(frozen=True)
class CloneConstants:
    """Certified clone constants ``(p, r)`` for a set of victim pairs of inputs.

    Attributes
    ----------
    ratio : float
        ``p > 1`` (``inf`` if some output has probability 0 under one input of the pair only).
    clone_probability : float
        ``r ∈ [0, 1/(p+1)]``.
    example : tuple of int
        One victim pair ``(x, x')`` attaining these constants (input indices; ``(-1, -1)`` if symbolic).
    """

    ratio: float
    clone_probability: float
    example: tuple[int, int] = (-1, -1)


def pareto_members(members: list[CloneConstants], max_members: int = MAX_CLONE_MEMBERS) -> tuple[CloneConstants, ...]:
    """Drop dominated members and merge the rest down to ``max_members``.

    ``(p, r)`` is dominated by ``(p', r')`` when ``p ≤ p'`` and ``r' ≤ r`` (with ``r ≤ 1/(p+1)``, which
    every member satisfies): the labelled pair with ``(p, r)`` is then a post-processing of the one
    with ``(p', r')``.  Survivors are sorted by decreasing ``p``; if too many remain, consecutive ones are
    merged into ``(max p, min r)`` groups (sound, slightly looser).
    """
    ordered = sorted(members, key=lambda m: (-m.ratio, m.clone_probability))
    kept: list[CloneConstants] = []
    for m in ordered:
        if not kept or m.clone_probability < kept[-1].clone_probability:
            kept.append(m)
    if len(kept) > max_members:
        groups = np.array_split(np.arange(len(kept)), max_members)
        kept = [
            CloneConstants(kept[g[0]].ratio, min(kept[i].clone_probability for i in g), kept[g[0]].example) for g in groups
        ]
    return tuple(kept)


def clone_constants_of_matrix(matrix: ArrayLike, *, per_pair: bool = True) -> tuple[CloneConstants, ...]:
    """Per-victim-pair constants ``(p*, r*)`` of a finite randomizer, Pareto-reduced.

    Parameters
    ----------
    matrix : array_like, shape (inputs, outputs)
        Row-stochastic output law ``R[x, y] = Pr[R(x) = y]``.
    per_pair : bool
        ``True`` (default): one member per non-dominated victim pair.  ``False``: the single coarser
        member ``(max p*, min r*)`` over all pairs (also sound).

    Notes
    -----
    ``r*(x, x') = min_y m_y / (R[x, y] + R[x', y])`` with ``m_y = min_z R[z, y]``, so the cost is
    O(inputs² · outputs) time and O(inputs · outputs) memory (one row against all later rows at a time).
    Pairs of identical rows (``p* = 1``) leak nothing and are skipped.
    """
    R = check_matrix(matrix)
    col_min = R.min(axis=0)
    members: list[CloneConstants] = []
    d = R.shape[0]
    for i in range(d - 1):
        rest = R[i + 1 :]
        total = R[i] + rest
        with np.errstate(divide="ignore", invalid="ignore"):
            r_star = np.where(total > 0, col_min / total, np.inf).min(axis=1)
            fwd = np.where(R[i] > 0, R[i] / rest, 1.0)
            bwd = np.where(rest > 0, rest / R[i], 1.0)
        p_star = np.maximum(fwd.max(axis=1), bwd.max(axis=1))
        for j in np.flatnonzero(p_star > 1.0):
            members.append(CloneConstants(float(p_star[j]), float(min(r_star[j], 0.5)), (i, i + 1 + int(j))))
    if not members:
        raise ValueError("matrix has identical rows only: the randomizer reveals nothing (ε0 = 0), nothing to analyse")
    if not per_pair:
        worst = max(members, key=lambda m: m.ratio)
        return (CloneConstants(worst.ratio, min(m.clone_probability for m in members), worst.example),)
    return pareto_members(members)


def check_matrix(matrix: ArrayLike, name: str = "matrix") -> NDArray[np.float64]:
    """Validate a row-stochastic ``inputs × outputs`` matrix (at least 2 inputs); returns a float copy.
    Errors name the parameter ``name``; non-real entries (bool, complex, str) are a ``TypeError``."""
    R = np.array(check_real_array(name, matrix), dtype=np.float64)  # a copy: the caller may freeze it
    if R.ndim != 2 or R.shape[0] < 2 or R.shape[1] < 1:
        raise ValueError(f"{name} must be 2-D with at least 2 rows (inputs) and 1 column (outputs), got shape {R.shape}")
    if not np.all(np.isfinite(R)) or np.any(R < 0):
        raise ValueError(f"{name} entries must be finite probabilities >= 0")
    sums = R.sum(axis=1)
    bad = np.flatnonzero(np.abs(sums - 1.0) > ROW_SUM_ATOL)
    if bad.size:
        raise ValueError(f"{name} rows must sum to 1 (row-stochastic); row {int(bad[0])} sums to {show(sums[bad[0]])}")
    return R


def local_epsilon_of_matrix(R: NDArray[np.float64]) -> float:
    """True LDP level ``max_y log(max_x R[x, y] / min_x R[x, y])`` (``inf`` if some column mixes 0 and > 0)."""
    hi, lo = R.max(axis=0), R.min(axis=0)
    used = hi > 0
    if np.any(lo[used] == 0):
        return math.inf
    return float(np.max(np.log(hi[used]) - np.log(lo[used])))


def total_variation_of_matrix(R: NDArray[np.float64]) -> float:
    """``max_{x,x'} TV(R(x), R(x'))`` (O(inputs² · outputs))."""
    return float(max(0.5 * np.abs(R[i] - R[i + 1 :]).sum(axis=1).max() for i in range(R.shape[0] - 1)))


class Randomizer(ABC):
    """A local randomizer ``R: inputs -> distributions on outputs`` (frozen dataclasses in subclasses).

    Every subclass has a ``local_epsilon`` attribute: the *true* LDP level
    ``ε0 = max_{x,x',y} log R(x)(y)/R(x')(y)`` (a parameter of the named randomizers, computed for
    :class:`Finite`).
    """

    local_epsilon: float

    @property
    @abstractmethod
    def num_inputs(self) -> int:
        """Size of the input domain."""

    @abstractmethod
    def _matrix(self) -> NDArray[np.float64]:
        """The output law (called after the size check)."""

    @abstractmethod
    def _output_count(self) -> int:
        """Number of outputs of the output law."""

    @abstractmethod
    def describe(self) -> str:
        """One line naming the randomizer and its parameters."""

    def matrix(self, *, max_entries: int = MAX_MATRIX_ENTRIES) -> NDArray[np.float64]:
        """Output law as a row-stochastic ``inputs × outputs`` array (``R[x, y] = Pr[R(x) = y]``).

        Refused (``ValueError``) above ``max_entries`` entries (e.g. unary encodings of large domains).
        """
        size = self.num_inputs * self._output_count()
        if size > max_entries:
            raise ValueError(
                f"the output law of {self.describe()} has {size:.3g} entries, above max_entries={max_entries:.3g}"
            )
        return self._matrix()

    def clone_constants(self) -> tuple[CloneConstants, ...]:
        """Certified ``(p*, r*)`` members, one per non-dominated victim pair (from the matrix by default)."""
        return clone_constants_of_matrix(self.matrix())

    def total_variation(self) -> float:
        """``β = max TV(R(x), R(x'))`` over input pairs (from the matrix by default)."""
        return total_variation_of_matrix(self.matrix())

    @property
    def in_fmt23_class(self) -> bool:
        """Whether ``R(z)(y)(e^{ε0}+1) ≥ R(x)(y) + R(x')(y)`` for all ``x, x', z, y`` (FMT23's class, where
        its clone probability ``2/(e^{ε0}+1)`` is proven)."""
        eps0 = self.local_epsilon
        if not math.isfinite(eps0):
            return False
        threshold = 1.0 / (math.exp(eps0) + 1.0)
        return all(m.clone_probability >= threshold * (1.0 - CLASS_RTOL) for m in self.clone_constants())


@dataclass(frozen=True, eq=False)
class Finite(Randomizer):
    """Any finite randomizer given by its row-stochastic ``inputs × outputs`` matrix.

    Parameters
    ----------
    probabilities : array_like, shape (inputs, outputs)
        ``probabilities[x, y] = Pr[R(x) = y]``; rows sum to 1, at least two inputs.
    name : str
        Shown in descriptions.

    Examples
    --------
    >>> import numpy as np
    >>> R = Finite(np.array([[0.75, 0.25], [0.25, 0.75]]))
    >>> round(R.local_epsilon, 12) == round(float(np.log(3)), 12), R.in_fmt23_class
    (True, True)
    """

    probabilities: NDArray[np.float64]
    name: str = "finite randomizer"
    local_epsilon: float = field(init=False)

    def __post_init__(self) -> None:
        check_text("name", self.name)
        R = check_matrix(self.probabilities, "probabilities")
        R.setflags(write=False)
        object.__setattr__(self, "probabilities", R)
        object.__setattr__(self, "local_epsilon", local_epsilon_of_matrix(R))
        if self.local_epsilon == 0.0:
            raise ValueError("probabilities has identical rows only (ε0 = 0): the randomizer reveals nothing")

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Finite) and self.name == other.name and np.array_equal(self.probabilities, other.probabilities)

    def __hash__(self) -> int:
        return hash((self.name, self.probabilities.shape, self.probabilities.tobytes()))

    @property
    def num_inputs(self) -> int:
        return int(self.probabilities.shape[0])

    def _output_count(self) -> int:
        return int(self.probabilities.shape[1])

    def _matrix(self) -> NDArray[np.float64]:
        return self.probabilities

    def describe(self) -> str:
        return f"{self.name} ({self.num_inputs} inputs × {self._output_count()} outputs, ε0={self.local_epsilon:.6g})"
