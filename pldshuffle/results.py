"""Result objects returned by the accountant: certified brackets plus diagnostics."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

__all__ = ["DeltaBounds", "EpsilonBounds"]


def _caveat_text(is_guarantee: bool, caveats: tuple[str, ...]) -> str:
    if is_guarantee and not caveats:
        return ""
    head = "" if is_guarantee else " NOT A GUARANTEE (upper end is a lower bound on the worst case);"
    return head + "".join(f" {c}" for c in caveats)


@dataclass(frozen=True)
class EpsilonBounds:
    """Certified bracket ``lower <= ε(target_delta) <= upper`` of the analysed composition.

    ``upper`` is the privacy guarantee when ``is_guarantee`` is true.  ``upper`` is ``inf`` when
    ``target_delta`` is below the infinity mass.  ``diagnostics`` records the grid, the error terms
    and the FFT backend, so a user can see where the width comes from.
    """

    lower: float
    upper: float
    target_delta: float
    is_guarantee: bool = True
    caveats: tuple[str, ...] = ()
    diagnostics: Mapping[str, Any] = field(default_factory=dict, compare=False)

    def __iter__(self) -> Iterator[float]:
        yield self.lower
        yield self.upper

    @property
    def relative_gap(self) -> float:
        """``(upper - lower) / upper`` (0 when both are 0)."""
        if self.upper == 0.0:
            return 0.0
        if not np.isfinite(self.upper):
            return 0.0 if self.lower == self.upper else float("inf")
        return (self.upper - self.lower) / self.upper

    def __str__(self) -> str:
        return (
            f"ε ∈ [{self.lower:.6g}, {self.upper:.6g}] at δ = {self.target_delta:.3g}"
            + _caveat_text(self.is_guarantee, self.caveats)
        )


@dataclass(frozen=True)
class DeltaBounds:
    """Certified bracket ``lower <= δ(target_epsilon) <= upper`` (floats, or arrays for array input)."""

    lower: Any
    upper: Any
    target_epsilon: Any
    is_guarantee: bool = True
    caveats: tuple[str, ...] = ()
    diagnostics: Mapping[str, Any] = field(default_factory=dict, compare=False)

    def __iter__(self) -> Iterator[Any]:
        yield self.lower
        yield self.upper

    def __str__(self) -> str:
        if np.ndim(self.upper) == 0:
            text = f"δ ∈ [{self.lower:.6g}, {self.upper:.6g}] at ε = {self.target_epsilon:.6g}"
        else:
            text = f"δ bounds at {np.size(self.upper)} epsilons"
        return text + _caveat_text(self.is_guarantee, self.caveats)
