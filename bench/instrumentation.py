"""What scopes inside kernels cost a user, per kernel shape: no profiler, Lepton's
`backend="instrumentation"` and Proton's, at several run lengths. GPU machine only.

The shapes are `bench/scope_shapes.py`'s: one scope, two sibling scopes, nested scopes, a scope
around a loop, a scope inside a loop, three kernels interleaved, a Gluon kernel; each step is ~30 us
of kernel work and one torch kernel. Every configuration runs in its own process (~10 s of start-up
each: torch, Triton, the CUDA context); the kernels are compiled inside the session.

Per shape, tool and length one row of one markdown table: the loop's ms/step, finalize's seconds,
the amortized ms/step (loop + finalize / steps: what a user pays), that as a multiple of the bare
step (no profiler) and as a fraction of Proton's, how many launches Lepton summed on the device and
how many it decoded on the host and why (from the profile's ROOT `lepton` key), how each kernel's
profile buffer was sized, and the peak of torch's device memory over the run. The bare step runs
once per shape, at the longest length. The last lines check the goal of the issue: amortized at most
2x the bare step at 2,000 and 20,000 steps (3x for `in_loop`) and at least 30x cheaper than Proton.

Default: the 7 shapes; none at 20,000 steps, Proton at 200, Lepton at 200, 2,000 and 20,000: 35
processes, about 8 minutes on an H100 (35 x ~10 s of start-up; Proton ~20 ms a step). Runs left when
--budget seconds have passed are skipped, and a run is cut at the budget, so that the whole fits a
10-minute job.

usage:  python bench/instrumentation.py [--shapes one_scope,...] [--steps 200,2000,20000]
            [--proton-steps 200] [--proton-timeout 180] [--timeout 240] [--budget 570] [--mode MODE]
        python bench/instrumentation.py --child SHAPE TOOL STEPS OUTDIR    (internal; TOOL = none | lepton | proton)
A Proton run longer than --proton-timeout seconds is skipped, and the table says so.
"""
from __future__ import annotations

import argparse
import json
import os
import time
from collections import Counter
from dataclasses import dataclass

from in_kernel import amortized_ms, profiler, run_child, time_steps

SHAPES = ("one_scope", "siblings", "nested", "around_loop", "in_loop", "interleaved", "gluon")
GOAL_X_BARE = {"in_loop": 3.0}  # amortized over the bare step, at most; 2.0 for the other shapes
GOAL_X_PROTON = 30.0  # Proton's amortized over Lepton's, at least
GOAL_FROM_STEPS = 2000  # the goal holds at this many steps and more


@dataclass(frozen=True)
class Run:
    shape: str
    tool: str
    steps: int


def plan(shapes: list[str], steps: list[int], proton_steps: list[int], tools: list[str]) -> list[Run]:
    """The runs in order, per shape: the bare step (at the longest length), Proton, then Lepton."""
    runs = []
    for shape in shapes:
        if "none" in tools:
            runs.append(Run(shape, "none", max(steps)))
        if "proton" in tools:
            runs += [Run(shape, "proton", n) for n in proton_steps]
        if "lepton" in tools:
            runs += [Run(shape, "lepton", n) for n in steps]
    return runs


# -- the child ------------------------------------------------------------------------------------------
def child(shape: str, tool: str, steps: int, outdir: str, mode: str = "") -> None:
    import scope_shapes

    try:
        step = scope_shapes.step_of(shape)
    except scope_shapes.Unavailable as e:
        print(f"SKIP {e}", flush=True)
        return
    prof = None
    if tool != "none":
        prof, _ = profiler(tool)
        prof.start(os.path.join(outdir, tool), backend="instrumentation", mode=mode or None)
    time_steps(step, steps, prof)
    if tool == "lepton":
        with open(os.path.join(outdir, "lepton.hatchet")) as f:
            root = json.load(f)[0]
        print("DETAIL " + json.dumps(root.get("lepton", {}).get("instrumentation_paths", {})), flush=True)


