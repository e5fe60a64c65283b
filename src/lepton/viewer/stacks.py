"""One metric of a tree as flame-graph stacks: each shown node's call path and its own (self)
width, for the folded and speedscope exports.

A node is as wide as its metric, and at least as wide as its children together: a summed metric
(time, count, samples) is that already; a per-node one (cpu_time, cycles, flops) is taken to hold
its children's, as a cpu_timed_scope's time holds its inner scopes', and a node without a value
is as wide as its children. A node's self width is its width minus its shown children's, so the
self widths add up to the roots' widths: a flame graph's total is ROOT's value.

    ROOT  time 10          ROOT 1        (self: 10 - 6 - 3)
      matmul  6      ->    ROOT;matmul 6
      bias    3            ROOT;bias 3
"""
from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np

from .derive import FORMULAS, MetricError, metric_kind
from .flat_tree import NO_PARENT, Tree
from .render import shown_nodes


ROUNDING = 1e-9  # a self width below this share of its node's width is float residue


@dataclass
class Stacks:
    order: np.ndarray  # the shown nodes, parents before children (the tree's display order)
    self_width: np.ndarray  # per node of the tree; 0 for nodes not shown
    width: np.ndarray  # per node: its own width, children included


def check_adds_up(request: str, output: str) -> None:
    """A flame graph's widths must add up: a rate, an average or util does not."""
    kind = metric_kind(request.strip())
    formula = FORMULAS.get(request.strip().lower())
    if kind == "util" or (formula is not None and formula.shape != "duration"):
        raise MetricError(f"--output {output} draws widths that add up, which '{request}' does not; "
                          "pick a time, count, samples, cycles, bytes or flops metric with -m")


def stacks(tree: Tree, values: np.ndarray, depth: int) -> Stacks:
    """The nodes above `depth` with their self widths for one column of `values` (NaN: none;
    negative values count as 0)."""
    width = np.maximum(np.nan_to_num(values, nan=0.0), 0.0)
    for level in reversed(tree.levels[1:]):
        below = np.zeros(len(tree))
        np.add.at(below, tree.parent[level], width[level])
        parents = np.unique(tree.parent[level])
        width[parents] = np.maximum(width[parents], below[parents])
    order = shown_nodes(tree, depth).order
    shown_children = np.zeros(len(tree))
    children = order[tree.parent[order] != NO_PARENT]
    np.add.at(shown_children, tree.parent[children], width[children])
    self_width = np.zeros(len(tree))
    self_width[order] = width[order] - shown_children[order]
    # A summed column's parent minus its children leaves float residue (6e-8 of 5e8 ns): no width.
    self_width[self_width <= width * ROUNDING] = 0.0
    return Stacks(order, self_width, width)


def walk(tree: Tree, order: np.ndarray) -> Iterator[tuple[int, list[int]]]:
    """Each node of `order` (a depth-first display order) with the nodes from its root down to
    it; the list is reused, so copy what is kept."""
    path: list[int] = []
    for node, depth in zip(order.tolist(), tree.depth[order].tolist()):
        del path[depth:]
        path.append(node)
        yield node, path
