"""The scopes panel of an instrumentation profile: per kernel, its scopes as a tree with cycles
(summed over warps and CTAs, and per warp and CTA) and nanoseconds, and each scope's share of its
kernel (`cycles/kernel%`, as the terminal computes it).

Lepton's profiles carry `ns` from each CTA's globaltimer; Proton's carry cycles only, so there
the page converts at the device's SM clock and says so (an estimate: SM clocks boost and throttle).
"""
from __future__ import annotations

import numpy as np

from .. import specs
from ..derive import _text_column, derive
from ..flat_tree import Tree
from ..render import RenderOptions, display_names
from .nodes import KERNEL, node_kinds, node_path, scope_mask

MAX_KERNELS = 100
COLUMNS = ("cycles", "normalized_cycles", "ns", "normalized_ns")


def scopes_panel(tree: Tree, names: RenderOptions) -> dict | None:
    """The panel's data, or None where the profile has no instrumented scopes."""
    scopes = scope_mask(tree)
    if not scopes.any() or "cycles" not in tree.numbers:
        return None
    shown = display_names(tree, names, escape=False)
    share = derive(tree, ["cycles/kernel%"]).columns[0].values
    clock_ghz = _clock_ghz(tree)
    kinds = node_kinds(tree)
    children = tree.children
    out = []
    for kernel in np.flatnonzero(kinds == KERNEL).tolist():
        rows: list[dict] = []
        _walk(tree, kernel, 0, children, scopes, shown, share, clock_ghz, rows)
        if rows:
            out.append({"name": shown[kernel], "path": node_path(tree, kernel, shown), "scopes": rows})
    if not out:
        return None
    measured = "ns" in tree.numbers
    return {"kernels": out[:MAX_KERNELS], "left_out": max(len(out) - MAX_KERNELS, 0),
            "ns_source": "globaltimer" if measured else ("clock" if clock_ghz else None),
            "clock_ghz": clock_ghz}


def _walk(tree, node, depth, children, scopes, shown, share, clock_ghz, rows) -> None:
    """Appends the scopes under `node` in preorder, siblings in the file's order."""
    for child in children[node]:
        if not scopes[child]:
            continue
        row = {"name": shown[child], "depth": depth, "share": _number(share[child])}
        for key in COLUMNS:
            row[key] = _number(tree.numbers[key][child]) if key in tree.numbers else None
        if row["ns"] is None and clock_ghz and row["cycles"] is not None:
            row["ns"] = row["cycles"] / clock_ghz
            if row["normalized_cycles"] is not None:
                row["normalized_ns"] = row["normalized_cycles"] / clock_ghz
        rows.append(row)
        _walk(tree, child, depth + 1, children, scopes, shown, share, clock_ghz, rows)


def _number(value) -> float | None:
    value = float(value)
    return value if np.isfinite(value) else None


def _clock_ghz(tree: Tree) -> float | None:
    """The SM clock of the device the scopes ran on (the first one with a clock)."""
    ids = set(_text_column(tree, "device_id")[scope_mask(tree)].tolist())
    for device in specs.devices_of(tree.devices):
        if device.device_id in ids and device.clock_rate_khz > 0:
            return device.clock_rate_khz / 1e6
    return None
