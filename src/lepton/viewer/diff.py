"""`-diff OTHER`: the positional profile minus OTHER, on the union of both trees (hatchet's `sub`).

Nodes are matched by their path of frames. Where both profiles have a value the result is
a - b; where only the positional profile has the node or a value, its value is kept; nodes only in
OTHER show NaN. Nodes found on one side only are marked, as hatchet marks them: "◀" for the
positional profile, "▶" for OTHER.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .derive import Column
from .flat_tree import NO_PARENT, Tree, depths_of

BOTH, ONLY_LEFT, ONLY_RIGHT = 0, 1, 2


@dataclass
class Diff:
    tree: Tree
    columns: list[Column]
    side: np.ndarray | None  # BOTH / ONLY_LEFT / ONLY_RIGHT per node; None when the trees match


@dataclass
class Union:
    """The union of two trees, nodes matched by their path of frames, and where each tree's
    nodes went in it."""

    tree: Tree
    left_row: np.ndarray  # the union row of each of the left tree's nodes
    right_row: np.ndarray
    side: np.ndarray  # BOTH / ONLY_LEFT / ONLY_RIGHT per union node

    def spread(self, left: np.ndarray | None, right: np.ndarray | None) -> tuple[np.ndarray, np.ndarray]:
        """Per-node values of each tree on the union's rows, NaN where a tree lacks the node."""
        a = np.full(len(self.tree), np.nan)
        b = np.full(len(self.tree), np.nan)
        if left is not None:
            a[self.left_row] = left
        if right is not None:
            b[self.right_row] = right
        return a, b


def union(left: Tree, right: Tree) -> Union:
    index: dict[tuple, int] = {}
    parents: list[int] = []
    names: list[str] = []
    frame_types: list[str] = []
    left_row = add_to_union(left, index, parents, names, frame_types)
    right_row = add_to_union(right, index, parents, names, frame_types)
    n = len(names)
    side = np.full(n, ONLY_RIGHT, dtype=np.int8)
    side[left_row] = ONLY_LEFT
    in_right = np.zeros(n, dtype=bool)
    in_right[right_row] = True
    side[(side == ONLY_LEFT) & in_right] = BOTH
    parent_array = np.array(parents, dtype=np.int64)
    tree = Tree(parent=parent_array, depth=depths_of(parent_array), names=names, frame_types=frame_types,
                root_keys=left.root_keys, key_order=left.key_order, devices=left.devices)
    return Union(tree, left_row, right_row, side)


def subtract(left: Tree, left_columns: list[Column], right: Tree, right_columns: list[Column]) -> Diff:
    both = union(left, right)
    columns = []
    for i, column in enumerate(left_columns):
        a, b = both.spread(column.values, right_columns[i].values if i < len(right_columns) else None)
        difference = a - b
        columns.append(Column(column.label, np.where(np.isnan(difference), a, difference)))
    return Diff(both.tree, columns, both.side if (both.side != BOTH).any() else None)


def add_to_union(tree: Tree, index: dict, parents: list, names: list, frame_types: list) -> np.ndarray:
    """Adds `tree`'s nodes to the union of several trees (keyed by parent and frame); returns each
    node's union row (also used by `viewer.ranks`)."""
    rows = np.empty(len(tree), dtype=np.int64)
    for i, parent in enumerate(tree.parent.tolist()):  # parents come before children
        parent_row = NO_PARENT if parent == NO_PARENT else int(rows[parent])
        key = (parent_row, tree.names[i], tree.frame_types[i])
        row = index.get(key)
        if row is None:
            row = index[key] = len(names)
            parents.append(parent_row)
            names.append(tree.names[i])
            frame_types.append(tree.frame_types[i])
        rows[i] = row
    return rows

