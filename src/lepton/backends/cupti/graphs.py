"""CUDA graph bookkeeping: which scope each graph node was captured in.

A replayed kernel's record carries the correlation id of the `cuGraphLaunch` that replayed it, so
it finds the path its replaying thread was in at *replay*. Where it was *captured* comes from CUPTI resource
callbacks (as Proton's `handleGraphResourceCallbacks` does):

- `GRAPHNODE_CREATED` runs on the capturing thread while the node is added, so the thread's current
  path then is the node's capture path;
- `GRAPHNODE_CLONED` runs at instantiation, mapping the captured node to the exec-graph node whose
  id kernel records report (`graphNodeId`).

A replayed kernel then lands at `replay_path/<captured_at>/<capture path names>/kernel`, Proton's
tree shape (on the node itself where the capture path is a launch hook's op, which is the kernel's
node). Both callbacks fire once per node, not per replay, so their Python cost (a few µs) is paid at
capture and instantiation only.

Each node also keeps when it was captured, so that a session deactivated during the capture does
not count its replays (Proton's `test_cudagraph_deactivate`), and the tag Lepton gave the nodes of
its own kernels (a metric captured into the graph: `runtime.graph_metrics`).
"""
from __future__ import annotations

import numpy as np

from ...model.paths import CAPTURED_AT, PathTable
from ...model.records import UNKNOWN_LAUNCH_NS

_UNKNOWN = (-1, UNKNOWN_LAUNCH_NS, None)


class GraphNodePaths:
    """Graph node id -> (capture path id, capture time, tag). Written from CUPTI callbacks on the
    capturing/instantiating thread, read on CUPTI's buffer thread; a dict store/load is atomic
    under the GIL."""

    def __init__(self) -> None:
        self._node: dict[int, tuple[int, int, object]] = {}
        self._reported: set[int] = set()  # graphs of unknown nodes said so (`newly_unknown`)

    def __len__(self) -> int:
        return len(self._node)

    def created(self, node_id: int, path_id: int, capture_ns: int = UNKNOWN_LAUNCH_NS, tag=None) -> None:
        """A node was added to a graph at `capture_ns` (the time lines' clock) while `path_id` was
        the path of the creating thread's launch; `tag`: Lepton's own node's (else None)."""
        self._node[node_id] = (path_id, capture_ns, tag)

    def cloned(self, original_id: int, node_id: int) -> None:
        """Instantiation copied node `original_id` into an exec graph as `node_id`."""
        node = self._node.get(original_id)
        if node is not None:
            self._node[node_id] = node

    def capture_paths(self, node_ids: np.ndarray) -> np.ndarray:
        """Capture path of each node id (int64; -1 where the node was made before profiling)."""
        return self.nodes(node_ids)[0]

    def nodes(self, node_ids: np.ndarray) -> tuple[np.ndarray, np.ndarray, list]:
        """`(capture path, capture time, tag)` of each node id: int64 columns (-1 and
        `UNKNOWN_LAUNCH_NS` where the node was made before profiling) and a list."""
        uniq, inverse = np.unique(node_ids, return_inverse=True)
        get = self._node.get
        found = [get(int(u), _UNKNOWN) for u in uniq.tolist()]
        inverse = inverse.reshape(-1)
        paths = np.fromiter((f[0] for f in found), np.int64, len(found))[inverse]
        times = np.fromiter((f[1] for f in found), np.int64, len(found))[inverse]
        tags = [found[i][2] for i in inverse.tolist()]
        return paths, times, tags

    def newly_unknown(self, graph_ids: np.ndarray) -> list[int]:
        """The graph ids among `graph_ids` (of kernels whose nodes are unknown) not given before:
        each such graph is reported once per process."""
        new = sorted(set(graph_ids.tolist()) - self._reported)
        self._reported.update(new)
        return new

    def reset(self) -> None:
        self._node = {}


def replay_parents(paths: PathTable, replay_parent: np.ndarray, capture_path: np.ndarray) -> np.ndarray:
    """The parent path of each replayed kernel: `replay/<captured_at>/<capture names...>`, or the
    replay path itself where the capture path is unknown (-1; Proton does the same for graphs
    created before profiling started)."""
    out = replay_parent.astype(np.int64, copy=True)
    known = capture_path >= 0
    if not known.any():
        return out
    pairs = np.stack((replay_parent[known].astype(np.int64), capture_path[known]), axis=1)
    uniq, inverse = np.unique(pairs, axis=0, return_inverse=True)
    parents = np.fromiter((replayed_path(paths, r, c) for r, c in uniq.tolist()), dtype=np.int64,
                          count=len(uniq))
    out[known] = parents[inverse.reshape(-1)]
    return out


def replayed_path(paths: PathTable, replay: int, captured: int) -> int:
    """`replay/<captured_at>/<names of captured>`, an op (the kernel's own node) where `captured`
    is one."""
    pid = paths.extend(replay, [CAPTURED_AT, *paths.names_of(captured)])
    if captured in paths.ops:
        paths.ops.add(pid)
    return pid
