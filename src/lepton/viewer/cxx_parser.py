"""An Itanium C++ ABI name parser (https://itanium-cxx-abi.github.io/cxx-abi/abi.html#mangling).

Substitution candidates are recorded where LLVM's ItaniumDemangle and libiberty record them; the
tree it builds prints as GNU c++filt prints (see cxx_ast). Anything it does not cover
(expressions, decltype, vendor types) raises Fail.
"""
from __future__ import annotations

from .cxx_ast import (
    Array,
    Cast,
    Conversion,
    Encoding,
    Fail,
    Function,
    Lambda,
    Local,
    Name,
    Nested,
    Node,
    Pack,
    PackExpansion,
    Pointer,
    PointerToMember,
    Qualified,
    Suffixed,
    Template,
    TemplateParam,
    base_name,
)

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



class Parser:
    def __init__(self, mangled: str) -> None:
        self.s = mangled
        self.pos = 0
        self.subs: list[Node] = []

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
            raise Fail(f"expected {text!r} at {self.pos}")

    def number(self) -> int:
        start = self.pos
        negative = self.eat("n")
        while self.peek().isdigit():
            self.pos += 1
        if self.pos == start + negative:
            raise Fail(f"expected a number at {start}")
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
    def mangled_name(self) -> Node:
        self.expect("_Z")
        node = self.encoding()
        suffixes = []
        while self.peek() == ".":
            end = self.s.find(".", self.pos + 1)
            end = len(self.s) if end == -1 else end
            suffixes.append(f" [clone {self.s[self.pos:end]}]")
            self.pos = end
        if self.pos != len(self.s):
            raise Fail(f"unparsed text at {self.pos}")
        return Name(node.text(()) + "".join(suffixes))

    def encoding(self) -> Node:
        state = {"cv": "", "template": False, "ctor": False}
        name = self.name(state)
        if self.at_end_of_encoding():
            return name
        # Function templates (but not constructors or conversions) mangle their return type first.
        result = self.type() if state["template"] and not state["ctor"] else None
        if self.peek() == "v":  # "v" alone: no parameters
            self.pos += 1
            params: list[Node] = []
            if not self.at_end_of_encoding():
                raise Fail("void followed by more parameters")
        else:
            params = self.types_until_end()
        return Encoding(result, name, params, state["cv"])

    def types_until_end(self) -> list[Node]:
        params = []
        while not self.at_end_of_encoding():
            params.append(self.type())
        return params

    # <name>
    def name(self, state: dict | None) -> Node:
        if self.peek() == "N":
            return self.nested_name(state)
        if self.peek() == "Z":
            return self.local_name(state)
        is_sub = self.peek() == "S" and self.peek(1) != "t"
        node = self.unscoped_name(state)
        if self.peek() == "I":
            if not is_sub:
                self.subs.append(node)
            node = Template(node, self.template_args())
            if state is not None:
                state["template"] = True
        elif is_sub:
            raise Fail("a substitution as a name must be a template")
        return node

    def unscoped_name(self, state: dict | None) -> Node:
        if self.peek() == "S" and self.peek(1) != "t":
            return self.substitution()
        if self.eat("St"):
            return Nested(Name("std"), self.unqualified_name(state, None))
        self.eat("L")  # internal linkage (GCC)
        return self.unqualified_name(state, None)

    def nested_name(self, state: dict | None) -> Node:
        self.expect("N")
        cv = self.cv_qualifiers()
        ref = " &&" if self.eat("O") else (" &" if self.eat("R") else "")
        if state is not None:
            state["cv"] = cv + ref
        so_far: Node | None = None
        while not self.eat("E"):
            if state is not None:
                state["template"] = False
            if self.peek() == "T":
                so_far = self.template_param()
            elif self.peek() == "I":
                if so_far is None:
                    raise Fail("template args without a name")
                so_far = Template(so_far, self.template_args())
                if state is not None:
                    state["template"] = True
            elif self.peek() == "S" and self.peek(1) != "t":
                if so_far is not None:
                    raise Fail("substitution inside a nested name")
                so_far = self.substitution()
                continue  # a substitution is not added again
            else:
                self.eat("L")  # GCC marks names with internal linkage; nothing to print
                if self.eat("St"):
                    so_far = Name("std")
                    if self.peek() == "E":
                        raise Fail("bare std in nested name")
                name = self.unqualified_name(state, so_far)
                so_far = name if so_far is None else Nested(so_far, name)
            self.subs.append(so_far)
        if so_far is None or not self.subs:
            raise Fail("empty nested name")
        self.subs.pop()
        return so_far

    def local_name(self, state: dict | None) -> Node:
        self.expect("Z")
        encoding = self.encoding()
        self.expect("E")
        if self.eat("s"):
            self.discriminator()
            return Local(encoding, Name("string literal"))
        if self.eat("d"):
            if self.peek() != "_":
                self.number()
            self.expect("_")
        entity = self.name(state)
        if not isinstance(entity, Name) or not entity.value.startswith("{"):
            self.discriminator()  # lambdas and unnamed types carry their own number
        return Local(encoding, entity)

    def discriminator(self) -> None:
        if self.peek() == "_" and self.peek(1).isdigit():
            self.pos += 2
        elif self.eat("__"):
            self.number()
            self.expect("_")

    def unqualified_name(self, state: dict | None, scope: Node | None) -> Node:
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
            raise Fail(f"unsupported name at {self.pos}")
        while self.eat("B"):  # ABI tag: name[abi:cxx11]
            node = Suffixed(node, f"[abi:{self.source_name().text(())}]")
        return node

    def source_name(self) -> Node:
        length = self.number()
        if length <= 0 or self.pos + length > len(self.s):
            raise Fail("bad source name length")
        text = self.s[self.pos:self.pos + length]
        self.pos += length
        return Name("(anonymous namespace)" if text.startswith("_GLOBAL__N") else text)

    def unnamed_type(self) -> Node:
        if self.eat("Ut"):
            return Name(f"{{unnamed type#{self._closure_number()}}}")
        if self.eat("Ul"):
            params = [] if self.eat("vE") else self.lambda_params()
            return Lambda(params, self._closure_number())
        raise Fail(f"unsupported unnamed type at {self.pos}")

    def lambda_params(self) -> list[Node]:
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

    def ctor_dtor(self, state: dict | None, scope: Node | None) -> Node:
        if scope is None:
            raise Fail("constructor outside a class")
        if state is not None:
            state["ctor"] = True
        base = base_name(scope)
        if self.eat("C"):
            if self.eat("I"):  # inheriting constructor: CI1 <base class type>
                self.pos += 1
                self.type()
            else:
                self.pos += 1
            return Name(base)
        self.expect("D")
        self.pos += 1
        return Name("~" + base)

    def operator_name(self, state: dict | None) -> Node:
        code = self.s[self.pos:self.pos + 2]
        if code == "cv":
            self.pos += 2
            if state is not None:
                state["ctor"] = True
            return Conversion(self.type())
        if code == "li":
            self.pos += 2
            return Name('operator"" ' + self.source_name().text(()))
        if code not in OPERATORS:
            raise Fail(f"unknown operator {code!r}")
        self.pos += 2
        symbol = OPERATORS[code]
        return Name("operator" + (" " if symbol[0].isalpha() else "") + symbol)

    def cv_qualifiers(self) -> str:
        quals = ""
        for code, text in (("r", " restrict"), ("V", " volatile"), ("K", " const")):
            if self.eat(code):
                quals = text + quals
        return quals

    def substitution(self) -> Node:
        self.expect("S")
        if self.peek() in STD_SUBSTITUTIONS:
            name, args = STD_SUBSTITUTIONS[self.peek()]
            self.pos += 1
            node: Node = Nested(Name("std"), Name(name))
            return node if args is None else Template(node, [Name(a) for a in args])
        index = self.seq_id()
        if index >= len(self.subs):
            raise Fail(f"substitution S{index} out of range")
        return self.subs[index]

    def template_param(self) -> Node:
        self.expect("T")
        return TemplateParam(self.seq_id())

    def template_args(self) -> list[Node]:
        """<template-args> ::= I <arg>+ E."""
        self.expect("I")
        args: list[Node] = []
        while not self.eat("E"):
            args.append(self.template_arg())
        return args

    def template_arg(self) -> Node:
        if self.eat("J"):
            pack = []
            while not self.eat("E"):
                pack.append(self.template_arg())
            return Pack(pack)
        if self.peek() == "L":
            return self.literal()
        if self.peek() == "X":
            raise Fail("expressions are not supported")
        return self.type()

    def literal(self) -> Node:
        self.expect("L")
        if self.eat("_Z"):
            node = self.encoding()
            self.expect("E")
            return node
        code = self.peek()
        if code == "b" and self.peek(1) in "01" and self.peek(2) == "E":
            self.pos += 3
            return Name("true" if self.s[self.pos - 2] == "1" else "false")
        literal_type = self.type()
        start = self.pos
        while self.peek() not in ("E", _END):
            self.pos += 1
        value = self.s[start:self.pos].replace("n", "-", 1) if self.s[start:start + 1] == "n" else self.s[start:self.pos]
        self.expect("E")
        if code in LITERAL_SUFFIXES and isinstance(literal_type, Name) and literal_type.value == BUILTIN_TYPES[code]:
            return Name(value + LITERAL_SUFFIXES[code])
        return Cast(literal_type, value)

    # <type>
    def type(self) -> Node:
        c = self.peek()
        if c in BUILTIN_TYPES:
            self.pos += 1
            return Name(BUILTIN_TYPES[c])
        if c == "D" and self.peek(1) in BUILTIN_D_TYPES:
            self.pos += 2
            return Name(BUILTIN_D_TYPES[self.s[self.pos - 1]])
        if c in "rVK":
            quals = self.cv_qualifiers()
            node: Node = Qualified(self.type(), quals)
        elif c in "PRO":
            self.pos += 1
            node = Pointer(self.type(), {"P": "*", "R": "&", "O": "&&"}[c])
        elif c == "F":
            node = self.function_type()
        elif c == "A":
            node = self.array_type()
        elif c == "M":
            self.pos += 1
            owner = self.type()
            member = self.type()
            node = PointerToMember(owner, member)
        elif c == "D" and self.peek(1) == "p":
            self.pos += 2
            node = PackExpansion(self.type())
        elif c == "T":
            node = self.template_param()
            if self.peek() == "I":
                self.subs.append(node)
                node = Template(node, self.template_args())
        elif c == "S" and self.peek(1) != "t":
            node = self.substitution()
            if self.peek() != "I":
                return node  # a plain substitution is not added again
            node = Template(node, self.template_args())
        else:
            node = self.name(None)  # class, enum, or a local (lambda) type
        self.subs.append(node)
        return node

    def function_type(self) -> Node:
        self.expect("F")
        self.eat("Y")  # extern "C"
        result = self.type()
        params: list[Node] = []
        while not self.eat("E"):
            if self.eat("v") and self.peek() == "E":
                continue
            if self.peek() in "RO" and self.peek(1) == "E":  # ref-qualifier on the function type
                self.pos += 1
                continue
            params.append(self.type())
        return Function(result, params)

    def array_type(self) -> Node:
        self.expect("A")
        dimension = str(self.number()) if self.peek().isdigit() else ""
        self.expect("_")
        return Array(self.type(), dimension)
