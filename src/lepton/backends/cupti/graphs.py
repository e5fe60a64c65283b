"""CUDA graph bookkeeping: which scope each graph node was captured in.

A replayed kernel's record carries the correlation id of the `cuGraphLaunch` that replayed it, so
it finds the path its replaying thread was in at *replay*. Where it was *captured* comes from CUPTI resource
callbacks (as Proton's `handleGraphResourceCallbacks` does):

- `GRAPHNODE_CREATED` runs on the capturing thread while the node is added, so the thread's current
  path then is the node's capture path;
- `GRAPHNODE_CLONED` runs at instantiation, mapping the captured node to the exec-graph node whose
  id kernel records report (`graphNodeId`).

A replayed kernel then lands at `replay_path/<captured_at>/<capture path names>/kernel`, Proton's
tree shape. Both callbacks fire once per node, not per replay, so their Python cost (a few µs) is
paid at capture and instantiation only.
"""
from __future__ import annotations

import numpy as np

from ...model.paths import PathTable

CAPTURED_AT = "<captured_at>"


class GraphNodePaths:
    """Graph node id -> capture path id. Written from CUPTI callbacks on the capturing/instantiating
    thread, read on CUPTI's buffer thread; a dict store/load is atomic under the GIL."""

    def __init__(self) -> None:
        self._path: dict[int, int] = {}

    def __len__(self) -> int:
        return len(self._path)

    def created(self, node_id: int, path_id: int) -> None:
        """A node was added to a graph while `path_id` was the creating thread's path."""
        self._path[node_id] = path_id

    def cloned(self, original_id: int, node_id: int) -> None:
        """Instantiation copied node `original_id` into an exec graph as `node_id`."""
        path = self._path.get(original_id)
        if path is not None:
            self._path[node_id] = path

    def capture_paths(self, node_ids: np.ndarray) -> np.ndarray:
        """Capture path of each node id (int64; -1 where the node was made before profiling)."""
        uniq, inverse = np.unique(node_ids, return_inverse=True)
        get = self._path.get
        found = np.fromiter((get(int(u), -1) for u in uniq), dtype=np.int64, count=len(uniq))
        return found[inverse.reshape(-1)]

    def reset(self) -> None:
        self._path = {}


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
    parents = np.fromiter(
        (paths.extend(int(r), [CAPTURED_AT, *paths.names_of(int(c))]) for r, c in uniq.tolist()),
        dtype=np.int64, count=len(uniq))
    out[known] = parents[inverse.reshape(-1)]
    return out
