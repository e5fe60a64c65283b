"""Which call path each thread was in, and since when: how CUPTI launches find their scope.

The runtime tells the backend on every scope change of a thread (`push_path(path_id)` on entry,
`pop_path()` on exit). Here each of those appends two numbers to the thread's own log: the host
time and the path the thread is in from then on. A launch's API record carries the launching
thread's id and its start time on CUPTI's clock, which is the host's CLOCK_REALTIME (measured on the
H200: `cuptiGetTimestamp()` minus `time.time_ns()` is 87-89 ns, the cost of the call, in every
process), so the launch's path is the last mark of its thread at or before that time: one
`searchsorted` per thread for a whole buffer.

This replaces pushing CUPTI external correlation ids (cupti-notes §3). Measured on the H200, per
step of 3 launches in one scope, median of 12-20 alternations in one process: the ext-id push/pop
plus the EXTERNAL_CORRELATION records cost 2.3-2.7 µs more than no attribution at all, these marks
0.3-0.4 µs. The hook mode changes paths four times per Triton launch, so it saves twice that.

Thread ids: CUPTI's API records carry `pthread_self()` cut to 32 bits (measured: equal to
`threading.get_ident() & 0xffffffff`). glibc may give a new thread the id of one that ended; such
threads' logs are merged by time, which keeps each one's marks in its own lifetime.
"""
from __future__ import annotations

import threading
import time
from array import array
from collections.abc import Callable

import numpy as np

from ...model.paths import ROOT

THREAD_ID_MASK = 0xFFFF_FFFF


def cupti_thread_id() -> int:
    """The calling thread's id as CUPTI's API records give it."""
    return threading.get_ident() & THREAD_ID_MASK


class _ThreadLog:
    """One thread's path stack (as pushed) and its marks: `[t0, path0, t1, path1, ...]`."""

    __slots__ = ("marks", "stack", "thread_id")

    def __init__(self, thread_id: int) -> None:
        self.thread_id = thread_id
        self.stack: list[int] = []
        self.marks = array("q")


class ThreadTimelines:
    """Per-thread logs of path changes; `push`/`pop` are the backend's scope hooks."""

    def __init__(self, clock: Callable[[], int] = time.time_ns,
                 thread_id: Callable[[], int] = cupti_thread_id) -> None:
        self.clock = clock
        self.thread_id = thread_id
        self._tls = threading.local()
        self._logs: list[_ThreadLog] = []
        self._lock = threading.Lock()
        self.push, self.pop = self._hooks()

    def _new_log(self) -> _ThreadLog:
        log = self._tls.log = _ThreadLog(self.thread_id())
        with self._lock:
            self._logs.append(log)
        return log

    def _hooks(self):
        tls, clock, new_log = self._tls, self.clock, self._new_log

        def push(path_id: int) -> None:  # runs on every scope entry: kept flat
            try:
                log = tls.log
            except AttributeError:
                log = new_log()
            log.stack.append(path_id)
            marks = log.marks
            marks.append(clock())
            marks.append(path_id)

        def pop() -> None:
            try:
                log = tls.log
            except AttributeError:
                return
            stack = log.stack
            if stack:
                stack.pop()
            marks = log.marks
            marks.append(clock())
            marks.append(stack[-1] if stack else ROOT)

        return push, pop

    def marks_by_thread(self) -> dict[int, tuple[np.ndarray, np.ndarray]]:
        """`thread id -> (times, paths)`, each thread's marks in time order. Called from CUPTI's
        buffer thread while launching threads append: each log is copied in one step (an array
        slice, atomic under the GIL)."""
        with self._lock:
            logs = list(self._logs)
        by_thread: dict[int, list[np.ndarray]] = {}
        for log in logs:
            copy = log.marks[:]
            if len(copy) % 2:  # copied between the two appends of a mark
                del copy[-1]
            marks = np.frombuffer(copy, np.int64)
            by_thread.setdefault(log.thread_id, []).append(marks)
        out = {}
        for tid, parts in by_thread.items():
            marks = np.concatenate(parts) if len(parts) > 1 else parts[0]
            times, paths = marks[0::2], marks[1::2]
            if len(parts) > 1 or (len(times) > 1 and (np.diff(times) < 0).any()):
                order = np.argsort(times, kind="stable")  # merged threads, or the clock was set back
                times, paths = times[order], paths[order]
            out[tid] = (times, paths)
        return out

    def paths_at(self, thread_ids: np.ndarray, times: np.ndarray) -> np.ndarray:
        return paths_at(self.marks_by_thread(), thread_ids, times)

    def forget_before(self, time_ns: int) -> None:
        """Drops the marks no launch can need any more: those before `time_ns` except each
        thread's last one (every launch before it has been delivered, e.g. after a flush)."""
        with self._lock:
            logs = list(self._logs)
        for log in logs:
            times = np.frombuffer(log.marks[:], np.int64)[0::2]
            keep_from = int(np.searchsorted(times, time_ns, side="right")) - 1
            if keep_from > 0:
                del log.marks[:2 * keep_from]  # one C call: atomic against the owner's appends


def paths_at(marks: dict[int, tuple[np.ndarray, np.ndarray]], thread_ids: np.ndarray,
             times: np.ndarray) -> np.ndarray:
    """The path of each `(thread id, time)`: its thread's last mark at or before that time, ROOT
    for threads with no mark then (no scope entered yet)."""
    out = np.full(len(times), ROOT, np.int64)
    if not len(times):
        return out
    thread_ids = np.asarray(thread_ids, np.int64)
    for tid in np.unique(thread_ids).tolist():
        thread_marks = marks.get(tid)
        if thread_marks is None:
            continue
        mark_times, mark_paths = thread_marks
        sel = np.flatnonzero(thread_ids == tid)
        at = np.searchsorted(mark_times, times[sel], side="right") - 1
        found = at >= 0
        out[sel[found]] = mark_paths[at[found]]
    return out
