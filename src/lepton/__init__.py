"""Lepton: a pure-Python, low-overhead GPU kernel profiler with Triton Proton's API.

`import lepton as proton` runs a `triton.profiler` script unchanged. The profiling API is loaded on
first use (PEP 562), so that `lepton-view` imports nothing that profiles.
"""
from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

__version__ = "0.1.0"

if TYPE_CHECKING:  # what a type checker sees; at run time `__getattr__` imports each on first use
    from . import context, data, hooks, mode
    from .api import DEFAULT_PROFILE_NAME, activate, deactivate, finalize, profile, start
    from .errors import BackendError, LeptonError, MetricTypeError, SessionNotFound, UsageError, WriteError
    from .scopes import cpu_timed_scope, enter_scope, exit_scope, scope
    from .states import enter_state, exit_state, metadata_state, state

_EXPORTS = {
    "start": "api", "activate": "api", "deactivate": "api", "finalize": "api", "profile": "api",
    "DEFAULT_PROFILE_NAME": "api",
    "scope": "scopes", "cpu_timed_scope": "scopes", "enter_scope": "scopes", "exit_scope": "scopes",
    "state": "states", "enter_state": "states", "exit_state": "states", "metadata_state": "states",
    "LeptonError": "errors", "UsageError": "errors", "SessionNotFound": "errors", "PhaseNotFound": "errors",
    "MetricTypeError": "errors", "BackendError": "errors", "WriteError": "errors",
}
_SUBMODULES = ("context", "data", "hooks", "mode")

__all__ = [  # noqa: RUF022  (grouped as _EXPORTS, not sorted)
    "start", "activate", "deactivate", "finalize", "profile", "DEFAULT_PROFILE_NAME",
    "scope", "cpu_timed_scope", "enter_scope", "exit_scope",
    "state", "enter_state", "exit_state", "metadata_state",
    "LeptonError", "UsageError", "SessionNotFound", "PhaseNotFound", "MetricTypeError", "BackendError", "WriteError",
    "context", "data", "hooks", "mode",
]


def __getattr__(name: str) -> object:
    if name in _EXPORTS:
        value = getattr(importlib.import_module(f".{_EXPORTS[name]}", __name__), name)
    elif name in _SUBMODULES:
        value = importlib.import_module(f".{name}", __name__)
    else:
        raise AttributeError(f"module 'lepton' has no attribute {name!r}")
    globals()[name] = value  # later lookups are plain attribute reads
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
