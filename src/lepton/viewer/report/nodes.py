"""What each node is, for colours, the kernel table and the in-kernel panels: a frame (a scope or
a Python call), a kernel, or something inside a kernel (a sampled source line, an instrumented
scope)."""
from __future__ import annotations

import numpy as np

from ..derive import _text_column
from ..flat_tree import Tree
from .metrics import IN_KERNEL

FRAME, KERNEL, IN_A_KERNEL = 0, 1, 2


def scope_mask(tree: Tree) -> np.ndarray:
    """Instrumented scopes: nodes with a value of one of instrumentation's per-node metrics."""
    mask = np.zeros(len(tree), dtype=bool)
    for key in IN_KERNEL:
        if key in tree.numbers and key not in tree.root_keys:
            mask |= np.isfinite(tree.numbers[key])
    return mask


def node_kinds(tree: Tree) -> np.ndarray:
    """FRAME, KERNEL or IN_A_KERNEL per node. A kernel is a node with a device id that is not a
    scope (Proton puts device ids on scopes too), or the node right above top-level scopes
    (instrumentation's kernel node, which has no metrics); all below a kernel is inside it."""
    scopes = scope_mask(tree)
    kernels = (_text_column(tree, "device_id") != "") & ~scopes
    has_parent = tree.parent >= 0
    parents = tree.parent[has_parent]
    top_scope = scopes[has_parent] & ~scopes[parents]
    kernels[parents[top_scope]] = True
    below = np.zeros(len(tree), dtype=bool)
    below[has_parent] = kernels[parents]
    inside = tree.spread_down(below) | scopes
    kinds = np.full(len(tree), FRAME, dtype=np.int8)
    kinds[kernels & ~inside] = KERNEL
    kinds[inside] = IN_A_KERNEL
    return kinds


def node_path(tree: Tree, node: int, shown: list[str]) -> str:
    """"step/backward/matmul_kernel": the node's call path as shown, without ROOT."""
    parts = []
    while node >= 0:
        parts.append(shown[node])
        node = int(tree.parent[node])
    return "/".join(reversed(parts[:-1])) if len(parts) > 1 else parts[0]
