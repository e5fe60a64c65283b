"""Loading a large hatchet JSON file on two cores.

json.loads and building the columns are most of what lepton-view spends on a 200,000-node
(135 MB) profile. Proton's writer and ours print the file the same way (json indent 4, keys
sorted, so ROOT's "children" come first and each child of ROOT starts on a line of 12 spaces and
"{"); that lets us cut ROOT's children into pieces without parsing. This process loads ROOT with
the first piece, and it and a forked child process take the other pieces one at a time, so that
a process on a busier core simply loads fewer of them; the pieces are then joined in file order.

Anything unexpected (another layout, no fork, an error in either process, an edge case of the
pruning rules) returns None and the caller loads the file serially, so results never differ.
"""
from __future__ import annotations

import gc
import json
import mmap
import os
import pickle
import re
import signal
import sys
from itertools import chain

import numpy as np

from .load import MSGPACK_SUFFIXES, from_document, object_array, without_gc
from .tree import NO_PARENT, Codes, Tree

MIN_SPLIT_BYTES = 32 * 1024 * 1024  # smaller files load in well under a second: not worth a fork
# Enough pieces that the two processes finish close together even when one core is slower; few
# enough that each costs next to nothing beyond its share of the parsing.
PIECES = 32
_PRETTY_HEAD = re.compile(rb'[ \t\r\n]*\[\n    \{\n        "children": \[\n')
_ROOT_CHILD_START = b"\n            {\n"
_ROOT_CHILDREN_END = b'\n        ],\n        "frame": {'
_ROOT_CHILDREN_CLOSE = b"\n        ]"
_OPEN, _CLOSE = ord("["), ord("]")
_PIPE_BYTES = 1 << 20
# What a piece that does not load raises (ProfileError, JSONDecodeError and UnicodeDecodeError are
# ValueErrors); then the serial load reports the error, or finds the piece was not cut right.
_FAILURES = (ValueError, LookupError, TypeError, RecursionError)


def load_split_file(path: str, min_bytes: int = MIN_SPLIT_BYTES) -> Tree | None:
    """The file's Tree, loaded on two processes; None if that cannot be done for this file here.

    The file is mapped copy-on-write, not read: each process decodes its pieces straight out of
    the page cache."""
    try:
        with open(path, "rb") as f:
            if os.fstat(f.fileno()).st_size < max(min_bytes, 1):  # an empty file cannot be mapped
                return None
            with mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_COPY) as mapped:
                return load_split(mapped, path, min_bytes)
    except OSError:
        return None  # the serial load reports what is wrong with the file


def load_split(buffer: bytearray | mmap.mmap, source: str, min_bytes: int = MIN_SPLIT_BYTES) -> Tree | None:
    """The Tree of `buffer` (the file's bytes), loaded on two processes; None if that cannot be
    done for this file here. The buffer is left as it was."""
    # Linux only: macOS's system libraries are not fork-safe, Windows has no fork.
    if (len(buffer) < min_bytes or source.endswith(MSGPACK_SUFFIXES) or not sys.platform.startswith("linux")
            or (os.cpu_count() or 1) < 2):
        return None
    bounds = _bounds(buffer)
    if bounds is None:
        return None
    # Pieces 1, 2, ... are claimed by reading their numbers from this pipe, by whichever process is
    # free first; once it is empty (end of file: its writer is closed), all are claimed.
    claims, claims_writer = os.pipe()
    os.write(claims_writer, bytes(range(1, len(bounds) - 1)))
    os.close(claims_writer)
    read_fd, write_fd = os.pipe()
    _widen_pipe(write_fd)
    pid = os.fork()
    if pid == 0:  # the child: load pieces, send them back, leave without cleanup
        os.close(read_fd)
        _child(buffer, bounds, claims, write_fd)
    os.close(write_fd)
    pipe = os.fdopen(read_fd, "rb")
    try:
        with without_gc():
            head = _load_head(buffer, bounds, source)
            pieces = _load_claimed(buffer, bounds, claims) if head is not None else None
        if pieces is None:
            return None
        payload = pipe.read()
        theirs = pickle.loads(payload) if payload else None
        if theirs is None:
            return None
        for index, packed in theirs:
            pieces[index] = _unpack(packed)
        return _join(head, [pieces[i] for i in range(1, len(bounds) - 1)])
    finally:
        pipe.close()
        os.close(claims)
        # A child still at work (this process failed) is of no use any more; one that has sent its
        # pieces is exiting already, and freeing its memory while this process joins the pieces.
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)


