"""The parse tree of a demangled C++ name, and how GNU c++filt (libiberty) prints it.

Each node prints as a left and a right part so that declarators nest ("void (*)(int)",
"int (*) [4]"). `ctx` is the stack of template argument lists that template parameters (T_, T0_)
refer to: like libiberty, we resolve them when printing, against the innermost function template
being printed, so that a parameter reused through a substitution prints what it means where it is
used.
"""
from __future__ import annotations

from dataclasses import dataclass


class Fail(Exception):
    """The name uses something this demangler does not handle."""



Context = tuple  # tuple[list[Node], ...]


class Node:
    def left(self, ctx: Context) -> str:
        return self.text(ctx)

    def right(self, ctx: Context) -> str:
        return ""

    def text(self, ctx: Context) -> str:
        return self.left(ctx) + self.right(ctx)


@dataclass
class Name(Node):
    value: str

    def text(self, ctx: Context) -> str:
        return self.value

    def left(self, ctx: Context) -> str:
        return self.value


@dataclass
class TemplateParam(Node):
    index: int

    def resolve(self, ctx: Context) -> tuple[Node, Context]:
        if not ctx or self.index >= len(ctx[-1]):
            raise Fail(f"template parameter {self.index} has no argument")
        return ctx[-1][self.index], ctx[:-1]  # the argument means what it meant one level out

    def left(self, ctx: Context) -> str:
        arg, outer = self.resolve(ctx)
        return arg.left(outer)

    def right(self, ctx: Context) -> str:
        arg, outer = self.resolve(ctx)
        return arg.right(outer)

    def text(self, ctx: Context) -> str:
        arg, outer = self.resolve(ctx)
        return arg.text(outer)


def resolve(node: Node, ctx: Context) -> tuple[Node, Context]:
    while isinstance(node, TemplateParam):
        node, ctx = node.resolve(ctx)
    return node, ctx


@dataclass
class Nested(Node):
    prefix: Node
    name: Node

    def text(self, ctx: Context) -> str:
        return f"{self.prefix.text(ctx)}::{self.name.text(ctx)}"

    left = text


@dataclass
class Template(Node):
    name: Node
    args: list[Node]

    def text(self, ctx: Context) -> str:
        name = self.name.text(ctx)
        texts = [arg.text(ctx) for arg in self.args]
        inner = ", ".join(t for t in texts if t)
        # No "<<" or ">>" made by the brackets: "operator<< <T>", "A<B<int> >". libiberty checks the
        # last character it wrote, which after a trailing empty pack is the erased ", " separator.
        spaced = inner.endswith(">") and not (len(texts) > 1 and texts[-1] == "")
        return f"{name}{' ' if name.endswith('<') else ''}<{inner}{' ' if spaced else ''}>"

    left = text


@dataclass
class Pack(Node):
    args: list[Node]

    def text(self, ctx: Context) -> str:
        return join(self.args, ctx)

    left = text


@dataclass
class Qualified(Node):
    inner: Node
    qualifiers: str  # " const", " volatile"...

    def left(self, ctx: Context) -> str:
        inner, ictx = resolve(self.inner, ctx)
        if isinstance(inner, Function):
            return inner.left(ictx)
        if isinstance(inner, Qualified):  # T const with T = X const: one const, as c++filt prints
            extra = [q for q in self.qualifiers.split() if q not in inner.qualifiers.split()]
            return inner.left(ictx) + "".join(" " + q for q in extra)
        return inner.left(ictx) + self.qualifiers

    def right(self, ctx: Context) -> str:
        inner, ictx = resolve(self.inner, ctx)
        if isinstance(inner, Function):
            return inner.right(ictx) + self.qualifiers
        return inner.right(ictx)


@dataclass
class Pointer(Node):
    inner: Node
    symbol: str  # "*", "&", "&&"

    def left(self, ctx: Context) -> str:
        inner, ictx, symbol = self._collapsed(ctx)
        if is_function(inner):
            return inner.left(ictx) + "(" + symbol  # "int (*" + ")(double)"
        if is_array(inner, ictx):
            return inner.left(ictx) + " (" + symbol  # "char const (&" + ") [4]"
        return inner.left(ictx) + symbol

    def right(self, ctx: Context) -> str:
        inner, ictx, _ = self._collapsed(ctx)
        if is_function(inner) or is_array(inner, ictx):
            return ")" + inner.right(ictx)
        return inner.right(ictx)

    def _collapsed(self, ctx: Context) -> tuple[Node, Context, str]:
        """Reference collapsing: a reference to a reference is one reference (& wins over &&)."""
        inner, ictx = resolve(self.inner, ctx)
        symbol = self.symbol
        while symbol != "*" and isinstance(inner, Pointer) and inner.symbol != "*":
            symbol = "&" if "&" in (symbol, inner.symbol) else "&&"
            inner, ictx = resolve(inner.inner, ictx)
        return inner, ictx, symbol


