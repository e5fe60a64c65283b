"""Row labels that tell nodes apart: a node's name, or as much of its call path as makes it unique.

A profile repeats names under different parents (`fused/1024`, `unfused/1024`, `torch/1024`); a
flat list of bare names (`--print-sorted`) would show "1024" three times. Each label is the
shortest suffix of the node's path, `parent/…/name` joined by "/", that no other listed node shares,
up to MAX_PARTS frames: nodes still alike then (a recursive function's frames, all of one name)
are numbered " #1", " #2", ... in the order listed, which keeps the work linear in the rows.
"""
from __future__ import annotations

from collections import Counter

import numpy as np

from .flat_tree import NO_PARENT, Tree

SEPARATOR = "/"
MAX_PARTS = 8  # frames a label shows at most


def unique_suffixes(tree: Tree, nodes: np.ndarray, names: list[str]) -> list[str]:
    """The label of each of `nodes` (`names`: the shown name of each of tree.name_codes.distinct):
    its name where that is unique among `nodes`, else its path's shortest unique suffix."""
    positions = tree.name_codes.positions
    parent = tree.parent
    rows = nodes.tolist()
    labels = [names[positions[node]] for node in rows]
    top = list(rows)  # the outermost node each label names
    for _ in range(MAX_PARTS - 1):
        counts = Counter(labels)
        extended = False
        for i, label in enumerate(labels):
            up = int(parent[top[i]])
            if counts[label] > 1 and up != NO_PARENT:
                labels[i] = names[positions[up]] + SEPARATOR + label
                top[i] = up
                extended = True
        if not extended:
            return labels
    return _numbered(labels)


def _numbered(labels: list[str]) -> list[str]:
    """Labels that are still alike, numbered in order: "a/b #1", "a/b #2"."""
    counts = Counter(labels)
    seen: Counter[str] = Counter()
    out = []
    for label in labels:
        if counts[label] > 1:
            seen[label] += 1
            label = f"{label} #{seen[label]}"
        out.append(label)
    return out
