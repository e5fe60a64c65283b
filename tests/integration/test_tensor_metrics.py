"""Tensor metrics and metrics inside CUDA graph captures, on the CPU: a stand-in torch
(`twins.fake_torch`) plays the device, whose kernels the fake backend records as CUPTI would, graph
nodes and replays included. What Proton main's test_tensor_metrics_* check, plus that nothing on
the launch path waits for the device: every wait is logged by the stand-in."""
from __future__ import annotations

import json

import pytest
from triton_standin import LazyDict

import lepton as proton
from lepton.errors import MetricTypeError
from lepton.runtime import tensor_ops


@pytest.fixture
def torch_twin(monkeypatch):
    """The stand-in torch where Lepton looks for torch; its kernels go to the newest fake backend
    once a test calls `listen()`."""
    from twins import fake_torch
    from twins.fake_backend import FakeBackend

    monkeypatch.setattr(tensor_ops, "torch_module", lambda: fake_torch)
    fake_torch.cuda.host_waits.clear()
    fake_torch.listen = lambda: setattr(fake_torch.cuda, "listener", FakeBackend.instances[-1])
    yield fake_torch
    fake_torch.cuda.listener = None


def tree(name: str) -> dict:
    """`{(names below ROOT...): metrics}` of a hatchet file."""
    with open(name + ".hatchet") as f:
        root = json.load(f)[0]
    flat = {}

    def walk(node, prefix):
        for child in node["children"]:
            key = prefix + (child["frame"]["name"],)
            flat[key] = child["metrics"]
            walk(child, key)

    walk(root, ())
    return flat


def waits(torch) -> list[str]:
    return [how for how, _ in torch.cuda.host_waits]


# -- outside a graph: summed on the device, read at the flush -----------------------------------------
def test_a_scopes_device_tensor_metric_is_summed_on_the_device_and_read_only_at_the_flush(torch_twin):
    torch = torch_twin
    proton.start("t", backend="fake")
    torch.listen()
    x = torch.tensor([[1.0, 2.0], [3.0, 4.0]])
    for step in range(3):
        with proton.scope("step", metrics={"x_sum": x.sum(), "steps": torch.tensor(1)}):
            x.add_(1.0)
    assert waits(torch) == []  # three steps, no wait for the device
    proton.finalize()
    assert waits(torch)[0] == "synchronize" and "item" not in waits(torch)
    flat = tree("t")
    assert flat[("step",)] == {"steps": 1 + 1 + 1, "x_sum": 10.0 + 14.0 + 18.0}
    assert type(flat[("step",)]["steps"]) is int  # an integer tensor stays an integer metric


def test_the_metric_copies_run_under_the_scopes_metadata_node_as_protons(torch_twin):
    """Proton copies a metric tensor (`.double()`) under `__proton_launch_metadata`: the user's
    kernels stay alone in the scope and at the top (Proton's test_tensor_metrics_scope counts 4)."""
    torch = torch_twin
    proton.start("t", backend="fake")
    torch.listen()
    x = torch.tensor([1.0, 2.0])
    with proton.scope("step", metrics={"x_sum": x.sum()}):
        x.zero_()
    proton.finalize()
    flat = tree("t")
    assert {k for k in flat if k[:1] == ("step",)} == {
        ("step",), ("step", "fill_kernel"), ("step", "__proton_launch_metadata"),
        ("step", "__proton_launch_metadata", "copy_kernel")}
    assert {k for k in flat if len(k) == 1} == {("step",), ("reduce_kernel",), ("copy_kernel",)}


def test_vectors_and_proton_roofline_types(torch_twin):
    """Proton: floating -> double, integer -> int64, more than one element -> a vector; `flops*`
    are doubles and `bytes` int64 whatever the tensor."""
    torch = torch_twin
    proton.start("t", backend="fake")
    torch.listen()
    for _ in range(2):
        with proton.scope("s", metrics={"vec": torch.tensor([0, 1, 2, 3]), "flops": torch.tensor(3),
                                        "bytes": torch.tensor(2.75), "vecd": torch.tensor([0.5, 1.5])}):
            pass
    proton.finalize()
    metrics = tree("t")[("s",)]
    assert metrics == {"vec": [0, 2, 4, 6], "flops": 6.0, "bytes": 4, "vecd": [1.0, 3.0]}
    assert type(metrics["flops"]) is float and type(metrics["bytes"]) is int


