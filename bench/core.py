"""Core costs on the CPU (no GPU needed), one `key=value` per line.

scope_us        enter+exit of a scope with a session active (fake backend, so the marks on the
                thread's time line are included), median of 1e5 pairs, in microseconds
aggregate_1m_s  1,000,000 kernel records over 1,000 call paths delivered in batches of 64k,
                attributed, aggregated into the tree and written, in seconds
decode_launch_ms  one instrumented launch of 4096 CTAs x 4 warps x 2 records decoded on the host
                (the trace's path; a tree's sums are taken on the GPU), 50 launches in one batch,
                best of 3, in milliseconds per launch
parse_1m_s      (when the CUPTI parser is present) 1,000,000 kernels' worth of synthetic CUPTI
                buffers parsed, attributed and aggregated, in seconds (`bench/parse.py`)

usage:  python bench/core.py [--pairs 100000] [--kernels 1000000]
The session is started, scoped and written through `lepton`'s API with `backend="fake"`, the test
twin of the CUPTI backend; the records go in through that backend, as a real one delivers them.
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "src"))
# The fake backend (and the synthetic CUPTI buffers) are test twins: they live in tests/twins/, out
# of the package, and the fake is named to Lepton through the environment.
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests"))

from twins import FAKE_BACKEND
from twins.fake_backend import FakeBackend

import lepton
from lepton.backends.base import EXTRA_BACKENDS_VARIABLE
from lepton.model.records import KernelBatch

os.environ[EXTRA_BACKENDS_VARIABLE] = FAKE_BACKEND  # backend="fake"


def scope_us(pairs: int = 100_000, rounds: int = 20) -> float:
    lepton.start(os.path.join(tempfile.mkdtemp(), "scope"), backend="fake")
    scope = lepton.scope
    per_round = max(pairs // rounds, 1)
    samples = []
    for _ in range(rounds):
        t0 = time.perf_counter_ns()
        for _ in range(per_round):
            with scope("step"):
                pass
        samples.append((time.perf_counter_ns() - t0) / per_round / 1e3)
    lepton.finalize()
    return statistics.median(samples)


def scope_paths(sink, names: list[list[str]]) -> list[int]:
    """The path id of each nesting of scopes in `names`, entered through `lepton.scope`: what the
    backend's sink reports as the thread's current path inside them."""
    ids = []
    for nesting in names:
        for name in nesting:
            lepton.enter_scope(name)
        ids.append(sink.current_path())
        for _ in nesting:
            lepton.exit_scope()
    return ids


def aggregate_1m_s(kernels: int = 1_000_000, paths: int = 1_000, batch: int = 65_536) -> float:
    out = os.path.join(tempfile.mkdtemp(), "agg")
    lepton.start(out, backend="fake")
    fake = FakeBackend.instances[-1]
    nestings = [["model", f"layer_{i // 10}", f"op_{i}"] for i in range(paths)]
    path_ids = np.array(scope_paths(fake.sink, nestings), dtype=np.int64)
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
    return (time.perf_counter() - t0) * 1_000_000 / kernels


def decode_launch_ms(launches: int = 50) -> float:
    import struct

    from lepton.backends.instrumentation.decode import decode_launch

    header = struct.pack("<IIIIQQQ", 0xDEADBEEF, 0, 0, 64, 1_000, 2_000, 2_100) + struct.pack("<4I", 4, 4, 4, 4)
    entries = b"".join(struct.pack("<IIII", 0, 10 + w, 1 << 31, 50 + w) for w in range(4))
    one = header + entries
    one += bytes(-len(one) % 128)
    raw = np.frombuffer(one * 4096 * launches, np.uint8)
    best = float("inf")
    for _ in range(3):
        t0 = time.perf_counter()
        events = decode_launch(raw, len(one), 4)
        best = min(best, time.perf_counter() - t0)
    assert len(events) == 4096 * 4 * launches and not events.warnings
    return best / launches * 1e3


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--pairs", type=int, default=100_000, help="scope enter+exit pairs timed")
    ap.add_argument("--kernels", type=int, default=1_000_000, help="kernels aggregated and parsed")
    a = ap.parse_args(argv)
    print(f"scope_us={scope_us(a.pairs):.3f}", flush=True)
    print(f"aggregate_1m_s={aggregate_1m_s(a.kernels):.3f}", flush=True)
    print(f"decode_launch_ms={decode_launch_ms():.3f}", flush=True)
    try:
        from lepton.backends.cupti import parser  # noqa: F401
    except ImportError:  # a build without the CUPTI backend
        return
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import parse  # bench/parse.py: an import error there is a bug, not a missing backend

    print(f"parse_1m_s={parse.parse_1m_s(a.kernels):.3f}", flush=True)


if __name__ == "__main__":
    main()
