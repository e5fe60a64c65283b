"""The frame of the viewer's Python API: a calling-context tree plus a pandas DataFrame, one row per
node, in the shape of hatchet's GraphFrame (what Proton's `viewer.read` returns), without hatchet.

    gf.dataframe    pandas DataFrame indexed by Node: "name", ("type"), the file's metrics under
                    their file names ("time (ns)", "device_id"...), the "(inc)" sums and the
                    derived columns ("tflop/s (inc)", "util")
    gf.inc_metrics  the inclusive column names; gf.exc_metrics the others (hatchet's lists)
    gf.graph.roots  the root Nodes; node.children, node.frame["name"]
    gf.tree(...)    the tree as text, exactly as lepton-view prints it

The rows are in display order (depth first, siblings sorted by frame), as hatchet's. The DataFrame
is the source of truth: every operation reads the values it holds, so a user's edits count; the
numbers are computed by the terminal viewer's code (derive, filters, diff, render).
pandas is imported only when a frame is made, so that lepton-view runs without it.
"""
from __future__ import annotations

import math
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

import numpy as np

from .derive import Column
from .diff import subtract
from .filters import format_name
from .flat_tree import MISSING_FRAME_TYPE, NO_PARENT, Tree
from .render import RenderOptions, shown_nodes, tree_text

if TYPE_CHECKING:
    import pandas as pd

PANDAS_HINT = 'pip install "lepton-profiler[pandas]"'
FRAME_COLUMNS = ("name", "type")  # hatchet's frame attributes, not metrics
INCLUSIVE_SUFFIX = " (inc)"


def require_pandas(what: str):
    """The pandas module, or an ImportError whose one line says what to install."""
    try:
        import pandas
    except ImportError:
        raise ImportError(f"{what} needs pandas: {PANDAS_HINT}") from None
    return pandas


class Node:
    """One calling context, as hatchet's Node: `frame` ({"name", "type"}), `children`, `parents`.
    Hashed by identity (it indexes the DataFrame) and ordered by its row."""

    __slots__ = ("_depth", "_hatchet_nid", "children", "frame", "parents")

    def __init__(self, frame: dict, row: int, depth: int) -> None:
        self.frame = frame
        self.children: list[Node] = []
        self.parents: list[Node] = []
        self._hatchet_nid = row
        self._depth = depth

    def __lt__(self, other: Node) -> bool:
        return self._hatchet_nid < other._hatchet_nid

    def __repr__(self) -> str:
        return f"Node({self.frame!r})"

    def __str__(self) -> str:
        return str(self.frame.get("name"))

    def traverse(self) -> Iterator[Node]:
        """This node and its descendants, depth first (no recursion: trees can be deep)."""
        stack = [self]
        while stack:
            node = stack.pop()
            yield node
            stack.extend(reversed(node.children))


@dataclass
class Graph:
    roots: list[Node] = field(default_factory=list)

    def traverse(self) -> Iterator[Node]:
        for root in self.roots:
            yield from root.traverse()

    def __len__(self) -> int:
        return sum(1 for _ in self.traverse())


