"""The terminal viewer: file -> Tree -> derived metrics -> filters -> text.

Reads hatchet JSON and hatchet MessagePack (Lepton's and Proton's); needs numpy and msgpack only,
and never imports `lepton.collect`.
"""
from __future__ import annotations

from .demangle import demangle
from .derive import Column, MetricError, check_metric_specs, derive
from .filters import FilterError, apply_filters
from .flat_tree import Tree
from .load import ProfileError, load, load_bytes
from .render import RenderOptions, csv_text, json_text, sorted_text, tree_text
from .shorten import shorten

__all__ = [
    "Column", "FilterError", "MetricError", "ProfileError", "RenderOptions", "Tree", "apply_filters",
    "check_metric_specs", "csv_text", "demangle", "derive", "json_text", "load", "load_bytes", "shorten", "sorted_text", "tree_text",
]
