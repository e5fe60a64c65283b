"""Sessions: one backend + one context source + one data sink, and the time line of their state.

A session decides which kernels are its own by their launch time: every activate, deactivate and
phase change appends `(time_ns, active, phase)` to its time line, and a batch of kernels is split by
`np.searchsorted` of their launch times into it. So attribution is exact even though records arrive
later, in bulk, on another thread.
"""
from __future__ import annotations

import itertools
import os
import sys
import threading
import time

import numpy as np

from ..errors import UsageError
from ..model.cycles import SummedLaunches
from ..model.metrics import coerce_metric_value, parse_metric_name
from ..model.profile import RunCommand
from ..model.records import UNKNOWN_LAUNCH_NS, KernelBatch, PhaseData
from ..model.trace import ScopeEvent, TraceData
from ..model.tree import TreeData

CONTEXTS = ("shadow", "python")
TIMELINE_ENV = "LEPTON_TRACE_TIMELINE"  # "0": a trace session records kernels only (Triton 3.6's)
DATA_KINDS = ("tree", "trace")
FORMATS = {"tree": ("hatchet", "hatchet_msgpack"), "trace": ("chrome_trace",)}


def _times(value, n: int):
    return [v * n for v in value] if isinstance(value, list) else value * n


def _launch_metrics(batch: KernelBatch, selected: np.ndarray, pid_of_row: np.ndarray) -> list[tuple[int, dict]]:
    """`(path, metrics)` of the selected kernels whose launch carried metrics (by correlation id)."""
    out = []
    for row in np.flatnonzero(selected).tolist():
        metrics = batch.launch_metrics.get(int(batch.correlation_id[row]))
        if metrics:
            out.append((int(pid_of_row[row]), metrics))
    return out


class _LaunchCount:
    """The repeats of one kind of hooked launch: the launch hook calls `next(counter)` per launch,
    with no lock; a fold reads the count with one more `next` (never set back: a launching thread
    may hold the counter), so the reads are subtracted."""

    __slots__ = ("counter", "folded", "reads")

    def __init__(self) -> None:
        self.counter = itertools.count()
        self.reads = 0
        self.folded = 0

    def take(self) -> int:
        """The launches counted since the last `take`."""
        launches = next(self.counter) - self.reads
        self.reads += 1
        new, self.folded = launches - self.folded, launches
        return new


def this_process_command() -> RunCommand:
    """How this process was started: the interpreter and `sys.orig_argv`'s arguments (`python -m
    pkg x`, `python script.py x`), which rerun it; `sys.argv` where orig_argv is missing (< 3.10)."""
    argv = getattr(sys, "orig_argv", None)
    arguments = argv[1:] if argv else sys.argv
    try:
        cwd = os.getcwd()
    except OSError:  # the current folder was removed: start() still works (and writes elsewhere)
        cwd = ""
    return RunCommand((sys.executable or "python", *arguments), cwd)


