"""Parsed CUPTI buffers -> kernel batches: the join of kernel and API records with the threads' time
lines, across buffers, for graph replays, and what is counted as dropped."""
from __future__ import annotations

import functools

import numpy as np
from twins import cupti_activity as synthetic

from lepton.backends.cupti import layout
from lepton.backends.cupti.clock import ClockMap
from lepton.backends.cupti.collector import Collector
from lepton.backends.cupti.graphs import GraphNodePaths
from lepton.model import timeline
from lepton.model.paths import PathTable
from lepton.model.records import UNKNOWN_LAUNCH_NS

CONC, RT, DRV = layout.KIND_CONCURRENT_KERNEL, layout.KIND_RUNTIME, layout.KIND_DRIVER
THREAD = synthetic.THREAD_ID
NAMES = {0x1000: "add_kernel", 0x2000: "_ZN2at6native29vectorized_elementwise_kernel"}


class Sink:
    def __init__(self) -> None:
        self.paths = PathTable()
        self.batches = []
        self.dropped = 0

    def ingest(self, batch) -> None:
        self.batches.append(batch)

    def report_dropped(self, count: int, reason: str) -> None:
        assert reason == "cupti"
        self.dropped += count

    def rows(self) -> list[tuple]:
        """(parent path names, kernel name, start, end, launch, device, stream) of every kernel."""
        out = []
        for b in self.batches:
            for i in range(len(b)):
                out.append(("/".join(self.paths.names_of(int(b.parent_path[i]))), b.names[b.name_id[i]],
                            int(b.start_ns[i]), int(b.end_ns[i]), int(b.launch_ns[i]),
                            int(b.device_id[i]), int(b.stream_id[i])))
        return out


class Marks:
    """A scripted time line: the path each thread is in from which time on."""

    def __init__(self) -> None:
        self.by_thread: dict[int, tuple[list, list]] = {}

    def set(self, thread: int, t: int, path: int) -> None:
        times, paths = self.by_thread.setdefault(thread, ([], []))
        times.append(t)
        paths.append(path)

    def paths_at(self, thread_ids, times):
        marks = {tid: (np.array(t, np.int64), np.array(p, np.int64)) for tid, (t, p) in self.by_thread.items()}
        return timeline.paths_at(marks, thread_ids, times)


def launch(kinds, kernel, api, marks, *, corr, path=0, t, thread=THREAD, name=0x1000, device=0,
           stream=7, api_kind=RT, graph_nodes=None):
    """Appends one launch's API record, made by `thread` at `t` in scope `path` (0: none); returns
    the kernel record(s) to append later, as CUPTI writes them when the kernels complete."""
    marks.set(thread, t - 100, path)
    kinds.append(api_kind)
    api["start"].append(t)
    api["correlation_id"].append(corr)
    api["thread_id"].append(thread)
    pending = []
    for node in graph_nodes or [0]:
        pending.append({"start": t + 1000, "end": t + 3000, "correlation_id": corr, "name": name, "device_id": device,
                        "stream_id": stream, "graph_node_id": node})
    return pending


def add_kernels(kinds, kernel, pending):
    for p in pending:
        kinds.append(CONC)
        for f, v in p.items():
            kernel.setdefault(f, []).append(v)


def empty():
    return [], {}, {"start": [], "correlation_id": [], "thread_id": []}, Marks()


def test_kernels_land_under_the_scope_pushed_at_their_launch_with_times_converted():
    sink = Sink()
    a = sink.paths.extend(0, ["a"])
    ab = sink.paths.extend(a, ["b"])
    kinds, kernel, api, marks = empty()
    p1 = launch(kinds, kernel, api, marks, corr=1, path=a, t=10_000)
    p2 = launch(kinds, kernel, api, marks, corr=2, path=ab, t=20_000, name=0x2000, stream=13)
    p3 = launch(kinds, kernel, api, marks, corr=3, t=30_000)  # outside every scope
    add_kernels(kinds, kernel, p1 + p2 + p3)
    buf = synthetic.pack(kinds, kernel, api)
    col = Collector(sink, NAMES.__getitem__, marks.paths_at, clock=ClockMap.offset(5))
    col.add_buffer(buf, len(buf))
    assert col.process(flush=False) == 3
    assert sink.rows() == [
        ("a", "add_kernel", 11_005, 13_005, 10_005, 0, 7),
        ("a/b", "_ZN2at6native29vectorized_elementwise_kernel", 21_005, 23_005, 20_005, 0, 13),
        ("", "add_kernel", 31_005, 33_005, 30_005, 0, 7),
    ]
    assert sink.batches[0].correlation_id.tolist() == [1, 2, 3]


