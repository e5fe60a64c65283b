"""data="trace" through the API: by default Proton's event set (one event per kernel, with its call
stack); with LEPTON_TRACE_TIMELINE=1, one JSON document with CPU lanes, GPU lanes and flows."""
from __future__ import annotations

import json
import threading

import pytest

import lepton as proton


@pytest.fixture
def timeline(monkeypatch):
    monkeypatch.setenv("LEPTON_TRACE_TIMELINE", "1")


def test_a_trace_holds_protons_events_one_per_kernel_with_its_call_stack(fake):
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


def test_trace_has_scopes_kernels_streams_and_flows(fake, timeline):
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
    by_name = {(k["name"], k["tid"]): k for k in kernels}
    assert by_name[("add_kernel", lanes["GPU Stream 7"])]["bind_id"] == scopes["outer"]["bind_id"]
    assert by_name[("mul_kernel", lanes["GPU Stream 7"])]["bind_id"] == scopes["inner: <bytes, 5>"]["bind_id"]
    assert "bind_id" not in by_name[("add_kernel", lanes["GPU Stream 13"])]
    assert by_name[("thread_kernel", lanes["GPU Stream 7"])]["bind_id"] == scopes["thread_scope"]["bind_id"]


def test_cpu_only_trace_is_valid(fake, timeline):
    proton.start("cpu_trace", data="trace", backend="fake")
    with proton.scope("metric_only", {"foo": 1.0}):
        pass
    proton.finalize()
    with open("cpu_trace.chrome_trace") as f:
        doc = json.load(f)
    (ev,) = [e for e in doc["traceEvents"] if e["ph"] == "X"]
    assert ev["cat"] == "metric" and ev["name"] == "metric_only: <foo, 1.000000>"
    assert ev["args"]["metrics"] == {"foo": "1.000000"}
