"""Chrome / Perfetto trace JSON for `data="trace"`: always one valid JSON document.

By default the file holds Proton's event set: one event per kernel, on its GPU lane, with
`args.call_stack` (`["ROOT", scopes..., kernel]`). With `LEPTON_TRACE_TIMELINE=1` set when the
session starts, the session also records every CPU scope instance, and the file adds a lane per CPU
thread with the scopes, names for the lanes, and flows from each scope to its kernels.

Lanes: `pid` 0; a CPU lane per thread (`tid` = thread lane, 0, 1, ...); a GPU lane per
(device, stream) (`tid` = 200000 + stream on device 0, as Proton numbers them; other devices get
`200000 + 1000 * device + stream`). All `ts`/`dur` are microseconds relative to
`baseTimeNanoseconds`, the earliest event (epoch ns), so the trace can be aligned with other tools.

With the CPU scopes, a CUDA graph's replays get a lane per stream, `Graph: Stream N`, with the scopes
the graph's kernels were captured in drawn at each replay (`writers.graph_lane`).

A kernel is linked to the scope instance that launched it (same call path, launch time inside the
scope; a replayed kernel's is the replay's scope) by a flow: the scope carries `"bind_id": n, "flow_out": true` and each of its kernels
`"bind_id": n, "flow_in": true` (Perfetto's flow-v2 fields, a few bytes per event instead of two
extra flow events per kernel). Kernels launched outside every scope have no flow.

A trace of instrumented kernels (`TraceData.cycle_launches`) is Proton's per-warp instrumentation
trace instead: see `writers.instrumentation_trace`.

Scope metrics are written as text, in the event's name (`step: <flops, nan>`) and as strings in
`args.metrics` (`"nan"`, `"inf"`, `"-inf"` for non-finite values), never as JSON numbers; every other
number is a finite time or id. So the document never holds bare `NaN`/`Infinity`, which strict
readers (Perfetto, browsers, orjson) reject.
"""
from __future__ import annotations

import json

import numpy as np

from ..model.paths import ROOT
from ..model.profile import Profile
from ..model.trace import TraceData
from ..units import ns_to_us
from . import instrumentation_trace
from .graph_lane import GraphScope, graph_scopes, replay_scopes

GPU_LANE_BASE = 200_000


def gpu_lane(device_id: int, stream_id: int) -> int:
    return GPU_LANE_BASE + 1000 * device_id + stream_id if device_id else GPU_LANE_BASE + stream_id


def _fmt(value) -> str:
    if isinstance(value, float):
        return f"{value:f}"
    if isinstance(value, list):
        return "[" + ",".join(_fmt(v) for v in value) + "]"
    return str(value)


def _link_kernels_to_scopes(profile: Profile, kernels: dict[str, np.ndarray], scopes: list) -> np.ndarray:
    """For each kernel, the index in `scopes` of the scope event that launched it, or -1."""
    parent = replay_scopes(profile.paths, kernels["pid"])
    owner = np.full(len(parent), -1, dtype=np.int64)
    by_path: dict[int, list[int]] = {}
    for i, ev in enumerate(scopes):
        by_path.setdefault(ev.pid, []).append(i)
    for pid, idxs in by_path.items():
        rows = np.flatnonzero(parent == pid)
        if not len(rows):
            continue
        idxs = sorted(idxs, key=lambda i: scopes[i].start_ns)
        starts = np.array([scopes[i].start_ns for i in idxs], dtype=np.int64)
        ends = np.array([scopes[i].end_ns for i in idxs], dtype=np.int64)
        launch = kernels["launch_ns"][rows]
        pos = np.searchsorted(starts, launch, side="right") - 1
        ok = (pos >= 0) & (launch >= 0)
        ok[ok] &= launch[ok] <= ends[pos[ok]]
        owner[rows[ok]] = np.asarray(idxs, dtype=np.int64)[pos[ok]]
    return owner