def test_a_kernel_finds_its_launch_records_in_an_earlier_buffer():
    sink = Sink()
    a = sink.paths.extend(0, ["a"])
    kinds, kernel, api, marks = empty()
    pending = launch(kinds, kernel, api, marks, corr=7, path=a, t=1_000_000)
    first = synthetic.pack(kinds, kernel, api)
    kinds, kernel, api, _ = empty()
    add_kernels(kinds, kernel, pending)
    second = synthetic.pack(kinds, kernel, api)
    col = Collector(sink, NAMES.__getitem__, marks.paths_at)
    col.add_buffer(first, len(first))
    assert col.process(flush=False) == 0
    col.add_buffer(second, len(second))
    assert col.process(flush=False) == 1
    assert sink.rows()[0][:2] == ("a", "add_kernel")


def test_a_kernel_seen_before_its_launch_record_waits_for_it():
    sink = Sink()
    a = sink.paths.extend(0, ["a"])
    kinds, kernel, api, marks = empty()
    pending = launch(kinds, kernel, api, marks, corr=9, path=a, t=50_000)
    kinds_k, kernel_k, _, _ = empty()
    add_kernels(kinds_k, kernel_k, pending)
    kernels_first = synthetic.pack(kinds_k, kernel_k)
    launches_later = synthetic.pack(kinds, kernel, api)
    col = Collector(sink, NAMES.__getitem__, marks.paths_at)
    col.add_buffer(kernels_first, len(kernels_first))
    assert col.process(flush=False) == 0  # held, not guessed
    col.add_buffer(launches_later, len(launches_later))
    assert col.process(flush=False) == 1
    assert sink.rows() == [("a", "add_kernel", 51_000, 53_000, 50_000, 0, 7)]


def test_at_a_flush_kernels_without_a_launch_record_go_to_root_with_an_unknown_launch_time():
    sink = Sink()
    kinds, kernel, _, marks = empty()
    add_kernels(kinds, kernel, [{"start": 100, "end": 200, "correlation_id": 4, "name": 0x1000}])
    buf = synthetic.pack(kinds, kernel)
    col = Collector(sink, NAMES.__getitem__, marks.paths_at)
    col.add_buffer(buf, len(buf))
    assert col.process(flush=False) == 0
    assert col.process(flush=True) == 1
    assert sink.rows() == [("", "add_kernel", 100, 200, UNKNOWN_LAUNCH_NS, 0, 7)]


def timed_kernel(marks, *, corr, path=0, t, thread=THREAD, graph_node=0, queued=None):
    """A kernel record with latency timestamps on: `queued`, a time inside its launch call at `t`
    (the thread was in `path` since just before)."""
    marks.set(thread, t - 100, path)
    return {"start": t + 1000, "end": t + 3000, "correlation_id": corr, "name": 0x1000,
            "graph_node_id": graph_node, "queued": t + 5 if queued is None else queued}


def timing_collector(sink, marks, kinds, kernel, *, api_records_from=None) -> Collector:
    """A collector of kernels that carry their launch time, the first thread's (THREAD), fed the
    kernel records `kinds`/`kernel` as one buffer; API records on since `api_records_from`."""
    col = Collector(sink, NAMES.__getitem__, marks.paths_at)
    col.launch_thread = lambda: THREAD
    if api_records_from is not None:
        col.api_records_from = api_records_from
    buf = synthetic.pack(kinds, kernel)
    col.add_buffer(buf, len(buf))
    return col