def test_a_property_metric_keeps_the_last_value_a_host_tensor_is_read_at_once(torch_twin):
    torch = torch_twin
    proton.start("t", backend="fake")
    torch.listen()
    for v in (1.0, 5.0, 3.0):
        with proton.scope("s", metrics={"last (pty)": torch.tensor(v), "host": torch.tensor(v, device="cpu")}):
            pass
    assert waits(torch) == []
    proton.finalize()
    assert tree("t")[("s",)] == {"last": 3.0, "host": 9.0}


def test_a_type_change_is_refused_at_the_call_and_nothing_is_recorded(torch_twin):
    torch = torch_twin
    proton.start("t", backend="fake")
    torch.listen()
    with proton.scope("s", metrics={"a": 1.0}):
        pass
    mismatch = r"Metric value type mismatch for valueId 0 \(a\): current=double"
    with pytest.raises(MetricTypeError, match=mismatch), proton.scope("s", metrics={"a": torch.tensor(3)}):
        pass
    with proton.scope("v", metrics={"v": torch.tensor([1, 2])}):
        pass
    with pytest.raises(MetricTypeError, match="Vector metric size mismatch"), \
            proton.scope("v", metrics={"v": torch.tensor([1, 2, 3])}):
        pass
    with pytest.raises(TypeError, match="Metric 'e' is an empty device tensor: give one with at least one"), \
            proton.scope("e", metrics={"e": torch.tensor([])}):
        pass
    assert proton.context.depth() == 0  # the refused scopes were never entered
    proton.finalize()
    flat = tree("t")
    assert flat[("s",)] == {"a": 1.0} and flat[("v",)] == {"v": [1, 2]}


def test_metrics_given_at_exit_scope_and_in_a_phase_go_to_that_phase(torch_twin):
    torch = torch_twin
    sid = proton.start("t", backend="fake")
    torch.listen()
    proton.enter_scope("s")
    proton.exit_scope(metrics={"m": torch.tensor(2.0)})
    proton.data.advance_phase(sid)
    with proton.scope("s", metrics={"m": torch.tensor(5.0)}):
        pass
    proton.finalize()
    assert tree("t.part_0")[("s",)] == {"m": 2.0}
    assert tree("t.part_1")[("s",)] == {"m": 5.0}


def test_a_launch_metadata_tensor_is_a_metric_of_that_launch_without_a_wait(torch_twin, knobs):
    torch = torch_twin
    proton.start("t", backend="fake", hook="triton")
    torch.listen()

    def launch(x):
        md = LazyDict({"name": "foo", "function": 1, "stream": 0}, lambda: {"name": "foo_test", "flops": x.sum()})
        knobs.launch_enter_hook(md)
        torch.cuda.launch("foo", lambda: None)

    x = torch.tensor([1.0, 2.0, 5.0])
    for _ in range(4):
        launch(x)
    assert waits(torch) == []
    proton.finalize()
    flat = tree("t")
    assert flat[("foo_test",)]["flops"] == 32.0 and flat[("foo_test",)]["count"] == 4
    assert flat[("__proton_launch_metadata", "reduce_kernel")]["count"] == 4  # x.sum() in launch_metadata
    # the value's first copy into its slot and the three adds after it, beside the sums
    assert flat[("__proton_launch_metadata", "copy_kernel")]["count"] == 1
    assert flat[("__proton_launch_metadata", "add_kernel")]["count"] == 3
    assert {k for k in flat if len(k) == 1} == {("foo_test",), ("__proton_launch_metadata",), ("copy_kernel",)}


# -- inside a CUDA graph capture: recorded at each replay ---------------------------------------------
def capture(torch, n: int, body):
    g = torch.CUDAGraph()
    with torch.cuda.graph(g):
        for _ in range(n):
            body()
    return g


def test_metrics_given_in_a_capture_belong_to_each_replay_under_its_scope(torch_twin):
    """Proton's test_tensor_metrics_cudagraph, scopes part: numbers and tensors given while
    capturing are recorded once per replay, under `<replay scope>/<captured_at>/<capture path>`."""
    torch = torch_twin
    proton.start("t", backend="fake")
    torch.listen()
    a = torch.tensor([1.0, 1.0, 1.0, 1.0])
    d = torch.tensor([0, 1, 2, 3])

    def fn():
        with proton.scope("scope_a", metrics={"bytes": 16}):
            a.fill_(1.0)
        with proton.scope("scope_b", metrics={"sum": a.sum()}):
            pass
        with proton.scope("scope_d", metrics={"vec": d * 2}):
            pass

    fn()  # warm-up, outside the capture
    g = capture(torch, 10, fn)
    with proton.scope("test0"):
        g.replay()
    assert waits(torch) == []
    proton.finalize()
    flat = tree("t")
    at = ("test0", "<captured_at>")
    assert flat[at + ("scope_a",)] == {"bytes": 160}  # no count: its kernels are its children
    assert flat[at + ("scope_a", "fill_kernel")]["count"] == 10
    assert flat[at + ("scope_b",)] == {"sum": 40.0}
    assert flat[at + ("scope_d",)] == {"vec": [0, 20, 40, 60]}
    assert flat[at + ("scope_b", "<metric>")]["count"] == 10  # the kernel that records it
    assert flat[("scope_a",)] == {"bytes": 16} and flat[("scope_b",)] == {"sum": 4.0}  # the warm-up
    assert not any("index_copy_kernel" in k or "remainder_kernel" in k for k in flat)


