"""The process-wide profiler: the session registry and the scope machinery every API call uses.

Thread safety: registry changes (start, activate, finalize, ...) hold `_lock`. The scope hot path
takes no lock: it reads `active`, `mark_clock` and friends, which registry changes replace as whole
tuples (an atomic store under the GIL), and it interns paths through `PathTable`, which is
lock-free for paths already seen.
"""
from __future__ import annotations

import atexit
import dataclasses
import functools
import itertools
import sys
import threading

from . import writers
from .collect.backend import Backend, backend_factory, backend_names
from .collect.contexts import ShadowStacks, python_path
from .collect.timeline import ThreadTimelines
from .errors import SessionNotFound, UsageError
from .model.aggregate import kernel_paths
from .model.paths import PathTable
from .model.profile import Profile
from .model.records import KernelBatch
from .model.trace import ScopeEvent
from .session import CONTEXTS, DATA_KINDS, Session


class _BackendSink:
    """What one backend sees of the runtime (`KernelSink`): called from the backend's thread."""

    def __init__(self, runtime: Runtime, backend: Backend) -> None:
        self.runtime = runtime
        self.backend = backend
        self.paths = runtime.paths
        self.timeline = runtime.timeline  # set its clock at start to the one launch records use

    def ingest(self, batch: KernelBatch) -> None:
        self.runtime.ingest(self.backend, batch)

    def report_dropped(self, count: int, reason: str) -> None:
        self.runtime.report_dropped(self.backend, count, reason)

    def current_path(self) -> int:
        """The calling thread's current call path (scopes and state)."""
        return self.runtime.shadow.current()