def test_with_launch_times_in_kernel_records_no_api_record_is_needed():
    """One marking thread: each kernel's own `queued` time is its launch, on that thread."""
    sink = Sink()
    a, b = sink.paths.extend(0, ["a"]), sink.paths.extend(0, ["b"])
    kinds, kernel, _, marks = empty()
    pending = [timed_kernel(marks, corr=1, path=a, t=10_000), timed_kernel(marks, corr=2, path=b, t=20_000),
               timed_kernel(marks, corr=3, t=30_000)]
    add_kernels(kinds, kernel, pending)
    col = timing_collector(sink, marks, kinds, kernel)
    assert col.process(flush=False) == 3  # none held
    assert [(r[0], r[4]) for r in sink.rows()] == [("a", 10_005), ("b", 20_005), ("", 30_005)]
    assert col.latest_launch == {THREAD: 30_005}


def test_a_graph_kernels_launch_comes_from_the_graph_launch_log_not_its_queued_time():
    """CUPTI leaves the last eager kernel's `queued` in a graph's kernels: it is not their launch."""
    sink = Sink()
    eager, replay = sink.paths.extend(0, ["eager"]), sink.paths.extend(0, ["replay"])
    kinds, kernel, _, marks = empty()
    first = timed_kernel(marks, corr=1, path=eager, t=10_000)
    graph = [timed_kernel(marks, corr=2, path=replay, t=20_000, graph_node=n, queued=10_005) for n in (5, 6)]
    add_kernels(kinds, kernel, [first, *graph])
    col = timing_collector(sink, marks, kinds, kernel)
    col.graph_launches.extend((2, THREAD, 20_000))  # the graph launch callback's log
    assert col.process(flush=False) == 3
    assert [(r[0], r[4]) for r in sink.rows()] == [("eager", 10_005), ("replay", 20_000), ("replay", 20_000)]
    assert col.graph_launches == []


def test_once_api_records_are_on_later_kernels_wait_for_theirs_and_earlier_ones_keep_their_own_time():
    """A second thread marked at t=25_000: from then on launches have API records naming their
    thread; a kernel queued before takes its own time, one queued after waits for its record."""
    sink = Sink()
    a, b = sink.paths.extend(0, ["a"]), sink.paths.extend(0, ["b"])
    kinds, kernel, api, marks = empty()
    before = timed_kernel(marks, corr=1, path=a, t=20_000)
    after = timed_kernel(marks, corr=2, path=b, t=30_000, thread=77)
    add_kernels(kinds, kernel, [before, after])
    col = timing_collector(sink, marks, kinds, kernel, api_records_from=25_000)
    assert col.process(flush=False) == 1
    assert sink.rows()[0][0] == "a"
    kinds, kernel, api, _ = empty()
    kinds.append(RT)
    api["start"].append(30_000)
    api["correlation_id"].append(2)
    api["thread_id"].append(77)
    launches = synthetic.pack(kinds, kernel, api)
    col.add_buffer(launches, len(launches))
    assert col.process(flush=False) == 1
    assert [(r[0], r[4]) for r in sink.rows()] == [("a", 20_005), ("b", 30_000)]


def test_at_a_flush_a_kernel_still_without_its_api_record_takes_its_own_time():
    sink = Sink()
    a = sink.paths.extend(0, ["a"])
    kinds, kernel, _, marks = empty()
    add_kernels(kinds, kernel, [timed_kernel(marks, corr=3, path=a, t=40_000)])
    col = timing_collector(sink, marks, kinds, kernel, api_records_from=25_000)
    assert col.process(flush=False) == 0
    assert col.process(flush=True) == 1
    assert [(r[0], r[4]) for r in sink.rows()] == [("a", 40_005)]


