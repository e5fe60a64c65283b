"""Where overhead.py's 10k-step loop spends its time: the loop timed in 20 chunks of 500 steps, one
process per configuration (as overhead.py runs them), with the time Lepton spent parsing buffers
and Python spent in cyclic garbage collections during the loop (GPU machine).

A parse on CUPTI's buffer thread holds the GIL, so the launching thread stops meanwhile: its chunks
show the spikes. Tool `lepton-eager` is Lepton parsing each buffer as it completes (before session
8), to weigh what deferring the parse saves; Proton's first chunk shows its start-up cost.

Single processes of the same code run at different speeds (the bare step took 29-50 µs in
different processes on one H100 host, and slowed 2-3x for 50-100 ms at a time within one), so
overhead.py's ratio of medians of 5 processes is itself noisy. The end of the output resamples the
processes measured here: what a run of overhead.py would read, spread included.

Each process's line also gives the launching thread's CPU time over the loop and its context
switches: on the H100 hosts the loop's wall time was its CPU time (within 0.2%) in every
configuration, so a slow process runs the same code slower rather than waiting; Lepton's thread
switched voluntarily 8-10 times a loop, the bare and Proton's threads none.

usage:  python bench/loop_chunks.py [--configs none,lepton:shadow:tree:triton,...] [--reps 8]
        python bench/loop_chunks.py --child MODE          (internal)
MODE = none | TOOL:CONTEXT:DATA:HOOK, TOOL in {lepton, lepton-eager, proton}
"""
from __future__ import annotations

import argparse
import gc
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.join(HERE, "..", "src")
CHUNKS, CHUNK = 20, 500


def child(mode: str) -> None:
    import torch
    from workload import overhead_step

    step = overhead_step()
    parse_s, parses = [0.0], [0]
    prof = None
    if mode != "none":
        tool, context, data, hook = mode.split(":")
        if tool == "proton":
            import triton.profiler as prof
        else:
            sys.path.insert(0, SRC)
            import lepton as prof
            from lepton.collect.cupti import backend
            from lepton.collect.cupti.collector import Collector

            if tool == "lepton-eager":
                backend.PROCESS_AT_BYTES = backend.BUFFER_BYTES // 2
            process = Collector.process

            def timed_process(self, flush):
                t0 = time.perf_counter()
                try:
                    return process(self, flush)
                finally:
                    if not flush:
                        parse_s[0] += time.perf_counter() - t0
                        parses[0] += 1

            Collector.process = timed_process
        prof.start(os.path.join(tempfile.mkdtemp(), "p"), context=context, data=data,
                   hook=None if hook == "none" else hook)
    gc_runs, gc_s, gc_t0 = [0, 0, 0], [0.0], [0.0]

    def gc_timer(phase, info):  # Python's cyclic collections during the loop, per generation
        if phase == "start":
            gc_t0[0] = time.perf_counter()
        else:
            gc_runs[info["generation"]] += 1
            gc_s[0] += time.perf_counter() - gc_t0[0]

    gc.callbacks.append(gc_timer)
    chunks = []
    switches0, cpu0 = context_switches(), time.thread_time()
    t1 = last = time.perf_counter()
    for _ in range(CHUNKS):
        if prof is None:
            for _ in range(CHUNK):
                step()
        else:
            for _ in range(CHUNK):
                with prof.scope("step"):
                    step()
        now = time.perf_counter()
        chunks.append((now - last) / CHUNK * 1e6)
        last = now
    torch.cuda.synchronize()
    loop = time.perf_counter() - t1
    cpu, switches = time.thread_time() - cpu0, [b - a for a, b in zip(switches0, context_switches())]
    gc.callbacks.remove(gc_timer)
    print("GC", *gc_runs, f"{gc_s[0] * 1e3:.1f}", flush=True)
    print("THREAD", f"{cpu:.4f}", *switches, flush=True)
    if prof is not None:
        prof.finalize()
    print("RESULT", f"{loop:.4f}", f"{parse_s[0] * 1e3:.1f}", parses[0], *(f"{c:.1f}" for c in chunks),
          flush=True)


