"""Which nodes are shown: proton-viewer's -i / -e / -t, and the -f name formats.

proton-viewer runs these as hatchet queries followed by a squash:
  -i RE  `MATCH ("*")->(".", p)->("*") WHERE p."name" =~ RE`: keep the matching frames, their
         ancestors and their descendants;
  -e RE  the negation of `MATCH (".", p)->("*") ...`: drop the matching frames and their subtrees;
  -t T   `["*", {first_metric: ">= T"}]`: keep the nodes whose first metric is >= T (NaN is not);
and `=~` is `re.match`, anchored at the start of the name only.
The squash reconnects each kept node to its nearest kept ancestor and merges siblings that end up
with the same frame. Derived columns keep the values computed on the whole tree (that is why ROOT
still shows the unfiltered total after -i); raw inclusive columns are summed again on the new tree.
"""
from __future__ import annotations

import re
from collections.abc import Sequence

import numpy as np

from .derive import Column
from .flat_tree import NO_PARENT, Tree, depths_of, group_sum

NAME_FORMATS: tuple[str, ...] = ("full", "file_function_line", "function_line", "file_function")


class FilterError(ValueError):
    """A bad pattern, or a filter that leaves nothing to show. The message is one line."""


def compiled(pattern: str) -> re.Pattern:
    """`pattern` compiled, or FilterError saying why it is no regular expression."""
    try:
        return re.compile(pattern)
    except re.error as err:
        raise FilterError(f"invalid regular expression '{pattern}': {err}") from err


def _matches(tree: Tree, pattern: str, aliases: Sequence[str] | None) -> np.ndarray:
    regex = compiled(pattern)
    names = tree.names
    hits = [regex.match(name) is not None for name in names]
    if aliases is not None:  # also match the demangled name, which is what the user sees
        hits = [hit or regex.match(alias) is not None for hit, alias in zip(hits, aliases)]
    return np.array(hits, dtype=bool)


def include_mask(tree: Tree, pattern: str, aliases: Sequence[str] | None = None) -> np.ndarray:
    """Nodes on a root-to-leaf path through a frame whose name matches `pattern`."""
    hits = _matches(tree, pattern, aliases)
    return tree.spread_down(hits) | tree.spread_up(hits)


def exclude_mask(tree: Tree, pattern: str, aliases: Sequence[str] | None = None) -> np.ndarray:
    """Every node except the matching frames and everything below them."""
    return ~tree.spread_down(_matches(tree, pattern, aliases))


def threshold_mask(values: np.ndarray, minimum: float) -> np.ndarray:
    with np.errstate(invalid="ignore"):
        return values >= minimum


def apply_filters(tree: Tree, columns: list[Column], include: str | None = None, exclude: str | None = None,
                  threshold: float | None = None,
                  aliases: Sequence[str] | None = None) -> tuple[Tree, list[Column]]:
    """proton-viewer's `filter_frames`; like it, an empty pattern or a zero threshold is no filter."""
    if include and exclude:
        raise FilterError("cannot use --include and --exclude together")
    if include:
        tree, columns, aliases = _squash(tree, columns, include_mask(tree, include, aliases), aliases,
                                         f"no frame matches --include '{include}'")
    if exclude:
        tree, columns, aliases = _squash(tree, columns, exclude_mask(tree, exclude, aliases), aliases,
                                         f"--exclude '{exclude}' removes every frame")
    if threshold and columns:
        tree, columns, aliases = _squash(tree, columns, threshold_mask(columns[0].values, threshold), aliases,
                                         f"no frame has {columns[0].label} >= {threshold:g}")
    return tree, columns


def _squash(tree, columns, keep, aliases, empty_message):
    if not keep.any():
        raise FilterError(empty_message)
    new_tree, groups, firsts = squash(tree, keep)
    new_columns = [_regroup(new_tree, column, keep, groups, len(new_tree)) for column in columns]
    new_aliases = None if aliases is None else [aliases[i] for i in np.flatnonzero(keep)[firsts]]
    return new_tree, new_columns, new_aliases


def _regroup(tree: Tree, column: Column, keep: np.ndarray, groups: np.ndarray, n_groups: int) -> Column:
    if column.resum_key is not None:
        return Column(column.label, tree.subtree_sum(tree.numbers[column.resum_key]), column.resum_key)
    return Column(column.label, group_sum(column.values[keep], groups, n_groups))


def squash(tree: Tree, keep: np.ndarray) -> tuple[Tree, np.ndarray, np.ndarray]:
    """The tree of the kept nodes, each hung under its nearest kept ancestor, same-frame siblings merged.

    Returns the new tree, the new row of every kept node (in kept order), and for every new row the
    position (in kept order) of the first node merged into it."""
    kept = np.flatnonzero(keep)
    parent_in_kept = _nearest_kept_ancestor(tree, keep)[kept]
    position = np.full(len(tree), -1, dtype=np.int64)
    position[kept] = np.arange(len(kept))
    parents = np.where(parent_in_kept >= 0, position[np.maximum(parent_in_kept, 0)], NO_PARENT)
    groups, group_parents = _merge_same_frames(tree, kept, parents)
    _, firsts = np.unique(groups, return_index=True)
    members = kept[firsts]
    root_keys = set(tree.root_keys)
    numbers = {key: (group_sum(values[kept], groups, len(firsts)) if key in root_keys else values[members])
               for key, values in tree.numbers.items()}
    new_tree = Tree(
        parent=group_parents,
        depth=depths_of(group_parents),
        names=[tree.names[i] for i in members],
        frame_types=[tree.frame_types[i] for i in members],
        numbers=numbers,
        texts={key: values[members] for key, values in tree.texts.items()},
        root_keys=tree.root_keys,
        key_order=tree.key_order,
        devices=tree.devices,
        in_preorder=tree.in_preorder and len(firsts) == len(kept),  # a subsequence of a preorder is one
    )
    return new_tree, groups, firsts


def _nearest_kept_ancestor(tree: Tree, keep: np.ndarray) -> np.ndarray:
    ancestor = np.full(len(tree), NO_PARENT, dtype=np.int64)
    for level in tree.levels[1:]:
        parents = tree.parent[level]
        ancestor[level] = np.where(keep[parents], parents, ancestor[parents])
    return ancestor


def _merge_same_frames(tree: Tree, kept: np.ndarray, parents: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Group ids for the kept nodes (equal for same-frame siblings) and each group's parent group."""
    frames = [(p, tree.names[i], tree.frame_types[i]) for p, i in zip(parents.tolist(), kept.tolist())]
    if len(set(frames)) == len(frames):  # the common case: nothing to merge
        return np.arange(len(kept)), parents
    group_of_frame: dict[tuple, int] = {}
    groups = np.empty(len(kept), dtype=np.int64)
    group_parents: list[int] = []
    for j, (parent, name, frame_type) in enumerate(frames):
        parent_group = NO_PARENT if parent == NO_PARENT else int(groups[parent])  # parents come first
        key = (parent_group, name, frame_type)
        if key not in group_of_frame:
            group_of_frame[key] = len(group_parents)
            group_parents.append(parent_group)
        groups[j] = group_of_frame[key]
    return groups, np.array(group_parents, dtype=np.int64)



def format_name(name: str, style: str) -> str:
    """proton-viewer's `format_frames`, for Python-context names like "/dir/file.py:12@func"."""
    if style == "file_function_line":
        return name.split("/")[-1]
    if style == "function_line":
        return name.split(":")[-1]
    if style == "file_function":
        return f"{name.split('/')[-1].split(':')[0]}@{name.split('@')[-1].split(':')[0]}"
    return name
