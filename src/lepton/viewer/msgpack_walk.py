"""Hatchet MessagePack straight to a Walk, without decoding the tree into nested dicts first.

Proton's writer and ours lay every node out the same way: a map of three, "frame" -> a map of
two ("name", "type"), "metrics" -> a map, "children" -> an array of nodes. Those keys are checked
as bytes where they lie, names and types are decoded once per distinct value, only the metrics go
through the generic decoder, and the children are walked in place: the file is read 2-3x faster
than by decoding it whole and walking the dicts. Any other content gives None, and the caller
decodes the file the generic way, which gives the same Tree (or the error to report).
"""
from __future__ import annotations

import struct
import sys

from ..msgpack import decoder
from .tree import NO_PARENT
from .walk import METADATA_PREFIX, METADATA_SCOPE_NAME, NO_METRICS, Walk

_NODE_START = b"\x83\xa5frame\x82\xa4name"  # {"frame": {"name":
_TYPE_KEY = b"\xa4type"
_FUNCTION = "function"
_FUNCTION_TYPE = _TYPE_KEY + b"\xa8" + _FUNCTION.encode()
_METRICS_KEY = b"\xa7metrics"
_CHILDREN_KEY = b"\xa8children"
_ROOT_ONLY, _ROOT_AND_DEVICES = 0x91, 0x92  # the document: [root] or [root, devices]
_UINT16, _UINT32 = (struct.Struct(f).unpack_from for f in (">H", ">I"))
# One Python frame per tree level; since 3.11 Python-to-Python calls use no C stack.
_DEEP_RECURSION_LIMIT = 40_000 if sys.version_info >= (3, 11) else 0


class _OtherLayout(Exception):
    """The bytes are not a hatchet document laid out as expected."""


def walk_msgpack(data: bytes) -> tuple[Walk, dict] | None:
    """The walk of a hatchet MessagePack document and its device map; None if the document is
    laid out otherwise, or broken."""
    old_limit = sys.getrecursionlimit()
    sys.setrecursionlimit(max(old_limit, _DEEP_RECURSION_LIMIT))
    try:
        return _walk(bytes(data))
    except (_OtherLayout, ValueError, IndexError, struct.error, RecursionError):  # MsgpackError: a ValueError
        return None
    finally:
        sys.setrecursionlimit(old_limit)


def _walk(buf: bytes) -> tuple[Walk, dict]:
    read_at = decoder(buf)
    starts_with = buf.startswith
    walk = Walk()
    add_name, add_type, add_metrics = walk.names.append, walk.types.append, walk.metrics.append
    add_parent, add_depth, add_survives = walk.parents.append, walk.depths.append, walk.survives.append
    survives = walk.survives
    strings: dict[bytes, str] = {}
    pos = 0

    def string(at: int) -> tuple[str, int]:
        """The str at `at` and the offset after it: fixstr and str8 decoded once per value."""
        tag = buf[at]
        if 0xA0 <= tag <= 0xBF:
            start = at + 1
            stop = start + (tag & 0x1F)
        elif tag == 0xD9:
            start = at + 2
            stop = start + buf[at + 1]
        else:
            value, stop = read_at(at)
            if value.__class__ is not str:
                raise _OtherLayout
            return value, stop
        raw = buf[start:stop]
        if len(raw) != stop - start:
            raise _OtherLayout  # truncated
        value = strings.get(raw)
        if value is None:
            value = strings[raw] = raw.decode("utf-8")
        return value, stop

    def visit(parent: int, depth: int) -> bool:
        nonlocal pos
        if not starts_with(_NODE_START, pos):
            raise _OtherLayout
        name, at = string(pos + len(_NODE_START))
        if starts_with(_FUNCTION_TYPE, at):  # nearly every frame's type
            frame_type = _FUNCTION
            at += len(_FUNCTION_TYPE)
        elif starts_with(_TYPE_KEY, at):
            frame_type, at = string(at + len(_TYPE_KEY))
        else:
            raise _OtherLayout
        if not starts_with(_METRICS_KEY, at):
            raise _OtherLayout
        metrics, at = read_at(at + len(_METRICS_KEY))
        if metrics.__class__ is not dict or not starts_with(_CHILDREN_KEY, at):
            raise _OtherLayout
        at += len(_CHILDREN_KEY)
        tag = buf[at]
        if 0x90 <= tag <= 0x9F:
            count, pos = tag & 0x0F, at + 1
        elif tag == 0xDC:
            count, pos = _UINT16(buf, at + 1)[0], at + 3
        elif tag == 0xDD:
            count, pos = _UINT32(buf, at + 1)[0], at + 5
        else:
            raise _OtherLayout
        index = len(survives)
        add_name(name)
        add_type(frame_type)
        add_metrics(metrics or NO_METRICS)
        add_parent(parent)
        add_depth(depth)
        add_survives(False)
        if count:
            keep = False
            for _ in range(count):
                if visit(index, depth + 1):  # noqa: F821 (deleted after the walk)
                    keep = True
        else:
            keep = bool(metrics)
        if keep:
            if name == METADATA_SCOPE_NAME or name.startswith(METADATA_PREFIX):
                return False
            survives[index] = True
        return keep

    try:
        if buf[:1] not in (bytes((_ROOT_ONLY,)), bytes((_ROOT_AND_DEVICES,))):
            raise _OtherLayout
        pos = 1
        visit(NO_PARENT, 0)
        devices: dict = {}
        if buf[0] == _ROOT_AND_DEVICES:
            devices, pos = read_at(pos)
            if devices.__class__ is not dict or "frame" in devices:
                raise _OtherLayout  # a second root, or a device block that is not one
        if pos != len(buf):
            raise _OtherLayout
    finally:
        del visit  # visit reaches itself through its closure: a cycle holding the whole walk
    return walk, devices
