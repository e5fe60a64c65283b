"""Lepton's and Proton's overhead on the overhead benchmark's workload, each configuration alternated
with no profiler in one process (GPU machine).

`../shared/bench/overhead.py` runs every configuration in its own process. On a shared host the
processes run at different speeds: bare steps of one script measured 31-69 µs in consecutive
processes on the H100 machines, which moves a ratio by more than the profilers differ. Here one
process per tool takes turns: a chunk with no profiler, then a chunk under each configuration
(`start`, warm-up, the timed chunk, `finalize` outside the timing), for many rounds; each
configuration's ratio is the median over rounds of its chunk against that round's bare chunk. Lepton
and Proton cannot share a process (each holds CUPTI's one subscription), so each tool's ratios are
against its own process's bare steps. The bare steps before the first start are printed too: a tool
that leaves CUPTI attached after `finalize` makes the later bare chunks slower, and its ratios look
better than they are.

Each step is `overhead.py`'s (`workload.py`), inside a scope.

Tool `lepton-api` is Lepton with the launch API records on from the start (as once a second thread
marks a path; every launch before session 8), to weigh what timing launches by kernel records saves.

usage:  python bench/paired.py [--rounds 20] [--chunk 400] [--tools lepton,proton,lepton-api]
        python bench/paired.py --child TOOL ROUNDS CHUNK            (internal)
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
CONFIGS = [  # (name, start() keywords), as overhead.py's <context>:<data>:<hook>
    ("shadow:tree:none", {}),
    ("shadow:tree:triton", {"hook": "triton"}),
    ("python:tree:none", {"context": "python"}),
    ("shadow:trace:none", {"data": "trace"}),
]


def child(tool: str, rounds: int, chunk: int) -> None:
    from workload import overhead_step, per_step_us, step_loops

    step = overhead_step()
    if tool == "proton":
        import triton.profiler as prof
    else:
        sys.path.insert(0, SRC)
        import lepton as prof
        if tool == "lepton-api":  # launch API records from the start, as with several threads
            from lepton.collect.cupti.backend import CuptiBackend
            CuptiBackend._attribute_launches = CuptiBackend._enable_launch_records

    bare, scoped = step_loops(step, prof.scope)

    timed = functools.partial(per_step_us, chunk=chunk)

    out = tempfile.mkdtemp()
    # Bare steps before the first start: a profiler that leaves CUPTI attached after finalize
    # slows the bare chunks between its sessions, and so flatters its own ratios.
    print("FRESH", " ".join(f"{timed(bare):.3f}" for _ in range(max(rounds // 4, 3))), flush=True)
    per_step: dict[str, list[float]] = {name: [] for name in ["none"] + [c for c, _ in CONFIGS]}
    for r in range(rounds):
        per_step["none"].append(timed(bare))
        for name, kwargs in CONFIGS:
            prof.start(os.path.join(out, f"{name.replace(':', '_')}_{r}"), **kwargs)
            per_step[name].append(timed(scoped))
            prof.finalize()
    for name, values in per_step.items():
        print("STEP", name, " ".join(f"{v:.3f}" for v in values), flush=True)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=20)
    ap.add_argument("--chunk", type=int, default=400)
    ap.add_argument("--tools", default="lepton,proton")
    ap.add_argument("--child", nargs=3)
    a = ap.parse_args()
    if a.child:
        child(a.child[0], int(a.child[1]), int(a.child[2]))
        return
    table: dict[str, dict[str, tuple[float, float, float]]] = {}
    for tool in a.tools.split(","):
        p = subprocess.run([sys.executable, __file__, "--child", tool, str(a.rounds), str(a.chunk)],
                           capture_output=True, text=True, timeout=1200)
        steps = {line.split()[1]: [float(v) for v in line.split()[2:]]
                 for line in p.stdout.splitlines() if line.startswith("STEP")}
        if not steps:
            print(f"{tool}: failed\n{p.stderr[-1500:]}")
            continue
        fresh = [float(v) for line in p.stdout.splitlines() if line.startswith("FRESH") for v in line.split()[1:]]
        base = steps.pop("none")
        print(f"{tool}: bare steps {statistics.median(fresh):.2f} µs before its first start, "
              f"{statistics.median(base):.2f} µs between its sessions")
        table[tool] = {name: (statistics.median(v), statistics.median(v) - statistics.median(base),
                              statistics.median(s / b for s, b in zip(v, base)))
                       for name, v in steps.items()}
        table[tool]["none"] = (statistics.median(base), 0.0, 1.0)
    print(f"per step, median of {a.rounds} rounds of {a.chunk} steps; ratio: per round, against that "
          "round's bare chunk")
    print(f"{'config':22}" + "".join(f" {t + ' µs':>12} {'+µs':>6} {'ratio':>6}" for t in table))
    for name in ["none"] + [c for c, _ in CONFIGS]:
        print(f"{name:22}" + "".join(f" {table[t][name][0]:12.2f} {table[t][name][1]:6.2f} "
                                     f"{table[t][name][2]:6.3f}" for t in table))


if __name__ == "__main__":
    main()
