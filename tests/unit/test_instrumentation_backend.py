"""The instrumentation backend's queue: launches of a kernel decoded in one batch, each delivered
on its own call path (numpy buffers stand for the device's)."""
import json
from pathlib import Path

import numpy as np
import pytest

from instrumentation_buffers import deliver, enqueue, placed

from lepton.backends.instrumentation.arena import ScratchArena
from lepton.backends.instrumentation.backend import (
    QUEUE_LAUNCHES,
    SUMS_BYTES,
    InstrumentationBackend,
    InstrumentedKernel,
    _Launch,
    queue_bound,
)
from lepton.backends.instrumentation.decode import decode_launch

DATA = Path(__file__).resolve().parents[2] / "tests" / "data" / "instrumentation"


class Sink:
    def __init__(self, trace=True):
        self.got = []  # (launch decoded on the host, its launch_ns)
        self.summed = []  # SummedLaunches, one per piece summed on the device
        self.trace = trace

    def wants_intervals(self):
        return self.trace

    def ingest_cycles(self, launches, launch_ns):
        self.got.extend(zip(launches, launch_ns))

    def ingest_summed(self, summed):
        self.summed.append(summed)

    def launches(self):
        return len(self.got) + sum(len(s) for s in self.summed)

    def internal(self):
        import contextlib

        return contextlib.nullcontext()


def kernel(name):
    meta = json.loads((DATA / f"{name}.json").read_text())
    raw = np.fromfile(DATA / f"{name}.bin", np.uint8)
    return raw, InstrumentedKernel(meta["name"], meta["profile_scratch_size"], meta["num_warps"],
                                   dict(map(tuple, meta["scope_id_names"])), dict(map(tuple, meta["scope_id_parents"])))


def test_each_launch_of_a_batch_reaches_the_sessions_with_its_path_and_its_own_events():
    raw, k = kernel("load_store")
    later = raw.copy().reshape(4, -1)
    later[:, 16:24].view(np.uint64)[:, 0] += 1_000
    backend, sink = InstrumentationBackend(), Sink()
    backend.sink = sink
    batch = [placed(backend, raw, 0, k, 7, ("ROOT", "a"), 100),
             placed(backend, later.reshape(-1), 0, k, 9, ("ROOT", "b"), 200)]
    deliver(backend, k, batch)
    assert [(c.kernel_pid, c.call_path, ns) for c, ns in sink.got] == [(7, ("ROOT", "a"), 100), (9, ("ROOT", "b"), 200)]
    alone = decode_launch(raw, k.scratch_size, k.num_units)
    for cycles, _ in sink.got:
        assert np.array_equal(cycles.events.start_cycle, alone.start_cycle)
        assert cycles.events.num_ctas == 4 and cycles.scope_names == k.scope_names
    assert (sink.got[1][0].events.init_ns - alone.init_ns).tolist() == [1_000] * 4


def test_without_a_trace_session_the_batch_is_summed_where_it_is_and_gives_the_same_sums():
    from lepton.model.cycles import scope_sums

    raw, k = kernel("nested")
    backend, sink = InstrumentationBackend(), Sink(trace=False)
    backend.sink = sink
    batch = [placed(backend, raw, 1, k, 7, ("ROOT", "a"), 100), placed(backend, raw.copy(), 1, k, 9, ("ROOT", "b"), 200)]
    deliver(backend, k, batch)
    want = scope_sums(decode_launch(raw, k.scratch_size, k.num_units))
    (summed,) = sink.summed
    assert sink.got == []
    assert (summed.kernel_pid.tolist(), summed.device_id.tolist(), summed.launch_ns.tolist(), summed.call_paths) \
        == ([7, 9], [1, 1], [100, 200], [("ROOT", "a"), ("ROOT", "b")])
    assert (summed.kernel_name, summed.scope_names, summed.scope_parents) == (k.name, k.scope_names, k.scope_parents)
    for row in range(2):
        have = summed.intervals[row] > 0
        assert [s for s, h in zip(summed.scope_ids, have) if h] == want.scope_ids
        assert summed.cycles[row][have].tolist() == want.cycles and summed.warps[row] == want.warps


def test_the_queue_bound_is_a_sixteenth_of_the_device_at_most_2_gib():
    assert queue_bound(80 << 30) == 2 << 30
    assert queue_bound(16 << 30) == 1 << 30


