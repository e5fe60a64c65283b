"""Proton's viewer functions (`triton.profiler.viewer`), for notebooks and scripts:

    import lepton.viewer as proton_viewer
    gf, inclusive, exclusive, devices = proton_viewer.read("matmul.hatchet")
    metrics = proton_viewer.derive_metrics(gf, ["tflop/s", "time/ms"], inclusive, exclusive, devices)
    gf = proton_viewer.filter_frames(gf, include=".*matmul.*", metric=metrics[0])
    gf.dataframe.sort_values(metrics[0], ascending=False)

Same names, arguments and results as Proton's; the frame is a `ProfileFrame` (see viewer.frames)
instead of a hatchet GraphFrame. `parse` runs the stages of lepton-view's pipeline
(`viewer.pipeline`: load, derive, filter) on the frame, and printing uses its renderer, so the API
and lepton-view always agree. Needs pandas
(`pip install "lepton-profiler[pandas]"`); without it each function raises one ImportError line.

Where Lepton differs from Proton on purpose, lepton-view does too: a metric a profile lacks raises
MetricError (a ValueError) listing what exists; a filter that leaves nothing raises FilterError;
a device with no peak numbers gives NaN and a warning instead of an exception.
"""
from __future__ import annotations

import os
import sys
import warnings
from collections.abc import Sequence
from dataclasses import replace
from typing import IO

import numpy as np

from .derive import FLOP_WIDTHS_BITS, Catalog, Column, negative_byte_warning, seconds_at_peak, short_name
from .filters import NAME_FORMATS, format_name
from .flat_tree import MISSING_FRAME_TYPE, NO_PARENT, Tree
from .frames import FRAME_COLUMNS, INCLUSIVE_SUFFIX, ProfileFrame, none_for_missing, require_pandas
from .load import from_document, load_bytes
from .pipeline import derive_columns, filter_columns, load_profile
from .render import RenderOptions, sorted_text
from .walk import walk_nodes

__all__ = [
    "apply_diff_profile", "derive_metrics", "emit_warnings", "filter_frames", "format_frames",
    "get_min_time_bytes", "get_min_time_flops", "get_raw_metrics", "match_available_metrics", "parse",
    "print_tree", "read", "remove_frames", "show_metrics",
]

_ROW = "\0first row"  # a text column the squash carries along: each new node's first original row


def read(filename: str | os.PathLike) -> tuple[ProfileFrame, list[str], list[str], dict]:
    """Loads a profile (hatchet JSON or MessagePack) with its "(inc)" sums: (frame, inclusive
    metrics, exclusive metrics, device info). Launch-metadata frames and empty frames are dropped,
    as in Proton."""
    require_pandas("lepton.viewer.read")
    return _frame_and_catalog(load_profile(filename), with_sums=True)


def get_raw_metrics(database: list | IO) -> tuple[ProfileFrame, list[str], list[str], dict]:
    """`read` of a profile already decoded (`[tree, device_info]`, as `lepton.data.get` returns
    it and as Proton main's viewer takes it) or of an open file (older Proton's), without the
    "(inc)" sums (call gf.update_inclusive_columns()). The decoded profile is not changed."""
    require_pandas("lepton.viewer.get_raw_metrics")
    if not hasattr(database, "read"):
        return _frame_and_catalog(from_document(database, "<profile data>"), with_sums=False)
    data = database.read()
    data = data.encode("utf-8") if isinstance(data, str) else data
    return _frame_and_catalog(load_bytes(data, str(getattr(database, "name", "<file>"))), with_sums=False)


def _frame_and_catalog(tree: Tree, with_sums: bool) -> tuple[ProfileFrame, list[str], list[str], dict]:
    gf = ProfileFrame(tree)
    if with_sums:
        gf.update_inclusive_columns()
    catalog = Catalog.of(tree)
    return gf, catalog.inclusive, catalog.exclusive, tree.devices


