"""In-memory export and phases, as `triton.profiler.data`."""
from __future__ import annotations

import json

import msgpack

from .errors import UsageTypeError
from .runtime.registry import REGISTRY
from .writers import chrome_trace, hatchet, hatchet_msgpack


def _phase(session: int, phase: int):
    """`(data kind, profile)` of one phase of a session."""
    s = REGISTRY.session(session)
    return s.data_kind, REGISTRY.profile_of(s, phase)


def get(session: int | None = 0, phase: int = 0):
    """The profile of one phase: for `data="tree"` the hatchet structure `[tree, device_info]`, for
    `data="trace"` the Chrome trace's document (as Proton main returns them). Not synchronised
    with the device: call `deactivate(session, flushing=True)` first for complete data."""
    if session is None:
        return None
    kind, profile = _phase(session, phase)
    if kind == "trace":
        return json.loads(chrome_trace.render(profile))
    return hatchet.to_literal(profile)


def get_msgpack(session: int | None = 0, phase: int = 0) -> bytes | None:
    """`get` in MessagePack: Proton's hatchet MessagePack for a tree; for a trace, one string
    holding the Chrome trace's JSON (as Proton main packs it)."""
    if session is None:
        return None
    kind, profile = _phase(session, phase)
    if kind == "trace":
        return msgpack.packb(chrome_trace.render(profile).decode())
    return hatchet_msgpack.render(profile)


def advance_phase(session: int | None = 0) -> int | None:
    """Starts a new phase; kernels launched from now on go into it. Returns its number."""
    if session is None:
        return None
    return REGISTRY.advance_phase(session)


def _check_phase(call: str, phase) -> None:
    if isinstance(phase, bool) or not hasattr(type(phase), "__index__"):
        raise UsageTypeError(f"{call}: phase must be an int (a phase number from advance_phase), not "
                             f"{type(phase).__name__} ({phase!r})")


def is_phase_complete(session: int | None = 0, phase: int = 0) -> bool:
    """True once every kernel of `phase` has been delivered: after a flush that ended it, or once
    the backend delivered a kernel launched in a later phase."""
    _check_phase("is_phase_complete()", phase)
    if session is None:
        return False
    return REGISTRY.session(session).complete_up_to >= phase


def clear(session: int | None = 0, phase: int = 0, clear_up_to_phase: bool = False) -> None:
    """Frees one phase (or every phase up to `phase`); the current phase restarts empty."""
    _check_phase("clear()", phase)
    if session is None:
        return
    REGISTRY.session(session).clear(phase, clear_up_to_phase)
    REGISTRY.refresh()
