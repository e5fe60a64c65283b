"""Chrome / Perfetto trace JSON for `data="trace"`: always one valid JSON document, Proton main's.

Events, in this order (Proton main's `TraceData` dump):
1. lane metadata, where there are kernels: the process ("Trace"), and a name and a place for each
   CPU lane ("CPU Thread N") and GPU lane ("GPU Stream N");
2. one event per CPU scope instance, on its thread's lane: `"cat": "scope"`, or `"cat": "metric"`
   with the scope's metrics in its name (`step: <bytes, 4>`) and in `args.metrics`; `args` holds
   its `call_stack` (`["ROOT", scopes...]`) and `scope_id`;
3. a flow from each scope instance to each kernel it launched (same call path, launch time inside
   the scope): `"ph": "s"` on the CPU lane at the scope's start, `"ph": "f"` on the GPU lane at the
   kernel's start, both `"name": "launch->kernel"`, `"cat": "flow"`, `"bp": "e"`, one `id`;
4. one event per kernel, on its GPU lane, with `args.call_stack` (`["ROOT", scopes..., kernel]`).
A trace with no kernel holds the scope events only; one with nothing at all, no base time.
With `LEPTON_TRACE_TIMELINE=0` set when the session starts, no CPU scope instance is recorded and
the file holds the kernel events only (Triton 3.6's event set).

Lanes: `pid` 0; a CPU lane per thread (`tid` = thread lane, 0, 1, ...); a GPU lane per
(device, stream) (`tid` = 200000 + stream on device 0, as Proton numbers them; other devices get
`200000 + 1000 * device + stream`). All `ts`/`dur` are microseconds relative to
`baseTimeNanoseconds`, the earliest event (epoch ns), so the trace can be aligned with other tools.

A CUDA graph's replays get a lane per stream, `Graph: Stream N`, with the scopes the graph's
kernels were captured in drawn at each replay (`writers.graph_lane`).

A trace of instrumented kernels (`TraceData.cycle_launches`) is Proton's per-warp instrumentation
trace instead: see `writers.instrumentation_trace`.

Scope metrics are written as text, as Proton formats them (`std::to_string`: `1.000000`), sorted
by name, in the event's name and as strings in `args.metrics` (`"nan"`, `"inf"`, `"-inf"` for
non-finite values), never as JSON numbers; every other number is a finite time or id. So the
document never holds bare `NaN`/`Infinity`, which strict readers (Perfetto, browsers, orjson) reject.
"""
from __future__ import annotations

import json

import numpy as np

from ..model.metrics import parse_metric_name
from ..model.profile import Profile
from ..model.trace import TraceData
from ..units import ns_to_us
from . import instrumentation_trace
from .graph_lane import GraphScope, graph_scopes, replay_scopes

GPU_LANE_BASE = 200_000


def gpu_lane(device_id: int, stream_id: int) -> int:
    return GPU_LANE_BASE + 1000 * device_id + stream_id if device_id else GPU_LANE_BASE + stream_id


def _fmt(value) -> str:
    """A metric value as Proton writes it in a trace: `std::to_string` for a number, a vector's
    elements as a C++ stream prints them (`[1.5,2]`)."""
    if isinstance(value, float):
        return f"{value:f}"
    if isinstance(value, list):
        return "[" + ",".join(f"{v:g}" if isinstance(v, float) else str(v) for v in value) + "]"
    return str(value)


def metric_texts(metrics: dict) -> dict[str, str]:
    """A scope's metrics as a trace shows them: by name without Lepton's `(pty)`/`(exc)` suffix,
    sorted, each value as text."""
    named = {parse_metric_name(k).name: v for k, v in metrics.items()}
    return {k: _fmt(named[k]) for k in sorted(named)}


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
    """The metadata events: the process, and a name and a place for every lane."""
    events = [_dumps({"ph": "M", "pid": 0, "tid": 0, "name": "process_name", "args": {"name": "Trace"}}),
              _dumps({"ph": "M", "pid": 0, "tid": 0, "name": "process_sort_index",
                      "args": {"sort_index": 0}})]
    lanes = [(lane, f"CPU Thread {lane}") for lane in sorted({ev.lane for ev in data.scopes})]
    gpu = sorted(set(zip(kernels["device_id"].tolist(), kernels["stream_id"].tolist())))
    multi_device = len({d for d, _ in gpu}) > 1
    lanes += [(gpu_lane(d, s), f"GPU {d} Stream {s}" if multi_device else f"GPU Stream {s}") for d, s in gpu]
    for tid, label in lanes:
        events.append(_dumps({"ph": "M", "pid": 0, "tid": tid, "name": "thread_name",
                              "args": {"name": label}}))
        events.append(_dumps({"ph": "M", "pid": 0, "tid": tid, "name": "thread_sort_index",
                              "args": {"sort_index": tid}}))
    for lane in sorted({g.lane for g in graphs}):
        events.append(_dumps({"ph": "M", "pid": 0, "tid": lane, "name": "thread_name",
                              "args": {"name": f"Graph: Stream {lane % 1000}"}}))
    return events