def parse(metrics: Sequence[str], filename: str | os.PathLike, include: str | None = None,
          exclude: str | None = None, threshold: float | None = None) -> tuple[ProfileFrame, list[str]]:
    """read + derive_metrics + filter_frames (the threshold applies to the first metric):
    (frame, the derived column names)."""
    gf, inclusive, exclusive, device_info = read(filename)
    columns = derive_metrics(gf, metrics, inclusive, exclusive, device_info)
    return filter_frames(gf, include, exclude, threshold, columns[0]), columns


def derive_metrics(gf: ProfileFrame, metrics: Sequence[str], inclusive_metrics: Sequence[str] | None = None,
                   exclusive_metrics: Sequence[str] | None = None, device_info: dict | None = None) -> list[str]:
    """Adds one DataFrame column per requested metric ("time/ms" -> "time/ms (inc)", "util",
    "count" -> "count (inc)") and returns their names; lepton-view -m takes the same names.
    The inclusive/exclusive lists are taken from the frame itself (they are what read returned)."""
    del inclusive_metrics, exclusive_metrics
    tree = gf.current_tree()
    if device_info is not None:
        tree = replace(tree, devices=device_info)
    columns, problems = derive_columns(tree, metrics)
    for warning in problems:
        warnings.warn(warning, stacklevel=2)
    pd = require_pandas("lepton.viewer.derive_metrics")
    for column in columns:
        gf.dataframe[column.label] = pd.Series(column.values, index=gf.aligned().index)
        listed = gf.inc_metrics if column.label.endswith(INCLUSIVE_SUFFIX) else gf.exc_metrics
        if column.label not in listed:
            listed.append(column.label)
    return [column.label for column in columns]


def filter_frames(gf: ProfileFrame, include: str | None = None, exclude: str | None = None,
                  threshold: float | None = None, metric: str | None = None) -> ProfileFrame:
    """A new frame with the paths through frames matching `include` (a regex, matched at the
    start of the name), without the frames matching `exclude` and their subtrees, and without the
    frames whose `metric` column is below `threshold`; kept frames hang under their nearest kept
    ancestor. Sums ("<m> (inc)" of a raw metric) are summed again; derived columns keep their
    values (so ROOT keeps its total), as in lepton-view -i/-e/-t."""
    require_pandas("lepton.viewer.filter_frames")
    if threshold and metric is None:
        raise ValueError("filter_frames: a threshold needs the metric it applies to (metric=...)")
    tree = gf.current_tree(names="file")
    df = gf.aligned()
    shown = [str(name) for name in df["name"].tolist()]
    raw = set(tree.numbers) | set(tree.texts) | set(FRAME_COLUMNS)
    extra = [label for label in df.columns if label not in raw]
    numeric = [label for label in extra if _is_numeric(df[label])]
    labels = ([metric] if metric is not None else []) + [label for label in numeric if label != metric]
    columns = [_column(gf, tree, label) for label in labels]
    tree.texts[_ROW] = np.arange(len(tree)).astype(object)
    if include:
        tree, columns = filter_columns(tree, columns, include=include, aliases=_aliases(tree, shown))
    if exclude or threshold:
        tree, columns = filter_columns(tree, columns, exclude=exclude, threshold=threshold,
                                       aliases=_aliases(tree, shown))
    rows = tree.texts.pop(_ROW).astype(np.int64)
    kept = {column.label: column.values for column in columns if column.label in extra}
    for label in extra:
        if label not in kept:  # text columns a user added: each node keeps its first member's
            kept[label] = df[label].to_numpy(dtype=object)[rows]
    kept["name"] = np.array(shown, dtype=object)[rows]
    new = ProfileFrame(tree, kept, gf.exc_metrics, gf.inc_metrics, name_format=gf._name_format)
    new.dataframe = new.dataframe[[label for label in df.columns if label in new.dataframe.columns]]
    return new


def _is_numeric(series) -> bool:
    from pandas.api.types import is_bool_dtype, is_numeric_dtype
    return is_numeric_dtype(series) and not is_bool_dtype(series)


