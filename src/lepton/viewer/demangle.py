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
STD_SUBSTITUTIONS = {
    "a": "std::allocator", "b": "std::basic_string", "s": "std::string", "i": "std::istream",
    "o": "std::ostream", "d": "std::iostream",
}


_END = "\0"


class _Fail(Exception):
    """The name uses something this demangler does not handle."""


# ------------------------------------------------------------------ AST: each node prints itself
# as a left and a right part, so that declarators nest: "void (*)(int)", "int (*) [4]".

class _Node:
    def left(self) -> str:
        return str(self)

    def right(self) -> str:
        return ""

    def text(self) -> str:
        return self.left() + self.right()


@dataclass
class _Name(_Node):
    value: str

    def __str__(self) -> str:
        return self.value


@dataclass
class _Nested(_Node):
    prefix: _Node
    name: _Node

    def __str__(self) -> str:
        return f"{self.prefix.text()}::{self.name.text()}"


@dataclass
class _Template(_Node):
    name: _Node
    args: list[_Node]

    def __str__(self) -> str:
        inner = ", ".join(a.text() for a in _flatten_packs(self.args))
        return f"{self.name.text()}<{inner}{' ' if inner.endswith('>') else ''}>"


@dataclass
class _Pack(_Node):
    args: list[_Node]

    def __str__(self) -> str:
        return ", ".join(a.text() for a in self.args)


@dataclass
class _Qualified(_Node):
    inner: _Node
    qualifiers: str  # " const", " volatile"...

    def left(self) -> str:
        if isinstance(self.inner, _Function):
            return self.inner.left()
        return self.inner.left() + self.qualifiers

    def right(self) -> str:
        if isinstance(self.inner, _Function):
            return self.inner.right() + self.qualifiers
        return self.inner.right()


@dataclass
class _Pointer(_Node):
    inner: _Node
    symbol: str  # "*", "&", "&&"

    def left(self) -> str:
        if isinstance(self.inner, (_Function, _Array)):
            return self.inner.left() + "(" + self.symbol
        return self.inner.left() + self.symbol

    def right(self) -> str:
        if isinstance(self.inner, (_Function, _Array)):
            return ")" + self.inner.right()
        return self.inner.right()


@dataclass
class _Function(_Node):
    result: _Node
    params: list[_Node]

    def left(self) -> str:
        return self.result.left() + " "

    def right(self) -> str:
        return f"({_params(self.params)})" + self.result.right()


@dataclass
class _Array(_Node):
    inner: _Node
    dimension: str

    def left(self) -> str:
        return self.inner.left()

    def right(self) -> str:
        return f" [{self.dimension}]" + self.inner.right()


@dataclass
class _Encoding(_Node):
    result: _Node | None
    name: _Node
    params: list[_Node]
    qualifiers: str = ""

    def __str__(self) -> str:
        head = (self.result.left() + " ") if self.result is not None else ""
        tail = self.result.right() if self.result is not None else ""
        return f"{head}{self.name.text()}({_params(self.params)}){self.qualifiers}{tail}"


@dataclass
class _Local(_Node):
    encoding: _Node
    entity: _Node

    def __str__(self) -> str:
        encoding = self.encoding
        if isinstance(encoding, _Encoding):  # libiberty elides the enclosing function's return type
            encoding = _Encoding(None, encoding.name, encoding.params, encoding.qualifiers)
        return f"{encoding.text()}::{self.entity.text()}"


def _flatten_packs(args: list[_Node]) -> list[_Node]:
    flat: list[_Node] = []
    for arg in args:
        flat.extend(_flatten_packs(arg.args) if isinstance(arg, _Pack) else [arg])
    return flat


def _params(params: list[_Node]) -> str:
    return ", ".join(p.text() for p in _flatten_packs(params))


def _base_name(node: _Node) -> str:
    """The unqualified name without template arguments: a constructor's name."""
    while isinstance(node, (_Nested, _Template)):
        node = node.name
    return node.text()


# ------------------------------------------------------------------ parser

class _Parser:
    def __init__(self, mangled: str) -> None:
        self.s = mangled
        self.pos = 0
        self.subs: list[_Node] = []
        self.template_params: list[_Node] = []  # what T_, T0_... refer to

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
        return _Name(node.text() + "".join(suffixes))

    def encoding(self) -> _Node:
        saved = self.template_params  # an encoding's template parameters are its own
        self.template_params = []
        try:
            state = {"cv": "", "template": False, "ctor": False}
            name = self.name(state)
            if self.at_end_of_encoding():
                return name
            result = self.type() if state["template"] and not state["ctor"] else None
            if self.peek() == "v":  # "v" alone: no parameters
                self.pos += 1
                params = []
                if not self.at_end_of_encoding():
                    raise _Fail("void followed by more parameters")
            else:
                params = self.types_until_end()
            return _Encoding(result, name, params, state["cv"])
        finally:
            self.template_params = saved

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
            node = _Template(node, self.template_args(tag=state is not None))
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
                so_far = _Template(so_far, self.template_args(tag=state is not None))
                if state is not None:
                    state["template"] = True
            elif self.peek() == "S" and self.peek(1) != "t":
                if so_far is not None:
                    raise _Fail("substitution inside a nested name")
                so_far = self.substitution()
                continue  # a substitution is not added again
            else:
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
            node = _Name(f"{node.text()}[abi:{self.source_name().text()}]")
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
            return _Name(f"{{lambda({_params(params)})#{self._closure_number()}}}")
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
            return _Name("operator " + self.type().text())
        if code == "li":
            self.pos += 2
            return _Name('operator"" ' + self.source_name().text())
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
            node = _Name(STD_SUBSTITUTIONS[self.peek()])
            self.pos += 1
            return node
        index = self.seq_id()
        if index >= len(self.subs):
            raise _Fail(f"substitution S{index} out of range")
        return self.subs[index]

    def template_param(self) -> _Node:
        self.expect("T")
        index = self.seq_id()
        if index >= len(self.template_params):
            raise _Fail(f"template parameter T{index} out of range")
        return self.template_params[index]

    def template_args(self, tag: bool) -> list[_Node]:
        """<template-args> ::= I <arg>+ E. With `tag`, they become what T_ refers to."""
        self.expect("I")
        args: list[_Node] = []
        if tag:
            self.template_params = args  # filled as we go, as later args may refer to earlier ones
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
            return _Name(node.text())
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
        return _Name(f"({literal_type.text()}){value}")

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
            node = _Name(self.type().text() + "...")
        elif c == "T":
            node = self.template_param()
            if self.peek() == "I":
                self.subs.append(node)
                node = _Template(node, self.template_args(tag=False))
        elif c == "S" and self.peek(1) != "t":
            node = self.substitution()
            if self.peek() != "I":
                return node  # a plain substitution is not added again
            node = _Template(node, self.template_args(tag=False))
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


@dataclass
class _PointerToMember(_Node):
    owner: _Node
    member: _Node

    def left(self) -> str:
        if isinstance(self.member, _Function):
            return self.member.left() + "(" + self.owner.text() + "::*"
        return self.member.left() + " " + self.owner.text() + "::*"

    def right(self) -> str:
        if isinstance(self.member, _Function):
            return ")" + self.member.right()
        return self.member.right()


@lru_cache(maxsize=65536)
def demangle(name: str) -> str:
    """The C++ name `c++filt` would print for `name`, or `name` itself if it is not one we can read.

    Plain names (Triton kernels, scopes) come back unchanged."""
    if not name.startswith("_Z"):
        return name
    try:
        return _Parser(name).mangled_name().text()
    except (_Fail, ValueError, IndexError, RecursionError):
        return name
