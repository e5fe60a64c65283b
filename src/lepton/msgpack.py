"""A small pure-Python MessagePack codec (https://github.com/msgpack/msgpack/blob/master/spec.md).

Lepton's only dependency is numpy, so the hatchet-msgpack writer and the viewer use this instead of
the `msgpack` package. `packb` writes the subset Proton's files use (nil, bool, int up to uint64,
float64, str, bin, array, map) with the shortest encoding of each, keeping dict keys in insertion
order; `unpackb` reads the whole format except ext types, which it refuses with an error, and
`decoder` reads one object at any offset (the viewer walks hatchet trees in place with it).
"""
from __future__ import annotations

import struct
import sys
from collections.abc import Callable
from contextlib import contextmanager
from numbers import Integral, Real
from typing import Any

__all__ = ["MsgpackError", "TruncatedError", "decoder", "packb", "unpackb"]


class MsgpackError(ValueError):
    """The bytes are not valid MessagePack, or hold something this codec does not decode (ext)."""


class TruncatedError(MsgpackError):
    """The bytes end in the middle of an object."""


# A hatchet tree nests 2 MessagePack levels per tree level (map, children array) and each level
# costs 2 Python frames, so the default limit of 1000 frames stops at ~250 tree levels. Since 3.11
# Python-to-Python calls use no C stack, so there a higher limit is safe; 3.10 keeps its own.
_DEEP_RECURSION_LIMIT = 40_000 if sys.version_info >= (3, 11) else 0


@contextmanager
def _deep_recursion():
    old_limit = sys.getrecursionlimit()
    sys.setrecursionlimit(max(old_limit, _DEEP_RECURSION_LIMIT))
    try:
        yield
    finally:
        sys.setrecursionlimit(old_limit)


# ---------------------------------------------------------------- packing

_UINT64_MAX = (1 << 64) - 1
_INT64_MIN = -(1 << 63)


def _pack_int(value: int, out: list[bytes]) -> None:
    if 0 <= value <= 0x7F:
        out.append(bytes((value,)))
    elif -32 <= value < 0:
        out.append(bytes((value & 0xFF,)))
    elif value > 0:
        if value <= 0xFF:
            out.append(b"\xcc" + struct.pack(">B", value))
        elif value <= 0xFFFF:
            out.append(b"\xcd" + struct.pack(">H", value))
        elif value <= 0xFFFFFFFF:
            out.append(b"\xce" + struct.pack(">I", value))
        elif value <= _UINT64_MAX:
            out.append(b"\xcf" + struct.pack(">Q", value))
        else:
            raise OverflowError(f"integer {value} does not fit in uint64")
    elif value >= -0x80:
        out.append(b"\xd0" + struct.pack(">b", value))
    elif value >= -0x8000:
        out.append(b"\xd1" + struct.pack(">h", value))
    elif value >= -0x80000000:
        out.append(b"\xd2" + struct.pack(">i", value))
    elif value >= _INT64_MIN:
        out.append(b"\xd3" + struct.pack(">q", value))
    else:
        raise OverflowError(f"integer {value} does not fit in int64")


def _pack_length(n: int, fix_tag: int, fix_max: int, tags: tuple[int | None, int, int], out: list[bytes]) -> None:
    """Writes a str/bin/array/map header: a fix* tag when n fits, else the 8/16/32-bit length form."""
    tag8, tag16, tag32 = tags
    if fix_tag >= 0 and n <= fix_max:
        out.append(bytes((fix_tag | n,)))
    elif tag8 is not None and n <= 0xFF:
        out.append(bytes((tag8, n)))
    elif n <= 0xFFFF:
        out.append(bytes((tag16,)) + struct.pack(">H", n))
    elif n <= 0xFFFFFFFF:
        out.append(bytes((tag32,)) + struct.pack(">I", n))
    else:
        raise OverflowError("object too large for MessagePack (more than 2**32-1 items or bytes)")


