"""Chrome / Perfetto trace JSON for `data="trace"`: always one valid JSON document.

Lanes: `pid` 0; a CPU lane per thread (`tid` = thread lane, 0, 1, ...); a GPU lane per
(device, stream) (`tid` = 200000 + stream on device 0, as Proton numbers them; other devices get
`200000 + 1000 * device + stream`). All `ts`/`dur` are microseconds relative to
`baseTimeNanoseconds`, the earliest event (epoch ns), so the trace can be aligned with other tools.

A kernel is linked to the scope instance that launched it (same call path, launch time inside the
scope) by a flow: the scope carries `"bind_id": n, "flow_out": true` and each of its kernels
`"bind_id": n, "flow_in": true` (Perfetto's flow-v2 fields, a few bytes per event instead of two
extra flow events per kernel). Kernels launched outside every scope have no flow.
"""
from __future__ import annotations

import json

import numpy as np

from ..model.paths import ROOT
from ..model.profile import Profile
from ..model.trace import TraceData
from ..units import ns_to_us

GPU_LANE_BASE = 200_000


def gpu_lane(device_id: int, stream_id: int) -> int:
    return GPU_LANE_BASE + 1000 * device_id + stream_id if device_id else GPU_LANE_BASE + stream_id


def _fmt(value) -> str:
    if isinstance(value, float):
        return f"{value:f}"
    if isinstance(value, list):
        return "[" + ",".join(_fmt(v) for v in value) + "]"
    return str(value)


def _link_kernels_to_scopes(profile: Profile, kernels: dict[str, np.ndarray]) -> np.ndarray:
    """For each kernel, the index of the scope event that launched it, or -1."""
    data = profile.data
    parent = np.asarray(profile.paths.parent, dtype=np.int64)[kernels["pid"]] if len(kernels["pid"]) else \
        np.zeros(0, np.int64)
    owner = np.full(len(parent), -1, dtype=np.int64)
    by_path: dict[int, list[int]] = {}
    for i, ev in enumerate(data.scopes):
        by_path.setdefault(ev.pid, []).append(i)
    for pid, idxs in by_path.items():
        rows = np.flatnonzero(parent == pid)
        if not len(rows):
            continue
        idxs = sorted(idxs, key=lambda i: data.scopes[i].start_ns)
        starts = np.array([data.scopes[i].start_ns for i in idxs], dtype=np.int64)
        ends = np.array([data.scopes[i].end_ns for i in idxs], dtype=np.int64)
        launch = kernels["launch_ns"][rows]
        pos = np.searchsorted(starts, launch, side="right") - 1
        ok = (pos >= 0) & (launch >= 0)
        ok[ok] &= launch[ok] <= ends[pos[ok]]
        owner[rows[ok]] = np.asarray(idxs, dtype=np.int64)[pos[ok]]
    return owner


def to_document(profile: Profile) -> dict:
    data = profile.data
    assert isinstance(data, TraceData)
    paths = profile.paths
    kernels = data.kernels()
    starts = [ev.start_ns for ev in data.scopes]
    if len(kernels["start_ns"]):
        starts.append(int(kernels["start_ns"].min()))
    if not starts:
        return {"displayTimeUnit": "us", "traceEvents": []}
    base = min(starts)
    owner = _link_kernels_to_scopes(profile, kernels)
    linked_scopes = set(owner[owner >= 0].tolist())
    events: list[dict] = [
        {"ph": "M", "pid": 0, "tid": 0, "name": "process_name", "args": {"name": "Lepton"}},
    ]
    lanes = sorted({ev.lane for ev in data.scopes})
    gpu = sorted(set(zip(kernels["device_id"].tolist(), kernels["stream_id"].tolist())))
    multi_device = len({d for d, _ in gpu}) > 1
    for lane in lanes:
        events.append({"ph": "M", "pid": 0, "tid": lane, "name": "thread_name",
                       "args": {"name": f"CPU Thread {lane}"}})
    for d, s in gpu:
        label = f"GPU {d} Stream {s}" if multi_device else f"GPU Stream {s}"
        tid = gpu_lane(d, s)
        events.append({"ph": "M", "pid": 0, "tid": tid, "name": "thread_name", "args": {"name": label}})
        events.append({"ph": "M", "pid": 0, "tid": tid, "name": "thread_sort_index",
                       "args": {"sort_index": tid}})
    for ev in sorted(range(len(data.scopes)), key=lambda j: data.scopes[j].start_ns):
        sc = data.scopes[ev]
        name = paths.name[sc.pid]
        out = {"ph": "X", "cat": "scope", "name": name, "ts": round(ns_to_us(sc.start_ns - base), 3),
               "dur": round(ns_to_us(sc.end_ns - sc.start_ns), 3), "pid": 0, "tid": sc.lane,
               "args": {"scope_id": sc.scope_id}}
        if sc.metrics:
            out["cat"] = "metric"
            out["name"] = name + ": " + ", ".join(f"<{k}, {_fmt(v)}>" for k, v in sc.metrics.items())
            out["args"]["metrics"] = {k: _fmt(v) for k, v in sc.metrics.items()}
        if ev in linked_scopes:
            out["bind_id"] = ev
            out["flow_out"] = True
        events.append(out)
    order = np.lexsort((kernels["start_ns"], kernels["stream_id"], kernels["device_id"]))
    pid_col, st, en = kernels["pid"], kernels["start_ns"], kernels["end_ns"]
    dev, strm = kernels["device_id"], kernels["stream_id"]
    for row in order.tolist():
        pid = int(pid_col[row])
        out = {"ph": "X", "cat": "kernel", "name": paths.name[pid], "ts": round(ns_to_us(int(st[row]) - base), 3),
               "dur": round(ns_to_us(int(en[row] - st[row])), 3), "pid": 0, "tid": gpu_lane(int(dev[row]), int(strm[row]))}
        o = int(owner[row])
        if o >= 0:
            out["bind_id"] = o
            out["flow_in"] = True
        elif paths.parent[pid] != ROOT:
            out["args"] = {"call_stack": ["ROOT", *paths.names_of(pid)]}
        events.append(out)
    doc = {"displayTimeUnit": "us", "baseTimeNanoseconds": int(base), "traceEvents": events}
    if profile.dropped_records:
        doc["otherData"] = {"dropped_records": profile.dropped_records}
    return doc


def render(profile: Profile) -> bytes:
    return (json.dumps(to_document(profile), separators=(",", ":")) + "\n").encode()
