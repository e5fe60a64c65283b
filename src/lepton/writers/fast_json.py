"""`json.dumps(obj, indent=4, sort_keys=True)`, byte for byte, several times faster; optionally
on one line from a nesting depth on (`compact_from`), so that deep trees stay linear in size.

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


def dumps(obj, compact_from: int | None = None) -> str:
    return "".join(parts(obj, compact_from))


def parts(obj, compact_from: int | None = None) -> list[str]:
    """The text of `dumps(obj)` in pieces, for a caller that joins it with more text.

    `compact_from`: containers nested that deep or deeper (the outermost is at 0) are written on
    one line, as `json.dumps(sort_keys=True)` without indent writes them (", " and ": "), so that
    the text stays linear in depth: indentation alone makes it quadratic (900 MB at 5,000 levels of
    scopes). None: indented at every depth, exactly `json.dumps(indent=4, sort_keys=True)`."""
    t = type(obj)
    if not ((t is dict or t is list or t is tuple) and obj):
        return [_scalar(obj, t)]
    out: list[str] = []
    emit = out.append
    cap = -1 if compact_from is None else compact_from
    # The open containers, innermost last, each a `_contents` generator. An explicit stack, not
    # recursion: hatchet trees nest two containers per level, so Python's recursion limit (1,000)
    # stopped the recursive writer at ~495 levels of scopes. Generators, as in the standard library's
    # encoder, keep it as fast as the recursive writer was.
    stack = [_contents(obj, 0, emit, cap)]
    while stack:
        child = next(stack[-1], None)
        if child is None:
            stack.pop()
        else:
            stack.append(_contents(child, len(stack), emit, cap))
    return out


def _layout(level: int, cap: int) -> tuple[str, str, str]:
    """What opens the first item of a container at nesting `level`, what separates the next ones,
    and what comes before its closing bracket: indented below `cap` (or always, for -1), on one
    line from it on."""
    if level < cap or cap < 0:
        inner = "\n" + _INDENT * (level + 1)
        return inner, "," + inner, "\n" + _INDENT * level
    return "", ", ", ""


def _contents(o, level: int, emit, cap: int = -1):
    """Writes the non-empty container `o` at nesting `level`; yields each non-empty container in
    it, at the point where it goes, for the caller to write before resuming."""
    inner, between, close = _layout(level, cap)
    if type(o) is dict:
        sep = "{" + inner
        for key in sorted(o):
            v = o[key]
            t = type(v)
            if t is str:
                emit(sep + _quote(key) + ": " + _quote(v))
            elif t is dict and v:
                text = _flat_dict(v, level + 1, cap)
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
            sep = between
        emit(close + "}")
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
            sep = between
        emit(close + "]")


def _flat_dict(o: dict, level: int, cap: int = -1) -> str | None:
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
    inner, between, close = _layout(level, cap)
    return "{" + inner + between.join(parts) + close + "}"


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