def test_a_session_adds_launches_summed_on_the_device_as_one_per_path_and_grid_and_skips_inactive_ones():
    import time

    from lepton.model.cycles import SummedLaunches
    from lepton.model.paths import ROOT, PathTable
    from lepton.model.tree import build_tree
    from lepton.runtime.session import Session

    paths = PathTable()
    a, b = paths.extend(ROOT, ["a", "k"]), paths.extend(ROOT, ["b", "k"])
    s = Session(0, "x", "shadow", "tree", backend=None)
    s.set_active(True)
    t_active = time.time_ns()
    s.set_active(False)
    t_inactive = time.time_ns()

    cycles = np.array([100, 300, 64, 50, 999])
    summed = SummedLaunches("k", {0: "load", 1: "store"}, {}, [0, 1], np.stack([cycles, 2 * cycles], 1),
                            np.stack([cycles / 2, cycles], 1).astype(float), np.ones((5, 2), np.int64),
                            np.array([16, 16, 4, 16, 16]), np.array([a, a, a, b, a]), np.zeros(5, np.int64),
                            np.array([t_active] * 4 + [t_inactive]), [("ROOT", "k")] * 5)
    s.add_summed_launches(summed, paths)
    nodes = {tuple(n.name for n in chain): chain[-1].metrics for chain in _chains(build_tree(paths, s.phases[0]))}
    load_a = nodes[("a", "k", "load")]
    cycles = [v for k, v in load_a.items() if getattr(k, "name", k) == "cycles"]
    normalized = [v for k, v in load_a.items() if getattr(k, "name", k) == "normalized_cycles"]
    assert cycles == [100 + 300 + 64] and normalized == [pytest.approx(400 / 16 + 64 / 4)]
    assert [v for k, v in nodes[("b", "k", "store")].items() if getattr(k, "name", k) == "cycles"] == [100]


def _chains(root):
    stack = [(root, ())]
    while stack:
        node, chain = stack.pop()
        for child in node.children.values():
            stack.append((child, (*chain, child)))
            yield (*chain, child)


def test_a_trace_session_gets_every_interval_of_a_one_warp_kernel():
    """Proton's test_trace: num_warps=1 and two nested scopes; the host copy's slots are 76 bytes."""
    from instrumentation_buffers import E, S, launch, slot

    warp = [(S, 0, 100), (S, 1, 120), (E, 1, 180), (E, 0, 200)]
    raw, size = launch([slot([warp], program_id=p, seg_entries=4) for p in range(2)])
    k = InstrumentedKernel("add_kernel", size, 1, {0: "kernel", 1: "load_ops"}, {1: 0})
    backend, sink = InstrumentationBackend(), Sink(trace=True)
    backend.sink = sink
    deliver(backend, k, [placed(backend, raw, 0, k, 7, ("ROOT", "add_kernel"), 100)])
    (cycles, _), = sink.got
    events = cycles.events
    assert sorted(zip(events.cta.tolist(), events.scope.tolist(), (events.end_cycle - events.start_cycle).tolist())) \
        == [(0, 0, 100), (0, 1, 60), (1, 0, 100), (1, 1, 60)]
    assert backend.warnings == []


def test_the_path_counts_give_per_kernel_the_launches_summed_on_the_device_and_those_decoded_on_the_host_and_why():
    from instrumentation_buffers import E, S, launch, slot

    good, size = launch([slot([[(S, 0, 1), (E, 0, 9)]] * 2, seg_entries=2)])
    wrapped, _ = launch([slot([[(S, 0, 1), (E, 0, 2)] * 2, [(S, 0, 1), (E, 0, 9)]], seg_entries=2)])
    k = InstrumentedKernel("k", size, 2, {0: "load"}, {}, buffer="sized to its records")
    other = InstrumentedKernel("other", size, 2, {0: "load"}, {})
    backend, sink = InstrumentationBackend(), Sink(trace=False)
    backend.sink = sink
    assert backend.profile_extras() == {}
    deliver(backend, k, [placed(backend, good, 0, k, 7, ("ROOT",), 1) for _ in range(3)])
    deliver(backend, k, [placed(backend, good, 0, k, 7, ("ROOT",)), placed(backend, wrapped, 0, k, 7, ("ROOT",))])
    deliver(backend, other, [placed(backend, good, 0, other, 8, ("ROOT",), 1)])
    sink.trace = True
    deliver(backend, other, [placed(backend, good, 0, other, 8, ("ROOT",), 1)])
    assert backend.path_counts() == {
        "k": {"buffer": "sized to its records", "device_sums": 3, "host_decoded": {"buffer wrapped": 2}},
        "other": {"buffer": "", "device_sums": 1, "host_decoded": {"trace session": 1}}}
    assert backend.profile_extras() == {"instrumentation_paths": backend.path_counts()}
    assert sink.launches() == 7 and len(sink.got) == 3  # the wrapped batch and the trace's


