"""`json.dumps(obj, indent=4, sort_keys=True)`, byte for byte, several times faster.

With `indent` set, the standard library falls back to its pure-Python encoder (a generator per
container), which dominated writing large profiles (~1.5 s of 2.6 for a 9,000-node tree). This
writer appends strings to one list and uses the C string escaper.
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
    out: list[str] = []
    _write(obj, 0, out.append)
    return "".join(out)


def _write(o, level: int, out) -> None:
    t = type(o)
    if t is str:
        out(_quote(o))
    elif t is dict:
        if not o:
            out("{}")
            return
        inner = "\n" + _INDENT * (level + 1)
        sep = "{" + inner
        for key in sorted(o):
            out(sep + _quote(key) + ": ")
            sep = "," + inner
            _write(o[key], level + 1, out)
        out("\n" + _INDENT * level + "}")
    elif t is list or t is tuple:
        if not o:
            out("[]")
            return
        inner = "\n" + _INDENT * (level + 1)
        sep = "[" + inner
        for item in o:
            out(sep)
            sep = "," + inner
            _write(item, level + 1, out)
        out("\n" + _INDENT * level + "]")
    elif o is True:
        out("true")
    elif o is False:
        out("false")
    elif o is None:
        out("null")
    elif t is int:
        out(int.__repr__(o))
    elif t is float:
        out(_float(o))
    elif isinstance(o, int):
        out(int.__repr__(int(o)))
    elif isinstance(o, float):
        out(_float(float(o)))
    else:
        raise TypeError(f"Object of type {t.__name__} is not JSON serializable")
