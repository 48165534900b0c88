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

__all__ = ["REPORT_SECONDS", "ProgressChannel", "as_channel", "build_progress", "reporting_to", "throttled_reporter"]

#: Seconds between progress messages of a long computation (pair-family builds, branch and bound).
REPORT_SECONDS = 2.0


class ProgressChannel:
    """A progress callback and the time of its last message.

    Stage messages (calling the channel) pass at once; throttled ones (:func:`throttled_reporter`,
    :func:`build_progress`) pass once :data:`REPORT_SECONDS` have gone by since the channel's last message
    of either kind.  One clock per channel, not per step: a step that starts after seconds of other work
    reports at its first tick, instead of after a further ``REPORT_SECONDS`` (that had left silences of
    3.5–4 s).
    """

    def __init__(self, callback: Callable[[str], None]) -> None:
        self.callback = callback
        self.last = time.monotonic()

    def __call__(self, message: str) -> None:
        self.last = time.monotonic()
        self.callback(message)

    def due(self) -> bool:
        """Whether a throttled message may pass now."""
        return time.monotonic() - self.last >= REPORT_SECONDS


def as_channel(report: Callable[[str], None] | None) -> ProgressChannel | None:
    """``report`` as a :class:`ProgressChannel` (itself if it is one; a new one, with its own clock, for a
    plain callable; ``None`` for ``None``)."""
    return report if report is None or isinstance(report, ProgressChannel) else ProgressChannel(report)


_REPORT: ContextVar[ProgressChannel | None] = ContextVar("pldshuffle_build_report", default=None)


@contextmanager
def reporting_to(report: Callable[[str], None] | None) -> Iterator[None]:
    """Within the block, long steps report their progress to ``report`` (the accountant wraps pair-family
    builds and queries in it, with its channel; ``None`` silences them)."""
    token = _REPORT.set(as_channel(report))
    try:
        yield
    finally:
        _REPORT.reset(token)


def throttled_reporter(report: Callable[[str], None] | None = None) -> Callable[[str | Callable[[], str]], None]:
    """A ``say(message)`` that passes ``message`` (a string, or a function making it, called only when it is
    passed on) to ``report``, or else to the channel of :func:`reporting_to`, when the channel is due
    (:meth:`ProgressChannel.due`; nothing without one): long steps call it often, users hear of them
    every ~:data:`REPORT_SECONDS`."""
    channel = as_channel(report) if report is not None else _REPORT.get()

    def say(message: str | Callable[[], str]) -> None:
        if channel is not None and channel.due():
            channel(message if isinstance(message, str) else message())

    return say


def build_progress(what: str, report: Callable[[str], None] | None = None) -> Callable[[float], None]:
    """A ``tick(fraction_done)`` for one long step (a pair-family build, an adaptive recursion): reports
    ``"what: 42 %"`` through :func:`throttled_reporter`."""
    say = throttled_reporter(report)
    return lambda fraction: say(lambda: f"{what}: {100.0 * fraction:.0f} %")
