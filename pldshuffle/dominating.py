"""Deprecated alias of :mod:`pldshuffle.worstcase.strategy`, :mod:`pldshuffle.worstcase.blocks`, :mod:`pldshuffle.worstcase.gap`, :mod:`pldshuffle.worstcase.witnesses`, :mod:`pldshuffle.worstcase.cover`, :mod:`pldshuffle.worstcase.envelope` (moved; kept for one release)."""

from ._deprecated import alias

alias(globals(), "dominating", "worstcase.strategy", "worstcase.blocks", "worstcase.gap", "worstcase.witnesses", "worstcase.cover", "worstcase.envelope")
