"""One helper for the code that builds or parses whole trees (writers, viewer)."""
from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def gc_paused() -> Iterator[None]:
    """Pauses the cyclic garbage collector, restoring it as it was. Building or parsing a tree
    allocates millions of containers and no cycles, which the collector would otherwise rescan
    again and again (docs/design.md, "Writers"); so pausing leaves no garbage behind."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()
