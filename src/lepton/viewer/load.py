"""File -> Tree: hatchet JSON or hatchet MessagePack, ours or Proton's, with Proton's frame pruning.

Proton's viewer (`remove_frames`) drops, before anything else:
  - launch-metadata helper nodes (`__proton_launch_metadata`, `__proton_launch_metadata:<kernel>`)
    with everything under them: GPU work done to compute launch metadata, not the user's;
  - nodes with no metrics and no children (scopes that launched nothing, CUDA-graph capture
    placeholders);
  - nodes whose children were all dropped, even when they have metrics of their own.
We apply the same rules so that trees, totals and percentages match proton-viewer.
"""
from __future__ import annotations

import gc
import json
import os
import re
import sys
from contextlib import contextmanager
from dataclasses import dataclass
from itertools import repeat
from numbers import Real

import numpy as np

from ..msgpack import MsgpackError, TruncatedError, unpackb
from .tree import MISSING_FRAME_TYPE, NO_PARENT, Tree

METADATA_SCOPE_NAME = "__proton_launch_metadata"
METADATA_SCOPE_PREFIX = METADATA_SCOPE_NAME + ":"
_MSGPACK_SUFFIXES = (".hatchet_msgpack", ".msgpack")
_LEADING_SPACE = re.compile(rb"[ \t\r\n]*")
# Python frames per tree level are 1 here; JSON cannot nest deeper than ~500 tree levels anyway,
# MessagePack can. Since 3.11 Python-to-Python calls use no C stack, so a higher limit is safe.
_DEEP_RECURSION_LIMIT = 40_000 if sys.version_info >= (3, 11) else 0


class ProfileError(ValueError):
    """The file cannot be shown: missing, not a profile, or truncated. The message is one line."""


def load(path: str | os.PathLike) -> Tree:
    """Reads a hatchet JSON or hatchet MessagePack file (detected from its content)."""
    return load_bytes(read_file(path), os.fspath(path))


def read_file(path: str | os.PathLike) -> bytes:
    try:
        with open(path, "rb") as f:
            return f.read()
    except OSError as err:
        raise ProfileError(f"cannot read '{os.fspath(path)}': {err.strerror or err}") from err


def load_bytes(data: bytes, source: str = "<bytes>") -> Tree:
    with without_gc():
        document = _decode(data, source)
        return from_document(document, source)