# Below this many ns, `_us` writes times with integer arithmetic: values of at most 15 significant
# digits, which a double holds exactly, so the text equals `repr(round(ns_to_us(ns), 3))`.
_EXACT_NS = 10**15


def _us(ns: int) -> str:
    """`ns` in microseconds as JSON, exactly as `json.dumps(round(ns_to_us(ns), 3))` writes it."""
    if -_EXACT_NS < ns < _EXACT_NS:
        whole, frac = divmod(-ns if ns < 0 else ns, 1000)
        sign = "-" if ns < 0 else ""
        return f"{sign}{whole}.0" if frac == 0 else f"{sign}{whole}.{frac:03d}".rstrip("0")
    return repr(round(ns_to_us(ns), 3))  # as the dict form computed it (a float division)


def _us_column(ns: np.ndarray) -> list[str]:
    """`_us` of every value of an int64 column, without a call per value when all are in range."""
    if not len(ns) or ns.min() < 0 or ns.max() >= _EXACT_NS:
        return [_us(v) for v in ns.tolist()]
    whole, frac = np.divmod(ns, 1000)
    return [f"{w}.{f:03d}".rstrip("0") if f else f"{w}.0" for w, f in zip(whole.tolist(), frac.tolist())]


def _dumps(value) -> str:
    return json.dumps(value, separators=(",", ":"))


def _lane_names(data: TraceData, kernels: dict[str, np.ndarray], graphs: list[GraphScope]) -> list[str]:
    """The timeline's metadata events: the process, and a name and place for every lane."""
    events = [_dumps({"ph": "M", "pid": 0, "tid": 0, "name": "process_name", "args": {"name": "Lepton"}})]
    for lane in sorted({ev.lane for ev in data.scopes}):
        events.append(_dumps({"ph": "M", "pid": 0, "tid": lane, "name": "thread_name",
                              "args": {"name": f"CPU Thread {lane}"}}))
    gpu = sorted(set(zip(kernels["device_id"].tolist(), kernels["stream_id"].tolist())))
    multi_device = len({d for d, _ in gpu}) > 1
    for d, s in gpu:
        label = f"GPU {d} Stream {s}" if multi_device else f"GPU Stream {s}"
        tid = gpu_lane(d, s)
        events.append(_dumps({"ph": "M", "pid": 0, "tid": tid, "name": "thread_name", "args": {"name": label}}))
        events.append(_dumps({"ph": "M", "pid": 0, "tid": tid, "name": "thread_sort_index",
                              "args": {"sort_index": tid}}))
    for lane in sorted({g.lane for g in graphs}):
        events.append(_dumps({"ph": "M", "pid": 0, "tid": lane, "name": "thread_name",
                              "args": {"name": f"Graph: Stream {lane % 1000}"}}))
    return events


def _graph_scope_events(graphs: list[GraphScope], base: int, paths) -> list[str]:
    """The scope events of the graph lanes (`writers.graph_lane`)."""
    return [_dumps({"ph": "X", "cat": "scope", "name": paths.name[g.pid], "ts": round(ns_to_us(g.start_ns - base), 3),
                    "dur": round(ns_to_us(g.end_ns - g.start_ns), 3), "pid": 0, "tid": g.lane,
                    "args": {"call_stack": ["ROOT", *paths.names_of(g.pid)]}}) for g in graphs]


