"""What runs on every scope enter and exit, state change and hooked launch.

This module owns each thread's scope state (`ThreadState`) and is the only code that writes marks
on the threads' time lines, which the backends read to find each launch's call path
(`model.timeline`). Every encoding of a mark is here, the copies inlined for speed included (the
fast paths of `scope`), so that they can be checked against each other
(`tests/unit/test_hot_path_marks.py`). A mark, appended to the thread's `ThreadLog.marks`:

- `time, path`: the thread is in `path` from `time` on;
- `time, ~launch_path, time, path`, in one `list.extend`: the thread's next launch is in
  `launch_path`, the launches after it in `path` (a one-shot pair, written by the launch hook so
  that Triton need not call back into Python after the launch);
- `time, INTERNAL`: Lepton's own GPU work follows (`internal`), until the thread's next mark.

The python context's Triton stack hook writes one-shot pairs `time, ~(stack path + 1), time, 0` on
a time line of its own (`mark_triton_launch_stack`).

Thread safety: the hot path takes no lock. The session registry replaces the views read here
(`live`, `active`, `mark_clock`, the fast paths' caches) as whole objects (`set_sessions`), an
atomic store under the GIL; `PathTable` is lock-free for paths already seen.

Why marks, and what they cost: docs/design.md, "Attribution by thread time lines".
"""
from __future__ import annotations

import contextlib
import functools
import itertools
import sys
import threading
import time
from typing import Any

from ..errors import UsageError
from ..model.metrics import check_metrics
from ..model.paths import INTERNAL, METADATA_NODE, ROOT, PathTable
from ..model.timeline import ThreadTimelines
from ..model.trace import ScopeEvent
from .python_stacks import enter_python_scope, exit_python_scope, python_path
from .tensor_metrics import TensorMetrics, split


def append_mark(marks: list[int], now: int, path: int) -> None:
    """A mark in its plain form (the methods below and `scope` write it inline)."""
    marks.append(now)
    marks.append(path)


def append_one_shot(marks: list[int], now: int, launch_path: int, path: int) -> None:
    """A one-shot pair in its plain form (the methods below write it inline)."""
    marks.extend((now, ~launch_path, now, path))


class ThreadState:
    """One thread's scope state. `stack[0]` is always ROOT.

    A plain object reached through one thread-local attribute (`ThreadStates.local.thread`): the
    hot paths touch several of its fields, and a field of a `threading.local` costs a per-thread
    dict lookup each time."""

    __slots__ = ("graph_tag", "in_metadata", "lane", "launch_op", "marks", "stack", "state")

    def __init__(self, stack: list[int], marks: list[int], lane: int) -> None:
        self.stack = stack
        self.marks = marks  # this thread's time line (`ThreadLog.marks`)
        self.state: tuple[str, ...] | None = None
        self.lane = lane
        self.in_metadata = False  # evaluating a launch's metadata (a launch inside it is not hooked)
        # The op the launch hook made for the launch in progress, for the instrumentation hook,
        # which runs after it on the same launch (`HotPath.take_launch_op`); -1: none.
        self.launch_op = -1
        # What the next graph node this thread captures is tagged with (`HotPath.launching_as`).
        self.graph_tag = None


_ENDED_KEPT = 8  # resets whose open scopes may still exit (`ThreadStates.close_ended`)