def test_each_launch_takes_the_path_of_its_own_thread_at_its_own_time():
    """Two threads in different scopes, launching alternately; one leaves its scope between two
    launches."""
    sink = Sink()
    a, b = sink.paths.extend(0, ["a"]), sink.paths.extend(0, ["b"])
    kinds, kernel, api, marks = empty()
    pending = launch(kinds, kernel, api, marks, corr=1, path=a, t=1000, thread=11)
    pending += launch(kinds, kernel, api, marks, corr=2, path=b, t=1500, thread=22)
    marks.set(11, 1800, 0)  # thread 11 leaves "a"
    pending += launch(kinds, kernel, api, marks, corr=3, path=b, t=2500, thread=22)
    api["start"].append(2600)  # thread 11 again, no new mark: still outside "a"
    api["correlation_id"].append(4)
    api["thread_id"].append(11)
    kinds.append(RT)
    pending.append({"start": 4000, "end": 5000, "correlation_id": 4, "name": 0x1000, "device_id": 0,
                    "stream_id": 7, "graph_node_id": 0})
    pending += launch(kinds, kernel, api, marks, corr=5, t=3000, thread=33)  # a thread never in a scope
    add_kernels(kinds, kernel, pending)
    buf = synthetic.pack(kinds, kernel, api)
    col = Collector(sink, NAMES.__getitem__, marks.paths_at)
    col.add_buffer(buf, len(buf))
    col.process(flush=True)
    assert [r[0] for r in sink.rows()] == ["a", "b", "b", "", ""]


def test_each_graph_replay_counts_its_own_kernels_under_its_scope_and_the_capture_scopes():
    """Proton 3.6 puts both replays' kernels under the second replay (cudagraph.hatchet: replay0
    empty, replay1 12 kernels); each replay must get its own 6:

        replay0/<captured_at>/iter_{0,1,2}/{add_kernel, mul}   one each
        replay1/<captured_at>/iter_{0,1,2}/{add_kernel, mul}   one each
    """
    sink = Sink()
    graphs = GraphNodePaths()
    nodes = []
    for i in range(3):
        it = sink.paths.extend(0, [f"iter_{i}"])
        for j in range(2):
            captured, instantiated = 100 + 2 * i + j, (1 << 32) | (2 * i + j)
            graphs.created(captured, it)
            graphs.cloned(captured, instantiated)
            nodes.append(instantiated)
    kinds, kernel, api, marks = empty()
    pending = []
    for corr, scope in ((20, "replay0"), (21, "replay1")):
        p = launch(kinds, kernel, api, marks, corr=corr, path=sink.paths.extend(0, [scope]),
                   t=corr * 1000, api_kind=DRV, graph_nodes=nodes)
        for q, node in zip(p, nodes):
            q["name"] = 0x1000 if node % 2 == 0 else 0x2000
        pending += p
    add_kernels(kinds, kernel, pending)
    buf = synthetic.pack(kinds, kernel, api)
    col = Collector(sink, NAMES.__getitem__, marks.paths_at, graphs=graphs)
    col.add_buffer(buf, len(buf))
    assert col.process(flush=True) == 12
    counts = {}
    for parent, name, *_ in sink.rows():
        counts[(parent, name)] = counts.get((parent, name), 0) + 1
    expected = {(f"{r}/<captured_at>/iter_{i}", n): 1 for r in ("replay0", "replay1") for i in range(3)
                for n in NAMES.values()}
    assert counts == expected


def test_replayed_kernels_of_a_graph_captured_before_profiling_land_under_the_replay_scope():
    sink = Sink()
    kinds, kernel, api, marks = empty()
    replay = sink.paths.extend(0, ["replay"])
    pending = launch(kinds, kernel, api, marks, corr=5, path=replay, t=1000, graph_nodes=[77, 78])
    add_kernels(kinds, kernel, pending)
    buf = synthetic.pack(kinds, kernel, api)
    col = Collector(sink, NAMES.__getitem__, marks.paths_at)
    col.add_buffer(buf, len(buf))
    col.process(flush=True)
    assert [r[:2] for r in sink.rows()] == [("replay", "add_kernel")] * 2


