"""Deprecated alias of :mod:`pldshuffle.worstcase.recursion`, :mod:`pldshuffle.worstcase._correlation` (moved; kept for one release)."""

from ._deprecated import alias

alias(globals(), "adaptive", "worstcase.recursion", "worstcase._correlation")
