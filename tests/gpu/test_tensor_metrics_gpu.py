"""Tensor metrics and metrics inside CUDA graphs on a real GPU: Proton main's test_tensor_metrics_*,
test_cudagraph_deactivate, test_cudagraph_not_captured_by_profiler and
test_multiple_sessions_cudagraph_metric_kernels, each in a fresh process, and that none of it makes
the host wait for the device (torch's sync debug mode raises on any wait)."""
from __future__ import annotations

import json

import pytest
from test_cupti import run, tree

pytestmark = pytest.mark.gpu

# torch raises on any host wait inside `no_waits()` (a `.item()`, a synchronous copy, a sync).
NO_WAITS = """
import contextlib

@contextlib.contextmanager
def no_waits():
    torch.cuda.set_sync_debug_mode("error")
    try:
        yield
    finally:
        torch.cuda.set_sync_debug_mode("default")
"""


def root_children(path) -> list[dict]:
    with open(path) as f:
        return json.load(f)[0]["children"]


def child(node_children: list[dict], name: str) -> dict | None:
    return next((c for c in node_children if c["frame"]["name"] == name), None)


def test_tensor_metrics_scope(tmp_path):
    run(tmp_path, NO_WAITS, """
        proton.start("prof")
        x = torch.ones((10, 10), device="cuda", dtype=torch.float32)
        x_mean = x.mean()
        x_std = x.std()
        with no_waits():
            with proton.scope("test", metrics={"x_mean": x_mean, "x_std": x_std}):
                torch.randn((10, 10), device="cuda")
                torch.zeros_like(x)
        proton.finalize()
        result()
    """)
    children = root_children(tmp_path / "prof.hatchet")
    assert len(children) == 4, [c["frame"]["name"] for c in children]
    test = child(children, "test")
    assert test["metrics"]["x_mean"] == 1.0 and test["metrics"]["x_std"] == 0.0


def test_tensor_metrics_hook(tmp_path):
    run(tmp_path, NO_WAITS, """
        def metadata_fn(grid, metadata, args):
            return {"name": "foo_test", "flops": torch.ones((), device="cuda") * 8.0}

        @triton.jit(launch_metadata=metadata_fn)
        def foo(x, size: tl.constexpr, y):
            offs = tl.arange(0, size)
            tl.store(y + offs, tl.load(x + offs))

        x = torch.ones((8,), device="cuda", dtype=torch.float32)
        y = torch.zeros_like(x)
        foo[(1,)](x, x.numel(), y, num_warps=4)  # compiled before the waits are refused
        proton.start("prof", hook="triton")
        with no_waits():
            foo[(1,)](x, x.numel(), y, num_warps=4)
        proton.finalize()
        result()
    """)
    children = root_children(tmp_path / "prof.hatchet")
    assert len(children) == 2, [c["frame"]["name"] for c in children]  # the metadata node and foo_test
    assert child(children, "foo_test")["metrics"]["flops"] == 8.0


def test_tensor_metrics_hook_as_protons_test_writes_it(tmp_path):
    """Proton's own test makes its metric with `torch.tensor(8.0, device=...)`, a copy from the host."""
    run(tmp_path, """
        def metadata_fn(grid, metadata, args):
            return {"name": "foo_test", "flops": torch.tensor(8.0, device="cuda")}

        @triton.jit(launch_metadata=metadata_fn)
        def foo(x, size: tl.constexpr, y):
            offs = tl.arange(0, size)
            tl.store(y + offs, tl.load(x + offs))

        x = torch.ones((8,), device="cuda", dtype=torch.float32)
        y = torch.zeros_like(x)
        proton.start("prof", hook="triton")
        foo[(1,)](x, x.numel(), y, num_warps=4)
        proton.finalize()
        result()
    """)
    children = root_children(tmp_path / "prof.hatchet")
    assert len(children) == 2, [c["frame"]["name"] for c in children]
    assert child(children, "foo_test")["metrics"]["flops"] == 8.0


