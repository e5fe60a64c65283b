"""viewer.render: hatchet's tree text, colours, the sorted list, csv and json."""
from __future__ import annotations

import csv
import io
import json
import math

import numpy as np
import pytest

from lepton.viewer.derive import Column
from lepton.viewer.diff import subtract
from lepton.viewer.filters import format_name
from lepton.viewer.flat_tree import Tree
from lepton.viewer.load import from_document
from lepton.viewer.names import readable_names
from lepton.viewer.render import (
    MIN_NAME_WIDTH,
    RenderOptions,
    csv_text,
    json_text,
    name_style,
    sorted_text,
    tree_text,
)
from lepton.viewer.shorten import shorten

PLAIN = RenderOptions(demangle=False)


def literal(name, children=(), **metrics):
    return {"frame": {"name": name, "type": "function"}, "metrics": metrics, "children": list(children)}


def tree_of(*roots) -> Tree:
    return from_document([*roots, {}])


def column(tree, values, label="m"):
    return Column(label, np.array(values, dtype=float))


def test_children_are_drawn_sorted_by_name_with_box_lines_and_an_empty_line_after():
    """Rows in file order (b before a) are drawn in hatchet's order (a before b)."""
    tree = tree_of(literal("ROOT", [literal("b", [literal("b2", m=1), literal("b1", m=1)]),
                                    literal("a", [literal("a1", [literal("deep", m=1)])])], m=0))
    text = tree_text(tree, [column(tree, range(len(tree)))], PLAIN)
    assert text == ("0.000 ROOT\n"
                    "├─ 4.000 a\n"
                    "│  └─ 5.000 a1\n"
                    "│     └─ 6.000 deep\n"
                    "└─ 1.000 b\n"
                    "   ├─ 3.000 b1\n"
                    "   └─ 2.000 b2\n"
                    "\n")


def test_a_node_without_a_value_prints_a_dash_infinity_as_python_and_values_round_to_three_places():
    """hatchet prints "nan" for a node without a value; every number it prints is printed alike."""
    tree = tree_of(literal("ROOT", [literal("a", m=1), literal("b", m=1), literal("c", m=1)], m=0))
    text = tree_text(tree, [column(tree, [math.nan, math.inf, 2.0005, -1.23456])], PLAIN)
    assert text.splitlines() == ["- ROOT", "├─ inf a", "├─ 2.001 b", "└─ -1.235 c", ""]
    assert tree_text(tree, [column(tree, [math.nan] * 4)], RenderOptions(demangle=False, missing="nan")) \
        .splitlines()[0] == "nan ROOT"  # what the Python API (Proton's print_tree) prints


def test_depth_limits_the_lines():
    tree = tree_of(literal("ROOT", [literal("a", [literal("b", m=1)])], m=0))
    assert tree_text(tree, [column(tree, [1, 2, 3])], RenderOptions(depth=2, demangle=False)) == "1.000 ROOT\n└─ 2.000 a\n\n"


def test_several_roots_are_drawn_one_after_the_other_sorted():
    tree = tree_of(literal("z", m=1), literal("y", [literal("k", m=1)], m=1))
    assert tree_text(tree, [column(tree, [1, 2, 3])], PLAIN) == "2.000 y\n└─ 3.000 k\n1.000 z\n\n"


def test_two_metrics_are_printed_side_by_side():
    tree = tree_of(literal("ROOT", m=0))
    assert tree_text(tree, [column(tree, [1]), column(tree, [2])], PLAIN) == "1.000 2.000 ROOT\n\n"


def test_colour_follows_hatchets_bands_on_the_first_metric_and_fades_the_others():
    tree = tree_of(literal("ROOT", [literal("a", m=1), literal("b", m=1)], m=0))
    text = tree_text(tree, [column(tree, [100, 60, 0]), column(tree, [1, 1, 1])],
                     RenderOptions(color=True, demangle=False))
    lines = text.splitlines()
    assert lines[0] == "\033[38;5;196m100.000\033[0m \033[2m1.000\033[0m ROOT"  # top band: red
    assert lines[1] == "├─ \033[38;5;220m60.000\033[0m \033[2m1.000\033[0m a"  # (0.5, 0.7]: yellow
    assert lines[2] == "└─ \033[38;5;22m0.000\033[0m \033[2m1.000\033[0m b"  # bottom band: dark green


