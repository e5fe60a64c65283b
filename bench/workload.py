"""The step of `../shared/bench/overhead.py`, for the GPU benchmarks here: 1 Triton kernel (with a
`launch_metadata` function, as overhead.py's) and 2 torch kernels, all tiny, so that a loop of steps
is bound by launch cost and any profiler overhead shows up fully."""
from __future__ import annotations

import argparse
import functools
from collections.abc import Callable


def rounds_and_chunk(rounds: int, chunk: int) -> argparse.Namespace:
    """The command line of the in-process benches: `--rounds` (states alternated this many times)
    and `--chunk` (steps timed per state and round), with these defaults."""
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=rounds)
    ap.add_argument("--chunk", type=int, default=chunk)
    return ap.parse_args()


def overhead_step() -> Callable[[], object]:
    """The step, compiled and warmed up (50 steps, synchronized)."""
    import torch
    import triton
    import triton.language as tl

    def meta(grid, kernel, args):
        return {"name": f"add_{args['n']}", "bytes": 12 * args["n"], "flops32": args["n"]}

    @triton.jit(launch_metadata=meta)
    def add_kernel(x, y, z, n, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        m = offs < n
        tl.store(z + offs, tl.load(x + offs, mask=m) + tl.load(y + offs, mask=m), mask=m)

    x = torch.randn(4096, device="cuda")
    y = torch.randn(4096, device="cuda")
    z = torch.empty_like(x)

    def step():
        add_kernel[(4,)](x, y, z, x.numel(), BLOCK=1024)
        return (z * 2.0) + 1.0

    for _ in range(50):
        step()
    torch.cuda.synchronize()
    return step


def step_loops(step: Callable[[], object], scope) -> tuple[Callable[[int], None], Callable[[int], None]]:
    """`(bare, scoped)`: loops of `n` steps, the second with each step inside `scope("step")`."""

    def bare(n: int) -> None:
        for _ in range(n):
            step()

    def scoped(n: int) -> None:
        for _ in range(n):
            with scope("step"):
                step()

    return bare, scoped


def per_step_us(run: Callable[[int], None], chunk: int) -> float:
    """µs per step of `run(chunk)`, after 50 steps past any transient of a switch, between device
    synchronizations."""
    import time

    import torch

    run(50)
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    run(chunk)
    torch.cuda.synchronize()
    return (time.perf_counter() - t0) / chunk * 1e6


def print_paired(per_step: dict[str, list[float]], rounds: int, chunk: int) -> None:
    """The table of `per_step` (state -> µs per step, one value per round; the first state is the
    base): median, median minus the base's, and the median of each round's ratio to the base's
    value of that round (paired: a change of the host's speed between rounds cancels)."""
    import statistics

    (base_name, base_values), width = next(iter(per_step.items())), max(map(len, per_step)) + 2
    base = statistics.median(base_values)
    print(f"{'state':{width}} {'µs/step':>8} {'+µs':>7} {'paired x':>9}   "
          f"(median of {rounds} rounds of {chunk} steps, against {base_name})")
    for name, values in per_step.items():
        paired = statistics.median(v / d for v, d in zip(values, base_values))
        m = statistics.median(values)
        print(f"{name:{width}} {m:8.2f} {m - base:7.2f} {paired:9.3f}")


def set_cupti_records(backend, on) -> None:
    """Turns CUPTI's kernel records and launch API records on or off in a running Lepton session
    (`on` names some of "kernel", "driver", "runtime", "queued": the kernel records' launch
    times). `backend._launch_threads_needed()` must have masked the API kinds once: enabling a kind
    again turns all of its APIs back on (measured: 31 API records per step instead of 3), so the
    launch-only mask is applied again."""
    from lepton.collect.cupti import layout

    cupti = backend.cupti
    kinds = {"kernel": layout.KIND_CONCURRENT_KERNEL, "driver": layout.KIND_DRIVER,
             "runtime": layout.KIND_RUNTIME}
    for name, kind in kinds.items():
        (cupti.enable if name in on else cupti.disable)(kind)
    cupti.enable_latency_timestamps("queued" in on)
    driver_off, runtime_off = backend._masked
    for cbid in driver_off:
        cupti.enable_driver_api(cbid, False)
    for cbid in runtime_off:
        cupti.enable_runtime_api(cbid, False)


def triton_hook_pairs():
    """`(Lepton's, none, metadata only)`: `(enter, exit)` hook pairs to set in
    `triton.knobs.runtime` while a `hook="triton"` session runs, or None when another tool's hook
    is installed too (then Triton's empty chains are not known). "None" is Triton's empty chains;
    "metadata only" evaluates the launch metadata and nothing else (what any metadata hook costs at
    least), through a partial as Lepton's sole hook is, with no exit hook, as Lepton's."""
    from triton import knobs

    runtime = knobs.runtime
    lepton_hooks = (runtime.launch_enter_hook, runtime.launch_exit_hook)
    sole = lepton_hooks[0]
    no_hooks = (getattr(sole, "lepton_chain", None), getattr(sole, "lepton_exit_chain", None))
    if None in no_hooks:
        return None
    metadata_only = (functools.partial(lambda metadata: metadata.get()), None)
    return lepton_hooks, no_hooks, metadata_only
