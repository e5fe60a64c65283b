"""The session registry: which sessions exist, their ids and backends, and the `lepton` CLI's
pinned session.

Every change (start, activate, deactivate, finalize, ...) holds `_lock` and ends by handing the
hot path new views of the sessions (`HotPath.set_sessions`). Backends deliver their kernels here
(`_BackendSink`), from their own thread.
"""
from __future__ import annotations

import atexit
import dataclasses
import functools
import os
import signal
import sys
import threading
from collections.abc import Callable

import numpy as np

from .. import writers
from ..backends.base import Backend, backend_factory, backend_names
from ..errors import PhaseNotFound, SessionNotFound, UsageError
from ..model.aggregate import kernel_paths
from ..model.cycles import SummedLaunches
from ..model.profile import Profile
from ..model.records import CycleLaunch, KernelBatch, PhaseData
from ..model.timeline import ThreadTimelines
from ..progress import progress
from . import checkpoint, exit_signals
from .hot_path import HOT_PATH, HotPath
from .phase_files import PhaseWriter, flushing_format, write_phase
from .session import CONTEXTS, DATA_KINDS, FORMATS, Session


class _BackendSink:
    """What one backend sees of the process (`KernelSink`): called from the backend's thread."""

    def __init__(self, registry: SessionRegistry, backend: Backend) -> None:
        self.registry = registry
        self.backend = backend
        self.paths = registry.hot_path.paths
        self.timeline = registry.hot_path.timeline  # its clock is set at start to the launch records'
        # The path of the calling thread's launch (scopes, state, the launch hook's op), and the tag
        # of Lepton's own graph node it is capturing, if any: for the graph nodes a capture makes.
        self.current_path = registry.hot_path.launch_path
        self.take_graph_tag = registry.hot_path.take_graph_tag
        self.internal = registry.hot_path.internal  # Lepton's own GPU work: in no profile

    def ingest(self, batch: KernelBatch) -> None:
        self.registry.ingest(self.backend, batch)

    def report_dropped(self, count: int, reason: str) -> None:
        self.registry.report_dropped(self.backend, count, reason)

    def ingest_cycles(self, launches: list[CycleLaunch], launch_ns: list[int]) -> None:
        self.registry.ingest_cycles(self.backend, launches, launch_ns)

    def ingest_summed(self, summed: SummedLaunches) -> None:
        self.registry.ingest_summed(self.backend, summed)

    def wants_intervals(self) -> bool:
        """Whether a session of this backend keeps a trace (every interval of every launch)."""
        return any(s.data_kind == "trace" for s in list(self.registry.sessions.values()) if s.backend is self.backend)


def _files_of(path: str, data: str) -> set[str]:
    """The files a session named `path` may write (one per format of its data), folders resolved
    from the current folder; none for stdout."""
    if path in ("", "-"):
        return set()
    try:
        folder, base = os.path.split(os.path.abspath(path))
        base_path = os.path.join(os.path.realpath(folder), base)
    except OSError:  # the current folder was removed: names are compared as written
        base_path = os.path.normpath(path)
    return {writers.output_path(base_path, fmt) for fmt in FORMATS[data]}


_EXIT_ATTEMPTS = 8  # writes at exit tried again after a signal that came before their wait began


def _no_stack_marker(timeline: ThreadTimelines | None, caller_path=None) -> bool:
    return False


