"""Instrumented launches into a profile: the tree (Proton's `instrumentation.hatchet` shape), the
per-warp trace (Proton's `instrumentation_trace.chrome_trace`), and lepton-view's kernel share."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from instrumentation_buffers import E, S, launch, slot

from lepton.backends.instrumentation.decode import decode_launch
from lepton.model.cycles import ns_per_cycle
from lepton.model.paths import ROOT, PathTable
from lepton.model.profile import Profile
from lepton.model.records import CycleLaunch
from lepton.model.trace import TraceData
from lepton.model.tree import TreeData, build_tree
from lepton.viewer.derive import derive
from lepton.viewer.load import from_document, load
from lepton.writers import chrome_trace, hatchet

ROOT_DIR = Path(__file__).resolve().parents[2]
DATA = ROOT_DIR / "tests" / "data" / "instrumentation"
PROTON = ROOT_DIR / "tests" / "data" / "proton_3_6"


def real_launch(name: str, paths: PathTable, call=("instr",)) -> CycleLaunch:
    meta = json.loads((DATA / f"{name}.json").read_text())
    raw = np.fromfile(DATA / f"{name}.bin", np.uint8)
    events = decode_launch(raw, meta["profile_scratch_size"], meta["num_warps"])
    kernel = paths.extend(ROOT, [*call, meta["name"]])
    return CycleLaunch(kernel, meta["name"], dict(map(tuple, meta["scope_id_names"])),
                       dict(map(tuple, meta["scope_id_parents"])), events, ("ROOT", meta["name"]))


def shape(node: dict) -> tuple:
    """(name, sorted metric names, children's shapes) of a hatchet literal."""
    return (node["frame"]["name"], sorted(node["metrics"]), tuple(shape(c) for c in node["children"]))


def without(metrics, tree_shape):
    name, keys, children = tree_shape
    return name, [k for k in keys if k not in metrics], tuple(without(metrics, c) for c in children)


def test_the_tree_of_the_real_load_store_buffer_has_protons_shape_and_metrics():
    """ROOT -> instr -> ikernel -> {load, store}, each with cycles, normalized_cycles, device_id,
    device_type (and Lepton's ns, normalized_ns); ROOT and the kernel carry nothing."""
    paths = PathTable()
    data = TreeData()
    data.add_cycle_launch(real_launch("load_store", paths), paths)
    build_tree(paths, data).self_check()
    ours = json.loads(hatchet.render(Profile(paths, data)))
    theirs = json.loads((PROTON / "instrumentation.hatchet").read_text())
    assert without({"ns", "normalized_ns"}, shape(ours[0])) == shape(theirs[0])
    load = ours[0]["children"][0]["children"][0]["children"][0]["metrics"]
    assert load["device_id"] == "0" and load["device_type"] == "1"
    assert load["normalized_cycles"] == load["cycles"] / 16
    assert 100 < load["normalized_cycles"] < 1000  # Proton's run: 188.3
    assert 0 < load["ns"] < load["cycles"] * 2  # an SM clock between 0.5 and 2.5 GHz
    assert load["normalized_ns"] == pytest.approx(load["ns"] / 16, abs=0.1)


def test_protons_normalized_cycles_is_cycles_per_warp_and_cta():
    """Proton's fixture: load 3013 cycles over 4 CTAs x 4 warps = 188.3125."""
    theirs = json.loads((PROTON / "instrumentation.hatchet").read_text())
    load = theirs[0]["children"][0]["children"][0]["children"][0]["metrics"]
    assert load["normalized_cycles"] == 3013 / (4 * 4) == 188.3125
    paths = PathTable()
    kernel = paths.extend(ROOT, ["k"])
    ev = decode_launch(*launch([slot([[(S, 0, 0), (E, 0, 3013)]] + [[]] * 3, program_id=p) for p in range(4)]), 4)
    data = TreeData()
    data.add_cycle_launch(CycleLaunch(kernel, "k", {0: "load"}, {}, ev), paths)
    metrics = data.metrics[paths.child(kernel, "load")]
    assert metrics["cycles"] == 4 * 3013 and metrics["normalized_cycles"] == 4 * 3013 / 16


def test_nested_scopes_nest_in_the_tree_and_launches_add_up():
    paths = PathTable()
    data = TreeData()
    launch_ = real_launch("nested", paths)
    data.add_cycle_launch(launch_, paths)
    data.add_cycle_launch(launch_, paths)
    root = build_tree(paths, data)
    root.self_check()
    outer = root.children["instr"].children["nested"].children["outer"]
    inner = outer.children["inner"]
    assert inner.metrics["cycles"] < outer.metrics["cycles"]
    durations = launch_.events.end_cycle - launch_.events.start_cycle
    assert outer.metrics["cycles"] == 2 * int(durations[launch_.events.scope == 0].sum())
    assert data.device_ids() == {0}


def test_ns_uses_each_ctas_globaltimer_rate_and_falls_back_where_a_span_is_zero():
    """CTA 0: 1000 cycles over 500 ns (0.5 ns/cycle); CTA 1: a zero globaltimer span takes the
    launch's pooled rate, 0.5; with no usable CTA at all, 1 ns per cycle."""
    cta0 = slot([[(S, 0, 0), (E, 0, 1000)]], program_id=0, init_ns=10_000, pre_final_ns=10_500)
    cta1 = slot([[(S, 0, 0), (E, 0, 400)]], program_id=1, init_ns=20_000, pre_final_ns=20_000)
    ev = decode_launch(*launch([cta0, cta1]), 1)
    assert ns_per_cycle(ev).tolist() == [0.5, 0.5]
    paths = PathTable()
    data = TreeData()
    data.add_cycle_launch(CycleLaunch(paths.child(ROOT, "k"), "k", {0: "s"}, {}, ev), paths)
    assert data.metrics[paths.extend(ROOT, ["k", "s"])]["ns"] == 700
    flat = decode_launch(*launch([cta1]), 1)
    assert ns_per_cycle(flat).tolist() == [1.0]


def trace_of(*launches: CycleLaunch) -> dict:
    data = TraceData()
    for launch_ in launches:
        data.add_cycle_launch(launch_, PathTable())
    text = chrome_trace.render(Profile(PathTable(), data)).decode()

    def reject(constant):
        raise ValueError(f"non-strict JSON constant {constant}")

    return json.loads(text, parse_constant=reject)


def test_the_trace_of_the_real_load_store_buffer_has_one_event_per_cta_warp_and_scope():
    paths = PathTable()
    doc = trace_of(real_launch("load_store", paths))
    theirs = json.loads((PROTON / "instrumentation_trace.chrome_trace").read_text())
    events = doc["traceEvents"]
    assert doc["displayTimeUnit"] == "ns" and len(events) == 4 * 4 * 2 == len(theirs["traceEvents"])
    assert {(e["pid"].split(" CTA")[1], e["tid"], e["name"]) for e in events} == \
        {(str(c), f"warp {w} (line 0)", s) for c in range(4) for w in range(4) for s in ("load", "store")}
    for ours, proton in zip(events, theirs["traceEvents"]):
        assert sorted(ours) == sorted(proton) and sorted(ours["args"]) == sorted(proton["args"])
        assert ours["pid"].startswith("ikernel Core") and ours["cat"] == "ikernel" and ours["ph"] == "X"
        assert ours["args"]["call_stack"] == ["ROOT", "ikernel"] and ours["dur"] > 0 and ours["ts"] >= 0
    assert min(e["ts"] for e in events) == 0.0
    assert [e["cname"] for e in events[:2]] == ["cq_build_passed", "cq_build_failed"]


def test_overlapping_intervals_of_one_warp_go_on_separate_lines():
    paths = PathTable()
    doc = trace_of(real_launch("nested", paths))
    lines = {(e["name"], e["tid"].split("(")[1]) for e in doc["traceEvents"]}
    assert lines == {("outer", "line 0)"), ("inner", "line 1)")}


def test_later_launches_start_after_earlier_ones_end():
    paths = PathTable()
    first = real_launch("load_store", paths)
    second = real_launch("load_store", paths)  # same globaltimer times: would overlap
    events = trace_of(first, second)["traceEvents"]
    assert len(events) == 64
    end_first = max(e["ts"] + e["dur"] for e in events[:32])
    assert min(e["ts"] for e in events[32:]) > end_first


def test_a_trace_without_cycle_launches_is_the_kernel_trace():
    text = chrome_trace.render(Profile(PathTable(), TraceData())).decode()
    assert json.loads(text) == {"displayTimeUnit": "us", "traceEvents": []}


def test_kernel_percent_is_each_scopes_share_of_its_kernels_top_level_scopes():
    """Proton's fixture: load 3013, store 12159 cycles under ikernel -> 19.86% and 80.14%."""
    tree = load(PROTON / "instrumentation.hatchet")
    (column,) = derive(tree, ["cycles/kernel%"]).columns
    share = dict(zip(tree.names, column.values.tolist()))
    assert share["load"] == pytest.approx(100 * 3013 / 15172)
    assert share["store"] == pytest.approx(100 * 12159 / 15172)
    assert np.isnan(share["ikernel"]) and np.isnan(share["ROOT"])


def test_kernel_percent_of_a_nested_scope_is_of_its_kernel_not_of_its_parent():
    paths = PathTable()
    data = TreeData()
    nested = real_launch("nested", paths)
    data.add_cycle_launch(nested, paths)
    other = real_launch("load_store", paths, call=("elsewhere",))
    data.add_cycle_launch(other, paths)
    tree = from_document(hatchet.to_literal(Profile(paths, data)))
    (column,) = derive(tree, ["normalized_ns/kernel%"]).columns
    share = dict(zip(tree.names, column.values.tolist()))
    assert share["outer"] == pytest.approx(100.0)
    assert 10 < share["inner"] < 100
    assert share["load"] + share["store"] == pytest.approx(100.0)