class Session:
    """One profile being recorded. Thread-safe: `_lock` guards the data and the time line."""

    def __init__(self, sid: int, path: str, context: str, data: str, backend, hook=None, mode: str = "",
                 flush_format: str | None = None) -> None:
        self.id = sid
        self.path = path
        self.context = context
        self.data_kind = data
        self.timeline = data == "trace" and os.environ.get(TIMELINE_ENV, "").strip().lower() not in (
            "0", "false", "off", "no")
        self.backend = backend
        self.hook = hook
        self.active = False
        self.phase = 0
        self.complete_up_to = -1
        self.phases: dict[int, PhaseData] = {0: self._new_data()}
        self.mode = mode  # as start() named it: the sessions of one backend share it, as in Proton
        # Periodic flushing (`runtime.phase_files`): the format each completed phase is written in
        # as it completes (None: phases are written at finalize), the file of each phase written,
        # kernels that arrived for a written phase, and writes that failed, to retry.
        self.flush_format = flush_format
        self.written: dict[int, str] = {}
        self.late: dict[int, PhaseData] = {}
        self.failed: list[tuple[int, PhaseData]] = []
        self.dropped_records = 0
        # What ran this process, for the hatchet file's metadata; the lepton CLI puts its target's
        # command line here instead (its own argv is `lepton ...`).
        self.command: RunCommand | None = this_process_command()
        # Launch metrics counted lock-free on the launch path: (op path, metric items) ->
        # `_LaunchCount` (`next()` on itertools.count is atomic under the GIL).
        self.launch_counts: dict[tuple, _LaunchCount] = {}
        self._times: list[int] = []
        self._active_log: list[bool] = []
        self._phase_log: list[int] = []
        # Replays of metrics captured into CUDA graphs that this session counted, whose values a
        # flush reads: `(phase data, node, metric, ticket)` (`runtime.graph_metrics`).
        self._replayed: list[tuple] = []
        self.held: list[tuple[int, PhaseData, bool]] = []  # completed phases waiting for a drain (`hold`)
        self._lock = threading.Lock()

    def _new_data(self) -> PhaseData:
        return TreeData() if self.data_kind == "tree" else TraceData()

    @property
    def current(self) -> PhaseData:
        return self.phases[self.phase]

    # -- time line ----------------------------------------------------------------------------------
    def _log(self) -> None:
        self._times.append(time.time_ns())
        self._active_log.append(self.active)
        self._phase_log.append(self.phase)

    def set_active(self, active: bool) -> None:
        with self._lock:
            if self.active != active:
                self.active = active
                self._log()

    def advance_phase(self) -> int:
        with self._lock:
            self._fold_pending()
            self.phase += 1
            self.phases[self.phase] = self._new_data()
            self._log()
            return self.phase

    def mark_flushed(self) -> list[tuple[int, PhaseData, bool]]:
        """Every phase before the current one is complete once the backend has flushed (even a
        phase with no kernels, as in Proton). Returns the phases to write (`complete_through`)."""
        with self._lock:
            return self.complete_through(self.phase - 1)

    def complete_through(self, phase: int) -> list[tuple[int, PhaseData, bool]]:
        """Marks every phase up to `phase` complete: none of their kernels is still to arrive.
        With periodic flushing, returns what is to be written now, taken out of the session:
        `(phase, data, beside)` for each completed phase, then for the kernels that arrived after
        their phase was written and for failed writes (`beside`: in a file beside the phase's
        first). Caller holds `_lock`."""
        self.complete_up_to = max(self.complete_up_to, phase)
        if self.flush_format is None:
            return []
        done = sorted(p for p in self.phases if p <= self.complete_up_to and p != self.phase)
        out = [(p, self.phases.pop(p), False) for p in done]
        self.written.update((p, "") for p in done)  # the file's name once it is written
        out += [(p, data, True) for p, data in sorted(self.late.items()) + self.failed]
        self.late, self.failed = {}, []
        return out

    def take_unwritten(self) -> list[tuple[int, PhaseData]]:
        """At finalize: kernels that arrived after their phase was written, and failed writes."""
        with self._lock:
            out = sorted(self.late.items()) + self.failed
            self.late, self.failed = {}, []
            return out

    def phase_written(self, phase: int, path: str) -> None:
        with self._lock:
            self.written[phase] = path

    def keep_unwritten(self, phase: int, data: PhaseData, fresh_file: bool) -> None:
        """A completed phase that could not be written: kept, for the next completion or
        finalize to write."""
        with self._lock:
            if fresh_file:
                self.failed.append((phase, data))
            else:
                self.written.pop(phase, None)
                self.phases[phase] = data

    def no_data(self, phase: int) -> str:
        """Why `phase` has no data, in Proton's words and then Lepton's."""
        if phase > self.phase:
            why = f"session {self.id} is in phase {self.phase}; data.advance_phase() starts the next"
        elif self.written.get(phase):
            why = f"periodic flushing wrote it to {self.written[phase]} and freed it"
        elif phase in self.written:
            why = "periodic flushing is writing it to its file"
        else:
            why = "it was cleared (data.clear)"
        return f"Phase {phase} has no data. ({why})"

    def clear(self, phase: int, up_to: bool) -> None:
        with self._lock:
            self._fold_pending()
            for p in list(self.phases) + list(self.late):
                if p == phase or (up_to and p <= phase):
                    self.phases.pop(p, None)
                    self.late.pop(p, None)
            if self.phase not in self.phases:
                self.phases[self.phase] = self._new_data()

    # -- CPU-side data ------------------------------------------------------------------------------
    def add_metrics(self, pid: int, metrics: dict) -> None:
        with self._lock:
            self.current.add_metrics(pid, metrics)

    def add_metrics_to(self, data: PhaseData, pid: int, metrics: dict) -> None:
        """Adds metrics to a phase that may no longer be the current one: device values read at a
        flush, for the phase they were given in."""
        with self._lock:
            data.add_metrics(pid, metrics)

    def has_replayed(self, data) -> bool:
        """Whether graph metric replays of phase `data` wait for the next drain."""
        with self._lock:
            return any(ticket[0] is data for ticket in self._replayed)

    def hold(self, phase: int, data: PhaseData, beside: bool) -> None:
        """A completed phase whose device values are read at the next flush: written after it."""
        with self._lock:
            self.held.append((phase, data, beside))

    def take_held(self) -> list[tuple[int, PhaseData, bool]]:
        with self._lock:
            held, self.held = self.held, []
            return held

    def take_replayed(self) -> list[tuple]:
        """The graph metric replays counted since the last call (see `_replayed`)."""
        with self._lock:
            replayed, self._replayed = self._replayed, []
            return replayed

    def check_metrics(self, pid: int, metrics: dict) -> None:
        """Raises where `add_metrics` would refuse `metrics`; records nothing."""
        with self._lock:
            self.current.merged(pid, metrics)

    def launch_counter(self, key: tuple) -> itertools.count:
        """One hooked launch with metrics `key = (op, ((name, value), ...))`; returns the counter
        the launch hook advances (`next`) for each later launch of that kind. The first of a kind
        is added at once (so a type mismatch raises here, as in Proton)."""
        count = self.launch_counts.get(key)
        if count is not None:
            next(count.counter)
            return count.counter
        with self._lock:
            self.current.add_metrics(key[0], dict(key[1]))
            return self.launch_counts.setdefault(key, _LaunchCount()).counter

    def _fold_pending(self) -> None:
        """Adds the launches counted since the last fold to the current phase. Caller holds
        `_lock`."""
        data = self.current
        for (op, items), count in self.launch_counts.items():
            repeats = count.take()
            if repeats:
                data.add_metrics(op, {name: _times(coerce_metric_value(parse_metric_name(name).name, v), repeats)
                                      for name, v in items})

    def snapshot(self):
        """The current data with every counted launch folded in (before writing or exporting)."""
        with self._lock:
            self._fold_pending()

    def copy_phases(self) -> tuple[dict[int, PhaseData], int]:
        """A copy of every phase's data as it is now, counted launches folded in, and the current
        phase: what a checkpoint writes while recording goes on. Holds the lock for the copy only."""
        with self._lock:
            self._fold_pending()
            return {phase: data.copy() for phase, data in self.phases.items()}, self.phase

    def set_properties_once(self, pid: int, properties: dict) -> None:
        if pid in self.current.properties_set:  # the common case, without the lock
            return
        with self._lock:
            self.current.set_properties_once(pid, properties)

    def add_scope_event(self, event: ScopeEvent) -> None:
        with self._lock:
            self.current.add_scope_event(event)

    # -- kernels (called from the backend's thread) ---------------------------------------------------
    def _launch_state(self, launch_ns: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Per kernel: was this session active at its launch, and in which phase."""
        times = np.asarray(self._times, dtype=np.int64)
        idx = np.searchsorted(times, launch_ns, side="right") - 1
        idx[launch_ns == UNKNOWN_LAUNCH_NS] = len(times) - 1
        known = idx >= 0
        idx[~known] = 0
        active = np.asarray(self._active_log, dtype=bool)[idx] & known
        phase = np.asarray(self._phase_log, dtype=np.int64)[idx]
        return active, phase

    def _captured_inactive(self, capture_ns: np.ndarray | None) -> np.ndarray | np.bool_:
        """Per kernel: whether it is a CUDA graph's, captured while this session existed but was
        inactive (`deactivate` during the capture): its replays are not counted, as in Proton."""
        if capture_ns is None:
            return np.False_
        known = capture_ns != UNKNOWN_LAUNCH_NS
        times = np.asarray(self._times, dtype=np.int64)
        idx = np.searchsorted(times, capture_ns, side="right") - 1
        existed = known & (idx >= 0)
        return existed & ~np.asarray(self._active_log, dtype=bool)[np.maximum(idx, 0)]

    def ingest(self, batch: KernelBatch, kernel_pids: np.ndarray, inverse: np.ndarray,
               replayed: list[tuple] = ()) -> list[tuple[int, PhaseData, bool]]:
        """Adds the batch's kernels launched while this session was active, each to its phase;
        `replayed`: its graph metric kernels, `(row, metric, ticket, node)` (`runtime.graph_metrics`).
        A kernel of a later phase completes the phases before it, as a CUPTI buffer does in Proton
        (records arrive in launch order but for kernels that overlap); returns what periodic
        flushing writes now (`complete_through`)."""
        with self._lock:
            if not self._times:
                return []
            active, phase = self._launch_state(batch.launch_ns)
            active &= ~self._captured_inactive(batch.capture_ns)
            if not active.any():
                return []
            phases = [self._phase_log[0]] if len(set(self._phase_log)) == 1 else np.unique(phase[active]).tolist()
            for ph in phases:
                data = self.phases.get(ph)
                if data is None and ph in self.written:  # arrived after its phase was written
                    data = self.late.setdefault(ph, self._new_data())
                if data is None:  # cleared by the user
                    continue
                sel = active & (phase == ph)
                data.add_kernel_batch(batch, kernel_pids, inverse, sel)
                if batch.launch_metrics and batch.correlation_id is not None:
                    data.add_launch_metrics(_launch_metrics(batch, sel, kernel_pids[inverse]))
                if self.data_kind == "tree":
                    self._replayed += [(data, node, metric, ticket) for row, metric, ticket, node in replayed
                                       if sel[row]]
            if max(phases) - 1 > self.complete_up_to:
                return self.complete_through(max(phases) - 1)
            return []

    def add_cycle_launches(self, launches: list, launch_ns: np.ndarray, paths) -> None:
        """Launches of an instrumented kernel decoded on the host (`launch.events`), those launched
        while this session was active, each to its phase."""
        with self._lock:
            if not self._times:
                return
            active, phase = self._launch_state(launch_ns)
            for launch, is_active, ph in zip(launches, active.tolist(), phase.tolist()):
                data = self.phases.get(ph)
                if is_active and data is not None:
                    data.add_cycle_launch(launch, paths)

    def add_summed_launches(self, summed: SummedLaunches, paths) -> None:
        """Launches of an instrumented kernel summed on the device, those launched while this
        session was active. Launches that share a phase, a path, a device and a grid are added as
        one (`SummedLaunches.merged`): the tree only adds them up."""
        with self._lock:
            if not self._times:
                return
            active, phase = self._launch_state(summed.launch_ns)
            kept = active & np.isin(phase, list(self.phases))  # a phase the user cleared keeps nothing
            for ph, launch in summed.merged(np.flatnonzero(kept), phase):
                self.phases[ph].add_cycle_launch(launch, paths)

    def check_format(self, fmt: str) -> str:
        fmt = (fmt or FORMATS[self.data_kind][0]).lower()
        if fmt not in FORMATS[self.data_kind]:
            known = ", ".join(FORMATS[self.data_kind])
            raise UsageError(f"Output format {fmt!r} is not supported for data={self.data_kind!r} "
                             f"(use one of: {known})")
        return fmt
