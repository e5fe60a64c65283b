"""Core costs on the CPU (no GPU needed), one `key=value` per line.

scope_us        enter+exit of a scope with a session active (fake backend, so the marks on the
                thread's time line are included), median of 1e5 pairs, in microseconds
aggregate_1m_s  1,000,000 kernel records over 1,000 call paths delivered in batches of 64k,
                attributed, aggregated into the tree and written, in seconds
parse_1m_s      (when the CUPTI parser is present) 1,000,000 kernels' worth of synthetic CUPTI
                buffers parsed, attributed and aggregated, in seconds
"""
from __future__ import annotations

import os
import statistics
import sys
import tempfile
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "src"))

import lepton
from lepton.collect.fake import FakeBackend
from lepton.model.records import KernelBatch
from lepton.runtime import RUNTIME


def scope_us(pairs: int = 100_000, rounds: int = 20) -> float:
    lepton.start(os.path.join(tempfile.mkdtemp(), "scope"), backend="fake")
    scope = lepton.scope
    per_round = pairs // rounds
    samples = []
    for _ in range(rounds):
        t0 = time.perf_counter_ns()
        for _ in range(per_round):
            with scope("step"):
                pass
        samples.append((time.perf_counter_ns() - t0) / per_round / 1e3)
    lepton.finalize()
    return statistics.median(samples)


def aggregate_1m_s(kernels: int = 1_000_000, paths: int = 1_000, batch: int = 65_536) -> float:
    out = os.path.join(tempfile.mkdtemp(), "agg")
    lepton.start(out, backend="fake")
    fake = FakeBackend.instances[-1]
    path_ids = np.array([RUNTIME.paths.extend(0, ["model", f"layer_{i // 10}", f"op_{i}"])
                         for i in range(paths)], dtype=np.int64)
    names = [f"kernel_{i}" for i in range(8)]
    rng = np.random.default_rng(0)
    now = time.time_ns()
    batches = []
    for lo in range(0, kernels, batch):
        n = min(batch, kernels - lo)
        start = now + rng.integers(0, 10**9, n)
        batches.append(KernelBatch.from_columns(
            parent_path=path_ids[rng.integers(0, paths, n)], names=names,
            name_id=rng.integers(0, len(names), n), start_ns=start, end_ns=start + rng.integers(500, 5000, n),
            launch_ns=start - 1000, device_id=0, stream_id=7))
    t0 = time.perf_counter()
    for b in batches:
        fake.emit(b)
    lepton.finalize()
    return time.perf_counter() - t0


def main() -> None:
    print(f"scope_us={scope_us():.3f}", flush=True)
    print(f"aggregate_1m_s={aggregate_1m_s():.3f}", flush=True)
    try:
        from lepton.collect.cupti import parser  # noqa: F401
    except ImportError:  # a build without the CUPTI backend
        return
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import parse  # bench/parse.py: an import error there is a bug, not a missing backend
    print(f"parse_1m_s={parse.parse_1m_s():.3f}", flush=True)


if __name__ == "__main__":
    main()
