"""Which metrics the page sizes its boxes by, and the unit each one is shown in.

A box's width must add up: a parent at least as wide as its children. Raw metrics do (summed ones
over subtrees; the per-node ones of instrumentation, `cycles` and `ns`, hold a scope's whole time,
nested scopes included), and so do durations and shares (`time/ms`, `time/%`). Averages, rates,
`util` and `/kernel%` do not, so -m refuses them with one line rather than draw a wrong picture.
"""
from __future__ import annotations

import numpy as np

from ..derive import FORMULAS, SECONDS_PER_UNIT, Catalog, MetricError, metric_kind, short_name
from ..flat_tree import Tree

# Tried in this order when no -m is given: what a profile of each mode is about comes first.
PREFERRED = ("num_samples", "time", "cycles", "normalized_cycles", "ns", "normalized_ns", "cpu_time")
DEFAULT_TIME = "time/ms"  # as the terminal's default column
IN_KERNEL = ("cycles", "normalized_cycles", "ns", "normalized_ns")  # instrumentation's per-node metrics


def check_additive(request: str) -> None:
    """Raises MetricError for a metric whose values do not add up over a subtree."""
    kind = metric_kind(request)  # also rejects a malformed item, in derive's words
    key = request.strip().lower()
    durations = kind == "formula" and FORMULAS[key].shape == "duration"
    if kind in ("raw", "percent") or durations:
        return
    raise MetricError(f"--html sizes boxes by a metric that adds up over the tree; '{request}' does not "
                      "(take time/ms, num_samples, cycles, bytes, count or <metric>/%)")


def default_requests(tree: Tree) -> list[str]:
    """The metrics to offer with no -m: the preferred ones the profile has (with a positive value
    somewhere), then its other summed metrics."""
    catalog = Catalog.of(tree)
    found: list[str] = []
    for name in PREFERRED:
        raw = _match(catalog, name)
        if raw is not None and _positive(tree, raw):
            found.append(DEFAULT_TIME if name == "time" and _has_time_unit(raw) else name)
    for raw in catalog.inclusive:
        if raw in tree.numbers and short_name(raw) not in found + ["time"] and _positive(tree, raw):
            found.append(short_name(raw))
    if not found:
        raise MetricError("nothing to draw: no metric of this profile has a positive value; "
                          f"{catalog.describe()}")
    return found


def _match(catalog: Catalog, name: str) -> str | None:
    try:
        return catalog.match(name)
    except MetricError:
        return None


def _has_time_unit(raw: str) -> bool:
    return "(" in raw and raw.split("(")[1].split(")")[0].strip() in SECONDS_PER_UNIT


def _positive(tree: Tree, raw: str) -> bool:
    """Positive on some node below a root: a run-wide setting kept on ROOT (pcsampling_period_log2)
    draws nothing."""
    values = tree.numbers.get(raw)
    if values is None:
        return False
    below = values[tree.parent >= 0]
    return bool(np.nanmax(below, initial=0.0) > 0)


def unit_of(label: str) -> dict:
    """How the page formats a column's values: {"kind": "time", "ns": ns per unit} for times,
    else {"kind": "count" | "bytes" | "flops" | "percent" | "plain", "suffix": ...}."""
    name = label.replace(" (inc)", "").strip()
    base = short_name(name)
    if name.endswith("/%"):
        return {"kind": "percent"}
    if "/" in name:
        unit = name.split("/", 1)[1].strip()
        if base.split("/")[0] in ("time", "cpu_time") and unit in SECONDS_PER_UNIT:
            return {"kind": "time", "ns": SECONDS_PER_UNIT[unit] * 1e9}
    if "(" in name:
        unit = name.split("(", 1)[1].split(")")[0].strip()
        if unit in SECONDS_PER_UNIT:
            return {"kind": "time", "ns": SECONDS_PER_UNIT[unit] * 1e9}
    if base in ("ns", "normalized_ns"):
        return {"kind": "time", "ns": 1.0}
    if base in ("cycles", "normalized_cycles"):
        return {"kind": "count", "suffix": "cycles"}
    if base == "num_samples" or base.startswith("stalled_") or base == "num_stalled_samples":
        return {"kind": "count", "suffix": "samples"}
    if base == "count":
        return {"kind": "count", "suffix": "launches"}
    if base == "bytes":
        return {"kind": "bytes"}
    if base.startswith("flops"):
        return {"kind": "flops"}
    return {"kind": "plain"}


def display_label(label: str) -> str:
    """"time (ns) (inc)" -> "time (ns)": what the size-by list shows."""
    return label.replace(" (inc)", "")
