"""In-memory export and phases, as `triton.profiler.data`."""
from __future__ import annotations

from .errors import UsageError, UsageTypeError
from .model.tree import TreeData
from .runtime.registry import REGISTRY
from .writers import hatchet, hatchet_msgpack


def _tree_profile(session: int, phase: int):
    s = REGISTRY.session(session)
    if s.data_kind != "tree":
        raise UsageError("Only TreeData is supported for getData() for now")
    if not isinstance(s.phases.get(phase), TreeData):
        raise UsageError(f"Phase {phase} has no data.")
    return REGISTRY.profile_of(s, phase)


def get(session: int | None = 0, phase: int = 0):
    """The profile of one phase as the hatchet structure `[tree, device_info]` (not synchronised
    with the device: call `deactivate(session, flushing=True)` first for complete data)."""
    if session is None:
        return None
    return hatchet.to_literal(_tree_profile(session, phase))


def get_msgpack(session: int | None = 0, phase: int = 0) -> bytes | None:
    if session is None:
        return None
    return hatchet_msgpack.render(_tree_profile(session, phase))


def advance_phase(session: int | None = 0) -> int | None:
    """Starts a new phase; kernels launched from now on go into it. Returns its number."""
    if session is None:
        return None
    phase = REGISTRY.session(session).advance_phase()
    REGISTRY.refresh()  # the hot path caches the current phase's scope set
    return phase


def _check_phase(call: str, phase) -> None:
    if isinstance(phase, bool) or not hasattr(type(phase), "__index__"):
        raise UsageTypeError(f"{call}: phase must be an int (a phase number from advance_phase), not "
                             f"{type(phase).__name__} ({phase!r})")


def is_phase_complete(session: int | None = 0, phase: int = 0) -> bool:
    """True once every kernel of `phase` has been delivered (after a flush that ended it)."""
    _check_phase("is_phase_complete()", phase)
    s = REGISTRY.session(session)
    return s.complete_up_to >= phase


def clear(session: int | None = 0, phase: int = 0, clear_up_to_phase: bool = False) -> None:
    """Frees one phase (or every phase up to `phase`); the current phase restarts empty."""
    _check_phase("clear()", phase)
    REGISTRY.session(session).clear(phase, clear_up_to_phase)
    REGISTRY.refresh()
