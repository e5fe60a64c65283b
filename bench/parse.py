"""CUPTI buffer parsing throughput, on the CPU: 1,000,000 kernels' worth of synthetic activity
buffers (each launch: a runtime API record and a kernel record, as CUPTI 13.0 lays them out, and a
scope change on the launching thread's time line before every launch) parsed, attributed to their
scopes and aggregated per call-tree node.

usage:  python bench/parse.py [--kernels 1000000]     prints  parse_1m_s=<seconds per 1M kernels>
`parse_1m_s()` returns the same number, for bench/core.py.
"""
from __future__ import annotations

import argparse
import functools
import os
import sys
import tempfile
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "src"))

from lepton.collect import timeline
from lepton.collect.cupti import synthetic
from lepton.collect.cupti.backend import BUFFER_BYTES  # what the backend hands CUPTI
from lepton.collect.cupti.clock import ClockMap
from lepton.collect.cupti.collector import Collector

KERNEL_NAMES = ["add_kernel", "_ZN2at6native29vectorized_elementwise_kernelILi4ENS0_11FillFunctorIfEE",
                "_ZN2at6native29vectorized_elementwise_kernelILi4ENS0_13AUnaryFunctorIfffNS0_"]


def make_buffers(n: int, paths, seed: int = 0):
    """`n` launches from 64 scopes (some launched outside every scope), 3 kernel names: the
    buffers, and the launching thread's time line (CUPTI clock)."""
    rng = np.random.default_rng(seed)
    scopes = [0] + [paths.extend(0, ["step", f"layer_{i}"]) for i in range(63)]
    scope_of_launch = np.asarray(scopes)[rng.integers(0, len(scopes), n)]
    name_ptrs = (0x7F00_0000_1000 + 0x40 * rng.integers(0, len(KERNEL_NAMES), n)).astype(np.uint64)
    kinds, kernel, api, _, marks = synthetic.launch_stream(n, paths=scope_of_launch, names=name_ptrs)
    return synthetic.split(kinds, kernel, api, BUFFER_BYTES), marks


def parse_1m_s(n: int = 1_000_000, repeat: int = 3) -> float:
    """Seconds to parse, attribute and aggregate `n` kernels (best of `repeat`), scaled to 1M.

    The batches go into a real session (the fake backend's, so that no GPU is needed) through the
    runtime's sink: the same attribution and aggregation a CUPTI session does."""
    import lepton
    from lepton.collect.fake import FakeBackend
    from lepton.runtime import RUNTIME, _BackendSink

    bufs, marks = make_buffers(n, RUNTIME.paths)
    names = {0x7F00_0000_1000 + 0x40 * i: s for i, s in enumerate(KERNEL_NAMES)}
    best = float("inf")
    for _ in range(repeat):
        lepton.start(os.path.join(tempfile.mkdtemp(), "parse"), backend="fake")
        sink = _BackendSink(RUNTIME, FakeBackend.instances[-1])
        session = next(iter(RUNTIME.sessions.values()))
        # Synthetic CUPTI timestamps start near 0; the offset puts them just after the session's
        # start, on the time.time_ns() line, as a foreign CUPTI clock's map does.
        col = Collector(sink, names.__getitem__, functools.partial(timeline.paths_at, marks),
                        clock=ClockMap.offset(time.time_ns()))
        t0 = time.perf_counter()
        for i in range(0, len(bufs), 4):  # the backend processes every 4 completed buffers
            for b in bufs[i:i + 4]:
                col.add_buffer(b, len(b))
            col.process(flush=False)
        col.process(flush=True)
        best = min(best, time.perf_counter() - t0)
        counted = sum(k.count for k in session.current.kernels.values())
        dropped = session.dropped_records
        lepton.finalize()
        if counted != n or dropped:
            raise AssertionError(f"counted {counted} of {n} kernels, {dropped} dropped")
    return best * 1_000_000 / n


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--kernels", type=int, default=1_000_000)
    ap.add_argument("--repeat", type=int, default=3)
    a = ap.parse_args()
    print(f"parse_1m_s={parse_1m_s(a.kernels, a.repeat):.3f}")


if __name__ == "__main__":
    main()
