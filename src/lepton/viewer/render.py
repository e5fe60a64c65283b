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
import operator
from dataclasses import dataclass

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


def preorder(tree: Tree, max_depth: int) -> tuple[list[int], list[str]]:
    """The nodes in display order without those at depth `max_depth` and below, and each shown
    node's tree-drawing prefix ("│  ├─ "), indexed by node."""
    order, is_last = _display_order(tree)
    parent, depth = tree.parent.tolist(), tree.depth.tolist()
    prefix = [""] * len(tree)
    indent = [""] * len(tree)  # what the prefixes of a node's children start with
    shown = []
    for node in order:
        if depth[node] >= max_depth:
            continue
        shown.append(node)
        up = parent[node]
        if up >= 0:
            base = indent[up]
            if is_last[node]:
                prefix[node], indent[node] = base + LAST, base + SPACE
            else:
                prefix[node], indent[node] = base + BRANCH, base + PIPE
    return shown, prefix


def _display_order(tree: Tree) -> tuple[list[int], list[bool]]:
    """Depth-first order with siblings sorted by frame (hatchet's), and which nodes are the last of
    their siblings. Files list children already sorted (Proton's writer and ours do); then the
    rows are the display order and no traversal is needed."""
    n = len(tree)
    keys = _frame_keys(tree)
    parent = tree.parent
    if tree.in_preorder and _siblings_in_order(parent, keys):
        rows = np.arange(n)
        last_child = np.full(n, -1, dtype=np.int64)
        has_parent = parent >= 0
        np.maximum.at(last_child, parent[has_parent], rows[has_parent])
        is_last = ~has_parent | (last_child[np.maximum(parent, 0)] == rows)
        return rows.tolist(), is_last.tolist()
    children = tree.children  # sorted in place: no other order is ever needed
    is_last_list = [True] * n
    for siblings in children:
        if len(siblings) > 1:
            siblings.sort(key=keys.__getitem__)
            for child in siblings[:-1]:
                is_last_list[child] = False
    order: list[int] = []
    stack = sorted(tree.roots, key=keys.__getitem__, reverse=True)
    while stack:
        node = stack.pop()
        order.append(node)
        stack.extend(reversed(children[node]))
    return order, is_last_list


def _frame_keys(tree: Tree) -> list:
    """What sorts like hatchet's frame order, (name, type): just the name when all types agree."""
    if len(set(tree.frame_types)) <= 1:
        return tree.names
    return list(zip(tree.names, tree.frame_types))


def _siblings_in_order(parent: np.ndarray, keys: list) -> bool:
    by_parent = np.argsort(parent, kind="stable")  # siblings together, in row order
    same_parent = parent[by_parent][1:] == parent[by_parent][:-1]
    before = by_parent[:-1][same_parent].tolist()
    after = by_parent[1:][same_parent].tolist()
    return all(map(operator.le, map(keys.__getitem__, before), map(keys.__getitem__, after)))


def tree_text(tree: Tree, columns: list[Column], options: RenderOptions, side: np.ndarray | None = None) -> str:
    """The tree as proton-viewer prints it; `side` (from -diff) marks the nodes of one side only."""
    names = display_names(tree, options)
    numbers = [[f"{v:.3f}" for v in column.values.tolist()] for column in columns]
    plain = [" ".join(parts) for parts in zip(*numbers)] if numbers else [""] * len(tree)
    shown = plain
    if options.color and columns:
        painter = _Painter(columns[0].values)
        first = [painter.paint(v, text) for v, text in zip(columns[0].values.tolist(), numbers[0])]
        shown = [" ".join(parts) for parts in zip(first, *([FAINT + t + RESET for t in c] for c in numbers[1:]))]
    order, prefixes = preorder(tree, options.depth)
    if options.width is not None or side is not None:
        names = list(names)
        for node in order:
            if options.width is not None:
                room = options.width - len(prefixes[node]) - len(plain[node]) - 1
                names[node] = shorten(names[node], max(room, MIN_NAME_WIDTH))
            if side is not None:
                names[node] += _marker(side, node, options.color)
    return "".join([f"{prefixes[node]}{shown[node]} {names[node]}\n" for node in order]) + "\n"


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
        lines.append(f"{name:105} {float(column.values[node]):.4}\n")
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
    for node in preorder(tree, options.depth)[0]:
        parent = int(tree.parent[node])
        row = [node, "" if parent < 0 else parent, int(tree.depth[node]), names[node]]
        row += ["" if math.isnan(v) else _number_text(v) for v in (c.values[node] for c in columns)]
        if side is not None:
            row.append(_side_name(side, node))
        writer.writerow(row)
    return out.getvalue()


def json_text(tree: Tree, columns: list[Column], options: RenderOptions, side: np.ndarray | None = None) -> str:
    """{"metrics": [labels], "nodes": [{"id", "parent", "depth", "name", "values"}]}, tree order;
    NaN is null. Flat, so that deep trees need no recursion to read."""
    names = display_names(tree, options)
    nodes = []
    for node in preorder(tree, options.depth)[0]:
        parent = int(tree.parent[node])
        entry = {"id": node, "parent": None if parent < 0 else parent, "depth": int(tree.depth[node]),
                 "name": names[node],
                 "values": {c.label: _json_number(c.values[node]) for c in columns}}
        if side is not None:
            entry["only_in"] = _side_name(side, node) or None
        nodes.append(entry)
    return json.dumps({"metrics": [c.label for c in columns], "nodes": nodes}, indent=1) + "\n"


def _number_text(value: float) -> str:
    """15 significant digits: every digit a float64 holds reliably, without binary noise
    (0.6144 / 0.012 prints 51.2, not 51.20000000000001)."""
    return format(float(value), ".15g")


def _json_number(value: float) -> float | None:
    value = float(value)
    return float(_number_text(value)) if math.isfinite(value) else None  # JSON has no NaN or Infinity


def _side_name(side: np.ndarray, node: int) -> str:
    return {ONLY_LEFT: "left", ONLY_RIGHT: "right"}.get(int(side[node]), "")