def test_nan_is_coloured_blue_as_in_hatchet():
    tree = tree_of(literal("ROOT", m=0))
    text = tree_text(tree, [column(tree, [math.nan])], RenderOptions(color=True))
    assert text.startswith("\033[34m-\033[0m ROOT")


def test_names_are_demangled_folded_and_shortened_to_the_width():
    mangled = "_ZN2at6native29vectorized_elementwise_kernelILi2ENS0_11FillFunctorIlEESt5arrayIPcLm1EEEEviT0_T1_"
    tree = tree_of(literal("ROOT", [literal(mangled, m=1)], m=0))
    folded = tree_text(tree, [column(tree, [1, 1])], RenderOptions(width=61))
    assert folded.splitlines()[1] == "└─ 1.000 at::native::vectorized_elementwise_kernel<…>"
    text = tree_text(tree, [column(tree, [1, 1])], RenderOptions(width=61, full_names=True))
    assert text.splitlines()[1] == "└─ 1.000 void at::native::vectorized_elementwise_kernel<…>(…)"
    assert max(len(line) for line in text.splitlines()) <= 61
    narrow = tree_text(tree, [column(tree, [1, 1])], RenderOptions(width=40, full_names=True)).splitlines()[1]
    assert len(narrow) == 40 and "…" in narrow
    assert mangled in tree_text(tree, [column(tree, [1, 1])], RenderOptions(demangle=False))


def test_name_formats_apply_before_drawing():
    tree = tree_of(literal("ROOT", [literal("/a/b/file.py:12@fn", m=1)], m=0))
    text = tree_text(tree, [column(tree, [1, 1])], RenderOptions(name_format="file_function_line"))
    assert text.splitlines()[1] == "└─ 1.000 file.py:12@fn"


def test_sorted_list_is_largest_first_skips_the_first_row_and_cuts_long_names():
    long_name = "k" * 120
    tree = tree_of(literal("ROOT", [literal("small", m=1), literal(long_name, m=1), literal("none", m=1)], m=0))
    text = sorted_text(tree, [Column("m (inc)", np.array([10.0, 1.0, 5.0, math.nan]))], PLAIN)
    assert text.splitlines() == ["Sorted kernels by metric m (inc)",
                                 "k" * 100 + "..." + "  " + " 5.0",
                                 "small" + " " * 100 + " 1.0",
                                 "none" + " " * 101 + " -"]


def test_diff_marks_nodes_found_on_one_side_only():
    left = tree_of(literal("ROOT", [literal("both", m=1), literal("only_left", m=1)], m=0))
    right = tree_of(literal("ROOT", [literal("both", m=1), literal("only_right", m=1)], m=0))
    result = subtract(left, [column(left, [10, 4, 3])], right, [column(right, [7, 1, 2])])
    assert tree_text(result.tree, result.columns, PLAIN, result.side) == (
        "3.000 ROOT\n├─ 3.000 both\n├─ 3.000 only_left ◀ \n└─ - only_right ▶ \n\n")


def test_csv_has_one_row_per_shown_node_in_tree_order():
    tree = tree_of(literal("ROOT", [literal("b", m=1), literal("a", m=1)], m=0))
    rows = list(csv.reader(io.StringIO(csv_text(tree, [Column("m (inc)", np.array([3.0, 1.0, math.nan]))], PLAIN))))
    assert rows == [["id", "parent_id", "depth", "name", "m (inc)"],
                    ["0", "", "0", "ROOT", "3"],
                    ["2", "0", "1", "a", ""],
                    ["1", "0", "1", "b", "1"]]


def test_json_is_a_flat_node_list_with_null_for_nan():
    tree = tree_of(literal("ROOT", [literal("a", m=1)], m=0))
    document = json.loads(json_text(tree, [Column("m (inc)", np.array([2.5, math.nan]))], PLAIN))
    assert document == {"metrics": ["m (inc)"], "nodes": [
        {"id": 0, "parent": None, "depth": 0, "name": "ROOT", "values": {"m (inc)": 2.5}},
        {"id": 1, "parent": 0, "depth": 1, "name": "a", "values": {"m (inc)": None}}]}