class _Names:
    """JSON texts of path names and call stacks, each made once per path."""

    def __init__(self, paths) -> None:
        self.paths = paths
        self._names: dict[int, str] = {}
        self._stacks: dict[int, str] = {}

    def name(self, pid: int) -> str:
        text = self._names.get(pid)
        if text is None:
            text = self._names[pid] = _dumps(self.paths.name[pid])
        return text

    def call_stack(self, pid: int) -> str:
        text = self._stacks.get(pid)
        if text is None:
            text = self._stacks[pid] = _dumps(["ROOT", *self.paths.names_of(pid)])
        return text


def _scope_events(scopes: list, order: list[int], base: int, names: _Names) -> list[str]:
    """One event per CPU scope instance (`order`: indices into `scopes`)."""
    starts = np.array([scopes[j].start_ns for j in order], np.int64)
    ends = np.array([scopes[j].end_ns for j in order], np.int64)
    events = []
    for j, ts, dur in zip(order, _us_column(starts - base), _us_column(ends - starts)):
        sc = scopes[j]
        stack = names.call_stack(sc.pid)
        if sc.metrics:
            texts = metric_texts(sc.metrics)
            label = names.paths.name[sc.pid] + ": " + ", ".join(f"<{k}, {v}>" for k, v in texts.items())
            events.append(f'{{"ph":"X","cat":"metric","name":{_dumps(label)},"ts":{ts},"dur":{dur},"pid":0,'
                          f'"tid":{sc.lane},"args":{{"call_stack":{stack},"metrics":{_dumps(texts)},'
                          f'"scope_id":{sc.scope_id}}}}}')
        else:
            events.append(f'{{"ph":"X","cat":"scope","name":{names.name(sc.pid)},"ts":{ts},"dur":{dur},'
                          f'"pid":0,"tid":{sc.lane},'
                          f'"args":{{"call_stack":{stack},"scope_id":{sc.scope_id}}}}}')
    return events


def _flow_events(scopes: list, owner: list[int], scope_ts: dict[int, str], kernel_ts: list[str],
                 kernel_lanes: list[int]) -> list[str]:
    """A pair of flow events from each scope instance to each kernel it launched."""
    events = []
    for o, ts, lane in zip(owner, kernel_ts, kernel_lanes):
        if o >= 0:
            events.append(f'{{"ph":"s","cat":"flow","name":"launch->kernel","id":{o},"bp":"e",'
                          f'"ts":{scope_ts[o]},"pid":0,"tid":{scopes[o].lane}}}')
            events.append(f'{{"ph":"f","cat":"flow","name":"launch->kernel","id":{o},"bp":"e","ts":{ts},'
                          f'"pid":0,"tid":{lane}}}')
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
    kernels = data.kernels()
    scopes = data.scopes if profile.timeline else []  # CPU scopes are the timeline's
    starts = [ev.start_ns for ev in scopes]
    if len(kernels["start_ns"]):
        starts.append(int(kernels["start_ns"].min()))
    if not starts:
        return None, []
    base = min(starts)
    names = _Names(profile.paths)
    has_kernels = len(kernels["pid"]) > 0
    graphs = graph_scopes(profile.paths, kernels) if profile.timeline else []
    events = _lane_names(data, kernels, graphs) if profile.timeline and has_kernels else []
    order = sorted(range(len(scopes)), key=lambda j: (scopes[j].lane, scopes[j].start_ns))
    events += _scope_events(scopes, order, base, names)
    events += _graph_scope_events(graphs, base, profile.paths)
    rows = np.lexsort((kernels["start_ns"], kernels["stream_id"], kernels["device_id"]))
    ts_col = _us_column(kernels["start_ns"][rows] - base)
    dur_col = _us_column(kernels["end_ns"][rows] - kernels["start_ns"][rows])
    devices, streams = kernels["device_id"][rows].tolist(), kernels["stream_id"][rows].tolist()
    lanes = [gpu_lane(d, s) for d, s in zip(devices, streams)]
    owner = _link_kernels_to_scopes(profile, kernels, scopes)[rows].tolist()
    linked = sorted({o for o in owner if o >= 0})
    scope_ts = dict(zip(linked, _us_column(np.array([scopes[o].start_ns for o in linked], np.int64) - base)))
    events += _flow_events(scopes, owner, scope_ts, ts_col, lanes)
    for pid, ts, dur, lane in zip(kernels["pid"][rows].tolist(), ts_col, dur_col, lanes):
        events.append(f'{{"ph":"X","cat":"kernel","name":{names.name(pid)},"ts":{ts},"dur":{dur},'
                      f'"pid":0,"tid":{lane},"args":{{"call_stack":{names.call_stack(pid)}}}}}')
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