def test_kernels_without_timestamps_are_counted_as_dropped():
    """CUPTI writes 0 timestamps when it lacked device memory for them; Proton drops start >= end."""
    sink = Sink()
    kinds, kernel, api, marks = empty()
    p = launch(kinds, kernel, api, marks, corr=1, t=1000)
    p += launch(kinds, kernel, api, marks, corr=2, t=2000)
    p += launch(kinds, kernel, api, marks, corr=3, t=3000)
    p[1]["start"] = p[1]["end"] = 0
    p[2]["end"] = p[2]["start"]
    add_kernels(kinds, kernel, p)
    buf = synthetic.pack(kinds, kernel, api)
    col = Collector(sink, NAMES.__getitem__, marks.paths_at)
    col.add_buffer(buf, len(buf))
    assert col.process(flush=True) == 1
    assert sink.dropped == 2 and col.invalid_kernels == 2


def test_an_unknown_record_kind_is_sized_by_the_sizer_and_stepped_over():
    sink = Sink()
    kinds, kernel, api, marks = empty()
    pending = launch(kinds, kernel, api, marks, corr=1, t=1000)
    kinds.append(1)  # a MEMCPY record (96 bytes) the table does not know
    add_kernels(kinds, kernel, pending)
    buf = synthetic.pack(kinds, kernel, api, sizes={1: 96})
    col = Collector(sink, NAMES.__getitem__, marks.paths_at,
                    record_size=lambda b, valid, off: synthetic.record_size_of(b, off, {1: 96}))
    col.add_buffer(buf, len(buf))
    assert col.process(flush=True) == 1 and sink.dropped == 0
    assert col.table[1] == 96 // 8


def test_without_a_sizer_the_rest_of_the_buffer_after_an_unknown_kind_is_reported_dropped():
    sink = Sink()
    kinds, kernel, api, marks = empty()
    pending = launch(kinds, kernel, api, marks, corr=1, t=1000)
    kinds.append(1)
    add_kernels(kinds, kernel, pending)
    buf = synthetic.pack(kinds, kernel, api, sizes={1: 96})
    col = Collector(sink, NAMES.__getitem__, marks.paths_at)
    col.add_buffer(buf, len(buf))
    assert col.process(flush=True) == 0
    assert sink.dropped == 1


def test_calibration_adopts_the_kernel_stride_cupti_reports():
    """CUPTI 13.5 writes 248-byte kernel records (Kernel13 = Kernel10 + appended fields)."""
    sink = Sink()
    kinds, kernel, api, marks = empty()
    pending = launch(kinds, kernel, api, marks, corr=1, t=1000)
    pending += launch(kinds, kernel, api, marks, corr=2, t=2000)
    add_kernels(kinds, kernel, pending)
    buf = synthetic.pack(kinds, kernel, api, sizes={CONC: 248})
    col = Collector(sink, NAMES.__getitem__, marks.paths_at,
                    record_size=lambda b, valid, off: synthetic.record_size_of(b, off, {CONC: 248}))
    col.add_buffer(buf, len(buf))
    assert col.process(flush=True) == 2
    assert col.table[CONC] == 248 // 8 and col.calibrated


def test_names_are_resolved_once_per_pointer():
    sink = Sink()
    calls = []

    def resolve(p):
        calls.append(p)
        return NAMES[p]

    n = 1000
    kinds, k, a, _, marks = synthetic.launch_stream(n, names=np.where(np.arange(n) % 2, 0x1000, 0x2000))
    bufs = synthetic.split(kinds, k, a, 64 << 10)
    col = Collector(sink, resolve, functools.partial(timeline.paths_at, marks))
    for b in bufs:
        col.add_buffer(b, len(b))
        col.process(flush=False)
    col.process(flush=True)
    assert sorted(calls) == [0x1000, 0x2000]
    assert sum(len(b) for b in sink.batches) == n


def test_a_long_launch_stream_split_into_many_buffers_is_attributed_exactly():
    """The benchmark's shape, smaller: every launch's kernel under its own scope."""
    sink = Sink()
    scopes = np.array([0] + [sink.paths.extend(0, [f"s{i}"]) for i in range(9)])
    n = 20_000
    paths = scopes[np.arange(n) % 10]
    kinds, k, a, (corr, path_truth, _), marks = synthetic.launch_stream(n, paths=paths, lag=300)
    bufs = synthetic.split(kinds, k, a, 256 << 10)
    assert len(bufs) > 10
    col = Collector(sink, NAMES.get, functools.partial(timeline.paths_at, marks))
    for b in bufs:
        col.add_buffer(b, len(b))
        col.process(flush=False)
    col.process(flush=True)
    got_corr = np.concatenate([b.correlation_id for b in sink.batches])
    got_parent = np.concatenate([b.parent_path for b in sink.batches])
    order = np.argsort(got_corr)
    assert got_corr[order].tolist() == corr.tolist()
    assert got_parent[order].tolist() == path_truth.tolist()


