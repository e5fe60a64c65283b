"""Flat, backend-neutral records: what every backend hands to the profiler.

A backend never builds tree nodes itself. It delivers kernels in bulk, as a `KernelBatch` of numpy
columns, to a `KernelSink` (the profiler runtime), which attributes them to sessions and aggregates
them. Keeping the records columnar lets a million kernels cost one `np.unique` and a few
`np.bincount` calls instead of a million Python objects.

Clock: every timestamp (`start_ns`, `end_ns`, `launch_ns`) is in the `time.time_ns()` domain
(nanoseconds since the Unix epoch). A backend whose device clock differs converts before delivery,
so that CPU scopes, session (de)activations and kernels share one time line.
"""
from __future__ import annotations

from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np

UNKNOWN_LAUNCH_NS = -1
"""`launch_ns` value meaning "launch time unknown": the kernel goes to the sessions active when it is
delivered."""


@dataclass
class KernelBatch:
    """Kernels completed on the device, one row per kernel invocation.

    `parent_path[i]` is the call-path id (see `model.paths.PathTable`) of the node the kernel lands
    under; 0 is ROOT. The kernel's own node is the child named `names[name_id[i]]`.
    """

    parent_path: np.ndarray  # int64
    name_id: np.ndarray  # int32 index into `names`
    names: list[str]
    start_ns: np.ndarray  # int64, GPU start
    end_ns: np.ndarray  # int64, GPU end
    launch_ns: np.ndarray  # int64, CPU time of the launch call (UNKNOWN_LAUNCH_NS if unknown)
    device_id: np.ndarray  # int32
    stream_id: np.ndarray  # int32
    correlation_id: np.ndarray | None = None  # int64, the driver's launch correlation id
    device_type: str = "CUDA"
    # Flexible metrics of single launches (launch metadata): correlation id -> {name: value}; a
    # `ChildNode` or `AT_ROOT` key holds a dict of metrics for that node instead.
    launch_metrics: dict[int, dict[str, object]] = field(default_factory=dict)
    # For python-context sessions, when it differs: the parent by the Python stack of the launch.
    python_parent_path: np.ndarray | None = None  # int64
    # When each CUDA graph kernel's node was captured (UNKNOWN_LAUNCH_NS: not a graph kernel, or
    # captured before profiling): a session inactive then does not count its replays.
    capture_ns: np.ndarray | None = None  # int64
    # The kernels of metrics captured into a graph (`runtime.graph_metrics`), in the order the
    # replays ran: `(row, metric, node)`, the node being where the replay puts the metric.
    replayed_metrics: list[tuple[int, Any, int]] = field(default_factory=list)

    def __len__(self) -> int:
        return len(self.start_ns)

    @classmethod
    def from_columns(cls, *, parent_path, names, name_id, start_ns, end_ns, launch_ns=None,
                     device_id=0, stream_id=0, correlation_id=None, device_type="CUDA") -> KernelBatch:
        """Builds a batch from sequences or scalars (scalars are broadcast)."""
        n = len(start_ns)

        def col(v, dtype):
            a = np.asarray(v, dtype=dtype)
            return np.full(n, a, dtype=dtype) if a.ndim == 0 else a

        return cls(
            parent_path=col(parent_path, np.int64), name_id=col(name_id, np.int32), names=list(names),
            start_ns=col(start_ns, np.int64), end_ns=col(end_ns, np.int64),
            launch_ns=col(UNKNOWN_LAUNCH_NS if launch_ns is None else launch_ns, np.int64),
            device_id=col(device_id, np.int32), stream_id=col(stream_id, np.int32),
            correlation_id=None if correlation_id is None else col(correlation_id, np.int64),
            device_type=device_type,
        )


@dataclass(frozen=True)
class ChildNode:
    """A key of a kernel's `launch_metrics` whose value is a dict of metrics for a child node of the
    kernel's node named `name` (instruction sampling's `<dir>/<file>:<line>@<function>` nodes).
    Such a node has no path id: it exists only in the tree of the sessions that got the metrics."""

    name: str


@dataclass(frozen=True)
class AtRoot:
    """A key of a kernel's `launch_metrics` whose value is a dict of metrics for ROOT (run-wide
    facts such as instruction sampling's period)."""


AT_ROOT = AtRoot()


@dataclass(frozen=True)
class DeviceInfo:
    """What the viewer needs to compute a device's peak FLOP/s and bytes/s."""

    arch: str  # "90" on CUDA (major*10+minor), "gfx942" on AMD
    num_sms: int
    clock_rate_khz: int
    memory_clock_rate_khz: int
    bus_width_bits: int