def _events(profile: Profile) -> tuple[int | None, list[str]]:
    """`(base time, events as JSON texts)`. A trace has a scope or kernel event per instance (10^5
    and more), so those are written from templates; the text is what `json.dumps` writes for the
    same events as dicts (tested against it)."""
    data = profile.data
    assert isinstance(data, TraceData)
    paths = profile.paths
    kernels = data.kernels()
    timeline = profile.timeline
    scopes = data.scopes if timeline else []  # CPU scopes are the timeline's
    starts = [ev.start_ns for ev in scopes]
    if len(kernels["start_ns"]):
        starts.append(int(kernels["start_ns"].min()))
    if not starts:
        return None, []
    base = min(starts)
    owner = _link_kernels_to_scopes(profile, kernels, scopes)
    linked_scopes = set(owner[owner >= 0].tolist())
    graphs = graph_scopes(paths, kernels) if timeline else []
    events = _lane_names(data, kernels, graphs) if timeline else []
    name_json: dict[int, str] = {}

    def quoted(pid: int) -> str:
        text = name_json.get(pid)
        if text is None:
            text = name_json[pid] = _dumps(paths.name[pid])
        return text

    in_time_order = sorted(range(len(scopes)), key=lambda j: scopes[j].start_ns)
    starts = np.array([scopes[j].start_ns for j in in_time_order], np.int64)
    ends = np.array([scopes[j].end_ns for j in in_time_order], np.int64)
    scope_ts, scope_dur = _us_column(starts - base), _us_column(ends - starts)
    for ev, ts, dur in zip(in_time_order, scope_ts, scope_dur):
        sc = scopes[ev]
        flow = f',"bind_id":{ev},"flow_out":true' if ev in linked_scopes else ""
        if sc.metrics:
            name = paths.name[sc.pid]
            out = {"ph": "X", "cat": "metric",
                   "name": name + ": " + ", ".join(f"<{k}, {_fmt(v)}>" for k, v in sc.metrics.items()),
                   "ts": round(ns_to_us(sc.start_ns - base), 3), "dur": round(ns_to_us(sc.end_ns - sc.start_ns), 3),
                   "pid": 0, "tid": sc.lane,
                   "args": {"scope_id": sc.scope_id, "metrics": {k: _fmt(v) for k, v in sc.metrics.items()}}}
            events.append(_dumps(out)[:-1] + flow + "}")
            continue
        events.append(f'{{"ph":"X","cat":"scope","name":{quoted(sc.pid)},"ts":{ts},'
                      f'"dur":{dur},"pid":0,"tid":{sc.lane},'
                      f'"args":{{"scope_id":{sc.scope_id}}}{flow}}}')
    events += _graph_scope_events(graphs, base, paths)
    order = np.lexsort((kernels["start_ns"], kernels["stream_id"], kernels["device_id"]))
    pid_col = kernels["pid"][order].tolist()
    ts_col = _us_column(kernels["start_ns"][order] - base)
    dur_col = _us_column(kernels["end_ns"][order] - kernels["start_ns"][order])
    dev_col, stream_col = kernels["device_id"][order].tolist(), kernels["stream_id"][order].tolist()
    owner_col = owner[order].tolist()
    call_stacks: dict[int, str] = {}
    for pid, ts, dur, dev, stream, o in zip(pid_col, ts_col, dur_col, dev_col, stream_col, owner_col):
        if o >= 0:
            tail = f',"bind_id":{o},"flow_in":true'
        elif paths.parent[pid] != ROOT or not timeline:
            tail = call_stacks.get(pid)
            if tail is None:
                tail = call_stacks[pid] = ',"args":{"call_stack":' + _dumps(["ROOT", *paths.names_of(pid)]) + "}"
        else:
            tail = ""
        events.append(f'{{"ph":"X","cat":"kernel","name":{quoted(pid)},"ts":{ts},"dur":{dur},'
                      f'"pid":0,"tid":{gpu_lane(dev, stream)}{tail}}}')
    return base, events


def render(profile: Profile) -> bytes:
    if isinstance(profile.data, TraceData) and profile.data.cycle_launches:
        return instrumentation_trace.render(profile)  # scopes inside kernels: Proton's per-warp trace
    base, events = _events(profile)
    if base is None:
        return b'{"displayTimeUnit":"us","traceEvents":[]}\n'
    other = f',"otherData":{{"dropped_records":{profile.dropped_records}}}' if profile.dropped_records else ""
    return (f'{{"displayTimeUnit":"us","baseTimeNanoseconds":{int(base)},"traceEvents":['
            + ",".join(events) + f"]{other}}}\n").encode()