@contextmanager
def without_gc():
    """Parsing allocates millions of containers and no cycles; the cyclic collector would walk
    them again and again (a 135 MB profile: json.loads 2.1 s with it, 0.8 s without)."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def _decode(data: bytes, source: str):
    start = _LEADING_SPACE.match(data).end()  # Proton's JSON starts with "\n"
    head = data[start:start + 1]
    if not head:
        raise ProfileError(f"'{source}' is empty, not a profile")
    if head in (b"[", b"{") and not source.endswith(_MSGPACK_SUFFIXES):
        return _decode_json(data, source)
    try:
        return unpackb(data)
    except TruncatedError as err:
        raise ProfileError(f"'{source}' is truncated: {err}") from err
    except MsgpackError as err:
        raise ProfileError(f"'{source}' is not a profile (neither hatchet JSON nor hatchet MessagePack: {err})") from err


def _decode_json(data: bytes, source: str):
    try:
        return json.loads(data)
    except UnicodeDecodeError as err:
        raise ProfileError(f"'{source}' is not a profile (not UTF-8 text)") from err
    except json.JSONDecodeError as err:
        # A file cut short fails at its very end; an unterminated string can only mean that too.
        at_end = err.pos >= len(data.rstrip()) or err.msg.startswith("Unterminated string")
        if at_end:
            raise ProfileError(f"'{source}' is truncated: the JSON ends at byte {len(data)}, inside the tree") from err
        raise ProfileError(f"'{source}' is not a profile (invalid JSON at line {err.lineno}, column {err.colno}: {err.msg})") from err


def from_document(document, source: str = "<document>") -> Tree:
    """Builds a Tree from the decoded `[root_node, device_info]` list."""
    roots, devices = _split_document(document, source)
    old_limit = sys.getrecursionlimit()
    sys.setrecursionlimit(max(old_limit, _DEEP_RECURSION_LIMIT))
    try:
        walk = _walk(roots)
        return _columns(walk, devices, source)
    except RecursionError as err:
        raise ProfileError(f"'{source}' nests its tree too deeply to read") from err
    except (KeyError, TypeError, AttributeError) as err:
        raise ProfileError(f"'{source}' is not a hatchet profile: a tree node is malformed ({err!r})") from err
    finally:
        sys.setrecursionlimit(old_limit)


def _split_document(document, source: str) -> tuple[list[dict], dict]:
    if isinstance(document, dict):
        hint = " (it looks like a Chrome trace; open it in Perfetto)" if "traceEvents" in document else ""
        raise ProfileError(f"'{source}' is not a hatchet profile: expected a list [tree, devices], got an object{hint}")
    if isinstance(document, str):
        raise ProfileError(f"'{source}' is not a hatchet profile: it holds a single string (a Chrome trace?)")
    if not isinstance(document, list) or not document:
        raise ProfileError(f"'{source}' is not a hatchet profile: expected a list [tree, devices]")
    roots = [item for item in document if isinstance(item, dict) and "frame" in item]
    others = [item for item in document if not (isinstance(item, dict) and "frame" in item)]
    if not roots:
        raise ProfileError(f"'{source}' is not a hatchet profile: no tree node (an object with a 'frame') in it")
    devices = others[0] if others else {}
    if not isinstance(devices, dict):
        raise ProfileError(f"'{source}' is not a hatchet profile: the device information is not an object")
    return roots, devices


@dataclass
class _Walk:
    """Every node of the file in preorder, as parallel lists, with Proton's `remove_frames` verdict."""

    frames: list[dict]
    metrics: list[dict]
    parents: list[int]
    depths: list[int]
    survives: list[bool]

    def kept(self) -> list[int]:
        """Positions of the nodes that stay: they survive and so does their parent."""
        if all(self.survives):  # the usual case: nothing to prune
            return list(range(len(self.survives)))
        kept = [False] * len(self.frames)
        parents, survives = self.parents, self.survives
        for i in range(len(kept)):
            parent = parents[i]
            kept[i] = survives[i] and (parent == NO_PARENT or kept[parent])
        return [i for i, keep in enumerate(kept) if keep]


def _walk(roots: list[dict]) -> _Walk:
    """One recursive pass over the nested dicts (the fastest way to walk 200,000 of them in Python;
    locals, not attributes, for the same reason). A node's verdict needs its children's, so it is
    decided on the way back up."""
    walk = _Walk([], [], [], [], [])
    add_frame, add_metrics = walk.frames.append, walk.metrics.append
    add_parent, add_depth, add_survives = walk.parents.append, walk.depths.append, walk.survives.append
    survives = walk.survives

    def visit(node: dict, parent: int, depth: int) -> bool:
        frame = node["frame"]
        metrics = node.get("metrics") or _NO_METRICS
        index = len(survives)
        add_frame(frame)
        add_metrics(metrics)
        add_parent(parent)
        add_depth(depth)
        add_survives(False)
        children = node.get("children")
        if children:
            keep = False
            for child in children:
                if visit(child, index, depth + 1):
                    keep = True
        else:
            keep = bool(metrics)
        if keep:
            name = frame.get("name")
            if name == METADATA_SCOPE_NAME or (name.__class__ is str and name.startswith(METADATA_SCOPE_PREFIX)):
                keep = False
            survives[index] = keep
        return keep

    for root in roots:
        visit(root, NO_PARENT, 0)
    return walk


_NO_METRICS: dict = {}


