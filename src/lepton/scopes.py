"""Scopes: named regions of the program that kernels and metrics are attributed to.

`scope` is the hot path of the whole profiler (users wrap every step in one), so it does the least
possible: a no-op when nothing is profiling, else one path lookup, a push on the thread's stack
and a mark on its time line (`collect.timeline`); the pop and a mark on the way out.
"""
from __future__ import annotations

import functools
import sys
import threading
import time
from typing import Any

from .collect.contexts import enter_python_scope, exit_python_scope
from .errors import UsageError
from .model.metrics import CPU_TIME_METRIC
from .runtime import RUNTIME

_rt = RUNTIME


class scope:
    """Context manager and decorator: `with scope("name", {"bytes": 1024}): ...`."""

    __slots__ = ("_anchor", "_anchors", "_pid", "_sid", "_t0", "metrics", "name")
    _callers_depth = 1  # sys._getframe(depth) in __enter__: the frame that enters the scope

    def __init__(self, name: str, metrics: dict[str, Any] | None = None) -> None:
        self.name = name
        self.metrics = metrics
        self._pid = -1
        self._t0 = 0  # set while a trace session times this scope
        # Its python-context anchor (`collect.contexts`); `_anchors`, the thread's anchors it is
        # on, is set with it (not here: every scope object is made on the hot path).
        self._anchor: tuple | None = None

    def __enter__(self):
        rt = _rt
        if rt.live and not self.metrics:
            # Fast path, for a scope already entered under this parent (`Runtime.entered`): only
            # the push and the mark (a method call costs as much as this whole path), and in a
            # python-context session the caller's stack, which is the scope's node there.
            try:
                t = rt.shadow.local.thread
            except AttributeError:
                t = rt.init_thread()
            stack = t.stack
            pid = rt.entered.get((stack[-1], self.name))
            if pid is not None and t.state is None:
                stack.append(pid)
                clock = rt.mark_clock
                if clock is not None:
                    marks = t.marks
                    marks.append(clock())
                    marks.append(pid)
                self._pid = pid
                if rt.python_sessions:  # `_enter_python`, inlined
                    here, self._anchor, self._anchors = enter_python_scope(
                        rt.paths, sys._getframe(self._callers_depth))
                    for scopes in rt.python_scope_sets:
                        scopes.add(here)
                if rt.tracing:
                    self._sid = next(rt.scope_ids)
                    self._t0 = time.time_ns()
                return self
        if not rt.live:
            self._pid = -1
            return self
        pid = self._pid = rt.enter(self.name, python=False)
        if rt.python_sessions:
            self._enter_python(rt, sys._getframe(self._callers_depth))
        if self.metrics:
            rt.add_metrics(pid, self.metrics)
        if rt.tracing:
            self._sid = next(rt.scope_ids)
            self._t0 = time.time_ns()
        return self

    def _enter_python(self, rt, frame) -> None:
        """In a python-context session, the scope's node is the stack of the frame that entered
        it, which anchors the stack walks made inside the scope."""
        here, self._anchor, self._anchors = enter_python_scope(rt.paths, frame)
        for scopes in rt.python_scope_sets:
            scopes.add(here)

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
        rt = _rt
        t0 = self._t0
        if t0:  # timed by a trace session
            self._t0 = 0
            if rt.tracing:
                rt.record_scope_event(pid, t0, time.time_ns(), self._sid, self.metrics)
        if not rt.live:
            return
        # Fast path: Runtime.exit inlined.
        t = rt.shadow.local.thread
        stack = t.stack
        if stack[-1] == pid and t.state is None:
            stack.pop()
            clock = rt.mark_clock
            if clock is not None:
                marks = t.marks
                marks.append(clock())
                marks.append(stack[-1])
            return
        rt.exit(pid, self.name)

    def __call__(self, func):
        @functools.wraps(func)
        def wrapper(*args, **kwargs):
            with type(self)(self.name, self.metrics):
                return func(*args, **kwargs)

        return wrapper


class cpu_timed_scope(scope):
    """A scope that also records its host wall time as the metric `cpu_time (ns)` (per node,
    summed over repeats; nested timed scopes each keep their own time)."""

    __slots__ = ("_cpu_t0",)
    _callers_depth = 2  # through this __enter__

    def __init__(self, name: str, metrics: dict[str, Any] | None = None) -> None:
        if metrics and "cpu_time" in metrics:
            raise ValueError("The metric name 'cpu_time' is reserved.")
        super().__init__(name, metrics)

    def __enter__(self):
        super().__enter__()
        self._cpu_t0 = time.perf_counter_ns()
        return self

    def __exit__(self, *exc) -> None:
        if self._pid >= 0:
            _rt.add_metrics(self._pid, {CPU_TIME_METRIC + "(exc)": time.perf_counter_ns() - self._cpu_t0})
        super().__exit__(*exc)


_open = threading.local()


def _open_scopes() -> list:
    s = getattr(_open, "scopes", None)
    if s is None:
        s = _open.scopes = []
    return s


def enter_scope(name: str, *, metrics: dict | None = None) -> int | None:
    """Opens a scope without a `with` block; returns its id (None when nothing is profiling)."""
    if not _rt.live:
        return None
    sc = scope(name, metrics)
    sc.__enter__()
    sid = getattr(sc, "_sid", None) or next(_rt.scope_ids)
    _open_scopes().append((sid, name, sc))
    return sid


def exit_scope(name: str | None = None, *, metrics: dict | None = None) -> int | None:
    """Closes the innermost scope opened by `enter_scope` on this thread. A `name` that does not
    match it is an error; `metrics` are added to the scope before it closes."""
    stack = _open_scopes()
    if not stack:
        if not _rt.live:
            return None
        raise UsageError(f"exit_scope({name!r}) without a matching enter_scope on this thread")
    sid, open_name, sc = stack[-1]
    if name is not None and name != open_name:
        raise ValueError(f"Scope name mismatch: {name} != {open_name}")
    stack.pop()
    if metrics and sc._pid >= 0 and _rt.live:
        _rt.add_metrics(sc._pid, metrics)
        if sc._t0:
            sc.metrics = {**(sc.metrics or {}), **metrics}
    sc.__exit__(None, None, None)
    return sid
