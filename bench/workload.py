"""The step of `../shared/bench/overhead.py`, for the GPU benchmarks here: 1 Triton kernel (with a
`launch_metadata` function, as overhead.py's) and 2 torch kernels, all tiny, so that a loop of steps
is bound by launch cost and any profiler overhead shows up fully."""
from __future__ import annotations

import functools
from collections.abc import Callable


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


def triton_hook_pairs():
    """`(Lepton's, none, metadata only)`: `(enter, exit)` hook pairs to set in
    `triton.knobs.runtime` while a `hook="triton"` session runs, or None when another tool's hook
    is installed too (then Triton's empty chains are not known). "None" is Triton's empty chains;
    "metadata only" evaluates the launch metadata and nothing else (what any metadata hook costs at
    least), through a partial as Lepton's sole hook is, with no exit hook, as Lepton's."""
    from triton import knobs

    runtime = knobs.runtime
    lepton_hooks = (runtime.launch_enter_hook, runtime.launch_exit_hook)
    no_hooks = (getattr(lepton_hooks[0], "lepton_chain", None), getattr(lepton_hooks[0], "lepton_exit_chain", None))
    if None in no_hooks:
        return None
    metadata_only = (functools.partial(lambda metadata: metadata.get()), None)
    return lepton_hooks, no_hooks, metadata_only
