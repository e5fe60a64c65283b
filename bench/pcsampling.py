"""Cost of instruction sampling: no profiler, Lepton's pcsampling and Proton's, on the in-kernel
workload (`in_kernel.workload_step`: one ~30 µs Triton kernel of 4096 blocks and one torch kernel per
step, 200 steps). Every configuration runs in its own process; the Triton kernel is
compiled inside the session, as in the notes' measurement. GPU machine only.

usage:  python bench/pcsampling.py [--steps 200] [--reps 3] [--intervals 1024,16384,262144]
        python bench/pcsampling.py --child TOOL INTERVAL STEPS OUTDIR     (internal)
TOOL = none | lepton | proton. Proton ignores the interval (it always samples every 2^10 cycles);
it is run at each interval anyway, so every row compares the same request.
"""
from __future__ import annotations

import argparse
import os
import statistics

from in_kernel import profiler, run_child, time_steps, workload_step


def child(tool: str, interval: int, steps: int, outdir: str) -> None:
    step = workload_step(scoped=False)
    prof = None
    if tool != "none":
        prof, mode = profiler(tool)
        prof.start(os.path.join(outdir, tool), mode=mode.PCSampling(interval=interval))
    time_steps(step, steps, prof)


def run(tool: str, interval: int, steps: int) -> tuple[float, float] | None:
    return run_child(__file__, tool, str(interval), str(steps), label=f"{tool} interval={interval}")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=200)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--intervals", default="1024,16384,262144")
    ap.add_argument("--child", nargs=4, metavar=("TOOL", "INTERVAL", "STEPS", "OUTDIR"))
    a = ap.parse_args()
    if a.child:
        tool, interval, steps, out = a.child
        child(tool, int(interval), int(steps), out)
        return
    none = [r[0] for r in (run("none", 0, a.steps) for _ in range(a.reps)) if r]
    base = statistics.median(none) if none else float("nan")
    print("| interval (cycles) | none ms/step | lepton ms/step | proton ms/step | proton / lepton |")
    print("|---|---|---|---|---|")
    for interval in [int(i) for i in a.intervals.split(",")]:
        med = {}
        for tool in ("lepton", "proton"):
            got = [r[0] for r in (run(tool, interval, a.steps) for _ in range(a.reps)) if r]
            med[tool] = statistics.median(got) if got else float("nan")
        ratio = med["proton"] / med["lepton"] if med["lepton"] > 0 else float("nan")
        print(f"| {interval} | {base:.3f} | {med['lepton']:.3f} | {med['proton']:.3f} | {ratio:.1f}x |", flush=True)


if __name__ == "__main__":
    main()