def test_each_replay_gets_its_own_values_under_its_own_scope(torch_twin):
    """A tensor that changes between replays: each replay's ring row goes to that replay's scope."""
    torch = torch_twin
    proton.start("t", backend="fake")
    torch.listen()
    v = torch.tensor(1.0)
    g = capture(torch, 2, lambda: proton.scope("s", metrics={"v": v}).__enter__().__exit__(None, None, None))
    for scope, value in (("r0", 1.0), ("r1", 10.0), ("r1", 100.0), ("r2", 1000.0)):
        v.fill_(value)
        with proton.scope(scope):
            g.replay()
    proton.deactivate(flushing=True)  # a flush in the middle: the rings are read, then go on
    proton.activate()
    v.fill_(7.0)
    with proton.scope("r0"):
        g.replay()
    proton.finalize()
    flat = tree("t")
    assert flat[("r0", "<captured_at>", "s")] == {"v": 2 * 1.0 + 2 * 7.0}
    assert flat[("r1", "<captured_at>", "s")] == {"v": 2 * 10.0 + 2 * 100.0}
    assert flat[("r2", "<captured_at>", "s")] == {"v": 2 * 1000.0}


def test_replays_past_the_ring_are_reported_and_the_last_ones_kept(torch_twin, monkeypatch, capfd):
    monkeypatch.setenv("LEPTON_GRAPH_METRIC_REPLAYS", "4")
    torch = torch_twin
    proton.start("t", backend="fake")
    torch.listen()
    v = torch.tensor(0)
    g = capture(torch, 1, lambda: proton.scope("s", metrics={"v": v}).__enter__().__exit__(None, None, None))
    with proton.scope("r"):
        for i in range(6):
            v.fill_(10 ** i)
            g.replay()
    proton.finalize()
    assert tree("t")[("r", "<captured_at>", "s")] == {"v": 100 + 1000 + 10_000 + 100_000}
    err = capfd.readouterr().err
    assert "2 values of metric 'v', given inside a CUDA graph capture, were overwritten" in err
    assert "LEPTON_GRAPH_METRIC_REPLAYS" in err


def test_a_hooked_launch_in_a_capture_is_its_op_at_each_replay_with_its_metrics(torch_twin, knobs):
    """Proton's test_tensor_metrics_cudagraph, launch part: `foo_test` under `<captured_at>`, with
    a count and the metrics of 10 launches per replay; the metadata's kernels under its node."""
    torch = torch_twin
    proton.start("t", backend="fake", hook="triton")
    torch.listen()
    x = torch.tensor([1.0, 1.0, 1.0, 1.0])

    def launch():
        meta = lambda: {"name": "foo_test", "bytes": x.numel() * x.element_size(), "flops": x.sum()}
        knobs.launch_enter_hook(LazyDict({"name": "foo", "function": 1, "stream": 0}, meta))
        torch.cuda.launch("foo", lambda: None)

    launch()
    g = capture(torch, 10, launch)
    with proton.scope("test0"):
        g.replay()
    proton.finalize()
    flat = tree("t")
    node = flat[("test0", "<captured_at>", "foo_test")]
    assert (node["bytes"], node["flops"], node["count"]) == (160, 40.0, 10)
    assert flat[("foo_test",)]["count"] == 1 and flat[("foo_test",)]["flops"] == 4.0  # the warm-up
    meta = ("test0", "<captured_at>", "__proton_launch_metadata")
    assert flat[meta + ("reduce_kernel",)]["count"] == 10 and flat[meta + ("<metric>",)]["count"] == 20


