"""Instruction sampling on a real GPU (`mode="pcsampling"`): Proton's scenario, attribution from two
scopes, kernels compiled before `start`, and the interval. Each program runs in a fresh process
(CUPTI's subscription and PC sampling state are process-wide)."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from test_cupti import run as run_scenario
from test_cupti import tree as hatchet_tree

pytestmark = pytest.mark.gpu

SRC = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "src")

PRELUDE = """
import json, sys
import torch, triton, triton.language as tl
import lepton as proton
from lepton.mode import PCSampling

@triton.jit
def foo(x, z, n, ITERS: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    acc = tl.load(x + offs, mask=m)
    for _ in range(ITERS):
        acc = acc * 1.0001 + 0.5
    tl.store(z + offs, acc, mask=m)

x = torch.randn(1 << 20, device="cuda")
z = torch.empty_like(x)

def run_foo(iters=100):
    foo[(1024,)](x, z, x.numel(), ITERS=iters, BLOCK=1024)

def result(**kw):
    print("RESULT " + json.dumps(kw), flush=True)
"""


def run(tmp_path, body: str) -> dict:
    return run_scenario(tmp_path, body, timeout=300, prelude=PRELUDE)


def tree(path) -> tuple[dict, dict]:
    """`({(names below ROOT...): metrics}, ROOT's metrics)`."""
    flat, _ = hatchet_tree(path)
    with open(path) as f:
        return flat, json.load(f)[0]["metrics"]


def lines_under(flat: dict, kernel: tuple) -> dict:
    return {k[-1]: m for k, m in flat.items() if len(k) == len(kernel) + 1 and k[:-1] == kernel}


def samples_under(flat: dict, kernel: tuple) -> int:
    own = flat[kernel].get("num_samples", 0)
    return own + sum(m["num_samples"] for m in lines_under(flat, kernel).values())


def check_invariants(flat: dict, root: dict) -> None:
    assert root["num_samples"] == 0 and root["num_stalled_samples"] == 0
    for m in flat.values():
        if "num_samples" in m:
            assert m["num_stalled_samples"] == sum(v for k, v in m.items() if k.startswith("stalled_"))
            assert m["num_samples"] >= m["num_stalled_samples"]


def test_protons_scenario_torch_kernel_in_init_and_triton_lines_in_test(tmp_path):
    run(tmp_path, """
        proton.start("prof", mode="pcsampling")
        with proton.scope("init"):
            for _ in range(10):
                z.add_(1.0)
        with proton.scope("test"):
            for _ in range(10):
                run_foo()
        proton.finalize()
        result(ok=True)
    """)
    flat, root = tree(tmp_path / "prof.hatchet")
    check_invariants(flat, root)
    assert root["pcsampling_period_log2"] == 10
    torch_kernel = next(k for k in flat if k[:1] == ("init",) and len(k) == 2)
    assert samples_under(flat, torch_kernel) > 0
    assert flat[("test", "foo")]["count"] == 10 and flat[("test", "foo")]["time (ns)"] > 0
    lines = lines_under(flat, ("test", "foo"))
    assert lines and all(name.endswith("@foo") and ":" in name for name in lines)
    assert any("scenario.py:" in name for name in lines)
    assert sum(m["num_samples"] for m in lines.values()) > 0
    # The hottest instructions and foo's code; the viewer disassembles it (nvdisasm is on the GPU
    # machines' PATH)
    with open(tmp_path / "prof.hatchet") as f:
        kept = json.load(f)[0]["lepton"]
    rows = kept["sass"]["foo"]
    assert rows and all(samples > 0 for _, samples, _ in rows)
    assert kept["sass_code"]["foo"]["arch"] and kept["sass_code"]["foo"]["zlib_b64"]
    shown = subprocess.run([sys.executable, "-m", "lepton.viewer", "--sass", "^foo$", str(tmp_path / "prof.hatchet")],
                           capture_output=True, text=True, env=dict(os.environ, PYTHONPATH=SRC), timeout=120, check=False)
    assert shown.returncode == 0 and shown.stdout.startswith("foo  ("), shown.stderr
    assert "(no text)" not in shown.stdout and "FFMA" in shown.stdout, shown.stdout + shown.stderr


def test_a_kernel_from_two_scopes_gets_samples_in_proportion_to_its_launches(tmp_path):
    """30 launches in a, 10 in b, identical work: b's share of samples is 1/4 of the total. The split
    is by kernel time within a drain window (one window here), so the tolerance is that of the
    kernel times' ratio: ±0.07 absolute on a 0.25 share."""
    run(tmp_path, """
        run_foo(); torch.cuda.synchronize()
        proton.start("prof", mode="pcsampling")
        for _ in range(10):
            with proton.scope("a"):
                for _ in range(3):
                    run_foo()
            with proton.scope("b"):
                run_foo()
        proton.finalize()
        result(ok=True)
    """)
    flat, root = tree(tmp_path / "prof.hatchet")
    check_invariants(flat, root)
    a, b = samples_under(flat, ("a", "foo")), samples_under(flat, ("b", "foo"))
    assert a > 0 and b > 0
    assert abs(b / (a + b) - 0.25) < 0.07, (a, b)


def test_a_kernel_compiled_before_start_still_gets_source_lines(tmp_path):
    run(tmp_path, """
        run_foo(); torch.cuda.synchronize()   # compiled and loaded before the session
        proton.start("prof", mode="pcsampling")
        with proton.scope("sampled"):
            for _ in range(10):
                run_foo()
        proton.finalize()
        result(ok=True)
    """)
    flat, _root = tree(tmp_path / "prof.hatchet")
    lines = lines_under(flat, ("sampled", "foo"))
    assert lines and sum(m["num_samples"] for m in lines.values()) > 0


def test_a_longer_interval_takes_fewer_samples(tmp_path):
    """2^10 against 2^13 cycles: about 8x fewer samples for the same work (0.6x-1.6x of that, for
    kernel-time noise and the sampler's per-SM phase)."""
    counts = {}
    for k in (10, 13):
        run(tmp_path, f"""
            run_foo(); torch.cuda.synchronize()
            proton.start("prof{k}", mode=PCSampling(interval={1 << k}))
            with proton.scope("s"):
                for _ in range(20):
                    run_foo(400)
            proton.finalize()
            result(ok=True)
        """)
        flat, root = tree(tmp_path / f"prof{k}.hatchet")
        assert root["pcsampling_period_log2"] == k
        counts[k] = samples_under(flat, ("s", "foo"))
    ratio = counts[10] / max(counts[13], 1)
    assert 8 * 0.6 < ratio < 8 * 1.6, counts


def test_two_sessions_with_the_same_mode_coexist_and_another_mode_is_refused(tmp_path):
    out = run(tmp_path, """
        a = proton.start("a", mode="pcsampling")
        b = proton.start("b", mode="pcsampling")
        try:
            proton.start("c")
            refused = ""
        except Exception as e:
            refused = str(e)
        with proton.scope("s"):
            run_foo()
        proton.finalize()
        result(refused=refused)
    """)
    assert "Cannot add a session with the same profiler but a different mode" in out["refused"]
    for name in ("a", "b"):
        flat, _ = tree(tmp_path / f"{name}.hatchet")
        assert samples_under(flat, ("s", "foo")) > 0


def test_a_one_block_fill_gets_samples_over_many_launches(tmp_path):
    """Proton's own test expects samples from one launch of a 1,024-element fill (one block, ~1 µs).
    At one sample per SM every 2^10 cycles that kernel gets 0-2 (measured on the H100: 0.8 a
    launch over 20 launches; 0 in most single launches, with or without a kernel before it); over
    50 launches it must get some."""
    run(tmp_path, """
        torch.cuda.synchronize()
        proton.start("prof", mode="pcsampling")
        with proton.scope("init"):
            for _ in range(50):
                torch.ones((1024,), device="cuda")
        proton.finalize()
        result(ok=True)
    """)
    flat, _ = tree(tmp_path / "prof.hatchet")
    kernel = next(k for k in flat if k[:1] == ("init",) and len(k) == 2)
    assert flat[kernel]["count"] == 50 and samples_under(flat, kernel) > 0


def test_a_long_run_keeps_every_launch_and_its_samples_grow_with_the_steps(tmp_path):
    """20,000 steps are drained while they run: every launch is in the profile, and the samples
    grow with the steps (they were lost, with the whole profile, at 2,000 steps before)."""
    totals = {}
    for steps in (2_000, 20_000):
        folder = tmp_path / str(steps)
        folder.mkdir()
        run(folder, f"""
            proton.start("prof", mode="pcsampling")
            for _ in range({steps}):
                with proton.scope("step"):
                    run_foo(iters=20)
            proton.finalize()
            result(ok=True)
        """)
        flat, root = tree(folder / "prof.hatchet")
        check_invariants(flat, root)
        assert flat[("step", "foo")]["count"] == steps
        totals[steps] = samples_under(flat, ("step", "foo"))
    assert totals[2_000] > 0 and totals[20_000] > 5 * totals[2_000], totals
