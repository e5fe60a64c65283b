"""What a profiler leaves behind: bare steps (no profiler) before and after one profiled session in
the same process (GPU machine).

A profiler that unsubscribes from CUPTI but leaves it attached keeps CUPTI's launch
instrumentation in every later launch of the process; its later bare steps are slower than the
earlier ones. Tools: `lepton`, `lepton-attached` (Lepton with `cuptiFinalize` skipped, as before
it detached), `proton`, `none` (no session between the chunks: the process's own drift).

usage:  python bench/residual.py [--tools lepton,lepton-attached,proton,none] [--chunks 12] [--chunk 400]
        python bench/residual.py --child TOOL CHUNKS CHUNK            (internal)
"""
from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time

SRC = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "src")


def child(tool: str, chunks: int, chunk: int) -> None:
    import torch
    from workload import overhead_step, step_loops

    step = overhead_step()
    prof = None
    if tool == "proton":
        import triton.profiler as prof
    elif tool.startswith("lepton"):
        sys.path.insert(0, SRC)
        import lepton as prof
        from lepton.collect.cupti import backend
        backend.DETACH_AT_STOP = tool == "lepton"
    bare, scoped = step_loops(step, prof.scope if prof else None)

    def timed(run) -> float:
        run(50)
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        run(chunk)
        torch.cuda.synchronize()
        return (time.perf_counter() - t0) / chunk * 1e6

    before = [timed(bare) for _ in range(chunks)]
    if prof is not None:
        prof.start(os.path.join(tempfile.mkdtemp(), "residual"))
        scoped(2000)
        prof.finalize()
    after = [timed(bare) for _ in range(chunks)]
    print("BEFORE", " ".join(f"{v:.2f}" for v in before), flush=True)
    print("AFTER", " ".join(f"{v:.2f}" for v in after), flush=True)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--tools", default="lepton,lepton-attached,proton,none")
    ap.add_argument("--chunks", type=int, default=12)
    ap.add_argument("--chunk", type=int, default=400)
    ap.add_argument("--child", nargs=3)
    a = ap.parse_args()
    if a.child:
        child(a.child[0], int(a.child[1]), int(a.child[2]))
        return
    print(f"{'tool':16} {'before µs':>10} {'after µs':>10} {'after/before':>13}")
    for tool in a.tools.split(","):
        p = subprocess.run([sys.executable, __file__, "--child", tool, str(a.chunks), str(a.chunk)],
                           capture_output=True, text=True, timeout=600,
                           cwd=os.path.dirname(os.path.abspath(__file__)))
        rows = {line.split()[0]: [float(v) for v in line.split()[1:]]
                for line in p.stdout.splitlines() if line.startswith(("BEFORE", "AFTER"))}
        if len(rows) != 2:
            print(f"{tool}: failed\n{p.stderr[-1500:]}")
            continue
        b, f = statistics.median(rows["BEFORE"]), statistics.median(rows["AFTER"])
        print(f"{tool:16} {b:10.2f} {f:10.2f} {f / b:13.3f}", flush=True)


if __name__ == "__main__":
    main()
