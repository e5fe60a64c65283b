"""viewer.filters: -i / -e / -t as hatchet queries + squash, and the -f name formats."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from lepton.viewer.derive import derive
from lepton.viewer.filters import FilterError, apply_filters, format_name, squash
from lepton.viewer.load import from_document, load
from lepton.viewer.render import RenderOptions, sorted_text

EXAMPLES = Path(__file__).resolve().parents[2] / "tests" / "data" / "proton_examples"


def node(name, metrics=None, children=()):
    return {"frame": {"name": name, "type": "function"}, "metrics": dict(metrics or {}), "children": list(children)}


def kernel(name, time_ns):
    return node(name, {"count": 1, "time (ns)": time_ns, "device_id": "0", "device_type": "CUDA"})


def filtered(path_or_tree, metrics, **filters):
    tree = load(path_or_tree) if isinstance(path_or_tree, Path) else path_or_tree
    derived = derive(tree, metrics)
    return apply_filters(tree, derived.columns, **filters)


@pytest.mark.parametrize("style, expected", [
    ("full", "/home/user/projects/example.py/test.py:1@foo"),
    ("file_function_line", "test.py:1@foo"),
    ("function_line", "1@foo"),
    ("file_function", "test.py@foo"),
])
def test_format_frames(style, expected):
    """Proton's test_format_frames on frame.json."""
    tree = load(EXAMPLES / "frame.json")
    names = [format_name(name, style) for name in tree.names]
    assert names.count(expected) == 1


@pytest.mark.parametrize("option", ["include", "exclude"])
def test_filter_frames(option):
    """Proton's test_filter_frames: -i .*test0.* or -e .*test1.* both leave test0 and drop test1."""
    pattern = {"include": ".*test0.*", "exclude": ".*test1.*"}[option]
    tree, _ = filtered(EXAMPLES / "frame.json", ["time/ns"], **{option: pattern})
    assert tree.names.count("test1") == 0
    assert tree.names.count("test0") == 1


def test_filter_metadata():
    """Proton's test_filter_metadata: the launch-metadata node and its kernel are gone."""
    tree = load(EXAMPLES / "triton.json")
    assert "__proton_launch_metadata" not in tree.names
    assert "cuda_kernel" not in tree.names
    assert {"scope", "triton_kernel"} <= set(tree.names)


def test_sort():
    """Proton's test_sort on leaf_nodes.json, by time/s."""
    tree, columns = filtered(EXAMPLES / "leaf_nodes.json", ["time/s", "time/ms", "time/us", "time/ns"])
    order = np.argsort(-columns[0].values, kind="stable")
    assert [tree.names[i] for i in order[:5]] == ["ROOT", "kernel_1_1_1", "kernel_3_1_1", "kernel_3_2_2", "kernel_1_2_2"]


def test_exclusive_metrics_sort_first_row():
    """Proton's test_exclusive_metrics: sorted by cpu_time/ns, the first row is `scope`."""
    tree, columns = filtered(EXAMPLES / "triton.json", ["cpu_time/ns"])
    text = sorted_text(tree, columns, RenderOptions(demangle=False))
    # the sorted list skips the first row (here `scope`, the largest) as proton-viewer does
    assert text.splitlines() == ["Sorted kernels by metric cpu_time/ns (inc)",
                                 "{:105} -".format("ROOT"),
                                 "{:105} -".format("triton_kernel")]


def test_include_keeps_ancestors_and_descendants_and_root_keeps_its_unfiltered_total():
    tree, columns = filtered(EXAMPLES / "leaf_nodes.json", ["time/ns", "count"], include=".*kernel_2.*")
    tree.self_check()
    assert tree.names == ["ROOT", "kernel_2_1_1", "kernel_2_2_2", "kernel_2_2_1", "kernel_2_3_1"]
    assert columns[0].values[0] == 225873672.0  # a derived column: computed before filtering
    assert columns[1].values[0] == 120 + 149  # a raw summed column: summed again on the filtered tree


def test_include_matches_from_the_start_of_the_name_only():
    tree = load(EXAMPLES / "leaf_nodes.json")
    with pytest.raises(FilterError, match="no frame matches --include '_2'"):
        apply_filters(tree, derive(tree, ["time/ns"]).columns, include="_2")


def test_exclude_drops_the_matching_frames_and_their_subtrees():
    tree, _ = filtered(EXAMPLES / "leaf_nodes.json", ["time/ns"], exclude="kernel_.*_2_1")
    assert tree.names == ["ROOT", "kernel_1_1_1", "kernel_1_2_2", "kernel_2_1_1", "kernel_2_2_2",
                          "kernel_3_1_1", "kernel_3_2_2"]


def test_include_and_exclude_together_are_refused():
    with pytest.raises(FilterError, match="cannot use --include and --exclude together"):
        filtered(EXAMPLES / "frame.json", ["time/ns"], include="a", exclude="b")


def test_an_invalid_regex_is_one_line():
    with pytest.raises(FilterError, match=r"invalid regular expression '\(': "):
        filtered(EXAMPLES / "frame.json", ["time/ns"], include="(")


def test_a_zero_threshold_filters_nothing_as_in_proton():
    tree, _ = filtered(EXAMPLES / "leaf_nodes.json", ["time/ns"], threshold=0.0)
    assert len(tree) == 13


def test_threshold_hangs_kept_nodes_under_their_nearest_kept_ancestor_and_merges_same_frames():
    """avg_time can be small on a parent and large on its children:

        ROOT ─┬─ a (avg 1) ── x (avg 10)            ROOT ── x (avg 10 + 10)
              └─ b (avg 1) ── x (avg 10)      ->
    with -t 5 the two x are siblings under ROOT, so they merge (values summed, as hatchet does).
    """
    tree = from_document([node("ROOT", {"count": 0, "time (ns)": 0}, [
        node("a", {"count": 10}, [kernel("x", 10)]),
        node("b", {"count": 10}, [kernel("x", 10)])]), {}])
    new_tree, columns = filtered(tree, ["avg_time/ns", "count"], threshold=5)
    new_tree.self_check()
    assert new_tree.names == ["x"]
    assert new_tree.parent.tolist() == [-1]
    assert columns[0].values.tolist() == [20.0]
    assert columns[1].values.tolist() == [2.0]  # count: summed again over the merged node


def test_squash_keeps_row_order_and_reports_groups():
    tree = load(EXAMPLES / "leaf_nodes.json")
    keep = np.array([name != "kernel_1_2_1" for name in tree.names])
    new_tree, groups, firsts = squash(tree, keep)
    new_tree.self_check()
    assert "kernel_1_3_1" in new_tree.names
    child = new_tree.names.index("kernel_1_3_1")
    assert new_tree.names[new_tree.parent[child]] == "kernel_1_1_1"
    assert new_tree.depth[child] == 2
    assert groups.tolist() == list(range(len(new_tree))) and firsts.tolist() == list(range(len(new_tree)))
    assert new_tree.in_preorder
