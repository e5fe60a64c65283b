"""Issue 34, row 5, on a real GPU: 7 kernels complete and synchronize, then a Triton kernel stores out
of bounds (`CUDA error: an illegal memory access was encountered`). The profile keeps the 7 kernels,
and one line, also in ROOT's metadata, names the fault. Before, the run left a profile with 0
kernels: CUPTI's records went down with the context. (tests/unit/test_cupti_fault.py is the same
through the scripted libcupti.)"""
from __future__ import annotations

import importlib.util
import json
import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from profile_tree import find

SRC = Path(__file__).resolve().parents[2] / "src"
GOOD = 7

SCRIPT = f"""\
import sys
import torch
import triton
import triton.language as tl
import lepton


@triton.jit
def add_one(x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(x_ptr + offs, tl.load(x_ptr + offs, mask=mask) + 1.0, mask=mask)


@triton.jit
def store_out_of_bounds(x_ptr):
    tl.store(x_ptr + (1 << 40), 1.0)  # a terabyte past the tensor


if sys.argv[1] == "api":
    lepton.start("fault", backend="cupti")
x = torch.zeros(1 << 16, device="cuda")
with lepton.scope("good"):
    for _ in range({GOOD}):
        add_one[(64,)](x, x.numel(), BLOCK=1024)
torch.cuda.synchronize()
assert float(x[0]) == {GOOD}
with lepton.scope("faulting"):
    store_out_of_bounds[(1,)](x)
torch.cuda.synchronize()  # raises: CUDA error: an illegal memory access was encountered
print("not reached")
"""
LINE = re.compile(r"lepton: the GPU reported CUDA_ERROR_ILLEGAL_ADDRESS \(an illegal memory access was "
                  r"encountered\) after (\d+) kernels; the profile keeps the kernels that completed")


@pytest.mark.gpu
@pytest.mark.parametrize("how", ["cli", "api"])
def test_the_kernels_completed_before_a_gpu_fault_are_in_the_profile(tmp_path, how):
    for module in ("torch", "triton"):
        if importlib.util.find_spec(module) is None:
            pytest.skip(f"{module} is not installed")
    script = tmp_path / "fault.py"
    script.write_text(textwrap.dedent(SCRIPT))
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(SRC), os.environ.get("PYTHONPATH")])))
    for var in ("RANK", "OMPI_COMM_WORLD_RANK", "LEPTON_DISABLE", "TRITON_PROTON_DISABLE", "LEPTON_CHECKPOINT_S"):
        env.pop(var, None)
    lepton = [sys.executable, "-m", "lepton", "-b", "cupti", "-n", "fault"] if how == "cli" else [sys.executable]
    out = subprocess.run([*lepton, str(script), how], check=False, capture_output=True, text=True,
                         timeout=300, env=env, cwd=tmp_path)
    assert out.returncode == 1, out.stderr  # the script's exception, as python exits
    assert "illegal memory access" in out.stderr and "not reached" not in out.stdout
    lines = [m for m in map(LINE.fullmatch, out.stderr.splitlines()) if m]
    assert len(lines) == 1, out.stderr
    assert int(lines[0].group(1)) >= GOOD
    tree, _ = json.loads((tmp_path / "fault.hatchet").read_text())
    good = find(tree, "good")
    assert good is not None, out.stderr
    kernel = find(good, "add_one")
    assert kernel is not None and kernel["metrics"]["count"] == GOOD, json.dumps(good)[:2000]
    assert kernel["metrics"]["time (ns)"] > 0
    fault = tree["lepton"]["gpu_fault"]
    assert fault["error"] == "CUDA_ERROR_ILLEGAL_ADDRESS" and fault["code"] == 700
    assert fault["kernels"] >= GOOD
