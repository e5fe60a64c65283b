"""What a device-tensor metric costs a step: with it, without it, and with the `.item()` a user would
otherwise write, for Lepton and (where `triton.profiler` imports) Proton, side by side. GPU machine.

A step is a few kernels whose GPU time is about their launch time (`--size`), so the host runs ahead
of the device: a host wait in the step (a `.item()`, or a synchronous copy of the metric) makes the
step as long as its launches plus its kernels. Modes, per tool (each tool in its own process):

- `bare`: the step, no profiler (measured before the session starts);
- `scope`: the step in `scope("step")`;
- `tensor`: the same scope given `{"loss": loss}`, the previous step's loss as a device tensor;
- `item`: the same scope given `{"loss": loss.item()}` (a wait every step, for comparison);
- `graph`, `graph+tensor`: the step (with its scope, and with the tensor metric) captured in a CUDA
  graph of `--graph-steps` steps and replayed; per step of the graph.

The profiler's modes are alternated in `--rounds` rounds in a random order (design.md, "Measuring
overhead"); the table gives each mode's median ms/step and, last, what the tensor metric adds over
the scope alone against what `.item()` adds.

usage:  python bench/tensor_metrics.py [--steps 500] [--rounds 7] [--size 256] [--graph-steps 20]
            [--tools lepton,proton]
        python bench/tensor_metrics.py --child TOOL STEPS ROUNDS SIZE GRAPH_STEPS   (internal)
"""
from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time

SRC = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "src")
MODES = ("bare", "scope", "tensor", "item", "graph", "graph+tensor")


def _tool(name: str):
    if name == "lepton":
        sys.path.insert(0, SRC)
        import lepton as prof
    else:
        import triton.profiler as prof
    return prof


def _child(tool: str, steps: int, rounds: int, size: int, graph_steps: int) -> dict:
    import torch

    prof = _tool(tool)
    x = torch.randn(size, size, device="cuda")
    w = torch.randn(size, size, device="cuda")

    def step():
        return (torch.relu(x @ w) * 0.5).sum()

    def timed(fn, n: int) -> float:
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        for _ in range(n):
            fn()
        torch.cuda.synchronize()
        return (time.perf_counter() - t0) * 1e3 / n

    def scoped(metric):
        """The step in a scope given `metric(the previous step's loss)` (any Proton's `scope` takes
        metrics when it is entered)."""
        last = [step()]

        def run():
            with prof.scope("step", metrics=metric(last[0])):
                last[0] = step()
        return run

    modes = {"scope": scoped(lambda loss: None), "tensor": scoped(lambda loss: {"loss": loss}),
             "item": scoped(lambda loss: {"loss": loss.item()})}
    for _ in range(3):
        step()
    results = {m: [] for m in MODES}
    results["bare"] = [timed(step, steps) for _ in range(rounds)]
    prof.start(os.path.join(os.environ["BENCH_OUT"], f"tensor_metrics_{tool}"))
    graphs = {}
    stream = torch.cuda.Stream()
    for mode, metric in (("graph", lambda loss: None), ("graph+tensor", lambda loss: {"loss": loss})):
        try:
            run = scoped(metric)
            with torch.cuda.stream(stream):
                run()  # warm-up on the capture stream
                torch.cuda.synchronize()
                g = torch.cuda.CUDAGraph()
                with torch.cuda.graph(g, stream=stream):
                    for _ in range(graph_steps):
                        run()
            graphs[mode] = g
        except Exception as e:  # noqa: BLE001  (a tool that cannot capture it: said in the table)
            results[mode] = f"{type(e).__name__}: {str(e).splitlines()[0][:60]}"
    for mode, g in graphs.items():
        modes[mode] = g.replay
    for fn in modes.values():
        fn()
    for _ in range(rounds):
        for mode in random.sample(list(modes), len(modes)):
            per_call = timed(modes[mode], max(steps // (graph_steps if mode in graphs else 1), 1))
            results[mode].append(per_call / (graph_steps if mode in graphs else 1))
    prof.finalize()
    return {m: v if isinstance(v, str) else (statistics.median(v) if v else None) for m, v in results.items()}


def _run(tool: str, args) -> dict:
    cmd = [sys.executable, __file__, "--child", tool, str(args.steps), str(args.rounds), str(args.size),
           str(args.graph_steps)]
    with tempfile.TemporaryDirectory() as out:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=args.timeout, check=False,
                           env=dict(os.environ, BENCH_OUT=out))
    lines = [ln for ln in p.stdout.splitlines() if ln.startswith("RESULT ")]
    if p.returncode != 0 or not lines:
        tail = (p.stderr.strip().splitlines() or ["no output"])[-1]
        return {m: f"failed: {tail[:70]}" for m in MODES}
    return json.loads(lines[-1][len("RESULT "):])


def _cell(v) -> str:
    return f"{v:.4f}" if isinstance(v, float) else ("-" if v is None else str(v))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--steps", type=int, default=500)
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--size", type=int, default=256)
    ap.add_argument("--graph-steps", type=int, default=20)
    ap.add_argument("--tools", default="lepton,proton")
    ap.add_argument("--timeout", type=int, default=280)
    ap.add_argument("--child", nargs=5)
    args = ap.parse_args(argv)
    if args.child:
        tool, steps, rounds, size, graph_steps = args.child
        print("RESULT " + json.dumps(_child(tool, int(steps), int(rounds), int(size), int(graph_steps))))
        return 0
    tools = [t for t in args.tools.split(",") if t]
    table = {t: _run(t, args) for t in tools}
    print(f"steps={args.steps} rounds={args.rounds} size={args.size} graph_steps={args.graph_steps}\n")
    print("| mode | " + " | ".join(f"{t} ms/step" for t in tools) + " |")
    print("|---|" + "---|" * len(tools))
    for mode in MODES:
        print(f"| {mode} | " + " | ".join(_cell(table[t].get(mode)) for t in tools) + " |")
    print()
    for t in tools:
        r = table[t]
        if all(isinstance(r.get(m), float) for m in ("scope", "tensor", "item")):
            print(f"{t}: a tensor metric adds {r['tensor'] - r['scope']:+.4f} ms/step to the scope; "
                  f".item() adds {r['item'] - r['scope']:+.4f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
