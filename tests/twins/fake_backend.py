"""The test twin of a real backend: kernels are scripted, everything else is the real path.

`FakeBackend` attributes kernels as the CUPTI backend does: `launch()` records the launching thread
and the time on the time line's clock, and each kernel's path is looked up on the threads' time
lines when it is delivered. Kernels are queued like activity records and delivered as one
`KernelBatch` per `flush()`, through the same `KernelSink.ingest` a real backend uses. `emit()`
hands over pre-built batches (benchmarks: a million kernels).

It is also the listener of the stand-in torch (`twins.fake_torch`): its kernels are launches, and
its CUDA graphs' nodes and replays are recorded as CUPTI's graph callbacks and kernel records
report them (capture path, time and tag of each node; each replayed kernel under
`replay/<captured_at>/...`), through the CUPTI backend's `GraphNodePaths`.
"""
from __future__ import annotations

import threading
import time
from typing import ClassVar

import numpy as np

from lepton.backends.base import Backend
from lepton.backends.cupti.graphs import GraphNodePaths, replay_parents, replayed_path
from lepton.model.paths import INTERNAL
from lepton.model.records import UNKNOWN_LAUNCH_NS, DeviceInfo, KernelBatch

# The H200 of the proton-3.6 fixtures, so fake profiles have the same device block.
H200 = DeviceInfo(arch="90", num_sms=132, clock_rate_khz=1_980_000, memory_clock_rate_khz=3_201_000,
                  bus_width_bits=6016)


class FakeBackend(Backend):
    name = "fake"
    modes = ("", "pcsampling")
    reads_marks = True
    instances: ClassVar[list[FakeBackend]] = []  # newest last: how tests reach the running one

    def __init__(self, mode: str = "", devices: dict[int, DeviceInfo] | None = None) -> None:
        super().__init__(mode)
        self.devices = {0: H200} if devices is None else devices
        self._queue: list[tuple] = []
        self._queue_lock = threading.Lock()
        self._correlation = 0
        self.dropped = 0
        self.graphs = GraphNodePaths()
        FakeBackend.instances.append(self)

    def launch(self, name: str, duration_ns: int = 1000, *, device_id: int = 0, stream_id: int = 7,
               start_ns: int | None = None, metrics: dict | None = None, graph_nodes=(0,)) -> int:
        """Records one kernel launched now on the calling thread (a graph launch: one kernel per
        node of `graph_nodes`, `(node id, name)`); returns its correlation id."""
        launch_ns = self.sink.timeline.clock() if self.sink is not None else time.time_ns()
        start = launch_ns + 1000 if start_ns is None else start_ns
        with self._queue_lock:
            self._correlation += 1
            corr = self._correlation
            for i, node in enumerate(graph_nodes):
                node_id, kernel = (0, name) if node == 0 else node
                begin = start + i * (duration_ns + 100)
                self._queue.append((threading.get_native_id(), kernel, begin, begin + duration_ns, launch_ns,
                                    device_id, stream_id, corr, metrics, node_id))
        return corr

    # -- the stand-in torch's listener (`twins.fake_torch.cuda.listener`) -----------------------------
    def launched(self, name: str, node: int | None) -> None:
        """A kernel launched on the calling thread; `node`: the graph node it makes in a capture,
        which CUPTI's GRAPHNODE_CREATED callback reports (nothing runs)."""
        if node is None:
            self.launch(name)
        elif self.sink is not None:
            self.graphs.created(node, self.sink.current_path(), self.sink.timeline.clock(),
                                self.sink.take_graph_tag())

    def replayed(self, nodes: list[tuple[int, str]]) -> None:
        """A graph launched on the calling thread: a kernel record per node, in order."""
        self.launch("graph", graph_nodes=nodes)

    def drop(self, count: int) -> None:
        """Simulates activity records lost to full buffers."""
        self.dropped += count

    def emit(self, batch: KernelBatch) -> None:
        """Delivers a pre-built batch now (the bulk path of a real backend's buffer callback)."""
        if self.sink is not None:
            self.sink.ingest(batch)

    def _do_flush(self) -> None:
        with self._queue_lock:
            queue, self._queue = self._queue, []
        if self.dropped and self.sink is not None:
            self.sink.report_dropped(self.dropped, "fake")
            self.dropped = 0
        if not queue or self.sink is None:
            return
        parents = self.sink.timeline.paths_at(np.asarray([q[0] for q in queue], np.int64),
                                              np.asarray([q[4] for q in queue], np.int64))
        nodes = np.asarray([q[9] for q in queue], np.int64)
        capture, captured_ns, tags = self.graphs.nodes(nodes)
        in_graph = nodes != 0
        capture[~in_graph], captured_ns[~in_graph] = -1, UNKNOWN_LAUNCH_NS
        keep = (parents != INTERNAL) & (capture != INTERNAL)  # Lepton's own kernels, as the collector
        rows = np.flatnonzero(keep)
        queue, parents, capture, captured_ns = [queue[i] for i in rows], parents[rows], capture[rows], captured_ns[rows]
        tags, in_graph = [tags[i] for i in rows], in_graph[rows]
        if not queue:
            return
        names = sorted({q[1] for q in queue})
        index = {n: i for i, n in enumerate(names)}
        cols = list(zip(*queue))
        replayed = sorted((q[2], i, tag, int(parents[i])) for i, (q, tag) in enumerate(zip(queue, tags))
                          if tag is not None)
        parents[in_graph] = replay_parents(self.sink.paths, parents[in_graph], capture[in_graph])
        batch = KernelBatch.from_columns(
            parent_path=parents, names=names, name_id=[index[n] for n in cols[1]], start_ns=cols[2],
            end_ns=cols[3], launch_ns=cols[4], device_id=cols[5], stream_id=cols[6],
            correlation_id=np.asarray(cols[7], dtype=np.int64))
        batch.launch_metrics = {q[7]: q[8] for q in queue if q[8]}
        if in_graph.any():
            batch.capture_ns = captured_ns
            batch.replayed_metrics = [(i, tag, replayed_path(self.sink.paths, replay, tag.target_path))
                                      for _, i, tag, replay in replayed]
        self.sink.ingest(batch)

    def _do_deliver_completed(self) -> None:
        """The fake's kernels complete the moment they are launched: all of them."""
        self._do_flush()

    def _do_stop(self) -> None:
        if self in FakeBackend.instances:
            FakeBackend.instances.remove(self)

    def device_info(self, device_id: int) -> DeviceInfo | None:
        return self.devices.get(device_id)

