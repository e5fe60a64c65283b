"""The nodes of a hatchet tree in preorder, as parallel lists, with Proton's pruning verdict.

Proton's viewer (`remove_frames`) drops, before anything else:
  - launch-metadata helper nodes (`__proton_launch_metadata`, `__proton_launch_metadata:<kernel>`)
    with everything under them: GPU work done to compute launch metadata, not the user's;
  - nodes with no metrics and no children (scopes that launched nothing, CUDA-graph capture
    placeholders);
  - nodes whose children were all dropped, even when they have metrics of their own.
We apply the same rules so that trees, totals and percentages match proton-viewer. A node's
verdict needs its children's, so walkers decide it on the way back up.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..model.hatchet_names import LAUNCH_METADATA_PREFIX, LAUNCH_METADATA_SCOPE
from .flat_tree import MISSING_FRAME_TYPE, NO_PARENT

NO_METRICS: dict = {}  # shared by the nodes without metrics


@dataclass
class Walk:
    """Every node in preorder: its frame's name and type, its metrics, parent and depth, and
    whether it survives pruning on its own account (kept() also looks at its ancestors)."""

    names: list = field(default_factory=list)
    types: list = field(default_factory=list)
    metrics: list[dict] = field(default_factory=list)
    parents: list[int] = field(default_factory=list)
    depths: list[int] = field(default_factory=list)
    survives: list[bool] = field(default_factory=list)

    def kept(self) -> np.ndarray | None:
        """Positions of the nodes that stay (they survive and so does their parent); None when
        all of them do, the usual case."""
        if all(self.survives):
            return None
        kept = [False] * len(self.survives)
        parents, survives = self.parents, self.survives
        for i in range(len(kept)):
            parent = parents[i]
            kept[i] = survives[i] and (parent == NO_PARENT or kept[parent])
        return np.flatnonzero(kept)


def is_metadata(name) -> bool:
    if name == LAUNCH_METADATA_SCOPE:
        return True
    return name.__class__ is str and name.startswith(LAUNCH_METADATA_PREFIX)


_END = object()


def walk_nodes(roots: list[dict]) -> Walk:
    """One pass over nested node dicts with an explicit stack, so that depth is bounded by memory,
    not by Python's recursion limit. Locals, not attributes: this runs once per node."""
    walk = Walk()
    add_name, add_type, add_metrics = walk.names.append, walk.types.append, walk.metrics.append
    add_parent, add_depth, add_survives = walk.parents.append, walk.depths.append, walk.survives.append
    survives = walk.survives
    # One entry per node whose children are being walked, above one for the roots:
    # [the rest of its children, its index, its name, whether one of its children was kept].
    stack: list[list] = [[iter(roots), NO_PARENT, None, False]]
    while True:
        top = stack[-1]
        node = next(top[0], _END)
        if node is _END:  # top's children are done: its verdict
            stack.pop()
            if not stack:
                return walk
            keep = top[3] and not is_metadata(top[2])
            survives[top[1]] = keep
            if keep:
                stack[-1][3] = True
            continue
        frame = node["frame"]
        name = frame.get("name")
        metrics = node.get("metrics") or NO_METRICS
        index = len(survives)
        add_name(name)
        add_type(frame.get("type", MISSING_FRAME_TYPE))
        add_metrics(metrics)
        add_parent(top[1])
        add_depth(len(stack) - 1)
        children = node.get("children")
        if children:
            add_survives(False)  # decided when its children are done
            stack.append([iter(children), index, name, False])
        else:
            keep = bool(metrics) and not is_metadata(name)
            add_survives(keep)
            if keep:
                top[3] = True


class WalkBuilder:
    """walk_nodes for readers that see a node's parts one at a time, in file order: `open()`, then
    `frame()`, `metrics()` and the node's children (each opened and closed in turn) in any order,
    then `close()`. Used where the file nests too deeply to be decoded into dicts first."""

    def __init__(self) -> None:
        self.walk = Walk()
        # One entry per open node: [index, has a child, one of its children was kept, has a frame].
        self._open: list[list] = []
        self._strings: dict[str, str] = {}  # one object per distinct name or type: 1M nodes, few names

    def open(self) -> None:
        walk, open_nodes = self.walk, self._open
        if open_nodes:
            open_nodes[-1][1] = True
        walk.names.append(None)
        walk.types.append(MISSING_FRAME_TYPE)
        walk.metrics.append(NO_METRICS)
        walk.parents.append(open_nodes[-1][0] if open_nodes else NO_PARENT)
        walk.depths.append(len(open_nodes))
        walk.survives.append(False)
        open_nodes.append([len(walk.survives) - 1, False, False, False])

    def frame(self, frame: dict) -> None:
        entry = self._open[-1]
        name, frame_type = frame.get("name"), frame.get("type", MISSING_FRAME_TYPE)
        self.walk.names[entry[0]] = self._strings.setdefault(name, name) if name.__class__ is str else name
        self.walk.types[entry[0]] = (self._strings.setdefault(frame_type, frame_type)
                                     if frame_type.__class__ is str else frame_type)
        entry[3] = True

    def metrics(self, metrics: dict) -> None:
        if metrics.__class__ is dict and metrics:
            # json's decoder makes new key and value strings for each object read on its own:
            # sharing them saves memory on every kernel node (docs/design.md, "The viewer").
            strings = self._strings
            metrics = {strings.setdefault(key, key): strings.setdefault(value, value) if value.__class__ is str else value
                       for key, value in metrics.items()}
        self.walk.metrics[self._open[-1][0]] = metrics or NO_METRICS

    def close(self, may_be_other: bool = False) -> bool:
        """Ends the innermost open node; False when it had no frame and `may_be_other` (a top-level
        object that is no node, such as the device block): it is then removed again."""
        index, has_child, kept_child, has_frame = self._open.pop()
        walk = self.walk
        if not has_frame:
            if may_be_other and not has_child:
                for column in (walk.names, walk.types, walk.metrics, walk.parents, walk.depths, walk.survives):
                    column.pop()
                return False
            raise KeyError("frame")
        keep = (kept_child if has_child else bool(walk.metrics[index])) and not is_metadata(walk.names[index])
        walk.survives[index] = keep
        if keep and self._open:
            self._open[-1][2] = True
        return True
