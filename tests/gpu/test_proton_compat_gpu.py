"""Proton's behaviour on a real GPU (issue 22, points 5-7), each scenario in a fresh process: hooks as
objects, the launch id per thread, kernels launched by `launch_metadata`, and the trace's events."""
from __future__ import annotations

import json

import pytest
from test_cupti import run, tree

pytestmark = pytest.mark.gpu

FOO_BAR = """
evaluated = []

def foo_meta(grid, metadata, args):
    evaluated.append("foo")
    return {"name": "foo_meta", "flops": 1.0}

def bar_meta(grid, metadata, args):
    evaluated.append("bar")
    return {"name": "bar_meta", "flops": 2.0}

@triton.jit(launch_metadata=foo_meta)
def foo(x, size: tl.constexpr, y):
    offs = tl.arange(0, size)
    tl.store(y + offs, tl.load(x + offs))

@triton.jit(launch_metadata=bar_meta)
def bar(x, size: tl.constexpr, y):
    offs = tl.arange(0, size)
    tl.store(y + offs, tl.load(x + offs))

x = torch.tensor([2.0], device="cuda")
y = torch.zeros_like(x)
"""


def test_a_configured_launch_hook_object_evaluates_only_the_kernels_it_includes(tmp_path):
    run(tmp_path, FOO_BAR, """
        from lepton.hooks.hook import HookManager
        from lepton.hooks.launch import LaunchHook
        hook = LaunchHook()
        hook.configure(include=".*foo")
        sid = proton.start("prof", hook=hook)
        assert HookManager.active_hooks == [hook]
        with proton.scope("test0"):
            foo[(1,)](x, 1, y, num_warps=4)
            bar[(1,)](x, 1, y, num_warps=4)
        proton.deactivate(sid)
        assert HookManager.active_hooks == []
        proton.activate(sid)
        proton.finalize()
        hook.configure()
        result(evaluated=evaluated, active=len(HookManager.active_hooks))
    """)
    flat, _ = tree(tmp_path / "prof.hatchet")
    names = {k[-1] for k in flat}
    assert "foo_meta" in names and "bar_meta" not in names and "bar" in names
    assert flat[("test0", "foo_meta")]["flops"] == 1.0 and flat[("test0", "foo_meta")]["time (ns)"] > 0


def test_hooked_launches_on_two_threads_get_200_distinct_ids(tmp_path):
    out = run(tmp_path, FOO_BAR, """
        import lepton.hooks.launch as proton_launch
        proton.start("prof", hook="triton")
        ids = []

        def launches(kernel):
            for _ in range(100):
                kernel[(1,)](x, 1, y, num_warps=4)
                ids.append(proton_launch.id.get())

        threads = [threading.Thread(target=launches, args=(k,)) for k in (foo, bar)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        proton.finalize()
        result(distinct=len(set(ids)), none=ids.count(None))
    """)
    assert (out["distinct"], out["none"]) == (200, 0)
    flat, _ = tree(tmp_path / "prof.hatchet")
    assert flat[("foo_meta",)]["count"] == 100 and flat[("bar_meta",)]["count"] == 100


@pytest.mark.parametrize("context", ["shadow", "python"])
def test_kernels_launched_by_launch_metadata_sit_under_the_metadata_node(tmp_path, context):
    run(tmp_path, f"""
        def meta(grid, metadata, args):
            return {{"name": "foo_test", "bytes": args["x"].sum().item()}}  # a reduce kernel

        @triton.jit(launch_metadata=meta)
        def foo(x, size: tl.constexpr, y):
            offs = tl.arange(0, size)
            tl.store(y + offs, tl.load(x + offs))

        x = torch.tensor([2.0], device="cuda")
        y = torch.zeros_like(x)
        proton.start("prof", hook="triton", context="{context}")
        with proton.scope("test0"):
            foo[(1,)](x, 1, y, num_warps=4)
        proton.finalize()
        result()
    """)
    flat, _ = tree(tmp_path / "prof.hatchet")
    reduce_paths = [k for k in flat if "reduce" in k[-1]]
    assert reduce_paths and all(k[-2] == "__proton_launch_metadata" for k in reduce_paths), reduce_paths
    assert any(k[-1] == "foo_test" for k in flat)


def test_a_kernels_only_trace_holds_one_event_per_kernel_as_triton_3_6s(tmp_path):
    run(tmp_path, """
        import os
        os.environ["LEPTON_TRACE_TIMELINE"] = "0"  # Triton 3.6's event set; main's adds scopes and flows

        @triton.jit
        def foo(x, y, size: tl.constexpr):
            offs = tl.arange(0, size)
            tl.store(y + offs, tl.load(x + offs))

        proton.start("prof", data="trace")
        with proton.scope("init"):
            x = torch.ones((1024,), device="cuda", dtype=torch.float32)
            y = torch.zeros_like(x)
        with proton.scope("test"):
            foo[(1,)](x, y, x.size()[0], num_warps=4)
        proton.finalize()
        result()
    """)
    events = json.loads((tmp_path / "prof.chrome_trace").read_text())["traceEvents"]
    assert len(events) == 3
    assert events[-1]["name"] == "foo" and events[-1]["args"]["call_stack"] == ["ROOT", "test", "foo"]
