"""`--output folded`: Brendan Gregg's folded stacks, one line a stack, `ROOT;step;matmul 6.2`,
for flamegraph.pl and inferno-flamegraph.

Each shown node with a self width (viewer.stacks) is one line: its frames from the root down,
joined by ";", a space, and its self width in the metric's unit, so the values add up to ROOT's.
A frame's ";" becomes ":" and its control characters are escaped: one line, one stack.
"""
from __future__ import annotations

from typing import TextIO

from .derive import Column
from .escape import printable
from .flat_tree import Tree
from .stacks import stacks, walk

CHUNK_LINES = 8192  # lines written at a time


def write_folded(out: TextIO, tree: Tree, column: Column, names: list[str], depth: int) -> None:
    """`names`: each node's name as the tree shows it."""
    frames = [printable(name).replace(";", ":") for name in names]
    found = stacks(tree, column.values, depth)
    widths = found.self_width.tolist()
    lines = []
    for node, path in walk(tree, found.order):
        if widths[node] > 0:
            lines.append(f"{';'.join(frames[n] for n in path)} {format(widths[node], '.15g')}\n")
            if len(lines) >= CHUNK_LINES:
                out.write("".join(lines))
                lines.clear()
    out.write("".join(lines))
