"""File -> Tree: hatchet JSON or hatchet MessagePack, ours or Proton's, with Proton's frame pruning
(see viewer.walk).
"""
from __future__ import annotations

import gc
import json
import os
import re
import sys
from contextlib import contextmanager
from itertools import chain, repeat

import msgpack
import numpy as np

from .flat_tree import NO_PARENT, Tree
from .walk import Walk, walk_nodes

MSGPACK_SUFFIXES = (".hatchet_msgpack", ".msgpack")
_LEADING_SPACE = re.compile(rb"[ \t\r\n]*")
# Python frames per tree level are 1 in walk_nodes and 2 in _decode_deep_msgpack; JSON cannot nest
# deeper than ~500 tree levels anyway, MessagePack can. Since 3.11 Python-to-Python calls use no C
# stack, so a higher limit is safe.
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


def _first_byte(data: bytes) -> bytes:
    start = _LEADING_SPACE.match(data).end()  # Proton's JSON starts with "\n"
    return data[start:start + 1]


def _is_json(data: bytes, source: str) -> bool:
    return _first_byte(data) in (b"[", b"{") and not source.endswith(MSGPACK_SUFFIXES)


def _decode(data: bytes, source: str):
    if not _first_byte(data):
        raise ProfileError(f"'{source}' is empty, not a profile")
    if _is_json(data, source):
        return _decode_json(data, source)
    return _decode_msgpack(data, source)


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


def _unpacker(data: bytes) -> msgpack.Unpacker:
    # An Unpacker, not unpackb: it tells a file cut short (OutOfData) from other errors.
    unpacker = msgpack.Unpacker(raw=False, strict_map_key=False, max_buffer_size=max(len(data), 1))
    unpacker.feed(data)
    return unpacker


def _decode_msgpack(data: bytes, source: str):
    unpacker = _unpacker(data)
    try:
        document = unpacker.unpack()
    except msgpack.OutOfData as err:
        raise ProfileError(_truncated_msgpack(data, source)) from err
    except msgpack.StackError:
        return _decode_deep_msgpack(data, source)
    except (ValueError, TypeError) as err:  # a bad tag or UTF-8; a map key that is a list
        raise ProfileError(f"'{source}' is not a profile (neither hatchet JSON nor hatchet MessagePack: {err})") from err
    _check_the_end(unpacker, data, source)
    return document


def _check_the_end(unpacker: msgpack.Unpacker, data: bytes, source: str) -> None:
    extra = len(data) - unpacker.tell()
    if extra:
        raise ProfileError(f"'{source}' is not a profile: {extra} bytes follow the MessagePack data")


def _decode_deep_msgpack(data: bytes, source: str) -> list:
    """A hatchet document nested deeper than msgpack's C decoder goes (about 500 tree levels: it
    keeps 1024 open containers), read node by node: only the "children" arrays nest in Python."""
    unpacker = _unpacker(data)

    def node() -> dict:
        fields = {}
        for _ in range(unpacker.read_map_header()):
            key = unpacker.unpack()
            if key == "children":
                fields[key] = [node() for _ in range(unpacker.read_array_header())]  # noqa: F821 (deleted after)
            else:
                fields[key] = unpacker.unpack()
        return fields

    with _tree_errors(source):
        try:
            document = [node() for _ in range(unpacker.read_array_header())]
        except msgpack.OutOfData as err:
            raise ProfileError(_truncated_msgpack(data, source)) from err
        except (ValueError, TypeError) as err:  # deep nesting that is not a tree: StackError again
            raise ProfileError(f"'{source}' nests its tree too deeply to read") from err
        finally:
            del node  # node reaches itself through its closure: a cycle holding the unpacker's copy of the file
    _check_the_end(unpacker, data, source)
    return document


def _truncated_msgpack(data: bytes, source: str) -> str:
    return f"'{source}' is truncated: the MessagePack data ends at byte {len(data)}, inside the tree"


def from_document(document, source: str = "<document>") -> Tree:
    """Builds a Tree from the decoded `[root_node, device_info]` list."""
    roots, devices = _split_document(document, source)
    with _tree_errors(source):
        return _columns(walk_nodes(roots), devices, source)


@contextmanager
def _tree_errors(source: str):
    """Room for deep trees, and a tree of the wrong shape reported as a ProfileError."""
    old_limit = sys.getrecursionlimit()
    sys.setrecursionlimit(max(old_limit, _DEEP_RECURSION_LIMIT))
    try:
        yield
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


def _columns(walk: Walk, devices: dict, source: str) -> Tree:
    """The Tree of the walked nodes that stay."""
    kept = walk.kept()
    if kept is None:
        names, types, metrics = walk.names, walk.types, walk.metrics
        parents, depths = np.array(walk.parents, dtype=np.int64), np.array(walk.depths, dtype=np.int64)
    else:
        picked = kept.tolist()
        names, types, metrics = (list(map(values.__getitem__, picked))
                                 for values in (walk.names, walk.types, walk.metrics))
        row_of = np.full(len(walk.names), NO_PARENT, dtype=np.int64)
        row_of[kept] = np.arange(len(kept))
        old_parents = np.array(walk.parents, dtype=np.int64)[kept]
        parents = np.where(old_parents == NO_PARENT, NO_PARENT, row_of[np.maximum(old_parents, 0)])
        depths = np.array(walk.depths, dtype=np.int64)[kept]
    if None in names:
        raise ProfileError(f"'{source}' is not a hatchet profile: a frame has no name")
    key_order = list(dict.fromkeys(chain.from_iterable(metrics)))  # every name, in order of first use
    numbers, texts = _typed_columns(metrics, key_order)
    return Tree(
        parent=parents,
        depth=depths,
        names=_strings(names),
        frame_types=_strings(types),
        numbers=numbers,
        texts=texts,
        root_keys=list(metrics[0]) if metrics else [],  # row 0 is the first root
        key_order=key_order,
        devices=devices,
        in_preorder=True,  # the file's order, minus whole dropped subtrees
    )


def _strings(values: list) -> list[str]:
    return values if set(map(type, values)) <= {str} else [str(v) for v in values]


_NUMBER_TYPES = frozenset({int, float, bool})


def _typed_columns(metrics: list[dict],
                   key_order: list[str]) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:
    """One column per metric name, read from every node's dict in one C-level pass per name
    (`dict.get` mapped over the nodes: no Python code runs per node). A metric is numeric when
    every value it has is a number (JSON null counts as none); numpy turns the None of the nodes
    without it into NaN."""
    numbers: dict[str, np.ndarray] = {}
    texts: dict[str, np.ndarray] = {}
    for key in key_order:
        values = list(map(dict.get, metrics, repeat(key)))
        kinds = set(map(type, values))
        kinds.discard(type(None))
        if kinds and kinds <= _NUMBER_TYPES:
            numbers[key] = np.array(values, dtype=np.float64)
        else:  # device ids and types are strings; vectors are lists
            texts[key] = object_array(values)
    return numbers, texts


def object_array(values: list) -> np.ndarray:
    """A 1-d object array of `values`, even when they are lists (which numpy would make 2-d)."""
    array = np.empty(len(values), dtype=object)
    if {list, tuple} & set(map(type, values)):
        for i, value in enumerate(values):
            array[i] = value
    else:
        array[:] = values
    return array
