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
from dataclasses import dataclass

import numpy as np

from .demangle import demangle
from .derive import Column
from .diff import ONLY_LEFT, ONLY_RIGHT
from .filters import format_name
from .fixed import format_rows
from .flat_tree import Tree
from .shorten import shorten

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
    return tree.name_codes.pick(_distinct_display_names(tree, options)).tolist()


def _distinct_display_names(tree: Tree, options: RenderOptions) -> list[str]:
    """display_names for each of tree.name_codes.distinct: a profile repeats a few kernel names
    many times, each is formatted and demangled once."""
    shown = [format_name(name, options.name_format) for name in tree.name_codes.distinct]
    return list(map(demangle, shown)) if options.demangle else shown


def preorder(tree: Tree, max_depth: int) -> tuple[list[int], list[str]]:
    """The nodes in display order without those at depth `max_depth` and below, and each shown
    node's tree-drawing prefix ("│  ├─ "), indexed by node."""
    order, is_last = _display_order(tree)
    shown = order[tree.depth[order] < max_depth]
    return shown.tolist(), _prefixes(tree, is_last, max_depth)


def _display_order(tree: Tree) -> tuple[np.ndarray, np.ndarray]:
    """Depth-first order with siblings sorted by frame (hatchet's), and which nodes are the last of
    their siblings. Files list children already sorted (Proton's writer and ours do); then the
    rows are the display order and no traversal is needed."""
    n = len(tree)
    ranks = _frame_ranks(tree)
    parent = tree.parent
    if tree.in_preorder and _siblings_in_order(parent, ranks):
        rows = np.arange(n)
        last_child = np.full(n, -1, dtype=np.int64)
        has_parent = parent >= 0
        np.maximum.at(last_child, parent[has_parent], rows[has_parent])
        return rows, ~has_parent | (last_child[np.maximum(parent, 0)] == rows)
    children = tree.children  # sorted in place: no other order is ever needed
    rank_of = ranks.tolist()
    is_last = np.ones(n, dtype=bool)
    for siblings in children:
        if len(siblings) > 1:
            siblings.sort(key=rank_of.__getitem__)
            is_last[siblings[:-1]] = False
    order: list[int] = []
    stack = sorted(tree.roots, key=rank_of.__getitem__, reverse=True)
    while stack:
        node = stack.pop()
        order.append(node)
        stack.extend(reversed(children[node]))
    return np.array(order, dtype=np.int64), is_last


def _frame_ranks(tree: Tree) -> np.ndarray:
    """Each node's place in hatchet's frame order (name, then type): sorting or comparing these
    ints is sorting or comparing the frames, at numpy speed."""
    names, types = tree.name_codes, tree.frame_type_codes
    if len(types.distinct) <= 1:
        return _ranks(names.distinct)[names.positions]
    frames, frame_of = np.unique(names.positions * len(types.distinct) + types.positions, return_inverse=True)
    name_of, type_of = np.divmod(frames, len(types.distinct))
    keys = [(names.distinct[n], types.distinct[t]) for n, t in zip(name_of.tolist(), type_of.tolist())]
    return _ranks(keys)[frame_of]


def _ranks(distinct: list) -> np.ndarray:
    """Where each of these distinct values would be in sorted order."""
    ranks = np.empty(len(distinct), dtype=np.int64)
    ranks[sorted(range(len(distinct)), key=distinct.__getitem__)] = np.arange(len(distinct))
    return ranks


def _siblings_in_order(parent: np.ndarray, ranks: np.ndarray) -> bool:
    by_parent = np.argsort(parent, kind="stable")  # siblings together, in row order
    same_parent = parent[by_parent][1:] == parent[by_parent][:-1]
    sibling_ranks = ranks[by_parent]
    return bool((sibling_ranks[:-1][same_parent] <= sibling_ranks[1:][same_parent]).all())


def _prefixes(tree: Tree, is_last: np.ndarray, max_depth: int) -> list[str]:
    """Each node's tree-drawing prefix, made one depth level at a time: the nodes of a level share
    a few distinct (parent's indent, last or not) pairs, and each pair's strings are made once.
    Nodes at `max_depth` and below are not shown and get ""."""
    prefixes = np.full(len(tree), "", dtype=object)
    indent_of = np.zeros(len(tree), dtype=np.int64)  # each node's position in its level's `indents`
    indents = [""]  # what the prefixes of the children of a level's nodes start with
    for level in tree.levels[1:max_depth]:
        pairs, pair_of = _distinct_small(indent_of[tree.parent[level]] * 2 + is_last[level])
        bases_and_lasts = list(zip(*(part.tolist() for part in np.divmod(pairs, 2))))
        pair_prefixes = [indents[base] + (LAST if last else BRANCH) for base, last in bases_and_lasts]
        indents = [indents[base] + (SPACE if last else PIPE) for base, last in bases_and_lasts]
        prefixes[level] = np.array(pair_prefixes, dtype=object)[pair_of]
        indent_of[level] = pair_of
    return prefixes.tolist()


def _distinct_small(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """np.unique(values, return_inverse=True) for small non-negative ints, by counting, not sorting."""
    present = np.bincount(values) > 0
    return np.flatnonzero(present), (np.cumsum(present) - 1)[values]


def tree_text(tree: Tree, columns: list[Column], options: RenderOptions, side: np.ndarray | None = None) -> str:
    """The tree as proton-viewer prints it; `side` (from -diff) marks the nodes of one side only."""
    order, prefixes = preorder(tree, options.depth)
    # A line is "<prefix><v1> <v2> <name>\n", joined from per-node cells that end in their
    # separator: the fewer strings per line, the faster the join.
    values = [column.values for column in columns]
    plain = format_rows(values, end=" ") if values else [" "] * len(tree)
    cells = _painted(values) if options.color and values else [plain]
    names = _distinct_display_names(tree, options)
    if options.width is None and side is None:
        name_lines = tree.name_codes.pick([name + "\n" for name in names]).tolist()
    else:
        name_lines = tree.name_codes.pick(names).tolist()
        for node in order:
            if options.width is not None:
                room = options.width - len(prefixes[node]) - len(plain[node])
                name_lines[node] = shorten(name_lines[node], max(room, MIN_NAME_WIDTH))
            name_lines[node] += _marker(side, node, options.color) + "\n"
    return _lines([prefixes, *cells, name_lines], order)


def _painted(values: list[np.ndarray]) -> list[list[str]]:
    """The number cells on a terminal: the first metric coloured by its value, the others faint."""
    numbers = [format_rows([v]) for v in values]
    painter = _Painter(values[0])
    cells = [[painter.paint(v, text) + " " for v, text in zip(values[0].tolist(), numbers[0])]]
    return cells + [[FAINT + text + RESET + " " for text in texts] for texts in numbers[1:]]


def _lines(cells: list[list[str]], order: list[int]) -> str:
    """The cells (one string per node each) of every node of `order`, concatenated, then an empty
    line. One join over all of them beats a format per line."""
    width = len(cells)
    every_node_in_row_order = order == list(range(len(cells[0])))  # the usual case
    parts: list[str | None] = [None] * (len(order) * width)
    for column, cell in enumerate(cells):
        parts[column::width] = cell if every_node_in_row_order else list(map(cell.__getitem__, order))
    parts.append("\n")  # print's empty line, in the join: adding it after would copy the whole text
    return "".join(parts)  # type: ignore[arg-type]


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
