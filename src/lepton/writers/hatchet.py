"""Proton's hatchet JSON: `[tree, device_info]`, keys sorted, indent 4, a newline before and after.

Byte-compatible with Triton 3.6's writer (checked against `fixtures/proton-3.6`): kernel nodes carry
`time (ns)`, `count`, `device_id` and `device_type` (ids as strings); ROOT carries a zero for
`count` and `time (ns)` when there are kernels and for every non-exclusive user metric, which is what
makes proton-viewer treat those metrics as inclusive.
"""
from __future__ import annotations

from ..model.profile import Profile
from ..model.tree import Node, TreeData, build_tree
from . import fast_json


def node_literal(node: Node) -> dict:
    metrics = dict(node.metrics)
    if node.kernel is not None:
        k = node.kernel
        metrics.update({"count": k.count, "device_id": str(k.device_id), "device_type": k.device_type,
                        "time (ns)": k.time_ns})
    return {
        "children": [node_literal(node.children[name]) for name in sorted(node.children)],
        "frame": {"name": node.name, "type": "function"},
        "metrics": metrics,
    }


def root_zeros(profile: Profile, root: Node) -> dict:
    data = profile.data
    assert isinstance(data, TreeData)
    zeros = {}
    if data.kernels:
        zeros.update({"count": 0, "time (ns)": 0})
    for name, spec in data.specs.items():
        if not spec.per_node:
            zeros[name] = 0
    zeros.update(root.metrics)  # metrics added on ROOT itself keep their value
    if profile.dropped_records:
        zeros["dropped_records"] = profile.dropped_records
    return zeros


def device_block(profile: Profile, root: Node) -> dict:
    used: dict[str, set[int]] = {}
    for n in root.walk():
        if n.kernel is not None:
            used.setdefault(n.kernel.device_type, set()).add(n.kernel.device_id)
    block: dict[str, dict[str, dict]] = {}
    for dtype, ids in used.items():
        for did in sorted(ids):
            info = profile.devices.get(dtype, {}).get(did)
            if info is not None:
                block.setdefault(dtype, {})[str(did)] = {
                    "arch": info.arch, "bus_width": info.bus_width_bits, "clock_rate": info.clock_rate_khz,
                    "memory_clock_rate": info.memory_clock_rate_khz, "num_sms": info.num_sms}
    return block


def to_literal(profile: Profile) -> list:
    """The `[tree, device_info]` structure that `json.dump` writes (and `proton.data.get` returns)."""
    root = build_tree(profile.paths, profile.data)
    literal = node_literal(root)
    literal["metrics"] = root_zeros(profile, root)
    return [literal, device_block(profile, root)]


def render(profile: Profile) -> bytes:
    return ("\n" + fast_json.dumps(to_literal(profile)) + "\n").encode()