class SessionRegistry:
    def __init__(self, hot_path: HotPath) -> None:
        self.hot_path = hot_path
        self.sessions: dict[int, Session] = {}
        self.backends: dict[str, Backend] = {}
        self.next_id = 0
        self._pinned: int | None = None
        # Installs (a time line) or removes (None) the hook that marks the Python stacks of
        # Triton's launches; returns whether it is installed. `hooks.launch` sets it: the hooks
        # sit above the registry.
        self.stack_marker: Callable[..., bool] = _no_stack_marker
        self._lock = threading.RLock()
        self.phase_writer = PhaseWriter()  # periodic flushing's writes, off the launch path
        self._warned: set[str] = set()
        self._exit_hook = False
        self._owner_pid = os.getpid()  # the process whose sessions these are
        # LEPTON_CHECKPOINT_S: the profiles so far, written every N seconds by a thread of its own.
        self.checkpoints = checkpoint.Checkpointer(lambda: list(self.sessions.values()),
                                                   lambda session, data: self.profile_of(session, None, data))
        os.register_at_fork(after_in_child=self._forget_in_child)

    def _forget_in_child(self) -> None:
        """After `os.fork()`, in the child: the parent's sessions are the parent's to write, so the
        child drops them quietly (it writes only the sessions it starts itself)."""
        self._lock = threading.RLock()  # another thread may have held it at the fork
        self.sessions.clear()
        self.backends.clear()
        self._pinned = None
        self.checkpoints.reset_in_child()
        self.hot_path.reset()
        self.hot_path.set_sessions(False, (), None)

    def forked_from_owner(self) -> bool:
        """Whether this process is a child forked from the one that made the registry."""
        return os.getpid() != self._owner_pid

    # -- the CLI's session ------------------------------------------------------------------------
    def pin(self, sid: int | None) -> None:
        """Makes `sid` the `lepton` CLI's session (None: no longer): `start()` joins it, and
        `finalize()` leaves it recording until the script ends."""
        self._pinned = sid

    def pinned_session(self) -> int | None:
        """The CLI's session, while it exists."""
        pinned = self._pinned
        return pinned if pinned is not None and pinned in self.sessions else None

    # -- changes ----------------------------------------------------------------------------------
    def refresh(self) -> None:
        """Hands the hot path the sessions as they are now."""
        live = tuple(self.sessions.values())
        started = [b for b in self.backends.values() if b.started]
        hp = self.hot_path
        mark_clock = hp.timeline.clock if any(b.reads_marks for b in started) else None
        hp.set_sessions(bool(live), tuple(s for s in live if s.active), mark_clock)
        self._set_python_context(started)

    def _set_python_context(self, started: list[Backend]) -> None:
        """Tells each started backend whether a python-context session uses it; where one that
        `reads_triton_stacks` does, Triton's launch hook marks the stacks of Triton's launches."""
        hp = self.hot_path
        python_backends = [b for b in started if any(s.backend is b for s in hp.python_sessions)]
        stacks = None
        if any(b.reads_triton_stacks for b in python_backends):
            hp.python_timeline.clock = hp.timeline.clock
            if self.stack_marker(hp.python_timeline, hp.caller_path):
                stacks = hp.python_timeline
        if stacks is None:
            self.stack_marker(None)
        for b in started:
            on = b in python_backends
            b.set_python_context(on, hp.caller_path, stacks if on and b.reads_triton_stacks else None)

    def session(self, sid: int | None) -> Session:
        """The session `sid`, or SessionNotFound (also for None, which names no one session)."""
        s = self.sessions.get(sid) if sid is not None else None
        if s is None:
            raise SessionNotFound(f"Session has not been initialized: {sid}")
        return s

    def warn_once(self, key: str, message: str) -> None:
        if key not in self._warned:
            self._warned.add(key)
            print(message, file=sys.stderr)

    def _backend(self, name: str, mode: str, backend_mode: str) -> Backend:
        """The backend `name`, made with `backend_mode` if none runs; the sessions of a backend
        share one mode (`mode`, as start() names it), as in Proton."""
        backend = self.backends.get(name)
        if backend is not None:
            running = next((s.mode for s in self.sessions.values() if s.backend is backend), backend.mode)
            if running != mode:
                raise UsageError("Cannot add a session with the same profiler but a different mode than "
                                 f"existing sessions (backend {name!r} runs mode {running!r}, "
                                 f"asked for {mode!r}); finalize those sessions first")
            return backend
        factory = backend_factory(name)
        if factory is None:
            raise UsageError(f"Unknown profiler: {name} (available: {', '.join(backend_names())})")
        backend = factory(backend_mode)
        self.backends[name] = backend
        return backend

    def start(self, path: str, context: str, data: str, backend_name: str, mode: str, hook=None) -> int:
        context, data = context.lower(), data.lower()
        if context not in CONTEXTS:
            raise UsageError(f"Unknown context source: {context} (use one of: {', '.join(CONTEXTS)})")
        if data not in DATA_KINDS:
            raise UsageError(f"Unknown data: {data} (use one of: {', '.join(DATA_KINDS)})")
        interval = checkpoint.interval_from_env()
        with self._lock:
            for s in self.sessions.values():
                if s.path == path:
                    self.activate(s.id)
                    return s.id
            self._check_files_free(path, data)
            flush_format = flushing_format(mode, data)  # the runtime's, not the backend's: see phase_files
            backend = self._backend(backend_name.lower(), mode, "" if flush_format else mode)
            if not self.sessions:
                self.hot_path.threads.set_main_thread()
            if not self._exit_hook:
                atexit.register(self.finalize_at_exit)
                self._exit_hook = True
            sid = self.next_id
            self.next_id += 1
            session = Session(sid, path, context, data, backend, hook, mode, flush_format)
            self.sessions[sid] = session
            try:
                backend.start(_BackendSink(self, backend))
            except BaseException:
                del self.sessions[sid]
                if not any(s.backend is backend for s in self.sessions.values()):
                    self.backends.pop(backend.name, None)
                self.refresh()
                raise
            session.set_active(True)
            self.refresh()
            # Scopes entered before start(): their kernels land under them too.
            self.hot_path.remark(self.hot_path.threads.thread())
            exit_signals.install(self._recording)
            if interval is not None:
                self.checkpoints.start(interval)
            return sid

    def _recording(self) -> bool:
        """Whether this process has a session that a terminating signal would lose."""
        return bool(self.sessions) and not self.forked_from_owner()

    def _check_files_free(self, path: str, data: str) -> None:
        """Two sessions never write one file: the second would silently replace the first."""
        files = _files_of(path, data)
        for s in self.sessions.values():
            shared = files & _files_of(s.path, s.data_kind)
            if shared:
                raise UsageError(f"start({path!r}): session {s.id} (started as {s.path!r}) already writes "
                                 f"{min(shared)}; give this session another name, or finalize session "
                                 f"{s.id} first")

    def sessions_for(self, sid: int | None) -> list[Session]:
        return list(self.sessions.values()) if sid is None else [self.session(sid)]

    def activate(self, sid: int | None) -> None:
        with self._lock:
            for s in self.sessions_for(sid):
                s.set_active(True)
            self.refresh()

    def deactivate(self, sid: int | None, flushing: bool) -> None:
        with self._lock:
            sessions = self.sessions_for(sid)
            if flushing:
                self._flush(sessions)
            for s in sessions:
                s.set_active(False)
            self.refresh()

    def _flush(self, sessions: list[Session], ending: bool = False) -> None:
        """Flushes the sessions' backends; `ending`: the sessions end next, so a backend no other
        session uses gets its last flush."""
        staying = {id(s.backend) for s in self.sessions.values() if s not in sessions}
        for b in {id(s.backend): s.backend for s in sessions}.values():
            b.flush(last=ending and id(b) not in staying)
        # The device values gathered so far: every kernel that writes them has been recorded.
        self.hot_path.tensor_metrics.drain(list(self.sessions.values()))
        for s in sessions:
            self._write_completed(s, s.take_held() + s.mark_flushed())

    def advance_phase(self, sid: int) -> int:
        """Starts session `sid`'s next phase; returns its number. On a backend that records no
        kernels, the phase that ended is complete at once (nothing of it is still to arrive)."""
        with self._lock:
            session = self.session(sid)
            phase = session.advance_phase()
            if not session.backend.records_kernels:
                self._write_completed(session, session.mark_flushed())
            self.refresh()  # the hot path caches the current phase's scope set
            return phase

    def _write_completed(self, session: Session, completed: list) -> None:
        """Hands the phases that periodic flushing writes now to the writer's thread; a phase with
        device values still to read waits for the next flush's drain (`Session.hold`)."""
        for phase, data, beside in completed:
            if self.hot_path.tensor_metrics.waiting_for(session, data):
                session.hold(phase, data, beside)
                continue
            self.phase_writer.submit(functools.partial(write_phase, session, phase, data,
                                                       session.flush_format, not beside, self._profile))

    def finalize(self, sid: int | None, fmt: str) -> list[str]:
        """Flushes, writes and removes the sessions (all but the CLI's, for None); returns the
        files written. A flush that raises still has the profiles written (with what was delivered
        before), then raises. A flush or write that raises still removes them: a session left behind
        would keep its backend and hook for the next `start` (a backend whose decoding failed
        then failed every later session of it too)."""
        with self._lock:
            sessions = self.sessions_for(sid)
            if sid is None:
                sessions = [s for s in sessions if s.id != self.pinned_session()]
            for s in sessions:
                s.check_format(fmt)
            written = []
            failed: list[tuple[Session, Exception]] = []
            flush_error: Exception | None = None
            waited = False
            try:
                # A signal in the middle of the write would lose the profile: it waits (Ctrl-C
                # raises KeyboardInterrupt once the files are written). One that comes before the
                # wait begins leaves the sessions as they were, for the write at exit.
                with exit_signals.deferred(), progress(_writing(sessions)):
                    waited = True
                    self.checkpoints.forget(sessions)  # waits for a checkpoint being written
                    try:
                        self._flush(sessions, ending=True)
                    except Exception as e:  # noqa: BLE001  (raised once what was delivered is written)
                        flush_error = e
                    self.phase_writer.drain()  # phases completed earlier are written first
                    for s in sessions:
                        try:
                            written += self.write(s, fmt)
                        except Exception as e:  # noqa: BLE001  (the others are still written)
                            failed.append((s, e))
            finally:
                if waited:
                    for s in sessions:
                        s.set_active(False)
                        del self.sessions[s.id]
                    self._after_removal()
            if failed:
                for s, e in failed[1:]:
                    print(f"lepton: error: could not write the profile of session {s.id} ({s.path}): {e}",
                          file=sys.stderr)
                raise failed[0][1]
            if flush_error is not None:
                raise flush_error
            return written

    def finalize_at_exit(self) -> None:
        """At interpreter exit, writes the sessions the program never finalized (it raised, or
        forgot): profile data is not lost silently. One line on stderr says where each went. A
        Ctrl-C or SIGTERM that comes before the writes' wait begins leaves the sessions as they
        were: the writes are tried again (the process is ending anyway)."""
        for _ in range(_EXIT_ATTEMPTS):
            try:
                self._finalize_at_exit()
                return
            except (KeyboardInterrupt, SystemExit):
                continue

    def _finalize_at_exit(self) -> None:
        if not self.sessions or self.pinned_session() is not None:
            return
        signum = exit_signals.received[-1] if exit_signals.received else None
        why = "finalize() was not called" if signum is None else f"{signal.Signals(signum).name} received"
        # Each session on its own, so that one that fails does not stop the others; a Ctrl-C or
        # SIGTERM meanwhile waits for the writes (the process is ending anyway).
        with exit_signals.deferred(deliver=False):
            for s in list(self.sessions.values()):
                try:
                    written = self.finalize(s.id, "")
                except Exception as e:  # noqa: BLE001  (exit must go on; say why nothing was written)
                    print(f"lepton: error: could not write the profile of session {s.id} ({s.path}) "
                          f"at exit: {e}", file=sys.stderr)
                    continue
                for path in written:
                    if path != "-":
                        print(f"lepton: {why}; profile written at exit to {path}", file=sys.stderr)

    def discard(self, sid: int) -> None:
        """Ends a session without writing it (a start that failed half-way)."""
        with self._lock:
            session = self.sessions.pop(sid, None)
            if session is not None:
                session.set_active(False)
                self._after_removal()

    def _after_removal(self) -> None:
        """Sessions were removed: stop unused backends, forget scope stacks once none is left."""
        used = {id(s.backend) for s in self.sessions.values()}
        for name, b in list(self.backends.items()):
            if id(b) not in used:
                b.stop()
                del self.backends[name]
        if not self.sessions:
            self.hot_path.reset()
            exit_signals.uninstall()
            self.checkpoints.stop()
        self.refresh()

    # -- output -----------------------------------------------------------------------------------
    def profile_of(self, session: Session, phase: int | None, data: PhaseData | None = None) -> Profile:
        """The profile of one phase of `session`, or of `data` (a copy of a phase's data) if given."""
        if data is None:
            session.snapshot()
            data = session.phases.get(phase)
            if data is None:
                raise PhaseNotFound(session.no_data(phase))
        return self._profile(session, data)

    def _profile(self, session: Session, data) -> Profile:
        """What a writer receives for one phase's data of `session`."""
        devices = {}
        backend = session.backend
        for did in data.device_ids():
            info = backend.device_info(did)
            if info is not None:
                devices.setdefault(backend.device_type, {})[did] = info
        return Profile(self.hot_path.paths, data, devices, session.dropped_records, session.timeline,
                       session.command, backend.profile_extras())

    def write(self, session: Session, fmt: str) -> list[str]:
        """Writes the session's phases, each to its own file once it has advanced a phase (then
        periodic flushing's late kernels beside their phase's first file, in its format)."""
        fmt = session.check_format(fmt)
        out = []
        for phase in sorted(session.phases):
            suffix = "" if session.phase == 0 else f".part_{phase}"
            elsewhere = self.checkpoints.elsewhere(session, writers.output_path(session.path, fmt, suffix))
            if elsewhere is None:
                out.append(writers.write(self.profile_of(session, phase), session.path, fmt, suffix))
            else:  # the checkpoints went there: the profile replaces them, unless its own file works now
                out.append(writers.write_over(self.profile_of(session, phase), session.path, fmt, suffix, elsewhere))
        for phase, data in session.take_unwritten():
            out.append(writers.write(self._profile(session, data), session.path, session.flush_format,
                                     f".part_{phase}", replace=False))
        self.checkpoints.finish(session, out)
        return out

    # -- kernels ----------------------------------------------------------------------------------
    def ingest(self, backend: Backend, batch: KernelBatch) -> None:
        """Attributes a batch to every session of `backend`. Called from the backend's thread."""
        sessions = [s for s in list(self.sessions.values()) if s.backend is backend]
        if not sessions or not len(batch):
            return
        # Every replay of a captured metric's kernel is numbered, counted by a session or not.
        replayed = self.hot_path.tensor_metrics.graphs.announce(batch.replayed_metrics) \
            if batch.replayed_metrics else []
        by_parents: dict[int, tuple] = {}  # python-context sessions may see other parents
        for s in sessions:
            view = batch
            if s.context == "python" and batch.python_parent_path is not None:
                view = dataclasses.replace(batch, parent_path=batch.python_parent_path)
            paths_of = by_parents.get(id(view.parent_path))
            if paths_of is None:
                paths_of = by_parents[id(view.parent_path)] = (view, *kernel_paths(self.hot_path.paths, view))
            self._write_completed(s, s.ingest(*paths_of, replayed))

    def ingest_cycles(self, backend: Backend, launches: list[CycleLaunch], launch_ns: list[int]) -> None:
        """Launches of instrumented kernels decoded on the host, to every session of `backend` that
        was active when each was launched."""
        times = np.asarray(launch_ns, np.int64)
        for s in [s for s in list(self.sessions.values()) if s.backend is backend]:
            s.add_cycle_launches(launches, times, self.hot_path.paths)

    def ingest_summed(self, backend: Backend, summed: SummedLaunches) -> None:
        """Launches of an instrumented kernel summed on the device, as columns, to every session
        of `backend`: each takes those launched while it was active."""
        for s in [s for s in list(self.sessions.values()) if s.backend is backend]:
            s.add_summed_launches(summed, self.hot_path.paths)

    def report_dropped(self, backend: Backend, count: int, reason: str) -> None:
        if count <= 0:
            return
        for s in list(self.sessions.values()):
            if s.backend is backend:
                s.dropped_records += count
        print(f"lepton: warning: {count} {reason} activity records were dropped (buffers full); "
              "the profile is missing them and says so in its metadata", file=sys.stderr)


def _writing(sessions: list[Session]) -> str:
    """The progress line's label of a finalize: the profiles it writes."""
    names = ["stdout" if s.path in ("", "-") else os.path.basename(s.path) for s in sessions]
    return f"lepton: writing {', '.join(names) or 'the profile'}"


REGISTRY = SessionRegistry(HOT_PATH)
