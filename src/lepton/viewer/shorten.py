"""C++ kernel names shortened to fit a terminal, dropping detail from the inside out."""
from __future__ import annotations

ELLIPSIS = "…"


def shorten(name: str, width: int) -> str:
    """Fits `name` into `width` characters, dropping detail from the inside out.

    First the innermost template-argument and parameter lists become "<…>" / "(…)" (parameter lists
    before template lists at the same depth, since they mostly repeat the template arguments), one
    nesting level at a time; if that is not enough, the middle of the name is cut out."""
    width = max(width, 8)
    if len(name) <= width:
        return name
    groups = _bracket_groups(name)
    while groups and len(name) > width:
        deepest = max(depth for depth, _, _, _ in groups)
        level = [g for g in groups if g[0] == deepest]
        chosen = [g for g in level if g[1] == "("] or level
        for _, _, start, end in sorted(chosen, key=lambda g: -g[2]):  # right to left keeps offsets valid
            name = name[:start + 1] + ELLIPSIS + name[end:]
        groups = _bracket_groups(name)
        groups = [g for g in groups if name[g[2] + 1:g[3]] != ELLIPSIS]
    if len(name) <= width:
        return name
    head = (width - 1) * 2 // 3
    return name[:head] + ELLIPSIS + name[len(name) - (width - 1 - head):]


def _bracket_groups(name: str) -> list[tuple[int, str, int, int]]:
    """(depth, opening bracket, start, end) of every balanced <...> and (...) group with content.

    "operator<", "operator->" and the like would unbalance the count; then nothing is returned and
    shorten falls back to cutting the middle."""
    groups = []
    stack: list[tuple[str, int]] = []
    pairs = {">": "<", ")": "("}
    for i, c in enumerate(name):
        if c in "<(":
            stack.append((c, i))
        elif c in ">)":
            if not stack or stack[-1][0] != pairs[c]:
                return []
            opening, start = stack.pop()
            if i > start + 1:
                groups.append((len(stack), opening, start, i))
    return groups if not stack else []
