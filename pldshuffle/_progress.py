"""Progress reporting of the command line on stderr: a self-overwriting status line, plain lines, or nothing.

The accountant reports stages through a ``progress`` callback (strings); :class:`ProgressReporter` is that
callback for the CLI.  Modes: ``"bar"`` (an interactive terminal) redraws one line in place with ``\\r``
-- elapsed seconds, a spinner, the stage number and the current message cut to the terminal width --
and ends it with a newline on :meth:`~ProgressReporter.close`; ``"lines"`` prints one
``pldshuffle: [  1.2 s] message`` line per stage (for logs); ``"off"`` prints no progress.  Warnings
(:meth:`~ProgressReporter.warn`) are printed in every mode but ``"quiet"``.
"""

from __future__ import annotations

import shutil
import threading
import time
from collections.abc import Callable
from typing import TextIO

__all__ = ["ProgressReporter", "choose_mode"]

_SPINNER = "|/-\\"
#: Seconds between redraws of the status line (the spinner and the clock move while a stage runs).
_REFRESH = 0.2


def choose_mode(stream: TextIO, *, quiet: bool, lines: bool) -> str:
    """``"quiet"`` with ``--quiet`` (wins over everything), ``"lines"`` with ``--progress``, ``"bar"`` on a
    terminal, else ``"off"`` (nothing when stderr is a file or a pipe)."""
    if quiet:
        return "quiet"
    if lines:
        return "lines"
    isatty = getattr(stream, "isatty", None)
    return "bar" if isatty is not None and isatty() else "off"


class ProgressReporter:
    """Callable progress sink for the CLI; a context manager that closes the status line on exit.

    Parameters
    ----------
    stream : text stream
        Where to write (``sys.stderr`` in the CLI).
    mode : {"bar", "lines", "off", "quiet"}
        See the module notes; :func:`choose_mode` picks it from the flags and the stream.
    delay : float
        ``"bar"`` only: seconds before the line first appears, so that quick commands print nothing.
    clock : callable
        Monotonic clock in seconds (tests pass a fake one).
    """

    def __init__(self, stream: TextIO, mode: str, *, delay: float = 1.0, clock: Callable[[], float] = time.monotonic) -> None:
        if mode not in ("bar", "lines", "off", "quiet"):
            raise ValueError(f"mode must be 'bar', 'lines', 'off' or 'quiet', got {mode!r}")
        self.stream, self.mode, self.delay, self.clock = stream, mode, delay, clock
        self._start = clock()
        self._message, self._stages, self._ticks = "", 0, 0
        self._drawn = False
        self._warned: set[str] = set()
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        if mode == "bar":
            self._thread = threading.Thread(target=self._refresh, name="pldshuffle-progress", daemon=True)
            self._thread.start()

    def __call__(self, message: str) -> None:
        """Report the start of a stage."""
        if message in self._warned:  # already printed as a warning line (see warn)
            return
        with self._lock:
            self._message, self._stages = message, self._stages + 1
            if self.mode == "lines":
                self._write(f"pldshuffle: [{self._elapsed():6.1f} s] {message}\n")
            elif self.mode == "bar" and self._elapsed() >= self.delay:
                self._draw()

    def warn(self, message: str) -> None:
        """Print ``pldshuffle: warning: message`` on its own line (keeping the status line below it)."""
        self._warned.add(message)
        if self.mode == "quiet":
            return
        with self._lock:
            if self._drawn:
                self._write("\r" + " " * (self._width() - 1) + "\r")
            self._write(f"pldshuffle: warning: {message}\n")
            if self._drawn:
                self._draw()

    def close(self) -> None:
        """Stop redrawing and end a drawn status line with a newline (idempotent)."""
        self._stop.set()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join()
        with self._lock:
            if self._drawn:
                self._draw()
                self._write("\n")
                self._drawn = False

    def __enter__(self) -> ProgressReporter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ------------------------------------------------------------------ internals
    def _elapsed(self) -> float:
        return self.clock() - self._start

    def _width(self) -> int:
        return shutil.get_terminal_size((80, 24)).columns

    def _write(self, text: str) -> None:
        self.stream.write(text)
        self.stream.flush()

    def _draw(self) -> None:
        # One column short of the width: writing the last column makes some terminals wrap.
        width = self._width() - 1
        spin = _SPINNER[self._ticks % len(_SPINNER)]
        line = f"pldshuffle: {spin} [{self._elapsed():6.1f} s] stage {self._stages}: {self._message}"
        self._write("\r" + line[:width].ljust(width))
        self._drawn = True

    def _refresh(self) -> None:
        while not self._stop.wait(_REFRESH):
            with self._lock:
                self._ticks += 1
                if self._stages and self._elapsed() >= self.delay:
                    self._draw()