def test_external_correlation_records_interleaved_by_another_client_are_stepped_over():
    """torch.profiler turns EXTERNAL_CORRELATION on for the process; its records, one before each
    API record, must neither stop the walk nor be taken for launches."""
    sink = Sink()
    kinds, kernel, api, marks = empty()
    pending = []
    for i in range(4):
        kinds.append(layout.KIND_EXTERNAL_CORRELATION)
        pending += launch(kinds, kernel, api, marks, corr=i + 1, path=sink.paths.child(0, f"s{i}"),
                          t=1000 * (i + 1))
        if i % 2:
            add_kernels(kinds, kernel, pending)
            pending = []
    buf = synthetic.pack(kinds, kernel, api)
    col = Collector(sink, NAMES.__getitem__, marks.paths_at)  # no sizer: the table must know them
    col.add_buffer(buf, len(buf))
    assert col.process(flush=True) == 4 and sink.dropped == 0
    assert [r[0] for r in sink.rows()] == ["s0", "s1", "s2", "s3"]


def test_python_context_stacks_reach_every_kernel_of_their_launch_and_no_other():
    sink = Sink()
    kinds, kernel, api, marks = empty()
    scope = sink.paths.child(0, "scope")
    stack = sink.paths.child(0, "file.py:3@main")
    pending = launch(kinds, kernel, api, marks, corr=1, path=scope, t=1000, graph_nodes=[0])
    pending += launch(kinds, kernel, api, marks, corr=2, path=scope, t=2000, graph_nodes=[0])
    col = Collector(sink, NAMES.__getitem__, marks.paths_at)
    col.remember_launch_stack(2, stack)
    col.remember_launch_stack(2 + (1 << 20), stack)  # a later id in the same slot: not id 2's
    col.remember_launch_stack(1 + (1 << 21), stack)  # nor id 1's
    add_kernels(kinds, kernel, pending)
    buf = synthetic.pack(kinds, kernel, api)
    col.add_buffer(buf, len(buf))
    assert col.process(flush=True) == 2
    assert python_parents(sink) == ["scope", "scope"]
    col.remember_launch_stack(3, stack)
    kinds, kernel, api, _ = empty()
    pending = launch(kinds, kernel, api, marks, corr=3, path=scope, t=3000, graph_nodes=[0])
    add_kernels(kinds, kernel, pending)
    add_kernels(kinds, kernel, pending)  # the same launch's second kernel (as in a graph)
    buf = synthetic.pack(kinds, kernel, api)
    col.add_buffer(buf, len(buf))
    assert col.process(flush=True) == 2
    assert python_parents(sink)[2:] == ["file.py:3@main", "file.py:3@main"]
    assert [r[0] for r in sink.rows()] == ["scope"] * 4  # shadow sessions keep the scope


def python_parents(sink) -> list[str]:
    return ["/".join(sink.paths.names_of(int(p))) for b in sink.batches for p in b.python_parent_path]


def _replays_of(sink, graphs, captured: dict[int, tuple], replays=(("replay0", 20), ("replay1", 21))):
    """Buffers of two replays of a graph whose nodes `captured` (node id -> (capture path, time,
    tag)) were made while profiling, processed: `(collector, stderr lines)` with the batches in
    `sink`."""
    for node, (path, t, tag) in captured.items():
        graphs.created(node, path, t, tag)
    kinds, kernel, api, marks = empty()
    pending = []
    for scope, corr in replays:
        pending += launch(kinds, kernel, api, marks, corr=corr, path=sink.paths.extend(0, [scope]),
                          t=corr * 1000, api_kind=DRV, graph_nodes=list(captured))
    for i, p in enumerate(pending):
        p["start"] += i  # one after another, in node order
    add_kernels(kinds, kernel, pending)
    buf = synthetic.pack(kinds, kernel, api)
    col = Collector(sink, NAMES.__getitem__, marks.paths_at, graphs=graphs, clock=ClockMap.offset(1_000_000))
    col.add_buffer(buf, len(buf))
    col.process(flush=True)
    return col


