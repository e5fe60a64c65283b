"""States: a label appended to the call path of everything entered while it is set.

Proton's semantics: one slot per thread, not a stack. An inner state overwrites the outer one and
leaving any state clears the slot.
"""
from __future__ import annotations

import functools

from .model.paths import METADATA_NODE
from .runtime.hot_path import HOT_PATH

COMPUTE_METADATA_SCOPE_NAME = METADATA_NODE
COMPUTE_METADATA_SCOPE_PREFIX = COMPUTE_METADATA_SCOPE_NAME + ":"


def _names(name: str) -> tuple[str, ...]:
    # "__proton_launch_metadata:K" is two contexts: the metadata node, then the kernel's name.
    if name.startswith(COMPUTE_METADATA_SCOPE_PREFIX):
        return (COMPUTE_METADATA_SCOPE_NAME, name[len(COMPUTE_METADATA_SCOPE_PREFIX):])
    return (name,)


def enter_state(name: str) -> None:
    if type(name) is not str:
        raise TypeError(f"A state name must be a string, not {type(name).__name__} ({name!r})")
    HOT_PATH.set_state(_names(name))


def exit_state() -> None:
    HOT_PATH.set_state(None)


class state:
    """Context manager and decorator: `with state("backward"): ...`."""

    def __init__(self, name: str) -> None:
        self.name = name

    def __enter__(self):
        if HOT_PATH.live:
            enter_state(self.name)
        return self

    def __exit__(self, *exc) -> None:
        if HOT_PATH.live:
            exit_state()

    def __call__(self, func):
        @functools.wraps(func)
        def wrapper(*args, **kwargs):
            with state(self.name):
                return func(*args, **kwargs)

        return wrapper


def metadata_state(kernel_name: str | None = None) -> state:
    """The state GPU work launched while computing launch metadata runs under."""
    return state(COMPUTE_METADATA_SCOPE_NAME if kernel_name is None
                 else COMPUTE_METADATA_SCOPE_PREFIX + kernel_name)