class ProfileFrame:
    """See the module docstring. Made by `lepton.viewer.read`; operations return new frames,
    except the ones that, as in Proton, write columns into `dataframe` (derive_metrics,
    format_frames, update_inclusive_columns)."""

    def __init__(self, tree: Tree, columns: Mapping[str, np.ndarray] | None = None,
                 exc_metrics: list[str] | None = None, inc_metrics: list[str] | None = None,
                 side: np.ndarray | None = None, name_format: str = "full") -> None:
        """`tree` in any parent-before-child order; `columns` are extra per-row columns of it
        (a "name" column there replaces the names shown, which are otherwise the file's names in
        `name_format`)."""
        pd = require_pandas("lepton.viewer's Python API")
        order = np.asarray(shown_nodes(tree, int(tree.depth.max(initial=0)) + 1).order, dtype=np.int64)
        self._tree = reordered(tree, order)
        self._side = None if side is None else np.asarray(side)[order]
        self._name_format = name_format  # format_name(file name, this) gives the names shown
        self.graph, nodes = _graph(self._tree)
        self._index = pd.Index(nodes, dtype=object, name="node")
        extra = {label: np.asarray(values)[order] for label, values in (columns or {}).items()}
        self.dataframe: pd.DataFrame = _dataframe(pd, self._tree, self._index, extra, name_format)
        self.exc_metrics = list(exc_metrics) if exc_metrics is not None else self.raw_inclusive_keys()
        self.inc_metrics = list(inc_metrics) if inc_metrics is not None else []

    def __len__(self) -> int:
        return len(self._tree)

    def __repr__(self) -> str:
        return f"<ProfileFrame: {len(self)} nodes, metrics {self.show_metric_columns()}>"

    @property
    def devices(self) -> dict:
        """The profile's device block, {"CUDA": {"0": {"arch": "90", ...}}}."""
        return self._tree.devices

    def raw_inclusive_keys(self) -> list[str]:
        """The numeric metrics on ROOT: hatchet's exc_metrics, summed by update_inclusive_columns."""
        return [k for k in self._tree.root_keys if k in self._tree.numbers]

    def show_metric_columns(self) -> list[str]:
        return self.exc_metrics + self.inc_metrics

    def copy(self) -> ProfileFrame:
        new = object.__new__(ProfileFrame)
        new.__dict__.update(self.__dict__)
        new.dataframe = self.dataframe.copy()
        new.exc_metrics, new.inc_metrics = list(self.exc_metrics), list(self.inc_metrics)
        return new

    def update_inclusive_columns(self) -> None:
        """Adds "<m> (inc)", the subtree sum of m, for each numeric metric on ROOT (hatchet's)."""
        tree = self.current_tree()
        for key in self.raw_inclusive_keys():
            label = key + INCLUSIVE_SUFFIX
            self.dataframe[label] = tree.subtree_sum(tree.numbers[key])
            if label not in self.inc_metrics:
                self.inc_metrics.append(label)

    # --- the DataFrame as the viewer's columns -------------------------------------------------

    def aligned(self) -> pd.DataFrame:
        """The DataFrame in the tree's row order (a user may have sorted it in place)."""
        df = self.dataframe
        return df if df.index.equals(self._index) else df.reindex(self._index)

    def values(self, label: str) -> np.ndarray:
        """A column as float64, in row order, NaN where empty."""
        if label not in self.dataframe.columns:
            raise KeyError(f"no column '{label}' in the frame; it has: {', '.join(map(str, self.dataframe.columns))}")
        return self.aligned()[label].to_numpy(dtype=np.float64, na_value=np.nan)

    def current_tree(self, names: str = "shown") -> Tree:
        """The tree with the DataFrame's current metric values; names as shown in the DataFrame
        ("shown") or as in the file ("file": what frames are matched and merged by)."""
        df = self.aligned()
        numbers = {key: df[key].to_numpy(dtype=np.float64, na_value=np.nan)
                   for key in self._tree.numbers if key in df.columns}
        texts = {key: none_for_missing(df[key].to_numpy(dtype=object))
                 for key in self._tree.texts if key in df.columns}
        shown = [str(name) for name in df["name"].tolist()] if names == "shown" else self._tree.names
        return replace(self._tree, names=shown, numbers=numbers, texts=texts)

    def render_tree(self) -> tuple[Tree, str]:
        """The tree to render and the name format to render it with: the file's names and the
        applied format when the DataFrame's names are those (so siblings sort by frame, as in
        lepton-view), else the DataFrame's names."""
        shown = [str(name) for name in self.aligned()["name"].tolist()]
        if shown == [format_name(name, self._name_format) for name in self._tree.names]:
            return self.current_tree(names="file"), self._name_format
        return self.current_tree(), "full"

    def tree(self, metric_column: str | list[str] | None = None, depth: int = 10000, *,
             expand_name: bool = True, render_header: bool = False, color: bool = False,
             demangle: bool = True, full_names: bool = False) -> str:
        """The tree as lepton-view prints it: "<v1> <v2> <name>" per node, then an empty line.
        Names are never cut (hatchet's expand_name) and there is no header; C++ names are
        demangled and folded as lepton-view shows them (viewer.names), whole with full_names=True,
        as in the file with demangle=False."""
        del expand_name, render_header  # accepted for hatchet's signature; see the docstring
        labels = [metric_column] if isinstance(metric_column, str) else list(metric_column or [])
        labels = labels or self.show_metric_columns()[:1]
        tree, name_format = self.render_tree()
        columns = [Column(label, self.values(label)) for label in labels]
        options = RenderOptions(depth=depth, name_format=name_format, demangle=demangle,
                                full_names=full_names, color=color)
        return tree_text(tree, columns, options, self._side)

    def sub(self, other: ProfileFrame) -> ProfileFrame:
        """self minus other on the union of both trees, for the metric columns both have
        (hatchet's `sub`, with lepton-view's -diff rules: see viewer.diff)."""
        labels = [m for m in self.show_metric_columns()
                  if m in self.dataframe.columns and m in other.dataframe.columns]
        result = subtract(self.current_tree(names="file"), [Column(m, self.values(m)) for m in labels],
                          other.current_tree(names="file"), [Column(m, other.values(m)) for m in labels])
        return ProfileFrame(result.tree, {c.label: c.values for c in result.columns},
                            exc_metrics=[m for m in self.exc_metrics if m in labels],
                            inc_metrics=[m for m in self.inc_metrics if m in labels],
                            side=result.side, name_format=self._name_format)

    # --- hatchet ---------------------------------------------------------------------------------

    def to_literal(self) -> list[dict]:
        """The tree as hatchet's graph literal ({"frame", "metrics", "children"} dicts), with every
        column of the DataFrame as a metric. Built without recursion."""
        df = self.aligned()
        labels = [c for c in df.columns if c not in FRAME_COLUMNS]
        rows = df[labels].to_dict("records") if labels else [{} for _ in range(len(df))]
        names = df["name"].tolist()
        literal_of: list[dict] = []
        roots = []
        for row, node in enumerate(self._index):
            metrics = {k: v for k, v in rows[row].items() if not _is_missing(v)}
            literal = {"frame": {**node.frame, "name": names[row]}, "metrics": metrics, "children": []}
            literal_of.append(literal)
            parent = int(self._tree.parent[row])
            (roots if parent == NO_PARENT else literal_of[parent]["children"]).append(literal)
        return roots

    def to_hatchet(self, what: str = "to_hatchet"):
        """An llnl-hatchet GraphFrame of this frame (needs `pip install llnl-hatchet`)."""
        try:
            import hatchet
        except ImportError:
            raise ImportError(f"{what} needs llnl-hatchet: pip install llnl-hatchet") from None
        gf = hatchet.GraphFrame.from_literal(self.to_literal())
        gf.exc_metrics = [m for m in self.exc_metrics if m in gf.dataframe.columns]
        gf.inc_metrics = [m for m in self.inc_metrics if m in gf.dataframe.columns]
        return gf

    def filter(self, filter_obj, squash: bool = True, **kwargs):
        """hatchet's `GraphFrame.filter`, for Proton scripts that query the frame in hatchet's
        query language (`"MATCH ('*', c) WHERE c.'name' =~ '.*foo.*' AND c IS LEAF"`): run by
        llnl-hatchet on `to_hatchet()`, so it returns hatchet's GraphFrame. The viewer's own
        filters (-i/-e/-t, without hatchet) are `lepton.viewer.filter_frames`."""
        return self.to_hatchet("ProfileFrame.filter (hatchet's query language)").filter(
            filter_obj, squash=squash, **kwargs)


