"""The kernel table: one row per kernel name, summed over its call paths (time, launches, flops,
bytes, time at the device's peak for util) with its properties (per-node metrics such as num_warps:
the first value seen); and the device peaks the roofline draws."""
from __future__ import annotations

import math

import numpy as np

from .. import specs
from ..derive import FLOP_WIDTHS_BITS, seconds_at_peak
from ..flat_tree import Tree
from ..render import RenderOptions, display_names
from .nodes import KERNEL, node_kinds

STANDARD = {"time (ns)", "count", "bytes", "cpu_time (ns)", *(f"flops{w}" for w in FLOP_WIDTHS_BITS), "flops"}


def launch_properties(tree: Tree) -> list[str]:
    """The kernels' per-node numeric metrics beyond Proton's standard ones (num_warps, ...)."""
    return [k for k in tree.key_order if k not in STANDARD and k not in tree.root_keys and k in tree.numbers]


def kernel_nodes(tree: Tree) -> np.ndarray:
    return np.flatnonzero(node_kinds(tree) == KERNEL)


def work(tree: Tree) -> dict[str, np.ndarray]:
    """Per node: time (ns), launches, flops (all widths), bytes and seconds at peak; 0 for none."""
    flop_s, byte_s, _ = seconds_at_peak(tree)
    zero = np.zeros(len(tree))
    widths = [f"flops{w}" for w in FLOP_WIDTHS_BITS if f"flops{w}" in tree.numbers]
    flops = sum((np.nan_to_num(tree.numbers[key]) for key in widths), zero)
    return {"time_ns": np.nan_to_num(tree.numbers.get("time (ns)", zero)),
            "count": np.nan_to_num(tree.numbers.get("count", zero)),
            "flops": flops, "bytes": np.nan_to_num(tree.numbers.get("bytes", zero)),
            "peak_s": np.nan_to_num(np.where(byte_s > flop_s, byte_s, flop_s))}


def kernel_table(tree: Tree, names: RenderOptions) -> dict | None:
    """The rows, or None where no kernel has a time or a launch count (an instrumentation profile)."""
    nodes = kernel_nodes(tree)
    shown = display_names(tree, names, escape=False)
    per_node = work(tree)
    properties = launch_properties(tree)
    rows: dict[str, dict] = {}
    for node in nodes.tolist():
        row = rows.setdefault(shown[node], {"name": shown[node], "time_ns": 0.0, "count": 0.0, "flops": 0.0,
                                            "bytes": 0.0, "peak_s": 0.0, "props": {}})
        for key, column in per_node.items():
            row[key] += float(column[node])
        for key in properties:
            value = tree.numbers[key][node]
            if math.isfinite(value):
                row["props"].setdefault(key, float(value))
    if not any(row["time_ns"] > 0 or row["count"] > 0 for row in rows.values()):
        return None
    return {"properties": properties, "rows": list(rows.values())}


def peaks(tree: Tree) -> list[dict]:
    """Per device of the profile: peak FLOP/s per operand width and peak bytes/s (None unknown)."""
    out = []
    for device in specs.devices_of(tree.devices):
        name = f"{device.device_type} {device.device_id} (arch {device.arch})"
        entry = {"device": name, "flops": {}, "bytes": None}
        try:
            entry["flops"] = {str(w): specs.max_flops(device, w) for w in FLOP_WIDTHS_BITS}
            entry["bytes"] = specs.max_bytes_per_s(device)
        except specs.UnknownDevice:
            pass
        out.append(entry)
    return out


def flop_widths(tree: Tree) -> list[str]:
    """The operand widths the profile has flops for: one roof each."""
    return [str(w) for w in FLOP_WIDTHS_BITS
            if f"flops{w}" in tree.numbers and np.nansum(tree.numbers[f"flops{w}"]) > 0]
