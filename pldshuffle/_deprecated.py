"""Old module paths kept for one release: each re-exports its new home(s) and warns on import."""

from __future__ import annotations

import importlib
import warnings
from typing import Any


def alias(namespace: dict[str, Any], old: str, *new: str) -> None:
    """Fill ``namespace`` (the old module's globals) with every name of the ``new`` modules (later ones do
    not override earlier ones) and emit a :class:`DeprecationWarning` naming the new paths."""
    warnings.warn(
        f"pldshuffle.{old} is deprecated and will be removed in the next release; import from "
        + " / ".join(f"pldshuffle.{n}" for n in new),
        DeprecationWarning,
        stacklevel=4,
    )
    for name in reversed(new):
        module = importlib.import_module(f"pldshuffle.{name}")
        namespace.update({k: v for k, v in vars(module).items() if not (k.startswith("__") and k.endswith("__"))})