class Runtime:
    def __init__(self) -> None:
        self.paths = PathTable()
        self.timeline = ThreadTimelines()
        self.shadow = ShadowStacks(self.paths, self.timeline)
        # The Python stacks of Triton's launches in the python context (`hooks.launch.TritonStackHook`);
        # a thread that marks only there counts as a marking thread too.
        self.python_timeline = ThreadTimelines(census=self.timeline.census)
        # The path of the Python stack that calls its caller: called by Lepton's launch callbacks
        # and Triton stack hook, whose frames are folded, so the walk starts past them (one frame
        # fewer to walk and to make a frame object for: 850 against 710 ns per launch on the CI
        # CPU, in a loop of launches).
        self.caller_path = functools.partial(python_path, self.paths, None, None, 2)
        self.sessions: dict[int, Session] = {}
        self.backends: dict[str, Backend] = {}
        self.next_id = 0
        self.cli_session: int | None = None
        # Hot-path views, replaced whole on every registry change.
        self.live = False
        self.active: tuple[Session, ...] = ()
        self.tracing: tuple[Session, ...] = ()
        self.python_sessions: tuple[Session, ...] = ()
        self.mark_clock = None  # the time line's clock while a started backend reads the marks
        # (parent path, name) -> path of the scopes entered since the last registry change: already
        # in every scope set, so that entering them again is only a push and a mark (`scope`).
        self.entered: dict[tuple[int, str], int] = {}
        # Likewise the launch ops (launch hook), and the ops whose properties every active session
        # has: a repeated launch skips both.
        self.entered_ops: dict[tuple[int, str], int] = {}
        self.ops_with_properties: set[int] = set()
        # (scope path, raw kernel name, metadata items, their types) -> (op, counters) of the
        # hooked launches made since the last registry change (`hooks.launch`'s fast path).
        self.hooked_launches: dict[tuple, tuple] = {}
        # (scope path, raw kernel name) -> `hooks.launch._KernelInScope`, likewise.
        self.hooked_kernels: dict[tuple, object] = {}
        self.scope_sets: tuple = ()
        self.python_scope_sets: tuple = ()
        self.fast = False
        self.scope_ids = itertools.count(1)
        self._ops: dict[tuple[int, str], int] = {}
        self._lock = threading.RLock()
        self._warned: set[str] = set()
        self._exit_hook = False

    # -- registry -----------------------------------------------------------------------------------
    def _refresh(self) -> None:
        live = list(self.sessions.values())
        active = tuple(s for s in live if s.active)
        started = [b for b in self.backends.values() if b.started]
        self.active = active
        self.tracing = tuple(s for s in active if s.data_kind == "trace")
        self.python_sessions = tuple(s for s in active if s.context == "python")
        self.scope_sets = tuple(s.current.scopes for s in active
                                if s.data_kind == "tree" and s.context == "shadow")
        self.python_scope_sets = tuple(s.current.scopes for s in self.python_sessions
                                       if s.data_kind == "tree")
        self.mark_clock = self.timeline.clock if any(b.reads_marks for b in started) else None
        self.entered = {}
        self.entered_ops = {}
        self.ops_with_properties = set()
        self.hooked_launches = {}
        self.hooked_kernels = {}
        self._set_python_context(started)
        # Anything that needs more than the plain enter/exit takes the slow path.
        self.live = bool(live)
        # The launch hook's fast path remembers ops by scope path, while a python-context session
        # puts them under the caller's stack. (Scopes take their fast path whenever `live`.)
        self.fast = self.live and not self.python_sessions

    refresh = _refresh

    def _set_python_context(self, started: list[Backend]) -> None:
        """Tells each started backend whether a python-context session uses it; where one that
        `reads_triton_stacks` does, Triton's launch hook marks the stacks of Triton's launches."""
        from .hooks.launch import mark_triton_stacks  # hooks import the runtime

        python_backends = [b for b in started if any(s.backend is b for s in self.python_sessions)]
        stacks = None
        if any(b.reads_triton_stacks for b in python_backends):
            self.python_timeline.clock = self.timeline.clock
            if mark_triton_stacks(self.python_timeline, self.caller_path):
                stacks = self.python_timeline
        if stacks is None:
            mark_triton_stacks(None)
        for b in started:
            on = b in python_backends
            b.set_python_context(on, self.caller_path, stacks if on and b.reads_triton_stacks else None)

    def session(self, sid: int) -> Session:
        s = self.sessions.get(sid)
        if s is None:
            raise SessionNotFound(f"Session has not been initialized: {sid}")
        return s

    def warn_once(self, key: str, message: str) -> None:
        if key not in self._warned:
            self._warned.add(key)
            print(message, file=sys.stderr)

    def _backend(self, name: str, mode: str) -> Backend:
        backend = self.backends.get(name)
        if backend is not None:
            if backend.mode != mode:
                raise UsageError("Cannot add a session with the same profiler but a different mode than "
                                 f"existing sessions (backend {name!r} runs mode {backend.mode!r}, "
                                 f"asked for {mode!r}); finalize those sessions first")
            return backend
        factory = backend_factory(name)
        if factory is None:
            raise UsageError(f"Unknown profiler: {name} (available: {', '.join(backend_names())})")
        backend = factory(mode)
        self.backends[name] = backend
        return backend

    def start(self, path: str, context: str, data: str, backend_name: str, mode: str, hook=None) -> int:
        context, data = context.lower(), data.lower()
        if context not in CONTEXTS:
            raise UsageError(f"Unknown context source: {context} (use one of: {', '.join(CONTEXTS)})")
        if data not in DATA_KINDS:
            raise UsageError(f"Unknown data: {data} (use one of: {', '.join(DATA_KINDS)})")
        with self._lock:
            for s in self.sessions.values():
                if s.path == path:
                    self.activate(s.id)
                    return s.id
            backend = self._backend(backend_name.lower(), mode)
            if not self.sessions:
                self.shadow.set_main_thread()
            if not self._exit_hook:
                atexit.register(self.finalize_at_exit)
                self._exit_hook = True
            sid = self.next_id
            self.next_id += 1
            session = Session(sid, path, context, data, backend, hook)
            self.sessions[sid] = session
            try:
                backend.start(_BackendSink(self, backend))
            except BaseException:
                del self.sessions[sid]
                if not any(s.backend is backend for s in self.sessions.values()):
                    self.backends.pop(backend.name, None)
                self._refresh()
                raise
            session.set_active(True)
            self._refresh()
            # Scopes entered before start(): their kernels land under them too.
            self.remark(self.shadow.thread())
            return sid

    def sessions_for(self, sid: int | None) -> list[Session]:
        return list(self.sessions.values()) if sid is None else [self.session(sid)]

    def activate(self, sid: int | None) -> None:
        with self._lock:
            for s in self.sessions_for(sid):
                s.set_active(True)
            self._refresh()

    def deactivate(self, sid: int | None, flushing: bool) -> None:
        with self._lock:
            sessions = self.sessions_for(sid)
            if flushing:
                self._flush(sessions)
            for s in sessions:
                s.set_active(False)
            self._refresh()

    def _flush(self, sessions: list[Session]) -> None:
        for b in {id(s.backend): s.backend for s in sessions}.values():
            b.flush()
        for s in sessions:
            s.mark_flushed()

    def finalize(self, sid: int | None, fmt: str) -> list[str]:
        """Flushes, writes and removes the sessions; returns the files written."""
        with self._lock:
            sessions = self.sessions_for(sid)
            if sid is None and self.cli_session is not None:
                sessions = [s for s in sessions if s.id != self.cli_session]
            for s in sessions:
                s.check_format(fmt)
            self._flush(sessions)
            written = []
            try:
                for s in sessions:
                    written += self.write(s, fmt)
            finally:
                for s in sessions:
                    s.set_active(False)
                    del self.sessions[s.id]
                self._after_removal()
            return written

    def finalize_at_exit(self) -> None:
        """At interpreter exit, writes the sessions the program never finalized (it raised, or
        forgot): profile data is not lost silently. One line on stderr says where each went."""
        if not self.sessions or self.cli_session is not None:
            return
        try:
            written = self.finalize(None, "")
        except Exception as e:  # noqa: BLE001  (exit must go on; say why nothing was written)
            print(f"lepton: error: could not write the profile at exit: {e}", file=sys.stderr)
            return
        for path in written:
            if path != "-":
                print(f"lepton: finalize() was not called; profile written at exit to {path}",
                      file=sys.stderr)

    def discard(self, sid: int) -> None:
        """Ends a session without writing it (a start that failed half-way)."""
        with self._lock:
            session = self.sessions.pop(sid, None)
            if session is not None:
                session.set_active(False)
                self._after_removal()

    def _after_removal(self) -> None:
        """Sessions were removed: stop unused backends, forget scope stacks once none is left."""
        self._release_backends()
        if not self.sessions:
            self.shadow.reset()
            self.python_timeline.reset()
        self._refresh()

    def _release_backends(self) -> None:
        used = {id(s.backend) for s in self.sessions.values()}
        for name, b in list(self.backends.items()):
            if id(b) not in used:
                b.stop()
                del self.backends[name]

    def profile_of(self, session: Session, phase: int) -> Profile:
        session.snapshot()
        data = session.phases.get(phase)
        if data is None:
            raise UsageError(f"Phase {phase} has no data.")
        devices = {}
        backend = session.backend
        for did in self._device_ids(data):
            info = backend.device_info(did)
            if info is not None:
                devices.setdefault(backend.device_type, {})[did] = info
        return Profile(self.paths, data, devices, session.dropped_records)

    @staticmethod
    def _device_ids(data) -> set[int]:
        if hasattr(data, "kernels") and isinstance(data.kernels, dict):
            return {k.device_id for k in data.kernels.values()}
        return set(data.kernels()["device_id"].tolist())

    def write(self, session: Session, fmt: str) -> list[str]:
        fmt = session.check_format(fmt)
        out = []
        for phase in sorted(session.phases):
            suffix = "" if session.phase == 0 else f".part_{phase}"
            out.append(writers.write(self.profile_of(session, phase), session.path, fmt, suffix))
        return out

    # -- kernels --------------------------------------------------------------------------------------
    def ingest(self, backend: Backend, batch: KernelBatch) -> None:
        """Attributes a batch to every session of `backend`. Called from the backend's thread."""
        sessions = [s for s in list(self.sessions.values()) if s.backend is backend]
        if not sessions or not len(batch):
            return
        by_parents: dict[int, tuple] = {}  # python-context sessions may see other parents
        for s in sessions:
            view = batch
            if s.context == "python" and batch.python_parent_path is not None:
                view = dataclasses.replace(batch, parent_path=batch.python_parent_path)
            paths_of = by_parents.get(id(view.parent_path))
            if paths_of is None:
                paths_of = by_parents[id(view.parent_path)] = (view, *kernel_paths(self.paths, view))
            s.ingest(*paths_of)

    def report_dropped(self, backend: Backend, count: int, reason: str) -> None:
        if count <= 0:
            return
        for s in list(self.sessions.values()):
            if s.backend is backend:
                s.dropped_records += count
        print(f"lepton: warning: {count} {reason} activity records were dropped (buffers full); "
              "the profile is missing them and says so in its metadata", file=sys.stderr)

    # -- scopes (hot path) -----------------------------------------------------------------------------
    def mark(self, t, path_id: int) -> None:
        """Thread `t` (the calling thread's state) is in `path_id` from now on: one mark on its
        time line while a backend reads them (`timeline`). `scope` inlines this (a call costs as
        much as the mark)."""
        clock = self.mark_clock
        if clock is not None:
            marks = t.marks
            marks.append(clock())
            marks.append(path_id)

    def remark(self, t) -> None:
        """Marks the thread's effective path (after its state changed, or at start)."""
        self.mark(t, self.shadow.effective(t, t.stack[-1]))

    def init_thread(self):
        """The calling thread's first scope: creates its state (inheriting the main thread's stack,
        which its launches then land under)."""
        t = self.shadow.thread()
        if len(t.stack) > 1:
            self.remark(t)
        return t

    def enter(self, name: str, python: bool = True) -> int:
        """Pushes scope `name` on the calling thread; returns its stack path id. (`scope` inlines
        the common case of this; keep the two in step.) `python=False`: the caller gives a
        python-context session the scope's node itself (`scope` does, from the entering frame)."""
        t = getattr(self.shadow.local, "thread", None)
        if t is None:
            t = self.init_thread()
        stack = t.stack
        parent = stack[-1]
        pid = self.paths.child(parent, name)
        stack.append(pid)
        eff = self.shadow.effective(t, pid)
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
        t = self.shadow.thread()
        stack = t.stack
        if pid is not None and stack[-1] != pid and self.shadow.close_ended(pid):
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

    def effective(self, pid: int) -> int:
        return self.shadow.effective(self.shadow.thread(), pid)

    def add_metrics(self, pid: int, metrics: dict) -> None:
        """Adds user metrics to the scope `pid` (stack path) in every active session."""
        active = self.active
        if not active:
            return
        eff = self.effective(pid)
        py = python_path(self.paths) if self.python_sessions else None
        for s in active:
            s.add_metrics(py if s.context == "python" else eff, metrics)

    def _enter_op(self, t, name: str, metrics: tuple | None, properties: dict | None) -> tuple[int, tuple]:
        """A kernel launch is about to happen on thread `t` under the op node `name` (launch
        hook): the node is created, gets the launch's metrics (`((name, value), ...)`, plain
        numbers or tuples), and the kernel will land on it. Returns `(op, counters)`: `next()` on
        each counter counts a repeat of this launch (same op, same metrics) in an active session."""
        base = python_path(self.paths) if self.python_sessions else self.shadow.effective(t, t.stack[-1])
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
            key = (op, metrics)
            counters = tuple(s.launch_counter(key) for s in self.active)
        if properties and op not in self.ops_with_properties:
            done = self.ops_with_properties
            for s in self.active:
                s.set_properties_once(op, properties)
            done.add(op)
        self.mark_next_launch(t, op)
        return op, counters

    def mark_next_launch(self, t, op: int) -> None:
        """Thread `t`'s next launch is in `op` (a hooked launch's node), the launches after it in
        the thread's own path: a one-shot pair on its time line (`collect.timeline`), so that no
        mark is needed once the launch is made."""
        clock = self.mark_clock
        if clock is not None:
            now = clock()
            t.marks.extend((now, ~op, now, self.shadow.effective(t, t.stack[-1])))

    def enter_transient_state(self, names: tuple[str, ...]):
        """Sets the thread's state for a short region (launch-metadata evaluation); returns a token
        for `exit_transient_state` or `op_after_transient_state`."""
        t = getattr(self.shadow.local, "thread", None)
        if t is None:
            t = self.init_thread()
        previous = t.state
        t.state = names
        self.remark(t)
        return previous

    def exit_transient_state(self, previous) -> None:
        t = self.shadow.thread()
        t.state = previous
        self.remark(t)

    def op_after_transient_state(self, previous, name: str, metrics: tuple | None = None,
                                 properties: dict | None = None) -> tuple[int, tuple]:
        """`exit_transient_state(previous)` then `_enter_op(...)`: the hook's path from the
        metadata evaluation to the launch, with one thread lookup and one mark."""
        t = self.shadow.local.thread
        t.state = previous
        try:
            return self._enter_op(t, name, metrics, properties)
        except BaseException:  # e.g. a metric whose type changed: the thread leaves the state
            self.remark(t)
            raise

    def record_scope_event(self, pid: int, start_ns: int, end_ns: int, scope_id: int,
                           metrics: dict | None) -> None:
        t = self.shadow.thread()
        # One event shared by the trace sessions: events are never changed once made.
        event = ScopeEvent(self.shadow.effective(t, pid), start_ns, end_ns, t.lane, scope_id, metrics)
        for s in self.tracing:
            s.add_scope_event(event)

    # -- states ----------------------------------------------------------------------------------------
    def set_state(self, names: tuple[str, ...] | None) -> None:
        """Sets (or clears, with None) the calling thread's state slot. Not a stack: Proton's
        semantics, where an inner state overwrites the outer and exiting clears the slot."""
        if not self.live:
            return
        t = self.shadow.thread()
        t.state = names
        self.remark(t)

    def depth(self) -> int:
        return len(self.shadow.thread().stack) - 1


RUNTIME = Runtime()

