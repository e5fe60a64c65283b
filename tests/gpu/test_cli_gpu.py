"""`python -m lepton` on a real GPU: a Triton add kernel launched by a script lands in the profile,
under the scope it was launched in, whether the script ends normally or raises."""
from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from profile_tree import find

SRC = Path(__file__).resolve().parents[2] / "src"
LAUNCHES = 5

ADD_SCRIPT = f"""\
import sys
import torch
import triton
import triton.language as tl
import lepton


@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) + tl.load(y_ptr + offs, mask=mask), mask=mask)


n = 1 << 16
x = torch.rand(n, device="cuda")
y = torch.rand(n, device="cuda")
out = torch.empty_like(x)
with lepton.scope("adds"):
    for _ in range({LAUNCHES}):
        add_kernel[(triton.cdiv(n, 1024),)](x, y, out, n, BLOCK=1024)
torch.cuda.synchronize()
assert torch.equal(out, x + y)
if sys.argv[1:] == ["raise"]:
    raise RuntimeError("after the kernels")
"""


@pytest.mark.gpu
@pytest.mark.parametrize("how, code", [("return", 0), ("raise", 1)])
def test_a_triton_script_under_lepton_finds_its_kernels_in_the_profile(tmp_path, how, code):
    for module in ("torch", "triton"):
        if importlib.util.find_spec(module) is None:
            pytest.skip(f"{module} is not installed")
    script = tmp_path / "add.py"
    script.write_text(textwrap.dedent(ADD_SCRIPT))
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(SRC), os.environ.get("PYTHONPATH")])))
    for var in ("RANK", "OMPI_COMM_WORLD_RANK", "LEPTON_DISABLE", "TRITON_PROTON_DISABLE"):
        env.pop(var, None)
    out = subprocess.run([sys.executable, "-m", "lepton", "-n", "add", str(script), how], check=False,
                         capture_output=True, text=True, timeout=300, env=env, cwd=tmp_path)
    assert out.returncode == code, out.stderr
    assert "no usable NVIDIA GPU" not in out.stderr
    assert f"lepton: profile written to {tmp_path / 'add.hatchet'}" in out.stderr.splitlines()
    tree, devices = json.loads((tmp_path / "add.hatchet").read_text())
    adds = find(tree, "adds")
    assert adds is not None, "the scope is missing"
    kernel = find(adds, "add_kernel")
    assert kernel is not None, [c["frame"]["name"] for c in adds["children"]]
    assert kernel["metrics"]["count"] == LAUNCHES
    assert kernel["metrics"]["time (ns)"] > 0
    assert kernel["metrics"]["device_type"] == "CUDA"
    assert devices["CUDA"][kernel["metrics"]["device_id"]]["num_sms"] > 0
