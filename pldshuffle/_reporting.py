"""Progress messages of long computations: one context-wide reporter and a throttle.

The accountant sets its ``progress`` callback as the reporter of a block (:func:`reporting_to`) around
the work it starts: building pair families, and answering queries.  Long steps inside (a pair-family
build, a branch and bound, an adaptive recursion, refining a single round's cover at a query) call a
:func:`throttled_reporter` or :func:`build_progress` often, and the user hears of them at most every
:data:`REPORT_SECONDS`.  Nothing is reported outside such a block or without a callback.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar

__all__ = ["REPORT_SECONDS", "build_progress", "reporting_to", "throttled_reporter"]

#: Seconds between progress messages of a long computation (pair-family builds, branch and bound).
REPORT_SECONDS = 2.0

_REPORT: ContextVar[Callable[[str], None] | None] = ContextVar("pldshuffle_build_report", default=None)


@contextmanager
def reporting_to(report: Callable[[str], None] | None) -> Iterator[None]:
    """Within the block, long steps report their progress to ``report`` (the accountant wraps pair-family
    builds and queries in it; ``None`` silences them)."""
    token = _REPORT.set(report)
    try:
        yield
    finally:
        _REPORT.reset(token)


def throttled_reporter(report: Callable[[str], None] | None = None) -> Callable[[str | Callable[[], str]], None]:
    """A ``say(message)`` that passes ``message`` (a string, or a function making it, called only when it is
    passed on) to ``report``, or else to the reporter of :func:`reporting_to`, at most every
    :data:`REPORT_SECONDS` (nothing without one): long steps call it often, users hear of them every few
    seconds."""
    report = report if report is not None else _REPORT.get()
    last = time.monotonic()

    def say(message: str | Callable[[], str]) -> None:
        nonlocal last
        if report is not None and time.monotonic() - last >= REPORT_SECONDS:
            last = time.monotonic()
            report(message if isinstance(message, str) else message())

    return say


def build_progress(what: str, report: Callable[[str], None] | None = None) -> Callable[[float], None]:
    """A ``tick(fraction_done)`` for one long step (a pair-family build, an adaptive recursion): reports
    ``"what: 42 %"`` through :func:`throttled_reporter`."""
    say = throttled_reporter(report)
    return lambda fraction: say(lambda: f"{what}: {100.0 * fraction:.0f} %")
