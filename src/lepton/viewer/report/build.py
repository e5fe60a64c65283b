"""What the page shows, for every kind of profile: the data model the page's script draws.

One profile: its icicle and kernel table. Several files of one run: the ranks (min / median / max
and the slowest rank), or with --merge one profile of them. -diff: both sides on the union tree.
On top, what a profile's mode adds: the lines panel (instruction sampling), the scopes panel
(instrumentation) and, given its trace, the per-warp timeline.
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field

import numpy as np

from ..derive import Column
from ..flat_tree import Tree
from ..load import load
from ..ranks import check_one_run, merge, rank_label, rank_view, union
from ..render import RenderOptions
from .check import check_page
from .errors import ReportError
from .kernels import flop_widths, kernel_table, peaks
from .lines_panel import lines_panel
from .metrics import display_label, unit_of
from .ranks_panel import base_label, ranks_panel, split_columns
from .roofline import roofline_points
from .scopes_panel import scopes_panel
from .sizes import Filters, box_values, derived, drawn_rows, filtered, requests_of
from .timeline import timeline_panel
from .tree_part import tree_part, values


@dataclass(frozen=True)
class Request:
    """What `lepton-view --html` was asked for."""

    profiles: tuple[str, ...]
    traces: tuple[str, ...] = ()
    other: str | None = None  # -diff OTHER: the page shows profiles[0] minus it
    merge: str | None = None  # several profiles as one ("sum" or "mean") instead of side by side
    metrics: tuple[str, ...] | None = None
    filters: Filters = field(default_factory=Filters)
    names: RenderOptions = field(default_factory=RenderOptions)


def page_data(request: Request) -> dict:
    """The page's data; raises a one-line error (ReportError, MetricError, FilterError,
    ProfileError) where the page cannot be made or would show nothing."""
    if not request.profiles:
        raise ReportError(f"'{request.traces[0]}' is a Chrome trace: give its profile too (lepton-view "
                          "--html OUT.html PROFILE.hatchet TRACE.chrome_trace), or open the trace in Perfetto")
    trees = [load(path) for path in request.profiles]
    if len(trees) > 1:
        check_one_run(trees, list(request.profiles))
        if request.other:
            raise ReportError("-diff takes one profile on each side, not several")
    if len(trees) > 1 and not request.merge:
        data = _ranks_page(trees, request)
    else:
        tree = merge(trees, request.merge) if len(trees) > 1 else trees[0]
        data = _diff_page(tree, load(request.other), request) if request.other else \
            _single_page(tree, request)
    data["title"] = _title(request)
    if request.traces:
        data["timeline"] = timeline_panel(list(request.traces))
    data["panels"] = _panels(data)
    check_page(data, _filters_note(request))
    return data


def _single_page(tree: Tree, request: Request) -> dict:
    requests = requests_of(tree, request.metrics)
    columns, warnings = derived(tree, requests)
    shown, columns = filtered(tree, columns, request.filters)
    rows = drawn_rows(shown, request.filters.depth)
    data = _common(shown, rows, request)
    data["sizes"] = [_size(column.label, box_values(shown, column)[rows]) for column in columns]
    data["lines"] = lines_panel(request.profiles[0], request.filters.include, request.filters.exclude) \
        if "num_samples" in tree.numbers else None
    data["warnings"] = warnings
    return data


def _diff_page(tree: Tree, other: Tree, request: Request) -> dict:
    """Both sides' columns, each derived on its own tree, placed on the union tree."""
    requests = requests_of(tree, request.metrics)
    left, left_warnings = derived(tree, requests)
    right, right_warnings = derived(other, requests)
    rows_of = union([tree, other]).rows
    joined = merge([tree, other], "sum")  # the union's rows, with device ids for the node kinds
    placed = [_placed(c, rows_of[0], len(joined)) for c in left] + \
        [_placed(c, rows_of[1], len(joined)) for c in right]
    shown, placed = filtered(joined, placed, request.filters)
    rows = drawn_rows(shown, request.filters.depth)
    data = _common(shown, rows, request, kernels_of=filtered(tree, [], request.filters)[0])
    n = len(requests)
    data["sizes"] = [_size(c.label, box_values(shown, c)[rows]) for c in placed[:n]]
    data["diff"] = {"file": os.path.basename(request.profiles[0]), "other": os.path.basename(request.other),
                    "b": [values(box_values(shown, c)[rows]) for c in placed[n:]],
                    "only": _only_side(shown, placed[0], placed[n], rows)}
    other_table = kernel_table(filtered(other, [], request.filters)[0], request.names)
    data["otherKernels"] = other_table
    data["lines"] = lines_panel(request.profiles[0], request.filters.include, request.filters.exclude) \
        if "num_samples" in tree.numbers else None
    data["warnings"] = left_warnings + right_warnings
    return data