def test_graph_kernels_carry_their_capture_time_and_lepton_own_captured_kernels_are_dropped():
    """A node captured on `INTERNAL` (a tensor metric's bookkeeping) is in no profile; the others
    carry when they were captured, on the host clock, for the sessions' activity then."""
    from lepton.model.paths import INTERNAL

    sink, graphs = Sink(), GraphNodePaths()
    it = sink.paths.extend(0, ["iter"])
    _replays_of(sink, graphs, {7: (it, 500, None), 8: (INTERNAL, 600, None)})
    assert [r[:2] for r in sink.rows()] == [("replay0/<captured_at>/iter", "add_kernel"),
                                            ("replay1/<captured_at>/iter", "add_kernel")]
    assert [b.capture_ns.tolist() for b in sink.batches] == [[1_000_500, 1_000_500]]


def test_a_kernel_captured_under_a_launch_op_is_that_op_at_each_replay():
    """The launch hook's op is the kernel's node (`foo_test`, not `foo_test/add_kernel`), also
    replayed: Proton's `<captured_at>/foo_test` with a count."""
    sink, graphs = Sink(), GraphNodePaths()
    op = sink.paths.op(0, "foo_test")
    _replays_of(sink, graphs, {7: (op, 500, None)})
    (batch,) = sink.batches
    parents = batch.parent_path.tolist()
    assert [sink.paths.names_of(p) for p in parents] == [["replay0", "<captured_at>", "foo_test"],
                                                         ["replay1", "<captured_at>", "foo_test"]]
    assert all(p in sink.paths.ops for p in parents)


def test_the_kernels_of_captured_metrics_announce_each_replay_in_order_with_its_node():
    """A `<metric>` node tagged with its metric: each replay's record gives (row, metric, the node
    the metric goes to at that replay), in the order the replays ran."""
    sink, graphs = Sink(), GraphNodePaths()
    scope = sink.paths.extend(0, ["scope_b"])
    metric_op = sink.paths.op(scope, "<metric>")
    tag = type("Tag", (), {"target_path": scope})()
    _replays_of(sink, graphs, {7: (scope, 500, None), 9: (metric_op, 510, tag)},
                replays=(("r0", 20), ("r1", 21)))
    (batch,) = sink.batches
    announced = [(sink.paths.names_of(int(batch.parent_path[row])), t is tag, sink.paths.names_of(node))
                 for row, t, node in batch.replayed_metrics]
    assert announced == [(["r0", "<captured_at>", "scope_b", "<metric>"], True, ["r0", "<captured_at>", "scope_b"]),
                         (["r1", "<captured_at>", "scope_b", "<metric>"], True, ["r1", "<captured_at>", "scope_b"])]


def test_a_graph_captured_before_profiling_is_reported_once(capfd):
    sink, graphs = Sink(), GraphNodePaths()
    kinds, kernel, api, marks = empty()
    pending = []
    for corr in (5, 6):
        pending += launch(kinds, kernel, api, marks, corr=corr, path=sink.paths.extend(0, ["replay"]),
                          t=corr * 1000, graph_nodes=[77, 78])
    for p in pending:
        p["graph_id"] = 3
    add_kernels(kinds, kernel, pending)
    buf = synthetic.pack(kinds, kernel, api)
    col = Collector(sink, NAMES.__getitem__, marks.paths_at, graphs=graphs)
    col.add_buffer(buf, len(buf))
    col.process(flush=True)
    col.add_buffer(buf.copy(), len(buf))
    col.process(flush=True)
    err = capfd.readouterr().err
    assert err.count("Cannot find graph for graphExecId: 3") == 1
    assert "start profiling before the graph is created" in err
    assert {r[0] for r in sink.rows()} == {"replay"}
