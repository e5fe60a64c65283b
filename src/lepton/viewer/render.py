"""Tree -> text: the proton-viewer tree (hatchet's console renderer), the sorted list, csv and json.

The tree is what `gf.tree(metric_column=..., expand_name=True, render_header=False)` prints and
`print` ends with an empty line: one line per node, "<v1:.3f> <v2:.3f> <name>", children sorted by
frame (name, then type) under "├─ ", "│  ", "└─ ", nodes deeper than `depth` left out. A node with
no value prints "-" where hatchet prints "nan": every number hatchet prints is printed the same.
On a terminal the first value is coloured by where it falls between the column's min and max,
with hatchet's RdYlGn bands, and the other values are faint.
"""
from __future__ import annotations

import csv
import io
import json
import math
from dataclasses import dataclass
from typing import TextIO

import numpy as np

from .derive import Column
from .diff import ONLY_LEFT, ONLY_RIGHT
from .escape import printable
from .filters import format_name
from .fixed import format_rows
from .flat_tree import Tree
from .names import NameStyle, readable_names
from .shorten import shorten
from .unique_paths import unique_suffixes

BRANCH, PIPE, LAST, SPACE = "├─ ", "│  ", "└─ ", "   "

# hatchet's RdYlGn colormap (hatchet/util/colormaps.py), from the top 10% of the range down.
COLOR_BANDS = ((0.9, "\033[38;5;196m"), (0.7, "\033[38;5;208m"), (0.5, "\033[38;5;220m"),
               (0.3, "\033[38;5;46m"), (0.1, "\033[38;5;34m"), (0.0, "\033[38;5;22m"))
COLOR_BELOW_MIN = "\033[34m"  # NaN and negative proportions, as hatchet
FAINT, RESET = "\033[2m", "\033[0m"
MARKERS = {ONLY_LEFT: ("◀ ", "\033[38;5;160m"), ONLY_RIGHT: ("▶ ", "\033[38;5;28m")}
MISSING = "-"  # a node without a value (hatchet: "nan"), in the tree and in --print-sorted
SORTED_NAME_CHARS = 100  # proton-viewer cuts names to 100 characters (+ "...") in --print-sorted
MIN_NAME_WIDTH = 20  # never shorten a name below this, however deep the node


DEFAULT_MAX_NODES = 100_000  # lines of a tree or sorted list; a terminal shows ~50 at a time
CHUNK_NODES = 8192  # lines made and written at a time: bounded memory, few write calls
# ... fewer when lines are long: a line 5,000 levels down has a 15,000-character prefix, and a
# chunk is held three times (cells, the joined text, its encoding): ~4M characters, ~30 MB.
CHUNK_CHARS = 1 << 22


@dataclass(frozen=True)
class RenderOptions:
    depth: int = 100
    name_format: str = "full"
    demangle: bool = True  # False: names as in the file (--mangled)
    full_names: bool = False  # demangled C++ names whole, not folded (--full-names)
    color: bool = False
    width: int | None = None  # terminal columns to fit names into; None keeps names whole
    max_nodes: int | None = DEFAULT_MAX_NODES  # lines of a tree or sorted list; None: all
    missing: str = MISSING  # what a node without a value shows (ASCII)


def display_names(tree: Tree, options: RenderOptions, escape: bool = True) -> list[str]:
    """Each node's name as shown: -f format, then readable (viewer.names: demangled and folded,
    whole with full_names, as in the file with demangle=False), then control characters escaped (json output escapes them its own way, losslessly: escape=False)."""
    return tree.name_codes.pick(_distinct_display_names(tree, options, escape)).tolist()


def _distinct_display_names(tree: Tree, options: RenderOptions, escape: bool = True) -> list[str]:
    """display_names for each of tree.name_codes.distinct: a profile repeats a few kernel names
    many times, each is formatted and demangled once."""
    shown = readable_names([format_name(name, options.name_format) for name in tree.name_codes.distinct],
                           name_style(options))
    return list(map(printable, shown)) if escape else shown


def name_style(options: RenderOptions) -> NameStyle:
    if not options.demangle:
        return "mangled"
    return "full" if options.full_names else "short"


