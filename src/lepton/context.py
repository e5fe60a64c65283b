"""`lepton.context.depth`, as `triton.profiler.context`."""
from __future__ import annotations

from .collect.contexts import python_path
from .runtime import RUNTIME


def depth(session: int | None = 0) -> int | None:
    """The calling thread's scope depth (shadow context) or Python stack depth (python context);
    None when nothing is profiling."""
    if not RUNTIME.live:
        return None
    s = RUNTIME.sessions.get(session) if session is not None else None
    if s is None and session == 0:  # the default: the oldest live session
        s = next(iter(RUNTIME.sessions.values()), None)
    if s is not None and s.context == "python":
        return len(RUNTIME.paths.names_of(python_path(RUNTIME.paths)))
    if session not in (None, 0):  # 0 is the default: the scope depth, whichever session is live
        RUNTIME.session(session)
    return RUNTIME.depth()
