"""Deprecated alias of :mod:`pldshuffle.pld.lattice`, :mod:`pldshuffle.pld.composites` (moved; kept for one release)."""

from ._deprecated import alias

alias(globals(), "lattice", "pld.lattice", "pld.composites")
