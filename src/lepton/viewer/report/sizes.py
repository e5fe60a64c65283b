"""From -m, -i, -e, -t and -d to what the icicle draws: the metrics' columns on the filtered tree,
each node's box value, and the rows above the depth limit.

The columns and filters are the terminal's (viewer.derive, viewer.filters), so the page and
`lepton-view` agree on every number; only the box value is the page's own (see box_values).
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ..demangle import demangle
from ..derive import Column, derive
from ..filters import apply_filters
from ..flat_tree import Tree
from .metrics import check_additive, default_requests


@dataclass(frozen=True)
class Filters:
    """-i, -e, -t and -d, and whether names are matched demangled (not --mangled)."""

    include: str | None = None
    exclude: str | None = None
    threshold: float | None = None
    depth: int = 100
    demangled: bool = True


def requests_of(tree: Tree, metrics: Sequence[str] | None) -> list[str]:
    """-m's metrics, each checked to add up over a subtree; without -m, the profile's own."""
    if not metrics:
        return default_requests(tree)
    for request in metrics:
        check_additive(request)
    return list(metrics)


def derived(tree: Tree, requests: list[str]) -> tuple[list[Column], list[str]]:
    result = derive(tree, requests)
    return result.columns, list(result.warnings)


def filtered(tree: Tree, columns: list[Column], filters: Filters) -> tuple[Tree, list[Column]]:
    """The terminal's -i / -e / -t: matched against demangled names too, since those are shown."""
    aliases = None
    if filters.demangled and (filters.include or filters.exclude):
        aliases = [demangle(name) for name in tree.names]
    return apply_filters(tree, columns, filters.include, filters.exclude, filters.threshold, aliases)


def box_values(tree: Tree, column: Column) -> np.ndarray:
    """Each node's box width, in the column's unit, 0 for none.

    Summed columns ("... (inc)") are already inclusive. A per-node column (instrumentation's
    cycles) holds a scope's whole time on the scope; a node without a value (the kernel above its
    scopes) spans its children."""
    values = np.asarray(column.values, dtype=float)
    if "(inc)" in column.label:
        return np.clip(np.nan_to_num(values, nan=0.0, posinf=0.0, neginf=0.0), 0.0, None)
    has = np.isfinite(values)
    span = np.zeros(len(tree))
    below = np.zeros(len(tree))
    for level in reversed(tree.levels):
        span[level] = np.where(has[level], np.maximum(values[level], 0.0), below[level])
        inner = level[tree.parent[level] >= 0]
        np.add.at(below, tree.parent[inner], span[inner])
    return span


def drawn_rows(tree: Tree, depth: int) -> np.ndarray:
    """The rows the page gets: nodes above -d (the terminal's rule, ROOT is depth 0)."""
    return np.flatnonzero(tree.depth < depth)
