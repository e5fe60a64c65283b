"""Launches summed on the device reach the sessions as arrays (`SummedLaunches`), and each session
merges the rows that share a phase, a path, a device and a grid. The oracle is the path they took
before: one `CycleLaunch` a launch, grouped in a dict by the session and added up by `merge_sums`,
both restated here; every profile below must be byte for byte the one the oracle writes (numpy
buffers stand for the device's)."""
from __future__ import annotations

import dataclasses
import functools
import time

import numpy as np
from instrumentation_buffers import E, S, deliver, enqueue, launch, placed, slot

from lepton.backends.instrumentation.backend import InstrumentationBackend, InstrumentedKernel
from lepton.model.cycles import ScopeSums, SummedLaunches
from lepton.model.paths import ROOT
from lepton.model.profile import Profile
from lepton.model.records import CycleLaunch
from lepton.runtime.hot_path import HotPath
from lepton.runtime.registry import SessionRegistry, _BackendSink
from lepton.runtime.session import Session
from lepton.writers import hatchet

NAMES, PARENTS = {0: "outer", 1: "inner", 2: "other"}, {1: 0}


# -- the oracle: the per-launch path -----------------------------------------------------------------
def per_launch(summed: SummedLaunches) -> list[CycleLaunch]:
    """One `CycleLaunch` a launch, with its own sums, as the backend handed them before."""
    out = []
    for row in range(len(summed)):
        have = (summed.intervals[row] > 0).tolist()
        sums = ScopeSums([s for s, h in zip(summed.scope_ids, have) if h],
                         [c for c, h in zip(summed.cycles[row].tolist(), have) if h],
                         [n for n, h in zip(summed.ns[row].tolist(), have) if h], int(summed.warps[row]))
        out.append(CycleLaunch(int(summed.kernel_pid[row]), summed.kernel_name, summed.scope_names,
                               summed.scope_parents, None, summed.call_paths[row], int(summed.device_id[row]), sums))
    return out


def merge_sums(sums: list[ScopeSums]) -> ScopeSums:
    cycles: dict[int, int] = {}
    ns: dict[int, float] = {}
    for one in sums:
        for sid, c, n in zip(one.scope_ids, one.cycles, one.ns):
            cycles[sid] = cycles.get(sid, 0) + c
            ns[sid] = ns.get(sid, 0.0) + n
    ids = sorted(cycles)
    return ScopeSums(ids, [cycles[i] for i in ids], [ns[i] for i in ids], sums[0].warps)


def add_one_by_one(session: Session, launches: list[CycleLaunch], launch_ns: np.ndarray, paths) -> None:
    """`Session.add_cycle_launches` as it was: summed launches grouped in a dict, in order."""
    active, phase = session._launch_state(np.asarray(launch_ns, np.int64))
    same: dict[tuple, list] = {}
    for one, is_active, ph in zip(launches, active.tolist(), phase.tolist()):
        data = session.phases.get(ph)
        if not is_active or data is None:
            continue
        if one.sums is None:
            data.add_cycle_launch(one, paths)
        else:
            same.setdefault((ph, one.kernel_pid, one.device_id, one.sums.warps), []).append(one)
    for (ph, *_), group in same.items():
        merged = group[0] if len(group) == 1 else \
            dataclasses.replace(group[0], sums=merge_sums([one.sums for one in group]))
        session.phases[ph].add_cycle_launch(merged, paths)


class Recorder:
    """The registry's sink for the backend, keeping every delivery for the oracle to replay."""

    def __init__(self, sink: _BackendSink) -> None:
        self.sink = sink
        self.deliveries: list[tuple[list[CycleLaunch], np.ndarray]] = []
        self.internal = sink.internal

    def wants_intervals(self) -> bool:
        return self.sink.wants_intervals()

    def ingest_cycles(self, launches, launch_ns) -> None:
        self.deliveries.append((launches, np.asarray(launch_ns, np.int64)))
        self.sink.ingest_cycles(launches, launch_ns)

    def ingest_summed(self, summed: SummedLaunches) -> None:
        self.deliveries.append((per_launch(summed), summed.launch_ns))
        self.sink.ingest_summed(summed)


class Bench:
    """A registry with the instrumentation backend, its sessions, and for each an oracle twin that
    goes through the same states at the same moments."""

    def __init__(self) -> None:
        self.registry = SessionRegistry(HotPath())
        self.backend = InstrumentationBackend()
        self.sink = Recorder(_BackendSink(self.registry, self.backend))
        self.backend.sink = self.sink  # type: ignore[assignment]
        self.paths = self.registry.hot_path.paths
        self.twins: list[tuple[Session, Session]] = []

    def session(self) -> tuple[Session, Session]:
        sid = len(self.twins)
        pair = (Session(sid, f"s{sid}", "shadow", "tree", self.backend), Session(sid, f"o{sid}", "shadow", "tree", None))
        self.registry.sessions[sid] = pair[0]
        self.twins.append(pair)
        return pair

    @staticmethod
    def both(pair: tuple[Session, Session], change) -> int:
        """Applies `change` to a session and its twin; returns a launch time after it."""
        for s in pair:
            change(s)
        return time.time_ns()

    def pid(self, *names: str) -> int:
        return self.paths.extend(ROOT, list(names))

    def check(self) -> list[bytes]:
        """Replays every delivery onto the twins; each session's phases must render as its twin's.
        Returns the sessions' renders, phase by phase."""
        for _, twin in self.twins:
            for launches, launch_ns in self.sink.deliveries:
                add_one_by_one(twin, launches, launch_ns, self.paths)
        renders = []
        for s, twin in self.twins:
            assert sorted(s.phases) == sorted(twin.phases)
            for phase in sorted(s.phases):
                got = hatchet.render(Profile(self.paths, s.phases[phase]))
                assert got == hatchet.render(Profile(self.paths, twin.phases[phase])), (s.id, phase)
                renders.append(got)
        return renders


