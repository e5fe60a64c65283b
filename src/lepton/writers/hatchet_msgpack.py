"""Proton's hatchet MessagePack: the JSON structure, with Proton's key order and no empty leaves.

Differences from the JSON file, as Proton's `HatchetMsgPack.cpp` writes it: a node is
`{frame, metrics, children}` in that order; kernel metrics come first in the order `time (ns)`,
`count`, `device_id`, `device_type`, user metrics follow sorted by name; leaves with no metrics and
no children are left out; the device map is always present.
"""
from __future__ import annotations

import msgpack

from ..model.profile import Profile
from ..model.tree import Node, build_tree
from .hatchet import device_block, root_zeros


def _node(node: Node) -> dict | None:
    metrics = {}
    if node.kernel is not None:
        k = node.kernel
        metrics = {"time (ns)": k.time_ns, "count": k.count, "device_id": str(k.device_id),
                   "device_type": k.device_type}
    for name in sorted(node.metrics):
        metrics[name] = node.metrics[name]
    children = [c for c in (_node(node.children[n]) for n in sorted(node.children)) if c is not None]
    if not metrics and not children:
        return None
    return {"frame": {"name": node.name, "type": "function"}, "metrics": metrics, "children": children}


def render(profile: Profile) -> bytes:
    root = build_tree(profile.paths, profile.data)
    children = [c for c in (_node(root.children[n]) for n in sorted(root.children)) if c is not None]
    root_literal = {"frame": {"name": root.name, "type": "function"},
                    "metrics": root_zeros(profile, root), "children": children}
    return msgpack.packb([root_literal, device_block(profile, root)])
