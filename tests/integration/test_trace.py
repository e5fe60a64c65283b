"""data="trace" through the API: Proton main's events (CPU scopes, flows, kernels with their call
stacks, lane names); with LEPTON_TRACE_TIMELINE=0, Triton 3.6's (one event per kernel)."""
from __future__ import annotations

import json
import threading

import pytest

import lepton as proton


@pytest.fixture
def kernels_only(monkeypatch):
    monkeypatch.setenv("LEPTON_TRACE_TIMELINE", "0")


def test_without_the_timeline_a_trace_holds_triton_3_6s_events_one_per_kernel(fake, kernels_only):
    proton.start("plain", data="trace", backend="fake")
    with proton.scope("init"):
        fake().launch("ones_kernel", 100)
        fake().launch("zeros_kernel", 100)
    with proton.scope("test"):
        fake().launch("foo", 100)
    proton.finalize()
    with open("plain.chrome_trace") as f:
        events = json.load(f)["traceEvents"]
    assert len(events) == 3
    assert [e["cat"] for e in events] == ["kernel"] * 3
    assert events[-1]["name"] == "foo" and events[-1]["args"]["call_stack"] == ["ROOT", "test", "foo"]


def test_trace_has_scopes_kernels_streams_and_flows(fake):
    proton.start("tr", data="trace", backend="fake")
    with proton.scope("outer"):
        fake().launch("add_kernel", 900, stream_id=7)
        with proton.scope("inner", {"bytes": 5}):
            fake().launch("mul_kernel", 1200, stream_id=7)
    fake().launch("add_kernel", 900, stream_id=13)  # another stream, outside every scope

    def worker():
        with proton.scope("thread_scope"):
            fake().launch("thread_kernel", 100, stream_id=7)

    t = threading.Thread(target=worker)
    t.start()
    t.join()
    proton.finalize()
    with open("tr.chrome_trace") as f:
        doc = json.load(f)
    events = doc["traceEvents"]
    assert isinstance(doc["baseTimeNanoseconds"], int)
    lanes = {e["args"]["name"]: e["tid"] for e in events if e["name"] == "thread_name"}
    assert {"CPU Thread 0", "CPU Thread 1", "GPU Stream 7", "GPU Stream 13"} <= set(lanes)
    scopes = {e["name"]: e for e in events if e["ph"] == "X" and e["cat"] in ("scope", "metric")}
    assert set(scopes) == {"outer", "inner: <bytes, 5>", "thread_scope"}
    assert scopes["thread_scope"]["tid"] != scopes["outer"]["tid"]
    kernels = [e for e in events if e["ph"] == "X" and e["cat"] == "kernel"]
    assert len(kernels) == 4
    assert all(k["args"]["call_stack"][0] == "ROOT" for k in kernels)
    flows = [e for e in events if e.get("cat") == "flow"]
    starts = {e["id"]: e for e in flows if e["ph"] == "s"}
    finishes = {(e["ts"], e["tid"]): e["id"] for e in flows if e["ph"] == "f"}
    assert len(flows) == 6 and len(starts) == 3  # one pair per kernel launched inside a scope

    def scope_of(kernel):  # the scope event a kernel's flow starts from
        flow = finishes.get((kernel["ts"], kernel["tid"]))
        return None if flow is None else (starts[flow]["ts"], starts[flow]["tid"])

    by_name = {(k["name"], k["tid"]): k for k in kernels}
    place = {name: (e["ts"], e["tid"]) for name, e in scopes.items()}
    assert scope_of(by_name[("add_kernel", lanes["GPU Stream 7"])]) == place["outer"]
    assert scope_of(by_name[("mul_kernel", lanes["GPU Stream 7"])]) == place["inner: <bytes, 5>"]
    assert scope_of(by_name[("add_kernel", lanes["GPU Stream 13"])]) is None
    assert scope_of(by_name[("thread_kernel", lanes["GPU Stream 7"])]) == place["thread_scope"]


def test_cpu_only_trace_is_valid(fake):
    proton.start("cpu_trace", data="trace", backend="fake")
    with proton.scope("metric_only", {"foo": 1.0}):
        pass
    proton.finalize()
    with open("cpu_trace.chrome_trace") as f:
        doc = json.load(f)
    (ev,) = [e for e in doc["traceEvents"] if e["ph"] == "X"]
    assert ev["cat"] == "metric" and ev["name"] == "metric_only: <foo, 1.000000>"
    assert ev["args"]["metrics"] == {"foo": "1.000000"}


