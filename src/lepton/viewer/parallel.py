"""Loading a large hatchet JSON file on two cores.

json.loads and building the columns take ~1.3 s of the ~2 s that lepton-view spends on a
200,000-node (135 MB) profile, all on one core. Proton's writer and ours print the file the same
way (json indent 4, keys sorted, so ROOT's "children" come first and each child of ROOT starts on a
line of 12 spaces and "{"); that lets us cut ROOT's children in two without parsing: a forked
child process loads the second half while this one loads ROOT with the first half, and the two
trees are joined (~0.5 s saved on 2 cores).

Anything unexpected (another layout, no fork, an error on either side, an edge case of the
pruning rules) returns None and the caller loads the file serially, so results never differ.
"""
from __future__ import annotations

import json
import os
import pickle
import re
import sys

import numpy as np

from .load import ProfileError, from_document, load_bytes, without_gc
from .tree import NO_PARENT, Tree

MIN_SPLIT_BYTES = 32 * 1024 * 1024  # smaller files load in well under a second: not worth a fork
_PRETTY_HEAD = re.compile(rb'[ \t\r\n]*\[\n    \{\n        "children": \[\n')
_ROOT_CHILD_START = b"\n            {\n"
_ROOT_CHILDREN_END = b'\n        ],\n        "frame": {'


def load_split(data: bytes, source: str, min_bytes: int = MIN_SPLIT_BYTES) -> Tree | None:
    """The file's Tree, loaded on two processes; None if that cannot be done for this file here."""
    # Linux only: macOS's system libraries are not fork-safe, Windows has no fork.
    if len(data) < min_bytes or not sys.platform.startswith("linux") or (os.cpu_count() or 1) < 2:
        return None
    halves = _split(data)
    if halves is None:
        return None
    first, second = halves
    read_fd, write_fd = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: load the second half, send it back, leave without cleanup
        os.close(read_fd)
        _child(second, write_fd)
    os.close(write_fd)
    pipe = os.fdopen(read_fd, "rb")
    try:
        try:
            head = load_bytes(first, source)
        except ProfileError:
            head = None
        payload = pipe.read()
    finally:
        pipe.close()  # a child still writing gets EPIPE and exits
        os.waitpid(pid, 0)
    tail = _unpack(pickle.loads(payload)) if payload else None
    if head is None or tail is None:
        return None
    return _join(head, tail)


def _split(data: bytes) -> tuple[bytes, bytes] | None:
    """(the file without the second half of ROOT's children, those children as a JSON list)."""
    head = _PRETTY_HEAD.match(data)
    end = data.rfind(_ROOT_CHILDREN_END)
    if head is None or end < 0:
        return None
    cut = data.find(_ROOT_CHILD_START, (head.end() + end) // 2, end)
    if cut < 0 or data[cut - 1:cut] != b",":
        return None
    view = memoryview(data)  # one copy per half, not a slice and then a concatenation
    return b"".join((view[:cut - 1], view[end:])), b"".join((b"[", view[cut:end], b"]"))


def _child(children_json: bytes, write_fd: int) -> None:
    try:
        with without_gc():
            tree: object = from_document([*json.loads(children_json), {}], "<second half>")
    except BaseException:  # noqa: BLE001 - any failure: the parent falls back to a serial load
        tree = None
    try:
        with os.fdopen(write_fd, "wb") as pipe:
            pipe.write(pickle.dumps(_pack(tree), protocol=pickle.HIGHEST_PROTOCOL))
    finally:
        os._exit(0)  # no atexit handlers, no flushing of the parent's buffered output


_SEPARATOR = "\0"


def _pack(tree: Tree | None):
    """The tree in a form that pickles 3x faster: names joined into one string, text columns as
    codes into their few distinct values (100,000 "CUDA" strings are 100,000 objects to pickle)."""
    if tree is None:
        return None
    names = _SEPARATOR.join(tree.names)
    if names.count(_SEPARATOR) != max(len(tree) - 1, 0):
        return tree  # a name with a NUL in it: send the tree as it is
    texts = {}
    for key, values in tree.texts.items():
        if not set(map(type, values)) <= {str, type(None)}:  # vectors and the like go as they are
            texts[key] = values
            continue
        missing = np.equal(values, None)
        categories, codes = np.unique(np.where(missing, "", values).astype(str), return_inverse=True)
        texts[key] = (categories.tolist(), codes, missing)
    return (names, _SEPARATOR.join(tree.frame_types), tree.parent, tree.depth, tree.numbers, texts, tree.key_order)


def _unpack(payload) -> Tree | None:
    if payload is None or isinstance(payload, Tree):
        return payload
    names, frame_types, parent, depth, numbers, packed_texts, key_order = payload
    texts = {}
    for key, packed in packed_texts.items():
        if isinstance(packed, tuple):
            categories, codes, missing = packed
            values = np.array(categories, dtype=object)[codes]
            values[missing] = None
            texts[key] = values
        else:
            texts[key] = packed
    return Tree(parent=parent, depth=depth, names=names.split(_SEPARATOR) if names else [],
                frame_types=frame_types.split(_SEPARATOR) if frame_types else [], numbers=numbers,
                texts=texts, key_order=key_order, in_preorder=True)


def _join(head: Tree, tail: Tree) -> Tree | None:
    """ROOT with the first half (`head`), plus the second half (`tail`, a forest) hung under ROOT."""
    if len(head) == 0 or len(head.roots) != 1 or head.parent[0] != NO_PARENT:
        return None  # ROOT was pruned in the first half alone: the serial load decides
    keys = head.key_order + [k for k in tail.key_order if k not in head.key_order]
    if any((k in head.numbers and k in tail.texts) or (k in head.texts and k in tail.numbers) for k in keys):
        return None
    n_head, n_tail = len(head), len(tail)
    tail_parent = np.where(tail.parent == NO_PARENT, 0, tail.parent + n_head)
    return Tree(
        parent=np.concatenate([head.parent, tail_parent]),
        depth=np.concatenate([head.depth, tail.depth + 1]),
        names=head.names + tail.names,
        frame_types=head.frame_types + tail.frame_types,
        numbers={k: _concat(head.numbers.get(k), tail.numbers.get(k), n_head, n_tail, np.nan)
                 for k in keys if k in head.numbers or k in tail.numbers},
        texts={k: _concat(head.texts.get(k), tail.texts.get(k), n_head, n_tail, None)
               for k in keys if k in head.texts or k in tail.texts},
        root_keys=head.root_keys,
        key_order=keys,
        devices=head.devices,
        in_preorder=True,
    )


def _concat(first, second, n_first: int, n_second: int, missing) -> np.ndarray:
    dtype = object if missing is None else np.float64
    first = first if first is not None else np.full(n_first, missing, dtype=dtype)
    second = second if second is not None else np.full(n_second, missing, dtype=dtype)
    return np.concatenate([first, second])