def test_csv_and_json_respect_the_depth():
    tree = tree_of(literal("ROOT", [literal("a", [literal("b", m=1)])], m=0))
    options = RenderOptions(depth=2, demangle=False)
    rows = list(csv.DictReader(io.StringIO(csv_text(tree, [column(tree, [1, 2, 3])], options))))
    assert [row["name"] for row in rows] == ["ROOT", "a"]
    nodes = json.loads(json_text(tree, [column(tree, [1, 2, 3])], options))["nodes"]
    assert [node["name"] for node in nodes] == ["ROOT", "a"]


# ------------------------------------------------------------ against a line-by-line renderer

def reference_tree_text(tree: Tree, columns: list[Column], options: RenderOptions) -> str:
    """The tree text drawn the plain way: a recursive traversal, one format per line."""
    children = [[] for _ in range(len(tree))]
    for child, parent in enumerate(tree.parent.tolist()):
        if parent >= 0:
            children[parent].append(child)
    frame = lambda node: (tree.names[node], tree.frame_types[node])
    formatted = sorted({format_name(name, options.name_format) for name in tree.names})
    readable = dict(zip(formatted, readable_names(formatted, name_style(options))))
    lines = []

    def draw(node: int, indent: str, prefix: str) -> None:
        if tree.depth[node] >= options.depth:
            return
        values = [column.values[node] for column in columns]
        numbers = " ".join(options.missing if math.isnan(v) else f"{v:.3f}" for v in values)
        name = format_name(tree.names[node], options.name_format)
        name = readable[name]
        if options.width is not None:
            name = shorten(name, max(options.width - len(prefix) - len(numbers) - 1, MIN_NAME_WIDTH))
        lines.append(f"{prefix}{numbers} {name}\n")
        siblings = sorted(children[node], key=frame)
        for i, child in enumerate(siblings):
            last = i == len(siblings) - 1
            draw(child, indent + ("   " if last else "│  "), indent + ("└─ " if last else "├─ "))

    for root in sorted(tree.roots, key=frame):
        draw(root, "", "")
    return "".join(lines) + "\n"


def random_tree(rng: np.random.Generator, sort_children: bool) -> Tree:
    """Up to a few hundred nodes, names drawn from a few (some mangled, some long), one or two frame
    types; roots named apart (whether equal roots keep file order is not what this checks)."""
    names = ["a", "b", "kernel", "_ZN2at6native18elementwise_kernelILi128ELi2EEEviT_", "x" * 90, "b"]
    types = ["function", "python"] if rng.random() < 0.5 else ["function"]

    def literal_of(depth: int, name: str) -> dict:
        count = rng.integers(0, 5 if depth < 4 else 1)
        kids = [literal_of(depth + 1, str(rng.choice(names))) for _ in range(count)]
        if sort_children:
            kids.sort(key=lambda k: (k["frame"]["name"], k["frame"]["type"]))
        frame = {"name": name, "type": str(rng.choice(types))}
        return {"frame": frame, "metrics": {"m": 1}, "children": kids}

    return tree_of(*(literal_of(0, f"root{i}") for i in range(rng.integers(1, 4))))


def random_values(rng: np.random.Generator, n: int) -> np.ndarray:
    values = rng.standard_normal(n) * 10.0 ** rng.integers(-4, 6, n)
    values[rng.random(n) < 0.1] = np.nan
    values[rng.random(n) < 0.05] = np.inf
    values[rng.random(n) < 0.05] = rng.integers(0, 100) / 2000  # ties at three decimals
    return values


@pytest.mark.parametrize("seed", range(12))
def test_tree_text_matches_a_line_by_line_renderer(seed):
    rng = np.random.default_rng(seed)
    tree = random_tree(rng, sort_children=seed % 2 == 0)
    columns = [Column(f"m{i}", random_values(rng, len(tree))) for i in range(seed % 3)]
    options = RenderOptions(depth=int(rng.integers(1, 7)) if seed % 4 == 1 else 100,
                            width=int(rng.integers(30, 120)) if seed % 3 == 1 else None,
                            demangle=seed % 5 != 0)
    assert tree_text(tree, columns, options) == reference_tree_text(tree, columns, options)
