"""The exception types users can catch.

Each also derives from the builtin exception Proton raises for the same mistake, so that code written
for `triton.profiler` (`except ValueError`) keeps working.
"""
from __future__ import annotations


class LeptonError(Exception):
    """Base of every error Lepton raises on purpose."""


class UsageError(LeptonError, ValueError):
    """A wrong argument: an unknown backend, context, data or format name, an unbalanced scope."""


class UsageTypeError(UsageError, TypeError):
    """An argument of the wrong type, e.g. a session name that is neither a string nor a path
    (Proton raises TypeError for it)."""


class PhaseNotFound(UsageError, RuntimeError):
    """A phase with no data: never started, cleared, or written out by periodic flushing (Proton
    raises RuntimeError for it)."""


class SessionNotFound(LeptonError, IndexError):
    """A session id that was never started or is already finalized."""


class MetricTypeError(LeptonError, ValueError):
    """A metric reused with another type or vector length."""


class BackendError(LeptonError, RuntimeError):
    """The vendor library refused: another profiler holds CUPTI, a driver call failed."""


class WriteError(LeptonError, OSError):
    """No profile file could be written: the requested path, the current folder and the temporary
    folder all failed. The message names each path tried and why it failed."""


def shown(name: str) -> str:
    """`name` as an error message shows it: as it is, or as a Python literal where it holds
    characters that would break the one line (newlines, escape codes)."""
    return name if isinstance(name, str) and name.isprintable() else repr(name)
