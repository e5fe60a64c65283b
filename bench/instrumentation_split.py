"""Per step of `scope_shapes.py`'s shapes: the CPU's time to enqueue it and the GPU's busy time, bare
and under `backend="instrumentation"`. GPU machine only.

The steps are queued behind a ~50 ms sleep kernel, so that the CPU's loop measures only the enqueue
(the launches, the hooks) and the GPU runs the queued kernels back to back: events around them give
the GPU time a step takes. Where the instrumented step costs more than the bare one, this says
whether the host (the launch path) or the device (the instrumented kernel) pays. Each shape is
measured in 5 rounds of fewer launches than the backend queues before a decode; the medians are
printed.

usage:  PYTHONPATH=src python bench/instrumentation_split.py [--shapes one_scope,interleaved,...]
"""
from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

ROUNDS = 5
SLEEP_CYCLES = 100_000_000  # ~50 ms on an H100: longer than a round's enqueue


def measure(step, steps: int) -> tuple[float, float]:
    """(CPU ms, GPU ms) per step, medians over the rounds."""
    import torch

    for _ in range(20):
        step()
    torch.cuda.synchronize()
    cpu, gpu = [], []
    for _ in range(ROUNDS):
        torch.cuda._sleep(SLEEP_CYCLES)
        begin, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        begin.record()
        t = time.perf_counter()
        for _ in range(steps):
            step()
        cpu.append((time.perf_counter() - t) / steps * 1e3)
        end.record()
        torch.cuda.synchronize()
        gpu.append(begin.elapsed_time(end) / steps)
    return sorted(cpu)[ROUNDS // 2], sorted(gpu)[ROUNDS // 2]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--shapes", default="one_scope,siblings,nested,interleaved")
    args = parser.parse_args()
    from scope_shapes import step_of

    import lepton
    from lepton.runtime.registry import REGISTRY

    shapes = args.shapes.split(",")
    steps = {s: step_of(s) for s in shapes}
    per_round = {s: 1500 // (3 if s == "interleaved" else 1) // ROUNDS for s in shapes}  # under the queue's 2,048
    bare = {s: measure(steps[s], per_round[s]) for s in shapes}
    lepton.start(os.path.join(tempfile.mkdtemp(), "split"), backend="instrumentation")
    instrumented = {}
    for s in shapes:
        REGISTRY.backends["instrumentation"].flush()  # an empty queue: no decode inside a round
        instrumented[s] = measure(steps[s], per_round[s])
    lepton.finalize()
    print("| shape | bare CPU ms/step | bare GPU ms/step | instrumented CPU | instrumented GPU |")
    print("|---|---|---|---|---|")
    for s in shapes:
        print(f"| {s} | {bare[s][0]:.4f} | {bare[s][1]:.4f} | {instrumented[s][0]:.4f} | {instrumented[s][1]:.4f} |")


if __name__ == "__main__":
    main()
