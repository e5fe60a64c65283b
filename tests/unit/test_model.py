"""The pure model: path interning, metric rules, aggregation, the built tree's invariants."""
from __future__ import annotations

import threading

import numpy as np
import pytest

from lepton.errors import MetricTypeError
from lepton.model.aggregate import kernel_paths, sum_by_group
from lepton.model.metrics import MetricKind, coerce_metric_value, merge_metric, parse_metric_name
from lepton.model.paths import ROOT, PathTable
from lepton.model.records import KernelBatch
from lepton.model.tree import TreeData, build_tree


def test_a_path_id_stands_for_the_whole_path():
    paths = PathTable()
    a = paths.child(ROOT, "a")
    ab = paths.child(a, "b")
    b = paths.child(ROOT, "b")
    assert ab != b
    assert paths.child(a, "b") == ab
    assert paths.names_of(ab) == ["a", "b"]
    assert paths.extend(ROOT, ["a", "b"]) == ab
    assert list(paths.ancestors(ab)) == [ab, a]


def test_interning_from_many_threads_gives_one_id_per_path():
    paths = PathTable()
    results = []

    def work():
        results.append([paths.extend(ROOT, ["x", f"y{i % 7}"]) for i in range(200)])

    ts = [threading.Thread(target=work) for _ in range(8)]
    [t.start() for t in ts]
    [t.join() for t in ts]
    assert all(r == results[0] for r in results)
    assert len(paths) == 1 + 1 + 7


@pytest.mark.parametrize("raw, name, kind", [
    ("a", "a", MetricKind.INCLUSIVE),
    ("a (pty)", "a", MetricKind.PROPERTY),
    ("cpu_time (ns)(exc)", "cpu_time (ns)", MetricKind.EXCLUSIVE),
    ("tokens (inc)", "tokens (inc)", MetricKind.INCLUSIVE),
])
def test_metric_suffixes_become_kinds(raw, name, kind):
    spec = parse_metric_name(raw)
    assert (spec.name, spec.kind) == (name, kind)


def test_metric_merging_rules():
    assert merge_metric("a", MetricKind.INCLUSIVE, 1.0, 2.0) == 3.0
    assert merge_metric("a", MetricKind.PROPERTY, 1.0, 2.0) == 2.0
    assert merge_metric("v", MetricKind.INCLUSIVE, [1, 2], [3, 4]) == [4, 6]
    # Proton main's names: a Python int is an int64_t, whatever its sign
    assert merge_metric("a", MetricKind.INCLUSIVE, 3, -2) == 1
    with pytest.raises(MetricTypeError, match="current=double, new=int64_t"):
        merge_metric("a", MetricKind.INCLUSIVE, 1.0, 2)
    with pytest.raises(MetricTypeError, match="current=double, new=int64_t"):
        merge_metric("a", MetricKind.INCLUSIVE, 1.0, -2)
    assert merge_metric("s", MetricKind.EXCLUSIVE, "1", "2") == "2"  # strings are overwritten
    with pytest.raises(MetricTypeError, match="current=std::string, new=double"):
        merge_metric("s", MetricKind.PROPERTY, "1", 2.0)
    with pytest.raises(MetricTypeError, match="current=std::vector<int64_t>, new=std::vector<double>"):
        merge_metric("v", MetricKind.INCLUSIVE, [1], [1.0])


def test_roofline_coercion_and_numpy_values():
    assert coerce_metric_value("flops8", np.int64(3)) == 3.0
    assert coerce_metric_value("bytes", np.array([1.0, 2.0])) == [1, 2]
    assert coerce_metric_value("x", np.float32(0.5)) == 0.5
    with pytest.raises(TypeError, match="unsupported type str"):
        coerce_metric_value("x", "text")


def test_kernels_aggregate_by_path_and_name():
    paths = PathTable()
    s = paths.child(ROOT, "s")
    batch = KernelBatch.from_columns(parent_path=[s, s, ROOT, s], names=["k", "j"], name_id=[0, 0, 0, 1],
                                     start_ns=[0, 10, 20, 30], end_ns=[5, 17, 21, 40], device_id=[0, 1, 0, 0])
    pids, inverse = kernel_paths(paths, batch)
    t, c, d = sum_by_group(inverse, len(pids), batch.end_ns - batch.start_ns, batch.device_id)
    got = {tuple(paths.names_of(int(p))): (int(ti), int(ci), int(di)) for p, ti, ci, di in zip(pids, t, c, d)}
    assert got == {("s", "k"): (12, 2, 1), ("k",): (1, 1, 0), ("s", "j"): (10, 1, 0)}


def test_built_tree_holds_every_ancestor_and_checks_itself():
    """
    ROOT                       ROOT
      (a/b/k kernel)     ->      a
                                   b
                                     k (time 5)
    """
    paths = PathTable()
    k = paths.extend(ROOT, ["a", "b", "k"])
    data = TreeData()
    data.add_kernels([k], [5], [1], [0], "CUDA")
    root = build_tree(paths, data)
    root.self_check()
    assert root.children["a"].children["b"].children["k"].kernel.time_ns == 5
    assert root.total_kernel_time_ns() == 5


DEEP = 5_000  # ten times Python's recursion limit of frames per level of the old recursive walks


def test_a_tree_thousands_deep_builds_walks_and_checks_itself():
    """
    ROOT - d0 - d1 - ... - d4999 (kernel, 7 ns)   and a kernel k (3 ns) beside d0
    """
    paths = PathTable()
    leaf = paths.extend(ROOT, [f"d{i}" for i in range(DEEP)])
    side = paths.child(ROOT, "k")
    data = TreeData()
    data.add_kernels([leaf, side], [7, 3], [1, 1], [0, 0], "CUDA")
    root = build_tree(paths, data)
    root.self_check()
    assert [n.name for n in root.walk()] == ["ROOT", *[f"d{i}" for i in range(DEEP)], "k"]
    assert root.total_kernel_time_ns() == 10
    assert root.children["d0"].total_kernel_time_ns() == 7


def test_walk_visits_parents_before_children_in_insertion_order():
    """
    ROOT
      a
        a1
        a2
      b
    """
    paths = PathTable()
    data = TreeData()
    for names in (["a", "a1"], ["a", "a2"], ["b"]):
        data.scopes.add(paths.extend(ROOT, names))
    assert [n.name for n in build_tree(paths, data).walk()] == ["ROOT", "a", "a1", "a2", "b"]


def test_self_check_catches_a_broken_tree():
    """One node under two parents (its kernel time counted twice by the walk), and a child filed
    under another name, both fail the check."""
    paths = PathTable()
    k = paths.extend(ROOT, ["a", "k"])
    data = TreeData()
    data.scopes.add(paths.child(ROOT, "b"))
    data.add_kernels([k], [5], [1], [0], "CUDA")
    root = build_tree(paths, data)
    root.self_check()
    root.children["b"].children["k"] = root.children["a"].children["k"]
    with pytest.raises(AssertionError, match="two paths"):
        root.self_check()
    del root.children["b"].children["k"]
    root.self_check()
    root.children["a"].children["renamed"] = root.children["a"].children.pop("k")
    with pytest.raises(AssertionError):
        root.self_check()
