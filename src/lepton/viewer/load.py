"""File -> Tree: hatchet JSON or hatchet MessagePack, ours or Proton's, with Proton's frame pruning
(see viewer.walk).
"""
from __future__ import annotations

import json
import os
import re
import stat
import sys
import warnings
from collections.abc import Callable
from contextlib import contextmanager
from itertools import chain, repeat

import msgpack
import numpy as np

from ..model.gc_pause import gc_paused
from ..model.hatchet_names import RUN_METADATA_KEY
from ..progress import progress
from . import deep
from .flat_tree import NO_PARENT, Tree
from .walk import Walk, WalkBuilder, walk_nodes

MSGPACK_SUFFIXES = (".hatchet_msgpack", ".msgpack")
_LEADING_SPACE = re.compile(rb"[ \t\r\n]*")
_UTF8_BOM = b"\xef\xbb\xbf"  # Notepad and PowerShell write it; json.loads(bytes) skips it


class ProfileError(ValueError):
    """The file cannot be shown: missing, not a profile, or truncated. The message is one line."""


class ProfileWarning(UserWarning):
    """The file is shown, but not quite as written (numbers beyond the float range). One line;
    `lepton-view` prints it as `lepton-view: warning: ...`."""


def load(path: str | os.PathLike) -> Tree:
    """Reads a hatchet JSON or hatchet MessagePack file (detected from its content)."""
    with progress(_loading(path)):
        return load_bytes(read_file(path), os.fspath(path))


def _loading(path: str | os.PathLike) -> str:
    """The progress line's label: the file and its size."""
    try:
        size = f" ({os.path.getsize(path) / 1e6:,.0f} MB)"
    except OSError:
        size = ""
    return f"lepton-view: loading {os.fspath(path)}{size}"