def test_the_queue_is_decoded_every_queue_launches_launches_however_small_their_buffers():
    """Kernels sized to their records take 0.5-1.5 MB a launch of 4096 blocks: with only the byte
    bound (2 GiB on an H100) 1,400-4,000 launches queued and the arena grew to 2-3 GiB."""
    from instrumentation_buffers import E, S, launch, slot

    raw, size = launch([slot([[(S, 0, 1), (E, 0, 9)]] * 2, seg_entries=2)] * 4)
    k = InstrumentedKernel("k", size, 2, {0: "load"}, {})
    backend, sink = InstrumentationBackend(), Sink(trace=False)
    backend.sink = sink
    arena = backend._arenas[0] = ScratchArena(lambda n: np.zeros(n, np.uint8), first_chunk=1 << 20)
    for i in range(QUEUE_LAUNCHES + 1):
        enqueue(backend, raw, k, 7, ("ROOT",))
        assert sink.launches() == (QUEUE_LAUNCHES if i == QUEUE_LAUNCHES else 0)
    assert arena.reserved == 1 << 20 and arena.handed_out == len(raw)
    assert backend.path_counts()["k"]["device_sums"] == QUEUE_LAUNCHES


def test_a_batch_is_cut_into_pieces_by_the_words_its_warps_wrote_not_by_its_slots(monkeypatch):
    """A scope inside a loop keeps Proton's 8 KiB buffer a CTA and writes a few entries of it: the
    pieces were sized by the whole slot, 4 launches of 4096 blocks each."""
    from instrumentation_buffers import E, S, launch, slot

    from lepton.backends.instrumentation import backend as module

    raw, size = launch([slot([[(S, 0, 1), (E, 0, 9)]] * 4, seg_entries=256)] * 16)
    k = InstrumentedKernel("in_loop", size, 4, {0: "chunk"}, {})
    pieces = []
    monkeypatch.setattr(InstrumentationBackend, "_deliver_piece",
                        lambda self, ops, arena, kernel, batch: pieces.append(len(batch)))
    monkeypatch.setattr(module, "SUMS_BYTES", 16 * 8 * (14 + 4 * 4) * 10)  # ten launches' written words
    backend = InstrumentationBackend()
    deliver(backend, k, [placed(backend, raw, 0, k, 7, ("ROOT",))] * 25)
    assert size == 8320 and pieces == [10, 10, 5]
    assert SUMS_BYTES <= 256 << 20


def test_where_the_device_sums_raise_the_batches_are_decoded_on_the_host_with_one_line(monkeypatch, capsys):
    from lepton.backends.instrumentation import backend as module
    from lepton.model.cycles import scope_sums

    calls = []

    def broken(*args):
        calls.append(args)
        raise RuntimeError("PTX too new for this driver")

    monkeypatch.setattr(module, "batch_sums", broken)
    raw, k = kernel("nested")
    backend, sink = InstrumentationBackend(), Sink(trace=False)
    backend.sink = sink
    for pid in (7, 8):  # the second batch does not try the device again
        deliver(backend, k, [placed(backend, raw.copy(), 0, k, pid, ("ROOT",), 1)])
    assert len(calls) == 1 and sink.summed == []
    want = scope_sums(decode_launch(raw, k.scratch_size, k.num_units))
    assert [scope_sums(launch.events).cycles for launch, _ in sink.got] == [want.cycles] * 2
    assert backend.path_counts()[k.name]["host_decoded"] == {"device sums failed": 2}
    err = capsys.readouterr().err.splitlines()
    assert err == [("lepton: warning: summing scopes on the device failed (RuntimeError: PTX too new for this "
                    "driver); launches are decoded on the host instead, which is slower")]


def test_where_the_process_sees_one_device_a_launch_scratch_is_cut_from_its_arena_without_asking_torch():
    backend = InstrumentationBackend()
    backend._only_device = 3  # what start() sets where torch sees one device
    arena = backend._arenas[3] = ScratchArena(lambda n: np.zeros(n, np.uint8))
    device, address, nbytes = backend.scratch(300)
    assert (device, nbytes) == (3, 300) and len(backend.view(3, address, 300)) == 300 and arena.handed_out == 384
