"""What scopes inside kernels cost against no profiler, per kernel shape, with the bare steps and
the instrumented ones taking turns in one process (GPU machine).

`instrumentation.py` runs each configuration in its own process and divides by one bare run per
shape. On the shared H100 hosts the bare step of one shape read 0.054-0.088 ms in consecutive
processes, which moves a ratio by more than the margin of the 2x goal. Here one process per shape
takes turns, for several rounds at each length: that many bare steps, then as many under a fresh
`backend="instrumentation"` session (started before the warm-up, finalized after the loop, the
finalize timed: what a user pays). Each round's ratio is its amortized ms per step, (loop +
finalize) / steps, over that round's bare ms per step; the median over rounds is the figure, with
the smallest and largest. The shapes are `scope_shapes.py`'s; steps run inside a scope, as in
`instrumentation.py`.

usage:  python bench/instrumentation_paired.py [--shapes one_scope,...] [--steps 2000,20000] [--rounds 3]
            [--budget 570]
        python bench/instrumentation_paired.py --child SHAPE STEPS ROUNDS    (internal)
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
SHAPES = ("one_scope", "siblings", "nested", "around_loop", "in_loop", "interleaved", "gluon")
GOAL_X_BARE = {"in_loop": 3.0}  # the median ratio, at most; 2.0 for the other shapes
GOAL_FROM_STEPS = 2000
WARM_UP = 5


def child(shape: str, lengths: list[int], rounds: int) -> None:
    sys.path.insert(0, SRC)
    import scope_shapes
    import torch

    import lepton

    try:
        step = scope_shapes.step_of(shape)
    except scope_shapes.Unavailable as e:
        print(f"SKIP {e}", flush=True)
        return

    def loop(steps: int, scoped: bool) -> float:
        torch.cuda.synchronize()
        t = time.perf_counter()
        for _ in range(steps):
            if scoped:
                with lepton.scope("step"):
                    step()
            else:
                step()
        torch.cuda.synchronize()
        return time.perf_counter() - t

    out = tempfile.mkdtemp()
    loop(WARM_UP, False)
    # the first session compiles the instrumented kernels and Lepton's sums: not in any round
    lepton.start(os.path.join(out, "warm"), backend="instrumentation")
    loop(WARM_UP, True)
    lepton.finalize()
    for steps in lengths:
        for r in range(rounds):
            loop(WARM_UP, False)
            bare = loop(steps, False)
            lepton.start(os.path.join(out, f"{steps}_{r}"), backend="instrumentation")
            loop(WARM_UP, True)
            instrumented = loop(steps, True)
            t = time.perf_counter()
            lepton.finalize()
            finalize = time.perf_counter() - t
            print(f"ROUND {steps} {bare / steps * 1e3:.5f} {(instrumented + finalize) / steps * 1e3:.5f} "
                  f"{finalize:.4f}", flush=True)


def summary(stdout: str) -> dict[int, dict[str, float]]:
    """Per length, from a child's `ROUND` lines: the median bare and amortized ms per step, the
    median finalize seconds, and the median, smallest and largest of the rounds' ratios."""
    rounds: dict[int, list[tuple[float, float, float]]] = {}
    for line in stdout.splitlines():
        words = line.split()
        if words and words[0] == "ROUND":
            rounds.setdefault(int(words[1]), []).append((float(words[2]), float(words[3]), float(words[4])))
    out = {}
    for steps, values in rounds.items():
        ratios = [amortized / bare for bare, amortized, _ in values]
        out[steps] = {"bare": statistics.median(v[0] for v in values),
                      "amortized": statistics.median(v[1] for v in values),
                      "finalize": statistics.median(v[2] for v in values),
                      "ratio": statistics.median(ratios), "low": min(ratios), "high": max(ratios),
                      "rounds": len(values)}
    return out


def goal(shape: str, results: dict[int, dict[str, float]]) -> str:
    """"met", or which lengths (of `GOAL_FROM_STEPS` and more) miss the goal, by their median."""
    limit = GOAL_X_BARE.get(shape, 2.0)
    counted = {n: r for n, r in sorted(results.items()) if n >= GOAL_FROM_STEPS}
    if not counted:
        return f"not measured at {GOAL_FROM_STEPS:,} steps or more"
    misses = [f"{r['ratio']:.2f}x at {n:,} steps" for n, r in counted.items() if r["ratio"] > limit]
    return f"misses ≤ {limit:g}x: " + ", ".join(misses) if misses else "met"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--shapes", default=",".join(SHAPES))
    ap.add_argument("--steps", default="2000,20000")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--budget", type=float, default=570, help="seconds for the whole; later shapes are skipped")
    ap.add_argument("--child", nargs=3, metavar=("SHAPE", "STEPS", "ROUNDS"))
    a = ap.parse_args()
    if a.child:
        child(a.child[0], [int(s) for s in a.child[1].split(",")], int(a.child[2]))
        return
    shapes = [s for s in a.shapes.split(",") if s]
    unknown = sorted(set(shapes) - set(SHAPES))
    if unknown:
        ap.error(f"unknown shape(s) {','.join(unknown)}: choose among {','.join(SHAPES)}")
    deadline = time.monotonic() + a.budget
    print("| shape | steps | bare ms/step | amortized ms/step | finalize s | × bare: median (least-most) |")
    print("|---|---|---|---|---|---|", flush=True)
    verdicts = {}
    for shape in shapes:
        left = deadline - time.monotonic()
        if left <= 0:
            verdicts[shape] = "skipped: past --budget"
            continue
        try:
            p = subprocess.run([sys.executable, __file__, "--child", shape, a.steps, str(a.rounds)],
                               capture_output=True, text=True, timeout=left, check=False)
        except subprocess.TimeoutExpired:
            verdicts[shape] = "skipped: ran past --budget"
            continue
        results = summary(p.stdout)
        if not results:
            skip = next((line[5:] for line in p.stdout.splitlines() if line.startswith("SKIP ")), None)
            verdicts[shape] = f"skipped: {skip}" if skip else f"failed: {p.stderr.strip()[-300:]}"
            continue
        for steps, r in sorted(results.items()):
            print(f"| {shape} | {steps:,} | {r['bare']:.4f} | {r['amortized']:.4f} | {r['finalize']:.3f} | "
                  f"{r['ratio']:.2f} ({r['low']:.2f}-{r['high']:.2f}, {r['rounds']} rounds) |", flush=True)
        verdicts[shape] = goal(shape, results)
    print(f"\nGoal: the median round at {GOAL_FROM_STEPS:,} steps and more ≤ 2x the bare step "
          f"(≤ {GOAL_X_BARE['in_loop']:g}x for in_loop):")
    for shape, verdict in verdicts.items():
        print(f"- {shape}: {verdict}")


if __name__ == "__main__":
    main()
