"""From completed CUPTI buffers to `KernelBatch`es: parse, join, attribute. No ctypes here.

What it joins (by CUPTI correlation id, the id of the launch API call):
- a launch record gives the launch's CPU time (`launch_ns`, which decides the sessions and phase)
  and thread; the `timeline` tells which path that thread was in then: the kernel's parent path.
  Launch records come from three places: CUPTI's API records of the launch calls; the graph
  launches the backend's callback logs (`graph_launches`); and, while launches are told apart by
  time alone (`launch_thread` set, until `api_records_from`), a kernel's own `queued` time, taken
  as a launch of the census's first thread;
- a kernel record gives GPU start/end, device, stream, name; a graph replay's kernels all share the
  `cuGraphLaunch`'s correlation id and carry their graph node id.

The join state is a direct-mapped table indexed by `correlation_id % 2**20`, each slot tagged with
the id it holds, so a kernel finds its launch even when the launch's records were in an earlier
buffer (a graph launched once can complete across several buffers). CUPTI numbers API calls
consecutively, so a slot is overwritten only after 2**20 further calls: far longer than any kernel
stays in flight.
"""
from __future__ import annotations

import dataclasses
import sys
import threading
from collections.abc import Callable

import numpy as np

from ...model.paths import INTERNAL
from ...model.records import UNKNOWN_LAUNCH_NS, KernelBatch, KernelSink
from . import layout, parser
from .clock import ClockMap
from .graphs import GraphNodePaths, replay_parents, replayed_path

PathsAt = Callable[[np.ndarray, np.ndarray], np.ndarray]
"""`(thread ids, CUPTI times) -> path id of each`: `timeline.ThreadTimelines.paths_at`."""

RecordSizer = Callable[[np.ndarray, int, int], int]
"""`(buffer, valid_bytes, offset) -> size in bytes of the record at offset` (0 if unknown):
`cuptiActivityGetNextRecord` in the backend, a table lookup in tests."""

_CALIBRATION_RECORDS = 256  # records stepped through with the sizer per buffer until calibrated
NEVER = (1 << 64) - 1  # a CUPTI time after every other


