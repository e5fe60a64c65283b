"""The instrumentation backend's queue: launches of a kernel decoded in one batch, each delivered
on its own call path (numpy buffers stand for the device's)."""
import json
from pathlib import Path

import numpy as np

from lepton.collect.instrumentation.backend import (
    InstrumentationBackend,
    InstrumentedKernel,
    _Launch,
    queue_bound,
)
from lepton.collect.instrumentation.decode import decode_launch

DATA = Path(__file__).resolve().parents[2] / "tests" / "data" / "instrumentation"


class Sink:
    def __init__(self, trace=True):
        self.got = []
        self.trace = trace

    def wants_intervals(self):
        return self.trace

    def ingest_cycles(self, launch, launch_ns):
        self.got.append((launch, launch_ns))


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
    batch = [_Launch(raw, 0, k, 7, ("ROOT", "a"), 100), _Launch(later.reshape(-1), 0, k, 9, ("ROOT", "b"), 200)]
    backend._deliver(k, batch)
    assert [(c.kernel_pid, c.call_path, ns) for c, ns in sink.got] == [(7, ("ROOT", "a"), 100), (9, ("ROOT", "b"), 200)]
    alone = decode_launch(raw, k.scratch_size, k.num_units)
    for cycles, _ in sink.got:
        assert np.array_equal(cycles.events.start_cycle, alone.start_cycle)
        assert cycles.events.num_ctas == 4 and cycles.scope_names == k.scope_names
    assert (sink.got[1][0].events.init_ns - alone.init_ns).tolist() == [1_000] * 4
    assert all(launch.buffer is None for launch in batch)  # the arena may hand the memory out again


def test_without_a_trace_session_the_batch_is_summed_where_it_is_and_gives_the_same_sums():
    from lepton.model.cycles import scope_sums

    raw, k = kernel("nested")
    backend, sink = InstrumentationBackend(), Sink(trace=False)
    backend.sink = sink
    backend._deliver(k, [_Launch(raw, 0, k, 7, ("ROOT", "a"), 100), _Launch(raw.copy(), 0, k, 7, ("ROOT", "a"), 200)])
    want = scope_sums(decode_launch(raw, k.scratch_size, k.num_units))
    for cycles, _ in sink.got:
        assert cycles.events is None
        assert (cycles.sums.scope_ids, cycles.sums.cycles, cycles.sums.warps) == (want.scope_ids, want.cycles, want.warps)


def test_the_queue_bound_is_a_sixteenth_of_the_device_at_most_2_gib():
    assert queue_bound(80 << 30) == 2 << 30
    assert queue_bound(16 << 30) == 1 << 30