def test_scopes_with_metrics_are_metric_events_and_every_kernel_has_a_flow_from_its_scope(fake):
    """Proton main's test_trace_flexible_metrics_scope_ranges, with the fake backend's kernels."""
    proton.start("ranges", data="trace", backend="fake")
    with proton.scope("scope_3", metrics={"m3": 3.0}):
        with proton.scope("scope_2", metrics={"m2": 2.0}):
            with proton.scope("scope_1", metrics={"m1": 1.0}):
                fake().launch("foo", 100)
            with proton.scope("scope_4"):
                fake().launch("foo", 100)
            with proton.scope("scope_5"):
                fake().launch("foo", 100)
        with proton.scope("scope_6"), proton.scope("scope_7"):
            fake().launch("foo", 100)
    proton.finalize()
    with open("ranges.chrome_trace") as f:
        trace_events = json.load(f)["traceEvents"]
    kernel_events = [e for e in trace_events if e.get("cat") == "kernel" and e["name"] == "foo"]
    metric_events = [e for e in trace_events if e.get("cat") == "metric"]
    scope_events = [e for e in trace_events if e.get("cat") == "scope"]
    flow_events = [e for e in trace_events if e.get("cat") == "flow"]
    assert (len(kernel_events), len(metric_events), len(scope_events), len(flow_events)) == (4, 3, 4, 8)
    assert {tuple(e["args"]["call_stack"]) for e in kernel_events} == {
        ("ROOT", "scope_3", "scope_2", "scope_1", "foo"), ("ROOT", "scope_3", "scope_2", "scope_4", "foo"),
        ("ROOT", "scope_3", "scope_2", "scope_5", "foo"), ("ROOT", "scope_3", "scope_6", "scope_7", "foo")}
    metric_by_name = {next(iter(e["args"]["metrics"])): e for e in metric_events}
    assert {name: (e["name"], tuple(e["args"]["call_stack"]), e["args"]["metrics"])
            for name, e in metric_by_name.items()} == {
        "m1": ("scope_1: <m1, 1.000000>", ("ROOT", "scope_3", "scope_2", "scope_1"), {"m1": "1.000000"}),
        "m2": ("scope_2: <m2, 2.000000>", ("ROOT", "scope_3", "scope_2"), {"m2": "2.000000"}),
        "m3": ("scope_3: <m3, 3.000000>", ("ROOT", "scope_3"), {"m3": "3.000000"})}
    assert {tuple(e["args"]["call_stack"]) for e in scope_events} == {
        ("ROOT", "scope_3", "scope_2", "scope_4"), ("ROOT", "scope_3", "scope_2", "scope_5"),
        ("ROOT", "scope_3", "scope_6"), ("ROOT", "scope_3", "scope_6", "scope_7")}
    gpu_tid, cpu_tid = kernel_events[0]["tid"], metric_by_name["m1"]["tid"]
    flow_starts = {e["id"]: e for e in flow_events if e["ph"] == "s"}
    flow_finishes = {e["id"]: e for e in flow_events if e["ph"] == "f"}
    assert set(flow_starts) == set(flow_finishes) and len(flow_starts) == 4
    assert all(e["name"] == "launch->kernel" and e["bp"] == "e" and e["tid"] == cpu_tid
               for e in flow_starts.values())
    assert all(e["name"] == "launch->kernel" and e["bp"] == "e" and e["tid"] == gpu_tid
               for e in flow_finishes.values())
    # each flow starts where its kernel's scope starts and ends where the kernel starts
    events_at = {(e["ts"], e["tid"]): e for e in metric_events + scope_events + kernel_events}
    for flow_id, start in flow_starts.items():
        kernel = events_at[(flow_finishes[flow_id]["ts"], gpu_tid)]
        assert events_at[(start["ts"], cpu_tid)]["args"]["call_stack"] == kernel["args"]["call_stack"][:-1]


def test_a_trace_of_one_scope_with_a_metric_and_no_kernel_is_that_one_event():
    """Proton main's test_trace_flexible_metrics_no_kernel_anchor (no lane names without kernels)."""
    proton.start("anchor", data="trace", backend="cpu")
    with proton.scope("metric_only", metrics={"foo": 1.0}):
        pass
    proton.finalize()
    with open("anchor.chrome_trace") as f:
        trace_events = json.load(f)["traceEvents"]
    assert len(trace_events) == 1
    event = trace_events[0]
    assert (event["cat"], event["name"], event["args"]["call_stack"], event["args"]["metrics"]) == \
        ("metric", "metric_only: <foo, 1.000000>", ["ROOT", "metric_only"], {"foo": "1.000000"})


def test_lane_metadata_names_the_process_trace_and_places_every_lane(fake):
    proton.start("lanes", data="trace", backend="fake")
    with proton.scope("s"):
        fake().launch("k", 100, stream_id=7)
    proton.finalize()
    with open("lanes.chrome_trace") as f:
        events = json.load(f)["traceEvents"]
    meta = [(e["name"], e["tid"], e["args"]) for e in events if e["ph"] == "M"]
    assert meta == [("process_name", 0, {"name": "Trace"}), ("process_sort_index", 0, {"sort_index": 0}),
                    ("thread_name", 0, {"name": "CPU Thread 0"}), ("thread_sort_index", 0, {"sort_index": 0}),
                    ("thread_name", 200007, {"name": "GPU Stream 7"}),
                    ("thread_sort_index", 200007, {"sort_index": 200007})]
    scope = events[len(meta)]
    assert scope["args"] == {"call_stack": ["ROOT", "s"], "scope_id": scope["args"]["scope_id"]}


def test_data_get_of_a_trace_session_is_its_chrome_trace(fake):
    """Proton main's data.get and get_msgpack take trace sessions too."""
    msgpack = pytest.importorskip("msgpack")
    sid = proton.start("in_memory", data="trace", backend="fake")
    with proton.scope("s", metrics={"bytes": 2}):
        fake().launch("k", 100)
    proton.deactivate(sid, flushing=True)
    doc = proton.data.get(sid)
    packed = proton.data.get_msgpack(sid)
    proton.finalize()
    assert [e["cat"] for e in doc["traceEvents"] if e["ph"] != "M"] == ["metric", "flow", "flow", "kernel"]
    assert json.loads(msgpack.unpackb(packed, raw=False)) == doc
