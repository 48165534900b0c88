"""Deprecated alias of :mod:`pldshuffle.pld.fft` (moved; kept for one release)."""

from ._deprecated import alias

alias(globals(), "fft", "pld.fft")
