"""Deprecated alias of :mod:`pldshuffle.pld.lattice` (moved; kept for one release)."""

from ._deprecated import alias

alias(globals(), "lattice", "pld.lattice")
