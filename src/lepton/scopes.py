"""Scopes: named regions of the program that kernels and metrics are attributed to.

`scope` itself is in `hot_path`, with the rest of the code that runs on every scope enter and exit;
this module adds the scopes built on it.
"""
from __future__ import annotations

import threading
import time
from typing import Any

from .errors import UsageError, shown
from .model.metrics import CPU_TIME_METRIC
from .runtime.hot_path import HOT_PATH, scope

__all__ = ["cpu_timed_scope", "enter_scope", "exit_scope", "scope"]

_hp = HOT_PATH


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
            _hp.add_metrics(self._pid, {CPU_TIME_METRIC + "(exc)": time.perf_counter_ns() - self._cpu_t0})
        super().__exit__(*exc)


_open = threading.local()


def _open_scopes() -> list:
    s = getattr(_open, "scopes", None)
    if s is None:
        s = _open.scopes = []
    return s


def enter_scope(name: str, *, metrics: dict | None = None) -> int | None:
    """Opens a scope without a `with` block; returns its id (None when nothing is profiling)."""
    if not _hp.live:
        return None
    sc = scope(name, metrics)
    sc.__enter__()
    sid = getattr(sc, "_sid", None) or next(_hp.scope_ids)
    _open_scopes().append((sid, name, sc))
    return sid


def exit_scope(name: str | None = None, *, metrics: dict | None = None) -> int | None:
    """Closes the innermost scope opened by `enter_scope` on this thread. A `name` that does not
    match it is an error; `metrics` are added to the scope before it closes."""
    stack = _open_scopes()
    if not stack:
        if not _hp.live:
            return None
        raise UsageError(f"exit_scope({name!r}) without a matching enter_scope on this thread")
    sid, open_name, sc = stack[-1]
    if name is not None and name != open_name:
        raise UsageError(f"Scope name mismatch: {shown(name)} != {shown(open_name)} (the innermost scope "
                         f"open on this thread is {open_name!r}: exit it first; nothing was closed)")
    if sc._pid >= 0 and _hp.live:
        _check_innermost(sc._pid, open_name)
    if metrics and sc._pid >= 0 and _hp.live:
        _hp.add_metrics(sc._pid, metrics)  # raises, with the scope still open, if they cannot be added
        if sc._t0:
            sc.metrics = {**(sc.metrics or {}), **metrics}
    stack.pop()
    sc.__exit__(None, None, None)
    return sid


def _check_innermost(pid: int, open_name: str) -> None:
    """Raises, changing nothing, when a scope entered inside `pid` (by `with scope`, which the
    enter_scope stack does not see) is still open on this thread: closing `pid` then would leave
    it open for good, and every later scope would land under it."""
    stack = _hp.threads.thread().stack
    if stack[-1] != pid and pid in stack:
        inner = _hp.paths.name[stack[-1]]
        raise UsageError(f"Context stack is not balanced: exit_scope({open_name!r}) would close {open_name!r} "
                         f"while {inner!r}, entered inside it (with scope), is still open; leave {inner!r} "
                         f"first, then exit_scope({open_name!r}) (nothing was closed)")
