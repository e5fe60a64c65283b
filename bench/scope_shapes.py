"""The kernel shapes `bench/instrumentation.py` times: where a kernel's in-kernel scopes sit.

Each shape's step is ~30 us of GPU work, as `in_kernel.workload_step`'s: a kernel (or, for
`interleaved`, three kernels that share the work) over 4096 blocks of 1024 floats, 200 multiply-adds
per element, and one torch kernel. The kernels are the same without a profiler: a scope records
nothing unless an instrumentation session is on. Imported by the child process only (it needs
Triton and a GPU); GPU machine only.

    one_scope     `load` around the load
    siblings      `load` around the load, `store` around the store
    nested        `tile` around the whole body, with `load` and `store` inside it
    around_loop   `loop` around the multiply-add loop
    in_loop       `chunk` inside a loop of 16 chunks of 12 multiply-adds (Proton's test_overhead
                  loops 16 times): a record op inside a loop, so the buffer keeps its default size
    interleaved   three kernels per step (`stage_a`, `stage_b`, `stage_c`), each with its own scope
                  and a third of the multiply-adds
    gluon         one_scope written in Gluon (`triton.experimental.gluon`), which Proton's language
                  instruments without `enable_semantic`
"""
from __future__ import annotations

from collections.abc import Callable

import torch
import triton
import triton.language as tl
import triton.profiler.language as pl

try:
    from triton.experimental import gluon
    from triton.experimental.gluon import language as gl
except ImportError as e:  # an older Triton
    gluon = gl = None
    GLUON_MISSING = f"triton.experimental.gluon is not available ({e})"

pl.enable_semantic("triton")  # Triton-DSL kernels; Gluon's semantic is on by default

GRID, BLOCK, ITERS = 4096, 1024, 200
CHUNKS = 16  # in_loop's loop


class Unavailable(Exception):
    """A shape this Triton cannot build (the child says so in one line)."""


@triton.jit
def one_scope(x, z, n, ITERS: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    pl.enter_scope("load")
    acc = tl.load(x + offs, mask=m)
    pl.exit_scope("load")
    for _ in range(ITERS):
        acc = acc * 1.0001 + 0.5
    tl.store(z + offs, acc, mask=m)


@triton.jit
def siblings(x, z, n, ITERS: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    pl.enter_scope("load")
    acc = tl.load(x + offs, mask=m)
    pl.exit_scope("load")
    for _ in range(ITERS):
        acc = acc * 1.0001 + 0.5
    pl.enter_scope("store")
    tl.store(z + offs, acc, mask=m)
    pl.exit_scope("store")


@triton.jit
def nested(x, z, n, ITERS: tl.constexpr, BLOCK: tl.constexpr):
    pl.enter_scope("tile")
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    pl.enter_scope("load")
    acc = tl.load(x + offs, mask=m)
    pl.exit_scope("load")
    for _ in range(ITERS):
        acc = acc * 1.0001 + 0.5
    pl.enter_scope("store")
    tl.store(z + offs, acc, mask=m)
    pl.exit_scope("store")
    pl.exit_scope("tile")


@triton.jit
def around_loop(x, z, n, ITERS: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    acc = tl.load(x + offs, mask=m)
    pl.enter_scope("loop")
    for _ in range(ITERS):
        acc = acc * 1.0001 + 0.5
    pl.exit_scope("loop")
    tl.store(z + offs, acc, mask=m)


@triton.jit
def in_loop(x, z, n, ITERS: tl.constexpr, BLOCK: tl.constexpr, CHUNKS: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    acc = tl.load(x + offs, mask=m)
    for c in range(CHUNKS):
        pl.enter_scope("chunk")
        for i in range(ITERS // CHUNKS):
            acc = acc * 1.0001 + 0.5
        pl.exit_scope("chunk")
    tl.store(z + offs, acc, mask=m)


@triton.jit
def stage_a(x, z, n, ITERS: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    pl.enter_scope("a")
    acc = tl.load(x + offs, mask=m)
    for _ in range(ITERS):
        acc = acc * 1.0001 + 0.5
    tl.store(z + offs, acc, mask=m)
    pl.exit_scope("a")


@triton.jit
def stage_b(x, z, n, ITERS: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    pl.enter_scope("b")
    acc = tl.load(x + offs, mask=m)
    for _ in range(ITERS):
        acc = acc * 0.9999 + 0.25
    tl.store(z + offs, acc, mask=m)
    pl.exit_scope("b")


@triton.jit
def stage_c(x, z, n, ITERS: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    pl.enter_scope("c")
    acc = tl.load(x + offs, mask=m)
    for _ in range(ITERS):
        acc = acc * 1.0002 - 0.5
    tl.store(z + offs, acc, mask=m)
    pl.exit_scope("c")


if gluon is not None:
    @gluon.jit
    def gluon_scope(x, z, n, ITERS: gl.constexpr, BLOCK: gl.constexpr):
        layout: gl.constexpr = gl.BlockedLayout([4], [32], [4], [0])  # 4 warps: launched with num_warps=4
        offs = gl.program_id(0) * BLOCK + gl.arange(0, BLOCK, layout=layout)
        m = offs < n
        pl.enter_scope("load")
        acc = gl.load(x + offs, mask=m)
        pl.exit_scope("load")
        for _ in range(ITERS):
            acc = acc * 1.0001 + 0.5
        gl.store(z + offs, acc, mask=m)


def _one_kernel(kernel, **meta) -> Callable[[torch.Tensor, torch.Tensor], None]:
    def launch(x, z):
        kernel[(GRID,)](x, z, x.numel(), ITERS=ITERS, BLOCK=BLOCK, **meta)

    return launch


def _interleaved(x, z) -> None:
    for kernel in (stage_a, stage_b, stage_c):
        kernel[(GRID,)](x, z, x.numel(), ITERS=ITERS // 3, BLOCK=BLOCK)


def _gluon(x, z) -> None:
    gluon_scope[(GRID,)](x, z, x.numel(), ITERS=ITERS, BLOCK=BLOCK, num_warps=4)


LAUNCHES = {
    "one_scope": _one_kernel(one_scope),
    "siblings": _one_kernel(siblings),
    "nested": _one_kernel(nested),
    "around_loop": _one_kernel(around_loop),
    "in_loop": _one_kernel(in_loop, CHUNKS=CHUNKS),
    "interleaved": _interleaved,
    "gluon": _gluon,
}


def step_of(shape: str) -> Callable[[], None]:
    """The shape's step: its kernel(s), then one torch kernel. Raises `Unavailable` for a shape this
    Triton cannot build."""
    if shape == "gluon" and gluon is None:
        raise Unavailable(GLUON_MISSING)
    launch = LAUNCHES[shape]
    x = torch.randn(GRID * BLOCK, device="cuda")
    z = torch.empty_like(x)

    def step() -> None:
        launch(x, z)
        z.add_(1.0)

    return step
