"""The step of the overhead benchmark of record (`overhead.py`, in the development workspace), for
`bench/paired.py`: 1 Triton kernel (with a `launch_metadata` function, as overhead.py's) and 2 torch
kernels, all tiny, so that a loop of steps is bound by launch cost and any profiler overhead shows
up fully."""
from __future__ import annotations

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
