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
from .timeline import ThreadTimelines

_LEPTON_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


class ThreadState:
    """Per-thread scope state. `stack[0]` is always ROOT.

    A plain object reached through one thread-local attribute (`ShadowStacks.local.thread`): an
    attribute of a `threading.local` costs ≈100 ns to read or write (a per-thread dict lookup
    each time, measured), one of this object ≈15 ns, and the hot paths touch several."""

    __slots__ = ("in_metadata", "lane", "launch_op", "marks", "stack", "state")

    def __init__(self, stack: list[int], marks: list[int], lane: int) -> None:
        self.stack = stack
        self.marks = marks  # this thread's time line (`ThreadLog.marks`): [time, path, time, path, ...]
        self.state: tuple[str, ...] | None = None
        self.lane = lane
        self.launch_op: int | None = None  # the op of the hooked launch in progress (`hooks.launch`)
        self.in_metadata = False  # evaluating a launch's metadata (a launch inside it is not hooked)


class ShadowStacks:
    def __init__(self, paths: PathTable, timeline: ThreadTimelines) -> None:
        self.paths = paths
        self.timeline = timeline
        self.local = threading.local()  # .thread: the calling thread's ThreadState
        self._main_stack: list[int] | None = None
        self._lanes = 0
        self._lock = threading.Lock()
        self._with_state: dict[tuple[int, tuple[str, ...]], int] = {}

    def set_main_thread(self) -> None:
        """The calling thread becomes the one new threads inherit their stack from."""
        self._main_stack = self.thread().stack

    def reset(self) -> None:
        """Forgets every thread's stack (all sessions ended)."""
        self.local = threading.local()
        self.timeline.reset()
        self._main_stack = None
        self._lanes = 0

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
        t = local.thread = ThreadState([ROOT] if main is None else list(main), self.timeline.log().marks, lane)
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


# Stacks are keyed by id(code), never by the code object: hashing a code object hashes its
# bytecode and constants (≈2 µs per lookup, measured on the H200). `_codes` keeps every code object
# seen alive, so that its id is never reused.
_stack_ids: dict[tuple[int, ...], int] = {}  # (id(table), id(skip), id(code), f_lasti, ...) -> path
_codes: dict[int, object] = {}  # ids in `_stack_ids` -> their objects (codes, path tables, skips)
_hidden: dict[tuple[str, ...], dict[str, bool]] = {}  # folded dirs -> file name -> folded?
_folded: tuple[str, ...] | None = None
_folded_missing: tuple[str, ...] = ()  # packages not imported when `_folded` was computed


def folded_dirs() -> tuple[str, ...]:
    """Folders whose frames the python context leaves out: Lepton's own, and Triton's and torch's
    runtime (Proton shows `triton/runtime/jit.py` and `driver.py` frames above every Triton kernel).
    `LEPTON_KEEP_LIBRARY_FRAMES=1` keeps Triton's and torch's. Recomputed only when one of them
    has been imported since (this runs on every launch)."""
    global _folded, _folded_missing
    if _folded is not None:
        for pkg in _folded_missing:
            if pkg in sys.modules:
                break
        else:
            return _folded
    dirs = [_LEPTON_DIR]
    missing = []
    if os.environ.get("LEPTON_KEEP_LIBRARY_FRAMES", "").strip().lower() not in ("1", "true", "on", "yes"):
        for pkg in ("triton", "torch"):
            mod = sys.modules.get(pkg)
            if mod is None or not getattr(mod, "__file__", None):
                missing.append(pkg)
                continue
            dirs.append(os.path.dirname(os.path.abspath(mod.__file__)) + os.sep)
    _folded, _folded_missing = tuple(dirs), tuple(missing)
    return _folded


def python_path(paths: PathTable, skip_dirs: tuple[str, ...] | None = None) -> int:
    """The path id of the caller's Python stack, named `<file>:<line>@<function>` outermost first,
    frames inside `skip_dirs` (default: `folded_dirs()`) left out.

    This runs on every launch of a python-context session, so a stack seen before costs one walk
    and one dict lookup. The walk collects `(id(code), f_lasti)` of every frame, folded or not
    (`f_lineno` would scan each code's line table, ≈0.25 µs a frame); which frames are folded is
    decided only for a stack not seen before. Checking each frame's file in the walk made it ≈30%
    slower (2.1 against 1.5 µs at depth 10 on the CI machine)."""
    skip = folded_dirs() if skip_dirs is None else skip_dirs
    signature = [id(paths), id(skip)]
    append = signature.append
    f = sys._getframe(1)
    while f is not None:
        append(id(f.f_code))
        append(f.f_lasti)
        f = f.f_back
    key = tuple(signature)
    pid = _stack_ids.get(key)
    if pid is None:
        hidden = _hidden.get(skip)
        if hidden is None:
            hidden = _hidden[skip] = {}
        _codes[id(paths)] = paths
        _codes[id(skip)] = skip
        pid = _stack_ids[key] = _intern_stack(paths, sys._getframe(1), skip, hidden)
    return pid


def _intern_stack(paths: PathTable, f, skip: tuple[str, ...], hidden: dict[str, bool]) -> int:
    """The path of the stack from frame `f` outwards, frames of files under `skip` left out. Every
    code object of the stack is kept alive: the stack's key holds their ids."""
    kept = []
    while f is not None:
        code = f.f_code
        _codes[id(code)] = code
        name = code.co_filename
        h = hidden.get(name)
        if h is None:
            h = hidden[name] = name.startswith(skip)
        if not h:
            kept.append(f)
        f = f.f_back
    pid = ROOT
    for f in reversed(kept):
        code = f.f_code
        pid = paths.child(pid, f"{code.co_filename}:{f.f_lineno}@{code.co_name}")
    return pid
