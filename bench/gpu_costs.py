"""What each part of Lepton's CUPTI collection costs per step, measured in one process (GPU machine).

Separate processes run at different speeds on a shared host (bare steps of one script measured
32-53 µs in consecutive processes, and 50-90 µs within one), which drowns differences of a few µs
between configurations run in separate processes. Here the states alternate in short chunks in one
process, so that a change of host speed hits every state alike; each chunk is timed by the main
thread's CPU time as well as the wall clock.

Each step is the overhead benchmark's (`../shared/bench/overhead.py`): 1 Triton and 2 torch
launches, inside a scope where the state says so. The session runs with `hook="triton"`; the last two
states put a hook in Triton's launch path: one that only evaluates the launch metadata (what any
metadata hook costs at least: Triton builds the metadata and calls the kernel's `launch_metadata`),
then Lepton's. The ratio column is each state against "nothing collected": the floor of what a
profiler of kernels, and of launch metadata, can reach on this workload. Lepton's states are as it
runs with one launching thread (kernel records carrying their launch time, `queued`); "+ launch API
records" is what a second thread that marks paths turns on.

usage:  python bench/gpu_costs.py [--rounds 30] [--chunk 300]
"""
from __future__ import annotations

import os
import statistics
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "src"))


def main() -> None:
    from workload import overhead_step, rounds_and_chunk, set_cupti_records, step_loops, triton_hook_pairs

    a = rounds_and_chunk(rounds=30, chunk=300)

    import torch
    from triton import knobs

    step = overhead_step()

    import lepton
    from lepton.runtime import RUNTIME

    lepton.start(os.path.join(tempfile.mkdtemp(), "costs"), hook="triton")
    runtime = knobs.runtime
    pairs = triton_hook_pairs()
    if pairs is None:
        sys.exit("gpu_costs: another tool's Triton launch hook is installed; run this alone")
    lepton_hooks, no_hooks, metadata_only = pairs
    backend = RUNTIME.backends["cupti"]
    backend._launch_threads_needed()  # the launch API kinds masked once (as with a second thread)
    mark_clock = RUNTIME.mark_clock

    def set_state(on: tuple[str, ...], marks: bool, hooks: tuple = no_hooks) -> None:
        runtime.launch_enter_hook, runtime.launch_exit_hook = hooks
        set_cupti_records(backend, on)
        RUNTIME.mark_clock = mark_clock if marks else None

    bare, scoped = step_loops(step, lepton.scope)

    # One launching thread: kernel records with their launch times (`queued`), no API records.
    timed = ("kernel", "queued")
    states = {
        "nothing collected": ((), True, bare),
        "kernel records": (("kernel",), True, bare),
        "+ queued (Lepton, 1 thread)": (timed, True, bare),
        "+ launch API records (threads)": (("kernel", "driver", "runtime"), True, bare),
        "+ scope, no marks": (timed, False, scoped),
        "+ scope (Lepton as it runs)": (timed, True, scoped),
        "+ hook: metadata.get() only": (timed, True, scoped, metadata_only),
        "+ Lepton's hook (as it runs)": (timed, True, scoped, lepton_hooks),
    }
    wall: dict[str, list[float]] = {s: [] for s in states}
    cpu: dict[str, list[float]] = {s: [] for s in states}
    for _ in range(a.rounds):
        for name, (on, marks, loop, *hooks) in states.items():
            set_state(on, marks, *hooks)
            loop(50)  # past any transient of the switch
            torch.cuda.synchronize()
            c0, t0 = time.thread_time(), time.perf_counter()
            loop(a.chunk)
            c1 = time.thread_time()
            torch.cuda.synchronize()
            t1 = time.perf_counter()
            wall[name].append((t1 - t0) / a.chunk * 1e6)
            cpu[name].append((c1 - c0) / a.chunk * 1e6)
    set_state(timed, True, lepton_hooks)
    lepton.finalize()

    base_wall = statistics.median(wall["nothing collected"])
    base_cpu = statistics.median(cpu["nothing collected"])
    print(f"{'state':30} {'wall µs':>8} {'+':>6} {'ratio':>6} {'cpu µs':>8} {'+':>6}   (per step, median of {a.rounds})")
    for name in states:
        w, c = statistics.median(wall[name]), statistics.median(cpu[name])
        print(f"{name:30} {w:8.2f} {w - base_wall:6.2f} {w / base_wall:6.3f} {c:8.2f} {c - base_cpu:6.2f}")


if __name__ == "__main__":
    main()
