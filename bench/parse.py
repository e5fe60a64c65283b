"""CUPTI buffer parsing throughput, on the CPU: 1,000,000 kernels' worth of synthetic activity
buffers (each launch: a runtime API record and a kernel record, as CUPTI 13.0 lays them out, and a
scope change on the launching thread's time line before every launch) parsed, attributed to their
scopes and aggregated per call-tree node.

usage:  python bench/parse.py [--kernels 1000000]     prints  parse_1m_s=<seconds per 1M kernels>
`parse_1m_s()` returns the same number, for bench/core.py.

The buffers go to the CUPTI backend's collector directly (on a GPU, CUPTI hands them to it); the
session, its scopes and the profile the kernels are counted in go through `lepton`'s API.
"""
from __future__ import annotations

import argparse
import functools
import json
import os
import sys
import tempfile
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "src"))
# The fake backend (and the synthetic CUPTI buffers) are test twins: they live in tests/twins/, out
# of the package, and the fake is named to Lepton through the environment.
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests"))

from twins import FAKE_BACKEND
from twins import cupti_activity as synthetic
from twins.fake_backend import FakeBackend

import lepton
from lepton.backends.base import EXTRA_BACKENDS_VARIABLE
from lepton.backends.cupti.backend import BUFFER_BYTES  # what the backend hands CUPTI
from lepton.backends.cupti.clock import ClockMap
from lepton.backends.cupti.collector import Collector
from lepton.model import timeline

os.environ[EXTRA_BACKENDS_VARIABLE] = FAKE_BACKEND  # backend="fake"

KERNEL_NAMES = ["add_kernel", "_ZN2at6native29vectorized_elementwise_kernelILi4ENS0_11FillFunctorIfEE",
                "_ZN2at6native29vectorized_elementwise_kernelILi4ENS0_13AUnaryFunctorIfffNS0_"]


def make_buffers(n: int, scopes: list[int], seed: int = 0):
    """`n` launches from `scopes` (path ids; ROOT among them: launched outside every scope), 3
    kernel names: the buffers, and the launching thread's time line (CUPTI clock)."""
    rng = np.random.default_rng(seed)
    scope_of_launch = np.asarray(scopes)[rng.integers(0, len(scopes), n)]
    name_ptrs = (0x7F00_0000_1000 + 0x40 * rng.integers(0, len(KERNEL_NAMES), n)).astype(np.uint64)
    kinds, kernel, api, _, marks = synthetic.launch_stream(n, paths=scope_of_launch, names=name_ptrs)
    return synthetic.split(kinds, kernel, api, BUFFER_BYTES), marks


def scope_paths(sink) -> list[int]:
    """ROOT and 63 scopes `step/layer_i`, entered through `lepton.scope`: their path ids, as the
    backend's sink reports the thread's current path inside them."""
    ids = [sink.current_path()]
    for i in range(63):
        with lepton.scope("step"), lepton.scope(f"layer_{i}"):
            ids.append(sink.current_path())
    return ids


def counted(profile: str) -> tuple[int, int]:
    """`(kernels, dropped records)` in the hatchet file `finalize` wrote."""
    with open(profile) as f:
        root = json.load(f)[0]
    kernels, stack = 0, [root]
    while stack:
        node = stack.pop()
        stack.extend(node["children"])
        if node["frame"]["name"] in KERNEL_NAMES:
            kernels += node["metrics"]["count"]
    return kernels, root["metrics"].get("dropped_records", 0)


def parse_1m_s(n: int = 1_000_000, repeat: int = 3) -> float:
    """Seconds to parse, attribute and aggregate `n` kernels (best of `repeat`), scaled to 1M.

    The batches go into a real session (`backend="fake"`, so that no GPU is needed) through that
    backend's sink: the same attribution and aggregation a CUPTI session does. The kernels counted
    in the profile `finalize` writes must be all `n`."""
    names = {0x7F00_0000_1000 + 0x40 * i: s for i, s in enumerate(KERNEL_NAMES)}
    bufs = marks = None
    best = float("inf")
    for _ in range(repeat):
        out = os.path.join(tempfile.mkdtemp(), "parse")
        lepton.start(out, backend="fake")
        sink = FakeBackend.instances[-1].sink
        if bufs is None:  # path ids are the process's: the same in every session
            bufs, marks = make_buffers(n, scope_paths(sink))
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
        lepton.finalize()
        kernels, dropped = counted(out + ".hatchet")
        if kernels != n or dropped:
            raise AssertionError(f"counted {kernels} of {n} kernels, {dropped} dropped")
    return best * 1_000_000 / n


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--kernels", type=int, default=1_000_000)
    ap.add_argument("--repeat", type=int, default=3)
    a = ap.parse_args()
    print(f"parse_1m_s={parse_1m_s(a.kernels, a.repeat):.3f}")


if __name__ == "__main__":
    main()
