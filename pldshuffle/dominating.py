"""Deprecated alias of :mod:`pldshuffle.worstcase.strategy` (moved; kept for one release)."""

from ._deprecated import alias

alias(globals(), "dominating", "worstcase.strategy", "worstcase.blocks", "worstcase.witnesses", "worstcase.cover", "worstcase.envelope")