def _column(gf: ProfileFrame, tree: Tree, label: str) -> Column:
    """A DataFrame column as the filters take it: sums of a raw metric are summed again."""
    base = label[:-len(INCLUSIVE_SUFFIX)] if label.endswith(INCLUSIVE_SUFFIX) else None
    resum = base if base in tree.root_keys and base in tree.numbers else None
    return Column(label, gf.values(label), resum_key=resum)


def _aliases(tree: Tree, shown: list[str]) -> list[str] | None:
    """The names shown (after format_frames) of the tree's nodes, for the patterns to match too;
    None when they are the file's names."""
    aliases = [shown[row] for row in tree.texts[_ROW].tolist()]
    return None if aliases == tree.names else aliases


def format_frames(gf: ProfileFrame, format: str | None) -> ProfileFrame:
    """Rewrites the "name" column of file:line@function frames: "full" (or None) leaves them,
    "file_function_line" -> "test.py:1@foo", "function_line" -> "1@foo", "file_function" ->
    "test.py@foo". Changes `gf` and returns it, as Proton's."""
    if format in (None, "full"):
        return gf
    if format not in NAME_FORMATS:
        raise ValueError(f"unknown frame format '{format}'; use one of {', '.join(NAME_FORMATS)}")
    gf.dataframe["name"] = [format_name(str(name), format) for name in gf.dataframe["name"].tolist()]
    # Two formats in a row are no single format: then the tree shows the DataFrame's names as they are.
    gf._name_format = format if gf._name_format == "full" else "full"
    return gf


def print_tree(gf: ProfileFrame, metrics: Sequence[str], depth: int = 100, format: str | None = None,
               print_sorted: bool = False) -> None:
    """Prints the tree (and with print_sorted the frames sorted by the first metric) exactly as
    lepton-view prints it for the same metrics and options."""
    gf = format_frames(gf, format)
    sys.stdout.write(gf.tree(metric_column=list(metrics), depth=depth))
    if print_sorted:
        tree, name_format = gf.render_tree()
        columns = [Column(label, gf.values(label)) for label in metrics]
        sys.stdout.write(sorted_text(tree, columns, RenderOptions(depth=depth, name_format=name_format)))
    emit_warnings(gf, metrics)


def emit_warnings(gf: ProfileFrame, metrics: Sequence[str]) -> None:
    """Proton's: prints a warning when "bytes (inc)" is shown with negative values (an overflow)."""
    columns = [Column(label, gf.values(label)) for label in metrics if label == "bytes (inc)"]
    warning = negative_byte_warning(columns)
    if warning:
        print(warning)


def apply_diff_profile(gf: ProfileFrame, derived_metrics: Sequence[str], diff_file: str | os.PathLike,
                       metrics: Sequence[str], include: str | None = None, exclude: str | None = None,
                       threshold: float | None = None) -> ProfileFrame:
    """`gf` minus the profile in `diff_file` parsed with the same arguments, on the union of both
    trees, for the derived metrics (lepton-view -diff). Frames found on one side only are marked
    in `tree()`: "◀" only in gf, "▶" only in diff_file."""
    other, _ = parse(metrics, diff_file, include, exclude, threshold)
    for frame in (gf, other):  # compare only what was derived: the raw metrics may differ
        frame.inc_metrics = [m for m in derived_metrics if m.endswith(INCLUSIVE_SUFFIX)]
        frame.exc_metrics = [m for m in derived_metrics if not m.endswith(INCLUSIVE_SUFFIX)]
    return gf.sub(other)


def get_min_time_flops(df, device_info: dict):
    """Per row, the seconds its flops8..flops64 take at the device's peak (0 for rows of no
    device, NaN on devices with no peak numbers): a DataFrame with one column, "min_time"."""
    pd = require_pandas("lepton.viewer.get_min_time_flops")
    flop_seconds, _ = _seconds_at_peak(df, device_info)
    return pd.DataFrame({"min_time": flop_seconds}, index=df.index)