MAX_BYTES_VARIABLE = "LEPTON_VIEW_MAX_BYTES"
DEFAULT_MAX_BYTES = 16 << 30  # generous: a million-node tree is a few hundred MB of JSON
_KINDS = ((stat.S_ISDIR, "a folder"), (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
          (stat.S_ISFIFO, "a FIFO (named pipe)"), (stat.S_ISSOCK, "a socket"))


def max_bytes() -> int:
    """The largest file the viewer reads: `LEPTON_VIEW_MAX_BYTES` (0: no limit), else 16 GiB."""
    text = os.environ.get(MAX_BYTES_VARIABLE, "").strip()
    if not text:
        return DEFAULT_MAX_BYTES
    try:
        value = int(text)
    except ValueError:
        value = -1
    if value < 0:
        raise ProfileError(f"{MAX_BYTES_VARIABLE}={text!r} is not a number of bytes (a whole number; 0: no limit)")
    return value or sys.maxsize


def read_file(path: str | os.PathLike) -> bytes:
    """The bytes of a regular file (symbolic links followed), read only if it is one and within the
    size limit (`max_bytes`): a link to /dev/zero would fill the memory, a FIFO wait for ever."""
    name = os.fspath(path)
    limit = max_bytes()
    try:
        _check_regular(name, os.stat(name))
        # O_NONBLOCK: should the name have become a FIFO since, opening it does not wait for a writer.
        fd = os.open(name, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
        try:
            info = os.fstat(fd)
            _check_regular(name, info)
            _check_size(name, info.st_size, limit)
            return _read_all(fd, name, info.st_size, limit)
        finally:
            os.close(fd)
    except OSError as err:
        raise ProfileError(f"cannot read '{name}': {err.strerror or err}") from err


def _check_regular(name: str, info: os.stat_result) -> None:
    if stat.S_ISREG(info.st_mode):
        return
    kind = next((what for test, what in _KINDS if test(info.st_mode)), "not a file")
    target = os.path.realpath(name)
    via = f" ({target})" if os.path.islink(name) and target != os.path.abspath(name) else ""
    raise ProfileError(f"cannot read '{name}': it is {kind}{via}, not a regular file; lepton-view reads profile files")


def _check_size(name: str, size: int, limit: int) -> None:
    if size > limit:
        raise ProfileError(f"'{name}' is {size} bytes, over lepton-view's limit of {limit} bytes; to read it "
                           f"anyway, set {MAX_BYTES_VARIABLE}=<bytes> (0: no limit)")


def _read_all(fd: int, name: str, size: int, limit: int) -> bytes:
    """The file's bytes: `size` as its status says, and more while it grows (or says 0, as /proc's
    files do), up to `limit`."""
    with open(fd, "rb", closefd=False) as f:
        data = f.read(size + 1) if size else b""
        if len(data) <= size and size:
            return data
        grown = bytearray(data)
        while True:
            chunk = f.read(min(1 << 24, limit + 1 - len(grown)) or 1)
            if not chunk:
                return bytes(grown)
            grown += chunk
            _check_size(name, len(grown), limit)


def load_bytes(data: bytes, source: str = "<bytes>") -> Tree:
    """A hatchet file's bytes as a Tree, at any depth: a file nested deeper than the C decoders
    go is read again node by node (viewer.deep)."""
    with gc_paused():
        document = _decoded(data, source)
        if document is _TOO_DEEP:
            if _is_json(data, source):
                with _json_errors(data, source):
                    text = data.decode(json.detect_encoding(data), "surrogatepass")  # as json.loads does
                    return _deep_tree(source, lambda builder: deep.read_json(text, builder))
            return _deep_msgpack_tree(data, source)
        return from_document(document, source)


def _decoded(data: bytes, source: str):
    """The decoded document (JSON or MessagePack), or _TOO_DEEP when it nests deeper than the C
    decoders go."""
    if not _first_byte(data):
        raise ProfileError(f"'{source}' is empty, not a profile")
    if _is_json(data, source):
        with _json_errors(data, source):
            try:
                return json.loads(data)
            except RecursionError:
                return _TOO_DEEP
    return _decode_msgpack(data, source)


def _first_byte(data: bytes) -> bytes:
    start = len(_UTF8_BOM) if data.startswith(_UTF8_BOM) else 0
    start = _LEADING_SPACE.match(data, start).end()  # Proton's JSON starts with "\n"
    return data[start:start + 1]


def load_document(path: str | os.PathLike) -> list:
    """A hatchet file's decoded document, `[tree, devices]` (JSON or MessagePack), for tools that walk
    the nested tree themselves (`viewer.lines`)."""
    with progress(_loading(path)):
        data, source = read_file(path), os.fspath(path)
        with gc_paused():
            document = _decoded(data, source)
    if document is _TOO_DEEP:
        raise ProfileError(f"'{source}' nests too deep for this view; lepton-view reads it")
    return document


def _is_json(data: bytes, source: str) -> bool:
    return _first_byte(data) in (b"[", b"{") and not source.endswith(MSGPACK_SUFFIXES)


@contextmanager
def _json_errors(data: bytes, source: str):
    try:
        yield
    except UnicodeDecodeError as err:
        raise ProfileError(f"'{source}' is not a profile (not UTF-8 text)") from err
    except json.JSONDecodeError as err:
        # A file cut short fails at its very end; an unterminated string can only mean that too.
        at_end = err.pos >= len(err.doc.rstrip()) or err.msg.startswith("Unterminated string")
        if at_end:
            raise ProfileError(f"'{source}' is truncated: the JSON ends at byte {len(data)}, inside the tree") from err
        raise ProfileError(f"'{source}' is not a profile (invalid JSON at line {err.lineno}, column {err.colno}: "
                           f"{err.msg})") from err


def _unpacker(data: bytes) -> msgpack.Unpacker:
    # An Unpacker, not unpackb: it tells a file cut short (OutOfData) from other errors.
    unpacker = msgpack.Unpacker(raw=False, strict_map_key=False, max_buffer_size=max(len(data), 1))
    unpacker.feed(data)
    return unpacker


_TOO_DEEP = object()


def _decode_msgpack(data: bytes, source: str):
    """The decoded document, or _TOO_DEEP when it nests deeper than msgpack's C decoder goes."""
    unpacker = _unpacker(data)
    try:
        document = unpacker.unpack()
    except msgpack.OutOfData as err:
        raise ProfileError(_truncated_msgpack(data, source)) from err
    except msgpack.StackError:
        return _TOO_DEEP
    except (ValueError, TypeError) as err:  # a bad tag or UTF-8; a map key that is a list
        raise ProfileError(f"'{source}' is not a profile (neither hatchet JSON nor hatchet MessagePack: {err})") from err
    _check_the_end(unpacker, data, source)
    return document


def _check_the_end(unpacker: msgpack.Unpacker, data: bytes, source: str) -> None:
    extra = len(data) - unpacker.tell()
    if extra:
        raise ProfileError(f"'{source}' is not a profile: {extra} bytes follow the MessagePack data")


def _deep_msgpack_tree(data: bytes, source: str) -> Tree:
    unpacker = _unpacker(data)
    try:
        tree = _deep_tree(source, lambda builder: deep.read_msgpack(data, unpacker, builder))
    except msgpack.OutOfData as err:
        raise ProfileError(_truncated_msgpack(data, source)) from err
    except msgpack.StackError as err:  # deep nesting that is not a tree
        raise ProfileError(f"'{source}' nests its tree too deeply to read") from err
    except ValueError as err:  # ProfileError is one too: it goes on as it is
        if isinstance(err, ProfileError):
            raise
        raise ProfileError(f"'{source}' is not a hatchet profile: a tree node is malformed ({err})") from err
    _check_the_end(unpacker, data, source)
    return tree


def _truncated_msgpack(data: bytes, source: str) -> str:
    return f"'{source}' is truncated: the MessagePack data ends at byte {len(data)}, inside the tree"


def _deep_tree(source: str, read: Callable[[WalkBuilder], list]) -> Tree:
    """The Tree of a file read node by node by `read`, which returns the top-level values that
    are no tree node."""
    builder = WalkBuilder()
    with _tree_errors(source):
        others = read(builder)
        if not builder.walk.names:
            raise ProfileError(f"'{source}' is not a hatchet profile: no tree node (an object with a 'frame') in it")
        return _columns(builder.walk, _devices(others, source), source)


def from_document(document, source: str = "<document>") -> Tree:
    """Builds a Tree from the decoded `[root_node, device_info]` list."""
    roots, devices = _split_document(document, source)
    with _tree_errors(source):
        tree = _columns(walk_nodes(roots), devices, source)
    run = roots[0].get(RUN_METADATA_KEY)
    if isinstance(run, dict):
        tree.run = run
    return tree


@contextmanager
def _tree_errors(source: str):
    """A tree of the wrong shape, or nested too deeply outside the tree, as a ProfileError."""
    try:
        yield
    except RecursionError as err:
        raise ProfileError(f"'{source}' nests its tree too deeply to read") from err
    except (KeyError, TypeError, AttributeError) as err:
        raise ProfileError(f"'{source}' is not a hatchet profile: a tree node is malformed ({err!r})") from err


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
    return roots, _devices(others, source)


def _devices(others: list, source: str) -> dict:
    """The device block: the first top-level value that is no tree node."""
    devices = others[0] if others else {}
    if not isinstance(devices, dict):
        raise ProfileError(f"'{source}' is not a hatchet profile: the device information is not an object")
    return devices


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
    numbers, texts = _typed_columns(metrics, key_order, source)
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


def _typed_columns(metrics: list[dict], key_order: list[str],
                   source: str = "<document>") -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:
    """One column per metric name, read from every node's dict in one C-level pass per name
    (`dict.get` mapped over the nodes: no Python code runs per node). A metric is numeric when
    every value it has is a number (JSON null counts as none); numpy turns the None of the nodes
    without it into NaN. An integer beyond the float range (JSON holds 10**400) becomes ±inf, with
    one `ProfileWarning` for the file."""
    numbers: dict[str, np.ndarray] = {}
    texts: dict[str, np.ndarray] = {}
    too_large = []
    for key in key_order:
        values = list(map(dict.get, metrics, repeat(key)))
        kinds = set(map(type, values))
        kinds.discard(type(None))
        if kinds and kinds <= _NUMBER_TYPES:
            try:
                numbers[key] = np.array(values, dtype=np.float64)
            except OverflowError:
                numbers[key] = np.array(list(map(_to_float, values)), dtype=np.float64)
                too_large.append(key)
        else:  # device ids and types are strings; vectors are lists
            texts[key] = object_array(values)
    if too_large:
        names = ", ".join(repr(key) for key in too_large)
        one = len(too_large) == 1
        warnings.warn(f"'{source}': metric{'' if one else 's'} {names} hold{'s' if one else ''} integers "
                      "beyond the float range (over 1.8e308); they are shown as inf", ProfileWarning, stacklevel=2)
    return numbers, texts


def _to_float(value):
    """`value` as a float, ±inf beyond the float range (None stays None: NaN in the column)."""
    try:
        return value if value is None else float(value)
    except OverflowError:
        return float("inf") if value > 0 else float("-inf")


def object_array(values: list) -> np.ndarray:
    """A 1-d object array of `values`, even when they are lists (which numpy would make 2-d)."""
    array = np.empty(len(values), dtype=object)
    if {list, tuple} & set(map(type, values)):
        for i, value in enumerate(values):
            array[i] = value
    else:
        array[:] = values
    return array
