"""Which call path each thread was in, and since when: how launched kernels find their scope.

Every change of a thread's path (scope entered or left, state set, launch op begun or ended) is
marked on that thread's log: the time and the path the thread is in from then on (`hot_path` writes
every mark and describes their encoding; this module stores and reads them). A launch's record
carries the launching thread's id and its start time on the same clock (the backend picks the clock,
see `cupti.clock`), so the launch's path is the last mark of its thread at or before that time: one
`searchsorted` per thread for a whole buffer.

A one-shot pair, `[t, ~op, t, path]`, says "the thread's next launch from `t` on is in `op`, the
launches after it in `path`". Each thread's launches come in time order, so the first launch after a
pair is told apart by its time; which pair a thread's last first launch took is kept between lookups
(`ThreadTimelines.paths_at`), for a launch whose record came in an earlier buffer.

Thread ids are system thread ids (gettid, `threading.get_native_id()`; the CUPTI backend has CUPTI
write those, see `layout.THREAD_ID_TYPE_SYSTEM`). The kernel may give a new thread the id of one
that ended; such threads' logs are merged by time, which keeps each one's marks in its own
lifetime.

A thread that never marked (torch's autograd threads, which run `backward()`'s kernels while the
thread that called it waits) follows the first thread that marked: its launches land in that
thread's path at their time. The `ThreadCensus` knows which threads marked: while only one did, a
backend may attribute launches by time alone.

Why time lines rather than CUPTI's external correlation ids: docs/design.md, "Attribution by thread
time lines".
"""
from __future__ import annotations

import threading
import time
import weakref
from collections.abc import Callable

import numpy as np

from .paths import INTERNAL, ROOT


