"""Row labels that tell nodes apart: a node's name, or as much of its call path as makes it unique.

A profile repeats names under different parents (`fused/1024`, `unfused/1024`, `torch/1024`); a
flat list of bare names (`--print-sorted`) would show "1024" three times. Each label is the
shortest suffix of the node's path, joined by "/", that no other listed node shares; a suffix of
three frames or more shows only its first and last (`step/…/work.py:34@work`) where that is
still unique. At most MAX_PARTS frames are looked at: nodes still alike then (a recursive
function's frames, all of one name) are numbered " #1", " #2", ... in the order listed, which
keeps the work linear in the rows.
"""
from __future__ import annotations

from collections import Counter

import numpy as np

from .flat_tree import NO_PARENT, Tree

SEPARATOR = "/"
ELIDED = "/…/"
MAX_PARTS = 8  # frames a label looks at, at most


def unique_suffixes(tree: Tree, nodes: np.ndarray, names: list[str]) -> list[str]:
    """The label of each of `nodes` (`names`: the shown name of each of tree.name_codes.distinct):
    its name where that is unique among `nodes`, else the shortest unique suffix of its path."""
    positions = tree.name_codes.positions
    parent = tree.parent
    rows = nodes.tolist()
    parts = [[names[positions[node]]] for node in rows]  # the suffix's frames, innermost last
    labels = [p[0] for p in parts]
    top = list(rows)  # the outermost node of each suffix
    for _ in range(MAX_PARTS - 1):
        counts = Counter(labels)
        extended = False
        for i, label in enumerate(labels):
            up = int(parent[top[i]])
            if counts[label] > 1 and up != NO_PARENT:
                parts[i].insert(0, names[positions[up]])
                labels[i] = names[positions[up]] + SEPARATOR + label
                top[i] = up
                extended = True
        if not extended:
            return _elided(parts, labels)
    return _numbered(_elided(parts, labels))


def _elided(parts: list[list[str]], labels: list[str]) -> list[str]:
    """`first/…/last` for a suffix of three frames or more, where no other label is the same."""
    short = [p[0] + ELIDED + p[-1] if len(p) > 2 else label for p, label in zip(parts, labels)]
    counts = Counter(short)
    return [s if counts[s] == 1 else label for s, label in zip(short, labels)]


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
