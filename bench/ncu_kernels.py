"""The matmul and the reduction that `bench/ncu_lines.py` compares Lepton's, Proton's and Nsight
Compute's per-line samples on (the third kernel is `in_kernel.py`'s workload kernel `work`).

The comparison's tables quote these kernels' line numbers: move a line here and the tables in docs/
must be made again. GPU machine only (imports torch and triton).
"""
from __future__ import annotations

from collections.abc import Callable

import torch
import triton
import triton.language as tl


@triton.jit
def matmul_kernel(a, b, c, M, N, K, stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
                  BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr):
    pid = tl.program_id(0)
    num_pid_m = tl.cdiv(M, BLOCK_M)
    num_pid_n = tl.cdiv(N, BLOCK_N)
    group = GROUP_M * num_pid_n
    first_m = (pid // group) * GROUP_M
    group_m = min(num_pid_m - first_m, GROUP_M)
    pid_m = first_m + (pid % group) % group_m
    pid_n = (pid % group) // group_m
    offs_m = (pid_m * BLOCK_M + tl.arange(0, BLOCK_M)) % M
    offs_n = (pid_n * BLOCK_N + tl.arange(0, BLOCK_N)) % N
    offs_k = tl.arange(0, BLOCK_K)
    a_ptrs = a + offs_m[:, None] * stride_am + offs_k[None, :] * stride_ak
    b_ptrs = b + offs_k[:, None] * stride_bk + offs_n[None, :] * stride_bn
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BLOCK_K)):
        x = tl.load(a_ptrs, mask=offs_k[None, :] < K - k * BLOCK_K, other=0.0)
        y = tl.load(b_ptrs, mask=offs_k[:, None] < K - k * BLOCK_K, other=0.0)
        acc = tl.dot(x, y, acc)
        a_ptrs += BLOCK_K * stride_ak
        b_ptrs += BLOCK_K * stride_bk
    out = acc.to(tl.float16)
    offs_cm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_cn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    c_ptrs = c + offs_cm[:, None] * stride_cm + offs_cn[None, :] * stride_cn
    tl.store(c_ptrs, out, mask=(offs_cm[:, None] < M) & (offs_cn[None, :] < N))


@triton.jit
def softmax_kernel(out, inp, in_stride, out_stride, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    mask = offs < n_cols
    x = tl.load(inp + row * in_stride + offs, mask=mask, other=-float("inf"))
    x = x - tl.max(x, axis=0)
    num = tl.exp(x)
    den = tl.sum(num, axis=0)
    tl.store(out + row * out_stride + offs, num / den, mask=mask)


def matmul_step() -> Callable[[], None]:
    """One 2048x2048x2048 fp16 matmul a launch: 128x128x64 tiles, 8 warps, 3 stages."""
    n = 2048
    a = torch.randn((n, n), device="cuda", dtype=torch.float16)
    b = torch.randn((n, n), device="cuda", dtype=torch.float16)
    c = torch.empty((n, n), device="cuda", dtype=torch.float16)
    grid = (triton.cdiv(n, 128) * triton.cdiv(n, 128),)

    def step() -> None:
        matmul_kernel[grid](a, b, c, n, n, n, a.stride(0), a.stride(1), b.stride(0), b.stride(1),
                            c.stride(0), c.stride(1), BLOCK_M=128, BLOCK_N=128, BLOCK_K=64, GROUP_M=8,
                            num_warps=8, num_stages=3)

    return step


def softmax_step() -> Callable[[], None]:
    """One row softmax of an 8192x4096 fp32 tensor a launch: a program per row, 8 warps."""
    rows, cols = 8192, 4096
    x = torch.randn((rows, cols), device="cuda", dtype=torch.float32)
    y = torch.empty_like(x)

    def step() -> None:
        softmax_kernel[(rows,)](y, x, x.stride(0), y.stride(0), cols, BLOCK=cols, num_warps=8)

    return step
