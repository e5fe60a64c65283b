"""The python context: where the caller's Python stack sits in the call tree.

`python_path` names the Python frames of the caller as Proton's python context does:
`<co_filename>:<lineno>@<co_name>`, outermost first. (The shadow context, a stack of scopes per
thread, is `hot_path.ThreadStates`.) Why the walk is made as it is: docs/design.md, "The python
context".
"""
from __future__ import annotations

import inspect
import os
import sys
import threading

from ..model.paths import ROOT, PathTable

_LEPTON_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


# Stacks are keyed by id(code), never by the code object: hashing a code object hashes its
# bytecode and constants, far slower than the walk itself. `_codes` keeps every code object
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
    (`f_lineno` would scan each code's line table), up to the innermost open scope's frame if it
    meets it (its anchor gives the rest); which frames are folded is decided only for a stack not
    seen before, since checking each frame's file in the walk makes every walk slower (numbers:
    docs/design.md, "The python context")."""
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
    if stop is None:  # the same walk without the test per frame
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
