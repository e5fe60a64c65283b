"""Proton's hatchet MessagePack: the JSON structure, with Proton's key order and no empty leaves.

Differences from the JSON file, as Proton's `HatchetMsgPack.cpp` writes it: a node is
`{frame, metrics, children}` in that order; kernel metrics come first in the order `time (ns)`,
`count`, `device_id`, `device_type`, user metrics follow sorted by name; leaves with no metrics and
no children are left out; the device map is always present.

The tree is packed node by node (map and array headers, then each node's small parts), never as
one nested object, so that its depth is bounded by memory only (msgpack's packer stops at 512
levels). An integer metric beyond MessagePack's 64 bits (below -2**63 or from 2**64 on) is written
as a float64, the nearest value the format holds (±inf beyond the float range, ±1.8e308).
"""
from __future__ import annotations

import msgpack

from ..model.hatchet_names import COUNT, DEVICE_ID, DEVICE_TYPE, RUN_METADATA_KEY, TIME_NS
from ..model.profile import Profile
from ..model.tree import Node, build_tree
from .hatchet import device_block, root_zeros

_INT_MIN, _INT_END = -(1 << 63), 1 << 64


def _fits(value):
    """`value` as MessagePack can hold it: ints beyond 64 bits become floats."""
    if type(value) is int and not _INT_MIN <= value < _INT_END:
        try:
            return float(value)
        except OverflowError:  # 10**400: the profile is still written
            return float("inf") if value > 0 else float("-inf")
    if type(value) is list:
        return [_fits(v) for v in value]
    return value


def _metrics(node: Node) -> dict:
    metrics = {}
    if node.kernel is not None:
        k = node.kernel
        metrics = {TIME_NS: k.time_ns, COUNT: k.count, DEVICE_ID: str(k.device_id),
                   DEVICE_TYPE: k.device_type}
    for name in sorted(node.metrics):
        metrics[name] = _fits(node.metrics[name])
    return metrics


def _kept_children(root: Node) -> dict[int, list[Node]]:
    """id(node) -> its children that are written, in name order, for every node written: a node
    is written when it has metrics or a written child."""
    order, stack = [], [root]
    while stack:  # parents before children; reversed below, children before parents
        node = stack.pop()
        order.append(node)
        stack.extend(node.children.values())
    kept: dict[int, list[Node]] = {}
    for node in reversed(order):
        children = [c for name, c in sorted(node.children.items()) if id(c) in kept]
        if children or node.metrics or node.kernel is not None or node is root:
            kept[id(node)] = children
    return kept


def render(profile: Profile) -> bytes:
    root = build_tree(profile.paths, profile.data)
    kept = _kept_children(root)
    packer = msgpack.Packer()
    run_metadata = profile.metadata()
    out = [packer.pack_array_header(2)]
    stack = [root]
    while stack:
        node = stack.pop()
        metrics = root_zeros(profile, root) if node is root else _metrics(node)
        children = kept[id(node)]
        metadata = node is root and run_metadata
        out.append(packer.pack_map_header(4 if metadata else 3))
        out.append(packer.pack("frame"))
        out.append(packer.pack({"name": node.name, "type": "function"}))
        out.append(packer.pack("metrics"))
        out.append(packer.pack({name: _fits(value) for name, value in metrics.items()}))
        if metadata:  # before "children": the children's maps follow its array header
            out.append(packer.pack(RUN_METADATA_KEY))
            out.append(packer.pack(run_metadata))
        out.append(packer.pack("children"))
        out.append(packer.pack_array_header(len(children)))
        stack.extend(reversed(children))
    out.append(packer.pack(device_block(profile, root)))
    return b"".join(out)
