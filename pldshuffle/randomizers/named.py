"""The LDP randomizers used in deployments, with closed-form ε0, total variation and clone constants.

Every class is a frozen dataclass with ``local_epsilon`` (ε0, at most 500) among its parameters; ``e``
below is ``e^{ε0}``.  The clone constants ``(p*, r*)`` (see :mod:`pldshuffle.randomizers.base`) are the
same for every victim pair of these randomizers, and are derived in each class docstring; the test-suite
checks each closed form against the matrix computation on small instances.

Summary (``d`` = domain size):

=====================================  ======  ===================================  ==================
randomizer                             ``p*``  ``r*``                               FMT23 class?
=====================================  ======  ===================================  ==================
binary RR, k-ary RR (any d)            e       1/(e+1)                              yes
symmetric RAPPOR, OUE (d ≥ 3)          e       1/(2e) (= FMT20)                     no
k-subset selection, 2 ≤ k ≤ d-1        e       1/(2e) (= FMT20)                     no
local hashing / OLH, full family, d≥3  e       1/(2e) (= FMT20)                     no
Hadamard response, d ≤ 3 (K = 4)       e       1/(e+1)                              yes
Hadamard response, d ≥ 4 (K ≥ 8)       e       1/(2e) (= FMT20)                     no
=====================================  ======  ===================================  ==================

(With ``d = 2`` every one of them has ``r* = 1/(e+1)``: the other users can only hold ``x`` or ``x'``.)
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from .._validation import check_int, check_local_epsilon
from .base import CloneConstants, Randomizer

__all__ = ["OLH", "OUE", "RAPPOR", "BinaryRR", "HadamardResponse", "KaryRR", "LocalHashing", "SubsetSelection"]

def _constants(eps0: float, fmt23_like: bool) -> tuple[CloneConstants, ...]:
    """The single member ``(e, 1/(e+1))`` (FMT23 constant) or ``(e, e^{-ε0}/2)`` (FMT20 constant)."""
    r = 1.0 / (math.exp(eps0) + 1.0) if fmt23_like else math.exp(-eps0) / 2.0
    return (CloneConstants(math.exp(eps0), r, (0, 1)),)


@dataclass(frozen=True)
class _OnDomain(Randomizer):
    """A randomizer of ``domain_size`` inputs whose only other parameter is ``local_epsilon``."""

    domain_size: int
    local_epsilon: float

    def __post_init__(self) -> None:
        object.__setattr__(self, "domain_size", check_int("domain_size", self.domain_size, minimum=2))
        object.__setattr__(self, "local_epsilon", check_local_epsilon(self.local_epsilon))

    @property
    def num_inputs(self) -> int:
        return self.domain_size


@dataclass(frozen=True)
class _UnaryEncoding(_OnDomain):
    """One bit per input value (``2^d`` outputs); FMT23's clone constant only for ``d = 2`` (class docstrings)."""

    def _output_count(self) -> int:
        return 2**self.domain_size if self.domain_size < 62 else 2**62

    def clone_constants(self) -> tuple[CloneConstants, ...]:
        return _constants(self.local_epsilon, self.domain_size == 2)


@dataclass(frozen=True)
class BinaryRR(Randomizer):
    """Binary randomized response: report the bit with probability ``e/(e+1)``, flip it otherwise.

    ``p* = e``; ``r* = min R(z)(y)/(R(0)(y)+R(1)(y)) = (1/(e+1))/1``: FMT23's constant.
    TV = ``(e-1)/(e+1)``.
    """

    local_epsilon: float

    def __post_init__(self) -> None:
        object.__setattr__(self, "local_epsilon", check_local_epsilon(self.local_epsilon))

    @property
    def num_inputs(self) -> int:
        return 2

    def _output_count(self) -> int:
        return 2

    def _matrix(self) -> NDArray[np.float64]:
        e = math.exp(self.local_epsilon)
        return np.array([[e, 1.0], [1.0, e]]) / (e + 1.0)

    def clone_constants(self) -> tuple[CloneConstants, ...]:
        return _constants(self.local_epsilon, True)

    def total_variation(self) -> float:
        return math.tanh(self.local_epsilon / 2.0)

    def describe(self) -> str:
        return f"binary randomized response, ε0={self.local_epsilon:g}"


