"""Proton's hatchet JSON: `[tree, device_info]`, keys sorted, indent 4, a newline before and after;
nodes more than `INDENTED_LEVELS` below ROOT on one line each (see below).

Byte-compatible with Triton 3.6's writer (checked against `tests/data/proton_3_6`): kernel nodes carry
`time (ns)`, `count`, `device_id` and `device_type` (ids as strings); ROOT carries a zero for
`count` and `time (ns)` when there are kernels and for every non-exclusive user metric, which is what
makes proton-viewer treat those metrics as inclusive.

A NaN or ±Inf metric value (or vector element) is written as `null`, as Proton's writer (nlohmann
json) writes it: bare `NaN`/`Infinity` is not JSON, and strict readers (orjson, browsers, Perfetto)
reject the whole file. `null` reads back as a missing value. `to_literal`, which `proton.data.get`
returns, holds None there for the same reason.
"""
from __future__ import annotations

from ..model.gc_pause import gc_paused
from ..model.hatchet_names import COUNT, DEVICE_ID, DEVICE_TYPE, DROPPED_RECORDS, RUN_METADATA_KEY, TIME_NS
from ..model.profile import Profile
from ..model.tree import Node, TreeData, build_tree
from . import fast_json


def _finite(value):
    """`value` with NaN and ±Inf replaced by None (JSON `null`), in a scalar or a vector."""
    if type(value) is float:
        return value if value - value == 0.0 else None  # inf - inf and nan - x are NaN
    if type(value) is list and any(type(v) is float and v - v != 0.0 for v in value):
        return [v if type(v) is not float or v - v == 0.0 else None for v in value]
    return value


def _metrics(node: Node) -> dict:
    metrics = {name: _finite(v) for name, v in node.metrics.items()}
    if node.kernel is not None:
        k = node.kernel
        metrics.update({COUNT: k.count, DEVICE_ID: str(k.device_id), DEVICE_TYPE: k.device_type,
                        TIME_NS: k.time_ns})
    return metrics


def node_literal(node: Node) -> dict:
    """`node` and its subtree as hatchet's nested dicts, children sorted by name. Built with an
    explicit stack: scopes nest thousands deep, past Python's recursion limit."""
    top = {"children": [], "frame": {"name": node.name, "type": "function"}, "metrics": _metrics(node)}
    stack = [(node, top["children"])]
    while stack:
        parent, out = stack.pop()
        children = parent.children
        for name in sorted(children):
            child = children[name]
            literal = {"children": [], "frame": {"name": name, "type": "function"}, "metrics": _metrics(child)}
            out.append(literal)
            if child.children:
                stack.append((child, literal["children"]))
    return top


def root_zeros(profile: Profile, root: Node) -> dict:
    data = profile.data
    assert isinstance(data, TreeData)
    zeros = {}
    if data.kernels:
        zeros.update({COUNT: 0, TIME_NS: 0})
    for name, spec in data.specs.items():
        if not spec.per_node:
            zeros[name] = 0
    zeros.update(root.metrics)  # metrics added on ROOT itself keep their value
    if profile.dropped_records:
        zeros[DROPPED_RECORDS] = profile.dropped_records
    return zeros


def device_block(profile: Profile, root: Node) -> dict:
    used: dict[str, set[int]] = {}
    for n in root.walk():
        if n.kernel is not None:
            used.setdefault(n.kernel.device_type, set()).add(n.kernel.device_id)
    cycle_devices = getattr(profile.data, "cycle_devices", ())  # instrumented kernels have no KernelStats
    for dtype, infos in profile.devices.items():
        used.setdefault(dtype, set()).update(d for d in cycle_devices if d in infos)
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
    with gc_paused():
        root = build_tree(profile.paths, profile.data)
        literal = node_literal(root)
    literal["metrics"] = {name: _finite(v) for name, v in root_zeros(profile, root).items()}
    metadata = profile.metadata()
    if metadata:
        literal[RUN_METADATA_KEY] = metadata
    return [literal, device_block(profile, root)]


# Nodes down to this many levels below ROOT are indented as Proton writes them (4 spaces a nesting
# level, two nesting levels a tree level); deeper nodes and their subtrees are written on one line
# each (json.dumps without indent), so that the file grows linearly with depth. Why 100 and what it
# costs: docs/design.md, "Deep trees in hatchet JSON".
INDENTED_LEVELS = 100
# The JSON nesting of a node `d` levels below ROOT: [ (0), ROOT { (1), "children" [ (2), ... it at 2d + 1.
COMPACT_FROM = 2 * (INDENTED_LEVELS + 1) + 1


def render(profile: Profile) -> bytes:
    pieces = fast_json.parts(to_literal(profile), COMPACT_FROM)
    pieces.insert(0, "\n")
    pieces.append("\n")
    text = "".join(pieces)
    del pieces  # at most two copies of the text alive at once: a deep profile's text is large
    return text.encode()
