"""The tree the page draws, as JSON: parents, names (each distinct name once), node kinds, and each
size's box values; only the rows above -d, renumbered."""
from __future__ import annotations

import math
import re

import numpy as np

from ..filters import format_name
from ..flat_tree import Tree
from ..render import RenderOptions, display_names
from .nodes import node_kinds

SIGNIFICANT = 6  # digits kept per value: the page shows 3-4; the JSON stays ~40% smaller
SOURCE_LINE = re.compile(r"^.+/[^/]+:\d+@.+$")  # "/dir/file.py:12@function", a sampled line's node


def values(array: np.ndarray) -> list:
    """Floats rounded to SIGNIFICANT digits, None for NaN and infinities (JSON has none)."""
    return [None if not math.isfinite(v) else float(f"{v:.{SIGNIFICANT}g}")
            for v in np.asarray(array, float).tolist()]


def tree_part(tree: Tree, rows: np.ndarray, names: RenderOptions) -> dict:
    """`rows` of `tree` (a parent before its children) as the page reads them. A source line's
    box shows `file.py:12@function` (its full path is the tooltip's) unless -f asked otherwise."""
    new = np.full(len(tree), -1, dtype=np.int64)
    new[rows] = np.arange(len(rows))
    parent = tree.parent[rows]
    shown = display_names(tree, names, escape=False)
    picked = [shown[i] for i in rows.tolist()]
    distinct = list(dict.fromkeys(picked))
    position = {name: i for i, name in enumerate(distinct)}
    short = {}
    if names.name_format == "full":
        short = {i: format_name(name, "file_function_line")
                 for i, name in enumerate(distinct) if SOURCE_LINE.match(name)}
    return {"parent": np.where(parent >= 0, new[np.maximum(parent, 0)], -1).tolist(),
            "name": [position[name] for name in picked], "names": distinct,
            "short": {str(i): label for i, label in short.items()},
            "kind": node_kinds(tree)[rows].tolist()}
