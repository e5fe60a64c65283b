"""`lepton-view --html OUT.html`: the profile as one self-contained page (viewer/report/page.html,
page.js and page.css inlined, the data as one JSON block: no network, no CDN).

The page has an icicle graph of the call tree (canvas, sized by a chosen summed metric, click to
zoom, search to highlight), a sortable, filterable kernel table, a roofline of the kernels with
flops and bytes against the device's peaks (viewer.specs), and, given -diff OTHER, the difference.

Hand-written canvas and SVG rather than a charting library: nothing is installed to inline, a
100,000-node icicle needs a canvas and a layout that skips sub-pixel boxes (SVG with one element
per node stalls a browser at that size), and the three views are ~400 lines of JavaScript.
"""
from __future__ import annotations

import json
import math
from importlib import resources

import numpy as np

from ...model.hatchet_names import COUNT, DEVICE_ID, TIME_NS
from .. import specs
from ..derive import FLOP_WIDTHS_BITS, Catalog, Column, _text_column, seconds_at_peak
from ..diff import subtract
from ..flat_tree import Tree
from ..render import RenderOptions, display_names

DEFAULT_OPTIONS = RenderOptions()
SIGNIFICANT = 6  # digits kept per value: the page shows 3-4; the JSON stays ~40% smaller


def report_html(tree: Tree, title: str, options: RenderOptions = DEFAULT_OPTIONS, other: Tree | None = None,
                other_title: str | None = None) -> str:
    """The page for `tree` (and the diff against `other`), as text."""
    data = report_data(tree, title, options, other, other_title)
    page = _asset("page.html")
    blob = json.dumps(data, separators=(",", ":"), allow_nan=False).replace("</", "<\\/")
    return (page.replace("/*CSS*/", _asset("page.css"))
                .replace("/*DATA*/", blob)
                .replace("/*JS*/", _asset("page.js"))
                .replace("<!--TITLE-->", _escape(title)))


def _asset(name: str) -> str:
    return resources.files(__package__).joinpath(name).read_text(encoding="utf-8")