def get_min_time_bytes(df, device_info: dict):
    """Per row, the seconds its bytes take at the device's peak bandwidth: a DataFrame with one
    column, "min_time"."""
    pd = require_pandas("lepton.viewer.get_min_time_bytes")
    _, byte_seconds = _seconds_at_peak(df, device_info)
    return pd.DataFrame({"min_time": byte_seconds}, index=df.index)


def _seconds_at_peak(df, device_info: dict) -> tuple[np.ndarray, np.ndarray]:
    """derive.seconds_at_peak on the rows of `df`, read as a tree of roots."""
    n = len(df)
    wanted = ["bytes", "device_id", "device_type"] + [f"flops{width}" for width in FLOP_WIDTHS_BITS]
    numbers, texts = {}, {}
    for label in wanted:
        if label in df.columns:
            if _is_numeric(df[label]):
                numbers[label] = df[label].to_numpy(dtype=np.float64, na_value=np.nan)
            else:
                texts[label] = none_for_missing(df[label].to_numpy(dtype=object))
    table = Tree(parent=np.full(n, NO_PARENT, dtype=np.int64), depth=np.zeros(n, dtype=np.int64),
                 names=[""] * n, frame_types=[MISSING_FRAME_TYPE] * n, numbers=numbers, texts=texts,
                 devices=device_info or {})
    with np.errstate(divide="ignore", invalid="ignore"):
        flop_seconds, byte_seconds, problems = seconds_at_peak(table)
    for problem in problems:
        warnings.warn(problem, stacklevel=3)
    return flop_seconds, byte_seconds


def match_available_metrics(metrics: str | Sequence[str], inclusive_metrics: Sequence[str],
                            exclusive_metrics: Sequence[str]) -> list[str]:
    """The DataFrame columns of metric names as a user types them ("time" -> "time (ns) (inc)",
    "cpu_time" -> "cpu_time (ns)"): case-insensitive, with or without the unit."""
    catalog = Catalog(list(inclusive_metrics), list(exclusive_metrics))
    result = []
    for request in [metrics] if isinstance(metrics, str) else metrics:
        raw = catalog.match(request)
        result.append(raw + INCLUSIVE_SUFFIX if raw in catalog.inclusive and "(inc)" not in raw else raw)
    return result


def remove_frames(database: list) -> list:
    """A hatchet document `[tree, device_info]` without the frames the viewer drops (launch
    metadata, frames with no metrics and no children, parents left with no children): the rules
    of viewer.walk, which the loader applies."""
    roots = [item for item in database if isinstance(item, dict) and "frame" in item]
    kept_rows = walk_nodes(roots).kept()
    walked = sum(1 for _ in _preorder(roots))
    keep = np.ones(walked, dtype=bool) if kept_rows is None else np.isin(np.arange(walked), kept_rows)
    result: list = []
    copies: dict[int, dict] = {}
    for row, (node, parent) in enumerate(_preorder(roots)):
        if keep[row]:
            copy = {**node, "children": []}
            copies[id(node)] = copy
            (result if parent is None else copies[id(parent)]["children"]).append(copy)
    others = [item for item in database if not (isinstance(item, dict) and "frame" in item)]
    return result + others


def _preorder(roots: list[dict]):
    """(node, parent) pairs in the order viewer.walk visits them; no recursion."""
    stack = [(root, None) for root in reversed(roots)]
    while stack:
        node, parent = stack.pop()
        yield node, parent
        stack.extend((child, node) for child in reversed(node.get("children") or []))


def show_metrics(file_name: str | os.PathLike) -> None:
    """Prints the metrics of a profile, as lepton-view -l (and proton-viewer -l)."""
    catalog = Catalog.of(load_profile(file_name))
    print("Available inclusive metrics:")
    for name in catalog.inclusive:
        print(f"- {short_name(name)}")
    print("Available exclusive metrics:")
    for name in catalog.exclusive:
        print(f"- {short_name(name)}")
