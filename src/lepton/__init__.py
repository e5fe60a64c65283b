"""Lepton: a pure-Python, low-overhead GPU kernel profiler with Triton Proton's API.

`import lepton as proton` runs a `triton.profiler` script unchanged.
"""
from . import context, data, hooks, mode
from .api import DEFAULT_PROFILE_NAME, activate, deactivate, finalize, profile, start
from .errors import BackendError, LeptonError, MetricTypeError, SessionNotFound, UsageError
from .scope import cpu_timed_scope, enter_scope, exit_scope, scope
from .state import enter_state, exit_state, metadata_state, state

__version__ = "0.1.0"

__all__ = [
    "start", "activate", "deactivate", "finalize", "profile", "DEFAULT_PROFILE_NAME",
    "scope", "cpu_timed_scope", "enter_scope", "exit_scope",
    "state", "enter_state", "exit_state", "metadata_state",
    "context", "data", "hooks", "mode",
    "LeptonError", "UsageError", "SessionNotFound", "MetricTypeError", "BackendError",
]