def kernel_buffer(rng: np.random.Generator, ctas: int, scopes: list[int], warps: int = 2,
                  wrapped: bool = False) -> tuple[np.ndarray, int]:
    """A launch's scratch in which every warp closes each of `scopes` once (`outer` around `inner`
    where both are), with random cycles and a globaltimer span that gives each CTA its own rate."""
    slots = []
    for cta in range(ctas):
        events = []
        for _ in range(warps):
            t, warp = int(rng.integers(0, 1_000)), []
            for s in scopes:
                d = int(rng.integers(1, 5_000))
                warp += [(S, s, t), (E, s, t + d)]
                t += d + int(rng.integers(0, 100))
            events.append(warp * (5 if wrapped else 1))  # 5 x 2 x 3 entries pass a segment of 8
        first = min(c for w in events for _, _, c in w)
        last = max(c for w in events for _, _, c in w)
        init = 1_000_000 + int(rng.integers(0, 10_000))
        slots.append(slot(events, program_id=cta, seg_entries=8, init_ns=init,
                          pre_final_ns=init + int((last - first) * rng.uniform(0.4, 0.9))))
    return launch(slots)


def kernel_of(name: str, size: int, warps: int = 2) -> InstrumentedKernel:
    return InstrumentedKernel(name, size, warps, NAMES, PARENTS)


# -- the tests ----------------------------------------------------------------------------------------
def test_two_sessions_with_different_windows_each_merge_only_the_launches_of_their_window():
    rng = np.random.default_rng(1)
    bench = Bench()
    a, b = bench.session(), bench.session()
    bench.both(a, lambda s: s.set_active(True))
    bench.both(b, lambda s: s.set_active(True))
    t_a = bench.both(b, lambda s: s.set_active(False))  # a only
    t_ab = bench.both(b, lambda s: s.set_active(True))  # both
    t_b = bench.both(a, lambda s: s.set_active(False))  # b only
    t_none = bench.both(b, lambda s: s.set_active(False))
    _, size = kernel_buffer(rng, 2, [0, 1, 2])
    k = kernel_of("k", size)
    one, two = bench.pid("step", "k"), bench.pid("other", "k")
    launches = []
    for i, t in enumerate([t_ab, t_a, t_ab, t_b, t_none, t_a, t_ab, t_b, t_ab, t_a]):
        scopes = [[0, 1, 2], [0, 1], [2]][i % 3]  # launches that recorded different scopes
        ctas = 3 if i % 4 == 3 else 2  # two grids
        buffer, _ = kernel_buffer(rng, ctas, scopes)
        launches.append(placed(bench.backend, buffer, i % 2, k, two if i % 5 == 2 else one, ("ROOT", str(i)), t))
    deliver(bench.backend, k, launches)
    assert len(bench.sink.deliveries) == 2 and bench.backend.path_counts()["k"]["device_sums"] == 10  # a device each
    first_a, first_b = bench.check()
    assert first_a != first_b  # each took its own launches
    assert b"outer" in first_a and b"inner" in first_b and b"other" in first_b


def test_launches_of_two_phases_go_each_to_their_phase_whatever_their_order_in_the_batch():
    rng = np.random.default_rng(2)
    bench = Bench()
    s = bench.session()
    t0 = bench.both(s, lambda one: one.set_active(True))
    t1 = bench.both(s, lambda one: one.advance_phase())
    t2 = bench.both(s, lambda one: one.advance_phase())
    _, size = kernel_buffer(rng, 2, [0])
    k = kernel_of("k", size)
    pid = bench.pid("k")
    times = [t1, t0, t1, t0, t2, t0, t1]  # launching threads race: times out of order
    deliver(bench.backend, k, [placed(bench.backend, kernel_buffer(rng, 2, [0, 1])[0], 0, k, pid, ("ROOT", "k"), t)
                               for t in times])
    bench.both(s, lambda one: one.clear(0, up_to=False))  # a phase the user cleared takes nothing more
    deliver(bench.backend, k, [placed(bench.backend, kernel_buffer(rng, 2, [0, 1, 2])[0], 0, k, pid, ("ROOT", "k"), t)
                               for t in (t0, t1, t2)])
    phase1, phase2 = bench.check()
    assert sorted(s[0].phases) == [1, 2] and phase1 != phase2


