"""Writers: the hatchet JSON layout, the Chrome trace document, atomic writes."""
from __future__ import annotations

import json
import os

import numpy as np
import pytest

from lepton.model.paths import ROOT, PathTable
from lepton.model.profile import Profile
from lepton.model.records import DeviceInfo
from lepton.model.trace import ScopeEvent, TraceData
from lepton.model.tree import TreeData
from lepton.writers import chrome_trace, hatchet, output_path, write, write_atomic

H200 = DeviceInfo("90", 132, 1980000, 3201000, 6016)


def tree_profile():
    paths = PathTable()
    s = paths.child(ROOT, "s")
    k = paths.child(s, "k")
    data = TreeData()
    data.scopes.add(s)
    data.add_metrics(s, {"bytes": 10, "cpu_time (ns)(exc)": 5})
    data.add_kernels([k], [100], [2], [0], "CUDA")
    return Profile(paths, data, {"CUDA": {0: H200}})


def test_hatchet_json_has_protons_layout():
    text = hatchet.render(tree_profile()).decode()
    assert text.startswith("\n[\n    {\n        \"children\": [")
    tree, devices = json.loads(text)
    assert tree["metrics"] == {"bytes": 0, "count": 0, "time (ns)": 0}
    s = tree["children"][0]
    assert s["metrics"] == {"bytes": 10, "cpu_time (ns)": 5}
    assert s["children"][0]["metrics"] == {"count": 2, "device_id": "0", "device_type": "CUDA",
                                           "time (ns)": 100}
    assert devices == {"CUDA": {"0": {"arch": "90", "bus_width": 6016, "clock_rate": 1980000,
                                      "memory_clock_rate": 3201000, "num_sms": 132}}}


def test_dropped_records_are_kept_in_the_file():
    p = tree_profile()
    p.dropped_records = 7
    tree, _ = json.loads(hatchet.render(p))
    assert tree["metrics"]["dropped_records"] == 7


def trace_profile():
    paths = PathTable()
    step = paths.child(ROOT, "step")
    k = paths.child(step, "k")
    lone = paths.child(ROOT, "lone")
    data = TraceData()
    base = 1_700_000_000_000_000_000
    data.scopes.append(ScopeEvent(step, base, base + 10_000, 0, 1))
    data.scopes.append(ScopeEvent(step, base + 20_000, base + 30_000, 1, 2, {"bytes": 4}))
    data.add_kernels(pid=np.array([k, k, lone]), start_ns=np.array([base + 5_000, base + 25_000, base + 40_000]),
                     end_ns=np.array([base + 6_000, base + 27_000, base + 41_000]),
                     launch_ns=np.array([base + 1_000, base + 21_000, base + 39_000]),
                     device_id=np.array([0, 0, 0]), stream_id=np.array([7, 13, 7]))
    return Profile(paths, data, timeline=True)


def test_chrome_trace_is_one_document_with_lanes_and_flows():
    doc = json.loads(chrome_trace.render(trace_profile()))
    assert doc["baseTimeNanoseconds"] == 1_700_000_000_000_000_000
    events = doc["traceEvents"]
    names = {(e["tid"], e["args"]["name"]) for e in events if e["ph"] == "M" and e["name"] == "thread_name"}
    assert names == {(0, "CPU Thread 0"), (1, "CPU Thread 1"), (200007, "GPU Stream 7"),
                     (200013, "GPU Stream 13")}
    scopes = [e for e in events if e["ph"] == "X" and e["cat"] in ("scope", "metric")]
    kernels = [e for e in events if e["ph"] == "X" and e["cat"] == "kernel"]
    assert [s["ts"] for s in scopes] == [0.0, 20.0]
    assert scopes[1]["name"] == "step: <bytes, 4>"
    assert [k["ts"] for k in kernels] == [5.0, 40.0, 25.0]  # by lane, then by start
    flows = [(e["ph"], e["id"], e["ts"], e["tid"]) for e in events if e.get("cat") == "flow"]
    assert flows == [("s", 0, 0.0, 0), ("f", 0, 5.0, 200007), ("s", 1, 20.0, 1), ("f", 1, 25.0, 200013)]
    assert [k["args"]["call_stack"] for k in kernels] == [["ROOT", "step", "k"], ["ROOT", "lone"],
                                                          ["ROOT", "step", "k"]]


def test_empty_trace_is_still_valid_json():
    doc = json.loads(chrome_trace.render(Profile(PathTable(), TraceData())))
    assert doc == {"displayTimeUnit": "us", "traceEvents": []}


def test_writes_are_atomic_and_leave_no_temporary_files(tmp_path):
    target = tmp_path / "out.hatchet"
    write_atomic(str(target), b"old")
    with pytest.raises(TypeError):
        write_atomic(str(target), object())  # fails half-way: after the temporary file is made
    assert target.read_bytes() == b"old"
    assert os.listdir(tmp_path) == ["out.hatchet"]


def test_output_names():
    assert output_path("a/b", "hatchet") == "a/b.hatchet"
    assert output_path("x.hatchet", "hatchet") == "x.hatchet"
    assert output_path("p", "hatchet", ".part_2") == "p.part_2.hatchet"
    assert write(tree_profile(), "named", "hatchet").endswith("named.hatchet")


def _strict(text):
    """json.loads that rejects NaN, Infinity and -Infinity, as orjson, browsers and Perfetto do."""
    def reject(constant):
        raise ValueError(f"not JSON: {constant}")

    return json.loads(text, parse_constant=reject)


def test_nan_and_infinite_metrics_are_written_as_null():
    paths = PathTable()
    s = paths.child(ROOT, "s")
    data = TreeData()
    data.scopes.add(s)
    data.add_metrics(s, {"flops": float("nan"), "ratio (pty)": float("inf"), "v": [1.5, float("-inf")],
                         "n (exc)": 3})
    data.add_metrics(ROOT, {"top": float("-inf")})
    profile = Profile(paths, data)
    tree, _ = _strict(hatchet.render(profile))
    assert tree["children"][0]["metrics"] == {"flops": None, "ratio": None, "v": [1.5, None], "n": 3}
    assert tree["metrics"]["top"] is None
    literal_tree, _ = hatchet.to_literal(profile)  # what proton.data.get returns: json.loads' view
    assert literal_tree["children"][0]["metrics"] == {"flops": None, "ratio": None, "v": [1.5, None], "n": 3}
    assert data.metrics[s]["v"] == [1.5, float("-inf")]  # the model keeps the values


def test_nan_and_infinite_metrics_in_a_trace_are_strict_json():
    paths = PathTable()
    step = paths.child(ROOT, "step")
    data = TraceData()
    data.scopes.append(ScopeEvent(step, 1000, 2000, 0, 1, {"flops": float("nan"), "v": [float("inf"), 1.0]}))
    (event,) = [e for e in _strict(chrome_trace.render(Profile(paths, data, timeline=True)))["traceEvents"] if e["ph"] == "X"]
    assert event["args"]["metrics"] == {"flops": "nan", "v": "[inf,1]"}  # a C++ stream prints 1.0 as 1


def test_a_tree_thousands_deep_renders():
    paths = PathTable()
    leaf = paths.extend(ROOT, [f"d{i}" for i in range(3_000)])
    data = TreeData()
    data.add_kernels([leaf], [5], [1], [0], "CUDA")
    tree, _ = hatchet.to_literal(Profile(paths, data))
    depth = 0
    while tree["children"]:
        (tree,) = tree["children"]
        depth += 1
    assert depth == 3_000 and tree["metrics"]["time (ns)"] == 5
