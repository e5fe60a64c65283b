"""What `bench/pcsampling.py` and `bench/instrumentation.py` share: the timed loop of the in-kernel
workload's steps (in the child process) and running one child (in the parent)."""
from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable


def time_steps(step: Callable[[], object], steps: int, prof=None) -> None:
    """Warms up, times `steps` steps (each in a scope when `prof` profiles), finalizes, and prints
    the `RESULT` line `run_child` reads."""
    import torch

    for _ in range(5):
        step()
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(steps):
        if prof is not None:
            with prof.scope("step"):
                step()
        else:
            step()
    torch.cuda.synchronize()
    t1 = time.perf_counter()
    if prof is not None:
        prof.finalize()
    t2 = time.perf_counter()
    print(f"RESULT ms_per_step={(t1 - t0) / steps * 1e3:.4f} finalize_s={t2 - t1:.3f}", flush=True)


def run_child(script: str, *args: str, label: str, options: tuple[str, ...] = ()) -> tuple[float, float] | None:
    """Runs `script OPTIONS --child ARGS... OUTDIR` with Lepton's sources on the path; returns its
    `(ms per step, finalize seconds)`, or None (saying why on stderr) if it failed."""
    src = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "src")
    env = dict(os.environ, PYTHONPATH=src + os.pathsep + os.environ.get("PYTHONPATH", ""))
    with tempfile.TemporaryDirectory() as out:
        p = subprocess.run([sys.executable, script, *options, "--child", *args, out], capture_output=True, text=True,
                           env=env, timeout=600)
    line = next((ln for ln in p.stdout.splitlines() if ln.startswith("RESULT")), None)
    if p.returncode != 0 or line is None:
        tail = (p.stderr or p.stdout).strip().splitlines()[-3:]
        print(f"  {label}: failed (exit {p.returncode}): {' | '.join(tail)}", file=sys.stderr)
        return None
    fields = dict(kv.split("=") for kv in line.split()[1:])
    return float(fields["ms_per_step"]), float(fields["finalize_s"])