def _columns(walk: _Walk, devices: dict, source: str) -> Tree:
    kept = walk.kept()
    everything = len(kept) == len(walk.frames)
    pick = (lambda values: values) if everything else (lambda values: [values[i] for i in kept])
    frames, metrics = pick(walk.frames), pick(walk.metrics)
    names = list(map(dict.get, frames, repeat("name")))  # TypeError if a frame is not an object
    if None in names:
        raise ProfileError(f"'{source}' is not a hatchet profile: a frame has no name")
    old_parents = np.array(walk.parents, dtype=np.int64)[kept]
    row_of = np.full(len(walk.frames), NO_PARENT, dtype=np.int64)
    row_of[kept] = np.arange(len(kept))
    key_order, groups = _group_by_metric_names(metrics)
    numbers, texts = _typed_columns(metrics, groups, key_order)
    return Tree(
        parent=np.where(old_parents == NO_PARENT, NO_PARENT, row_of[np.maximum(old_parents, 0)]),
        depth=np.array(pick(walk.depths), dtype=np.int64),
        names=_strings(names),
        frame_types=_strings(list(map(dict.get, frames, repeat("type"), repeat(MISSING_FRAME_TYPE)))),
        numbers=numbers,
        texts=texts,
        root_keys=list(next((m for m, p in zip(metrics, old_parents.tolist()) if p == NO_PARENT), {})),
        key_order=key_order,
        devices=devices,
        in_preorder=True,  # the file's order, minus whole dropped subtrees
    )


def _strings(values: list) -> list[str]:
    return values if set(map(type, values)) <= {str} else [str(v) for v in values]


def _group_by_metric_names(metrics: list[dict]) -> tuple[list[str], dict[tuple, np.ndarray]]:
    """Rows grouped by their tuple of metric names, and every name in order of first use.

    Nodes of one kind carry the same names (kernels: time, count, device...), so each group is
    transposed once instead of appending metric by metric."""
    key_tuples = list(map(tuple, metrics))
    ids_of: dict[tuple, int] = dict.fromkeys(key_tuples)  # in order of first use
    for i, keys in enumerate(ids_of):
        ids_of[keys] = i
    ids = np.array(list(map(ids_of.__getitem__, key_tuples)), dtype=np.int64)
    order = np.argsort(ids, kind="stable")
    bounds = np.searchsorted(ids[order], np.arange(len(ids_of) + 1))
    groups = {keys: order[bounds[i]:bounds[i + 1]] for keys, i in ids_of.items() if keys}
    key_order = list(dict.fromkeys(key for keys in ids_of for key in keys))
    return key_order, groups


def _typed_columns(metrics: list[dict], groups: dict[tuple, np.ndarray], key_order: list[str]):
    n = len(metrics)
    parts: dict[str, list[tuple[np.ndarray, tuple]]] = {key: [] for key in key_order}
    for keys, rows in groups.items():
        dicts = map(metrics.__getitem__, rows.tolist())
        # All dicts of a group list the same names in the same order: transpose their values.
        for key, column in zip(keys, zip(*map(tuple, map(dict.values, dicts)))):
            parts[key].append((rows, column))
    numbers: dict[str, np.ndarray] = {}
    texts: dict[str, np.ndarray] = {}
    for key, pieces in parts.items():
        array = _numeric_column(pieces, n)
        if array is not None:
            numbers[key] = array
        else:  # device ids and types are strings; vector metrics are lists
            texts[key] = text = np.full(n, None, dtype=object)
            for rows, column in pieces:
                text[rows] = _object_array(column)
    return numbers, texts


def _numeric_column(pieces: list[tuple[np.ndarray, tuple]], n: int) -> np.ndarray | None:
    """The metric as a float column (NaN where absent), or None if a value is not a number."""
    array = np.full(n, np.nan)
    for rows, column in pieces:
        # Checking every value's type costs more than converting; numpy would also accept
        # numeric strings ("0"), so the first value of each piece is checked, and the rest must
        # convert to a flat array of floats.
        if not isinstance(column[0], Real):
            return None
        try:
            values = np.array(column, dtype=np.float64)
        except (TypeError, ValueError):
            return None
        if values.ndim != 1:
            return None
        array[rows] = values
    return array


def _object_array(values: tuple) -> np.ndarray:
    """A 1-d object array of `values`, even when they are lists (which numpy would make 2-d)."""
    array = np.empty(len(values), dtype=object)
    if set(map(type, values)) & {list, tuple}:
        for i, value in enumerate(values):
            array[i] = value
    else:
        array[:] = values
    return array