class Collector:
    """Turns completed activity buffers into kernel batches for `sink`.

    `add_buffer` is called from CUPTI's buffer-completion thread, `process` from it too (when many
    buffers are pending) and from the thread that flushes; `lock` serialises them.
    """

    def __init__(self, sink: KernelSink, resolve_name: Callable[[int], str], paths_at: PathsAt, *,
                 graphs: GraphNodePaths | None = None, record_size: RecordSizer | None = None,
                 clock: ClockMap | None = None, table_bits: int = 20) -> None:
        self.sink = sink
        self.paths_at = paths_at
        self.resolve_name = resolve_name
        self.graphs = graphs if graphs is not None else GraphNodePaths()
        self.record_size = record_size
        self.clock = clock if clock is not None else ClockMap()
        self.lock = threading.RLock()
        self.table = layout.size_table()
        self.calibrated = record_size is None  # True once the kernel stride was checked with CUPTI
        self.pending: list[tuple[np.ndarray, int]] = []
        self.pending_bytes = 0
        self.kernels_delivered = 0  # what a GPU fault's line counts
        self._done: list[tuple[np.ndarray, int]] = []  # parsed (buffer, used bytes), for reuse
        self.invalid_kernels = 0
        # thread id -> start of its latest launch call attributed (CUPTI's clock). Per thread:
        # CUPTI may keep a buffer per thread, so one thread's records can arrive long after a
        # busier thread's later ones.
        self.latest_launch: dict[int, int] = {}
        # Set while kernel records carry their launch call's time (`queued`): a kernel with no API
        # record of its launch is then a launch of `launch_thread()` (None: no thread marked yet)
        # at that time. Those queued since `api_records_from` (CUPTI's clock) wait for their API
        # record until the flush. See `backend.CuptiBackend` for when each holds.
        self.launch_thread: Callable[[], int | None] | None = None
        self.api_records_from = NEVER
        # `correlation id, thread id, time` of each graph launch, appended by the launching thread.
        self.graph_launches: list[int] = []
        self._held: parser.Records | None = None
        self._names: dict[int, str] = {}
        self._mask = (1 << table_bits) - 1
        # Zero means empty, so the tables cost no memory until touched (np.zeros maps lazily):
        # _key holds corr+1, _launch holds the CUPTI launch time (never 0 for a real record).
        self._key = np.zeros(1 << table_bits, np.int64)
        self._path = np.zeros(1 << table_bits, np.int64)
        self._launch = np.zeros(1 << table_bits, np.int64)
        # Python context: the path of the Python stack that made each launch call. The launch
        # callback appends `path << 32 | correlation id` to `launch_stacks` on the launching thread
        # (a list append, cheaper on the launch path than storing into the tables below: see
        # docs/design.md, "The python context"); each parse moves them into the tables in bulk
        # (fixed size: an id's entry lives until 2**table_bits later ids reuse its slot; kept, not
        # taken, since every kernel of a graph launch carries the launch's id).
        self.launch_stacks: list[int] = []
        self._stack_key = np.zeros(1 << table_bits, np.int64)
        self._stack_path = np.zeros(1 << table_bits, np.int64)
        self.python_stacks = False  # set once a launch stack has been stored
        # Python context with Triton's launch hook: `(thread ids, times) -> stack path + 1` (0
        # outside a hooked launch), read for every launch record like `paths_at`. Triton's
        # launches then need no launch callback (two calls into Python each through ctypes).
        self.hooked_stacks_at: PathsAt | None = None
        self._hooked_stack = np.zeros(1 << table_bits, np.int64)
        # Called with each batch before it is delivered, under `lock` (instruction sampling puts
        # its samples on the batch's `launch_metrics` there: `pcsampling.attribute`).
        self.before_ingest: Callable[[KernelBatch], None] | None = None

    # -- intake (CUPTI buffer thread) ----------------------------------------------------------------
    def add_buffer(self, buf: np.ndarray, valid_bytes: int) -> None:
        """Queues a completed buffer. Called from CUPTI's buffer-completion thread."""
        with self.lock:
            self.pending.append((buf, valid_bytes))
            self.pending_bytes += valid_bytes

    def take_parsed_buffers(self) -> list[tuple[np.ndarray, int]]:
        """`(buffer, bytes used)` of the buffers already parsed, for reuse."""
        with self.lock:
            done, self._done = self._done, []
            return done

    # -- processing ------------------------------------------------------------------------------------
    def process(self, flush: bool) -> int:
        """Parses every pending buffer and delivers its kernels; returns how many were delivered.

        With `flush=False` (called from CUPTI's buffer thread while collecting), kernels whose launch
        record has not arrived yet are held for the next call. With `flush=True` (after a device
        synchronize and a CUPTI flush, so every launch record is in) everything is delivered; kernels
        with no launch record go under ROOT with an unknown launch time.
        """
        with self.lock:
            pending, self.pending, self.pending_bytes = self.pending, [], 0
            parts = [self._parse(buf, valid) for buf, valid in pending]
            self._done += pending
            if self._held is not None:
                parts.append(self._held)
                self._held = None
            if not parts:
                return 0
            rec = self._with_launch_records(parser.Records.concat(parts), flush)
            self._store_launch_stacks()  # appended before any record of their kernels was written
            self._remember_launches(rec)
            batch = self._attribute(rec, flush)
            if batch is None or not len(batch):
                return 0
            self.kernels_delivered += len(batch)
            if self.before_ingest is not None:
                self.before_ingest(batch)
        self.sink.ingest(batch)
        return len(batch)

    def _parse(self, buf: np.ndarray, valid: int) -> parser.Records:
        if not self.calibrated:
            self._calibrate(buf, valid)
        parts, pos = [], 0
        while pos < valid:
            records, stop = parser.parse(buf, valid, self.table, pos)
            parts.append(records)
            if stop >= valid or not self._learn_kind_at(buf, valid, stop):
                break
            pos = stop
        return parser.Records.concat(parts)

    def _kind_at(self, buf: np.ndarray, offset: int) -> int:
        return int(buf[offset:offset + 4].view("<u4")[0])

    def _learn_kind_at(self, buf: np.ndarray, valid: int, offset: int) -> bool:
        """The walk stopped at a record of a kind the table lacks: asks CUPTI its size and goes on,
        or gives up on the rest of the buffer (reported as dropped)."""
        kind = self._kind_at(buf, offset)
        size = self.record_size(buf, valid, offset) if self.record_size is not None else 0
        known = 0 < kind < layout.TABLE_LEN - 1 and 0 < size <= valid - offset and size % 8 == 0
        if not known or self.table[kind] == size // 8:
            self.sink.report_dropped(1, "cupti")
            return False
        self.table[kind] = size // 8
        return True

    def _calibrate(self, buf: np.ndarray, valid: int) -> None:
        """Measures the true stride of the first records' kinds with the sizer (CUPTI 13.5 writes
        248-byte Kernel13 records where 13.0 writes 216-byte Kernel10)."""
        offset = 0
        for _ in range(_CALIBRATION_RECORDS):
            if offset >= valid:
                break
            size = self.record_size(buf, valid, offset)
            kind = self._kind_at(buf, offset)
            if size <= 0 or size % 8 or not 0 < kind < layout.TABLE_LEN - 1:
                break
            self.table[kind] = size // 8
            if kind in layout.KERNEL_KINDS:
                self.calibrated = True
                break
            offset += size

    def remember_launch_stack(self, correlation_id: int, path: int) -> None:
        """The launch call `correlation_id` was made from the Python stack `path` (python
        context; called on the launching thread, before its kernels' records exist). The CUPTI
        callback appends to `launch_stacks` itself, as this does."""
        self.launch_stacks.append(path << 32 | correlation_id)

    def _store_launch_stacks(self) -> None:
        """Moves the launch stacks appended since the last parse into the tables."""
        log = self.launch_stacks
        n = len(log)
        if not n:
            return
        packed = np.array(log[:n], np.uint64)
        del log[:n]  # launching threads may append meanwhile: theirs stay, after index n
        corr = (packed & 0xFFFFFFFF).astype(np.int64)
        slot = corr & self._mask
        self._stack_key[slot] = corr + 1  # a later id in the same slot wins (numpy: last write)
        self._stack_path[slot] = (packed >> np.uint64(32)).astype(np.int64)
        self.python_stacks = True

    def _with_launch_records(self, rec: parser.Records, flush: bool) -> parser.Records:
        """`rec` with the launch records that are not CUPTI API records added to its API columns:
        the graph launches logged since the last parse, and the kernels that are their own launch
        record (see `launch_thread`; at a flush, every API record is in: any kernel still without
        one is)."""
        corr, thread, start = [rec.a_corr], [rec.a_thread], [rec.a_start]
        log = self.graph_launches
        n = len(log) - len(log) % 3
        if n:
            graph = np.array(log[:n], np.uint64).reshape(-1, 3)
            del log[:n]  # launching threads may append meanwhile
            corr.append(graph[:, 0].astype(np.uint32))
            thread.append(graph[:, 1].astype(np.uint32))
            start.append(graph[:, 2])
        launch_thread = self.launch_thread
        if launch_thread is not None and len(rec.k_queued):
            queued = rec.k_queued
            own = (queued > 0) & (rec.k_graph_node == 0)  # a graph kernel's `queued` is not its launch's
            if not flush:
                own &= queued < np.uint64(self.api_records_from)
            if own.any():
                kc = rec.k_corr.astype(np.int64)
                slot = kc & self._mask
                own &= (self._key[slot] != kc + 1) & ~np.isin(rec.k_corr, rec.a_corr)
                tid = launch_thread()
                tid = 0xFFFF_FFFF if tid is None else tid  # None: no thread marked, every path is ROOT
                corr.append(rec.k_corr[own])
                thread.append(np.full(int(np.count_nonzero(own)), tid, np.uint32))
                start.append(queued[own])
        if len(corr) == 1:
            return rec
        return dataclasses.replace(rec, a_corr=np.concatenate(corr), a_thread=np.concatenate(thread),
                                   a_start=np.concatenate(start))

    def _remember_launches(self, rec: parser.Records) -> None:
        """Stores each launch's API time and the path its thread was in then in the join table."""
        key, mask = self._key, self._mask
        corr = rec.a_corr.astype(np.int64)
        slot = corr & mask
        key[slot] = corr + 1
        launch = rec.a_start.astype(np.int64)
        self._launch[slot] = launch
        self._path[slot] = self.paths_at(rec.a_thread, launch)  # time lines are on CUPTI's clock
        hooked_stacks_at = self.hooked_stacks_at
        self._hooked_stack[slot] = 0 if hooked_stacks_at is None else hooked_stacks_at(rec.a_thread, launch)
        if len(launch):
            threads = rec.a_thread.astype(np.int64)
            if (threads == threads[0]).all():
                latest = {int(threads[0]): int(launch.max())}
            else:
                order = np.lexsort((launch, threads))  # by thread, then time: last of each run
                last = np.flatnonzero(np.append(threads[order][1:] != threads[order][:-1], True))
                latest = dict(zip(threads[order][last].tolist(), launch[order][last].tolist()))
            for tid, t in latest.items():
                if t > self.latest_launch.get(tid, 0):
                    self.latest_launch[tid] = t

    def _attribute(self, rec: parser.Records, flush: bool) -> KernelBatch | None:
        corr = rec.k_corr.astype(np.int64)
        slot = corr & self._mask
        hit = self._key[slot] == corr + 1
        launch = np.where(hit, self._launch[slot], 0)
        if not flush:
            wait = launch == 0
            if wait.any():
                self._held = _select_kernels(rec, wait)
                keep = ~wait
                rec, corr, slot, hit, launch = _select_kernels(rec, keep), corr[keep], slot[keep], \
                    hit[keep], launch[keep]
        start, end = rec.k_start.astype(np.int64), rec.k_end.astype(np.int64)
        # Proton drops records with start >= end too; CUPTI writes 0 timestamps when it ran out of
        # device memory for them. They are counted as dropped, not silently lost.
        ok = (start > 0) & (end > start)
        n_bad = int(len(ok) - np.count_nonzero(ok))
        if n_bad:
            self.invalid_kernels += n_bad
            self.sink.report_dropped(n_bad, "cupti")
        ok &= ~(hit & (self._path[slot] == INTERNAL))  # Lepton's own (`HotPath.internal`): in no profile
        in_graph = rec.k_graph_node != 0
        if in_graph.any():  # where each graph node was captured, when, and Lepton's own nodes' tags
            graph_rows = np.flatnonzero(in_graph)
            capture, captured_ns, tags = self.graphs.nodes(rec.k_graph_node[graph_rows])
            ok[graph_rows[capture == INTERNAL]] = False  # captured by `HotPath.launching_as(INTERNAL)`
            kept = ok[graph_rows]
            capture, captured_ns = capture[kept], captured_ns[kept]
            tags = [tag for tag, k in zip(tags, kept.tolist()) if k]
        if not ok.all():
            rec, corr, slot, hit, launch = _select_kernels(rec, ok), corr[ok], slot[ok], hit[ok], launch[ok]
            start, end = start[ok], end[ok]
            in_graph = in_graph[ok]
        if not len(corr):
            return None
        parent = np.where(hit, self._path[slot], 0)  # the launching thread's path: scopes, ops
        python_parent = None
        if self.python_stacks or self.hooked_stacks_at is not None:
            # A launch-hook op (made under the Python stack in a python-context session) wins;
            # then the stack the launch callback saw, then the one Triton's hook marked.
            not_op = ~self._are_ops(parent)
            on_stack = (self._stack_key[slot] == corr + 1) & not_op
            python_parent = np.where(on_stack, self._stack_path[slot], parent)
            if self.hooked_stacks_at is not None:
                hooked = np.where(hit, self._hooked_stack[slot], 0)
                use = (hooked > 0) & ~on_stack & not_op
                python_parent = np.where(use, hooked - 1, python_parent)
        to_host = self.clock.to_host
        capture_ns, replayed = None, []
        if in_graph.any():
            replay = parent[in_graph]
            parent[in_graph] = replay_parents(self.sink.paths, replay, capture)
            if python_parent is not None:
                python_parent[in_graph] = replay_parents(self.sink.paths, python_parent[in_graph], capture)
            capture_ns = np.full(len(corr), UNKNOWN_LAUNCH_NS, np.int64)
            capture_ns[in_graph] = np.where(captured_ns != UNKNOWN_LAUNCH_NS, to_host(captured_ns), UNKNOWN_LAUNCH_NS)
            replayed = self._replayed_metrics(np.flatnonzero(in_graph), replay, tags, start)
            self._report_unknown_graphs(rec.k_graph_id[in_graph][capture < 0])
        names, name_id = self._names_of(rec.k_name_ptr)
        return KernelBatch(
            parent_path=parent, name_id=name_id, names=names, start_ns=to_host(start), end_ns=to_host(end),
            launch_ns=np.where(launch != 0, to_host(launch), UNKNOWN_LAUNCH_NS),
            device_id=rec.k_device.astype(np.int32), stream_id=rec.k_stream.astype(np.int32),
            correlation_id=corr, device_type="CUDA", python_parent_path=python_parent,
            capture_ns=capture_ns, replayed_metrics=replayed)

    def _replayed_metrics(self, rows: np.ndarray, replay: np.ndarray, tags: list, start: np.ndarray) -> list:
        """`(row, metric, node)` of the kernels of metrics captured into graphs (their nodes'
        tags), in the order they ran: the node is the metric's own at this replay,
        `replay/<captured_at>/<the metric's capture path>`."""
        found = sorted((int(start[r]), r, tag, p) for r, tag, p in zip(rows.tolist(), tags, replay.tolist())
                       if tag is not None)
        return [(r, tag, replayed_path(self.sink.paths, p, tag.target_path)) for _, r, tag, p in found]

    def _report_unknown_graphs(self, graph_ids: np.ndarray) -> None:
        """One line per graph whose kernels ran but whose nodes were made before profiling
        started (Proton prints the same, once per graph)."""
        for graph_id in self.graphs.newly_unknown(graph_ids):
            print(f"lepton: warning: Cannot find graph for graphExecId: {graph_id}: it was captured before "
                  "profiling started, so its kernels land under the scope of each replay only; to see the "
                  "scopes they were captured in, start profiling before the graph is created",
                  file=sys.stderr)

    def _are_ops(self, paths: np.ndarray) -> np.ndarray:
        """Which of `paths` are launch-hook op nodes."""
        ops = self.sink.paths.ops
        uniq, inverse = np.unique(paths, return_inverse=True)
        return np.fromiter((p in ops for p in uniq.tolist()), bool, len(uniq))[inverse.reshape(-1)]

    def _names_of(self, ptrs: np.ndarray) -> tuple[list[str], np.ndarray]:
        """Kernel names, resolved once per distinct `name` pointer (CUPTI shares one string per
        kernel function across its launches)."""
        uniq, inverse = np.unique(ptrs, return_inverse=True)
        cache = self._names
        names = []
        for p in uniq.tolist():
            name = cache.get(p)
            if name is None:
                name = cache[p] = self.resolve_name(p) if p else "<unknown kernel>"
            names.append(name)
        return names, inverse.reshape(-1).astype(np.int32)


def _select_kernels(rec: parser.Records, sel: np.ndarray) -> parser.Records:
    """The kernel columns of `rec` at `sel`, with no API records."""
    e = parser.Records.empty()
    return parser.Records(
        k_start=rec.k_start[sel], k_end=rec.k_end[sel], k_device=rec.k_device[sel],
        k_stream=rec.k_stream[sel], k_corr=rec.k_corr[sel], k_name_ptr=rec.k_name_ptr[sel],
        k_graph_node=rec.k_graph_node[sel], k_queued=rec.k_queued[sel], k_graph_id=rec.k_graph_id[sel],
        a_corr=e.a_corr,
        a_start=e.a_start, a_thread=e.a_thread)