# -- the table ------------------------------------------------------------------------------------------
HEADER = ("| shape | tool | steps | loop ms/step | finalize s | amortized ms/step | × bare step | "
          "Proton ÷ Lepton | "
          "launches: device-summed / host-decoded (why) | buffer | peak device MiB |")


def paths_cells(counts: dict[str, dict]) -> tuple[str, str]:
    """(launches cell, buffer cell) of Lepton's path counts, summed over the step's kernels."""
    device = sum(k["device_sums"] for k in counts.values())
    why: Counter = Counter()
    for k in counts.values():
        why.update(k["host_decoded"])
    host = sum(why.values())
    launches = f"{device:,} / {host:,}"
    if host:
        launches += " (" + ", ".join(f"{reason}: {n:,}" for reason, n in why.most_common()) + ")"
    buffers = "; ".join(sorted({k["buffer"] or "?" for k in counts.values()})) or "—"
    return launches, buffers


def row(run: Run, r: dict | None, bare: float | None, proton: float | None) -> str:
    """One table row; `bare`: the bare step's ms, `proton`: Proton's amortized ms to compare with."""
    head = f"| {run.shape} | {run.tool} | {run.steps:,} |"
    if r is None or "skipped" in r:
        why = r["skipped"] if r else "skipped or failed (see above)"
        return f"{head} — | — | — | — | — | {why} | — | — |"
    amortized = amortized_ms(r, run.steps)
    x_bare = f"{amortized / bare:.2f}" if bare else "—"
    x_proton = f"{proton / amortized:.0f}×" if proton and run.tool == "lepton" else "—"
    if run.tool == "lepton":
        launches, buffers = paths_cells(r.get("detail", {}))
    elif run.tool == "proton":
        launches, buffers = "every launch on the host, in the loop", "Proton's"
    else:
        launches, buffers = "—", "—"
    return (f"{head} {r['ms_per_step']:.3f} | {r['finalize_s']:.3f} | {amortized:.3f} | {x_bare} | {x_proton} | "
            f"{launches} | {buffers} | {r.get('dev_peak_mib', float('nan')):.0f} |")


def goal_check(shape: str, lepton: dict[int, float], bare: float | None, proton: dict[int, float]) -> str:
    """Whether Lepton's amortized ms per length meets the goal against the bare step and Proton's
    amortized ms per length (the nearest length Proton ran); lengths below `GOAL_FROM_STEPS` do
    not count. "met", or what misses it and what was not measured."""
    limit = GOAL_X_BARE.get(shape, 2.0)
    counted = {n: ms for n, ms in sorted(lepton.items()) if n >= GOAL_FROM_STEPS}
    if not counted:
        return f"not measured at {GOAL_FROM_STEPS:,} steps or more"
    misses = []
    for steps, amortized in counted.items():
        if bare and amortized > limit * bare:
            misses.append(f"{amortized / bare:.2f}× bare at {steps:,} steps (goal ≤ {limit:g}×)")
        theirs = nearest(proton, steps)
        if theirs and theirs / amortized < GOAL_X_PROTON:
            misses.append(f"only {theirs / amortized:.0f}× cheaper than Proton at {steps:,} steps "
                          f"(goal ≥ {GOAL_X_PROTON:g}×)")
    unmeasured = [what for what, value in (("bare step", bare), ("Proton", proton)) if not value]
    verdict = "; ".join(misses) if misses else "met"
    return verdict + (f" ({' and '.join(unmeasured)} not measured)" if unmeasured else "")


def nearest(results: dict[int, float], steps: int) -> float | None:
    """The result at the length nearest `steps` (Proton runs at fewer lengths than Lepton)."""
    return results[min(results, key=lambda n: abs(n - steps))] if results else None