def child_line(output: str, tag: str) -> list[str] | None:
    """The fields after `tag` on the child's output line that starts with it (None: no such line)."""
    for line in output.splitlines():
        if line.startswith(tag + " "):
            return line.split()[1:]
    return None


def context_switches() -> tuple[int, int]:
    """The calling thread's voluntary and involuntary context switches so far (Linux; else 0, 0)."""
    try:
        with open("/proc/thread-self/status") as f:
            counts = dict(line.split(":", 1) for line in f if "ctxt_switches" in line)
        return int(counts["voluntary_ctxt_switches"]), int(counts["nonvoluntary_ctxt_switches"])
    except (OSError, KeyError, ValueError):
        return 0, 0


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--configs", default="none,lepton:shadow:tree:triton,lepton-eager:shadow:tree:triton,"
                                         "proton:shadow:tree:triton")
    ap.add_argument("--reps", type=int, default=8)
    ap.add_argument("--runs-of", type=int, default=5, help="processes per config in the resampled runs")
    ap.add_argument("--target", type=float, default=1.3,
                    help="loop ratio whose share of resampled runs is given")
    ap.add_argument("--child")
    a = ap.parse_args()
    if a.child:
        child(a.child)
        return
    modes = a.configs.split(",")
    loops: dict[str, list[float]] = {m: [] for m in modes}
    for _ in range(a.reps):
        for mode in modes:  # interleaved, as overhead.py
            p = subprocess.run([sys.executable, __file__, "--child", mode], capture_output=True, text=True,
                               timeout=600)
            result = child_line(p.stdout, "RESULT")
            if result is None:
                print(f"{mode}: failed\n{p.stderr[-800:]}")
                continue
            loop, parse_ms, parses, *chunks = result
            gc_line = child_line(p.stdout, "GC")
            cpu, voluntary, involuntary = child_line(p.stdout, "THREAD")
            loops[mode].append(float(loop))
            chunk_us = [float(c) for c in chunks]
            print(f"{mode:32} loop {loop} s, parsed {parses} times in {parse_ms} ms; µs/step per chunk: "
                  f"first {chunk_us[0]:.1f}, median {statistics.median(chunk_us):.1f}, "
                  f"max {max(chunk_us):.1f}; "
                  f"gc runs by generation {'/'.join(gc_line[:3])} in {gc_line[3]} ms; "
                  f"launching thread on CPU {cpu} s, {voluntary} voluntary / {involuntary} forced switches")
    base = statistics.median(loops["none"]) if loops.get("none") else None
    for mode, values in loops.items():
        if values:
            ratio = f" x{statistics.median(values) / base:.2f}" if base else ""
            print(f"MEDIAN {mode:32} {statistics.median(values):.4f} s{ratio} ({len(values)} processes, "
                  f"{min(values):.4f}-{max(values):.4f})")
    if base:
        print_resampled(loops, a.runs_of, a.target)


def print_resampled(loops: dict[str, list[float]], reps: int, target: float) -> None:
    """What a run of overhead.py (`reps` processes per config, ratio of medians) would read, from
    these processes drawn again at random: the spread that the speed of single processes gives."""
    rng = random.Random(0)
    none = loops["none"]
    print(f"ratio of medians of {reps} processes, resampled 2000 times: 10th / 50th / 90th percentile, "
          f"share of runs <= {target}")
    for mode, values in loops.items():
        if mode == "none" or not values:
            continue
        ratios = sorted(statistics.median(rng.choices(values, k=reps))
                        / statistics.median(rng.choices(none, k=reps)) for _ in range(2000))
        share = sum(r <= target for r in ratios) / len(ratios)
        print(f"RESAMPLED {mode:32} {ratios[200]:.2f} / {ratios[1000]:.2f} / {ratios[1800]:.2f}  {share:.0%}")


if __name__ == "__main__":
    main()
