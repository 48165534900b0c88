"""Deprecated alias of :mod:`pldshuffle.pld.certified`, :mod:`pldshuffle.pld.sizing`, :mod:`pldshuffle.pld.inversion`, :mod:`pldshuffle.pld.tilts` (moved; kept for one release)."""

from ._deprecated import alias

alias(globals(), "certified", "pld.certified", "pld.sizing", "pld.inversion", "pld.tilts")
