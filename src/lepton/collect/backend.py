"""The Backend protocol and the registry of backends.

A backend collects kernel records from one vendor API and delivers them, in bulk, to a `KernelSink`
(see `model.records`). The public `start`/`stop`/`flush` own idempotence and locking; subclasses do
the vendor work in `_do_start`/`_do_stop`/`_do_flush` (Proton's `start` -> `doStart`).

Scope attribution is by path id: the runtime calls `push_path(path_id)` when a thread enters a scope
and `pop_path()` when it leaves it, on that thread, and the backend tags the kernels that thread
launches with the innermost pushed id (CUPTI: by the thread's time line of pushes and pops). These two are the hot path:
a backend that needs no attribution sets them to None and the runtime skips the call entirely.
"""
from __future__ import annotations

import threading
from collections.abc import Callable
from typing import ClassVar

from ..model.records import DeviceInfo, KernelSink


class Backend:
    """Base class of every backend. One instance per (backend name) in a process, shared by the
    sessions that use it; `mode` is fixed for its lifetime."""

    name: ClassVar[str] = "?"
    device_type: ClassVar[str] = "CUDA"
    modes: ClassVar[tuple[str, ...]] = ("",)

    # Hot-path hooks, called on the launching thread; None = nothing to do.
    push_path: Callable[[int], None] | None = None
    pop_path: Callable[[], None] | None = None

    def __init__(self, mode: str = "") -> None:
        self.mode = mode
        self.sink: KernelSink | None = None
        self.started = False
        self._lock = threading.RLock()

    # -- template methods -------------------------------------------------------------------------
    def start(self, sink: KernelSink) -> None:
        with self._lock:
            if self.started:
                return
            self.sink = sink
            self._do_start()
            self.started = True

    def flush(self) -> None:
        """Delivers every record of kernels launched so far, waiting for running kernels."""
        with self._lock:
            if self.started:
                self._do_flush()

    def stop(self) -> None:
        with self._lock:
            if not self.started:
                return
            try:
                self._do_flush()
            finally:
                self._do_stop()
                self.started = False

    # -- vendor work --------------------------------------------------------------------------------
    def _do_start(self) -> None:
        pass

    def _do_flush(self) -> None:
        pass

    def _do_stop(self) -> None:
        pass

    def device_info(self, device_id: int) -> DeviceInfo | None:
        """The device's properties, or None if unknown."""
        return None

    def set_python_context(self, on: bool, path_of_caller: Callable[[], int]) -> None:
        """Sessions with `context="python"` started (on) or ended (off). A backend that can see
        each launch on its thread attributes kernels to `path_of_caller()` (the launching Python
        stack's path) while on; the default sees no launches and does nothing."""

    def on_thread_stack_inherited(self, path_id: int) -> None:
        """A new thread starts with an inherited (non-empty) scope stack whose top is `path_id`.
        Backends that tag launches push it for that thread; the default does `push_path`."""
        if self.push_path is not None:
            self.push_path(path_id)


_REGISTRY: dict[str, Callable[[str], Backend]] = {}


def register_backend(name: str, factory: Callable[[str], Backend]) -> None:
    """Makes `start(backend=name)` available. `factory(mode)` builds the backend."""
    _REGISTRY[name.lower()] = factory


def backend_names() -> list[str]:
    return sorted(_REGISTRY)


def backend_factory(name: str) -> Callable[[str], Backend] | None:
    return _REGISTRY.get(name.lower())