class ThreadStates:
    """Every thread's `ThreadState` (Proton's shadow context). A thread's first use copies the
    stack of the thread that started profiling, so that threads started meanwhile (PyTorch's
    autograd threads) land under the scope that started them; then the thread keeps its own."""

    def __init__(self, paths: PathTable, timeline: ThreadTimelines) -> None:
        self.paths = paths
        self.timeline = timeline
        self.local = threading.local()  # .thread: the calling thread's ThreadState
        self._main_stack: list[int] | None = None
        self._lanes = 0
        self._lock = threading.Lock()
        self._with_state: dict[tuple[int, tuple[str, ...]], int] = {}
        # The threads' states of the last resets, newest last: a scope entered before the last
        # session ended may exit in the next one (`close_ended`).
        self._ended: list[threading.local] = []

    def set_main_thread(self) -> None:
        """The calling thread becomes the one new threads inherit their stack from."""
        self._main_stack = self.thread().stack

    def reset(self) -> None:
        """Forgets every thread's stack (all sessions ended)."""
        self._ended = [*self._ended[-(_ENDED_KEPT - 1):], self.local]
        self.local = threading.local()
        self.timeline.reset()
        self._main_stack = None
        self._lanes = 0

    def close_ended(self, pid: int) -> bool:
        """Closes scope `pid` if it is the innermost scope the calling thread had open when the
        sessions it was entered in ended (`finalize(); start()` inside a `with scope`): its exit
        is then no error, and no event of the sessions running now. Returns whether it was."""
        for local in reversed(self._ended):
            t = getattr(local, "thread", None)
            if t is not None and len(t.stack) > 1 and t.stack[-1] == pid:
                t.stack.pop()
                return True
        return False

    def thread(self) -> ThreadState:
        """The calling thread's state, created on its first use."""
        local = self.local
        try:
            return local.thread
        except AttributeError:
            pass
        main = self._main_stack
        with self._lock:
            lane = self._lanes
            self._lanes += 1
        stack = [ROOT] if main is None else list(main)
        t = local.thread = ThreadState(stack, self.timeline.log().marks, lane)
        return t

    def effective(self, t: ThreadState, pid: int) -> int:
        """The path kernels and metrics land on inside scope `pid`: the state, if set, is appended
        (remembered per (scope, state): the launch hook sets a state on every launch)."""
        state = t.state
        if state is None:
            return pid
        eff = self._with_state.get((pid, state))
        if eff is None:
            eff = self._with_state[(pid, state)] = self.paths.extend(pid, state)
        return eff

    def current(self) -> int:
        t = self.thread()
        return self.effective(t, t.stack[-1])