def _is_missing(value: Any) -> bool:
    return value is None or (isinstance(value, float) and math.isnan(value))


def none_for_missing(values: np.ndarray) -> np.ndarray:
    """Text columns as the viewer keeps them: None where a node has no value (pandas has NaN)."""
    out = values.copy()
    for i, value in enumerate(values.tolist()):
        if _is_missing(value) or value.__class__.__name__ in ("NAType", "NaTType"):
            out[i] = None
    return out


def reordered(tree: Tree, order: np.ndarray) -> Tree:
    """`tree` with its rows in `order` (which lists every row, parents before children)."""
    row_of = np.empty(len(order), dtype=np.int64)
    row_of[order] = np.arange(len(order))
    old_parent = tree.parent[order]
    parent = np.where(old_parent == NO_PARENT, NO_PARENT, row_of[np.maximum(old_parent, 0)])
    picked = order.tolist()
    return Tree(parent=parent, depth=tree.depth[order], names=[tree.names[i] for i in picked],
                frame_types=[tree.frame_types[i] for i in picked],
                numbers={k: v[order] for k, v in tree.numbers.items()},
                texts={k: v[order] for k, v in tree.texts.items()},
                root_keys=tree.root_keys, key_order=tree.key_order, devices=tree.devices, in_preorder=True)


def _graph(tree: Tree) -> tuple[Graph, list[Node]]:
    nodes = []
    for row, (name, frame_type, depth) in enumerate(zip(tree.names, tree.frame_types, tree.depth.tolist())):
        frame = {"name": name} if frame_type == MISSING_FRAME_TYPE else {"name": name, "type": frame_type}
        nodes.append(Node(frame, row, depth))
    graph = Graph()
    for row, parent in enumerate(tree.parent.tolist()):  # rows are in display order: children too
        if parent == NO_PARENT:
            graph.roots.append(nodes[row])
        else:
            nodes[parent].children.append(nodes[row])
            nodes[row].parents.append(nodes[parent])
    return graph, nodes


def _dataframe(pd, tree: Tree, index, extra: dict[str, np.ndarray], name_format: str) -> pd.DataFrame:
    """hatchet's column order: the frame ("name", "type"), the metrics in order of first use,
    then the extra columns (sums, derived)."""
    names = extra.get("name")
    if names is None:
        names = [format_name(name, name_format) for name in tree.names]
    data: dict[str, Any] = {"name": names}
    if any(t != MISSING_FRAME_TYPE for t in tree.frame_types):
        data["type"] = [None if t == MISSING_FRAME_TYPE else t for t in tree.frame_types]
    for key in tree.key_order:
        if key in tree.numbers:
            data[key] = tree.numbers[key]
        elif key in tree.texts:
            data[key] = tree.texts[key]
    for label, values in extra.items():
        if label not in FRAME_COLUMNS:
            data[label] = values
    return pd.DataFrame(data, index=index)