def _pack(obj: Any, out: list[bytes]) -> None:
    # bool before int: bool is a subclass of int.
    if obj is None:
        out.append(b"\xc0")
    elif obj is True:
        out.append(b"\xc3")
    elif obj is False:
        out.append(b"\xc2")
    elif isinstance(obj, str):
        data = obj.encode("utf-8")
        _pack_length(len(data), 0xA0, 31, (0xD9, 0xDA, 0xDB), out)
        out.append(data)
    elif isinstance(obj, Integral):  # int and numpy integers
        _pack_int(int(obj), out)
    elif isinstance(obj, Real):  # float and numpy floats; always float64, as Proton's writer does
        out.append(b"\xcb" + struct.pack(">d", float(obj)))
    elif isinstance(obj, (bytes, bytearray, memoryview)):
        data = bytes(obj)
        _pack_length(len(data), -1, 0, (0xC4, 0xC5, 0xC6), out)
        out.append(data)
    elif isinstance(obj, (list, tuple)):
        _pack_length(len(obj), 0x90, 15, (None, 0xDC, 0xDD), out)
        for item in obj:
            _pack(item, out)
    elif isinstance(obj, dict):
        _pack_length(len(obj), 0x80, 15, (None, 0xDE, 0xDF), out)
        for key, value in obj.items():
            _pack(key, out)
            _pack(value, out)
    else:
        raise TypeError(f"cannot serialize {type(obj).__name__!r} to MessagePack")


def packb(obj: Any) -> bytes:
    """Serialises `obj` (None, bool, int, float, str, bytes, list/tuple, dict) to MessagePack bytes."""
    out: list[bytes] = []
    with _deep_recursion():
        _pack(obj, out)
    return b"".join(out)


# ---------------------------------------------------------------- unpacking

# Fixed-size scalars: tag -> (decoder, size in bytes).
_SCALARS = {
    0xCA: (struct.Struct(">f"), 4), 0xCB: (struct.Struct(">d"), 8),
    0xCC: (struct.Struct(">B"), 1), 0xCD: (struct.Struct(">H"), 2),
    0xCE: (struct.Struct(">I"), 4), 0xCF: (struct.Struct(">Q"), 8),
    0xD0: (struct.Struct(">b"), 1), 0xD1: (struct.Struct(">h"), 2),
    0xD2: (struct.Struct(">i"), 4), 0xD3: (struct.Struct(">q"), 8),
}
# Variable-size objects whose length follows the tag: tag -> (kind, length decoder, length size).
_SIZED = {
    0xD9: ("str", struct.Struct(">B"), 1), 0xDA: ("str", struct.Struct(">H"), 2), 0xDB: ("str", struct.Struct(">I"), 4),
    0xC4: ("bin", struct.Struct(">B"), 1), 0xC5: ("bin", struct.Struct(">H"), 2), 0xC6: ("bin", struct.Struct(">I"), 4),
    0xDC: ("array", struct.Struct(">H"), 2), 0xDD: ("array", struct.Struct(">I"), 4),
    0xDE: ("map", struct.Struct(">H"), 2), 0xDF: ("map", struct.Struct(">I"), 4),
}
_EXT_TAGS = frozenset({0xC7, 0xC8, 0xC9, 0xD4, 0xD5, 0xD6, 0xD7, 0xD8})


class _Truncated(Exception):
    """Raised inside the decoder; read_at turns it into TruncatedError with the byte count."""


_DOUBLE, _UINT16, _UINT32 = (struct.Struct(f).unpack_from for f in (">d", ">H", ">I"))


