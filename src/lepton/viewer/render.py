"""Tree -> text: the proton-viewer tree (hatchet's console renderer), the sorted list, csv and json.

The tree is what `gf.tree(metric_column=..., expand_name=True, render_header=False)` prints and
`print` ends with an empty line: one line per node, "<v1:.3f> <v2:.3f> <name>", children sorted by
frame (name, then type) under "├─ ", "│  ", "└─ ", nodes deeper than `depth` left out, NaN as "nan".
On a terminal the first value is coloured by where it falls between the column's min and max,
with hatchet's RdYlGn bands, and the other values are faint.
"""
from __future__ import annotations

import csv
import io
import json
import math
import re
from dataclasses import dataclass
from typing import Iterator

import numpy as np

from .demangle import demangle, shorten
from .derive import Column
from .diff import ONLY_LEFT, ONLY_RIGHT
from .filters import format_name
from .tree import Tree

BRANCH, PIPE, LAST, SPACE = "├─ ", "│  ", "└─ ", "   "

# hatchet's RdYlGn colormap (hatchet/util/colormaps.py), from the top 10% of the range down.
COLOR_BANDS = ((0.9, "\033[38;5;196m"), (0.7, "\033[38;5;208m"), (0.5, "\033[38;5;220m"),
               (0.3, "\033[38;5;46m"), (0.1, "\033[38;5;34m"), (0.0, "\033[38;5;22m"))
COLOR_BELOW_MIN = "\033[34m"  # NaN and negative proportions, as hatchet
FAINT, RESET = "\033[2m", "\033[0m"
MARKERS = {ONLY_LEFT: ("◀ ", "\033[38;5;160m"), ONLY_RIGHT: ("▶ ", "\033[38;5;28m")}
SORTED_NAME_CHARS = 100  # proton-viewer cuts names to 100 characters (+ "...") in --print-sorted
MIN_NAME_WIDTH = 20  # never shorten a name below this, however deep the node
_ANSI = re.compile("\033\\[[0-9;]*m")


@dataclass(frozen=True)
class RenderOptions:
    depth: int = 100
    name_format: str = "full"
    demangle: bool = True
    color: bool = False
    width: int | None = None  # terminal columns to fit names into; None keeps names whole


def display_names(tree: Tree, options: RenderOptions) -> list[str]:
    """Each node's name as shown: -f format, then demangled unless --mangled."""
    shown = {}  # a profile repeats a few kernel names many times: format and demangle each once
    for name in set(tree.names):
        text = format_name(name, options.name_format)
        shown[name] = demangle(text) if options.demangle else text
    return list(map(shown.__getitem__, tree.names))


def sorted_children(tree: Tree) -> list[list[int]]:
    """Each node's children in hatchet's order: by frame name, then frame type (sorts the tree's
    cached child lists in place; no other order is ever needed)."""
    names, types = tree.names, tree.frame_types
    result = tree.children
    for children in result:
        if len(children) > 1:
            children.sort(key=lambda i: (names[i], types[i]))
    return result


def preorder(tree: Tree, max_depth: int) -> Iterator[tuple[int, str]]:
    """(node, the tree-drawing prefix of its line), in display order, nodes deeper than
    `max_depth` left out."""
    names, types = tree.names, tree.frame_types
    depth = tree.depth.tolist()
    children_of = sorted_children(tree)
    roots = sorted(tree.roots, key=lambda i: (names[i], types[i]))
    stack = [(root, "", "") for root in reversed(roots)]
    pop, push = stack.pop, stack.append
    while stack:
        node, indent, child_indent = pop()
        if depth[node] >= max_depth:
            continue
        yield node, indent
        children = children_of[node]
        if children:
            push((children[-1], child_indent + LAST, child_indent + SPACE))
            branch, pipe = child_indent + BRANCH, child_indent + PIPE
            for child in reversed(children[:-1]):
                push((child, branch, pipe))


def tree_text(tree: Tree, columns: list[Column], options: RenderOptions, side: np.ndarray | None = None) -> str:
    names = display_names(tree, options)
    numbers = [[f"{v:.3f}" for v in column.values.tolist()] for column in columns]
    if options.color and columns:
        painter = _Painter(columns[0].values)
        first = [painter.paint(v, text) for v, text in zip(columns[0].values.tolist(), numbers[0])]
        numbers = [first] + [[FAINT + text + RESET for text in column] for column in numbers[1:]]
    values = [" ".join(parts) for parts in zip(*numbers)] if numbers else [""] * len(tree)
    lines = []
    for node, indent in preorder(tree, options.depth):
        name = names[node]
        if options.width is not None:
            visible = len(indent) + len(_strip_colors(values[node])) + 1
            name = shorten(name, max(options.width - visible, MIN_NAME_WIDTH))
        marker = _marker(side, node, options.color) if side is not None else ""
        lines.append(f"{indent}{values[node]} {name}{marker}\n")
    return "".join(lines) + "\n"


