"""A small Itanium C++ ABI demangler, enough for the kernel names PyTorch and CUDA libraries emit.

Output follows GNU `c++filt` (libiberty): `> >` between closing template brackets, lambdas as
`{lambda(float)#1}`, `(anonymous namespace)`, no return type on functions that enclose a local
name. Substitutions and template parameters are tracked as LLVM's ItaniumDemangle does. Anything
it does not cover (expressions, decltype, vendor types) makes `demangle` return the name unchanged.
Spec: https://itanium-cxx-abi.github.io/cxx-abi/abi.html#mangling
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

BUILTIN_TYPES = {
    "v": "void", "w": "wchar_t", "b": "bool", "c": "char", "a": "signed char", "h": "unsigned char",
    "s": "short", "t": "unsigned short", "i": "int", "j": "unsigned int", "l": "long",
    "m": "unsigned long", "x": "long long", "y": "unsigned long long", "n": "__int128",
    "o": "unsigned __int128", "f": "float", "d": "double", "e": "long double", "g": "__float128",
    "z": "...",
}
BUILTIN_D_TYPES = {
    "d": "decimal64", "e": "decimal128", "f": "decimal32", "h": "half", "i": "char32_t", "s": "char16_t",
    "u": "char8_t", "a": "auto", "c": "decltype(auto)", "n": "decltype(nullptr)",
}
# Integer literal types c++filt prints with a suffix ("2ul"); other types print as a cast ("(char)65").
LITERAL_SUFFIXES = {"i": "", "j": "u", "l": "l", "m": "ul", "x": "ll", "y": "ull"}
OPERATORS = {
    "nw": "new", "na": "new[]", "dl": "delete", "da": "delete[]", "ps": "+", "ng": "-", "ad": "&",
    "de": "*", "co": "~", "pl": "+", "mi": "-", "ml": "*", "dv": "/", "rm": "%", "an": "&", "or": "|",
    "eo": "^", "aS": "=", "pL": "+=", "mI": "-=", "mL": "*=", "dV": "/=", "rM": "%=", "aN": "&=",
    "oR": "|=", "eO": "^=", "ls": "<<", "rs": ">>", "lS": "<<=", "rS": ">>=", "eq": "==", "ne": "!=",
    "lt": "<", "gt": ">", "le": "<=", "ge": ">=", "ss": "<=>", "nt": "!", "aa": "&&", "oo": "||",
    "pp": "++", "mm": "--", "cm": ",", "pm": "->*", "pt": "->", "cl": "()", "ix": "[]", "qu": "?",
}
# The abbreviations Sa, Sb, Ss, Si, So, Sd, spelled out as c++filt does (it runs with DMGL_VERBOSE):
# std::string prints as std::basic_string<char, std::char_traits<char>, std::allocator<char> >.
STD_SUBSTITUTIONS = {
    "a": ("allocator", None), "b": ("basic_string", None),
    "s": ("basic_string", ["char", "std::char_traits<char>", "std::allocator<char>"]),
    "i": ("basic_istream", ["char", "std::char_traits<char>"]),
    "o": ("basic_ostream", ["char", "std::char_traits<char>"]),
    "d": ("basic_iostream", ["char", "std::char_traits<char>"]),
}


_END = "\0"


class _Fail(Exception):
    """The name uses something this demangler does not handle."""


# ------------------------------------------------------------------ AST
# Each node prints as a left and a right part so that declarators nest ("void (*)(int)",
# "int (*) [4]"). `ctx` is the stack of template argument lists that template parameters (T_, T0_)
# refer to: like libiberty, we resolve them when printing, against the innermost function template
# being printed, so a parameter reused through a substitution prints what it means where it is used.

Context = tuple  # tuple[list[_Node], ...]


class _Node:
    def left(self, ctx: Context) -> str:
        return self.text(ctx)

    def right(self, ctx: Context) -> str:
        return ""

    def text(self, ctx: Context) -> str:
        return self.left(ctx) + self.right(ctx)


@dataclass
class _Name(_Node):
    value: str

    def text(self, ctx: Context) -> str:
        return self.value

    def left(self, ctx: Context) -> str:
        return self.value


@dataclass
class _TemplateParam(_Node):
    index: int

    def resolve(self, ctx: Context) -> tuple[_Node, Context]:
        if not ctx or self.index >= len(ctx[-1]):
            raise _Fail(f"template parameter {self.index} has no argument")
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


def _resolve(node: _Node, ctx: Context) -> tuple[_Node, Context]:
    while isinstance(node, _TemplateParam):
        node, ctx = node.resolve(ctx)
    return node, ctx


@dataclass
class _Nested(_Node):
    prefix: _Node
    name: _Node

    def text(self, ctx: Context) -> str:
        return f"{self.prefix.text(ctx)}::{self.name.text(ctx)}"

    left = text


@dataclass
class _Template(_Node):
    name: _Node
    args: list[_Node]

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
class _Pack(_Node):
    args: list[_Node]

    def text(self, ctx: Context) -> str:
        return _join(self.args, ctx)

    left = text


@dataclass
class _Qualified(_Node):
    inner: _Node
    qualifiers: str  # " const", " volatile"...

    def left(self, ctx: Context) -> str:
        inner, ictx = _resolve(self.inner, ctx)
        if isinstance(inner, _Function):
            return inner.left(ictx)
        if isinstance(inner, _Qualified):  # T const with T = X const: one const, as c++filt prints
            extra = [q for q in self.qualifiers.split() if q not in inner.qualifiers.split()]
            return inner.left(ictx) + "".join(" " + q for q in extra)
        return inner.left(ictx) + self.qualifiers

    def right(self, ctx: Context) -> str:
        inner, ictx = _resolve(self.inner, ctx)
        if isinstance(inner, _Function):
            return inner.right(ictx) + self.qualifiers
        return inner.right(ictx)


@dataclass
class _Pointer(_Node):
    inner: _Node
    symbol: str  # "*", "&", "&&"

    def left(self, ctx: Context) -> str:
        inner, ictx, symbol = self._collapsed(ctx)
        if _is_function(inner):
            return inner.left(ictx) + "(" + symbol  # "int (*" + ")(double)"
        if _is_array(inner, ictx):
            return inner.left(ictx) + " (" + symbol  # "char const (&" + ") [4]"
        return inner.left(ictx) + symbol

    def right(self, ctx: Context) -> str:
        inner, ictx, _ = self._collapsed(ctx)
        if _is_function(inner) or _is_array(inner, ictx):
            return ")" + inner.right(ictx)
        return inner.right(ictx)

    def _collapsed(self, ctx: Context) -> tuple[_Node, Context, str]:
        """Reference collapsing: a reference to a reference is one reference (& wins over &&)."""
        inner, ictx = _resolve(self.inner, ctx)
        symbol = self.symbol
        while symbol != "*" and isinstance(inner, _Pointer) and inner.symbol != "*":
            symbol = "&" if "&" in (symbol, inner.symbol) else "&&"
            inner, ictx = _resolve(inner.inner, ictx)
        return inner, ictx, symbol


@dataclass
class _Function(_Node):
    result: _Node
    params: list[_Node]

    def left(self, ctx: Context) -> str:
        return self.result.left(ctx) + " "

    def right(self, ctx: Context) -> str:
        return f"({_join(self.params, ctx)})" + self.result.right(ctx)


@dataclass
class _Array(_Node):
    inner: _Node
    dimension: str

    def left(self, ctx: Context) -> str:
        return self.inner.left(ctx)

    def right(self, ctx: Context) -> str:
        return f" [{self.dimension}]" + self.inner.right(ctx)


@dataclass
class _PointerToMember(_Node):
    owner: _Node
    member: _Node

    def left(self, ctx: Context) -> str:
        member, mctx = _resolve(self.member, ctx)
        if _is_function(member):
            return member.left(mctx) + "(" + self.owner.text(ctx) + "::*"
        return member.left(mctx) + " " + self.owner.text(ctx) + "::*"

    def right(self, ctx: Context) -> str:
        member, mctx = _resolve(self.member, ctx)
        if _is_function(member):
            return ")" + member.right(mctx)
        return member.right(mctx)


@dataclass
class _Encoding(_Node):
    """A function: `result name(params) qualifiers`; a function template's parameters refer to its
    own template arguments."""

    result: _Node | None
    name: _Node
    params: list[_Node]
    qualifiers: str = ""

    def text(self, ctx: Context) -> str:
        typed_name = self.name.entity if isinstance(self.name, _Local) else self.name
        if isinstance(typed_name, _Template):
            ctx = ctx + (typed_name.args,)
        head = (self.result.left(ctx) + " ") if self.result is not None else ""
        tail = self.result.right(ctx) if self.result is not None else ""
        return f"{head}{self.name.text(ctx)}({_join(self.params, ctx)}){self.qualifiers}{tail}"

    left = text


@dataclass
class _Local(_Node):
    encoding: _Node
    entity: _Node

    def text(self, ctx: Context) -> str:
        encoding = self.encoding
        if isinstance(encoding, _Encoding):  # libiberty elides the enclosing function's return type
            encoding = _Encoding(None, encoding.name, encoding.params, encoding.qualifiers)
        return f"{encoding.text(ctx)}::{self.entity.text(ctx)}"

    left = text


@dataclass
class _Lambda(_Node):
    params: list[_Node]
    number: int

    def text(self, ctx: Context) -> str:
        return f"{{lambda({_join(self.params, ctx)})#{self.number}}}"

    left = text


@dataclass
class _Conversion(_Node):
    target: _Node

    def text(self, ctx: Context) -> str:
        return "operator " + self.target.text(ctx)

    left = text


@dataclass
class _Suffixed(_Node):
    inner: _Node
    suffix: str  # an ABI tag "[abi:cxx11]", or "..." for a pack expansion

    def text(self, ctx: Context) -> str:
        return self.inner.text(ctx) + self.suffix

    left = text


@dataclass
class _Cast(_Node):
    """A literal of a type c++filt prints as a cast: (char)65, (MyEnum)2."""

    literal_type: _Node
    value: str

    def text(self, ctx: Context) -> str:
        return f"({self.literal_type.text(ctx)}){self.value}"

    left = text


@dataclass
class _PackExpansion(_Node):
    """`Dp T`: the pattern printed once per element of the pack it names ("Ts..." -> "int, float")."""

    pattern: _Node

    def text(self, ctx: Context) -> str:
        index = _pack_parameter(self.pattern, ctx)
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


def _pack_parameter(node: _Node, ctx: Context) -> int | None:
    """The index of the first template parameter in `node` whose argument is a pack."""
    if isinstance(node, _TemplateParam):
        if ctx and node.index < len(ctx[-1]) and isinstance(ctx[-1][node.index], _Pack):
            return node.index
        return None
    for value in vars(node).values():
        children = value if isinstance(value, list) else [value]
        for child in children:
            if isinstance(child, _Node):
                found = _pack_parameter(child, ctx)
                if found is not None:
                    return found
    return None


def _is_array(node: _Node, ctx: Context) -> bool:
    while isinstance(node, (_Qualified, _TemplateParam)):
        node, ctx = _resolve(node.inner, ctx) if isinstance(node, _Qualified) else node.resolve(ctx)
    return isinstance(node, _Array)


def _is_function(node: _Node) -> bool:
    return isinstance(node, _Function) or (isinstance(node, _Qualified) and isinstance(node.inner, _Function))


def _join(nodes: list[_Node], ctx: Context) -> str:
    return ", ".join(text for text in (node.text(ctx) for node in nodes) if text)


def _base_name(node: _Node) -> str:
    """The unqualified name without template arguments: a constructor's name."""
    while isinstance(node, (_Nested, _Template, _Suffixed)):
        node = node.inner if isinstance(node, _Suffixed) else node.name
    return node.text(())


