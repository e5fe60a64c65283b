"""`lepton-view B -diff A`: B minus A, as proton-viewer subtracts (the positional file minus the
-diff file), with what its output leaves unsaid: a header naming both files and the direction,
each node's change in percent of A, and which nodes only one profile has.

Values: B − A where both profiles have a value; B where only B has one (hatchet keeps it); −A
where only A has one (hatchet prints nan), so that removed work counts as saved and a node's
children add up to its own change.

    A (base.hatchet)     B (new.hatchet)          B − A (+ change from A)
    ROOT 10              ROOT 12                  2.000 ROOT  (+20.0%)
      matmul 6             matmul 9               3.000 matmul  (+50.0%)
      bias 4               (none)                 -4.000 bias  [only in A]
                           softmax 3              3.000 softmax  [only in B]
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from .derive import Column
from .diff import ONLY_LEFT, ONLY_RIGHT, union
from .escape import printable
from .flat_tree import Tree

ONLY_B, ONLY_A = ONLY_LEFT, ONLY_RIGHT  # B is the positional profile, the left side of hatchet's sub
MARKS = {ONLY_B: ("[only in B]", "\033[38;5;160m"), ONLY_A: ("[only in A]", "\033[38;5;28m")}
RESET = "\033[0m"


@dataclass
class Comparison:
    """B − A on the union of both trees, and each side's own values there."""

    tree: Tree
    columns: list[Column]  # B − A per metric
    before: list[np.ndarray]  # A's values per metric, NaN where A has none
    after: list[np.ndarray]  # B's values
    side: np.ndarray  # BOTH, ONLY_B or ONLY_A per node
    b_name: str
    a_name: str

    def change_pct(self, metric: int) -> np.ndarray:
        """(B − A) / |A| in percent, a missing value counting as 0: +inf for a value that only B
        has, -100 for one that only A has, NaN where neither has one."""
        a, b = self.before[metric], self.after[metric]
        neither = np.isnan(a) & np.isnan(b)
        a, b = np.nan_to_num(a), np.nan_to_num(b)
        with np.errstate(divide="ignore", invalid="ignore"):
            pct = np.where(a != 0, (b - a) / np.abs(a) * 100.0, np.sign(b) * np.inf)
        pct[(a == 0) & (b == 0)] = 0.0
        pct[neither] = np.nan
        return pct


def compare(b_tree: Tree, b_columns: list[Column], a_tree: Tree, a_columns: list[Column],
            b_name: str, a_name: str) -> Comparison:
    both = union(b_tree, a_tree)
    columns, before, after = [], [], []
    for b_column, a_column in zip(b_columns, a_columns):
        b, a = both.spread(b_column.values, a_column.values)
        difference = np.nan_to_num(b) - np.nan_to_num(a)
        difference[np.isnan(a) & np.isnan(b)] = np.nan
        columns.append(Column(b_column.label, difference))
        before.append(a)
        after.append(b)
    return Comparison(both.tree, columns, before, after, both.side, b_name, a_name)


def header(comparison: Comparison) -> str:
    """The line above the tree: which file is which, and what the numbers are."""
    b, a = printable(comparison.b_name), printable(comparison.a_name)
    return (f"B − A, with B = {b} and A = {a} (-diff); "
            "(%): the change from A\n")


def notes(comparison: Comparison, color: bool) -> list[str]:
    """Per node, what follows its name: its mark if only one profile has it, else the change of
    each metric in percent of A."""
    changes = [comparison.change_pct(i) for i in range(len(comparison.columns))]
    out = []
    for node, side in enumerate(comparison.side.tolist()):
        if side in MARKS:
            text, code = MARKS[side]
            out.append(f"  {code}{text}{RESET}" if color else f"  {text}")
            continue
        pcts = [pct_text(float(change[node])) for change in changes]
        out.append("" if all(p == "-" for p in pcts) else f"  ({', '.join(pcts)})")
    return out


def pct_text(pct: float) -> str:
    if math.isnan(pct):
        return "-"
    return f"{pct:+.1f}%" if math.isfinite(pct) else ("+inf%" if pct > 0 else "-inf%")


def change_columns(comparison: Comparison) -> list[Column]:
    """The percent changes as columns, for csv and json, after the B − A columns."""
    return [Column(f"{column.label} change %", comparison.change_pct(i))
            for i, column in enumerate(comparison.columns)]


def json_header(comparison: Comparison) -> dict:
    return {"diff": {"B": comparison.b_name, "A": comparison.a_name, "values": "B - A",
                     "change %": "(B - A) / |A| * 100",
                     "only_in": "A or B: the one profile that has the node"}}

