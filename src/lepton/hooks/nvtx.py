"""NVTX ranges as scopes: `torch.cuda.nvtx.range_push/range_pop` and the `nvtx` package's
`push_range/pop_range` also open and close Lepton scopes (Proton shows NVTX ranges as tree nodes).

Done by wrapping the Python functions rather than through CUPTI's NVTX callbacks: a CUPTI callback
costs a Python call per NVTX call anyway and needs `NVTX_INJECTION64_PATH` set before the first NVTX
call of the process, which a profiler started later cannot guarantee. Ranges pushed from C++ code
are therefore not seen. `LEPTON_ENABLE_NVTX=0` (or `TRITON_ENABLE_NVTX=0`) turns this off.
"""
from __future__ import annotations

import functools
import os
import sys
import threading

from ..runtime.hot_path import HOT_PATH

_tls = threading.local()
_patched: list[tuple[object, str, object]] = []


def enabled() -> bool:
    for var in ("LEPTON_ENABLE_NVTX", "TRITON_ENABLE_NVTX"):
        value = os.environ.get(var)
        if value is not None:
            return value.strip().lower() in ("1", "true", "on", "yes")
    return True


def _open() -> list:
    s = getattr(_tls, "open", None)
    if s is None:
        s = _tls.open = []
    return s


def _push(name) -> None:
    if HOT_PATH.live and name is not None:
        _open().append(HOT_PATH.enter(str(name)))


def _pop() -> None:
    opened = _open()
    if opened and HOT_PATH.live:
        pid = opened.pop()
        t = HOT_PATH.threads.thread()
        if t.stack[-1] == pid:
            HOT_PATH.exit(pid)


def _wrap(owner, attr: str, before=None, after=None) -> None:
    original = getattr(owner, attr, None)
    if original is None or getattr(original, "__lepton_wrapped__", False):
        return

    @functools.wraps(original)
    def wrapper(*args, **kwargs):
        if before is not None:
            before(*args, **kwargs)
        result = original(*args, **kwargs)
        if after is not None:
            after()
        return result

    wrapper.__lepton_wrapped__ = True
    setattr(owner, attr, wrapper)
    _patched.append((owner, attr, original))


def _message(msg=None, *args, **kwargs):
    return msg if msg is not None else kwargs.get("message")


def install() -> None:
    """Wraps the NVTX entry points of the modules already imported (idempotent)."""
    if not enabled():
        return
    torch_nvtx = sys.modules.get("torch.cuda.nvtx")
    if torch_nvtx is None and "torch" in sys.modules:
        try:
            import torch.cuda.nvtx as torch_nvtx
        except ImportError:
            torch_nvtx = None
    if torch_nvtx is not None:
        _wrap(torch_nvtx, "range_push", before=lambda msg, *a, **k: _push(msg))
        _wrap(torch_nvtx, "range_pop", after=_pop)
    nvtx = sys.modules.get("nvtx")
    if nvtx is not None:
        _wrap(nvtx, "push_range", before=lambda *a, **k: _push(_message(*a, **k)))
        _wrap(nvtx, "pop_range", after=_pop)


def uninstall() -> None:
    while _patched:
        owner, attr, original = _patched.pop()
        setattr(owner, attr, original)
