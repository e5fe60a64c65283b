"""Stand-ins for the parts of Triton the launch hook talks to, for tests on machines without it:
`triton.knobs.runtime` (where hooks are installed) and Triton's `LazyDict`."""
from __future__ import annotations

import sys
import types


class LazyDict:
    """Triton's LazyDict: `data` holds name/function/stream; `get()` runs launch_metadata."""

    def __init__(self, data, fn=None):
        self.data = data
        self.fn = fn

    def get(self):
        return self.data | (self.fn() if self.fn else {})


def install_knobs(monkeypatch) -> types.SimpleNamespace:
    """Makes `from triton import knobs` find a fresh stand-in; returns its `runtime`."""
    runtime = types.SimpleNamespace(launch_enter_hook=None, launch_exit_hook=None)
    triton = types.ModuleType("triton")
    triton.knobs = types.ModuleType("triton.knobs")
    triton.knobs.runtime = runtime
    monkeypatch.setitem(sys.modules, "triton", triton)
    monkeypatch.setitem(sys.modules, "triton.knobs", triton.knobs)
    return runtime
