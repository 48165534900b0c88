"""Deprecated alias of :mod:`pldshuffle.pld.sizing` (moved; kept for one release)."""

from ._deprecated import alias

alias(globals(), "spacing", "pld.sizing")
