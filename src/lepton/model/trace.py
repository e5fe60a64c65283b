"""The event store of `data="trace"`: every CPU scope instance and every kernel, not aggregated."""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np


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
    """Not thread-safe: the owning session locks."""

    scopes: list[ScopeEvent] = field(default_factory=list)
    # Kernel columns, appended per batch and concatenated on demand.
    _chunks: list[dict[str, np.ndarray]] = field(default_factory=list)
    kernel_metrics: dict[int, dict[str, object]] = field(default_factory=dict)  # row -> metrics
    device_type: str = "CUDA"

    def add_kernels(self, **columns: np.ndarray) -> None:
        if len(columns["pid"]):
            self._chunks.append(columns)

    def kernels(self) -> dict[str, np.ndarray]:
        """All kernels as columns pid, name_pid, start_ns, end_ns, launch_ns, device_id, stream_id."""
        keys = ("pid", "start_ns", "end_ns", "launch_ns", "device_id", "stream_id")
        if not self._chunks:
            return {k: np.zeros(0, np.int64) for k in keys}
        if len(self._chunks) > 1:
            self._chunks = [{k: np.concatenate([c[k] for c in self._chunks]) for k in keys}]
        return self._chunks[0]

