"""What checkpoints (`LEPTON_CHECKPOINT_S`) cost the program, on the CPU (no GPU needed).

usage:  python bench/checkpoint_cost.py [--nodes 10000] [--every 1] [--rounds 10] [--seconds 2] [--unchanged]

A session holds a tree of --nodes scope paths, each with a kernel of the fake backend (the test twin
of the CUPTI backend) and a metric, so that each checkpoint renders and writes a profile of that
size. Then, in one process, rounds alternate (in a random order per round) a loop of scope
enter/exit pairs with the checkpoint thread off and on (every --every seconds), --seconds each;
the figure is the median over rounds of the on/off ratio of the time per pair (one process, paired
rounds: the host's speed moves more between processes than this cost). Every 1,000 pairs a kernel
is launched and delivered, so that each checkpoint writes (--unchanged: none, and checkpoints find
nothing new to render). Prints `key=value` lines:

scope_us_off / scope_us_on   median time per scope pair, in microseconds
ratio                        median over rounds of on / off
checkpoint_ms                one checkpoint of the tree (copy, render, write), median of 5
checkpoint_bytes             its file size
"""
from __future__ import annotations

import argparse
import os
import random
import statistics
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "src"))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests"))

from twins import FAKE_BACKEND
from twins.fake_backend import FakeBackend

import lepton
from lepton.backends.base import EXTRA_BACKENDS_VARIABLE
from lepton.runtime.registry import REGISTRY

os.environ[EXTRA_BACKENDS_VARIABLE] = FAKE_BACKEND


def build_tree(nodes: int) -> FakeBackend:
    backend = FakeBackend.instances[-1]
    for i in range(nodes):
        with lepton.scope(f"layer{i % 100}"), lepton.scope(f"op{i // 100}", {"bytes": 4096}):
            backend.launch(f"kernel{i % 7}", 1000)
    backend.flush()
    return backend


def loop(seconds: float, backend: FakeBackend, changing: bool) -> float:
    """Microseconds per scope enter/exit pair, over `seconds`; `changing`: a kernel is launched and
    delivered every 1,000 pairs, so that every checkpoint has something new to write."""
    scope = lepton.scope
    pairs, t0 = 0, time.perf_counter()
    end = t0 + seconds
    while True:
        for _ in range(1000):
            with scope("step"):
                pass
        pairs += 1000
        if changing:
            with scope("layer0"), scope("op0"):
                backend.launch("kernel0", 1000)
            backend.flush()
        now = time.perf_counter()
        if now >= end:
            return (now - t0) / pairs * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--nodes", type=int, default=10_000)
    parser.add_argument("--every", type=float, default=1.0)
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--seconds", type=float, default=2.0)
    parser.add_argument("--unchanged", action="store_true",
                        help="launch nothing in the loop: each checkpoint finds the tree unchanged")
    args = parser.parse_args()
    folder = tempfile.mkdtemp()
    lepton.start(os.path.join(folder, "cost"), backend="fake")
    backend = build_tree(args.nodes)
    checkpoints = REGISTRY.checkpoints
    times = []
    for _ in range(5):
        checkpoints._last.clear()  # rendered and written even where unchanged
        checkpoints._copies.clear()
        t0 = time.perf_counter()
        checkpoints.write_all()
        times.append((time.perf_counter() - t0) * 1e3)
    size = os.path.getsize(os.path.join(folder, "cost.hatchet"))
    rng = random.Random(0)
    off, on, ratios = [], [], []
    for _ in range(args.rounds):
        result = {}
        for state in rng.sample(["off", "on"], 2):
            if state == "on":
                checkpoints.start(args.every)
            result[state] = loop(args.seconds, backend, not args.unchanged)
            checkpoints.stop()
        off.append(result["off"])
        on.append(result["on"])
        ratios.append(result["on"] / result["off"])
    lepton.finalize()
    print(f"nodes={args.nodes}")
    print(f"every_s={args.every}")
    print(f"changing={not args.unchanged}")
    print(f"scope_us_off={statistics.median(off):.3f}")
    print(f"scope_us_on={statistics.median(on):.3f}")
    print(f"ratio={statistics.median(ratios):.3f}")
    print(f"checkpoint_ms={statistics.median(times):.1f}")
    print(f"checkpoint_bytes={size}")
    print(f"checkpoints_written={checkpoints.written}")


if __name__ == "__main__":
    main()
