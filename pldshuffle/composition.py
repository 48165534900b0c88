"""Deprecated alias of :mod:`pldshuffle.pld.composition` (moved; kept for one release)."""

from ._deprecated import alias

alias(globals(), "composition", "pld.composition")
