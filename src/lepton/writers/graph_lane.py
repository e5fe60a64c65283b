"""The graph lanes of a trace: the scopes a CUDA graph's kernels were captured in, at each replay.

A replayed kernel's path is `<replay scope>/<captured_at>/<capture scopes...>/<kernel>` (the CUPTI
backend's `graphs.replay_parents`). As Proton main does, a trace draws those scopes again per replay
on a lane of the replay's stream, `Graph: Stream N` (tid 100000 + stream): one scope event for
`<captured_at>` and for each capture scope, from the first start to the last end of its kernels in
that replay. A replay's kernels share their launch time (the graph launch's), which tells replays
apart. No metric is drawn there (Proton's test_trace_cudagraph_graph_scope_ranges).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..model.paths import CAPTURED_AT, ROOT, PathTable

GRAPH_LANE_BASE = 100_000


def graph_lane(device_id: int, stream_id: int) -> int:
    """The tid of the graph lane of a stream, numbered as the GPU lanes are (`chrome_trace`)."""
    return GRAPH_LANE_BASE + 1000 * device_id + stream_id if device_id else GRAPH_LANE_BASE + stream_id


@dataclass(frozen=True)
class GraphScope:
    pid: int  # the scope's path: `<captured_at>` or a capture scope below it
    lane: int
    start_ns: int
    end_ns: int


def _captured_chain(paths: PathTable, pid: int) -> list[int]:
    """The paths from the nearest `<captured_at>` above kernel node `pid` down to its parent; empty
    for a kernel that was not replayed from a graph."""
    chain = []
    p = paths.parent[pid]
    while p > ROOT:
        chain.append(p)
        if paths.name[p] == CAPTURED_AT:
            chain.reverse()
            return chain
        p = paths.parent[p]
    return []


def replay_scopes(paths: PathTable, kernel_pids: np.ndarray) -> np.ndarray:
    """The path of the CPU scope each kernel was launched in: a replayed kernel's replay scope (above
    its `<captured_at>`), any other kernel's parent."""
    uniq, inverse = np.unique(kernel_pids, return_inverse=True)
    out = []
    for pid in uniq.tolist():
        chain = _captured_chain(paths, pid)
        out.append(paths.parent[chain[0]] if chain else paths.parent[pid])
    return np.asarray(out, np.int64)[inverse.reshape(-1)] if len(uniq) else np.zeros(0, np.int64)


def graph_scopes(paths: PathTable, kernels: dict[str, np.ndarray]) -> list[GraphScope]:
    """The scope events of the graph lanes, in time order per lane: per replay (launch time, device,
    stream) and per path from `<captured_at>` down, the span of its kernels."""
    chains = {pid: _captured_chain(paths, pid) for pid in np.unique(kernels["pid"]).tolist()}
    spans: dict[tuple[int, int, int], list[int]] = {}
    rows = [i for i, pid in enumerate(kernels["pid"].tolist()) if chains[pid]]
    for i in rows:
        start, end = int(kernels["start_ns"][i]), int(kernels["end_ns"][i])
        lane = graph_lane(int(kernels["device_id"][i]), int(kernels["stream_id"][i]))
        for p in chains[int(kernels["pid"][i])]:
            span = spans.setdefault((int(kernels["launch_ns"][i]), lane, p), [start, end])
            span[0], span[1] = min(span[0], start), max(span[1], end)
    scopes = [GraphScope(p, lane, s, e) for (_, lane, p), (s, e) in spans.items()]
    return sorted(scopes, key=lambda g: (g.lane, g.start_ns, -g.end_ns))
