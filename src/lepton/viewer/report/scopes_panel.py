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
    if not scope_mask(tree).any() or "cycles" not in tree.numbers:
        return None
    scopes = _Scopes(tree, names)
    out = []
    for kernel in np.flatnonzero(node_kinds(tree) == KERNEL).tolist():
        rows = scopes.under(kernel, 0)
        if rows:
            out.append({"name": scopes.shown[kernel], "path": node_path(tree, kernel, scopes.shown), "scopes": rows})
    if not out:
        return None
    measured = "ns" in tree.numbers
    return {"kernels": out[:MAX_KERNELS], "left_out": max(len(out) - MAX_KERNELS, 0),
            "ns_source": "globaltimer" if measured else ("clock" if scopes.clock_ghz else None),
            "clock_ghz": scopes.clock_ghz}


class _Scopes:
    """A tree's scopes as table rows: what every row needs, computed once per tree."""

    def __init__(self, tree: Tree, names: RenderOptions) -> None:
        self.tree = tree
        self.is_scope = scope_mask(tree)
        self.shown = display_names(tree, names, escape=False)
        self.share = derive(tree, ["cycles/kernel%"]).columns[0].values
        self.clock_ghz = _clock_ghz(tree)

    def under(self, node: int, depth: int) -> list[dict]:
        """The scopes below `node` in preorder, siblings in the file's order."""
        rows = []
        for child in self.tree.children[node]:
            if self.is_scope[child]:
                rows.append(self.row(child, depth))
                rows += self.under(child, depth + 1)
        return rows

    def row(self, node: int, depth: int) -> dict:
        numbers = self.tree.numbers
        row = {"name": self.shown[node], "depth": depth, "share": _number(self.share[node])}
        row.update({key: _number(numbers[key][node]) if key in numbers else None for key in COLUMNS})
        if row["ns"] is None and self.clock_ghz:  # Proton's cycles only: ns at the SM clock
            for cycles, ns in (("cycles", "ns"), ("normalized_cycles", "normalized_ns")):
                row[ns] = row[cycles] / self.clock_ghz if row[cycles] is not None else None
        return row


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
