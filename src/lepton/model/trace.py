"""The event store of `data="trace"`: every CPU scope instance and every kernel, not aggregated."""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .records import CycleLaunch


@dataclass(slots=True)  # one per scope instance in a trace: slots make it cheaper to build
class ScopeEvent:
    pid: int  # call path of the scope (state included)
    start_ns: int
    end_ns: int
    lane: int  # CPU thread lane, 0, 1, ... in order of first use
    scope_id: int
    metrics: dict[str, object] | None = None


@dataclass
class TraceData:
    """One phase of one session's trace: every event (`records.PhaseData`). User metrics and
    kernel properties belong to a tree's nodes and are not kept. Not thread-safe: the owning
    session locks."""

    scopes: list[ScopeEvent] = field(default_factory=list)
    # Kernel columns, appended per batch and concatenated on demand.
    _chunks: list[dict[str, np.ndarray]] = field(default_factory=list)
    device_type: str = "CUDA"
    properties_set: frozenset = frozenset()  # a trace records no kernel properties
    cycle_launches: list[CycleLaunch] = field(default_factory=list)  # instrumented launches, in order

    def copy(self) -> TraceData:
        """A copy that later additions to this one do not change (events and kernel chunks are
        never changed once added)."""
        return TraceData(list(self.scopes), list(self._chunks), self.device_type, self.properties_set,
                         list(self.cycle_launches))

    def add_kernels(self, **columns: np.ndarray) -> None:
        if len(columns["pid"]):
            self._chunks.append(columns)

    def add_kernel_batch(self, batch, kernel_pids: np.ndarray, inverse: np.ndarray,
                         selected: np.ndarray) -> None:
        self.device_type = batch.device_type
        self.add_kernels(pid=kernel_pids[inverse[selected]], start_ns=batch.start_ns[selected],
                         end_ns=batch.end_ns[selected], launch_ns=batch.launch_ns[selected],
                         device_id=batch.device_id[selected].astype(np.int64),
                         stream_id=batch.stream_id[selected].astype(np.int64))

    def add_scope_event(self, event: ScopeEvent) -> None:
        self.scopes.append(event)

    def add_metrics(self, pid: int, metrics: dict) -> None:
        pass

    def merged(self, pid: int, metrics: dict) -> tuple[dict, dict]:
        return {}, {}

    def add_launch_metrics(self, metrics_by_row: list[tuple[int, dict]]) -> None:
        pass

    def set_properties_once(self, pid: int, properties: dict) -> None:
        pass

    def add_cycle_launch(self, launch: CycleLaunch, paths) -> None:
        """Keeps the launch whole: the trace shows every interval (`writers.instrumentation_trace`)."""
        self.cycle_launches.append(launch)

    def device_ids(self) -> set[int]:
        return set(self.kernels()["device_id"].tolist()) | {c.device_id for c in self.cycle_launches}

    def kernels(self) -> dict[str, np.ndarray]:
        """All kernels as columns pid, name_pid, start_ns, end_ns, launch_ns, device_id, stream_id."""
        keys = ("pid", "start_ns", "end_ns", "launch_ns", "device_id", "stream_id")
        if not self._chunks:
            return {k: np.zeros(0, np.int64) for k in keys}
        if len(self._chunks) > 1:
            self._chunks = [{k: np.concatenate([c[k] for c in self._chunks]) for k in keys}]
        return self._chunks[0]