@dataclass
class Function(Node):
    result: Node
    params: list[Node]

    def left(self, ctx: Context) -> str:
        return self.result.left(ctx) + " "

    def right(self, ctx: Context) -> str:
        return f"({join(self.params, ctx)})" + self.result.right(ctx)


@dataclass
class Array(Node):
    inner: Node
    dimension: str

    def left(self, ctx: Context) -> str:
        return self.inner.left(ctx)

    def right(self, ctx: Context) -> str:
        return f" [{self.dimension}]" + self.inner.right(ctx)


@dataclass
class PointerToMember(Node):
    owner: Node
    member: Node

    def left(self, ctx: Context) -> str:
        member, mctx = resolve(self.member, ctx)
        if is_function(member):
            return member.left(mctx) + "(" + self.owner.text(ctx) + "::*"
        return member.left(mctx) + " " + self.owner.text(ctx) + "::*"

    def right(self, ctx: Context) -> str:
        member, mctx = resolve(self.member, ctx)
        if is_function(member):
            return ")" + member.right(mctx)
        return member.right(mctx)


@dataclass
class Encoding(Node):
    """A function: `result name(params) qualifiers`; a function template's parameters refer to its
    own template arguments."""

    result: Node | None
    name: Node
    params: list[Node]
    qualifiers: str = ""

    def text(self, ctx: Context) -> str:
        typed_name = self.name.entity if isinstance(self.name, Local) else self.name
        if isinstance(typed_name, Template):
            ctx = ctx + (typed_name.args,)
        head = (self.result.left(ctx) + " ") if self.result is not None else ""
        tail = self.result.right(ctx) if self.result is not None else ""
        return f"{head}{self.name.text(ctx)}({join(self.params, ctx)}){self.qualifiers}{tail}"

    left = text


@dataclass
class Local(Node):
    encoding: Node
    entity: Node

    def text(self, ctx: Context) -> str:
        encoding = self.encoding
        if isinstance(encoding, Encoding):  # libiberty elides the enclosing function's return type
            encoding = Encoding(None, encoding.name, encoding.params, encoding.qualifiers)
        return f"{encoding.text(ctx)}::{self.entity.text(ctx)}"

    left = text


@dataclass
class Lambda(Node):
    params: list[Node]
    number: int

    def text(self, ctx: Context) -> str:
        return f"{{lambda({join(self.params, ctx)})#{self.number}}}"

    left = text


@dataclass
class Conversion(Node):
    target: Node

    def text(self, ctx: Context) -> str:
        return "operator " + self.target.text(ctx)

    left = text


@dataclass
class Suffixed(Node):
    inner: Node
    suffix: str  # an ABI tag "[abi:cxx11]", or "..." for a pack expansion

    def text(self, ctx: Context) -> str:
        return self.inner.text(ctx) + self.suffix

    left = text


@dataclass
class Cast(Node):
    """A literal of a type c++filt prints as a cast: (char)65, (MyEnum)2."""

    literal_type: Node
    value: str

    def text(self, ctx: Context) -> str:
        return f"({self.literal_type.text(ctx)}){self.value}"

    left = text


@dataclass
class PackExpansion(Node):
    """`Dp T`: the pattern printed once per element of the pack it names ("Ts..." -> "int, float")."""

    pattern: Node

    def text(self, ctx: Context) -> str:
        index = pack_parameter(self.pattern, ctx)
        if index is None:
            return self.pattern.text(ctx) + "..."
        pack = ctx[-1][index]
        parts = []
        for element in pack.args:
            bound = list(ctx[-1])
            bound[index] = element
            parts.append(self.pattern.text(ctx[:-1] + (bound,)))
        return ", ".join(parts)

    left = text


def pack_parameter(node: Node, ctx: Context) -> int | None:
    """The index of the first template parameter in `node` whose argument is a pack."""
    if isinstance(node, TemplateParam):
        if ctx and node.index < len(ctx[-1]) and isinstance(ctx[-1][node.index], Pack):
            return node.index
        return None
    for value in vars(node).values():
        children = value if isinstance(value, list) else [value]
        for child in children:
            if isinstance(child, Node):
                found = pack_parameter(child, ctx)
                if found is not None:
                    return found
    return None


def is_array(node: Node, ctx: Context) -> bool:
    while isinstance(node, (Qualified, TemplateParam)):
        node, ctx = resolve(node.inner, ctx) if isinstance(node, Qualified) else node.resolve(ctx)
    return isinstance(node, Array)


def is_function(node: Node) -> bool:
    return isinstance(node, Function) or (isinstance(node, Qualified) and isinstance(node.inner, Function))


def join(nodes: list[Node], ctx: Context) -> str:
    return ", ".join(text for text in (node.text(ctx) for node in nodes) if text)


def base_name(node: Node) -> str:
    """The unqualified name without template arguments: a constructor's name."""
    while isinstance(node, (Nested, Template, Suffixed)):
        node = node.inner if isinstance(node, Suffixed) else node.name
    return node.text(())