@dataclass(frozen=True)
class KaryRR(_OnDomain):
    """k-ary (generalized) randomized response on ``d`` values: keep w.p. ``e/(e+d-1)``, else uniform other.

    ``p* = e``.  ``R(x)+R(x')`` is ``(e+1)/(e+d-1)`` on ``y ∈ {x, x'}`` and ``2/(e+d-1)`` elsewhere, while
    ``min_z R(z)(y) = 1/(e+d-1)``: ``r* = min(1/(e+1), 1/2) = 1/(e+1)``, FMT23's constant.
    TV = ``(e-1)/(e+d-1)``.
    """

    def _output_count(self) -> int:
        return self.domain_size

    def _matrix(self) -> NDArray[np.float64]:
        e, d = math.exp(self.local_epsilon), self.domain_size
        return (np.ones((d, d)) + (e - 1.0) * np.eye(d)) / (e + d - 1.0)

    def clone_constants(self) -> tuple[CloneConstants, ...]:
        return _constants(self.local_epsilon, True)

    def total_variation(self) -> float:
        e = math.exp(self.local_epsilon)
        return (e - 1.0) / (e + self.domain_size - 1.0)

    def describe(self) -> str:
        return f"{self.domain_size}-ary randomized response, ε0={self.local_epsilon:g}"


def _bits(d: int) -> NDArray[np.bool_]:
    """All ``2^d`` bit vectors of length ``d`` (row ``y`` holds the bits of ``y``)."""
    return ((np.arange(2**d)[:, None] >> np.arange(d)[None, :]) & 1).astype(bool)


@dataclass(frozen=True)
class RAPPOR(_UnaryEncoding):
    """Symmetric RAPPOR (basic one-time RAPPOR / symmetric unary encoding) on ``d`` values.

    The input is one-hot encoded and every bit is flipped independently w.p. ``f = 1/(e^{ε0/2}+1)``
    (so two inputs differ in two bits and ``ε0`` is exact).  With ``h = e^{ε0/2}``,
    ``R(x)(y) = B(y)·h^{±1}`` (sign ``+`` iff ``y_x = 1``) for a common ``B``, hence ``p* = h² = e`` and
    ``R(z)/(R(x)+R(x')) ≥ h^{-1}/(2h) = 1/(2e)``, attained at ``y_x = y_{x'} = 1, y_z = 0`` for a third
    value ``z`` (``d ≥ 3``): ``r* = e^{-ε0}/2``, FMT20's constant, so RAPPOR is **not** in FMT23's class
    at its true ε0.  With ``d = 2``: ``r* = 1/(1+e)``.  TV = ``(h-1)/(h+1)``.
    """

    def _matrix(self) -> NDArray[np.float64]:
        d = self.domain_size
        f = 1.0 / (math.exp(self.local_epsilon / 2.0) + 1.0)
        ones = _bits(d)  # (outputs, d)
        match = ones[None, :, :] == np.eye(d, dtype=bool)[:, None, :]  # (inputs, outputs, d)
        return np.asarray(np.prod(np.where(match, 1.0 - f, f), axis=2), dtype=np.float64)

    def total_variation(self) -> float:
        return math.tanh(self.local_epsilon / 4.0)  # (h-1)/(h+1), h = e^{ε0/2}

    def describe(self) -> str:
        return f"symmetric RAPPOR, d={self.domain_size}, ε0={self.local_epsilon:g}"


