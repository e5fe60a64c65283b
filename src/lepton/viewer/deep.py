"""Readers for hatchet files nested deeper than the C decoders go, straight into a Walk.

A hatchet tree nests two containers per level (a node and its "children" list). CPython's json
decoder gives up near 500 tree levels (it counts against the recursion limit on 3.11, against a
fixed C limit on 3.12+), msgpack's near 510 (1024 open containers). These readers keep the tree's
nesting on an explicit stack: only the node objects and their "children" lists are read by Python
code, every other value (a frame, a metrics object, the device block) by the C decoder, which is
fast and never nests deeply there. Nodes go to a WalkBuilder as they are read, so no nested dicts are
built (a 1M-node, depth-5,000 file: a third of the memory of decoding it whole).

Errors are those of the decoders (json.JSONDecodeError, msgpack's ValueError/OutOfData), a
RecursionError or msgpack.StackError for deep nesting outside the tree, and KeyError/TypeError for
a node that is malformed; load.py turns them into one-line ProfileErrors.
"""
from __future__ import annotations

import json
from json.decoder import JSONDecodeError, scanstring
from json.scanner import make_scanner

import msgpack

from .walk import WalkBuilder

_WHITESPACE = json.decoder.WHITESPACE.match
_scan_value = make_scanner(json.JSONDecoder())  # (text, index) -> (value, end); C when available
_MAP_TYPES = frozenset([*range(0x80, 0x90), 0xDE, 0xDF])  # MessagePack fixmap, map16, map32

# What the JSON reader expects next.
_KEY_OR_END, _KEY, _AFTER_PAIR, _CHILD, _AFTER_CHILD = range(5)


def read_json(text: str, builder: WalkBuilder) -> list:
    """Reads the `[node..., other...]` document in `text` into `builder`; returns the top-level
    values that are no tree node (the device block)."""
    i = _skip(text, 0)
    if not text.startswith("[", i):
        _scan(text, i)  # not a list: whatever the decoder says about it (deep: RecursionError)
        raise TypeError("the document is not a list")
    others = []
    i = _skip(text, i + 1)
    if text.startswith("]", i):
        return _end(text, i + 1, others)
    while True:
        if text.startswith("{", i):
            i, other = _read_json_object(text, i, builder)
            if other is not None:
                others.append(other)
        else:
            value, i = _scan(text, i)
            others.append(value)
        i = _skip(text, i)
        if text.startswith(",", i):
            i = _skip(text, i + 1)
        elif text.startswith("]", i):
            return _end(text, i + 1, others)
        else:
            raise JSONDecodeError("Expecting ',' delimiter", text, i)


def _read_json_object(text: str, i: int, builder: WalkBuilder) -> tuple[int, dict | None]:
    """The top-level object at text[i] ("{") with every node under it; returns where it ends and,
    when it is no node (it has no "frame"), its contents."""
    builder.open()
    depth = 1  # node objects open, this one included
    other: dict = {}
    state, i = _KEY_OR_END, _skip(text, i + 1)
    while True:
        if state == _CHILD:
            if not text.startswith("{", i):
                raise TypeError("a child of a node is not an object")
            builder.open()
            depth += 1
            state, i = _KEY_OR_END, _skip(text, i + 1)
        elif state == _AFTER_CHILD:
            if text.startswith(",", i):
                state, i = _CHILD, _skip(text, i + 1)
            elif text.startswith("]", i):
                state, i = _AFTER_PAIR, _skip(text, i + 1)
            else:
                raise JSONDecodeError("Expecting ',' delimiter", text, i)
        elif state == _AFTER_PAIR or (state == _KEY_OR_END and text.startswith("}", i)):
            if text.startswith("}", i):
                depth -= 1
                is_node = builder.close(may_be_other=depth == 0)
                if depth == 0:
                    return i + 1, None if is_node else other
                state, i = _AFTER_CHILD, _skip(text, i + 1)
            elif text.startswith(",", i):
                state, i = _KEY, _skip(text, i + 1)
            else:
                raise JSONDecodeError("Expecting ',' delimiter", text, i)
        else:  # a key, then its value
            if not text.startswith('"', i):
                raise JSONDecodeError("Expecting property name enclosed in double quotes", text, i)
            key, i = scanstring(text, i + 1)
            i = _skip(text, i)
            if not text.startswith(":", i):
                raise JSONDecodeError("Expecting ':' delimiter", text, i)
            i = _skip(text, i + 1)
            state = _AFTER_PAIR
            if key == "children" and text.startswith("[", i):
                i = _skip(text, i + 1)
                if text.startswith("]", i):
                    i += 1
                else:
                    state = _CHILD
                    continue
            else:
                value, i = _scan(text, i)
                if key == "frame":
                    builder.frame(value)
                elif key == "metrics":
                    builder.metrics(value)
                elif depth == 1:
                    other[key] = value
            i = _skip(text, i)


def _skip(text: str, i: int) -> int:
    return _WHITESPACE(text, i).end()


def _scan(text: str, i: int):
    try:
        return _scan_value(text, i)
    except StopIteration as err:
        raise JSONDecodeError("Expecting value", text, err.value) from None


def _end(text: str, i: int, others: list) -> list:
    i = _skip(text, i)
    if i != len(text):
        raise JSONDecodeError("Extra data", text, i)
    return others


def read_msgpack(data: bytes, unpacker: msgpack.Unpacker, builder: WalkBuilder) -> list:
    """Reads the `[node..., other...]` document that `unpacker` (fed with `data`) holds into
    `builder`; returns the top-level values that are no tree node."""
    others = []
    for _ in range(unpacker.read_array_header()):
        if data[unpacker.tell():unpacker.tell() + 1] and data[unpacker.tell()] in _MAP_TYPES:
            other = _read_msgpack_object(unpacker, builder)
            if other is not None:
                others.append(other)
        else:
            others.append(unpacker.unpack())
    return others


def _read_msgpack_object(unpacker: msgpack.Unpacker, builder: WalkBuilder) -> dict | None:
    """The top-level map at the unpacker's position, with every node under it (see _read_json_object)."""
    other: dict = {}
    builder.open()
    # One entry per open node: [keys left to read, children left to read].
    stack = [[unpacker.read_map_header(), 0]]
    while True:
        entry = stack[-1]
        if entry[1]:
            entry[1] -= 1
            builder.open()
            stack.append([unpacker.read_map_header(), 0])
        elif entry[0]:
            entry[0] -= 1
            key = unpacker.unpack()
            if key == "children":
                entry[1] = unpacker.read_array_header()
            elif key == "frame":
                builder.frame(unpacker.unpack())
            elif key == "metrics":
                builder.metrics(unpacker.unpack())
            elif len(stack) == 1:
                other[key] = unpacker.unpack()
            else:
                unpacker.skip()
        else:
            stack.pop()
            is_node = builder.close(may_be_other=not stack)
            if not stack:
                return None if is_node else other