class HotPath:
    """The process's scope machinery: thread states, the marks, and the views of the sessions
    that the fast paths read."""

    def __init__(self) -> None:
        self.paths = PathTable()
        self.timeline = ThreadTimelines()
        self.threads = ThreadStates(self.paths, self.timeline)
        # The Python stacks of Triton's launches in the python context (`mark_triton_launch_stack`);
        # a thread that marks only there counts as a marking thread too.
        self.python_timeline = ThreadTimelines(census=self.timeline.census)
        self._python_marks = threading.local()  # .marks: the thread's marks on `python_timeline`

        self.scope_ids = itertools.count(1)
        self._ops: dict[tuple[int, str], int] = {}
        self.tensor_metrics = TensorMetrics()  # device tensor values and metrics in graph captures
        self.set_sessions(False, (), None)

    # -- views ----------------------------------------------------------------------------------
    def set_sessions(self, live: bool, active: tuple, mark_clock) -> None:
        """The registry changed: `live` (any session exists), the `active` sessions, and the clock
        of the time lines while a started backend reads the marks (else None). Empties the fast
        paths' caches."""
        self.active = active
        self.tracing = tuple(s for s in active if s.timeline)  # they record CPU scope instances
        self.python_sessions = tuple(s for s in active if s.context == "python")
        self.scope_sets = tuple(s.current.scopes for s in active
                                if s.data_kind == "tree" and s.context == "shadow")
        self.python_scope_sets = tuple(s.current.scopes for s in self.python_sessions
                                       if s.data_kind == "tree")
        self.mark_clock = mark_clock
        # (parent path, name) -> path of the scopes entered since the last change: already in
        # every scope set, so that entering them again is only a push and a mark (`scope`).
        self.entered: dict[tuple[int, str], int] = {}
        # Likewise the launch ops, and the ops whose properties every active session has.
        self.entered_ops: dict[tuple[int, str], int] = {}
        self.ops_with_properties: set[int] = set()
        # The launch hook's caches of its fast path (`hooks.launch`): (scope path, raw kernel
        # name, metadata items, their types) -> (op, counters), and (scope path, raw kernel
        # name) -> what it knows of that kernel there.
        self.hooked_launches: dict[tuple, tuple] = {}
        self.hooked_kernels: dict[tuple, object] = {}
        self.live = live
        # The launch hook's fast path remembers ops by scope path, while a python-context session
        # puts them under the caller's stack. (Scopes take their fast path whenever `live`.)
        self.fast = live and not self.python_sessions

    def reset(self) -> None:
        """No session is left: every thread's stack and time line is forgotten."""
        self.threads.reset()
        self.python_timeline.reset()
        self._python_marks = threading.local()
        self.tensor_metrics.reset()

    # -- marks ----------------------------------------------------------------------------------
    def mark(self, t: ThreadState, path_id: int) -> None:
        """Thread `t` (the calling thread's state) is in `path_id` from now on."""
        clock = self.mark_clock
        if clock is not None:
            marks = t.marks
            marks.append(clock())
            marks.append(path_id)

    def remark(self, t: ThreadState) -> None:
        """Marks the thread's effective path (after its state changed, or at start)."""
        self.mark(t, self.threads.effective(t, t.stack[-1]))

    def mark_next_launch(self, t: ThreadState, op: int) -> None:
        """Thread `t`'s next launch is in `op`, the launches after it in the thread's own path."""
        clock = self.mark_clock
        if clock is not None:
            now = clock()
            t.marks.extend((now, ~op, now, self.threads.effective(t, t.stack[-1])))

    @contextlib.contextmanager
    def internal(self):
        """Lepton's own GPU work on the calling thread (the instrumentation backend's sums and
        copies at a decode): its launches are on `INTERNAL`, whose kernels the CUPTI collector drops:
        no profile shows the profiler's own. Then the thread's path is marked again, so not inside
        a launch (after the launch hook's one-shot pair): Triton calls the profile allocator,
        which may decode, before that hook. Nothing is marked while no backend reads the marks."""
        clock = self.mark_clock
        if clock is None:
            yield
            return
        t = self.thread()
        t.marks.extend((clock(), INTERNAL))
        try:
            yield
        finally:
            self.remark(t)

    @contextlib.contextmanager
    def launching_as(self, path: int, graph_tag=None):
        """Lepton's own launches on the calling thread (a tensor metric's copies): they land on
        `path` (a metadata node, `INTERNAL`, in no profile, or a `<metric>` op), both by the
        thread's marks and as the graph nodes a capture makes meanwhile, the first of which takes
        `graph_tag` (`take_graph_tag`). The thread's scopes and state are as they were afterwards."""
        t = self.thread()
        saved = t.state, t.graph_tag
        t.state, t.graph_tag = None, graph_tag
        t.stack.append(path)
        self.mark(t, path)
        try:
            yield
        finally:
            t.stack.pop()
            t.state, t.graph_tag = saved
            self.remark(t)

    def launch_path(self) -> int:
        """The path of the launch the calling thread is making, for a graph node it captures: the op
        of a one-shot pair marked right before it (the launch hook's), which this launch takes as
        its kernel record would (a mark after it tells the next launch so), else the thread's
        current path."""
        t = self.thread()
        marks = t.marks
        if len(marks) >= 4 and marks[-3] < 0 and marks[-4] == marks[-2]:
            op, path = ~marks[-3], marks[-1]
            clock = self.mark_clock
            if clock is not None:
                marks.extend((clock(), path))
            return op
        return self.threads.effective(t, t.stack[-1])

    def take_graph_tag(self):
        """The tag of the graph node the calling thread's capture is making (None: no tag); the
        backend's graph callback takes it, so that later nodes of the same launch have none."""
        t = getattr(self.threads.local, "thread", None)
        if t is None:
            return None
        tag, t.graph_tag = t.graph_tag, None
        return tag

    def mark_triton_launch_stack(self, stack_path: int) -> None:
        """The calling thread's next Triton launch has the Python stack `stack_path` (python
        context, on `python_timeline`; `0` after it means "no stack known")."""
        clock = self.mark_clock
        if clock is not None:
            try:
                marks = self._python_marks.marks
            except AttributeError:
                marks = self._python_marks.marks = self.python_timeline.log().marks
            now = clock()
            marks.extend((now, ~(stack_path + 1), now, 0))

    def caller_path(self) -> int:
        """The python context's path of a launch: the Python stack that calls the caller (Lepton's
        launch callbacks and Triton stack hook, whose frames are folded anyway), with the thread's
        state appended, as Proton appends it."""
        pid = python_path(self.paths, None, None, 3)
        t = getattr(self.threads.local, "thread", None)
        if t is not None and t.state is not None:
            pid = self.threads.effective(t, pid)
        return pid

    # -- threads --------------------------------------------------------------------------------
    def thread(self) -> ThreadState:
        """The calling thread's state; its first use marks the stack it inherited."""
        try:
            return self.threads.local.thread
        except AttributeError:
            t = self.threads.thread()
            if len(t.stack) > 1:
                self.remark(t)
            return t

    def depth(self) -> int:
        return len(self.threads.thread().stack) - 1

    def current(self) -> int:
        """The calling thread's current call path (scopes and state)."""
        return self.threads.current()

    # -- scopes ---------------------------------------------------------------------------------
    def enter(self, name: str, python: bool = True) -> int:
        """Pushes scope `name` on the calling thread; returns its stack path id. `python=False`:
        the caller gives a python-context session the scope's node itself (`scope` does, from the
        entering frame)."""
        if type(name) is not str:
            raise TypeError(f"A scope name must be a string, not {type(name).__name__} ({name!r}): "
                            "pass str(name)")
        t = self.thread()
        stack = t.stack
        parent = stack[-1]
        pid = self.paths.child(parent, name)
        stack.append(pid)
        eff = self.threads.effective(t, pid)
        entered = self.entered  # read before the scope sets: a registry change in between
        for scopes in self.scope_sets:  # leaves this entry in the old, discarded dict
            scopes.add(eff)
        if eff == pid:
            entered[(parent, name)] = pid
        if python and self.python_scope_sets:
            here = python_path(self.paths)
            for scopes in self.python_scope_sets:
                scopes.add(here)
        self.mark(t, eff)
        return pid

    def exit(self, pid: int | None, name: str | None = None) -> int:
        """Pops the innermost scope of the calling thread, checking it is `pid` when given."""
        t = self.threads.thread()
        stack = t.stack
        if pid is not None and stack[-1] != pid and self.threads.close_ended(pid):
            return pid
        if len(stack) == 1:
            raise UsageError(f"Context stack is empty: exiting scope {name!r} that is not open on "
                             "this thread")
        if pid is not None and stack[-1] != pid:
            raise UsageError(f"Context stack is not balanced: exiting {name!r} while "
                             f"{self.paths.name[stack[-1]]!r} is the innermost open scope")
        popped = stack.pop()
        self.remark(t)
        return popped

    def add_metrics(self, pid: int, metrics: dict) -> None:
        """Adds user metrics to the scope `pid` (stack path) in every active session; a metric that
        cannot be recorded raises before any is. Device tensors are not read here
        (`tensor_metrics`), and inside a CUDA graph capture every metric is recorded at each
        replay of the graph instead."""
        active = self.active
        if not active:
            return
        check_metrics(metrics)
        eff = self.threads.effective(self.threads.thread(), pid)
        if self.tensor_metrics.capturing():
            self.tensor_metrics.graphs.capture(self, eff, eff, metrics)
            return
        host, device = split(metrics)
        py = python_path(self.paths) if self.python_sessions else None
        if len(active) > 1:  # one session's refusal records the dict in none
            for s in active:
                s.check_metrics(py if s.context == "python" else eff, metrics)
        for s in active:
            s.add_metrics(py if s.context == "python" else eff, host)
        if device:
            self._add_device_metrics(active, eff, py, device, self.paths.child(eff, METADATA_NODE))

    def _add_device_metrics(self, sessions, eff: int, py: int | None, device: dict, under: int) -> None:
        """Sums device tensors into each tree session's node on the device (the sessions already
        hold the metrics, with zero values of their types). The kernels that do it land under
        `under`, the metadata node, where Proton's copies of metric tensors land."""
        sums = self.tensor_metrics.sums
        with self.launching_as(under):
            for s in sessions:
                if s.data_kind == "tree":
                    for raw, value in device.items():
                        sums.add(s, s.current, py if s.context == "python" else eff, raw, value)

    def record_scope_event(self, pid: int, start_ns: int, end_ns: int, scope_id: int,
                           metrics: dict | None) -> None:
        t = self.threads.thread()
        # One event shared by the trace sessions: events are never changed once made.
        event = ScopeEvent(self.threads.effective(t, pid), start_ns, end_ns, t.lane, scope_id, metrics)
        for s in self.tracing:
            s.add_scope_event(event)

    # -- states ---------------------------------------------------------------------------------
    def set_state(self, names: tuple[str, ...] | None) -> None:
        """Sets (or clears, with None) the calling thread's state slot. Not a stack: Proton's
        semantics, where an inner state overwrites the outer and exiting clears the slot."""
        if not self.live:
            return
        if names is not None and not all(type(n) is str for n in names):
            raise TypeError(f"A state name must be a string, not {names!r}")
        t = self.threads.thread()
        t.state = names
        self.remark(t)

    # -- hooked launches (`hooks.launch`) ---------------------------------------------------------
    def enter_metadata_state(self, t: ThreadState, state: tuple[str, ...],
                             state_path: int | None = None):
        """Thread `t` evaluates a launch's metadata under `state` (its path there, if known, is
        `state_path`): GPU work launched meanwhile lands there, unhooked. Returns the state to
        give back to `exit_metadata_state`, `launch_next_in` or `op_after_metadata_state`."""
        previous = t.state
        t.state = state
        t.in_metadata = True
        self.mark(t, self.threads.effective(t, t.stack[-1]) if state_path is None else state_path)
        return previous

    @staticmethod
    def metadata_evaluated(t: ThreadState) -> None:
        """The metadata is evaluated: launches are hooked again (the state stays until the op)."""
        t.in_metadata = False

    def exit_metadata_state(self, t: ThreadState, previous) -> None:
        """Leaves the metadata state without a launch (the metadata raised, or was filtered out)."""
        t.in_metadata = False
        t.state = previous
        self.remark(t)

    def launch_next_in(self, t: ThreadState, previous, op: int, top: int) -> None:
        """The hook's fast path: leaves the metadata state (`previous` is None there) and marks
        that the next launch is in `op`, the ones after it in `top`, the scope the thread is in."""
        t.state = previous
        t.launch_op = op
        clock = self.mark_clock
        if clock is not None:
            now = clock()
            t.marks.extend((now, ~op, now, top))

    def op_after_metadata_state(self, t: ThreadState, previous, name: str, metrics: tuple | None = None,
                                properties: dict | None = None,
                                metrics_under: tuple[str, ...] = ()) -> tuple[int, tuple | None]:
        """Leaves the metadata state and makes the launch's op node `name` under the thread's
        path; the next launch lands on it. The op gets the launch's metrics (`((name, value),
        ...)`; device tensors are summed on the device, and inside a CUDA graph capture every
        metric is recorded at each replay, its `<metric>` kernel's node under `metrics_under`);
        returns `(op, counters)`: `next()` on each counter counts a repeat of this launch (same op,
        same metrics) in an active session. `counters` is None where the metrics were captured
        into a graph: such a launch must not be counted as a repeat."""
        t.state = previous
        try:
            return self._enter_op(t, name, metrics, properties, metrics_under)
        except BaseException:  # e.g. a metric whose type changed: the thread leaves the state
            self.remark(t)
            raise

    def _enter_op(self, t: ThreadState, name: str, metrics: tuple | None,
                  properties: dict | None, metrics_under: tuple[str, ...] = ()) -> tuple[int, tuple | None]:
        base = python_path(self.paths) if self.python_sessions else self.threads.effective(t, t.stack[-1])
        entered = self.entered_ops  # read before the scope sets (see `enter`)
        op = entered.get((base, name))
        if op is None:
            op = self._ops.get((base, name))
            if op is None:
                op = self._ops[(base, name)] = self.paths.op(base, name)
            for scopes in self.python_scope_sets if self.python_sessions else self.scope_sets:
                scopes.add(op)
            entered[(base, name)] = op
        counters = ()
        if metrics:
            counters = self._op_metrics(op, base, metrics, metrics_under)
        if properties and op not in self.ops_with_properties:
            done = self.ops_with_properties
            for s in self.active:
                s.set_properties_once(op, properties)
            done.add(op)
        self.mark_next_launch(t, op)
        t.launch_op = op
        return op, counters

    def _op_metrics(self, op: int, base: int, metrics: tuple, metrics_under: tuple[str, ...]) -> tuple | None:
        """Records a hooked launch's metrics on its op (see `op_after_metadata_state`), before the
        op is marked as the thread's next launch: the copies of tensor metrics launch first."""
        if self.tensor_metrics.capturing():
            self.tensor_metrics.graphs.capture(self, op, self.paths.extend(base, metrics_under), dict(metrics))
            return None
        host, device = split(dict(metrics))
        counters = ()
        if device:  # a launch with tensors is never a repeat: each value is its own
            check_metrics(host)
            for s in self.active:
                s.add_metrics(op, host)
            self._add_device_metrics(self.active, op, op, device, self.paths.extend(base, metrics_under))
        elif host:
            key = (op, metrics)
            counters = tuple(s.launch_counter(key) for s in self.active)
        return counters

    def take_launch_op(self) -> int:
        """The op node the launch hook made for the calling thread's launch in progress, or -1,
        and forgets it. The instrumentation hook puts the launch's kernel there (as Proton, whose
        launch-metadata op is the instrumented kernel's node); its profile allocator, which Triton
        calls before the enter hooks of every instrumented launch, takes it first to drop an op
        left by an earlier launch."""
        t = getattr(self.threads.local, "thread", None)
        if t is None:
            return -1
        op, t.launch_op = t.launch_op, -1
        return op