def decoder(buf: bytes) -> Callable[[int], tuple[Any, int]]:
    """read_at(offset) -> (the object encoded at `offset` in `buf`, the offset just after it),
    raising as unpackb does (deep nesting needs the raised recursion limit unpackb sets).

    A recursive decoder over `buf`: one closure call per object, fix* tags first, since a
    hatchet tree is almost all small maps, short strings and small ints (4x faster than methods).
    Strings are decoded once per distinct value: a tree repeats its keys, frame types and kernel
    names thousands of times, and equal strings that are one object also compare and hash
    faster later."""
    end = len(buf)
    pos = 0
    strings: dict[bytes, str] = {}

    def text(start: int, stop: int) -> str:
        if stop > end:
            raise _Truncated
        raw = buf[start:stop]
        value = strings.get(raw)
        if value is None:
            value = strings[raw] = raw.decode("utf-8")
        return value

    def take(n: int) -> bytes:
        nonlocal pos
        start = pos
        pos += n
        if pos > end:
            raise _Truncated
        return buf[start:pos]

    def read():
        nonlocal pos
        if pos >= end:
            raise _Truncated
        tag = buf[pos]
        pos += 1
        if tag <= 0x7F:
            return tag
        if tag >= 0xE0:
            return tag - 0x100
        if tag >= 0xA0:
            if tag <= 0xBF:  # fixstr
                start = pos
                pos += tag & 0x1F
                return text(start, pos)
        elif tag >= 0x90:  # fixarray
            return [read() for _ in range(tag & 0x0F)]
        elif tag >= 0x80:  # fixmap
            return read_map(tag & 0x0F)
        if tag == 0xCB:  # float64: every float Proton writes
            pos += 8
            if pos > end:
                raise _Truncated
            return _DOUBLE(buf, pos - 8)[0]
        if tag == 0xD9:  # str8: kernel names longer than 31 bytes
            if pos >= end:
                raise _Truncated
            start = pos + 1
            pos = start + buf[pos]
            return text(start, pos)
        scalar = _SCALARS.get(tag)
        if scalar is not None:
            return scalar[0].unpack(take(scalar[1]))[0]
        sized = _SIZED.get(tag)
        if sized is not None:
            kind, length_decoder, size = sized
            n = length_decoder.unpack(take(size))[0]
            if kind == "str":
                return take(n).decode("utf-8")
            if kind == "bin":
                return take(n)
            if kind == "array":
                return [read() for _ in range(n)]
            return read_map(n)
        if tag == 0xC0:
            return None
        if tag == 0xC2 or tag == 0xC3:
            return tag == 0xC3
        if tag in _EXT_TAGS:
            raise MsgpackError(f"MessagePack ext type (tag 0x{tag:02x}) at byte {pos - 1} is not supported")
        raise MsgpackError(f"invalid MessagePack tag 0x{tag:02x} at byte {pos - 1}")

    def read_map(count: int) -> dict:
        """Keys that are short strings and values that are short strings, small ints, uint16,
        uint32 or float64 (nearly all of them in a hatchet tree) are decoded inline, without a
        call each."""
        nonlocal pos
        result = {}
        for _ in range(count):
            if pos >= end:
                raise _Truncated
            tag = buf[pos]
            if 0xA0 <= tag <= 0xBF:
                start = pos + 1
                pos = start + (tag & 0x1F)
                if pos > end:
                    raise _Truncated
                # `text(start, pos)` inlined: map keys are most strings of a profile, and the
                # call made decoding a 30 MB profile ~5% slower (2.87 vs 2.72 s, median of 5).
                raw = buf[start:pos]
                key = strings.get(raw)
                if key is None:
                    key = strings[raw] = raw.decode("utf-8")
            else:
                key = read()
            if pos >= end:
                raise _Truncated
            tag = buf[pos]
            if tag <= 0x7F:
                pos += 1
                result[key] = tag
            elif 0xA0 <= tag <= 0xBF:
                start = pos + 1
                pos = start + (tag & 0x1F)
                if pos > end:
                    raise _Truncated
                raw = buf[start:pos]
                value = strings.get(raw)
                if value is None:
                    value = strings[raw] = raw.decode("utf-8")
                result[key] = value
            elif tag == 0xCB:
                pos += 9
                if pos > end:
                    raise _Truncated
                result[key] = _DOUBLE(buf, pos - 8)[0]
            elif tag == 0xCD:
                pos += 3
                if pos > end:
                    raise _Truncated
                result[key] = _UINT16(buf, pos - 2)[0]
            elif tag == 0xCE:
                pos += 5
                if pos > end:
                    raise _Truncated
                result[key] = _UINT32(buf, pos - 4)[0]
            else:
                result[key] = read()
        return result

    def read_at(offset: int) -> tuple[Any, int]:
        nonlocal pos
        pos = offset
        try:
            if offset < end and 0x80 <= buf[offset] <= 0x8F:  # a fixmap, the usual thing to read
                pos += 1
                return read_map(buf[offset] & 0x0F), pos
            return read(), pos
        except _Truncated:
            raise TruncatedError(f"MessagePack data ends at byte {end}, inside an object") from None
        except RecursionError as err:
            raise MsgpackError("MessagePack data is nested too deeply") from err
        except UnicodeDecodeError as err:
            raise MsgpackError(f"invalid UTF-8 in a MessagePack str: {err.reason}") from err
        except TypeError as err:  # a map key that is an array or a map: unhashable
            raise MsgpackError(f"invalid MessagePack map key: {err}") from err

    return read_at


def unpackb(data: bytes | bytearray | memoryview) -> Any:
    """Decodes one MessagePack object that fills all of `data`.

    Raises TruncatedError when the data ends inside an object and MsgpackError for anything else
    that is wrong (an invalid tag, an ext type, bytes left over after the object)."""
    buf = bytes(data)
    with _deep_recursion():
        obj, stop = decoder(buf)(0)
    if stop != len(buf):
        raise MsgpackError(f"{len(buf) - stop} bytes of extra data after the MessagePack object")
    return obj
