"""What `bench/pcsampling.py` and `bench/instrumentation.py` share: the in-kernel workload's step and
the profiler under test, the timed loop of the steps (in the child process), and running one child
(in the parent).

The workload is the one Proton 3.6's in-kernel costs were measured on: one ~30 us Triton kernel of
4096 blocks and one torch kernel per step; the Triton kernel is compiled on the first step, inside
the session. `bench/scope_shapes.py` has the same work with scopes placed in seven ways."""
from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable


def workload_step(scoped: bool) -> Callable[[], None]:
    """The workload's step; with `scoped`, the kernel's load sits in an in-kernel scope `load`."""
    import torch
    import triton
    import triton.language as tl
    import triton.profiler.language as pl

    if scoped:
        pl.enable_semantic("triton")

    @triton.jit
    def work(x, z, n, ITERS: tl.constexpr, BLOCK: tl.constexpr, SCOPED: tl.constexpr):
        if SCOPED:
            pl.enter_scope("load")
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        m = offs < n
        acc = tl.load(x + offs, mask=m)
        if SCOPED:
            pl.exit_scope("load")
        for _ in range(ITERS):
            acc = acc * 1.0001 + 0.5
        tl.store(z + offs, acc, mask=m)

    x = torch.randn(1 << 22, device="cuda")
    z = torch.empty_like(x)

    def step() -> None:
        work[(4096,)](x, z, x.numel(), ITERS=200, BLOCK=1024, SCOPED=scoped)
        z.add_(1.0)

    return step


def profiler(tool: str):
    """`(module, its mode module)` of the tool under test: Proton's or Lepton's."""
    if tool == "proton":
        import triton.profiler as prof
        from triton.profiler import mode
    else:
        import lepton as prof
        from lepton import mode
    return prof, mode


def _memory() -> tuple[float, float]:
    """(peak host RSS, device memory in use on the GPU by anyone) in MiB. Device memory is read from
    the driver (`cudaMemGetInfo`), so CUPTI's own buffers count, not only torch's."""
    import resource

    import torch

    free, total = torch.cuda.mem_get_info()
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, (total - free) / 2**20


def time_steps(step: Callable[[], object], steps: int, prof=None) -> None:
    """Warms up, times `steps` steps (each in a scope when `prof` profiles), finalizes, and prints
    the `RESULT` line `run_child` reads: the loop's ms per step, finalize's seconds, memory (peak
    host RSS and device memory in use) after the warm-up and at the end of the loop, and the peak of
    torch's caching allocator over the whole run, finalize included (`dev_peak_mib`: the workload's
    tensors and every scratch or sums buffer either profiler takes from torch)."""
    import torch

    for _ in range(5):
        step()
    torch.cuda.synchronize()
    rss0, dev0 = _memory()
    t0 = time.perf_counter()
    for _ in range(steps):
        if prof is not None:
            with prof.scope("step"):
                step()
        else:
            step()
    torch.cuda.synchronize()
    t1 = time.perf_counter()
    rss1, dev1 = _memory()
    if prof is not None:
        prof.finalize()
    t2 = time.perf_counter()
    peak = torch.cuda.max_memory_reserved() / 2**20
    print(f"RESULT ms_per_step={(t1 - t0) / steps * 1e3:.4f} finalize_s={t2 - t1:.3f} rss_start_mib={rss0:.0f} "
          f"rss_mib={rss1:.0f} dev_start_mib={dev0:.0f} dev_mib={dev1:.0f} dev_peak_mib={peak:.0f}", flush=True)


def run_child(script: str, *args: str, label: str, options: tuple[str, ...] = (),
              timeout: float = 600) -> dict[str, object] | None:
    """Runs `script OPTIONS --child ARGS... OUTDIR` with Lepton's sources on the path; returns its
    `RESULT` fields (`ms_per_step`, `finalize_s`, memory), with `detail` (the JSON of a `DETAIL`
    line) if the child printed one; `{"skipped": why}` if the child printed `SKIP why` and exited 0;
    or None (saying why on stderr) if it failed or ran past `timeout` seconds."""
    src = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "src")
    env = dict(os.environ, PYTHONPATH=src + os.pathsep + os.environ.get("PYTHONPATH", ""))
    with tempfile.TemporaryDirectory() as out:
        try:
            p = subprocess.run([sys.executable, script, *options, "--child", *args, out], capture_output=True,
                               text=True, env=env, timeout=timeout)
        except subprocess.TimeoutExpired:
            print(f"  {label}: skipped: ran past {timeout:.0f} s", file=sys.stderr)
            return None
    lines = p.stdout.splitlines()
    skip = next((ln for ln in lines if ln.startswith("SKIP ")), None)
    if skip is not None and p.returncode == 0:
        return {"skipped": skip[len("SKIP "):]}
    line = next((ln for ln in lines if ln.startswith("RESULT")), None)
    detail = next((ln for ln in lines if ln.startswith("DETAIL ")), None)
    for warning in (ln for ln in p.stderr.splitlines() if ln.startswith("lepton:")):
        print(f"  {label}: {warning}", file=sys.stderr)
    if p.returncode != 0 or line is None:
        tail = (p.stderr or p.stdout).strip().splitlines()[-3:]
        print(f"  {label}: failed (exit {p.returncode}): {' | '.join(tail)}", file=sys.stderr)
        return None
    result: dict[str, object] = {k: float(v) for k, v in (kv.split("=") for kv in line.split()[1:])}
    if detail is not None:
        import json  # here, not at the top: workload_step's lines are quoted by line number (ncu_lines)

        result["detail"] = json.loads(detail[len("DETAIL "):])
    return result


def amortized_ms(result: dict[str, float], steps: int) -> float:
    """What a user pays per step: the loop plus finalize, spread over the steps."""
    return result["ms_per_step"] + result["finalize_s"] * 1e3 / steps