def _strip_colors(text: str) -> str:
    return _ANSI.sub("", text) if "\033" in text else text


def _marker(side: np.ndarray | None, node: int, color: bool) -> str:
    if side is None or int(side[node]) not in MARKERS:
        return ""
    text, code = MARKERS[int(side[node])]
    return f" {code}{text}{RESET}" if color else f" {text}"


class _Painter:
    """hatchet's `_ansi_color_for_metric`: the band of (v - min) / (max - min) over finite values."""

    def __init__(self, values: np.ndarray) -> None:
        finite = values[np.isfinite(values)]
        self.low = float(finite.min()) if finite.size else math.nan
        self.span = float(finite.max()) - self.low if finite.size else math.nan

    def paint(self, value: float, text: str) -> str:
        proportion = (value - self.low) / self.span if self.span != 0 else value
        for floor, code in COLOR_BANDS:
            if proportion > floor or (floor == 0.0 and proportion >= 0):
                return code + text + RESET
        return COLOR_BELOW_MIN + text + RESET


def sorted_text(tree: Tree, columns: list[Column], options: RenderOptions) -> str:
    """`--print-sorted`: every node by the first metric, largest first, skipping the first row
    (normally ROOT) as proton-viewer does. Ties keep tree order; NaN goes last."""
    names = display_names(tree, options)
    column = columns[0]
    order = _descending(column.values)
    lines = [f"Sorted kernels by metric {column.label}\n"]
    for node in order[1:].tolist():
        name = names[node]
        name = name[:SORTED_NAME_CHARS] + "..." if len(name) > SORTED_NAME_CHARS else name
        lines.append("{:105} {:.4}\n".format(name, float(column.values[node])))
    return "".join(lines)


def _descending(values: np.ndarray) -> np.ndarray:
    """pandas `sort_values(ascending=False)`: stable for ties, NaN last."""
    nan = np.isnan(values)
    order = np.argsort(-np.where(nan, 0.0, values), kind="stable")
    return np.concatenate([order[~nan[order]], order[nan[order]]])


def csv_text(tree: Tree, columns: list[Column], options: RenderOptions, side: np.ndarray | None = None) -> str:
    """One row per shown node, in tree order: id, parent_id, depth, name, then the metrics."""
    names = display_names(tree, options)
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(["id", "parent_id", "depth", "name"] + [c.label for c in columns]
                    + (["only_in"] if side is not None else []))
    for node, _ in preorder(tree, options.depth):
        parent = int(tree.parent[node])
        row = [node, "" if parent < 0 else parent, int(tree.depth[node]), names[node]]
        row += ["" if math.isnan(v) else repr(float(v)) for v in (c.values[node] for c in columns)]
        if side is not None:
            row.append(_side_name(side, node))
        writer.writerow(row)
    return out.getvalue()


def json_text(tree: Tree, columns: list[Column], options: RenderOptions, side: np.ndarray | None = None) -> str:
    """{"metrics": [labels], "nodes": [{"id", "parent", "depth", "name", "values"}]}, tree order;
    NaN is null. Flat, so that deep trees need no recursion to read."""
    names = display_names(tree, options)
    nodes = []
    for node, _ in preorder(tree, options.depth):
        parent = int(tree.parent[node])
        entry = {"id": node, "parent": None if parent < 0 else parent, "depth": int(tree.depth[node]),
                 "name": names[node],
                 "values": {c.label: _json_number(c.values[node]) for c in columns}}
        if side is not None:
            entry["only_in"] = _side_name(side, node) or None
        nodes.append(entry)
    return json.dumps({"metrics": [c.label for c in columns], "nodes": nodes}, indent=1) + "\n"


def _json_number(value: float) -> float | None:
    value = float(value)
    return value if math.isfinite(value) else None  # JSON has no NaN or Infinity


def _side_name(side: np.ndarray, node: int) -> str:
    return {ONLY_LEFT: "left", ONLY_RIGHT: "right"}.get(int(side[node]), "")
