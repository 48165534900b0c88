"""Deprecated alias of :mod:`pldshuffle.worstcase.recursion` (moved; kept for one release)."""

from ._deprecated import alias

alias(globals(), "adaptive", "worstcase.recursion")
