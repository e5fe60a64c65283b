"""Proton main's behaviour on a real GPU (issue 32), each scenario in a fresh process, mirroring main's
tests: periodic flushing (test_periodic_flushing), the data API read by the viewer (test_get_data),
the metric type message (test_scope_metrics_invalid) and the trace's metric, scope and flow events
(test_trace_flexible_metrics_scope_ranges)."""
from __future__ import annotations

import glob
import json
import os

import msgpack
import pytest
from test_cupti import run

pytestmark = pytest.mark.gpu

FOO = """
@triton.jit
def foo(x, y, size: tl.constexpr):
    offs = tl.arange(0, size)
    tl.store(y + offs, tl.load(x + offs))
"""


@pytest.mark.parametrize("data_format, buffer_size", [
    ("hatchet", 256 * 1024), ("hatchet_msgpack", 256 * 1024), ("hatchet", 64 * 1024 * 1024)])
def test_periodic_flushing_writes_a_file_per_phase(tmp_path, data_format, buffer_size):
    out = run(tmp_path, f"""
        os.environ["TRITON_PROFILE_BUFFER_SIZE"] = "{buffer_size}"
        session = proton.start("test_periodic_flushing", mode="periodic_flushing:format={data_format}")
        for i in range(10000):
            if i != 0 and i % 1000 == 0:
                proton.data.advance_phase(session=session)
            with proton.scope(f"test_{{i}}", metrics={{"count": 1}}):
                torch.zeros((100), device="cuda")
        REGISTRY.phase_writer.drain()
        before_finalize = len([f for f in os.listdir(".") if f.endswith(".{data_format}")])
        proton.finalize(output_format="{data_format}")
        result(before_finalize=before_finalize)
        """)
    files = glob.glob(str(tmp_path / f"*.{data_format}"))
    assert len(files) == 10
    num_scopes = 0
    for path in files:
        with open(path, "rb") as f:
            data = msgpack.load(f, raw=False, strict_map_key=False) if data_format == "hatchet_msgpack" \
                else json.load(f)
        assert len(data[0]["children"]) == 1000
        assert data[0]["children"][0]["metrics"]["count"] == 1
        assert data[0]["children"][0]["frame"]["name"].startswith("test_")
        assert data[0]["children"][0]["children"][0]["metrics"]["time (ns)"] > 0
        num_scopes += len(data[0]["children"])
    assert num_scopes == 10000
    if buffer_size < 2 << 20:  # buffers of 256 KiB (≈1,200 kernels) complete as the loop runs
        assert out["before_finalize"] >= 1, out


def test_get_data_is_read_by_the_viewer_and_its_messagepack_is_the_same(tmp_path):
    out = run(tmp_path, FOO, """
        import msgpack
        from lepton import viewer
        session = proton.start("test_tree_json", context="shadow")
        with proton.scope("test"):
            x = torch.ones((2, 2), device="cuda")
            foo[(1, )](x, x, 4)
            foo[(1, )](x, x, 4)
        proton.deactivate(session, flushing=True)
        database = proton.data.get(session)
        gf, _, _, _ = viewer.get_raw_metrics(database)
        counts = {}
        for name, count in zip(gf.dataframe["name"], gf.dataframe["count"]):
            if count == count:
                counts[name] = int(count)
        try:
            foo_frame = gf.filter("MATCH ('*', c) WHERE c.'name' =~ '.*foo.*' AND c IS LEAF").dataframe
            filtered = [len(foo_frame), int(foo_frame["count"].values[0])]
        except ImportError:
            filtered = None
        same = database == msgpack.loads(proton.data.get_msgpack(session), raw=False, strict_map_key=False)
        proton.finalize()
        result(counts=counts, filtered=filtered, same=same)
        """)
    assert out["counts"]["foo"] == 2
    assert [n for n, c in out["counts"].items() if "elementwise" in n and c == 1]
    assert out["filtered"] in (None, [1, 2])  # None where llnl-hatchet is not installed
    assert out["same"]


def test_a_metric_first_float_then_int_is_protons_type_mismatch(tmp_path):
    out = run(tmp_path, """
        proton.start("test_scope_metrics")
        error = None
        try:
            with proton.scope("test0", {"a": 1.0}):
                pass
            with proton.scope("test0", {"a": 1}):
                pass
        except Exception as e:
            error = str(e)
        finally:
            proton.finalize()
        result(error=error)
        """)
    assert "Metric value type mismatch for valueId 0 (a): current=double, new=int64_t" in out["error"]


def test_trace_metric_scope_and_flow_events_of_nested_scopes(tmp_path):
    run(tmp_path, FOO, """
        x = torch.ones((1024, ), device="cuda", dtype=torch.float32)
        y = torch.zeros_like(x)
        proton.start("ranges", data="trace")
        with proton.scope("scope_3", metrics={"m3": 3.0}):
            with proton.scope("scope_2", metrics={"m2": 2.0}):
                with proton.scope("scope_1", metrics={"m1": 1.0}):
                    foo[(1, )](x, y, x.size()[0], num_warps=4)
                with proton.scope("scope_4"):
                    foo[(1, )](x, y, x.size()[0], num_warps=4)
                with proton.scope("scope_5"):
                    foo[(1, )](x, y, x.size()[0], num_warps=4)
            with proton.scope("scope_6"):
                with proton.scope("scope_7"):
                    foo[(1, )](x, y, x.size()[0], num_warps=4)
        proton.finalize()
        result()
        """)
    with open(os.path.join(tmp_path, "ranges.chrome_trace")) as f:
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
    assert metric_by_name["m1"]["name"] == "scope_1: <m1, 1.000000>"
    assert metric_by_name["m3"]["args"]["call_stack"] == ["ROOT", "scope_3"]
    cpu_tid, gpu_tid = metric_by_name["m1"]["tid"], kernel_events[0]["tid"]
    starts = {e["id"]: e for e in flow_events if e["ph"] == "s"}
    finishes = {e["id"]: e for e in flow_events if e["ph"] == "f"}
    assert set(starts) == set(finishes) and len(starts) == 4
    assert all(e["tid"] == cpu_tid for e in starts.values())
    assert all(e["tid"] == gpu_tid for e in finishes.values())
    # each kernel starts after the scope that launched it
    assert all(finishes[i]["ts"] >= starts[i]["ts"] for i in starts)
