"""Context sources: where a scope or kernel sits in the call tree.

`ShadowStacks` keeps one stack of call-path ids per thread (Proton's shadow context). Proton's rule
for threads started while profiling: a thread's first use copies the stack of the thread that
started profiling (so PyTorch's autograd threads land under the scope that ran `backward()`), then
the thread keeps its own stack.

`python_path` names the Python frames of the caller as Proton's python context does:
`<co_filename>:<lineno>@<co_name>`, outermost first.
"""
from __future__ import annotations

import inspect
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

    __slots__ = ("in_metadata", "lane", "marks", "stack", "state")

    def __init__(self, stack: list[int], marks: list[int], lane: int) -> None:
        self.stack = stack
        self.marks = marks  # this thread's time line (`ThreadLog.marks`): [time, path, time, path, ...]
        self.state: tuple[str, ...] | None = None
        self.lane = lane
        self.in_metadata = False  # evaluating a launch's metadata (a launch inside it is not hooked)


_ENDED_KEPT = 8  # resets whose open scopes may still exit (`ShadowStacks.close_ended`)


class ShadowStacks:
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
_stack_ids: dict[tuple[int, ...], int] = {}  # (id(table), id(skip), anchor's path or -1, id(code), f_lasti, ...)
_codes: dict[int, object] = {}  # ids in `_stack_ids` -> their objects (codes, path tables, skips)
_hidden: dict[tuple[str, ...], dict[str, bool]] = {}  # folded dirs -> file name -> folded?
_folded: tuple[str, ...] | None = None
_folded_missing: tuple[str, ...] = ()  # packages not imported when `_folded` was computed
_folded_final: tuple[str, ...] | None = None  # `_folded` once no package is missing: read on every walk


def folded_dirs() -> tuple[str, ...]:
    """Folders whose frames the python context leaves out: Lepton's own, and Triton's and torch's
    runtime (Proton shows `triton/runtime/jit.py` and `driver.py` frames above every Triton kernel).
    `LEPTON_KEEP_LIBRARY_FRAMES=1` keeps Triton's and torch's. Recomputed only when one of them
    has been imported since (this runs on every launch)."""
    global _folded, _folded_missing, _folded_final
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
    _folded_final = None if missing else _folded
    return _folded


# A scope's anchor: while a scope entered from frame S is open, S is live and every frame outside
# it is suspended at the call that leads to S, so the stack outside S is fixed; a walk from inside
# the scope stops at S and takes the rest from the anchor: the scope's own path (S's stack when it
# entered the scope), which fixes the path outside S. S is held (`is` is the only safe test:
# a new frame may reuse a dead one's id) while its scope is open, when it is live anyway. Not for
# generator frames, which are resumed from other stacks.
_NOT_ANCHORED = inspect.CO_GENERATOR | inspect.CO_COROUTINE | inspect.CO_ASYNC_GENERATOR | inspect.CO_ITERABLE_COROUTINE
_local = threading.local()  # .anchors: [(frame S, the scope's path, skip, path table), ...], innermost last


def python_path(paths: PathTable, skip_dirs: tuple[str, ...] | None = None, start=None, depth: int = 1) -> int:
    """The path id of the caller's Python stack (from frame `start` if given, else from
    `sys._getframe(depth)`: the frames it passes over must be folded ones), named
    `<file>:<line>@<function>` outermost first, frames inside `skip_dirs` (default:
    `folded_dirs()`) left out.

    This runs on every launch of a python-context session, so a stack seen before costs one walk
    and one dict lookup. The walk collects `(id(code), f_lasti)` of every frame, folded or not
    (`f_lineno` would scan each code's line table, ≈0.25 µs a frame), up to the innermost open
    scope's frame if it meets it (its anchor gives the rest); which frames are folded is decided
    only for a stack not seen before. Checking each frame's file in the walk made it ≈30% slower
    (2.1 against 1.5 µs at depth 10 on the CI machine)."""
    skip = (_folded_final or folded_dirs()) if skip_dirs is None else skip_dirs
    if start is None:
        start = sys._getframe(depth)
    stop = entered = None
    anchors = getattr(_local, "anchors", None)
    if anchors:
        stop, entered, anchor_skip, anchor_paths = anchors[-1]
        if anchor_skip is not skip or anchor_paths is not paths:
            stop = None
    signature = [id(paths), id(skip), -1]  # then the anchor's scope path, if the walk meets it
    append = signature.append
    f = start
    if stop is None:  # the same walk without the test per frame (≈10% of the walk)
        while f is not None:
            append(id(f.f_code))
            append(f.f_lasti)
            f = f.f_back
    else:
        while f is not None:
            append(id(f.f_code))
            append(f.f_lasti)
            if f is stop:
                signature[2] = entered
                break
            f = f.f_back
    key = tuple(signature)
    pid = _stack_ids.get(key)
    if pid is None:
        _codes[id(paths)] = paths
        _codes[id(skip)] = skip
        if signature[2] < 0:
            pid = _intern_stack(paths, start, None, ROOT, skip)
        else:  # the path outside S: the scope's path, less S's frame unless S is folded
            outside = entered if _is_folded(stop.f_code.co_filename, skip) else paths.parent[entered]
            pid = _intern_stack(paths, start, stop, outside, skip)
        _stack_ids[key] = pid
    return pid


def enter_python_scope(paths: PathTable, frame) -> tuple[int, tuple | None, list | None]:
    """`(path, anchor, anchors)`: the path of the stack from `frame`, which enters a scope, and the
    anchor pushed on this thread's `anchors` for the scope (None for a generator's frame), which
    `exit_python_scope` takes off when the scope exits."""
    skip = _folded_final or folded_dirs()
    here = python_path(paths, skip, frame)
    if frame.f_code.co_flags & _NOT_ANCHORED:
        return here, None, None
    anchor = (frame, here, skip, paths)
    try:
        anchors = _local.anchors
    except AttributeError:
        anchors = _local.anchors = []
    anchors.append(anchor)
    return here, anchor, anchors


def exit_python_scope(anchor: tuple, anchors: list) -> None:
    """Takes `anchor` off `anchors`, the thread's anchors `enter_python_scope` pushed it on."""
    if anchors[-1] is anchor:
        anchors.pop()
    else:  # scopes closed out of order (enter_scope/exit_scope): the error is raised elsewhere
        anchors[:] = [a for a in anchors if a is not anchor]


def _is_folded(file_name: str, skip: tuple[str, ...]) -> bool:
    hidden = _hidden.get(skip)
    if hidden is None:
        hidden = _hidden[skip] = {}
    h = hidden.get(file_name)
    if h is None:
        h = hidden[file_name] = file_name.startswith(skip)
    return h


def _intern_stack(paths: PathTable, f, stop, base: int, skip: tuple[str, ...]) -> int:
    """The path of the stack from frame `f` outwards to `stop` (included; None: to the outermost
    frame) under path `base`, frames of files under `skip` left out. Every code object walked is
    kept alive: the stack's key holds their ids."""
    kept = []
    while f is not None:
        code = f.f_code
        _codes[id(code)] = code
        if not _is_folded(code.co_filename, skip):
            kept.append(f)
        if f is stop:
            break
        f = f.f_back
    pid = base
    for f in reversed(kept):
        code = f.f_code
        pid = paths.child(pid, f"{code.co_filename}:{f.f_lineno}@{code.co_name}")
    return pid
