"""What instruction sampling costs a user: no profiler, Lepton's pcsampling and Proton's, on the
in-kernel workload (`in_kernel.workload_step`: one ~30 µs Triton kernel of 4096 blocks and one torch
kernel per step, the Triton kernel compiled inside the session), at several run lengths. Every
configuration runs in its own process. GPU machine only.

Per tool and length it prints the loop's ms/step, finalize's seconds, the amortized ms/step
(`(loop + finalize) / steps`, the figure a user pays), and peak host RSS and device memory in use
after the warm-up and at the end of the loop (they must not grow with the steps).

usage:  python bench/pcsampling.py [--steps 200,2000,20000] [--interval 1024] [--proton-timeout 180]
        python bench/pcsampling.py --child TOOL INTERVAL STEPS OUTDIR     (internal)
TOOL = none | lepton | proton. Proton ignores the interval (it always samples every 2^10 cycles).
A Proton run longer than --proton-timeout seconds is skipped, and the table says so.
"""
from __future__ import annotations

import argparse
import os

from in_kernel import amortized_ms, profiler, run_child, time_steps, workload_step


def child(tool: str, interval: int, steps: int, outdir: str) -> None:
    step = workload_step(scoped=False)
    prof = None
    if tool != "none":
        prof, mode = profiler(tool)
        prof.start(os.path.join(outdir, tool), mode=mode.PCSampling(interval=interval))
    time_steps(step, steps, prof)


def row(tool: str, steps: int, r: dict | None, base: float) -> str:
    if r is None:
        return f"| {tool} | {steps} | — | — | skipped or failed (see above) | — | — | — |"
    amortized = amortized_ms(r, steps)
    return (f"| {tool} | {steps} | {r['ms_per_step']:.3f} | {r['finalize_s']:.3f} | {amortized:.3f} | "
            f"{amortized / base:.2f} | {r['rss_start_mib']:.0f} → {r['rss_mib']:.0f} | "
            f"{r['dev_start_mib']:.0f} → {r['dev_mib']:.0f} |")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", default="200,2000,20000")
    ap.add_argument("--interval", type=int, default=1024)
    ap.add_argument("--proton-timeout", type=float, default=180)
    ap.add_argument("--tools", default="none,lepton,proton")
    ap.add_argument("--child", nargs=4, metavar=("TOOL", "INTERVAL", "STEPS", "OUTDIR"))
    a = ap.parse_args()
    if a.child:
        tool, interval, steps, out = a.child
        child(tool, int(interval), int(steps), out)
        return
    print(f"| tool | steps | loop ms/step | finalize s | amortized ms/step | × no profiler | "
          f"peak RSS MiB (start → end) | device MiB in use (start → end) |")
    print("|---|---|---|---|---|---|---|---|", flush=True)
    for steps in [int(s) for s in a.steps.split(",")]:
        base = float("nan")
        for tool in a.tools.split(","):
            timeout = a.proton_timeout if tool == "proton" else 600
            r = run_child(__file__, tool, str(a.interval), str(steps), label=f"{tool} {steps} steps", timeout=timeout)
            if tool == "none" and r is not None:
                base = amortized_ms(r, steps)
            print(row(tool, steps, r, base), flush=True)


if __name__ == "__main__":
    main()
