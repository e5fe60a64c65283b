"""One updating line on stderr while slow work runs (a finalize, a profile loaded, a report made),
so that a command that takes seconds does not look hung.

Nothing is printed unless the stream is a terminal and the work takes over `delay_s` (1 s): a
timer thread rewrites the line every `every_s`, and the line is erased when the work ends. While
the line shows, other writes to `sys.stderr` erase it first, so that they start on a clean line.
"""
from __future__ import annotations

import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TextIO

DELAY_S = 1.0  # work shorter than this prints nothing
EVERY_S = 0.25  # how often the line is rewritten


class Progress:
    """The line of one piece of work; `tick()` rewrites it (the timer thread calls it)."""

    def __init__(self, label: str, stream: TextIO, clock: Callable[[], float] = time.monotonic,
                 delay_s: float = DELAY_S) -> None:
        self.label = label
        self.stream = stream
        self.clock = clock
        self.delay_s = delay_s
        self.started = clock()
        self.shown = ""  # the text on the line now; "" when there is none
        self.lock = threading.Lock()

    def tick(self) -> None:
        elapsed = self.clock() - self.started
        if elapsed < self.delay_s:
            return
        with self.lock:
            text = f"{self.label}… {elapsed:.1f} s"
            shorter = len(self.shown) - len(text)  # what is left of the last text must go
            self._write("\r" + text + (" " * shorter + "\r" + text if shorter > 0 else ""))
            self.shown = text

    def clear(self) -> None:
        """Erases the line, leaving the cursor where it began."""
        with self.lock:
            if self.shown:
                self._write("\r" + " " * len(self.shown) + "\r")
                self.shown = ""

    def _write(self, text: str) -> None:
        try:
            self.stream.write(text)
            self.stream.flush()
        except (OSError, ValueError):  # the terminal went away: the work goes on
            pass


@contextmanager
def progress(label: str, stream: TextIO | None = None, clock: Callable[[], float] = time.monotonic,
             delay_s: float = DELAY_S, every_s: float = EVERY_S) -> Iterator[Progress | None]:
    """Shows `label` and the seconds spent on one line of `stream` (default: stderr) while the
    block runs, once it has run `delay_s`; yields the Progress, or None where the stream is no
    terminal (then no thread starts)."""
    stream = sys.stderr if stream is None else stream
    if not is_terminal(stream):
        yield None
        return
    line = Progress(label, stream, clock, delay_s)
    done = threading.Event()

    def run() -> None:
        while not done.wait(every_s):
            line.tick()

    timer = threading.Thread(target=run, name="lepton-progress", daemon=True)
    try:
        timer.start()
        started = True
    except RuntimeError:  # Python 3.12+ starts no thread at exit, where unfinalized profiles are written
        started = False
    if not started:
        yield None
        return
    swapped = stream is sys.stderr
    if swapped:
        sys.stderr = _ClearingStream(stream, line)
    try:
        yield line
    finally:
        done.set()
        timer.join()
        line.clear()
        if swapped and isinstance(sys.stderr, _ClearingStream):
            sys.stderr = stream


def is_terminal(stream: TextIO) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError, OSError):  # no isatty, or closed
        return False


class _ClearingStream:
    """sys.stderr while a line shows: a write erases the line first."""

    def __init__(self, stream: TextIO, line: Progress) -> None:
        self._stream = stream
        self._line = line

    def write(self, text: str) -> int:
        self._line.clear()
        return self._stream.write(text)

    def __getattr__(self, name: str):
        return getattr(self._stream, name)