def _escape(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def report_data(tree: Tree, title: str, options: RenderOptions = DEFAULT_OPTIONS, other: Tree | None = None,
                other_title: str | None = None) -> dict:
    """What the page reads: the tree (parents, name indices), its summed metrics per node, the
    kernel table, the device peaks and, with `other`, the other side's values on the union tree."""
    sizes = _summed_metrics(tree)
    data: dict = {"title": title, "kernels": _kernel_rows(tree, options), "peaks": _peaks(tree),
                  "flopWidths": [str(w) for w in FLOP_WIDTHS_BITS if f"flops{w}" in tree.numbers]}
    if other is not None:
        shared = [label for label in sizes if label in _summed_metrics(other)]
        left = [_column(tree, label) for label in shared]
        right = [_column(other, label) for label in shared]
        diff = subtract(tree, left, other, right)
        union = diff.tree
        a = _on_union(tree, union, left)
        b = _on_union(other, union, right)
        data["diff"] = {"other": other_title or "other", "b": {label: _values(v) for label, v in zip(shared, b)}}
        data["tree"] = _tree_part(union, options, {label: _values(v) for label, v in zip(shared, a)})
        data["otherKernels"] = _kernel_rows(other, options)
    else:
        data["tree"] = _tree_part(tree, options, {label: _values(v) for label, v in sizes.items()})
    return data


def _summed_metrics(tree: Tree) -> dict[str, np.ndarray]:
    """The metrics proton-viewer sums over subtrees (those on ROOT), inclusive, by display label."""
    catalog = Catalog.of(tree)
    out = {}
    for raw in catalog.inclusive:
        if raw in tree.numbers:
            out[raw] = tree.subtree_sum(tree.numbers[raw])
    return dict(sorted(out.items(), key=lambda item: not item[0].startswith("time")))  # time first


def _column(tree: Tree, raw: str) -> Column:
    return Column(raw, tree.subtree_sum(tree.numbers[raw]))


def _on_union(tree: Tree, union: Tree, columns) -> list[np.ndarray]:
    """`columns` of `tree` placed on the rows of `union` (matched by frame path), NaN elsewhere."""
    index = {}
    path_of: list[tuple] = []
    for i, parent in enumerate(union.parent.tolist()):
        key = (path_of[parent] if parent >= 0 else ()) + ((union.names[i], union.frame_types[i]),)
        path_of.append(key)
        index[key] = i
    mine: list[tuple] = []
    rows = np.empty(len(tree), dtype=np.int64)
    for i, parent in enumerate(tree.parent.tolist()):
        key = (mine[parent] if parent >= 0 else ()) + ((tree.names[i], tree.frame_types[i]),)
        mine.append(key)
        rows[i] = index[key]
    out = []
    for column in columns:
        values = np.full(len(union), np.nan)
        values[rows] = column.values
        out.append(values)
    return out


def _values(values: np.ndarray) -> list:
    """Floats rounded to SIGNIFICANT digits, None for NaN (JSON has none)."""
    return [None if not math.isfinite(v) else float(f"{v:.{SIGNIFICANT}g}") for v in values.tolist()]


def _tree_part(tree: Tree, options: RenderOptions, metrics: dict[str, list]) -> dict:
    names = display_names(tree, RenderOptions(name_format=options.name_format, demangle=options.demangle,
                                              full_names=options.full_names), escape=False)
    distinct = list(dict.fromkeys(names))
    position = {name: i for i, name in enumerate(distinct)}
    return {"parent": tree.parent.tolist(), "name": [position[n] for n in names], "names": distinct,
            "kernel": (_text_column(tree, DEVICE_ID) != "").astype(int).tolist(), "metrics": metrics}


STANDARD = {TIME_NS, COUNT, "bytes", "cpu_time (ns)", *(f"flops{w}" for w in FLOP_WIDTHS_BITS), "flops"}


def _kernel_rows(tree: Tree, options: RenderOptions) -> dict:
    """One row per kernel name (summed over call paths): time, count, flops, bytes, seconds at peak
    (for util), and the kernel properties (per-node metrics such as num_warps: first value seen)."""
    kernel = _text_column(tree, DEVICE_ID) != ""
    nodes = np.flatnonzero(kernel)
    names = display_names(tree, options, escape=False)
    flop_s, byte_s, _ = seconds_at_peak(tree)
    bound = np.where(byte_s > flop_s, byte_s, flop_s)
    time = tree.numbers.get(TIME_NS, np.full(len(tree), np.nan))
    count = tree.numbers.get(COUNT, np.full(len(tree), np.nan))
    flops = sum((np.nan_to_num(tree.numbers[f"flops{w}"]) for w in FLOP_WIDTHS_BITS if f"flops{w}" in tree.numbers),
                np.zeros(len(tree)))
    nbytes = tree.numbers.get("bytes", np.full(len(tree), np.nan))
    properties = [k for k in tree.key_order if k not in STANDARD and k not in tree.root_keys and k in tree.numbers]
    rows: dict[str, dict] = {}
    for node in nodes.tolist():
        row = rows.setdefault(names[node], {"name": names[node], "time_ns": 0.0, "count": 0.0, "flops": 0.0,
                                            "bytes": 0.0, "peak_s": 0.0, "props": {}})
        row["time_ns"] += float(np.nan_to_num(time[node]))
        row["count"] += float(np.nan_to_num(count[node]))
        row["flops"] += float(flops[node])
        row["bytes"] += float(np.nan_to_num(nbytes[node]))
        row["peak_s"] += float(np.nan_to_num(bound[node]))
        for key in properties:
            value = tree.numbers[key][node]
            if math.isfinite(value):
                row["props"].setdefault(key, float(value))
    return {"properties": properties, "rows": list(rows.values())}


def _peaks(tree: Tree) -> list[dict]:
    """Per device of the profile: peak FLOP/s per operand width and peak bytes/s (None unknown)."""
    out = []
    for device in specs.devices_of(tree.devices):
        entry = {"device": f"{device.device_type} {device.device_id} (arch {device.arch})", "flops": {}, "bytes": None}
        try:
            entry["flops"] = {str(w): specs.max_flops(device, w) for w in FLOP_WIDTHS_BITS}
            entry["bytes"] = specs.max_bytes_per_s(device)
        except specs.UnknownDevice:
            pass
        out.append(entry)
    return out
