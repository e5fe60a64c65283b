"""The terminal viewer: file -> Tree -> derived metrics -> filters -> text, the stages that
`pipeline` composes for lepton-view and the Python API alike.

Reads hatchet JSON and hatchet MessagePack (Lepton's and Proton's); needs numpy and msgpack only,
and never imports `lepton.backends`. Proton's Python API (`read`, `parse`, `derive_metrics`, ...,
as in `triton.profiler.viewer`) is here too, on pandas, which it imports only when called.
"""
from __future__ import annotations

from .demangle import demangle
from .derive import Column, MetricError, check_metric_specs, derive
from .filters import FilterError, apply_filters
from .flat_tree import Tree
from .frames import ProfileFrame
from .load import ProfileError, load, load_bytes
from .names import readable_names
from .python_api import (
    apply_diff_profile,
    derive_metrics,
    emit_warnings,
    filter_frames,
    format_frames,
    get_min_time_bytes,
    get_min_time_flops,
    get_raw_metrics,
    match_available_metrics,
    parse,
    print_tree,
    read,
    remove_frames,
    show_metrics,
)
from .render import RenderOptions, csv_text, json_text, sorted_text, tree_text
from .shorten import shorten

__all__ = [
    "Column", "FilterError", "MetricError", "ProfileError", "ProfileFrame", "RenderOptions", "Tree",
    "apply_diff_profile", "apply_filters", "check_metric_specs", "csv_text", "demangle", "derive",
    "derive_metrics", "emit_warnings", "filter_frames", "format_frames", "get_min_time_bytes",
    "get_min_time_flops", "get_raw_metrics", "json_text", "load", "load_bytes", "match_available_metrics",
    "parse", "print_tree", "read", "readable_names", "remove_frames", "shorten", "show_metrics", "sorted_text", "tree_text",
]