@dataclass
class Shown:
    """The nodes a listing shows, in display order, and how many it leaves out for max_nodes."""

    order: np.ndarray  # node indices
    is_last: np.ndarray  # per node (all of the tree's): the last of its siblings
    left_out: int


def shown_nodes(tree: Tree, max_depth: int, max_nodes: int | None = None) -> Shown:
    """The nodes above depth `max_depth` in display order, at most `max_nodes` of them. Nothing
    deeper or later is visited: on a 1M-node tree the cost is that of the nodes shown."""
    limit = len(tree) if max_nodes is None else max_nodes
    order, is_last = _display_order(tree, max_depth, limit)
    above = int(np.count_nonzero(tree.depth < max_depth)) if len(tree) else 0
    return Shown(order, is_last, above - len(order))


def _display_order(tree: Tree, max_depth: int, limit: int) -> tuple[np.ndarray, np.ndarray]:
    """Depth-first order with siblings sorted by frame (hatchet's), cut at `max_depth` and after
    `limit` nodes, and which nodes are the last of their siblings. Files list children already
    sorted (Proton's writer and ours do); then the rows are the display order and no traversal
    is needed."""
    n = len(tree)
    ranks = _frame_ranks(tree)
    parent = tree.parent
    if tree.in_preorder and _siblings_in_order(parent, ranks):
        rows = np.arange(n)
        last_child = np.full(n, -1, dtype=np.int64)
        has_parent = parent >= 0
        np.maximum.at(last_child, parent[has_parent], rows[has_parent])
        order = rows if max_depth > int(tree.depth.max(initial=0)) else np.flatnonzero(tree.depth < max_depth)
        return order[:limit], ~has_parent | (last_child[np.maximum(parent, 0)] == rows)
    children = tree.children  # sorted in place: no other order is ever needed
    rank_of = ranks.tolist()
    is_last = np.ones(n, dtype=bool)
    for siblings in children:
        if len(siblings) > 1:
            siblings.sort(key=rank_of.__getitem__)
            is_last[siblings[:-1]] = False
    order: list[int] = []
    depth = tree.depth.tolist()
    stack = sorted(tree.roots, key=rank_of.__getitem__, reverse=True) if max_depth > 0 else []
    while stack and len(order) < limit:
        node = stack.pop()
        order.append(node)
        if depth[node] + 1 < max_depth:
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


class _Prefixes:
    """Tree-drawing prefixes ("│  ├─ ") of nodes given in display order, a chunk at a time: each
    node's prefix is its parent's indent plus its own branch, and in display order the parent is
    the last node seen one level up. Only the indents of the current path are kept."""

    def __init__(self) -> None:
        self.indents = [""]  # indents[d]: what the prefixes of the last depth-d node's children start with

    def of(self, depths: list[int], lasts: list[bool]) -> list[str]:
        indents = self.indents
        prefixes = []
        for depth, last in zip(depths, lasts):
            if depth == 0:
                prefixes.append("")
                continue
            base = indents[depth - 1]
            prefixes.append(base + (LAST if last else BRANCH))
            indent = base + (SPACE if last else PIPE)
            if depth < len(indents):
                indents[depth] = indent
            else:
                indents.append(indent)
        return prefixes


def tree_text(tree: Tree, columns: list[Column], options: RenderOptions, side: np.ndarray | None = None) -> str:
    """The tree as proton-viewer prints it; `side` (from -diff) marks the nodes of one side only."""
    out = io.StringIO()
    write_tree(out, tree, columns, options, side)
    return out.getvalue()