def test_a_plain_hooked_launch_on_the_fast_path_is_recorded_per_replay_when_captured(torch_twin, knobs):
    torch = torch_twin
    proton.start("t", backend="fake", hook="triton")
    torch.listen()

    def launch():
        knobs.launch_enter_hook(LazyDict({"name": "k", "function": 1, "stream": 0}, lambda: {"bytes": 8}))
        torch.cuda.launch("k", lambda: None)

    for _ in range(3):
        launch()  # eager: the second and third take the fast path
    g = capture(torch, 2, launch)
    with proton.scope("r"):
        g.replay()
        g.replay()
    launch()
    proton.finalize()
    flat = tree("t")
    assert flat[("k",)]["bytes"] == 32 and flat[("k",)]["count"] == 4
    assert flat[("r", "<captured_at>", "k")]["bytes"] == 32 and flat[("r", "<captured_at>", "k")]["count"] == 4


def test_a_session_deactivated_during_the_capture_does_not_count_what_it_captured_then(torch_twin):
    """Proton's test_cudagraph_deactivate and test_tensor_metrics_cudagraph_deactivate."""
    torch = torch_twin
    session = proton.start("t", backend="fake")
    torch.listen()
    b = torch.tensor([1.0, 1.0])

    def fn():
        with proton.scope("scope_a"):
            b.fill_(2.0)
        proton.deactivate(session)
        with proton.scope("scope_b", metrics={"sum": 4}):
            b.fill_(1.0)
        proton.activate(session)
        with proton.scope("scope_c"):
            b.add_(1.0)

    fn()
    g = torch.CUDAGraph()
    with torch.cuda.graph(g):
        for i in range(10):
            with proton.scope(f"iter_{i}"):
                fn()
    with proton.scope("test0"):
        g.replay()
    proton.finalize()
    flat = tree("t")
    iters = {k[2] for k in flat if k[:2] == ("test0", "<captured_at>") and len(k) > 2}
    assert iters == {f"iter_{i}" for i in range(10)}
    under = {k[3:] for k in flat if k[:3] == ("test0", "<captured_at>", "iter_0") and len(k) > 3}
    assert under == {("scope_a",), ("scope_a", "fill_kernel"), ("scope_c",), ("scope_c", "add_kernel")}
    assert flat[("test0", "<captured_at>", "iter_0", "scope_c", "add_kernel")]["count"] == 1


def test_two_sessions_each_count_the_graphs_captured_and_replayed_while_they_were_active(torch_twin, knobs):
    """Proton's test_multiple_sessions_cudagraph_metric_kernels."""
    torch = torch_twin
    x = torch.tensor([1.0, 1.0, 1.0, 1.0])

    def foo():
        meta = lambda: {"name": "foo_with_metric", "sum_metric": x.sum()}
        knobs.launch_enter_hook(LazyDict({"name": "foo", "function": 1, "stream": 0}, meta))
        torch.cuda.launch("foo", lambda: None)

    def bar():
        knobs.launch_enter_hook(LazyDict({"name": "bar", "function": 1, "stream": 0},
                                         lambda: {"name": "bar_without_metric"}))
        torch.cuda.launch("bar", lambda: None)

    s0 = proton.start("t0", backend="fake", hook="triton")
    s1 = proton.start("t1", backend="fake", hook="triton")
    torch.listen()
    proton.deactivate(s1)
    graph_foo = capture(torch, 3, foo)
    with proton.scope("session0_replay"):
        graph_foo.replay()
    proton.deactivate(s0)
    proton.activate(s1)
    graph_bar = capture(torch, 2, bar)
    with proton.scope("session1_replay"):
        graph_bar.replay()
    proton.finalize(s0)
    proton.finalize(s1)
    flat0, flat1 = tree("t0"), tree("t1")
    foo0 = flat0[("session0_replay", "<captured_at>", "foo_with_metric")]
    assert foo0["sum_metric"] == 12.0 and foo0["count"] == 3
    assert not any("bar_without_metric" in k for k in flat0)
    assert not any("foo_with_metric" in k for k in flat1)
    bar1 = flat1[("session1_replay", "<captured_at>", "bar_without_metric")]
    assert bar1["count"] == 2 and "sum_metric" not in bar1


def test_a_ring_keeps_16384_replays_of_a_scalar_and_1_mib_of_a_vector(monkeypatch):
    from lepton.runtime.graph_metrics import replays_kept

    assert (replays_kept(1), replays_kept(1000), replays_kept(10**6)) == (16384, 131, 64)
    monkeypatch.setenv("LEPTON_GRAPH_METRIC_REPLAYS", "100000")
    assert replays_kept(1) == 100000