class ThreadCensus:
    """The threads that marked a path on any of the time lines sharing this census, and who to
    tell when a second one does."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        # Called when a second thread is seen: on it, before its first mark, and before any later
        # new thread's first mark.
        self.on_second_thread: Callable[[], None] | None = None
        self.reset()

    def reset(self) -> None:
        self.first: int | None = None  # the thread id of the first thread that marked
        self._seen: set[int] = set()

    @property
    def several(self) -> bool:
        return len(self._seen) > 1

    def saw(self, thread_id: int) -> None:
        if thread_id in self._seen:
            return
        with self._lock:
            if thread_id in self._seen:
                return
            self._seen.add(thread_id)
            if self.first is None:
                self.first = thread_id
            elif len(self._seen) == 2 and self.on_second_thread is not None:
                # Under the lock: a third new thread marks only once this callback is done.
                self.on_second_thread()


class ThreadLog:
    """One thread's marks: `marks`, `[t0, path0, t1, path1, ...]`, appended by the thread itself
    and taken from the front into the numpy mirrors `times`/`paths` by the lookups.

    `marks` is a list because the hot path appends to it twice per mark, and `list.append` is the
    cheapest append Python has; it only holds the marks appended since the last lookup."""

    __slots__ = ("ended_by", "in_order", "marks", "mirrored", "paths", "thread", "thread_id", "times")

    def __init__(self, thread_id: int) -> None:
        self.thread_id = thread_id
        self.thread = weakref.ref(threading.current_thread())  # the writer, to see when it ended
        self.ended_by: int | None = None  # a time (time line's clock) by which the writer had ended
        self.marks: list[int] = []
        self.times = np.zeros(0, np.int64)
        self.paths = np.zeros(0, np.int64)
        self.mirrored = 0  # marks in the mirrors
        self.in_order = True  # False once the clock went back (set by hand) between two marks

    def __len__(self) -> int:
        """How many marks the log keeps."""
        return self.mirrored + len(self.marks) // 2

    def sync(self) -> tuple[np.ndarray, np.ndarray]:
        """`(times, paths)` of every complete mark. Moves the marks appended since the last call
        into arrays grown by doubling: a long run's lookups stay proportional to its new marks.
        Callers hold the time line's lock: this is the only remover, and it removes from the
        front while the thread appends at the back (each list operation atomic under the GIL)."""
        marks = self.marks
        taken = marks[:]
        k = len(taken) & ~1  # a mark copied between its two appends is taken next time
        if k:
            del marks[:k]
            new = np.fromiter(taken, np.int64, k)
            n = k // 2
            start, end = self.mirrored, self.mirrored + n
            if end > len(self.times):
                size = max(end, 2 * len(self.times), 64)
                self.times = np.concatenate((self.times[:start], np.zeros(size - start, np.int64)))
                self.paths = np.concatenate((self.paths[:start], np.zeros(size - start, np.int64)))
            self.times[start:end] = new[0::2]
            self.paths[start:end] = new[1::2]
            if self.in_order:
                run = self.times[max(start - 1, 0):end]
                self.in_order = bool((run[1:] >= run[:-1]).all())
            self.mirrored = end
        return self.times[:self.mirrored], self.paths[:self.mirrored]

    def forget(self, count: int) -> None:
        """Drops the first `count` marks (mirrored ones). The mirrors are rebuilt, not shifted in
        place: a lookup may still be searching the arrays `sync` handed out."""
        kept = self.mirrored - count
        times, paths = np.zeros_like(self.times), np.zeros_like(self.paths)
        times[:kept] = self.times[count:self.mirrored]
        paths[:kept] = self.paths[count:self.mirrored]
        self.times, self.paths, self.mirrored = times, paths, kept


class ThreadTimelines:
    """Every thread's log of path changes. The runtime keeps one for the process; `clock` is set by
    the backend that reads the marks (the clock its launch records are on)."""

    def __init__(self, clock: Callable[[], int] = time.time_ns,
                 thread_id: Callable[[], int] = threading.get_native_id,
                 census: ThreadCensus | None = None) -> None:
        self.clock = clock
        self.thread_id = thread_id
        self.census = census if census is not None else ThreadCensus()
        self.reset()

    def reset(self) -> None:
        """Forgets every thread's log (no session left)."""
        self.census.reset()
        self._tls = threading.local()
        self._logs: list[ThreadLog] = []
        self._lock = threading.Lock()
        self._taken: dict[int, int] = {}  # thread id -> time of the last one-shot pair a launch took

    def log(self) -> ThreadLog:
        """The calling thread's log, created on its first use."""
        try:
            return self._tls.log
        except AttributeError:
            thread_id = self.thread_id()
            self.census.saw(thread_id)
            log = self._tls.log = ThreadLog(thread_id)
            with self._lock:
                self._logs.append(log)
            return log

    def marks_by_thread(self) -> dict[int, tuple[np.ndarray, np.ndarray]]:
        """`thread id -> (times, paths)`, each thread's marks in time order. Called from CUPTI's
        buffer thread while launching threads append."""
        by_thread: dict[int, list[ThreadLog]] = {}
        with self._lock:
            for log in self._logs:
                by_thread.setdefault(log.thread_id, []).append(log)
            out = {}
            for tid, logs in by_thread.items():
                parts = [log.sync() for log in logs]
                if len(logs) == 1 and logs[0].in_order:
                    out[tid] = parts[0]
                    continue
                # Threads that shared an id one after the other, or a clock set back: sort.
                times = np.concatenate([t for t, _ in parts])
                paths = np.concatenate([p for _, p in parts])
                order = np.argsort(times, kind="stable")
                out[tid] = (times[order], paths[order])
        return out

    def paths_at(self, thread_ids: np.ndarray, times: np.ndarray) -> np.ndarray:
        """The path of each launch `(thread id, time)`; each launch is looked up once, a thread's
        in time order (one-shot pairs are taken by the first). A thread that never marked follows
        the census's first thread."""
        return paths_at(self.marks_by_thread(), thread_ids, times, self._taken, self.census.first)

    def forget_before(self, time_ns: int) -> None:
        """Drops the marks no launch can need any more: those before `time_ns` except each
        thread's last one (every launch before it has been delivered, e.g. after a flush), and
        the logs of threads that had ended before `time_ns` (a thread seen ended is given a time
        by which it was; its log goes at a later call that is past that time)."""
        self._forget(lambda thread_id: time_ns)

    def forget_before_each(self, horizons: dict[int, int]) -> None:
        """`forget_before` per thread: `thread id -> time` before which every launch of that
        thread has been delivered. Threads not named keep everything."""
        self._forget(horizons.get)

    def _forget(self, horizon_of: Callable[[int], int | None]) -> None:
        with self._lock:
            kept = []
            for log in self._logs:
                times, paths = log.sync()
                horizon = horizon_of(log.thread_id)
                if horizon is not None and log.in_order:
                    keep_from = int(np.searchsorted(times, horizon, side="right")) - 1
                    if keep_from > 0 and paths[keep_from - 1] < 0:
                        keep_from -= 1  # a one-shot pair stays whole: its launch may come later
                    if keep_from > 0:
                        log.forget(keep_from)
                if log.ended_by is None:
                    thread = log.thread()
                    if thread is None or not thread.is_alive():
                        log.ended_by = self.clock()
                elif horizon is not None and log.ended_by <= horizon:
                    continue
                kept.append(log)
            self._logs = kept

