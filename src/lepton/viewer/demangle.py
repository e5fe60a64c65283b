"""C++ kernel names as people read them, through libstdc++'s `__cxa_demangle`.

A process that ran CUDA or PyTorch has libstdc++ loaded already; where there is none, or it refuses
a name, the name is shown as it is. libstdc++ spells the standard abbreviations (`Ss`, `So`, `Si`)
as `std::string`, `std::ostream`, `std::istream`, where GNU c++filt writes out the templates.
"""
from __future__ import annotations

import ctypes
import ctypes.util
from collections.abc import Callable, Iterable, Iterator
from functools import cache, lru_cache

_DEMANGLED = 0  # __cxa_demangle's status; -1: out of memory, -2: not a mangled name, -3: bad argument
# (__cxa_demangle, free): __cxa_demangle(mangled, buffer, length, status) returns a string it
# allocated with malloc, which libc's free releases.
Demangler = tuple[Callable, Callable]


@lru_cache(maxsize=65536)
def demangle(name: str) -> str:
    """The C++ name `name` stands for, or `name` itself where it is no mangled name (Triton
    kernels, scopes) or libstdc++ cannot be had."""
    if not name.startswith("_Z"):  # "f" alone would demangle to "float": only symbols are names
        return name
    demangler = _demangler()
    if demangler is None or not name.isascii():
        return name
    cxa_demangle, free = demangler
    status = ctypes.c_int()
    text = cxa_demangle(name.encode(), None, None, ctypes.byref(status))
    if status.value != _DEMANGLED or not text:
        return name
    try:
        return ctypes.string_at(text).decode("utf-8", "replace")
    finally:
        free(text)


@cache
def _demangler() -> Demangler | None:
    return _load_demangler(_libraries())


def _libraries() -> Iterator[str | None]:
    yield None  # the process's global symbols (a C++ program embedding Python)
    yield "libstdc++.so.6"  # dlopen returns the copy CUDA or PyTorch loaded, if they did
    yield ctypes.util.find_library("stdc++")  # slow (it runs ldconfig): the last resort


def _load_demangler(libraries: Iterable[str | None]) -> Demangler | None:
    """`__cxa_demangle` and `free` from the first of `libraries` that has them (None: the
    process itself), or None."""
    try:
        free = ctypes.CDLL(None).free
    except (OSError, AttributeError, TypeError):  # no C library to open this way (Windows)
        return None
    free.argtypes, free.restype = [ctypes.c_void_p], None
    for library in libraries:
        try:
            cxa_demangle = ctypes.CDLL(library).__cxa_demangle
        except (OSError, AttributeError):
            continue
        cxa_demangle.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.POINTER(ctypes.c_size_t),
                                 ctypes.POINTER(ctypes.c_int)]
        cxa_demangle.restype = ctypes.c_void_p  # a pointer, not c_char_p: it must be freed
        return cxa_demangle, free
    return None
