"""`json.dumps(obj, indent=4, sort_keys=True)`, byte for byte, several times faster.

With `indent` set, the standard library falls back to its pure-Python encoder (a generator per
container), which dominated writing large profiles (docs/design.md, "Writers"). This writer appends
strings to one list and uses the C string escaper.
"""
from __future__ import annotations

import math
from json.encoder import encode_basestring_ascii as _quote

_INDENT = "    "
_INF = float("inf")


def _float(f: float) -> str:
    if math.isnan(f):
        return "NaN"
    if f == _INF:
        return "Infinity"
    if f == -_INF:
        return "-Infinity"
    return float.__repr__(f)


def dumps(obj) -> str:
    return "".join(parts(obj))


def parts(obj) -> list[str]:
    """The text of `dumps(obj)` in pieces, for a caller that joins it with more text: a deep
    profile's text is large (indentation is quadratic in depth), so each copy of it counts."""
    t = type(obj)
    if not ((t is dict or t is list or t is tuple) and obj):
        return [_scalar(obj, t)]
    out: list[str] = []
    emit = out.append
    # The open containers, innermost last, each a `_contents` generator. An explicit stack, not
    # recursion: hatchet trees nest two containers per level, so Python's recursion limit (1,000)
    # would stop at ~495 levels of scopes. Generators, as in the standard library's encoder, keep
    # it fast.
    stack = [_contents(obj, 0, emit)]
    while stack:
        child = next(stack[-1], None)
        if child is None:
            stack.pop()
        else:
            stack.append(_contents(child, len(stack), emit))
    return out


def _contents(o, level: int, emit):
    """Writes the non-empty container `o` at nesting `level`; yields each non-empty container in
    it, at the point where it goes, for the caller to write before resuming."""
    inner = "\n" + _INDENT * (level + 1)
    if type(o) is dict:
        sep = "{" + inner
        for key in sorted(o):
            v = o[key]
            t = type(v)
            if t is str:
                emit(sep + _quote(key) + ": " + _quote(v))
            elif t is dict and v:
                text = _flat_dict(v, level + 1)
                if text is None:
                    emit(sep + _quote(key) + ": ")
                    yield v
                else:
                    emit(sep + _quote(key) + ": " + text)
            elif (t is list or t is tuple) and v:
                emit(sep + _quote(key) + ": ")
                yield v
            else:
                emit(sep + _quote(key) + ": " + _scalar(v, t))
            sep = "," + inner
        emit("\n" + _INDENT * level + "}")
    else:
        sep = "[" + inner
        for v in o:
            t = type(v)
            if t is str:
                emit(sep + _quote(v))
            elif (t is dict or t is list or t is tuple) and v:
                emit(sep)
                yield v
            else:
                emit(sep + _scalar(v, t))
            sep = "," + inner
        emit("\n" + _INDENT * level + "]")


def _flat_dict(o: dict, level: int) -> str | None:
    """The text of `o` when it holds no non-empty container (a node's `frame`, most `metrics`),
    else None. Written in one call instead of a generator: twice as fast for these small dicts."""
    parts = []
    for key in sorted(o):
        v = o[key]
        t = type(v)
        if t is str:
            parts.append(_quote(key) + ": " + _quote(v))
        elif (t is dict or t is list or t is tuple) and v:
            return None
        else:
            parts.append(_quote(key) + ": " + _scalar(v, t))
    inner = "\n" + _INDENT * (level + 1)
    return "{" + inner + ("," + inner).join(parts) + "\n" + _INDENT * level + "}"


def _scalar(o, t) -> str:
    if t is str:
        return _quote(o)
    if t is dict or t is list or t is tuple:
        return "{}" if t is dict else "[]"  # empty: dumps writes non-empty containers itself
    if o is True:
        return "true"
    if o is False:
        return "false"
    if o is None:
        return "null"
    if t is int:
        return int.__repr__(o)
    if t is float:
        return _float(o)
    if isinstance(o, int):
        return int.__repr__(int(o))
    if isinstance(o, float):
        return _float(float(o))
    raise TypeError(f"Object of type {t.__name__} is not JSON serializable")
