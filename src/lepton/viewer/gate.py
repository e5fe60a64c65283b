"""`--fail-above PCT`: the regression gate of `lepton-view B -diff A` for CI.

A node is slower when its first metric got worse by more than PCT percent of A: more time,
samples, cycles or bytes, or less of a rate (tflop16/s, gbyte/s, util). A node that only B has
counts as slower by any PCT when it has a value (new work); a node only A has never does (and
for a rate only nodes both have are compared). Only
the nodes the tree shows are checked, ROOT (the total) among them, so -d, -i, -e and -t choose
what the gate looks at.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from .compare import Comparison, pct_text
from .diff import BOTH
from .escape import printable
from .flat_tree import NO_PARENT, Tree

EXIT_SLOWER = 1  # lepton-view's exit code when the gate fails
WORST_SHOWN = 10  # offenders printed; json lists them all


@dataclass
class Slower:
    node: int
    change_pct: float  # +inf for a node only B has
    before: float  # A's value, NaN where A has none
    after: float


@dataclass
class Gate:
    metric: str  # the column's label
    threshold_pct: float
    slower: list[Slower]  # worst first, and of equal changes the deepest

    @property
    def passed(self) -> bool:
        return not self.slower


def check(comparison: Comparison, threshold_pct: float, higher_is_better: bool, nodes: np.ndarray) -> Gate:
    """The nodes among `nodes` whose first metric got worse by more than `threshold_pct`."""
    change = comparison.change_pct(0)
    worse = -change if higher_is_better else change
    before, after = comparison.before[0], comparison.after[0]
    offenders = nodes[np.nan_to_num(worse[nodes], nan=-np.inf) > threshold_pct]
    if higher_is_better:  # a rate of a node one profile lacks compares nothing
        offenders = offenders[comparison.side[offenders] == BOTH]
    depth = comparison.tree.depth
    # Of equal changes the deepest first: the kernel before the scopes it slowed down.
    ranked = sorted(offenders.tolist(), key=lambda node: (-worse[node], -depth[node]))
    slower = [Slower(node, float(change[node]), float(before[node]), float(after[node])) for node in ranked]
    return Gate(comparison.columns[0].label, threshold_pct, slower)


def report(gate: Gate, comparison: Comparison, names: list[str]) -> str:
    """What stderr says: the verdict in one line, then the worst offenders, one a line.
    `names`: each node's name as the tree shows it."""
    b, a = printable(comparison.b_name), printable(comparison.a_name)
    where = f"in {printable(gate.metric)} (B = {b}, A = {a})"
    limit = f"{gate.threshold_pct:g}%"
    if gate.passed:
        return f"lepton-view: no node got slower by more than {limit} {where}\n"
    count = len(gate.slower)
    lines = [f"lepton-view: {count} node{'s' if count > 1 else ''} got slower by more than {limit} {where}; "
             f"{'the worst' if count > WORST_SHOWN else 'worst first'}:"]
    for item in gate.slower[:WORST_SHOWN]:
        change = "new" if math.isinf(item.change_pct) else pct_text(item.change_pct)
        before_after = f"{_number(item.before)} → {_number(item.after)}"
        path = printable(path_of(comparison.tree, item.node, names))
        lines.append(f"  {change:>8}  {before_after}  {path}")
    if count > WORST_SHOWN:
        lines.append(f"  ... and {count - WORST_SHOWN} more (--output json lists them all)")
    return "\n".join(lines) + "\n"


def _number(value: float) -> str:
    return "-" if math.isnan(value) else f"{value:.3f}"


def as_json(gate: Gate, comparison: Comparison, names: list[str]) -> dict:
    return {"gate": {"metric": gate.metric, "fail_above %": gate.threshold_pct, "passed": gate.passed,
                     "slower": [{"id": s.node, "path": path_of(comparison.tree, s.node, names),
                                 "change %": s.change_pct if math.isfinite(s.change_pct) else None,
                                 "A": None if math.isnan(s.before) else s.before,
                                 "B": None if math.isnan(s.after) else s.after} for s in gate.slower]}}


def path_of(tree: Tree, node: int, names: list[str]) -> str:
    """The node's call path below its root ("step/matmul"), or "ROOT (the total)" for a root."""
    parts = []
    while node != NO_PARENT:
        parts.append(names[node])
        node = int(tree.parent[node])
    if len(parts) == 1:
        return f"{parts[0]} (the total)"
    return "/".join(reversed(parts[:-1]))