def _placed(column: Column, rows: np.ndarray, n: int) -> Column:
    """A side's column on the union's rows (NaN where the side lacks the node)."""
    out = np.full(n, np.nan)
    out[rows] = column.values
    return Column(column.label, out)  # no resum_key: the union's own numbers are both sides summed


def _only_side(tree: Tree, a: Column, b: Column, rows: np.ndarray) -> list[int]:
    """Per drawn node: 1 where only this file has it, 2 only the other, 0 both."""
    has_a, has_b = np.isfinite(a.values)[rows], np.isfinite(b.values)[rows]
    return np.where(has_a & ~has_b, 1, np.where(has_b & ~has_a, 2, 0)).tolist()


def _ranks_page(trees: list[Tree], request: Request) -> dict:
    ranks = [rank_label(path, i) for i, path in enumerate(request.profiles)]
    requests = requests_of(trees[0], request.metrics)
    _, columns, warnings = rank_view(trees, ranks, requests)
    mean = merge(trees, "mean")  # the union's rows, with numbers for the kernel table and kinds
    shown, columns = filtered(mean, columns, request.filters)
    rows = drawn_rows(shown, request.filters.depth)
    per_metric, slowest = split_columns(columns, len(requests))
    data = _common(shown, rows, request)
    data["sizes"] = [_size(base_label(stats["median"]), box_values(shown, stats["median"])[rows])
                     for stats in per_metric]
    data["ranks"] = {**ranks_panel(shown, per_metric[0], slowest, ranks, request.names),
                     "min": [values(box_values(shown, stats["min"])[rows]) for stats in per_metric],
                     "max": [values(box_values(shown, stats["max"])[rows]) for stats in per_metric],
                     "slowest": values(slowest.values[rows])}
    data["kernelsNote"] = f"mean over {len(trees)} ranks"
    data["warnings"] = warnings
    return data


def _common(tree: Tree, rows: np.ndarray, request: Request, kernels_of: Tree | None = None) -> dict:
    """The tree, the kernel table and roofline (of `kernels_of`, default `tree`), the scopes."""
    source = tree if kernels_of is None else kernels_of
    device = peaks(source)
    return {"tree": tree_part(tree, rows, request.names), "kernels": kernel_table(source, request.names),
            "peaks": device, "flopWidths": flop_widths(source),
            "roofline": roofline_points(source, request.names),
            "scopes": scopes_panel(source, request.names), "device": device[0]["device"] if device else None}


def _size(label: str, box: np.ndarray) -> dict:
    return {"label": display_label(label), "unit": unit_of(label), "values": values(box)}


def _title(request: Request) -> str:
    title = os.path.basename(request.profiles[0])
    extra = len(request.profiles) - 1
    if extra and request.merge:
        title += f" (+{extra} ranks, {request.merge})"
    elif extra:
        title = f"{len(request.profiles)} ranks: " + ", ".join(os.path.basename(p) for p in request.profiles)
    if request.traces:
        title += " + " + ", ".join(os.path.basename(t) for t in request.traces)
    return title


PANELS = (("kernels", "kernels-panel"), ("roofline", "roofline-panel"), ("lines", "lines-panel"),
          ("scopes", "scopes-panel"), ("timeline", "timeline-panel"), ("ranks", "ranks-panel"),
          ("diff", "diff-legend"))


def _panels(data: dict) -> list[str]:
    """The ids of the page's panels this data fills (the page checks each is drawn)."""
    return ["flame"] + [panel for key, panel in PANELS if data.get(key)]


def _filters_note(request: Request) -> str:
    f = request.filters
    given = [f"-i '{f.include}'" if f.include else "", f"-e '{f.exclude}'" if f.exclude else "",
             f"-t {f.threshold:g}" if f.threshold else "",
             f"-d {f.depth}" if f.depth != Filters().depth else ""]
    given = [g for g in given if g]
    return f" with {' '.join(given)}" if given else ""
