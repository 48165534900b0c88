"""Deprecated alias of :mod:`pldshuffle.pld.discretize` (moved; kept for one release)."""

from ._deprecated import alias

alias(globals(), "grid", "pld.discretize")