class KernelSink(Protocol):
    """The receiver of a backend's records: the profiler runtime. Thread-safe; may be called from
    a backend's own thread (CUPTI's buffer-completion thread)."""

    timeline: Any  # `model.timeline.ThreadTimelines`: the threads' path marks, by time

    def ingest(self, batch: KernelBatch) -> None: ...

    def report_dropped(self, count: int, reason: str) -> None: ...

    def current_path(self) -> int:
        """The call-path id of the launch the calling thread is making (for callbacks that run on
        that thread, inside the launch call: a graph node being captured)."""
        ...

    def take_graph_tag(self) -> Any:
        """The tag Lepton gave the graph node the calling thread is capturing (its own kernel's:
        `runtime.graph_metrics`), or None; taken, so that the launch's later nodes have none."""
        ...

    def internal(self) -> AbstractContextManager[None]:
        """Lepton's own GPU work on the calling thread: no backend records its kernels."""
        ...


class PhaseData(Protocol):
    """What a session records one phase into: `tree.TreeData` (aggregated per call path) or
    `trace.TraceData` (every event). Each ignores what its kind does not keep."""

    properties_set: set[int] | frozenset  # ops whose kernel properties are recorded

    def add_metrics(self, pid: int, metrics: dict) -> None: ...

    def merged(self, pid: int, metrics: dict) -> tuple[dict, dict]:
        """What `add_metrics` would record, without recording it; raises where it would."""

    def copy(self) -> PhaseData:
        """A copy that later additions to this one do not change."""

    def set_properties_once(self, pid: int, properties: dict) -> None: ...

    def add_scope_event(self, event) -> None: ...

    def add_kernel_batch(self, batch: KernelBatch, kernel_pids, inverse, selected) -> None:
        """The kernels of `batch` where `selected`, on paths `kernel_pids[inverse]`."""

    def add_launch_metrics(self, metrics_by_row: list[tuple[int, dict]]) -> None: ...

    def device_ids(self) -> set[int]: ...

    def add_cycle_launch(self, launch: CycleLaunch, paths) -> None:
        """One decoded launch of an instrumented kernel (`paths`: the `PathTable` its ids are of)."""


_NO_INT = np.zeros(0, np.int64)


@dataclass
class LaunchEvents:
    """One launch of an instrumented kernel, decoded: every paired scope interval, one row each.

    Per interval (int64 arrays of one length): `cta` (program id), `hw_id` (the SM that ran it),
    `unit` (warp), `scope` (scope id), `start_cycle`, `end_cycle` (the SM's clock; `end_cycle` is
    unwrapped past the 43-bit counter, so `end_cycle - start_cycle` is always the duration), and
    `cta_index`, the row of the interval's CTA in the per-CTA arrays.

    Per CTA whose slot decoded (int64 arrays of one length, in slot order): `cta_ids` (program ids),
    `hw_ids`, `init_ns`, `pre_final_ns`, `post_final_ns` (the globaltimer, ns, at the CTA's start,
    before and after it wrote its buffer out).

    `dropped`: events lost because a warp's circular buffer wrapped; `unpaired`: events that formed
    no interval (START after START, END without START, START never closed); `warnings`: one line
    per kind of problem, saying how many and where."""

    cta: np.ndarray = field(default_factory=lambda: _NO_INT)
    hw_id: np.ndarray = field(default_factory=lambda: _NO_INT)
    unit: np.ndarray = field(default_factory=lambda: _NO_INT)
    scope: np.ndarray = field(default_factory=lambda: _NO_INT)
    start_cycle: np.ndarray = field(default_factory=lambda: _NO_INT)
    end_cycle: np.ndarray = field(default_factory=lambda: _NO_INT)
    cta_ids: np.ndarray = field(default_factory=lambda: _NO_INT)
    init_ns: np.ndarray = field(default_factory=lambda: _NO_INT)
    pre_final_ns: np.ndarray = field(default_factory=lambda: _NO_INT)
    post_final_ns: np.ndarray = field(default_factory=lambda: _NO_INT)
    num_units: int = 0
    num_ctas: int = 0
    dropped: int = 0
    unpaired: int = 0
    warnings: list[str] = field(default_factory=list)
    cta_index: np.ndarray = field(default_factory=lambda: _NO_INT)
    hw_ids: np.ndarray = field(default_factory=lambda: _NO_INT)
    slots: np.ndarray = field(default_factory=lambda: _NO_INT)  # each decoded CTA's slot in the buffer

    def __len__(self) -> int:
        return len(self.start_cycle)


@dataclass
class CycleLaunch:
    """A decoded launch with what places it in a profile: the kernel's node (`kernel_pid`, a path
    id), the kernel's scope names and nesting (`scope_parents`: child id -> parent id), and the
    launch's call path from ROOT to the kernel (`call_path`, for the trace's `call_stack`).
    `events` holds every interval; where no session keeps a trace, the backend sums launches on the
    device instead and hands them over as columns (`model.cycles.SummedLaunches`), which a session
    merges into launches whose `events` is None and `sums` a `model.cycles.ScopeSums`."""

    kernel_pid: int
    kernel_name: str
    scope_names: dict[int, str]
    scope_parents: dict[int, int]
    events: LaunchEvents | None
    call_path: tuple[str, ...] = ()
    device_id: int = 0
    sums: Any = None