@dataclass(frozen=True)
class OUE(_UnaryEncoding):
    """Optimized unary encoding (Wang et al., USENIX Security 2017) on ``d`` values.

    One-hot encode; the input's bit is reported as 1 w.p. ½, every other bit as 1 w.p. ``1/(e+1)``.
    ``R(x)(y) = B(y)·φ(y_x)`` with ``φ(1) = (e+1)/2``, ``φ(0) = (e+1)/(2e)``: ``p* = e`` and
    ``r* = φ(0)/(2φ(1)) = 1/(2e)`` for ``d ≥ 3`` (FMT20's constant; not in FMT23's class),
    ``1/(e+1)`` for ``d = 2``.  TV = ``(e-1)/(2(e+1))``.
    """

    def _matrix(self) -> NDArray[np.float64]:
        d = self.domain_size
        q = 1.0 / (math.exp(self.local_epsilon) + 1.0)
        ones = _bits(d)
        own = np.eye(d, dtype=bool)[:, None, :]  # (inputs, 1, d)
        bit_one = np.where(own, 0.5, q)
        return np.asarray(np.prod(np.where(ones[None, :, :], bit_one, 1.0 - bit_one), axis=2), dtype=np.float64)

    def total_variation(self) -> float:
        return math.tanh(self.local_epsilon / 2.0) / 2.0  # (e-1)/(2(e+1))

    def describe(self) -> str:
        return f"optimized unary encoding, d={self.domain_size}, ε0={self.local_epsilon:g}"


@dataclass(frozen=True)
class SubsetSelection(Randomizer):
    """k-subset selection (Ye & Barg 2018; Wang et al. 2016) on ``d`` values, ``1 ≤ k ≤ d-1``.

    Report a ``k``-subset ``S`` w.p. proportional to ``e`` if ``x ∈ S`` and ``1`` otherwise.  ``p* = e``;
    for ``k ≥ 2`` a subset containing ``x, x'`` and missing some ``z`` gives ``r* = 1/(2e)`` (FMT20's
    constant, not in FMT23's class); ``k = 1`` is k-ary RR (``r* = 1/(e+1)``).
    TV = ``(e-1)(C(d-1,k-1) - C(d-2,k-2)) / (e·C(d-1,k-1) + C(d-1,k))``.
    """

    domain_size: int
    subset_size: int
    local_epsilon: float

    def __post_init__(self) -> None:
        d = check_int("domain_size", self.domain_size, minimum=2)
        object.__setattr__(self, "domain_size", d)
        object.__setattr__(self, "subset_size", check_int("subset_size", self.subset_size, minimum=1, maximum=d - 1))
        object.__setattr__(self, "local_epsilon", check_local_epsilon(self.local_epsilon))

    @property
    def num_inputs(self) -> int:
        return self.domain_size

    def _output_count(self) -> int:
        return math.comb(self.domain_size, self.subset_size)

    def _matrix(self) -> NDArray[np.float64]:
        d, k, e = self.domain_size, self.subset_size, math.exp(self.local_epsilon)
        members = np.zeros((math.comb(d, k), d), dtype=bool)
        for i, subset in enumerate(itertools.combinations(range(d), k)):
            members[i, list(subset)] = True
        norm = e * math.comb(d - 1, k - 1) + math.comb(d - 1, k)
        return np.where(members.T, e, 1.0) / norm

    def clone_constants(self) -> tuple[CloneConstants, ...]:
        return _constants(self.local_epsilon, self.subset_size == 1)

    def total_variation(self) -> float:
        d, k, e = self.domain_size, self.subset_size, math.exp(self.local_epsilon)
        both = math.comb(d - 2, k - 2) if k >= 2 else 0
        return (e - 1.0) * (math.comb(d - 1, k - 1) - both) / (e * math.comb(d - 1, k - 1) + math.comb(d - 1, k))

    def describe(self) -> str:
        return f"{self.subset_size}-subset selection, d={self.domain_size}, ε0={self.local_epsilon:g}"


