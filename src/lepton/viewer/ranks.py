"""Several profiles of one run side by side: the ranks of a torchrun job (`NAME.rank<R>.hatchet`).

Trees are matched by their path of frames (as -diff matches them) into one union tree. The rank
view shows, per node and metric, the min, median and max over the ranks that have the node, and
which rank has the max of the first metric (the slowest, for times). `merge` makes one profile of
them instead: raw metrics summed, or averaged over the ranks that have the node.

One run: files whose recorded command lines differ (the lepton CLI records the same one for every
rank of a torchrun job), whose metric sets differ, or whose device types and architectures differ
come from different runs or machines; that is an error, in one line, rather than a silent mix.
"""
from __future__ import annotations

import os
import re
import warnings
from dataclasses import dataclass, replace
from typing import Literal

import numpy as np

from .derive import Column, derive
from .diff import add_to_union
from .flat_tree import Tree, depths_of
from .load import ProfileError

MergeMode = Literal["sum", "mean"]
SLOWEST_LABEL = "slowest rank"
_RANK = re.compile(r"rank(\d+)")


def rank_label(path: str, index: int) -> int:
    """The rank in `NAME.rank<R>.hatchet`; the file's position where its name has none."""
    found = _RANK.findall(os.path.basename(path))
    return int(found[-1]) if found else index


def check_one_run(trees: list[Tree], paths: list[str]) -> None:
    """Raises ProfileError (one line) where the files cannot be ranks of one run."""
    first, first_path = trees[0], paths[0]
    for tree, path in zip(trees[1:], paths[1:]):
        if tree.run.get("command_line") != first.run.get("command_line"):
            raise ProfileError(f"'{path}' and '{first_path}' come from different runs (their recorded command "
                               f"lines differ: {_words(tree)} vs {_words(first)}); show them one at a time or with -diff")
        if set(tree.key_order) != set(first.key_order):
            raise ProfileError(f"'{path}' and '{first_path}' come from different runs (different metrics: "
                               f"{', '.join(sorted(set(tree.key_order) ^ set(first.key_order)))})")
        if _archs(tree) != _archs(first):
            raise ProfileError(f"'{path}' and '{first_path}' ran on different devices ({_archs(tree)} vs "
                               f"{_archs(first)})")


def _words(tree: Tree) -> str:
    argv = tree.run.get("command_line")
    return " ".join(map(str, argv)) if argv else "none recorded"


def _archs(tree: Tree) -> list[str]:
    return sorted({f"{kind} {info.get('arch')}" for kind, ids in tree.devices.items() if isinstance(ids, dict)
                   for info in ids.values() if isinstance(info, dict)})


@dataclass
class Union:
    """The union of several trees; rows[k][i] is the union row of tree k's node i."""

    tree: Tree
    rows: list[np.ndarray]


def union(trees: list[Tree]) -> Union:
    index: dict[tuple, int] = {}
    parents: list[int] = []
    names: list[str] = []
    types: list[str] = []
    rows = []
    for tree in trees:
        rows.append(add_to_union(tree, index, parents, names, types))
    parent_array = np.array(parents, dtype=np.int64)
    first = trees[0]
    tree = Tree(parent=parent_array, depth=depths_of(parent_array), names=names, frame_types=types,
                root_keys=first.root_keys, key_order=first.key_order, devices=first.devices, run=first.run)
    return Union(tree, rows)


def _spread(values: list[np.ndarray], rows: list[np.ndarray], n: int) -> np.ndarray:
    """(n, ranks) matrix: each rank's values at its union rows, NaN where it lacks the node."""
    matrix = np.full((n, len(values)), np.nan)
    for k, (v, r) in enumerate(zip(values, rows)):
        matrix[r, k] = v
    return matrix


def rank_view(trees: list[Tree], ranks: list[int], metrics: list[str]) -> tuple[Tree, list[Column], list[str]]:
    """The union tree with, per metric, "<label> min", "median", "max" over the ranks, then the
    slowest rank by the first metric (NaN where no rank has a value). Metrics are derived on each
    rank's own tree, so rates and util are per rank."""
    joined = union(trees)
    n = len(joined.tree)
    derived = [derive(tree, metrics) for tree in trees]
    notes = list(dict.fromkeys(w for d in derived for w in d.warnings))
    columns: list[Column] = []
    slowest = np.full(n, np.nan)
    # nanmin/nanmedian warn on all-NaN rows (nodes no rank has a value for): NaN is the answer there.
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        for m in range(len(metrics)):
            matrix = _spread([d.columns[m].values for d in derived], joined.rows, n)
            label = derived[0].columns[m].label
            present = ~np.isnan(matrix).all(axis=1)
            columns += [Column(f"{label} min", np.nanmin(matrix, axis=1)),
                        Column(f"{label} median", np.nanmedian(matrix, axis=1)),
                        Column(f"{label} max", np.nanmax(matrix, axis=1))]
            if m == 0:
                worst = np.argmax(np.where(np.isnan(matrix), -np.inf, matrix), axis=1)
                slowest[present] = np.array(ranks, dtype=float)[worst[present]]
    columns.append(Column(SLOWEST_LABEL, slowest))
    return joined.tree, columns, notes


def merge(trees: list[Tree], how: MergeMode) -> Tree:
    """One profile of several: each raw numeric metric summed over the ranks (NaN-skipping), or
    averaged over the ranks that have a value at the node; text metrics (device ids) from the first
    rank that has one."""
    joined = union(trees)
    n = len(joined.tree)
    numbers = {}
    for key in joined.tree.key_order:
        present = [t for t in trees if key in t.numbers]
        if not present:
            continue
        matrix = _spread([t.numbers[key] if key in t.numbers else np.full(len(t), np.nan) for t in trees],
                         joined.rows, n)
        have = (~np.isnan(matrix)).sum(axis=1)
        total = np.nansum(matrix, axis=1)
        with np.errstate(all="ignore"):
            numbers[key] = np.where(have > 0, total / have if how == "mean" else total, np.nan)
    texts = {}
    for key in {k for t in trees for k in t.texts}:
        column = np.empty(n, dtype=object)
        for tree, rows in zip(reversed(trees), reversed(joined.rows)):  # the first rank's value wins
            if key in tree.texts:
                values = tree.texts[key]
                has = np.array([v is not None for v in values], dtype=bool)
                column[rows[has]] = values[has]
        texts[key] = column
    return replace(joined.tree, numbers=numbers, texts=texts)
