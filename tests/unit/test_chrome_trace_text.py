"""The trace writer's templates write exactly what `json.dumps` writes for the same events as
dicts (the writer's earlier form, kept here as the reference)."""
from __future__ import annotations

import json
import random

import numpy as np
import pytest

from lepton.model.paths import ROOT, PathTable
from lepton.model.profile import Profile
from lepton.model.trace import ScopeEvent, TraceData
from lepton.units import ns_to_us
from lepton.writers import chrome_trace
from lepton.writers.chrome_trace import _link_kernels_to_scopes, _us, gpu_lane, metric_texts


def reference_document(profile: Profile) -> dict:
    """Proton main's trace document, built as dicts (the events of `_events`, in its order)."""
    data, paths, timeline = profile.data, profile.paths, profile.timeline
    kernels = data.kernels()
    scopes = data.scopes if timeline else []
    starts = [ev.start_ns for ev in scopes]
    if len(kernels["start_ns"]):
        starts.append(int(kernels["start_ns"].min()))
    if not starts:
        return {"displayTimeUnit": "us", "traceEvents": []}
    base = min(starts)
    def us(ns):
        return round(ns_to_us(ns), 3)

    events = []
    if timeline and len(kernels["pid"]):
        events += [{"ph": "M", "pid": 0, "tid": 0, "name": "process_name", "args": {"name": "Trace"}},
                   {"ph": "M", "pid": 0, "tid": 0, "name": "process_sort_index", "args": {"sort_index": 0}}]
        gpu = sorted(set(zip(kernels["device_id"].tolist(), kernels["stream_id"].tolist())))
        multi = len({d for d, _ in gpu}) > 1
        lanes = [(lane, f"CPU Thread {lane}") for lane in sorted({ev.lane for ev in scopes})]
        lanes += [(gpu_lane(d, s), f"GPU {d} Stream {s}" if multi else f"GPU Stream {s}") for d, s in gpu]
        for tid, label in lanes:
            events.append({"ph": "M", "pid": 0, "tid": tid, "name": "thread_name", "args": {"name": label}})
            events.append({"ph": "M", "pid": 0, "tid": tid, "name": "thread_sort_index",
                           "args": {"sort_index": tid}})
    for j in sorted(range(len(scopes)), key=lambda j: (scopes[j].lane, scopes[j].start_ns)):
        sc = scopes[j]
        name = paths.name[sc.pid]
        out = {"ph": "X", "cat": "scope", "name": name, "ts": us(sc.start_ns - base),
               "dur": us(sc.end_ns - sc.start_ns), "pid": 0, "tid": sc.lane,
               "args": {"call_stack": ["ROOT", *paths.names_of(sc.pid)], "scope_id": sc.scope_id}}
        if sc.metrics:
            texts = metric_texts(sc.metrics)
            out["cat"] = "metric"
            out["name"] = name + ": " + ", ".join(f"<{k}, {v}>" for k, v in texts.items())
            out["args"] = {"call_stack": out["args"]["call_stack"], "metrics": texts, "scope_id": sc.scope_id}
        events.append(out)
    order = np.lexsort((kernels["start_ns"], kernels["stream_id"], kernels["device_id"])).tolist()
    owner = _link_kernels_to_scopes(profile, kernels, scopes)
    lane = {row: gpu_lane(int(kernels["device_id"][row]), int(kernels["stream_id"][row])) for row in order}
    for row in order:
        o = int(owner[row])
        if o >= 0:
            flow = {"ph": "s", "cat": "flow", "name": "launch->kernel", "id": o, "bp": "e",
                    "ts": us(scopes[o].start_ns - base), "pid": 0, "tid": scopes[o].lane}
            kernel_ts = us(int(kernels["start_ns"][row]) - base)
            events += [flow, {**flow, "ph": "f", "ts": kernel_ts, "tid": lane[row]}]
    for row in order:
        pid = int(kernels["pid"][row])
        st, en = int(kernels["start_ns"][row]), int(kernels["end_ns"][row])
        events.append({"ph": "X", "cat": "kernel", "name": paths.name[pid], "ts": us(st - base),
                       "dur": us(en - st), "pid": 0, "tid": lane[row],
                       "args": {"call_stack": ["ROOT", *paths.names_of(pid)]}})
    doc = {"displayTimeUnit": "us", "baseTimeNanoseconds": int(base), "traceEvents": events}
    if profile.dropped_records:
        doc["otherData"] = {"dropped_records": profile.dropped_records}
    return doc


def random_profile(seed: int) -> Profile:
    rng = random.Random(seed)
    paths = PathTable()
    scopes = [paths.child(ROOT, n) for n in ("step", "naïve \"quoted\" \\ name", "🚀")]
    inner = [paths.child(rng.choice(scopes), f"k{i}") for i in range(4)] + [paths.child(ROOT, "lone")]
    data = TraceData()
    base = rng.choice([0, 1_700_000_000_000_000_000])
    t = base
    for i in range(rng.randint(0, 30)):
        start = t + rng.randint(0, 5000)
        end = start + rng.choice([0, 1, 999, 1000, 1001, rng.randint(0, 10**7)])
        metrics = rng.choice([None, None, {"bytes": rng.randint(0, 9)}, {"flops": 1.5, "list": [1, 2.5]},
                              {"z (pty)": 2, "a": 1.0}])
        data.scopes.append(ScopeEvent(rng.choice(scopes), start, end, rng.randint(0, 2), i + 1, metrics))
        t = end
    n = rng.randint(0, 60)
    if n:
        start = base + np.array([rng.randint(0, max(t - base, 1) + 10**6) for _ in range(n)], np.int64)
        data.add_kernels(pid=np.array([rng.choice(inner) for _ in range(n)], np.int64), start_ns=start,
                         end_ns=start + np.array([rng.choice([0, 7, 1000, 123456]) for _ in range(n)], np.int64),
                         launch_ns=start - np.array([rng.randint(-1, 3000) for _ in range(n)], np.int64),
                         device_id=np.array([rng.choice([0, 0, 1]) for _ in range(n)], np.int64),
                         stream_id=np.array([rng.choice([7, 13]) for _ in range(n)], np.int64))
    return Profile(paths, data, dropped_records=rng.choice([0, 0, 5]), timeline=rng.choice([True, False]))


@pytest.mark.parametrize("seed", range(40))
def test_templates_write_what_json_dumps_writes(seed):
    profile = random_profile(seed)
    expected = (json.dumps(reference_document(profile), separators=(",", ":")) + "\n").encode()
    assert chrome_trace.render(profile) == expected


def test_microseconds_are_written_as_json_writes_the_rounded_float():
    rng = random.Random(1)
    values = [0, 1, 9, 10, 999, 1000, 1001, 1500, 10**12, 10**15 - 1, 10**15, 2**53, 11159511723794315,
              2**62, -1, -1000, -123456789]
    values += [rng.randint(-10**16, 10**16) for _ in range(20000)]
    for ns in values:
        assert _us(ns) == json.dumps(round(ns_to_us(ns), 3)), ns


def test_a_column_of_microseconds_is_written_as_each_value_alone():
    rng = np.random.default_rng(3)
    for column in (rng.integers(0, 10**13, 5000), rng.integers(-10**6, 10**6, 500),
                   np.array([0, 10**15 - 1, 10**15, 2**62]), np.zeros(0, np.int64)):
        assert chrome_trace._us_column(column) == [_us(v) for v in column.tolist()]
