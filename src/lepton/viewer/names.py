"""Kernel names as people read them: demangled, then folded.

A demangled torch kernel is a line of thousands of characters, almost all of it template arguments
and a parameter list that repeats them. The readable ("short") form keeps the qualified name:

    void at::native::(anonymous namespace)::distribution_elementwise_grid_stride_kernel<float, 4,
    ...>(int, at::PhiloxCudaState, ...)   ->   at::native::distribution_elementwise_grid_stride_kernel<…>

- the return type and the parameter list are dropped (with a trailing `const`);
- every top-level template argument list becomes `<…>`;
- `(anonymous namespace)::` is dropped: it says the kernel has internal linkage, which a reader of
  a profile has no use for;
- names that are no C++ symbol (Triton kernels, scopes) and names libstdc++ cannot demangle are
  shown as they are; so is a name whose brackets do not balance (an `operator<` the scanner
  cannot place).

Collisions. Two kernels can fold to one name (`vectorized_elementwise_kernel<…>` is a dozen torch
kernels). Among the names of one profile, each group of kernels that share a folded name is
unfolded one nesting level at a time (level 1 shows the top-level template arguments with theirs
folded: `vectorized_elementwise_kernel<4, at::native::FillFunctor<…>, std::array<…> >`); each
name stays at the first level at which it differs from the rest of its group. Names still equal
with every template argument shown get their full demangled names (overloads differ in their
parameters); names equal even then (a constructor's C1 and C2 symbols) get " #1", " #2", ...
in the order of their mangled names, after the folded name (or the full one where that tells
overloads apart). No name is unfolded past `MAX_UNFOLDED` characters: two `torch.randn` kernels
differ only deep inside a lambda's template arguments, and a name that long is what folding is
for; such names keep the folded name and are numbered. So every distinct symbol of a profile shows as a distinct
name, and one kernel shows under one name everywhere in it (siblings included).
"""
from __future__ import annotations

from collections import defaultdict
from typing import Literal

from .demangle import demangle

NameStyle = Literal["short", "full", "mangled"]
NAME_STYLES: tuple[NameStyle, ...] = ("short", "full", "mangled")
ELLIPSIS = "…"
ANONYMOUS = "(anonymous namespace)::"
_OPEN = {"<": ">", "(": ")", "[": "]", "{": "}"}
_CLOSE = {v: k for k, v in _OPEN.items()}
_OPERATOR_CHARS = frozenset("+-*/%^&|~!=<>,[]")
_QUALIFIERS = (" const", " volatile", " &&", " &")
MAX_UNFOLDED = 160  # characters: a collision is told apart by a longer name only up to this


def readable_names(names: list[str], style: NameStyle = "short") -> list[str]:
    """Each of `names` (distinct raw names, mangled where they are C++) as shown in `style`:
    "short" (demangled and folded, collisions resolved as the module says), "full" (demangled),
    "mangled" (as written in the file)."""
    if style == "mangled":
        return list(names)
    if len(set(names)) < len(names):  # -f can make two names one: they stay one
        distinct = list(dict.fromkeys(names))
        shown = dict(zip(distinct, readable_names(distinct, style)))
        return [shown[name] for name in names]
    demangled = [demangle(name) for name in names]
    if style == "full":
        return demangled
    shown = [fold(text) if text != name else name for name, text in zip(names, demangled)]
    groups: dict[str, list[int]] = defaultdict(list)
    for i, text in enumerate(shown):
        groups[text].append(i)
    for members in groups.values():
        cxx = [i for i in members if demangled[i] != names[i]]
        if len(members) > 1 and cxx:
            _unfold(cxx, demangled, shown, taken={shown[i] for i in members if i not in cxx})
    return _numbered(names, shown)


def fold(demangled: str, level: int = 0) -> str:
    """A demangled name with the return type and the outer parameter list dropped, anonymous
    namespaces left out, and the contents of template argument (and inner parameter) lists nested
    `level` or more deep replaced by "…". The name itself where its brackets do not balance."""
    text = demangled.replace(ANONYMOUS, "")
    out: list[str] = []
    stack: list[tuple[str, bool]] = []  # (opening bracket, its contents are shown)
    shown_depth = 0  # how many of the open groups are shown, contents included
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        visible = shown_depth == len(stack)
        if text.startswith("operator", i) and (i == 0 or not _identifier(text[i - 1])):
            end = _operator_end(text, i + len("operator"))
            if visible:
                out.append(text[i:end])
            i = end
            continue
        if c in "{[":  # {lambda(int)#1}, [abi:cxx11]: part of the name, copied as they are
            end = _group_end(text, i)
            if end < 0:
                return demangled
            if visible:
                out.append(text[i:end])
            i = end
            continue
        if c in _OPEN:
            depth = sum(1 for opening, _ in stack if opening in "<(")
            show = _shows(c, depth, level)
            if visible:
                if c == "(" and depth == 0:
                    pass  # the parameter list (or a local entity's function): dropped
                elif show:
                    out.append(c)
                else:
                    out.append(c + ELLIPSIS + _OPEN[c])
            stack.append((c, show and visible))
            shown_depth += show and visible
        elif c in _CLOSE:
            if not stack or stack[-1][0] != _CLOSE[c]:
                return demangled
            opening, shown = stack.pop()
            shown_depth -= shown
            if opening == "(" and _depth(stack) == 0 and shown_depth == len(stack):
                i = _after_qualifiers(text, i + 1)  # `f() const::{lambda()#1}`: the const goes too
                continue
            if shown:
                out.append(c)
        elif visible:
            out.append(c)
        i += 1
    if stack:
        return demangled
    return _without_return_type("".join(out))


