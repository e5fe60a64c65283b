"""Lepton's and Proton's overhead on the overhead benchmark's workload, each configuration alternated
with no profiler in one process (GPU machine).

The overhead benchmark of record (`overhead.py`, kept in the development workspace beside this
repository, not in it) runs every configuration in its own process. On a shared host the
processes run at different speeds: bare steps of one script measured 31-69 µs in consecutive
processes on the H100 machines, which moves a ratio by more than the profilers differ. Here one
process per tool takes turns: a chunk with no profiler, then a chunk under each configuration
(`start`, warm-up, the timed chunk, `finalize` outside the timing), for many rounds; each
configuration's ratio is the median over rounds of its chunk against that round's bare chunk. Lepton
and Proton cannot share a process (each holds CUPTI's one subscription), so each tool's ratios are
against its own process's bare steps. The bare steps before the first start are printed too: a tool
that leaves CUPTI attached after `finalize` makes the later bare chunks slower, and its ratios look
better than they are.

Each step is `overhead.py`'s (`workload.py`), inside a scope. Both tools run through their public
API only (`start`, `scope`, `finalize`): `import lepton` from this checkout, `import triton.profiler`.

usage:  python bench/paired.py [--rounds 20] [--chunk 400] [--tools lepton,proton]
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


def summary(stdout: str) -> tuple[float, dict[str, tuple[float, float, float]]] | None:
    """From a child's output: the median bare step before its first start, and per configuration
    (`none` first) the median µs per step, that minus the median bare step, and the median of each
    round's ratio to that round's bare chunk. None if the child printed no steps."""
    lines = [line.split() for line in stdout.splitlines()]
    steps = {w[1]: [float(v) for v in w[2:]] for w in lines if w and w[0] == "STEP"}
    if "none" not in steps:
        return None
    fresh = statistics.median(float(v) for w in lines if w and w[0] == "FRESH" for v in w[1:])
    base = steps["none"]
    return fresh, {name: (statistics.median(v), statistics.median(v) - statistics.median(base),
                          statistics.median(s / b for s, b in zip(v, base)))
                   for name, v in steps.items()}


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
        result = summary(p.stdout)
        if result is None:
            print(f"{tool}: failed\n{p.stderr[-1500:]}")
            continue
        fresh, table[tool] = result
        print(f"{tool}: bare steps {fresh:.2f} µs before its first start, "
              f"{table[tool]['none'][0]:.2f} µs between its sessions")
    print(f"per step, median of {a.rounds} rounds of {a.chunk} steps; ratio: per round, against that "
          "round's bare chunk")
    print(f"{'config':22}" + "".join(f" {t + ' µs':>12} {'+µs':>6} {'ratio':>6}" for t in table))
    for name in ["none"] + [c for c, _ in CONFIGS]:
        print(f"{name:22}" + "".join(f" {table[t][name][0]:12.2f} {table[t][name][1]:6.2f} "
                                     f"{table[t][name][2]:6.3f}" for t in table))


if __name__ == "__main__":
    main()