TENSOR_METRICS_CUDAGRAPH = """
stream = torch.cuda.Stream()
torch.cuda.set_stream(stream)

def metadata_fn(grid, metadata, args):
    x = args["x"]
    x_sum = x.sum()
    return {"name": "foo_test", "bytes": x.numel() * x.element_size(), "flops": x_sum}

@triton.jit(launch_metadata=metadata_fn)
def foo(x, y, z):
    tl.store(z, tl.load(y) + tl.load(x))

def fn():
    with proton.scope("scope_a", metrics={"bytes": 4 * 4}):
        a = torch.ones((2, 2), device="cuda")
    with proton.metadata_state():
        a_sum = a.sum()
    with proton.scope("scope_b", metrics={"sum": a_sum}):
        b = torch.ones((2, 2), device="cuda")
    c = a + b
    foo[(1, )](a, b, c)
    with proton.metadata_state():
        d = torch.arange(4, device="cuda")
    with proton.scope("scope_d", metrics={"vec": d}):
        e = d * 2  # noqa: F841

proton.start("prof", context="shadow", hook="triton")
fn()
g = torch.cuda.CUDAGraph()
with torch.cuda.graph(g):
    for _ in range(10):
        fn()
"""


def test_tensor_metrics_cudagraph(tmp_path):
    run(tmp_path, NO_WAITS, TENSOR_METRICS_CUDAGRAPH, """
        with no_waits():
            with proton.scope("test0"):
                g.replay()
        proton.finalize()
        result()
    """)
    children = root_children(tmp_path / "prof.hatchet")
    # metadata scope + kernels + scope_a + scope_b + test0 + scope_d
    assert len(children) == 8, [c["frame"]["name"] for c in children]
    captured = child(children, "test0")["children"][0]
    assert captured["frame"]["name"] == "<captured_at>"
    foo_test, scope_a = child(captured["children"], "foo_test"), child(captured["children"], "scope_a")
    scope_b, scope_d = child(captured["children"], "scope_b"), child(captured["children"], "scope_d")
    assert (foo_test["metrics"]["bytes"], foo_test["metrics"]["flops"], foo_test["metrics"]["count"]) == (160, 40, 10)
    assert scope_a["metrics"]["bytes"] == 160 and "count" not in scope_a["metrics"]
    assert scope_b["metrics"]["sum"] == 40.0 and "count" not in scope_b["metrics"]
    assert scope_d["metrics"]["vec"] == [0, 10, 20, 30]


def test_each_replay_of_a_graph_gets_its_own_values_under_its_own_scope(tmp_path):
    """Replays under different scopes, with the captured tensor changed between them, and a flush
    in the middle: each replay's values go to its scope (beyond Proton's tests)."""
    run(tmp_path, NO_WAITS, """
        v = torch.zeros((), device="cuda")
        g = torch.cuda.CUDAGraph()
        proton.start("prof")
        s = torch.cuda.Stream()
        with torch.cuda.stream(s):
            with torch.cuda.graph(g):
                for _ in range(2):
                    with proton.scope("s", metrics={"v": v * 1}):
                        pass
        torch.cuda.synchronize()
        with no_waits():
            for scope, value in (("r0", 1.0), ("r1", 10.0), ("r1", 100.0), ("r2", 1000.0)):
                v.fill_(value)
                with proton.scope(scope):
                    g.replay()
        proton.deactivate(flushing=True)
        proton.activate()
        v.fill_(7.0)
        with proton.scope("r0"):
            g.replay()
        proton.finalize()
        result()
    """)
    flat, _ = tree(tmp_path / "prof.hatchet")
    assert flat[("r0", "<captured_at>", "s")]["v"] == 2 * 1.0 + 2 * 7.0
    assert flat[("r1", "<captured_at>", "s")]["v"] == 2 * 10.0 + 2 * 100.0
    assert flat[("r2", "<captured_at>", "s")]["v"] == 2 * 1000.0
    assert flat[("r1", "<captured_at>", "s", "<metric>")]["count"] == 4


def test_tensor_metrics_cudagraph_deactivate(tmp_path):
    run(tmp_path, """
        stream = torch.cuda.Stream()
        torch.cuda.set_stream(stream)

        def fn(session):
            proton.deactivate(session)
            with proton.scope("scope_b", metrics={"sum": 4}):
                b = torch.ones((2, 2), device="cuda")
            proton.activate(session)
            c = b * 2  # noqa: F841

        session = proton.start("prof", context="shadow", hook="triton")
        fn(session)
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            for _ in range(10):
                fn(session)
        with proton.scope("test0"):
            g.replay()
        proton.finalize()
        result()
    """)
    captured = child(root_children(tmp_path / "prof.hatchet"), "test0")["children"][0]
    assert child(captured["children"], "scope_b") is None
    elementwise = [c for c in captured["children"] if "elementwise" in c["frame"]["name"]]
    assert [c["metrics"]["count"] for c in elementwise] == [10]