def _widen_pipe(fd: int) -> None:
    """A pipe holds 64 KiB: the child's answer (megabytes) would cross it in hundreds of turns,
    each waking this process and then the child. Linux lets a pipe grow to pipe-max-size (1 MiB
    by default)."""
    import fcntl  # POSIX only, and this module is imported everywhere (it loads split on Linux only)

    try:
        fcntl.fcntl(fd, fcntl.F_SETPIPE_SZ, _PIPE_BYTES)
    except OSError:
        pass  # a lower limit here: the pipe works as it is, a little slower


def _bounds(buffer: bytearray | mmap.mmap) -> list[int] | None:
    """Where the pieces of ROOT's children start and end: the list's "[", the commas before
    the first child of each further piece, then the list's "]". Piece i is the JSON list
    buffer[bounds[i]:bounds[i + 1] + 1] once its two ends read "[" and "]"."""
    head = _PRETTY_HEAD.match(buffer)
    end = buffer.rfind(_ROOT_CHILDREN_END)
    if head is None or end < 0:
        return None
    opening = head.end() - 2
    bounds = [opening]
    for i in range(1, PIECES):
        start = buffer.find(_ROOT_CHILD_START, opening + (end - opening) * i // PIECES, end)
        if start > bounds[-1] + 1 and buffer[start - 1] == ord(","):  # a big child may span several
            bounds.append(start - 1)
    if len(bounds) < 2:
        return None
    return [*bounds, end + len(_ROOT_CHILDREN_CLOSE) - 1]


def _children(buffer: bytearray | mmap.mmap, bounds: list[int], index: int) -> list:
    """The ROOT children of piece `index`, parsed where they lie: the commas at its ends become
    brackets for the time of the parse."""
    start, stop = bounds[index], bounds[index + 1]
    kept = buffer[start], buffer[stop]
    buffer[start], buffer[stop] = _OPEN, _CLOSE
    try:
        return json.loads(_text(buffer, start, stop + 1))
    finally:
        buffer[start], buffer[stop] = kept


def _text(buffer: bytearray | mmap.mmap, start: int, stop: int) -> str:
    """buffer[start:stop] decoded as json.loads decodes bytes, without copying them first."""
    with memoryview(buffer) as view:
        return str(view[start:stop], "utf-8", "surrogatepass")


def _load_head(buffer: bytearray | mmap.mmap, bounds: list[int], source: str) -> Tree | None:
    """ROOT with the children of the first piece: the rest of the file is small and parsed on its
    own, the children put in. None if anything fails or ROOT does not survive that alone."""
    after_children = bounds[-1] + 1 - len(_ROOT_CHILDREN_CLOSE)
    try:
        document = json.loads(_text(buffer, 0, bounds[0] + 1) + _text(buffer, after_children, len(buffer)))
        document[0]["children"] = _children(buffer, bounds, 0)
        head = from_document(document, source)
    except _FAILURES:
        return None
    if len(head) == 0 or len(head.roots) != 1 or head.parent[0] != NO_PARENT:
        return None  # ROOT is pruned without its other children: the serial load decides
    return _coded(head)


def _load_forest(buffer: bytearray | mmap.mmap, bounds: list[int], index: int) -> tuple[Tree, list]:
    """Piece `index` as a forest of ROOT's children, and the parsed document it came from."""
    document = [*_children(buffer, bounds, index), {}]
    return _coded(from_document(document, f"<piece {index}>")), document


def _load_claimed(buffer: bytearray | mmap.mmap, bounds: list[int], claims: int) -> dict[int, Tree] | None:
    pieces = {}
    while claim := os.read(claims, 1):
        try:
            pieces[claim[0]] = _load_forest(buffer, bounds, claim[0])[0]
        except _FAILURES:
            return None
    return pieces


def _child(buffer: bytearray | mmap.mmap, bounds: list[int], claims: int, write_fd: int) -> None:
    # The parsed documents stay referenced until the exit: freeing their nodes would only make the
    # parent wait longer. The collector stays off for the same reason (it would walk all of them).
    gc.disable()
    documents = []
    pieces: list | None = []
    try:
        while claim := os.read(claims, 1):
            tree, document = _load_forest(buffer, bounds, claim[0])
            documents.append(document)
            pieces.append((claim[0], _pack(tree)))
    except BaseException:  # noqa: BLE001 - any failure: the parent falls back to a serial load
        pieces = None
    try:
        with os.fdopen(write_fd, "wb") as pipe:
            pipe.write(pickle.dumps(pieces, protocol=pickle.HIGHEST_PROTOCOL))
    finally:
        os._exit(0)  # no atexit handlers, no flushing of the parent's buffered output


def _pack(tree: Tree):
    """The tree in a form that pickles fast and small: each column of strings (names, types,
    device ids) as Codes (100,000 "CUDA" strings are 100,000 objects to pickle, and as many to
    create on the other side), ints in as few bytes as they fit."""
    texts = {key: _codes_if_strings(values.tolist()) for key, values in tree.texts.items()}
    return (_narrow_codes(tree.name_codes), _narrow_codes(tree.frame_type_codes), _narrow(tree.parent),
            _narrow(tree.depth), tree.numbers, texts, tree.key_order)


def _codes_if_strings(values: list) -> Codes | list:
    """Strings (and None) as Codes; other values as they are: a dict would take 1 and 1.0 for one
    value, and cannot hold lists."""
    return _narrow_codes(Codes.of(values)) if set(map(type, values)) <= _STRING_OR_NONE else values


_STRING_OR_NONE = frozenset({str, type(None)})


def _narrow(values: np.ndarray) -> np.ndarray:
    return values.astype(np.result_type(np.min_scalar_type(values.min(initial=0)),
                                        np.min_scalar_type(values.max(initial=0))))


def _narrow_codes(codes: Codes) -> Codes:
    return Codes(codes.distinct, _narrow(codes.positions))


def _unpack(payload) -> Tree:
    names, frame_types, parent, depth, numbers, texts, key_order = map(_widened, payload)
    tree = Tree(parent=parent, depth=depth, names=names.values(), frame_types=frame_types.values(),
                numbers=numbers, texts={key: _expand(_widened(values)) for key, values in texts.items()},
                key_order=key_order, in_preorder=True)
    return _with_codes(tree, names, frame_types)


def _widened(value):
    """What _narrow made smaller, as int64 again."""
    if isinstance(value, Codes):
        return Codes(value.distinct, value.positions.astype(np.int64))
    return value.astype(np.int64) if isinstance(value, np.ndarray) else value


def _expand(values: Codes | list) -> np.ndarray:
    return values.pick(values.distinct) if isinstance(values, Codes) else object_array(values)


def _coded(tree: Tree) -> Tree:
    """The tree with its name and frame-type codes computed, in the process loading it."""
    tree.name_codes, tree.frame_type_codes  # noqa: B018 - cached properties
    return tree


def _with_codes(tree: Tree, names: Codes, frame_types: Codes) -> Tree:
    """The tree, told the codes its cached properties would compute."""
    tree.name_codes, tree.frame_type_codes = names, frame_types
    return tree


def _join(head: Tree, forests: list[Tree]) -> Tree | None:
    """ROOT with its first children (`head`), and the other pieces' forests hung under ROOT."""
    pieces = [head, *forests]
    keys = list(dict.fromkeys(key for piece in pieces for key in piece.key_order))
    numeric = {key for piece in pieces for key in piece.numbers}
    if any(key in piece.texts for piece in pieces for key in numeric):
        return None  # numbers in one piece, text in another: the serial load decides
    offsets = np.cumsum([0, *map(len, pieces)])
    parents = [head.parent] + [np.where(f.parent == NO_PARENT, 0, f.parent + offset)
                               for f, offset in zip(forests, offsets[1:].tolist())]
    joined = Tree(
        parent=np.concatenate(parents),
        depth=np.concatenate([head.depth] + [forest.depth + 1 for forest in forests]),
        names=list(chain.from_iterable(piece.names for piece in pieces)),
        frame_types=list(chain.from_iterable(piece.frame_types for piece in pieces)),
        numbers={key: _concat([piece.numbers.get(key) for piece in pieces], pieces, np.nan)
                 for key in keys if key in numeric},
        texts={key: _concat([piece.texts.get(key) for piece in pieces], pieces, None)
               for key in keys if key not in numeric},
        root_keys=head.root_keys,
        key_order=keys,
        devices=head.devices,
        in_preorder=True,
    )
    return _with_codes(joined, Codes.joined([piece.name_codes for piece in pieces]),
                       Codes.joined([piece.frame_type_codes for piece in pieces]))


def _concat(columns: list[np.ndarray | None], pieces: list[Tree], missing) -> np.ndarray:
    dtype = object if missing is None else np.float64
    return np.concatenate([column if column is not None else np.full(len(piece), missing, dtype=dtype)
                           for column, piece in zip(columns, pieces)])