def test_two_kernels_queued_in_one_batch_each_reach_the_session_on_their_paths():
    rng = np.random.default_rng(3)
    bench = Bench()
    s = bench.session()
    bench.both(s, lambda one: one.set_active(True))
    _, size_k = kernel_buffer(rng, 2, [0, 1])
    _, size_j = kernel_buffer(rng, 3, [2], warps=4)
    k, j = kernel_of("k", size_k), kernel_of("j", size_j, warps=4)
    for i in range(12):
        kernel, (buffer, _) = (k, kernel_buffer(rng, 2, [0, 1])) if i % 3 else (j, kernel_buffer(rng, 3, [2], 4))
        enqueue(bench.backend, buffer, kernel, bench.pid("loop", kernel.name if i % 2 else "odd", kernel.name),
                            ("ROOT", kernel.name))
    bench.backend._decode_queue()
    assert [len(launches) for launches, _ in bench.sink.deliveries] == [4, 8]  # one piece a kernel
    (tree,) = bench.check()
    assert b'"k"' in tree and b'"j"' in tree


def test_launches_summed_on_the_device_and_decoded_on_the_host_add_up_on_the_same_nodes():
    """One of a kernel's batches has a wrapped buffer (decoded on the host, launch by launch), the
    next is summed; another kernel's batch beside them, in one queue."""
    rng = np.random.default_rng(4)
    bench = Bench()
    a, b = bench.session(), bench.session()
    bench.both(a, lambda one: one.set_active(True))
    t = bench.both(b, lambda one: one.set_active(True))
    _, size = kernel_buffer(rng, 2, [0, 1])
    k, other = kernel_of("k", size), kernel_of("other", size)
    pid, other_pid = bench.pid("k"), bench.pid("other")
    host = [placed(bench.backend, kernel_buffer(rng, 2, [0, 1], wrapped=i == 1)[0], 0, k, pid, ("ROOT", "k"), t)
            for i in range(3)]
    deliver(bench.backend, k, host)
    t = bench.both(b, lambda one: one.set_active(False))
    for i in range(4):
        enqueue(bench.backend, kernel_buffer(rng, 2, [0, 1])[0], k, pid, ("ROOT", "k"))
        enqueue(bench.backend, kernel_buffer(rng, 2, [2])[0], other, other_pid, ("ROOT", "other"))
    bench.backend._decode_queue()
    assert [launches[0].events is None for launches, _ in bench.sink.deliveries] == [False, True, True]
    assert bench.backend.path_counts()["k"] == {"buffer": "", "device_sums": 4, "host_decoded": {"buffer wrapped": 3}}
    tree_a, tree_b = bench.check()
    assert b'"other"' in tree_a and b'"other"' not in tree_b


def test_merged_sums_are_added_in_launch_order_so_every_float_is_the_one_by_one_sum():
    """A pairwise sum (numpy's along a contiguous axis) of 1e16 and many 1.0s keeps the ones; a sum
    in launch order loses each of them, as the per-launch path did."""
    n = 40
    ns = np.ones((n, 2))
    ns[0] = 1e16
    cycles = np.arange(n * 2, dtype=np.int64).reshape(n, 2)
    intervals = np.ones((n, 2), np.int64)
    intervals[3, 1] = 0  # not recorded: its value is not added
    ns[3, 1] = 5e15
    summed = SummedLaunches("k", NAMES, PARENTS, [0, 2], cycles, ns, intervals, np.full(n, 8), np.full(n, 7),
                            np.zeros(n, np.int64), np.zeros(n, np.int64), [("ROOT", "k")] * n)
    ((phase, merged),) = summed.merged(np.arange(n), np.zeros(n, np.int64))
    want = merge_sums([one.sums for one in per_launch(summed)])
    assert (phase, merged.kernel_pid, merged.sums) == (0, 7, want)
    assert merged.sums.ns == [functools.reduce(lambda x, y: x + y, ns[:, 0].tolist(), 0.0), 1e16]
    assert summed.merged(np.zeros(0, np.int64), np.zeros(n, np.int64)) == []


def test_groups_come_in_the_order_of_their_first_launch_and_skip_the_rows_not_taken():
    n = 6
    summed = SummedLaunches("k", NAMES, PARENTS, [0], np.arange(n)[:, None] * 10, np.ones((n, 1)),
                            np.array([[1], [1], [0], [1], [1], [1]]), np.array([8, 8, 8, 16, 8, 8]),
                            np.array([5, 3, 3, 5, 5, 3]), np.zeros(n, np.int64), np.zeros(n, np.int64),
                            [("ROOT", str(i)) for i in range(n)])
    phase = np.array([1, 0, 0, 1, 1, 0])
    got = [(ph, one.kernel_pid, one.call_path, one.sums.warps, one.sums.scope_ids, one.sums.cycles)
           for ph, one in summed.merged(np.array([0, 1, 2, 3, 5]), phase)]
    assert got == [(1, 5, ("ROOT", "0"), 8, [0], [0]), (0, 3, ("ROOT", "1"), 8, [0], [10 + 50]),
                   (1, 5, ("ROOT", "3"), 16, [0], [30])]