def test_cudagraph_deactivate(tmp_path):
    run(tmp_path, """
        stream = torch.cuda.Stream()
        torch.cuda.set_stream(stream)

        @triton.jit
        def foo(x, y, z):
            tl.store(z, tl.load(y) + tl.load(x))

        def fn(session):
            with proton.scope("scope_a"):
                a = torch.ones((2, 2), device="cuda")
            proton.deactivate(session)
            with proton.scope("scope_b"):
                b = torch.ones((2, 2), device="cuda")
            proton.activate(session)
            with proton.scope("scope_c"):
                c = a + b
            foo[(1, )](a, b, c)

        session = proton.start("prof", context="shadow", hook="triton")
        fn(session)
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            for i in range(10):
                with proton.scope(f"iter_{i}"):
                    fn(session)
        with proton.scope("test0"):
            g.replay()
        proton.finalize()
        result()
    """)
    test0 = child(root_children(tmp_path / "prof.hatchet"), "test0")
    iter_frame = test0["children"][0]["children"][0]
    assert iter_frame["frame"]["name"] == "iter_0"
    names = {c["frame"]["name"] for c in iter_frame["children"]}
    assert {"scope_a", "scope_c"} <= names and "scope_b" not in names


def test_cudagraph_not_captured_by_profiler(tmp_path):
    out = run(tmp_path, """
        stream = torch.cuda.Stream()
        torch.cuda.set_stream(stream)

        @triton.jit
        def foo(x, y, z):
            tl.store(z, tl.load(y) + tl.load(x))

        def fn():
            a = torch.ones((2, 2), device="cuda")
            b = torch.ones((2, 2), device="cuda")
            c = a + b
            foo[(1, )](a, b, c)

        fn()
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            fn()
        proton.start("prof", context="shadow")
        with proton.scope("replay0"):
            g.replay()
        with proton.scope("replay1"):
            g.replay()
        proton.finalize()
        result()
    """)
    assert out["stderr"].count("Cannot find graph for graphExecId:") == 1, out["stderr"]
    assert "start profiling before the graph is created" in out["stderr"]
    children = root_children(tmp_path / "prof.hatchet")
    for name in ("replay0", "replay1"):
        replay = child(children, name)
        assert len(replay["children"]) == 3, [c["frame"]["name"] for c in replay["children"]]
        assert any(c["metrics"].get("time (ns)", 0) > 0 for c in replay["children"])


def test_multiple_sessions_cudagraph_metric_kernels(tmp_path):
    out = run(tmp_path, """
        stream = torch.cuda.Stream()
        torch.cuda.set_stream(stream)
        foo_iters, bar_iters = 3, 2

        def foo_metadata_fn(grid, metadata, args):
            return {"name": "foo_with_metric", "sum_metric": args["x"].sum()}

        def bar_metadata_fn(grid, metadata, args):
            return {"name": "bar_without_metric"}

        @triton.jit(launch_metadata=foo_metadata_fn)
        def foo(x, y, z):
            tl.store(z, tl.load(y) + tl.load(x))

        @triton.jit(launch_metadata=bar_metadata_fn)
        def bar(x, y, z):
            tl.store(z, tl.load(y) - tl.load(x))

        x = torch.ones((2, 2), device="cuda")
        y = torch.ones((2, 2), device="cuda")
        z = torch.empty_like(x)
        foo[(1, )](x, y, z)
        bar[(1, )](x, y, z)
        s0 = proton.start("prof0", context="shadow", hook="triton")
        s1 = proton.start("prof1", context="shadow", hook="triton")
        proton.deactivate(s1)
        graph_foo = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph_foo):
            for _ in range(foo_iters):
                foo[(1, )](x, y, z)
        with proton.scope("session0_replay"):
            graph_foo.replay()
        proton.deactivate(s0)
        proton.activate(s1)
        graph_bar = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph_bar):
            for _ in range(bar_iters):
                bar[(1, )](x, y, z)
        with proton.scope("session1_replay"):
            graph_bar.replay()
        proton.finalize(s0)
        proton.finalize(s1)
        result(numel=x.numel())
    """)
    flat0, _ = tree(tmp_path / "prof0.hatchet")
    flat1, _ = tree(tmp_path / "prof1.hatchet")
    foo0 = flat0[("session0_replay", "<captured_at>", "foo_with_metric")]
    assert foo0["sum_metric"] == float(3 * out["numel"]) and foo0["count"] == 3
    assert not any("bar_without_metric" in k for k in flat0)
    assert not any("foo_with_metric" in k for k in flat1)
    bar1 = flat1[("session1_replay", "<captured_at>", "bar_without_metric")]
    assert bar1["count"] == 2 and "sum_metric" not in bar1