@dataclass(frozen=True)
class LocalHashing(Randomizer):
    """Local hashing with ``l`` hash values over the full hash family (Wang et al., USENIX Security 2017).

    The user draws ``H: [d] → [l]`` uniformly among all ``l^d`` functions and reports ``(H, y)`` with
    ``y = H(x)`` w.p. ``e/(e+l-1)`` and each other value w.p. ``1/(e+l-1)``.  ``p* = e``; with ``d ≥ 3`` a
    hash with ``H(x) = H(x') = y ≠ H(z)`` gives ``r* = 1/(2e)`` (FMT20's constant, not in FMT23's class),
    with ``d = 2``: ``1/(e+1)``.  TV = ``(1 - 1/l)(e-1)/(e+l-1)`` (a fraction ``1/l`` of the hashes
    collide on ``x, x'``).
    """

    domain_size: int
    hash_range: int
    local_epsilon: float

    def __post_init__(self) -> None:
        object.__setattr__(self, "domain_size", check_int("domain_size", self.domain_size, minimum=2))
        object.__setattr__(self, "hash_range", check_int("hash_range", self.hash_range, minimum=2))
        object.__setattr__(self, "local_epsilon", check_local_epsilon(self.local_epsilon))

    @property
    def num_inputs(self) -> int:
        return self.domain_size

    def _output_count(self) -> int:
        d, ell = self.domain_size, self.hash_range
        return int(ell ** min(d, 64) * ell)

    def _matrix(self) -> NDArray[np.float64]:
        d, ell, e = self.domain_size, self.hash_range, math.exp(self.local_epsilon)
        hashes = np.array(list(itertools.product(range(ell), repeat=d)))  # (l^d, d): H(x) = hashes[h, x]
        hit = hashes.T[:, :, None] == np.arange(ell)[None, None, :]  # (inputs, hashes, values)
        law = np.where(hit, e, 1.0) / ((e + ell - 1.0) * hashes.shape[0])
        return np.asarray(law.reshape(d, -1), dtype=np.float64)

    def clone_constants(self) -> tuple[CloneConstants, ...]:
        return _constants(self.local_epsilon, self.domain_size == 2)

    def total_variation(self) -> float:
        e, ell = math.exp(self.local_epsilon), self.hash_range
        return (1.0 - 1.0 / ell) * (e - 1.0) / (e + ell - 1.0)

    def describe(self) -> str:
        return f"local hashing, d={self.domain_size}, l={self.hash_range}, ε0={self.local_epsilon:g}"


def OLH(domain_size: int, local_epsilon: float) -> LocalHashing:  # noqa: N802 - reads as a randomizer name
    """Optimized local hashing: :class:`LocalHashing` with ``l = round(e^{ε0} + 1)`` (at least 2)."""
    eps0 = check_local_epsilon(local_epsilon)
    return LocalHashing(domain_size, max(2, round(math.exp(eps0) + 1.0)), eps0)


@dataclass(frozen=True)
class HadamardResponse(_OnDomain):
    """Hadamard response (Acharya, Sun, Zhang, AISTATS 2019), one block, on ``d`` values.

    ``K`` = the smallest power of two above ``d``; input ``x`` owns the set
    ``C_x = {y < K : popcount(x·y) even}`` of ``K/2`` outputs (row ``x+1`` of the Sylvester–Hadamard
    matrix), and ``R(x)(y) = e/Z`` on ``C_x``, ``1/Z`` off it, ``Z = (K/2)(e+1)``.  ``p* = e``.  For ``K ≥ 8``
    (``d ≥ 4``) every pair shares an output ``y ≠ 0`` that some other input's set misses, so
    ``r* = 1/(2e)`` (FMT20's constant); for ``d ≤ 3`` (``K = 4``) all sets contain ``y = 0`` and meet only
    there, so ``r* = 1/(e+1)`` (in FMT23's class).  TV = ``(e-1)/(2(e+1))``.
    """

    @property
    def block_size(self) -> int:
        """``K``: the smallest power of two larger than ``d``."""
        return 1 << self.domain_size.bit_length()

    def _output_count(self) -> int:
        return self.block_size

    def _matrix(self) -> NDArray[np.float64]:
        K, e = self.block_size, math.exp(self.local_epsilon)
        rows = np.arange(1, self.domain_size + 1)[:, None] & np.arange(K)[None, :]
        parity = np.array([bin(int(v)).count("1") & 1 for v in rows.ravel()]).reshape(rows.shape)
        return np.where(parity == 0, e, 1.0) / ((K / 2.0) * (e + 1.0))

    def clone_constants(self) -> tuple[CloneConstants, ...]:
        return _constants(self.local_epsilon, self.block_size == 4)

    def total_variation(self) -> float:
        return math.tanh(self.local_epsilon / 2.0) / 2.0  # (K/4)(e-1)/Z

    def describe(self) -> str:
        return f"Hadamard response, d={self.domain_size} (K={self.block_size}), ε0={self.local_epsilon:g}"