def _shows(opening: str, depth: int, level: int) -> bool:
    """Whether a group opened at template/parameter nesting `depth` keeps its contents."""
    if opening == "(" and depth == 0:
        return False
    return depth < level


def _group_end(text: str, start: int) -> int:
    """Just past the bracket that closes the one at `start`; -1 when none does."""
    depth = 0
    for i in range(start, len(text)):
        if text[i] in _OPEN:
            depth += 1
        elif text[i] in _CLOSE:
            depth -= 1
            if depth == 0:
                return i + 1
    return -1


def _after_qualifiers(text: str, i: int) -> int:
    """`i` moved past any ` const`, ` volatile`, ` &`, ` &&` that qualify the function whose
    parameter list ends just before it."""
    moved = True
    while moved:
        moved = False
        for qualifier in _QUALIFIERS:
            end = i + len(qualifier)
            if text.startswith(qualifier, i) and (end == len(text) or not _identifier(text[end])):
                i, moved = end, True
    return i


def _depth(stack: list[tuple[str, bool]]) -> int:
    return sum(1 for opening, _ in stack if opening in "<(")


def _identifier(c: str) -> bool:
    return c.isalnum() or c == "_"


def _operator_end(text: str, i: int) -> int:
    """Where the operator's symbol ends (`operator()`, `operator<<=`, `operator new[]`), so that
    its brackets are not taken for groups."""
    if text.startswith("()", i):
        return i + 2
    j = i
    while j < len(text) and text[j] in _OPERATOR_CHARS:
        j += 1
    if j > i:
        return j
    return i  # "operator new", "operator int": words, handled as such


def _without_return_type(text: str) -> str:
    """`void at::f<…> const` -> `at::f<…>`: trailing qualifiers off, then what follows the last
    space outside brackets (none is left in the name itself after folding, but for `operator new`
    and the spaces inside braces)."""
    text = text.strip()
    stripped = True
    while stripped:
        stripped = False
        for qualifier in _QUALIFIERS:
            if text.endswith(qualifier):
                text, stripped = text[:-len(qualifier)].rstrip(), True
    depth, cut = 0, -1
    for i, c in enumerate(text):
        if c in _OPEN:
            depth += 1
        elif c in _CLOSE:
            depth -= 1
        elif c == " " and depth == 0 and not text[:i].endswith("operator"):
            cut = i
    return text[cut + 1:] if cut >= 0 else text


def _unfold(members: list[int], demangled: list[str], shown: list[str], taken: set[str]) -> None:
    """Shows each colliding C++ name of one group at the smallest level at which it differs from
    the others still colliding and from `taken` (the group's names that are no C++ symbol), the
    full demangled name if no level does, in `shown`; names equal even then keep their folded
    name, which _numbered numbers."""
    pending = members
    deepest = max(_max_depth(demangled[i]) for i in members)
    candidates_by_level = ((lambda i, level=level: fold(demangled[i], level)) for level in range(1, deepest + 1))
    for candidate in (*candidates_by_level, demangled.__getitem__):
        texts = {i: candidate(i) for i in pending}
        count: dict[str, int] = defaultdict(int, dict.fromkeys(taken, 1))
        for text in texts.values():
            count[text] += 1
        for i, text in texts.items():
            if count[text] == 1 and len(text) <= MAX_UNFOLDED:
                shown[i] = text
        pending = [i for i in pending if count[texts[i]] > 1 or len(texts[i]) > MAX_UNFOLDED]
        if not pending:
            return
    overloads = {demangled[i] for i in pending}
    if len(overloads) > 1 and max(map(len, overloads)) <= MAX_UNFOLDED:  # numbered per overload
        for i in pending:
            shown[i] = demangled[i]


def _max_depth(text: str) -> int:
    depth = deepest = 0
    for c in text:
        if c in "<(":
            depth += 1
            deepest = max(deepest, depth)
        elif c in ">)":
            depth -= 1
    return deepest


def _numbered(names: list[str], shown: list[str]) -> list[str]:
    """" #1", " #2", ... after the names still shared by several symbols, in mangled-name order."""
    groups: dict[str, list[int]] = defaultdict(list)
    for i, text in enumerate(shown):
        groups[text].append(i)
    result = list(shown)
    for text, members in groups.items():
        if len(members) > 1:
            for number, i in enumerate(sorted(members, key=names.__getitem__), 1):
                result[i] = f"{text} #{number}"
    return result