def test_a_metric_per_step_makes_no_wait_and_the_profile_holds_every_steps_value(tmp_path):
    out = run(tmp_path, NO_WAITS, """
        x = torch.randn(4096, device="cuda")
        proton.start("prof")
        with no_waits():
            for step in range(200):
                with proton.scope("step", metrics={"norm": x.norm(), "positive": (x > 0).sum()}):
                    x.mul_(1.0)
        norm, positive = (200 * x.norm()).item(), (200 * (x > 0).sum()).item()
        proton.finalize()
        result(norm=norm, positive=positive)
    """)
    flat, _ = tree(tmp_path / "prof.hatchet")
    assert flat[("step",)]["norm"] == pytest.approx(out["norm"], rel=1e-5)
    assert flat[("step",)]["positive"] == out["positive"]


def test_trace_cudagraph_graph_scope_ranges(tmp_path):
    """Proton's test: the replay's capture scopes on a `Graph: Stream N` lane, no metric there, and
    one `<metric>` kernel for the captured tensor; a tree session beside the trace holds the replayed
    kernels' call paths (the trace writer's flows and call stacks are checked by its own tests)."""
    run(tmp_path, """
        os.environ["LEPTON_TRACE_TIMELINE"] = "1"
        stream = torch.cuda.Stream()
        torch.cuda.set_stream(stream)

        @triton.jit
        def foo(x, y, size: tl.constexpr):
            offs = tl.arange(0, size)
            tl.store(y + offs, tl.load(x + offs))

        x = torch.ones((128, ), device="cuda", dtype=torch.float32)
        y = torch.zeros_like(x)
        metric_tensor = torch.tensor(1.0, device="cuda")
        foo[(1, )](x, y, x.numel(), num_warps=4)
        torch.cuda.synchronize()

        def fn():
            with proton.scope("a"):
                with proton.scope("b"):
                    with proton.scope("c", metrics={"m1": metric_tensor}):
                        foo[(1, )](x, y, x.numel(), num_warps=4)
                    foo[(1, )](x, y, x.numel(), num_warps=4)
                foo[(1, )](x, y, x.numel(), num_warps=4)

        proton.start("trace", data="trace", context="shadow")
        proton.start("tree", context="shadow")
        fn()
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            fn()
        with proton.scope("test0"):
            g.replay()
        proton.finalize()
        result()
    """)
    events = json.loads((tmp_path / "trace.chrome_trace").read_text())["traceEvents"]
    graph_tids = [e["tid"] for e in events if e.get("ph") == "M" and e.get("name") == "thread_name"
                  and e["args"]["name"].startswith("Graph: Stream ")]
    assert len(graph_tids) == 1
    on_graph = [e for e in events if e.get("tid") == graph_tids[0] and e.get("ph") == "X"]
    assert {"<captured_at>", "a", "b", "c"} <= {e["name"] for e in on_graph}
    assert not any(e.get("cat") == "metric" for e in on_graph)
    assert [e["name"] for e in events if e.get("cat") == "kernel"].count("<metric>") == 1
    flat, _ = tree(tmp_path / "tree.hatchet")
    at = ("test0", "<captured_at>")
    for path in (at + ("a", "b", "c"), at + ("a", "b"), at + ("a",)):
        assert flat[path + ("foo",)]["count"] == 1
    assert flat[at + ("a", "b", "c", "<metric>")]["count"] == 1
    assert flat[at + ("a", "b", "c")]["m1"] == 1.0