def write_tree(out: TextIO, tree: Tree, columns: list[Column], options: RenderOptions,
               side: np.ndarray | None = None, notes: list[str] | None = None) -> None:
    """tree_text, written to `out` a chunk of lines at a time as it is made; `notes` (one string
    per node, "" for none) follow the names (the rank view's slowest rank)."""
    shown = shown_nodes(tree, options.depth, options.max_nodes)
    values = [column.values for column in columns]
    painter = _Painter(values[0]) if options.color and values else None
    names = _distinct_display_names(tree, options)
    plain_names = options.width is None and side is None and notes is None
    if plain_names:
        names = [name + "\n" for name in names]
    name_positions, depth = tree.name_codes.positions, tree.depth
    prefixes = _Prefixes()
    deepest = int(depth[shown.order].max(initial=0))
    rows = max(1, min(CHUNK_NODES, CHUNK_CHARS // (len(BRANCH) * deepest + 100)))
    for start in range(0, len(shown.order), rows):
        chunk = shown.order[start:start + rows]
        line_prefixes = prefixes.of(depth[chunk].tolist(), shown.is_last[chunk].tolist())
        # A line is "<prefix><v1> <v2> <name>\n", joined from per-node cells that end in their
        # separator: the fewer strings per line, the faster the join.
        chunk_values = [v[chunk] for v in values]
        plain = format_rows(chunk_values, end=" ", nan=options.missing) if values else [" "] * len(chunk)
        cells = _painted(chunk_values, painter, options.missing) if painter else [plain]
        name_cells = list(map(names.__getitem__, name_positions[chunk].tolist()))
        if not plain_names:
            for i, node in enumerate(chunk.tolist()):
                if options.width is not None:
                    room = options.width - len(line_prefixes[i]) - len(plain[i])
                    name_cells[i] = shorten(name_cells[i], max(room, MIN_NAME_WIDTH))
                name_cells[i] += _marker(side, node, options.color) + (notes[node] if notes else "") + "\n"
        out.write(_lines([line_prefixes, *cells, name_cells]))
    out.write(left_out_line(shown.left_out, options.max_nodes))
    out.write("\n")  # print's empty line


def left_out_line(left_out: int, max_nodes: int | None) -> str:
    if not left_out:
        return ""
    return (f"[{left_out:,} more nodes not shown: --max-nodes {max_nodes} reached; "
            "--max-nodes 0 shows all, -d, -i, -e or -t fewer]\n")


def _painted(values: list[np.ndarray], painter: _Painter, missing: str) -> list[list[str]]:
    """The number cells on a terminal: the first metric coloured by its value, the others faint."""
    numbers = [format_rows([v], nan=missing) for v in values]
    cells = [[painter.paint(v, text) + " " for v, text in zip(values[0].tolist(), numbers[0])]]
    return cells + [[FAINT + text + RESET + " " for text in texts] for texts in numbers[1:]]


def _lines(cells: list[list[str]]) -> str:
    """The cells (one string per line each) of every line, concatenated. One join over all of
    them beats a format per line."""
    width = len(cells)
    parts: list[str | None] = [None] * (len(cells[0]) * width)
    for column, cell in enumerate(cells):
        parts[column::width] = cell
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
    out = io.StringIO()
    write_sorted(out, tree, columns, options)
    return out.getvalue()


def write_sorted(out: TextIO, tree: Tree, columns: list[Column], options: RenderOptions) -> None:
    """`--print-sorted`: every node by the first metric, largest first, skipping the first row
    (normally ROOT) as proton-viewer does. Ties keep tree order; NaN goes last. At most
    `options.max_nodes` lines. A name that several listed nodes share gets as much of its path
    as tells them apart (`fused/1024`)."""
    names = _distinct_display_names(tree, options)
    column = columns[0]
    order = _descending(column.values)[1:]
    shown = order if options.max_nodes is None else order[:options.max_nodes]
    labels = unique_suffixes(tree, shown, names)
    out.write(f"Sorted kernels by metric {printable(column.label)}\n")
    for start in range(0, len(shown), CHUNK_NODES):
        chunk = shown[start:start + CHUNK_NODES]
        lines = []
        for node, label, value in zip(chunk.tolist(), labels[start:start + CHUNK_NODES],
                                      column.values[chunk].tolist()):
            is_path = label != names[tree.name_codes.positions[node]]
            text = options.missing if math.isnan(value) else format(value, ".4")
            lines.append(f"{_sorted_label(label, is_path):105} {text}\n")
        out.write("".join(lines))
    out.write(left_out_line(len(order) - len(shown), options.max_nodes))


def _sorted_label(label: str, is_path: bool) -> str:
    """proton-viewer's cut of a long name, name[:100] + "..."; a path loses its middle instead,
    keeping the parents that tell it apart."""
    if len(label) <= SORTED_NAME_CHARS:
        return label
    return shorten(label, SORTED_NAME_CHARS) if is_path else label[:SORTED_NAME_CHARS] + "..."


def _descending(values: np.ndarray) -> np.ndarray:
    """pandas `sort_values(ascending=False)`: stable for ties, NaN last."""
    nan = np.isnan(values)
    order = np.argsort(-np.where(nan, 0.0, values), kind="stable")
    return np.concatenate([order[~nan[order]], order[nan[order]]])


def csv_text(tree: Tree, columns: list[Column], options: RenderOptions, side: np.ndarray | None = None) -> str:
    out = io.StringIO()
    write_csv(out, tree, columns, options, side)
    return out.getvalue()


def write_csv(out: TextIO, tree: Tree, columns: list[Column], options: RenderOptions,
              side: np.ndarray | None = None) -> None:
    """One row per node above options.depth (max_nodes does not cut data for scripts), in tree
    order: id, parent_id, depth, name, then the metrics. Names have their control characters
    escaped as in the tree: one physical line per row, safe to print, fine for line tools."""
    names = _distinct_display_names(tree, options)
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(["id", "parent_id", "depth", "name"] + [printable(c.label) for c in columns]
                    + (["only_in"] if side is not None else []))
    order = shown_nodes(tree, options.depth).order
    for start in range(0, len(order), CHUNK_NODES):
        chunk = order[start:start + CHUNK_NODES]
        rows = []
        for node in chunk.tolist():
            parent = int(tree.parent[node])
            row = [node, "" if parent < 0 else parent, int(tree.depth[node]), names[tree.name_codes.positions[node]]]
            row += ["" if math.isnan(v) else _number_text(v) for v in (c.values[node] for c in columns)]
            if side is not None:
                row.append(_side_name(side, node))
            rows.append(row)
        writer.writerows(rows)


def json_text(tree: Tree, columns: list[Column], options: RenderOptions, side: np.ndarray | None = None,
              top: dict | None = None) -> str:
    out = io.StringIO()
    write_json(out, tree, columns, options, side, top)
    return out.getvalue()


def write_json(out: TextIO, tree: Tree, columns: list[Column], options: RenderOptions,
               side: np.ndarray | None = None, top: dict | None = None) -> None:
    """{"metrics": [labels], "nodes": [{"id", "parent", "depth", "name", "values"}]}, tree order,
    every node above options.depth; NaN and infinities are null. Flat, so that deep trees need no
    recursion to read. Names are exact: JSON's own escapes (\\u001b) keep control characters off
    the terminal. `top`'s keys come first (the diff's files, the gate's verdict). Written a node at
    a time, the same text as json.dumps(whole, indent=1)."""
    names = _distinct_display_names(tree, options, escape=False)
    labels = [c.label for c in columns]
    encoder = json.JSONEncoder(indent=1)
    top = top or {}
    head, _, tail = encoder.encode({**top, "metrics": labels, "nodes": [None]}).rpartition("\n  null\n")
    order = shown_nodes(tree, options.depth).order
    if not len(order):
        out.write(encoder.encode({**top, "metrics": labels, "nodes": []}) + "\n")
        return
    out.write(head + "\n")
    for start in range(0, len(order), CHUNK_NODES):
        chunk = order[start:start + CHUNK_NODES]
        entries = []
        for node in chunk.tolist():
            parent = int(tree.parent[node])
            entry = {"id": node, "parent": None if parent < 0 else parent, "depth": int(tree.depth[node]),
                     "name": names[tree.name_codes.positions[node]],
                     "values": {c.label: _json_number(c.values[node]) for c in columns}}
            if side is not None:
                entry["only_in"] = _side_name(side, node) or None
            entries.append("  " + encoder.encode(entry).replace("\n", "\n  "))
        out.write((",\n" if start else "") + ",\n".join(entries))
    out.write("\n" + tail + "\n")


def _number_text(value: float) -> str:
    """15 significant digits: every digit a float64 holds reliably, without binary noise
    (0.6144 / 0.012 prints 51.2, not 51.20000000000001)."""
    return format(float(value), ".15g")


def _json_number(value: float) -> float | None:
    value = float(value)
    return float(_number_text(value)) if math.isfinite(value) else None  # JSON has no NaN or Infinity


def _side_name(side: np.ndarray, node: int) -> str:
    """The profile that alone has the node: B, the positional one, or A, the -diff one."""
    return {ONLY_LEFT: "B", ONLY_RIGHT: "A"}.get(int(side[node]), "")
