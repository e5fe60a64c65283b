"""`../shared/bench/overhead.py`'s table with what it measures but does not print: start and finalize
times, and each process's loop ratio (GPU machine).

The children are overhead.py's own (`--child MODE STEPS OUTDIR`), run in the same interleaved order,
so the numbers are overhead.py's; only the table adds columns. The per-process ratios show how far
one process's speed moves a median (on the shared H100 hosts, bare processes alone spread 0.7-1.3).
Lepton is imported from this checkout's `src` (put first on the children's PYTHONPATH).

usage:  python bench/overhead_detail.py [--overhead ../shared/bench/overhead.py] [--reps 5] [--only TEXT]
                                        [--steps 10000] [--extra lepton:python:trace:none,...]
`--extra` adds configurations overhead.py does not list (its children take any TOOL:CONTEXT:DATA:HOOK).
On the GPU machine, where `../shared` does not travel, copy overhead.py into an ignored folder that
the call carries, and pass its path.
"""
from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.join(HERE, "..", "src")
DEFAULT_OVERHEAD = os.path.join(HERE, "..", "..", "shared", "bench", "overhead.py")


def configs_of(overhead: str) -> list[str]:
    """overhead.py's CONFIGS, read without importing it (its import needs nothing, but its
    children need torch)."""
    namespace: dict = {}
    with open(overhead) as f:
        source = f.read()
    start = source.index("CONFIGS = [")
    exec(source[start:source.index("]", start) + 1], namespace)
    return namespace["CONFIGS"]


def run_child(overhead: str, mode: str, steps: int) -> dict[str, float] | str:
    """One child's RESULT fields, or its error output."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in (SRC, os.environ.get("PYTHONPATH")) if p))
    with tempfile.TemporaryDirectory() as d:
        p = subprocess.run([sys.executable, overhead, "--child", mode, str(steps), d],
                           capture_output=True, text=True, timeout=600, env=env)
    line = [ln for ln in p.stdout.splitlines() if ln.startswith("RESULT")]
    if not line:
        return p.stderr[-800:].strip() or f"exit {p.returncode}, no RESULT line"
    return {k: float(v) for k, v in (f.split("=") for f in line[0].split()[2:])}


def table(results: dict[str, list[dict[str, float]]]) -> list[str]:
    base = statistics.median(r["loop"] for r in results["none"])
    lines = [f"{'config':28} {'loop s':>8} {'loop x':>7} {'start ms':>9} {'final ms':>9} {'bytes':>10}  "
             "loop x of each process"]
    for c, rs in results.items():
        if not rs:
            lines.append(f"{c:28} failed")
            continue
        med = {k: statistics.median(r[k] for r in rs) for k in ("loop", "start", "finalize", "bytes")}
        each = " ".join(f"{r['loop'] / base:.2f}" for r in rs)
        lines.append(f"{c:28} {med['loop']:8.4f} {med['loop'] / base:7.2f} {1e3 * med['start']:9.1f} "
                     f"{1e3 * med['finalize']:9.1f} {med['bytes']:10.0f}  {each}")
    return lines


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--overhead", default=DEFAULT_OVERHEAD, help="the path of overhead.py")
    ap.add_argument("--steps", type=int, default=10000)
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--only", default="", help="keep configs containing this text (plus none)")
    ap.add_argument("--extra", default="", help="comma-separated configurations to add")
    a = ap.parse_args()
    if not os.path.isfile(a.overhead):
        sys.exit(f"overhead_detail: no overhead.py at {a.overhead}; pass --overhead PATH")
    configs = configs_of(a.overhead) + [c for c in a.extra.split(",") if c]
    configs = [c for c in configs if c == "none" or a.only in c]
    results: dict[str, list[dict[str, float]]] = {c: [] for c in configs}
    for _ in range(a.reps):
        for c in configs:  # interleaved, as overhead.py does
            r = run_child(a.overhead, c, a.steps)
            if isinstance(r, str):
                print(f"FAILED {c}: {r}", flush=True)
            else:
                results[c].append(r)
    if not results.get("none"):
        sys.exit("overhead_detail: the runs with no profiler failed; no ratios")
    print("\n".join(table(results)))


if __name__ == "__main__":
    main()
