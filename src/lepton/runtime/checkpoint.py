"""Checkpoints: with `LEPTON_CHECKPOINT_S=N` set, every session's profile so far is written every N
seconds, so that a process ended by SIGKILL, the OOM killer or a preemption loses at most the last N
seconds of it (SIGTERM, Ctrl-C and the end of the program write the whole profile anyway).

A background thread, off the launch path: it asks each backend for the records it has completed
(`Backend.deliver_completed`: CUPTI's filled buffers, no device synchronize), copies each session's
data under the session's lock
(a few milliseconds for thousands of nodes), then renders and writes the copy with the atomic writer
while the program goes on, in the session's default format (`hatchet`, or `chrome_trace` for a
trace), to the file `finalize()` will write. A session whose data has not changed since its last
checkpoint is not rendered again, nor a profile whose bytes are the last one's written again. If that file cannot be written, the checkpoint goes where the final write would fall
back to (one line says where), and later checkpoints and the final write replace it there.
`finalize()` waits for a checkpoint being written, then writes the profile, and removes checkpoint
files that the final write did not replace (another format asked for, a phase cleared).

The registry drives it (`start`, `forget`, `finish`,
`stop`) and hands it the profile of a session's copied data (`profile_of`).
"""
from __future__ import annotations

import hashlib
import os
import sys
import threading
from collections.abc import Callable

from .. import writers
from ..errors import UsageError
from ..model.trace import TraceData
from .session import FORMATS

CHECKPOINT_ENV = "LEPTON_CHECKPOINT_S"
MIN_INTERVAL_S = 0.1


def interval_from_env() -> float | None:
    """The checkpoint interval in seconds from `LEPTON_CHECKPOINT_S`, or None (unset, empty or 0:
    no checkpoints). Anything else than a number of seconds is refused at `start()`."""
    text = os.environ.get(CHECKPOINT_ENV, "").strip()
    if not text:
        return None
    try:
        seconds = float(text)
    except ValueError:
        seconds = float("nan")
    if seconds == 0:
        return None
    if not seconds >= MIN_INTERVAL_S or seconds == float("inf"):
        raise UsageError(f"{CHECKPOINT_ENV}={text!r} is not an interval: give the seconds between checkpoints "
                         f"({MIN_INTERVAL_S} or more, e.g. 60), or 0 for none")
    return seconds