# -- the parent -----------------------------------------------------------------------------------------
def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--shapes", default=",".join(SHAPES), help=f"some of {','.join(SHAPES)}")
    ap.add_argument("--steps", default="200,2000,20000")
    ap.add_argument("--proton-steps", default="200", help="Proton's lengths ('' for none)")
    ap.add_argument("--tools", default="none,lepton,proton")
    ap.add_argument("--proton-timeout", type=float, default=180)
    ap.add_argument("--timeout", type=float, default=240, help="seconds a run of no profiler or Lepton may take")
    ap.add_argument("--budget", type=float, default=570, help="seconds for the whole; later runs are skipped")
    ap.add_argument("--mode", default="",
                    help="the instrumentation mode of both tools, e.g. default:buffer_size=512")
    ap.add_argument("--child", nargs=4, metavar=("SHAPE", "TOOL", "STEPS", "OUTDIR"))
    a = ap.parse_args()
    if a.child:
        shape, tool, steps, out = a.child
        child(shape, tool, int(steps), out, a.mode)
        return
    shapes = [s for s in a.shapes.split(",") if s]
    unknown = sorted(set(shapes) - set(SHAPES))
    if unknown:
        ap.error(f"unknown shape(s) {','.join(unknown)}: choose among {','.join(SHAPES)}")
    steps = [int(s) for s in a.steps.split(",") if s]
    proton_steps = [int(s) for s in a.proton_steps.split(",") if s]
    runs = plan(shapes, steps, proton_steps, a.tools.split(","))
    print(f"{len(runs)} runs of {len(shapes)} shape(s), each in its own process", flush=True)
    print(HEADER)
    print("|---" * HEADER.count(" | ") + "|---|", flush=True)
    measure(runs, a)


def measure(runs: list[Run], a: argparse.Namespace) -> None:
    """Runs `runs` in order, printing each row as it comes, then the goal's check per shape."""
    deadline = time.monotonic() + a.budget
    bare: dict[str, float] = {}
    proton: dict[str, dict[int, float]] = {}
    lepton: dict[str, dict[int, float]] = {}
    dropped: set[str] = set()  # shapes whose bare step could not run: the rest of them is skipped
    for run in runs:
        if run.shape in dropped:
            continue
        left = deadline - time.monotonic()
        if left <= 0:
            print(row(run, {"skipped": "skipped: past --budget"}, None, None), flush=True)
            continue
        timeout = min(a.proton_timeout if run.tool == "proton" else a.timeout, left)
        r = run_child(__file__, run.shape, run.tool, str(run.steps), options=("--mode", a.mode),
                      label=f"{run.shape} {run.tool} {run.steps} steps", timeout=timeout)
        if r is None and run.tool == "proton":
            r = {"skipped": f"skipped: failed or ran past {timeout:.0f} s"}
        if run.tool == "none" and (r is None or "skipped" in r):
            dropped.add(run.shape)
            why = r["skipped"] if r else "failed (see above)"
            print(row(run, {"skipped": f"{why}; the shape's other runs skipped"}, None, None), flush=True)
            continue
        if r is not None and "skipped" not in r:
            amortized = amortized_ms(r, run.steps)
            if run.tool == "none":
                bare[run.shape] = amortized
            else:
                (proton if run.tool == "proton" else lepton).setdefault(run.shape, {})[run.steps] = amortized
        compare = nearest(proton.get(run.shape, {}), run.steps)
        print(row(run, r, bare.get(run.shape), compare), flush=True)
    print(f"\nGoal: amortized ≤ 2× the bare step at {GOAL_FROM_STEPS:,} steps and more "
          f"(≤ {GOAL_X_BARE['in_loop']:g}× for in_loop), ≥ {GOAL_X_PROTON:g}× cheaper than Proton:")
    for shape in dict.fromkeys(run.shape for run in runs):
        verdict = "not measured" if shape in dropped else \
            goal_check(shape, lepton.get(shape, {}), bare.get(shape), proton.get(shape, {}))
        print(f"- {shape}: {verdict}")


if __name__ == "__main__":
    main()
