"""Scopes: named regions of the program that kernels and metrics are attributed to.

`scope` is the hot path of the whole profiler (users wrap every step in one), so it does the least
possible: a no-op when nothing is profiling, one path lookup, one push and one pop per backend.
"""
from __future__ import annotations

import functools
import threading
import time
from typing import Any

from .errors import UsageError
from .model.metrics import CPU_TIME_METRIC
from .runtime import RUNTIME

_rt = RUNTIME
_path_ids = RUNTIME.paths._ids  # read-only here: a dict read is atomic under the GIL


class scope:
    """Context manager and decorator: `with scope("name", {"bytes": 1024}): ...`."""

    __slots__ = ("_pid", "_sid", "_t0", "metrics", "name")

    def __init__(self, name: str, metrics: dict[str, Any] | None = None) -> None:
        self.name = name
        self.metrics = metrics
        self._pid = -1

    def __enter__(self):
        rt = _rt
        if not rt.fast or self.metrics or type(self) is not scope:
            if not rt.live:
                self._pid = -1
                return self
            return self._enter_full(rt)
        # Fast path: Runtime.enter inlined (a method call costs as much as the work itself).
        t = rt.shadow.local
        try:
            stack = t.stack
        except AttributeError:
            stack = rt.init_thread().stack
        parent = stack[-1]
        pid = _path_ids.get((parent, self.name))
        if pid is None:
            pid = rt.paths.child(parent, self.name)
        stack.append(pid)
        if t.state is not None:
            stack.pop()
            return self._enter_full(rt)
        for scopes in rt.scope_sets:
            scopes.add(pid)
        push = rt.push
        if push is not None:
            push(pid)
            t.pushed.append(pid)
        self._pid = pid
        self._t0 = 0
        return self

    def _enter_full(self, rt):
        pid = self._pid = rt.enter(self.name)
        if self.metrics:
            rt.add_metrics(pid, self.metrics)
        if rt.tracing:
            self._sid = next(rt.scope_ids)
            self._t0 = time.time_ns()
        else:
            self._t0 = 0
        return self

    def _before_exit(self) -> None:
        """Hook for subclasses: runs before the scope is popped."""

    def __exit__(self, *exc) -> None:
        pid = self._pid
        if pid < 0:
            return
        rt = _rt
        if self._t0 or not rt.fast or type(self) is not scope:
            return self._exit_full(rt, pid)
        self._pid = -1
        t = rt.shadow.local
        stack = t.stack
        if stack[-1] != pid or t.state is not None:
            return rt.exit(pid, self.name)
        stack.pop()
        pop = rt.pop
        if pop is not None:
            pushed = t.pushed
            if pushed:
                pushed.pop()
                pop()
            if len(pushed) != len(stack) - 1 or (pushed and pushed[-1] != stack[-1]):
                rt.sync_backend_stack(t)

    def _exit_full(self, rt, pid) -> None:
        self._before_exit()
        self._pid = -1
        if self._t0 and rt.tracing:
            rt.record_scope_event(pid, self._t0, time.time_ns(), self._sid, self.metrics)
        if rt.live:
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

    def __init__(self, name: str, metrics: dict[str, Any] | None = None) -> None:
        if metrics and "cpu_time" in metrics:
            raise ValueError("The metric name 'cpu_time' is reserved.")
        super().__init__(name, metrics)

    def __enter__(self):
        super().__enter__()
        self._cpu_t0 = time.perf_counter_ns()
        return self

    def _before_exit(self) -> None:
        _rt.add_metrics(self._pid, {CPU_TIME_METRIC + "(exc)": time.perf_counter_ns() - self._cpu_t0})


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