class Checkpointer:
    """The checkpoint thread of a registry, and where each session's checkpoints went."""

    def __init__(self, sessions: Callable[[], list], profile_of: Callable) -> None:
        self._sessions = sessions  # () -> the live sessions
        self._profile_of = profile_of  # (session, data) -> Profile
        self._write_lock = threading.Lock()  # held while a checkpoint is written
        self._thread: threading.Thread | None = None
        self._stop: threading.Event | None = None
        self._closed: set[int] = set()  # sessions being finalized: no checkpoint any more
        self._files: dict[int, dict[str, str]] = {}  # session id -> {file asked for: file written}
        self._last: dict[tuple[int, str], bytes] = {}  # (session id, file) -> digest of the last payload
        self._copies: dict[tuple[int, str], tuple] = {}  # (session id, file) -> (data, dropped) last rendered
        self._warned: set[int] = set()
        self.interval: float | None = None
        self.written = 0  # checkpoint files written (tests and benchmarks read it)

    # -- driven by the registry -------------------------------------------------------------------
    def start(self, interval: float) -> None:
        """A session started with checkpoints asked for: the thread runs (idempotent)."""
        if self._thread is not None and self._thread.is_alive() and not self._stop.is_set():
            return
        self.interval = interval
        stop = self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, args=(stop, interval), name="lepton-checkpoint",
                                        daemon=True)
        self._thread.start()

    def stop(self) -> None:
        """No session is left: the thread ends (it is not waited for)."""
        if self._stop is not None:
            self._stop.set()
        self._thread = None

    def forget(self, sessions: list) -> None:
        """`sessions` are about to be written for good: waits for a checkpoint being written, and
        none of theirs is written after."""
        with self._write_lock:
            self._closed.update(s.id for s in sessions)

    def elsewhere(self, session, target: str) -> str | None:
        """Where the checkpoints of `target` went instead of it (its folder failed), or None."""
        where = self._files.get(session.id, {}).get(os.path.abspath(target))
        return where if where is not None and where != os.path.abspath(target) else None

    def finish(self, session, written: list[str]) -> None:
        """The session's profile is written to `written`: its checkpoint files that were not
        replaced by it are removed, and the session is forgotten."""
        files = self._files.pop(session.id, {})
        kept = {os.path.abspath(path) for path in written}
        for where in set(files.values()) - kept:
            try:
                os.unlink(where)
            except OSError:
                pass
        self._closed.discard(session.id)
        self._warned.discard(session.id)
        for table in (self._last, self._copies):
            for key in [key for key in table if key[0] == session.id]:
                del table[key]

    def reset_in_child(self) -> None:
        """After `os.fork()`, in the child: the thread is the parent's; the child starts its own
        with its first session that asks for checkpoints."""
        self._write_lock = threading.Lock()
        self._thread = self._stop = None
        self._closed.clear()
        self._files.clear()
        self._last.clear()
        self._copies.clear()
        self._warned.clear()

    # -- the thread -------------------------------------------------------------------------------
    def _run(self, stop: threading.Event, interval: float) -> None:
        while not stop.wait(interval):
            self.write_all()

    def write_all(self) -> None:
        """One checkpoint of every live session (the thread calls it every interval)."""
        with self._write_lock:
            sessions = [s for s in self._sessions() if s.id not in self._closed and s.path not in ("", "-")]
            for backend in {id(s.backend): s.backend for s in sessions}.values():
                try:
                    backend.deliver_completed()  # kernels whose records are complete, off the launch path
                except Exception:  # noqa: BLE001  (the checkpoint then holds what was delivered before)
                    pass
            for session in sessions:
                try:
                    self._write(session)
                except Exception as e:  # noqa: BLE001  (a checkpoint never stops the program)
                    if session.id not in self._warned:
                        self._warned.add(session.id)
                        print(f"lepton: warning: no checkpoint of session {session.id} ({session.path}): {e}; "
                              "its profile is still written at the end", file=sys.stderr)

    def _write(self, session) -> None:
        phases, current = session.copy_phases()
        fmt = FORMATS[session.data_kind][0]
        files = self._files.setdefault(session.id, {})
        for phase, data in sorted(phases.items()):
            suffix = "" if current == 0 else f".part_{phase}"
            target = os.path.abspath(writers.output_path(session.path, fmt, suffix))
            state = (data, session.dropped_records)
            copied = self._copies.get((session.id, target))
            if copied is not None and copied[1] == state[1] and _same(copied[0], data):
                continue  # nothing new since the last checkpoint: not even rendered
            payload = writers.RENDERERS[fmt](self._profile_of(session, data))
            digest = hashlib.blake2b(payload, digest_size=16).digest()
            if self._last.get((session.id, target)) == digest:
                self._copies[(session.id, target)] = state
                continue
            where = files.get(target, target)
            try:
                writers.write_atomic(where, payload)
            except OSError:
                if where != target:
                    raise
                where = files[target] = os.path.abspath(writers.write_with_fallback(target, payload))
            files.setdefault(target, where)
            self._last[(session.id, target)] = digest
            self._copies[(session.id, target)] = state  # after the write: a failed one is tried again
            self.written += 1


def _same(old, new) -> bool:
    """Whether two copies of a phase's data hold the same profile: a tree's containers compared
    as they are (C-level dict and set comparisons, a few milliseconds for 10,000 nodes, where
    rendering takes hundreds); a trace only grows, so its sizes tell."""
    if type(old) is not type(new):
        return False
    if isinstance(new, TraceData):
        return _trace_size(old) == _trace_size(new)
    return vars(old) == vars(new)


def _trace_size(data: TraceData) -> tuple[int, int, int]:
    return len(data.scopes), sum(len(chunk["pid"]) for chunk in data._chunks), len(data.cycle_launches)
