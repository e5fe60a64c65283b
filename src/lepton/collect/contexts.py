"""Context sources: where a scope or kernel sits in the call tree.

`ShadowStacks` keeps one stack of call-path ids per thread (Proton's shadow context). Proton's rule
for threads started while profiling: a thread's first use copies the stack of the thread that
started profiling (so PyTorch's autograd threads land under the scope that ran `backward()`), then
the thread keeps its own stack.

`python_path` names the Python frames of the caller as Proton's python context does:
`<co_filename>:<lineno>@<co_name>`, outermost first.
"""
from __future__ import annotations

import os
import sys
import threading

from ..model.paths import ROOT, PathTable

_LEPTON_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


class ThreadState(threading.local):
    """Per-thread scope state. `stack[0]` is always ROOT."""

    stack: list[int]
    pushed: list[int]  # the ids pushed to the backends on this thread, innermost last
    state: tuple[str, ...] | None
    lane: int


class ShadowStacks:
    def __init__(self, paths: PathTable) -> None:
        self.paths = paths
        self.local = ThreadState()
        self._main_stack: list[int] | None = None
        self._lanes = 0
        self._lock = threading.Lock()

    def set_main_thread(self) -> None:
        """The calling thread becomes the one new threads inherit their stack from."""
        self._main_stack = self.thread().stack

    def reset(self) -> None:
        """Forgets every thread's stack (all sessions ended)."""
        self.local = ThreadState()
        self._main_stack = None
        self._lanes = 0

    def thread(self) -> ThreadState:
        """The calling thread's state, created on its first use."""
        t = self.local
        if not hasattr(t, "stack"):
            main = self._main_stack
            t.stack = [ROOT] if main is None else list(main)
            t.pushed = []
            t.state = None
            with self._lock:
                t.lane = self._lanes
                self._lanes += 1
        return t

    def effective(self, t: ThreadState, pid: int) -> int:
        """The path kernels and metrics land on inside scope `pid`: the state, if set, is appended."""
        return pid if t.state is None else self.paths.extend(pid, t.state)

    def current(self) -> int:
        t = self.thread()
        return self.effective(t, t.stack[-1])


def python_path(paths: PathTable, skip_dirs: tuple[str, ...] = (_LEPTON_DIR,)) -> int:
    """The path id of the caller's Python stack, frames inside `skip_dirs` left out."""
    frames = []
    f = sys._getframe(1)
    while f is not None:
        code = f.f_code
        if not code.co_filename.startswith(skip_dirs):
            frames.append(f"{code.co_filename}:{f.f_lineno}@{code.co_name}")
        f = f.f_back
    pid = ROOT
    for name in reversed(frames):
        pid = paths.child(pid, name)
    return pid
