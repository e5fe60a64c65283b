"""Signals that would lose a profile: SIGTERM and SIGHUP while one is recorded, and SIGINT, SIGTERM
and SIGHUP while one is written.

- While a session records in plain Python (no `lepton` CLI), a SIGTERM or SIGHUP whose action is
  the default raises `SystemExit(128 + signum)` in the main thread, as under the CLI: finally-blocks
  run, then the program's own `finalize` or the write at exit writes the profile (the default
  action would end the process at once, with nothing written). A handler the program installed, or
  SIG_IGN, is left as it is: the program decides what its signal does, and Lepton does not end the
  process behind its back. Installed from the main thread only (`signal.signal` raises elsewhere);
  the default is back once the last session ends. The CLI, which handles these signals for the
  whole run (`cli.run.RunSignals`), holds this off meanwhile (`hold`, `release`).
- `deferred()`: while a profile is flushed and written, these signals (and Ctrl-C) are only
  recorded, then delivered once the write is done: one that lands in the middle of a write would
  otherwise end it, and the whole profile would be lost.

No Lepton imports: the registry tells `install` how to know whether a session still records.
"""
from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Callable, Iterator

TERMINATING = (signal.SIGTERM, signal.SIGHUP)  # what a supervisor or a closed terminal sends
_WRITE_SIGNALS = (signal.SIGINT, *TERMINATING)

received: list[int] = []  # the terminating signals that `_on_signal` turned into SystemExit
_installed: set[int] = set()
_held = 0
_recording: Callable[[], bool] = lambda: False  # noqa: E731


def exit_status(signum: int) -> int:
    """The exit status a shell reports for a process the signal ended: 128 + signum."""
    return 128 + signum


def terminate(signum, frame):
    """A handler: ends the program as a Python exit (finally-blocks and atexit run), with the
    status the signal would have given."""
    raise SystemExit(exit_status(signum))


def on_main_thread() -> bool:
    return threading.current_thread() is threading.main_thread()


def install(recording: Callable[[], bool]) -> None:
    """A session started: SIGTERM and SIGHUP at their default action now raise SystemExit while
    `recording()` is true. Idempotent; does nothing off the main thread or while the CLI holds the
    signals."""
    global _recording
    _recording = recording
    if _held or not on_main_thread():
        return
    for sig in TERMINATING:
        if sig not in _installed and signal.getsignal(sig) is signal.SIG_DFL:
            signal.signal(sig, _on_signal)
            _installed.add(sig)


def uninstall() -> None:
    """The last session ended: the default action is back, where the handler is still Lepton's (a
    handler the program installed since stays). Off the main thread the handler stays; it passes
    the signal to the default action by itself while nothing records."""
    if not on_main_thread():
        return
    for sig in list(_installed):
        if signal.getsignal(sig) is _on_signal:
            signal.signal(sig, signal.SIG_DFL)
        _installed.discard(sig)


def _on_signal(signum, frame):
    if not _recording():  # nothing of Lepton's at stake (a forked child; a session ended elsewhere)
        signal.signal(signum, signal.SIG_DFL)
        _installed.discard(signum)
        signal.raise_signal(signum)
        return
    received.append(signum)
    terminate(signum, frame)


def hold() -> None:
    """The CLI handles SIGTERM and SIGHUP until `release`: Lepton's own handlers step aside."""
    global _held
    _held += 1
    uninstall()


def release() -> None:
    global _held
    _held = max(0, _held - 1)


@contextlib.contextmanager
def deferred(deliver: bool = True) -> Iterator[list[int]]:
    """Within: SIGINT, SIGTERM and SIGHUP are recorded into the list yielded, not acted on. After:
    the handlers are back, and with `deliver` each signal recorded is raised again, once, so it
    does what it would have done. Main thread only (elsewhere nothing changes); signals ignored, or
    handled outside Python, are left alone."""
    caught: list[int] = []
    saved = {}
    if on_main_thread():
        try:
            for sig in _WRITE_SIGNALS:
                handler = signal.getsignal(sig)
                if handler is not None and handler is not signal.SIG_IGN:
                    saved[sig] = handler
                    signal.signal(sig, lambda signum, frame: caught.append(signum))
        except BaseException:  # a signal before the wait began: the handlers as they were, and it goes on
            for sig, handler in saved.items():
                signal.signal(sig, handler)
            raise
    try:
        yield caught
    finally:
        for sig, handler in saved.items():
            signal.signal(sig, handler)
        if deliver:
            for sig in dict.fromkeys(caught):
                signal.raise_signal(sig)