def paths_at(marks: dict[int, tuple[np.ndarray, np.ndarray]], thread_ids: np.ndarray,
             times: np.ndarray, taken: dict[int, int] | None = None,
             followed: int | None = None) -> np.ndarray:
    """The path of each `(thread id, time)`: its thread's last mark at or before that time, ROOT
    for threads with no mark then (no scope entered yet). A one-shot pair gives its launch path to
    the first launch after it, unless `taken` (thread id -> time of the last pair taken, updated
    here) says a launch looked up before took it. A thread with no marks at all takes the path of
    thread `followed`, if given, but none of its one-shot pairs (those are its own launches').
    A pair's two marks share one time, so a lookup never stops at its first."""
    out = np.full(len(times), ROOT, np.int64)
    if not len(times):
        return out
    thread_ids = np.asarray(thread_ids, np.int64)
    first = int(thread_ids[0])
    if (thread_ids == first).all():  # the common case: one launching thread
        tids = [first]
    else:
        tids = np.unique(thread_ids).tolist()
    for tid in tids:
        thread_marks = marks.get(tid)
        own = thread_marks is not None
        if not own:
            thread_marks = marks.get(followed) if followed is not None else None
            if thread_marks is None:
                continue
        mark_times, mark_paths = thread_marks
        sel = np.flatnonzero(thread_ids == tid)
        at = np.searchsorted(mark_times, times[sel], side="right") - 1
        found = at >= 0
        sel, at = sel[found], at[found]
        paths = mark_paths[at]
        if not own:  # a follower's launches are the user's: inside the thread's `INTERNAL`, its path before
            inside = np.flatnonzero(paths == INTERNAL)
            paths[inside] = np.where(at[inside] > 0, mark_paths[np.maximum(at[inside] - 1, 0)], ROOT)
        if own and len(at) and mark_paths[max(int(at.min()) - 1, 0):int(at.max()) + 1].min() < 0:
            _take_one_shot_pairs(paths, at, times[sel], mark_times, mark_paths, tid, taken)
        out[sel] = paths
    return out


def _take_one_shot_pairs(paths: np.ndarray, at: np.ndarray, times: np.ndarray, mark_times: np.ndarray,
                         mark_paths: np.ndarray, tid: int, taken: dict[int, int] | None) -> None:
    """In place: `paths` (at marks `at`) of one thread's launches at `times`, where the thread has
    one-shot pairs `[t, ~launch path, t, path]`: the first launch after a pair is in its launch
    path. A pair is appended by one `list.extend`, so a launch is never found at its first mark."""
    pair = at - 1
    in_pair = (pair >= 0) & (mark_paths[np.maximum(pair, 0)] < 0)
    if not in_pair.any():
        return
    idx = np.flatnonzero(in_pair)
    idx = idx[np.argsort(times[idx], kind="stable")]
    pairs = pair[idx]
    first = np.ones(len(idx), bool)
    first[1:] = pairs[1:] != pairs[:-1]
    if taken is not None:
        pair_times = mark_times[pairs]
        first &= pair_times != taken.get(tid, -1)  # its launch was looked up before
        if first.any():
            taken[tid] = int(pair_times[first][-1])
    winners = idx[first]
    paths[winners] = ~mark_paths[pair[winners]]