HOT_PATH = HotPath()
_hp = HOT_PATH


class scope:
    """Context manager and decorator: `with scope("name", {"bytes": 1024}): ...`.

    The hot path of the whole profiler (users wrap every step in one), so it does the least
    possible: a no-op when nothing is profiling, else one path lookup, a push on the thread's stack
    and a mark; the pop and a mark on the way out. A scope already entered under the same parent
    since the last registry change (`HotPath.entered`) takes the fast path, which inlines
    `HotPath.enter` and `exit`."""

    __slots__ = ("_anchor", "_anchors", "_pid", "_sid", "_t0", "metrics", "name")
    _callers_depth = 1  # sys._getframe(depth) in __enter__: the frame that enters the scope

    def __init__(self, name: str, metrics: dict[str, Any] | None = None) -> None:
        self.name = name
        self.metrics = metrics
        self._pid = -1
        self._t0 = 0  # set while a trace session times this scope
        # Its python-context anchor (`runtime.python_stacks`); `_anchors`, the thread's anchors it
        # is on, is set with it (not here: every scope object is made on the hot path).
        self._anchor: tuple | None = None

    def __enter__(self):
        hp = _hp
        if hp.live and not self.metrics:
            try:
                t = hp.threads.local.thread
            except AttributeError:
                t = hp.thread()
            stack = t.stack
            try:
                pid = hp.entered.get((stack[-1], self.name))
            except TypeError:  # an unhashable name (a list): `HotPath.enter` says what is wrong
                pid = None
            if pid is not None and t.state is None:  # fast path: `HotPath.enter`, inlined
                stack.append(pid)
                clock = hp.mark_clock
                if clock is not None:
                    marks = t.marks
                    marks.append(clock())
                    marks.append(pid)
                self._pid = pid
                if hp.python_sessions:  # `_enter_python`, inlined
                    here, self._anchor, self._anchors = enter_python_scope(
                        hp.paths, sys._getframe(self._callers_depth))
                    for scopes in hp.python_scope_sets:
                        scopes.add(here)
                if hp.tracing:
                    self._sid = next(hp.scope_ids)
                    self._t0 = time.time_ns()
                return self
        if not hp.live:
            self._pid = -1
            return self
        if self.metrics:
            check_metrics(self.metrics)  # before the scope exists anywhere
        pid = self._pid = hp.enter(self.name, python=False)
        if hp.python_sessions:
            self._enter_python(hp, sys._getframe(self._callers_depth))
        if self.metrics:
            try:
                hp.add_metrics(pid, self.metrics)
            except BaseException:  # the scope is not entered: nothing of it stays behind
                self._undo_enter(hp, pid)
                raise
        if hp.tracing:
            self._sid = next(hp.scope_ids)
            self._t0 = time.time_ns()
        return self

    def _enter_python(self, hp: HotPath, frame) -> None:
        """In a python-context session, the scope's node is the stack of the frame that entered
        it, which anchors the stack walks made inside the scope."""
        here, self._anchor, self._anchors = enter_python_scope(hp.paths, frame)
        for scopes in hp.python_scope_sets:
            scopes.add(here)

    def _undo_enter(self, hp: HotPath, pid: int) -> None:
        self._pid = -1
        if self._anchor is not None:
            exit_python_scope(self._anchor, self._anchors)
            self._anchor = None
        hp.exit(pid, self.name)

    def __exit__(self, *exc) -> None:
        pid = self._pid
        if pid < 0:
            return
        self._pid = -1
        anchor = self._anchor
        if anchor is not None:
            self._anchor = None
            anchors = self._anchors
            if anchors[-1] is anchor:  # `exit_python_scope`, inlined
                anchors.pop()
            else:
                exit_python_scope(anchor, anchors)
        hp = _hp
        t0 = self._t0
        if t0:  # timed by a trace session
            self._t0 = 0
            if hp.tracing:
                hp.record_scope_event(pid, t0, time.time_ns(), self._sid, self.metrics)
        if not hp.live:
            return
        t = hp.threads.local.thread
        stack = t.stack
        if stack[-1] == pid and t.state is None:  # fast path: `HotPath.exit`, inlined
            stack.pop()
            clock = hp.mark_clock
            if clock is not None:
                marks = t.marks
                marks.append(clock())
                marks.append(stack[-1])
            return
        hp.exit(pid, self.name)

    def __call__(self, func):
        @functools.wraps(func)
        def wrapper(*args, **kwargs):
            with type(self)(self.name, self.metrics):
                return func(*args, **kwargs)

        return wrapper
