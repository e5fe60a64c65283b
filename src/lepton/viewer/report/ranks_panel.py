"""Several ranks of one run on one page, as the terminal shows them (viewer.ranks.rank_view): per
node and metric the min, median and max over the ranks, and the slowest rank by the first metric.
Boxes are sized by the median; the panel lists the nodes whose ranks differ most."""
from __future__ import annotations

import numpy as np

from ..derive import Column
from ..flat_tree import Tree
from ..render import RenderOptions, display_names
from .nodes import FRAME, node_kinds, node_path

MAX_ROWS = 50
STATS = ("min", "median", "max")


def split_columns(columns: list[Column], n_metrics: int) -> tuple[list[dict[str, Column]], Column]:
    """rank_view's columns (min, median, max per metric, then the slowest rank) by metric."""
    per_metric = [dict(zip(STATS, columns[3 * m:3 * m + 3])) for m in range(n_metrics)]
    return per_metric, columns[3 * n_metrics]


def base_label(column: Column) -> str:
    """"time/ms (inc) median" -> "time/ms (inc)": the metric's own label, for its unit."""
    return column.label.rsplit(" ", 1)[0]


def ranks_panel(tree: Tree, stats: dict[str, Column], slowest: Column, ranks: list[int],
                names: RenderOptions) -> dict:
    """The nodes with the widest spread (max - min) of the first metric, widest first."""
    low, mid, high = (np.asarray(stats[s].values, float) for s in STATS)
    spread = high - low
    kinds = node_kinds(tree)
    candidates = np.flatnonzero(np.isfinite(spread) & (spread > 0) & (tree.parent >= 0))
    order = candidates[np.argsort(-spread[candidates], kind="stable")][:MAX_ROWS]
    shown = display_names(tree, names, escape=False)
    rows = []
    for node in order.tolist():
        rows.append({"name": node_path(tree, node, shown), "kernel": bool(kinds[node] != FRAME),
                     "min": float(low[node]), "median": float(mid[node]), "max": float(high[node]),
                     "slowest": None if np.isnan(slowest.values[node]) else int(slowest.values[node])})
    return {"ranks": ranks, "metric": base_label(stats["median"]).replace(" (inc)", ""), "rows": rows}