# ------------------------------------------------------------------ parser

class _Parser:
    def __init__(self, mangled: str) -> None:
        self.s = mangled
        self.pos = 0
        self.subs: list[_Node] = []

    def peek(self, offset: int = 0) -> str:
        """The character `offset` ahead, or END past the end (never "", which `in` would match)."""
        i = self.pos + offset
        return self.s[i] if i < len(self.s) else _END

    def at_end_of_encoding(self) -> bool:
        return self.peek() in (_END, "E", ".")

    def eat(self, text: str) -> bool:
        if self.s.startswith(text, self.pos):
            self.pos += len(text)
            return True
        return False

    def expect(self, text: str) -> None:
        if not self.eat(text):
            raise _Fail(f"expected {text!r} at {self.pos}")

    def number(self) -> int:
        start = self.pos
        negative = self.eat("n")
        while self.peek().isdigit():
            self.pos += 1
        if self.pos == start + negative:
            raise _Fail(f"expected a number at {start}")
        return int(self.s[start + negative:self.pos]) * (-1 if negative else 1)

    def seq_id(self) -> int:
        """Base-36 substitution / template-parameter index: "_" is 0, "0_" is 1, "A_" is 11."""
        if self.eat("_"):
            return 0
        start = self.pos
        while self.peek() not in ("_", _END):
            self.pos += 1
        digits = self.s[start:self.pos]
        self.expect("_")
        return int(digits, 36) + 1

    # <mangled-name> ::= _Z <encoding> [.<clone suffix>]*
    def mangled_name(self) -> _Node:
        self.expect("_Z")
        node = self.encoding()
        suffixes = []
        while self.peek() == ".":
            end = self.s.find(".", self.pos + 1)
            end = len(self.s) if end == -1 else end
            suffixes.append(f" [clone {self.s[self.pos:end]}]")
            self.pos = end
        if self.pos != len(self.s):
            raise _Fail(f"unparsed text at {self.pos}")
        return _Name(node.text(()) + "".join(suffixes))

    def encoding(self) -> _Node:
        state = {"cv": "", "template": False, "ctor": False}
        name = self.name(state)
        if self.at_end_of_encoding():
            return name
        # Function templates (but not constructors or conversions) mangle their return type first.
        result = self.type() if state["template"] and not state["ctor"] else None
        if self.peek() == "v":  # "v" alone: no parameters
            self.pos += 1
            params: list[_Node] = []
            if not self.at_end_of_encoding():
                raise _Fail("void followed by more parameters")
        else:
            params = self.types_until_end()
        return _Encoding(result, name, params, state["cv"])

    def types_until_end(self) -> list[_Node]:
        params = []
        while not self.at_end_of_encoding():
            params.append(self.type())
        return params

    # <name>
    def name(self, state: dict | None) -> _Node:
        if self.peek() == "N":
            return self.nested_name(state)
        if self.peek() == "Z":
            return self.local_name(state)
        is_sub = self.peek() == "S" and self.peek(1) != "t"
        node = self.unscoped_name(state)
        if self.peek() == "I":
            if not is_sub:
                self.subs.append(node)
            node = _Template(node, self.template_args())
            if state is not None:
                state["template"] = True
        elif is_sub:
            raise _Fail("a substitution as a name must be a template")
        return node

    def unscoped_name(self, state: dict | None) -> _Node:
        if self.peek() == "S" and self.peek(1) != "t":
            return self.substitution()
        if self.eat("St"):
            return _Nested(_Name("std"), self.unqualified_name(state, None))
        self.eat("L")  # internal linkage (GCC)
        return self.unqualified_name(state, None)

    def nested_name(self, state: dict | None) -> _Node:
        self.expect("N")
        cv = self.cv_qualifiers()
        ref = " &&" if self.eat("O") else (" &" if self.eat("R") else "")
        if state is not None:
            state["cv"] = cv + ref
        so_far: _Node | None = None
        while not self.eat("E"):
            if state is not None:
                state["template"] = False
            if self.peek() == "T":
                so_far = self.template_param()
            elif self.peek() == "I":
                if so_far is None:
                    raise _Fail("template args without a name")
                so_far = _Template(so_far, self.template_args())
                if state is not None:
                    state["template"] = True
            elif self.peek() == "S" and self.peek(1) != "t":
                if so_far is not None:
                    raise _Fail("substitution inside a nested name")
                so_far = self.substitution()
                continue  # a substitution is not added again
            else:
                self.eat("L")  # GCC marks names with internal linkage; nothing to print
                if self.eat("St"):
                    so_far = _Name("std")
                    if self.peek() == "E":
                        raise _Fail("bare std in nested name")
                name = self.unqualified_name(state, so_far)
                so_far = name if so_far is None else _Nested(so_far, name)
            self.subs.append(so_far)
        if so_far is None or not self.subs:
            raise _Fail("empty nested name")
        self.subs.pop()
        return so_far

    def local_name(self, state: dict | None) -> _Node:
        self.expect("Z")
        encoding = self.encoding()
        self.expect("E")
        if self.eat("s"):
            self.discriminator()
            return _Local(encoding, _Name("string literal"))
        if self.eat("d"):
            if self.peek() != "_":
                self.number()
            self.expect("_")
        entity = self.name(state)
        if not isinstance(entity, _Name) or not entity.value.startswith("{"):
            self.discriminator()  # lambdas and unnamed types carry their own number
        return _Local(encoding, entity)

    def discriminator(self) -> None:
        if self.peek() == "_" and self.peek(1).isdigit():
            self.pos += 2
        elif self.eat("__"):
            self.number()
            self.expect("_")

    def unqualified_name(self, state: dict | None, scope: _Node | None) -> _Node:
        c = self.peek()
        if c.isdigit():
            node = self.source_name()
        elif c == "U":
            node = self.unnamed_type()
        elif c in "CD" and self.peek(1) in "0123456789I" and not (c == "D" and self.peek(1) == "C"):
            node = self.ctor_dtor(state, scope)
        elif c.islower():
            node = self.operator_name(state)
        else:
            raise _Fail(f"unsupported name at {self.pos}")
        while self.eat("B"):  # ABI tag: name[abi:cxx11]
            node = _Suffixed(node, f"[abi:{self.source_name().text(())}]")
        return node

    def source_name(self) -> _Node:
        length = self.number()
        if length <= 0 or self.pos + length > len(self.s):
            raise _Fail("bad source name length")
        text = self.s[self.pos:self.pos + length]
        self.pos += length
        return _Name("(anonymous namespace)" if text.startswith("_GLOBAL__N") else text)

    def unnamed_type(self) -> _Node:
        if self.eat("Ut"):
            return _Name(f"{{unnamed type#{self._closure_number()}}}")
        if self.eat("Ul"):
            params = [] if self.eat("vE") else self.lambda_params()
            return _Lambda(params, self._closure_number())
        raise _Fail(f"unsupported unnamed type at {self.pos}")

    def lambda_params(self) -> list[_Node]:
        params = []
        while not self.eat("E"):
            params.append(self.type())
        return params

    def _closure_number(self) -> int:
        """"_" is #1, "0_" is #2, "1_" is #3."""
        if self.eat("_"):
            return 1
        number = self.number() + 2
        self.expect("_")
        return number

    def ctor_dtor(self, state: dict | None, scope: _Node | None) -> _Node:
        if scope is None:
            raise _Fail("constructor outside a class")
        if state is not None:
            state["ctor"] = True
        base = _base_name(scope)
        if self.eat("C"):
            if self.eat("I"):  # inheriting constructor: CI1 <base class type>
                self.pos += 1
                self.type()
            else:
                self.pos += 1
            return _Name(base)
        self.expect("D")
        self.pos += 1
        return _Name("~" + base)

    def operator_name(self, state: dict | None) -> _Node:
        code = self.s[self.pos:self.pos + 2]
        if code == "cv":
            self.pos += 2
            if state is not None:
                state["ctor"] = True
            return _Conversion(self.type())
        if code == "li":
            self.pos += 2
            return _Name('operator"" ' + self.source_name().text(()))
        if code not in OPERATORS:
            raise _Fail(f"unknown operator {code!r}")
        self.pos += 2
        symbol = OPERATORS[code]
        return _Name("operator" + (" " if symbol[0].isalpha() else "") + symbol)

    def cv_qualifiers(self) -> str:
        quals = ""
        for code, text in (("r", " restrict"), ("V", " volatile"), ("K", " const")):
            if self.eat(code):
                quals = text + quals
        return quals

    def substitution(self) -> _Node:
        self.expect("S")
        if self.peek() in STD_SUBSTITUTIONS:
            name, args = STD_SUBSTITUTIONS[self.peek()]
            self.pos += 1
            node: _Node = _Nested(_Name("std"), _Name(name))
            return node if args is None else _Template(node, [_Name(a) for a in args])
        index = self.seq_id()
        if index >= len(self.subs):
            raise _Fail(f"substitution S{index} out of range")
        return self.subs[index]

    def template_param(self) -> _Node:
        self.expect("T")
        return _TemplateParam(self.seq_id())

    def template_args(self) -> list[_Node]:
        """<template-args> ::= I <arg>+ E."""
        self.expect("I")
        args: list[_Node] = []
        while not self.eat("E"):
            args.append(self.template_arg())
        return args

    def template_arg(self) -> _Node:
        if self.eat("J"):
            pack = []
            while not self.eat("E"):
                pack.append(self.template_arg())
            return _Pack(pack)
        if self.peek() == "L":
            return self.literal()
        if self.peek() == "X":
            raise _Fail("expressions are not supported")
        return self.type()

    def literal(self) -> _Node:
        self.expect("L")
        if self.eat("_Z"):
            node = self.encoding()
            self.expect("E")
            return node
        code = self.peek()
        if code == "b" and self.peek(1) in "01" and self.peek(2) == "E":
            self.pos += 3
            return _Name("true" if self.s[self.pos - 2] == "1" else "false")
        literal_type = self.type()
        start = self.pos
        while self.peek() not in ("E", _END):
            self.pos += 1
        value = self.s[start:self.pos].replace("n", "-", 1) if self.s[start:start + 1] == "n" else self.s[start:self.pos]
        self.expect("E")
        if code in LITERAL_SUFFIXES and isinstance(literal_type, _Name) and literal_type.value == BUILTIN_TYPES[code]:
            return _Name(value + LITERAL_SUFFIXES[code])
        return _Cast(literal_type, value)

    # <type>
    def type(self) -> _Node:
        c = self.peek()
        if c in BUILTIN_TYPES:
            self.pos += 1
            return _Name(BUILTIN_TYPES[c])
        if c == "D" and self.peek(1) in BUILTIN_D_TYPES:
            self.pos += 2
            return _Name(BUILTIN_D_TYPES[self.s[self.pos - 1]])
        if c in "rVK":
            quals = self.cv_qualifiers()
            node: _Node = _Qualified(self.type(), quals)
        elif c in "PRO":
            self.pos += 1
            node = _Pointer(self.type(), {"P": "*", "R": "&", "O": "&&"}[c])
        elif c == "F":
            node = self.function_type()
        elif c == "A":
            node = self.array_type()
        elif c == "M":
            self.pos += 1
            owner = self.type()
            member = self.type()
            node = _PointerToMember(owner, member)
        elif c == "D" and self.peek(1) == "p":
            self.pos += 2
            node = _PackExpansion(self.type())
        elif c == "T":
            node = self.template_param()
            if self.peek() == "I":
                self.subs.append(node)
                node = _Template(node, self.template_args())
        elif c == "S" and self.peek(1) != "t":
            node = self.substitution()
            if self.peek() != "I":
                return node  # a plain substitution is not added again
            node = _Template(node, self.template_args())
        else:
            node = self.name(None)  # class, enum, or a local (lambda) type
        self.subs.append(node)
        return node

    def function_type(self) -> _Node:
        self.expect("F")
        self.eat("Y")  # extern "C"
        result = self.type()
        params: list[_Node] = []
        while not self.eat("E"):
            if self.eat("v") and self.peek() == "E":
                continue
            if self.peek() in "RO" and self.peek(1) == "E":  # ref-qualifier on the function type
                self.pos += 1
                continue
            params.append(self.type())
        return _Function(result, params)

    def array_type(self) -> _Node:
        self.expect("A")
        dimension = str(self.number()) if self.peek().isdigit() else ""
        self.expect("_")
        return _Array(self.type(), dimension)



@lru_cache(maxsize=65536)
def demangle(name: str) -> str:
    """The C++ name `c++filt` would print for `name`, or `name` itself if it is not one we can read.

    Plain names (Triton kernels, scopes) come back unchanged."""
    if not name.startswith("_Z"):
        return name
    try:
        return _Parser(name).mangled_name().text(())
    except (_Fail, ValueError, IndexError, RecursionError):
        return name


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
