"""The graph lanes of a trace: capture scopes drawn per replay, from the replayed kernels' paths."""
from __future__ import annotations

import numpy as np

from lepton.model.paths import PathTable
from lepton.writers.graph_lane import GraphScope, graph_lane, graph_scopes, replay_scopes


def kernels(rows):
    """Columns of `(pid, start, end, launch, device, stream)` rows."""
    cols = list(zip(*rows))
    return {k: np.asarray(c, np.int64) for k, c in zip(("pid", "start_ns", "end_ns", "launch_ns", "device_id",
                                                        "stream_id"), cols)}


def test_each_replay_draws_its_captured_at_and_capture_scopes_over_its_kernels():
    """    test0/<captured_at>/a/{k1, b/k2}   replayed twice (launches 100 and 500) on stream 7
           plain/k3                        no graph: no lane"""
    paths = PathTable()
    at = paths.extend(0, ["test0", "<captured_at>"])
    a = paths.child(at, "a")
    b = paths.child(a, "b")
    k1, k2 = paths.child(a, "k1"), paths.child(b, "k2")
    k3 = paths.extend(0, ["plain", "k3"])
    ks = kernels([(k1, 110, 120, 100, 0, 7), (k2, 130, 150, 100, 0, 7), (k3, 10, 20, 5, 0, 7),
                  (k1, 510, 520, 500, 0, 7), (k2, 525, 530, 500, 0, 7)])
    lane = graph_lane(0, 7)
    assert graph_scopes(paths, ks) == [
        GraphScope(at, lane, 110, 150), GraphScope(a, lane, 110, 150), GraphScope(b, lane, 130, 150),
        GraphScope(at, lane, 510, 530), GraphScope(a, lane, 510, 530), GraphScope(b, lane, 525, 530)]
    test0, plain = paths.child(0, "test0"), paths.child(0, "plain")
    assert replay_scopes(paths, ks["pid"]).tolist() == [test0, test0, plain, test0, test0]


def test_lanes_are_numbered_as_the_gpu_lanes_are():
    assert (graph_lane(0, 7), graph_lane(1, 7)) == (100_007, 101_007)
    assert graph_scopes(PathTable(), kernels([(0, 1, 2, 0, 0, 7)])) == []
