"""What the host pays per launch of an instrumented kernel once its sums are back from the device
(no GPU needed), one line per setting:

    launches=N scopes=S us_per_launch=X

from a ready `BatchSums` of N launches (one kernel of 4096 CTAs x 4 warps, S scopes, one call
path, all launched while the session was active) to the session's tree: what
`InstrumentationBackend._deliver_piece` does after `batch_sums`, the registry's routing and the
session's placement by time included. The device sums are replaced by the ready table, so only the
host's part is timed; best of --repeat runs, each on fresh launches into the same session (whose
tree must hold every launch's cycles at the end, or the script fails).

usage:  python bench/instrumentation_host.py [--launches 2000,20000] [--scopes 1,3]
            [--repeat 5]
"""
from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "src"))

from lepton.backends.instrumentation import backend as instrumentation
from lepton.backends.instrumentation.arena import ScratchArena
from lepton.backends.instrumentation.backend import InstrumentationBackend, InstrumentedKernel, _Launch
from lepton.backends.instrumentation.sums import ArrayOps, BatchSums
from lepton.model.paths import ROOT
from lepton.model.tree import build_tree
from lepton.runtime.hot_path import HotPath
from lepton.runtime.registry import SessionRegistry, _BackendSink
from lepton.runtime.session import Session

CTAS, WARPS, SLOT = 4096, 4, 128


def ready_sums(launches: int, scopes: int, seed: int = 0) -> BatchSums:
    """Every warp of every CTA closed each scope once; cycles and ns as the device gives them."""
    rng = np.random.default_rng(seed)
    cycles = rng.integers(1_000_000, 9_000_000, (launches, scopes), dtype=np.int64)
    ns = cycles * rng.uniform(0.55, 0.65, (launches, 1))
    intervals = np.full((launches, scopes), CTAS * WARPS, np.int64)
    return BatchSums(list(range(scopes)), cycles, ns, intervals, WARPS, [CTAS] * launches)


def host_us_per_launch(launches: int, scopes: int, repeat: int = 5) -> float:
    registry = SessionRegistry(HotPath())
    backend = InstrumentationBackend()
    backend.sink = _BackendSink(registry, backend)
    session = registry.sessions[0] = Session(0, "bench", "shadow", "tree", backend)
    session.set_active(True)
    kernel_pid = registry.hot_path.paths.extend(ROOT, ["step", "kernel"])
    kernel = InstrumentedKernel("kernel", SLOT, WARPS, {s: f"scope_{s}" for s in range(scopes)}, {})
    sums = ready_sums(launches, scopes)
    instrumentation.batch_sums = lambda *args: sums
    arena = ScratchArena(lambda n: np.zeros(n, np.uint8))
    address = arena.take(CTAS * SLOT)  # only its length is read: the sums are ready
    best = float("inf")
    for _ in range(repeat):
        now = time.time_ns()
        batch = [_Launch(address, CTAS * SLOT, 0, kernel, kernel_pid, ("ROOT", "step", "kernel"), now)
                 for _ in range(launches)]
        t0 = time.perf_counter()
        backend._deliver_piece(ArrayOps(), arena, kernel, batch)
        best = min(best, time.perf_counter() - t0)
    _check(registry, session, int(sums.cycles[:, 0].sum()) * repeat)
    return best / launches * 1e6


def _check(registry: SessionRegistry, session: Session, want: int) -> None:
    root = build_tree(registry.hot_path.paths, session.phases[0])
    node = root.children["step"].children["kernel"].children["scope_0"]
    got = next(v for k, v in node.metrics.items() if getattr(k, "name", k) == "cycles")
    if got != want:
        raise SystemExit(f"the tree holds {got} cycles of scope_0, not {want}")


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--launches", default="2000,20000", help="launches in the batch, comma-separated")
    ap.add_argument("--scopes", default="1,3", help="scopes of the kernel, comma-separated")
    ap.add_argument("--repeat", type=int, default=5, help="runs per setting, the best is printed")
    a = ap.parse_args(argv)
    for n in [int(x) for x in a.launches.split(",")]:
        for s in [int(x) for x in a.scopes.split(",")]:
            print(f"launches={n} scopes={s} us_per_launch={host_us_per_launch(n, s, a.repeat):.2f}", flush=True)


if __name__ == "__main__":
    main()