def test_a_trace_draws_the_capture_scopes_of_each_replay_on_a_graph_lane(torch_twin, monkeypatch):
    """Proton's test_trace_cudagraph_graph_scope_ranges: a `Graph: Stream N` lane with the replay's
    `<captured_at>` and capture scopes, no metric there, and the replayed kernels (one `<metric>`
    kernel for the captured tensor among them) linked to the replay's scope; a tree session beside
    it holds their call paths."""
    monkeypatch.setenv("LEPTON_TRACE_TIMELINE", "1")
    torch = torch_twin
    x, y = torch.tensor([1.0] * 8), torch.tensor([0.0] * 8)
    metric_tensor = torch.tensor(1.0)

    def fn():
        with proton.scope("a"):
            with proton.scope("b"):
                with proton.scope("c", metrics={"m1": metric_tensor}):
                    y.copy_(x)
                y.copy_(x)
            y.copy_(x)

    proton.start("tr", data="trace", backend="fake")
    proton.start("t", backend="fake")
    torch.listen()
    fn()
    g = capture(torch, 1, fn)
    with proton.scope("test0"):
        g.replay()
    proton.finalize()
    with open("tr.chrome_trace") as f:
        events = json.load(f)["traceEvents"]
    graph_tids = [e["tid"] for e in events if e.get("ph") == "M" and e.get("name") == "thread_name"
                  and e["args"]["name"].startswith("Graph: Stream ")]
    assert len(graph_tids) == 1
    on_graph = [e for e in events if e.get("tid") == graph_tids[0] and e.get("ph") == "X"]
    assert sorted(e["name"] for e in on_graph) == ["<captured_at>", "a", "b", "c"]
    assert all(e["cat"] == "scope" for e in on_graph)
    c = next(e for e in on_graph if e["name"] == "c")
    assert c["args"]["call_stack"] == ["ROOT", "test0", "<captured_at>", "a", "b", "c"]
    test0 = next(e for e in events if e.get("cat") == "scope" and e["name"] == "test0")
    # the replay's kernels hang off its scope by launch->kernel flows (a "s" at the scope, a "f" at each kernel)
    flow_ids = {e["id"] for e in events if e.get("ph") == "s" and e["ts"] == test0["ts"] and e["tid"] == test0["tid"]}
    ends = {(e["ts"], e["tid"]) for e in events if e.get("ph") == "f" and e["id"] in flow_ids}
    replayed = [e for e in events if e.get("cat") == "kernel" and (e["ts"], e["tid"]) in ends]
    assert sorted(e["name"] for e in replayed) == ["<metric>", "copy_kernel", "copy_kernel", "copy_kernel"]
    flat = tree("t")
    at = ("test0", "<captured_at>")
    for path in (at + ("a",), at + ("a", "b"), at + ("a", "b", "c")):
        assert flat[path + ("copy_kernel",)]["count"] == 1
    assert flat[at + ("a", "b", "c", "<metric>")]["count"] == 1
    assert flat[at + ("a", "b", "c")] == {"m1": 1.0}


@pytest.mark.parametrize("buffer_by_buffer", [False, True])
def test_periodic_flushing_writes_each_phase_with_the_metrics_of_its_replays(torch_twin, buffer_by_buffer):
    """Proton main's test_periodic_flushing_cudagraph on the CPU: a phase's file, written once a
    later phase's kernel arrives, holds the metrics its graph replays recorded: such a phase waits
    for the next flush, where they are read with the device synchronised and every record in; also
    with the records delivered after each replay, as a small `profile_buffer_size` makes CUPTI do."""
    from twins.fake_backend import FakeBackend

    torch = torch_twin
    sid = proton.start("t", backend="fake", mode="periodic_flushing:format=hatchet")
    torch.listen()
    fake = FakeBackend.instances[-1]
    a = torch.tensor([1.0, 1.0, 1.0, 1.0])

    def fn():
        with proton.scope("scope_a", metrics={"bytes": 16, "sum": a.sum()}):
            a.fill_(1.0)

    fn()
    g = capture(torch, 1, fn)
    with proton.scope("test0"):
        for i in range(6):
            if i and i % 2 == 0:
                proton.data.advance_phase(session=sid)
            g.replay()
            if buffer_by_buffer:
                fake.deliver_completed()
    proton.finalize()
    for phase in range(3):
        with open(f"t.part_{phase}.hatchet") as f:
            root = json.load(f)[0]
        test0 = next(c for c in root["children"] if c["frame"]["name"] == "test0")
        captured = test0["children"][0]
        scope_a = next(c for c in captured["children"] if c["frame"]["name"] == "scope_a")
        assert scope_a["metrics"]["bytes"] == 32 and scope_a["metrics"]["sum"] == 8.0, phase
