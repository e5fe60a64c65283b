"""`lepton.context.depth`, as `triton.profiler.context`."""
from __future__ import annotations

from .runtime.hot_path import HOT_PATH
from .runtime.python_stacks import python_path
from .runtime.registry import REGISTRY


def depth(session: int | None = 0) -> int | None:
    """The calling thread's scope depth (shadow context) or Python stack depth (python context);
    None when nothing is profiling."""
    if not HOT_PATH.live:
        return None
    s = REGISTRY.sessions.get(session) if session is not None else None
    if s is None and session == 0:  # the default: the oldest live session
        s = next(iter(REGISTRY.sessions.values()), None)
    if s is not None and s.context == "python":
        return len(HOT_PATH.paths.names_of(python_path(HOT_PATH.paths)))
    if session not in (None, 0):  # 0 is the default: the scope depth, whichever session is live
        REGISTRY.session(session)
    return HOT_PATH.depth()
