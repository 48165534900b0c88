"""Deprecated alias of :mod:`pldshuffle.pld.certified` (moved; kept for one release)."""

from ._deprecated import alias

alias(globals(), "certified", "pld.certified", "pld.sizing", "pld.inversion", "pld.tilts")
