"""The roofline's points: one per kernel and shape, not per kernel name, so that the 1,024 and the
8,192 runs of one matmul are two points. Launches of a kernel have one shape when they do the same
work per launch (flops and bytes) with the same properties (num_warps, ...); the call path does not
split them."""
from __future__ import annotations

import math

from ..flat_tree import Tree
from ..render import RenderOptions, display_names
from .kernels import kernel_nodes, launch_properties, work


WORK = ("flops", "bytes", "time_ns", "count")


def _rounded(value: float) -> float:
    return float(f"{value:.4g}")


def roofline_points(tree: Tree, names: RenderOptions) -> list[dict]:
    """[{name, label, ai (FLOP/byte), perf (FLOP/s), launches, time_ns}] for kernels with flops,
    bytes and time; `label` adds the shape where one name has several."""
    shown = display_names(tree, names, escape=False)
    per_node = work(tree)
    properties = launch_properties(tree)
    groups: dict[tuple, dict] = {}
    for node in kernel_nodes(tree).tolist():
        flops, nbytes, time, count = (float(per_node[k][node]) for k in WORK)
        if not (flops > 0 and nbytes > 0 and time > 0):
            continue
        launches = max(count, 1.0)
        props = tuple(float(tree.numbers[k][node]) for k in properties
                      if math.isfinite(tree.numbers[k][node]))
        key = (shown[node], _rounded(flops / launches), _rounded(nbytes / launches), props)
        group = groups.setdefault(key, {"name": shown[node], "flops": 0.0, "bytes": 0.0, "time_ns": 0.0,
                                        "launches": 0.0, "contexts": []})
        group["flops"] += flops
        group["bytes"] += nbytes
        group["time_ns"] += time
        group["launches"] += launches
        parent = int(tree.parent[node])
        group["contexts"].append(shown[parent] if parent >= 0 else "")
    return [_point(group, groups.values()) for group in groups.values()]


def _point(group: dict, groups) -> dict:
    label = group["name"]
    twins = [g for g in groups if g["name"] == group["name"]]
    if len(twins) > 1:
        context = _context(group)
        unique = context and sum(_context(g) == context for g in twins) == 1
        label += f" · {context}" if unique else f" · {_si(group['flops'] / group['launches'])}FLOP/launch"
    return {"name": group["name"], "label": label, "ai": group["flops"] / group["bytes"],
            "perf": group["flops"] / (group["time_ns"] / 1e9), "launches": group["launches"],
            "time_ns": group["time_ns"]}


def _context(group: dict) -> str:
    """The frame the group's launches were made under, where they share one."""
    contexts = set(group["contexts"])
    return contexts.pop() if len(contexts) == 1 else ""


def _si(value: float) -> str:
    for scale, prefix in ((1e15, "P"), (1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(value) >= scale:
            return f"{value / scale:.3g} {prefix}"
    return f"{value:.3g} "
