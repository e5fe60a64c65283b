"""The loaded calling-context tree as flat columns, so 200,000 nodes derive and filter in numpy.

Node `i` is row `i` of every column. Rows are ordered so that a parent always comes before its
children (a file's preorder, or a subsequence of one); every algorithm here relies on that and on
nothing else, so filtered and merged trees keep working.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property

import numpy as np

NO_PARENT = -1
# hatchet gives a frame without "type" the type "None"; children are sorted by (name, type).
MISSING_FRAME_TYPE = "None"


@dataclass(frozen=True)
class Codes:
    """A column of strings as its distinct values and, per node, the position of its value among
    them. A profile repeats a few names over many nodes: work per name (demangling, sorting) is
    then done once per distinct name."""

    distinct: list[str]
    positions: np.ndarray  # int64, one per node

    @staticmethod
    def of(values: list[str]) -> Codes:
        if values and values[-1] == values[0] and values.count(values[0]) == len(values):  # frame types
            return Codes([values[0]], np.zeros(len(values), dtype=np.int64))
        position = dict.fromkeys(values)
        for i, value in enumerate(position):
            position[value] = i
        positions = np.fromiter(map(position.__getitem__, values), dtype=np.int64, count=len(values))
        return Codes(list(position), positions)

    def values(self) -> list[str]:
        return self.pick(self.distinct).tolist()

    def pick(self, per_distinct: list) -> np.ndarray:
        """An object array with, for each node, what its value stands for in `per_distinct`
        (one entry per distinct value)."""
        table = np.empty(len(per_distinct), dtype=object)
        table[:] = per_distinct
        return table[self.positions]


@dataclass
class Tree:
    """A calling-context tree with its metrics, as read from a hatchet file.

    `numbers` holds every numeric metric of the file, keyed by its raw name ("time (ns)"), NaN
    where a node has no value. `texts` holds the other metrics (device_id, device_type, vectors)
    as object arrays, None where a node has no value.
    `root_keys` are the metric names on the first root: Proton's viewer sums exactly those over
    subtrees and treats all others as per-node values.
    """

    parent: np.ndarray  # int64, NO_PARENT for a root
    depth: np.ndarray  # int64, 0 for a root
    names: list[str]
    frame_types: list[str]
    numbers: dict[str, np.ndarray] = field(default_factory=dict)
    texts: dict[str, np.ndarray] = field(default_factory=dict)
    root_keys: list[str] = field(default_factory=list)
    key_order: list[str] = field(default_factory=list)  # every metric name, in order of first use
    devices: dict = field(default_factory=dict)  # {"CUDA": {"0": {"arch": "90", ...}}}
    # True when rows are a depth-first preorder (each subtree contiguous), as read from a file;
    # lets the renderer skip the traversal when siblings are also in display order.
    in_preorder: bool = False
    # The run's metadata from the first root's key `model.hatchet_names.RUN_METADATA_KEY`: {"command_line":
    # [...], "cwd": ...}; empty for Proton's files and files read node by node (viewer.deep).
    run: dict = field(default_factory=dict)

    def __len__(self) -> int:
        return len(self.names)

    @cached_property
    def name_codes(self) -> Codes:
        return Codes.of(self.names)

    @cached_property
    def frame_type_codes(self) -> Codes:
        return Codes.of(self.frame_types)

    @cached_property
    def levels(self) -> list[np.ndarray]:
        """Node indices grouped by depth: levels[d] holds every node at depth d."""
        if len(self) == 0:
            return []
        depth = self.depth.astype(np.uint16) if self.depth.max() < 2 ** 16 else self.depth
        order = np.argsort(depth, kind="stable")  # a radix sort for 16-bit ints
        bounds = np.searchsorted(self.depth[order], np.arange(int(self.depth.max()) + 2))
        return [order[bounds[d]:bounds[d + 1]] for d in range(len(bounds) - 1)]

    @cached_property
    def children(self) -> list[list[int]]:
        """children[i] lists the children of node i in row order (not yet sorted by frame)."""
        result: list[list[int]] = [[] for _ in range(len(self))]
        for child, parent in enumerate(self.parent.tolist()):
            if parent != NO_PARENT:
                result[parent].append(child)
        return result

    @cached_property
    def roots(self) -> list[int]:
        return np.flatnonzero(self.parent == NO_PARENT).tolist()

    def self_check(self) -> None:
        """Asserts what every algorithm here relies on: equal-length columns, parents before
        children, depth = parent's depth + 1."""
        n = len(self)
        assert len(self.parent) == len(self.depth) == len(self.frame_types) == n
        assert all(len(column) == n for column in [*self.numbers.values(), *self.texts.values()])
        rows = np.arange(n)
        has_parent = self.parent != NO_PARENT
        assert (self.parent[has_parent] < rows[has_parent]).all(), "a parent comes after its child"
        assert (self.depth[~has_parent] == 0).all()
        assert (self.depth[has_parent] == self.depth[self.parent[has_parent]] + 1).all()

    def subtree_sum(self, values: np.ndarray) -> np.ndarray:
        """Each node's value plus all its descendants' values, skipping NaN.

        A subtree with no value at all stays NaN, as hatchet's `sum(min_count=1)` leaves it; one
        holding inf and -inf is NaN, and sums past the float range inf, without numpy's warnings."""
        total = np.where(np.isnan(values), 0.0, values)
        present = (~np.isnan(values)).astype(np.int64)
        with np.errstate(invalid="ignore", over="ignore"):
            for level in reversed(self.levels[1:]):
                parents = self.parent[level]
                np.add.at(total, parents, total[level])
                np.add.at(present, parents, present[level])
        return np.where(present > 0, total, np.nan)

    def spread_down(self, flags: np.ndarray) -> np.ndarray:
        """True for every node that is flagged or has a flagged ancestor."""
        out = flags.copy()
        for level in self.levels[1:]:
            out[level] |= out[self.parent[level]]
        return out

    def spread_up(self, flags: np.ndarray) -> np.ndarray:
        """True for every node that is flagged or has a flagged descendant."""
        out = flags.copy()
        for level in reversed(self.levels[1:]):
            marked = level[out[level]]
            out[self.parent[marked]] = True
        return out


def depths_of(parents: np.ndarray) -> np.ndarray:
    """Depth of every node from its parent index (parents come before children)."""
    depth = [0] * len(parents)
    for i, parent in enumerate(parents.tolist()):
        if parent != NO_PARENT:
            depth[i] = depth[parent] + 1
    return np.array(depth, dtype=np.int64)


def group_sum(values: np.ndarray, groups: np.ndarray, n_groups: int) -> np.ndarray:
    """Sums `values` by group, NaN-skipping; a group with no value is NaN (pandas `min_count=1`)."""
    present = ~np.isnan(values)
    sums = np.bincount(groups[present], weights=values[present], minlength=n_groups)
    counts = np.bincount(groups[present], minlength=n_groups)
    return np.where(counts > 0, sums, np.nan)
