"""Cost of scopes inside kernels: no profiler, Lepton's `backend="instrumentation"` and Proton's, on
the in-kernel workload (`in_kernel.workload_step`: one ~30 µs Triton kernel of 4096 blocks with a
`load` scope, and one torch kernel, per step). Each configuration runs in its own
process; the kernel is compiled inside the session. GPU machine only.

usage:  python bench/instrumentation.py [--steps 200] [--reps 1] [--mode default:buffer_size=512]
        python bench/instrumentation.py --child TOOL STEPS OUTDIR     (internal; TOOL = none | lepton | proton)
"""
from __future__ import annotations

import argparse
import os
import statistics

from in_kernel import profiler, run_child, time_steps, workload_step


def child(tool: str, steps: int, outdir: str, mode: str = "") -> None:
    step = workload_step(scoped=True)
    prof = None
    if tool != "none":
        prof, _ = profiler(tool)
        prof.start(os.path.join(outdir, tool), backend="instrumentation", mode=mode or None)
    time_steps(step, steps, prof)


def run(tool: str, steps: int, mode: str = "") -> tuple[float, float] | None:
    r = run_child(__file__, tool, str(steps), label=tool, options=("--mode", mode))
    return None if r is None else (r["ms_per_step"], r["finalize_s"])


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=200)
    ap.add_argument("--reps", type=int, default=1)
    ap.add_argument("--child", nargs=3, metavar=("TOOL", "STEPS", "OUTDIR"))
    ap.add_argument("--mode", default="", help="the instrumentation mode of both tools, e.g. default:buffer_size=512")
    a = ap.parse_args()
    if a.child:
        child(a.child[0], int(a.child[1]), a.child[2], a.mode)
        return
    rows = {}
    for tool in ("none", "lepton", "proton"):
        got = [r for r in (run(tool, a.steps, a.mode) for _ in range(a.reps)) if r]
        rows[tool] = (statistics.median(g[0] for g in got), statistics.median(g[1] for g in got)) if got \
            else (float("nan"), float("nan"))
    base = rows["none"][0]
    # The loop alone flatters a tool that defers its work to finalize: the last column spreads
    # finalize's decoding over the steps.
    print("| tool | ms/step | x no profiler | finalize s | ms/step with finalize | x no profiler |")
    print("|---|---|---|---|---|---|")
    for tool, (ms, fin) in rows.items():
        total = ms + fin * 1e3 / a.steps
        print(f"| {tool} | {ms:.3f} | {ms / base:.2f} | {fin:.3f} | {total:.3f} | {total / base:.2f} |")
    print(f"proton / lepton: {rows['proton'][0] / rows['lepton'][0]:.1f}x")


if __name__ == "__main__":
    main()
