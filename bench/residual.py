"""What a profiler leaves behind: bare steps (no profiler) before and after one profiled session in
the same process (GPU machine).

A profiler that unsubscribes from CUPTI but leaves it attached keeps CUPTI's launch
instrumentation in every later launch of the process; its later bare steps are slower than the
earlier ones. Tools: `lepton`, `lepton-attached` (Lepton with `cuptiFinalize` skipped, as before
it detached), `proton`, `none` (no session between the chunks: the process's own drift).
Each tool's process runs one session of each kind in `--sessions` (overhead.py's configurations:
shadow, hook, python, trace), with bare chunks before the first and after each.

usage:  python bench/residual.py [--tools lepton,lepton-attached,proton,none] [--sessions shadow]
                                 [--chunks 12] [--chunk 400]
        python bench/residual.py --child TOOL SESSIONS CHUNKS CHUNK            (internal)
"""
from __future__ import annotations

import argparse
import functools
import os
import statistics
import subprocess
import sys
import tempfile

SRC = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "src")
SESSIONS = {"shadow": {}, "hook": {"hook": "triton"}, "python": {"context": "python"},
            "trace": {"data": "trace"}}


def child(tool: str, sessions: list[str], chunks: int, chunk: int) -> None:
    from workload import overhead_step, per_step_us, step_loops

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

    timed = functools.partial(per_step_us, chunk=chunk)

    print("BARE before", " ".join(f"{timed(bare):.2f}" for _ in range(chunks)), flush=True)
    for name in sessions:
        if prof is not None:
            prof.start(os.path.join(tempfile.mkdtemp(), "residual"), **SESSIONS[name])
            scoped(2000)
            prof.finalize()
        print(f"BARE after_{name}", " ".join(f"{timed(bare):.2f}" for _ in range(chunks)), flush=True)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--tools", default="lepton,lepton-attached,proton,none")
    ap.add_argument("--sessions", default="shadow")
    ap.add_argument("--chunks", type=int, default=12)
    ap.add_argument("--chunk", type=int, default=400)
    ap.add_argument("--child", nargs=4)
    a = ap.parse_args()
    if a.child:
        child(a.child[0], a.child[1].split(","), int(a.child[2]), int(a.child[3]))
        return
    stages = ["before"] + [f"after_{s}" for s in a.sessions.split(",")]
    print("bare µs per step (median of the chunks) before the first session and after each; "
          "in brackets: against before")
    print(f"{'tool':16}" + "".join(f" {s:>22}" for s in stages))
    for tool in a.tools.split(","):
        p = subprocess.run([sys.executable, __file__, "--child", tool, a.sessions, str(a.chunks), str(a.chunk)],
                           capture_output=True, text=True, timeout=600)
        rows = {line.split()[1]: statistics.median(float(v) for v in line.split()[2:])
                for line in p.stdout.splitlines() if line.startswith("BARE")}
        if set(rows) != set(stages):
            print(f"{tool}: failed\n{p.stderr[-1500:]}")
            continue
        print(f"{tool:16}" + "".join(f" {rows[s]:13.2f} ({rows[s] / rows['before']:5.3f})" for s in stages),
              flush=True)


if __name__ == "__main__":
    main()
