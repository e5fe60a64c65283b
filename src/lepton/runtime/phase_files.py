"""Periodic flushing (`mode="periodic_flushing[:format=F]"`): each phase is written to a file of its
own, `NAME.part_N.F`, as soon as it is complete, and freed, so that a long run holds only the phases
still being recorded.

A phase is complete once no kernel of it can still arrive (`Session.complete_through`). The session
hands each completed phase to the `PhaseWriter`, whose thread renders and writes it: neither a
launch nor a scope ever waits for a file. A phase whose file cannot be written anywhere goes back to
its session, and finalize writes it with the phases left; so does every phase still queued when
finalize comes, which waits for the writer first (`PhaseWriter.drain`).
"""
from __future__ import annotations

import os
import queue
import sys
import threading
from collections.abc import Callable

from .. import writers
from ..errors import UsageError
from ..model.profile import Profile

MODE = "periodic_flushing"
FORMATS = {"tree": ("hatchet", "hatchet_msgpack"), "trace": ("chrome_trace",)}


def flushing_format(mode: str, data: str) -> str | None:
    """The format completed phases are written in for `mode="periodic_flushing[:format=F]"` (the
    data's own format by default), or None for any other mode. A malformed mode, or a format the
    session's data cannot be written in, is refused in one line."""
    name, _, option = mode.partition(":")
    if name.lower() != MODE:
        return None
    formats = FORMATS[data]
    key, sep, fmt = option.partition("=")
    if not option:
        return formats[0]
    if key != "format" or not sep or ":" in fmt:
        raise UsageError(f"mode={mode!r}: periodic flushing takes one option, format "
                         f"(use {MODE} or {MODE}:format={formats[0]})")
    if fmt.lower() not in formats:
        raise UsageError(f"mode={mode!r}: a data={data!r} session cannot be written as {fmt!r} "
                         f"(use format={' or format='.join(formats)})")
    return fmt.lower()


def write_phase(session, phase: int, data, fmt: str, replace: bool,
                profile_of: Callable[..., Profile]) -> None:
    """Writes one completed phase of `session`, `data`, to `NAME.part_<phase>.<fmt>` (beside an
    existing one with `replace=False`: kernels that arrived after the phase's file was written);
    `profile_of(session, data)` is what the writer is given. Called on the writer's thread (so the
    device table is read there, not on CUPTI's); never raises: a phase that cannot be written goes
    back to its session."""
    try:
        path = writers.write(profile_of(session, data), session.path, fmt, f".part_{phase}", replace)
    except Exception as e:  # noqa: BLE001  (the phase is kept, and finalize raises if it fails again)
        session.keep_unwritten(phase, data, fresh_file=not replace)
        print(f"lepton: could not write phase {phase} of session {session.id} ({session.path}) as it "
              f"completed: {e}; it stays in memory and finalize writes it", file=sys.stderr)
        return
    session.phase_written(phase, path)


class PhaseWriter:
    """Runs the writes of completed phases, in the order they were submitted, on a daemon thread
    started at the first. `submit` never waits; `drain` waits for every write submitted so far."""

    def __init__(self) -> None:
        self._forget_in_child()
        os.register_at_fork(after_in_child=self._forget_in_child)

    def _forget_in_child(self) -> None:
        """Also the initial state. A child made by fork() writes none of its parent's phases."""
        self._jobs: queue.Queue[Callable[[], None]] = queue.Queue()
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()

    def submit(self, job: Callable[[], None]) -> None:
        with self._lock:
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(target=self._run, args=(self._jobs,),
                                                name="lepton-phase-writer", daemon=True)
                self._thread.start()
        self._jobs.put(job)

    def drain(self) -> None:
        self._jobs.join()

    @staticmethod
    def _run(jobs: queue.Queue) -> None:
        while True:
            job = jobs.get()
            try:
                job()
            except Exception as e:  # noqa: BLE001  (jobs do not raise; the thread must outlive a bug)
                print(f"lepton: error: writing a completed phase failed: {e!r}", file=sys.stderr)
            finally:
                jobs.task_done()
