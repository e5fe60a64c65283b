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

import json
import os
from numbers import Real

import numpy as np

from ..msgpack import MsgpackError, TruncatedError, unpackb
from .tree import MISSING_FRAME_TYPE, NO_PARENT, Tree

METADATA_SCOPE_NAME = "__proton_launch_metadata"
METADATA_SCOPE_PREFIX = METADATA_SCOPE_NAME + ":"
_MSGPACK_SUFFIXES = (".hatchet_msgpack", ".msgpack")


class ProfileError(ValueError):
    """The file cannot be shown: missing, not a profile, or truncated. The message is one line."""


def load(path: str | os.PathLike) -> Tree:
    """Reads a hatchet JSON or hatchet MessagePack file (detected from its content)."""
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError as err:
        raise ProfileError(f"cannot read '{os.fspath(path)}': {err.strerror or err}") from err
    return load_bytes(data, os.fspath(path))


def load_bytes(data: bytes, source: str = "<bytes>") -> Tree:
    document = _decode(data, source)
    return from_document(document, source)


def _decode(data: bytes, source: str):
    head = data.lstrip()[:1]
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
    nodes, parents, depths = _flatten(roots, source)
    kept = _prune(nodes, parents)
    return _columns(nodes, parents, depths, kept, devices)


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


def _flatten(roots: list[dict], source: str) -> tuple[list[dict], list[int], list[int]]:
    """Every node of the file in preorder, with its parent's position and its depth."""
    nodes: list[dict] = []
    parents: list[int] = []
    depths: list[int] = []
    stack = [(root, NO_PARENT, 0) for root in reversed(roots)]
    while stack:
        node, parent, depth = stack.pop()
        if not isinstance(node, dict) or not isinstance(node.get("frame"), dict):
            raise ProfileError(f"'{source}' is not a hatchet profile: a tree node has no 'frame' object")
        if not isinstance(node.get("metrics", {}), dict) or not isinstance(node.get("children", []), list):
            raise ProfileError(f"'{source}' is not a hatchet profile: a node's 'metrics' or 'children' has the wrong type")
        index = len(nodes)
        nodes.append(node)
        parents.append(parent)
        depths.append(depth)
        for child in reversed(node.get("children", ())):
            stack.append((child, index, depth + 1))
    return nodes, parents, depths


def _is_metadata(name) -> bool:
    return name == METADATA_SCOPE_NAME or (isinstance(name, str) and name.startswith(METADATA_SCOPE_PREFIX))


def _prune(nodes: list[dict], parents: list[int]) -> list[bool]:
    """Proton's `remove_frames`, bottom-up over the preorder list (children come after parents)."""
    n = len(nodes)
    survives = [False] * n  # the node passes the rules, judged on its own subtree
    any_child_survives = [False] * n
    for i in range(n - 1, -1, -1):
        node = nodes[i]
        has_children = bool(node.get("children"))
        if _is_metadata(node["frame"].get("name")):
            ok = False
        elif not node.get("metrics") and not has_children:
            ok = False
        else:
            ok = any_child_survives[i] or not has_children
        survives[i] = ok
        if ok and parents[i] != NO_PARENT:
            any_child_survives[parents[i]] = True
    kept = [False] * n
    for i in range(n):  # a surviving node under a dropped parent goes with it
        kept[i] = survives[i] and (parents[i] == NO_PARENT or kept[parents[i]])
    return kept


def _columns(nodes, parents, depths, kept, devices) -> Tree:
    new_index = [-1] * len(nodes)
    parent_col: list[int] = []
    depth_col: list[int] = []
    names: list[str] = []
    frame_types: list[str] = []
    values_by_key: dict[str, tuple[list[int], list]] = {}
    for i, node in enumerate(nodes):
        if not kept[i]:
            continue
        row = len(names)
        new_index[i] = row
        parent_col.append(NO_PARENT if parents[i] == NO_PARENT else new_index[parents[i]])
        depth_col.append(depths[i])
        frame = node["frame"]
        names.append(str(frame.get("name") or node.get("name", "")))
        frame_types.append(str(frame.get("type", MISSING_FRAME_TYPE)))
        for key, value in node.get("metrics", {}).items():
            column = values_by_key.get(key)
            if column is None:
                column = values_by_key[key] = ([], [])
            column[0].append(row)
            column[1].append(value)
    first_root = next((node for i, node in enumerate(nodes) if kept[i] and parents[i] == NO_PARENT), None)
    numbers, texts = _typed_columns(values_by_key, len(names))
    return Tree(
        parent=np.array(parent_col, dtype=np.int64),
        depth=np.array(depth_col, dtype=np.int64),
        names=names,
        frame_types=frame_types,
        numbers=numbers,
        texts=texts,
        root_keys=list(first_root.get("metrics", {})) if first_root is not None else [],
        key_order=list(values_by_key),
        devices=devices,
    )


def _typed_columns(values_by_key, n: int) -> tuple[dict[str, np.ndarray], dict[str, list]]:
    numbers: dict[str, np.ndarray] = {}
    texts: dict[str, list] = {}
    for key, (rows, values) in values_by_key.items():
        if all(isinstance(v, Real) for v in values):
            column = np.full(n, np.nan)
            column[rows] = np.array(values, dtype=np.float64)
            numbers[key] = column
        else:  # device ids and types are strings; vector metrics are lists
            text_column: list = [None] * n
            for row, value in zip(rows, values):
                text_column[row] = value
            texts[key] = text_column
    return numbers, texts
