"""The Backend protocol and the table of backends.

A backend collects kernel records from one vendor API and delivers them, in bulk, to a `KernelSink`
(see `model.records`). The public `start`/`stop`/`flush` own idempotence and locking; subclasses do
the vendor work in `_do_start`/`_do_stop`/`_do_flush` (Proton's `start` -> `doStart`).

Scope attribution is by time: while a started backend `reads_marks`, the runtime marks every path
change of every thread on the process's time line (`sink.timeline`, see `timeline`), and the backend
looks up each launch's path from its thread and time. A backend sets the time line's clock at start
to the clock its launch times are on. Nothing is called per scope: the marks are the hot path.
"""
from __future__ import annotations

import importlib
import os
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import ClassVar

from ..errors import UsageError
from ..model.records import DeviceInfo, KernelSink
from ..model.timeline import ThreadTimelines


class Backend:
    """Base class of every backend. One instance per (backend name) in a process, shared by the
    sessions that use it; `mode` is fixed for its lifetime."""

    name: ClassVar[str] = "?"
    device_type: ClassVar[str] = "CUDA"
    modes: ClassVar[tuple[str, ...]] = ("",)

    # Whether this backend delivers kernels: a phase of a backend that does not is complete as soon
    # as the next one starts (periodic flushing writes it then).
    records_kernels: ClassVar[bool] = True
    # Whether this backend attributes launches by the threads' time lines (the runtime then marks).
    reads_marks: ClassVar[bool] = False
    # Whether it attributes Triton's launches in the python context by the stacks the launch hook
    # marks (`set_python_context`), so that the runtime installs that hook.
    reads_triton_stacks: ClassVar[bool] = False

    def __init__(self, mode: str = "") -> None:
        if mode.split(":", 1)[0] not in self.modes:
            known = ", ".join(repr(m) for m in self.modes)
            raise UsageError(f"Backend {self.name!r} has no mode {mode!r} (its modes: {known})")
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

    def flush(self, last: bool = False) -> None:
        """Delivers every record of kernels launched so far, waiting for running kernels. `last`:
        the backend stops next (finalize), so it need not get ready to record again."""
        with self._lock:
            if self.started:
                self._do_last_flush() if last else self._do_flush()

    def deliver_completed(self) -> None:
        """Delivers the records the vendor library has completed, without waiting for the device
        or for running kernels: what a checkpoint can add, from its own thread (never a launching
        one). By default nothing: records arrive at the next flush."""
        with self._lock:
            if self.started:
                self._do_deliver_completed()

    def stop(self) -> None:
        """Releases the vendor library. Called once no session uses the backend: the sessions
        were flushed when they were written (or were discarded), so nothing is flushed here."""
        with self._lock:
            if not self.started:
                return
            try:
                self._do_stop()
            finally:
                self.started = False

    # -- vendor work --------------------------------------------------------------------------------
    def _do_start(self) -> None:
        pass

    def _do_flush(self) -> None:
        pass

    def _do_deliver_completed(self) -> None:
        pass

    def _do_last_flush(self) -> None:
        self._do_flush()

    def _do_stop(self) -> None:
        pass

    def profile_extras(self) -> dict:
        """What this backend adds to a profile's metadata when it is written (e.g. the hottest
        instructions of sampled kernels); nothing by default."""
        return {}

    def device_info(self, device_id: int) -> DeviceInfo | None:
        """The device's properties, or None if unknown."""
        return None

    def set_python_context(self, on: bool, path_of_caller: Callable[[], int],
                           triton_stacks: ThreadTimelines | None = None) -> None:
        """Sessions with `context="python"` started (on) or ended (off). A backend that can see
        each launch on its thread attributes kernels to `path_of_caller()` (the launching Python
        stack's path) while on; the default sees no launches and does nothing. `triton_stacks`
        (only given to a backend that `reads_triton_stacks`) is the time line on which Triton's
        launch hook marks the Python stack of each Triton launch: path + 1, then 0 after it."""


@dataclass(frozen=True)
class BackendEntry:
    """Where a backend lives: `module` is imported when a session first uses it (so that `import
    lepton` loads no vendor library), and its `factory(mode)` builds the backend."""

    module: str
    factory: str
    needs_gpu: bool = False  # refused in one line where no NVIDIA GPU is usable (`api.start`)


# The backends a user can name (`start(backend=...)`, `lepton -b`): `api`, the CLI and the
# registry all read this table.
BACKENDS: dict[str, BackendEntry] = {
    "cpu": BackendEntry("lepton.backends.cpu", "CpuOnlyBackend"),
    # mode "" (kernel records) or "pcsampling[:interval=N]" (instruction sampling)
    "cupti": BackendEntry("lepton.backends.cupti", "make_cupti_backend", needs_gpu=True),
    "instrumentation": BackendEntry("lepton.backends.instrumentation.backend", "InstrumentationBackend",
                                    needs_gpu=True),
}

# Backends from outside the package, as `name=module:factory[,name=module:factory...]`, which the
# package cannot list: the tests name their fake backend (tests/twins) here, so that it ships in no
# wheel and no user is offered it.
EXTRA_BACKENDS_VARIABLE = "LEPTON_EXTRA_BACKENDS"


def extra_backends(text: str) -> dict[str, BackendEntry]:
    """The entries that `LEPTON_EXTRA_BACKENDS`'s `text` names."""
    entries = {}
    for item in filter(None, (part.strip() for part in text.split(","))):
        name, _, where = item.partition("=")
        module, _, factory = where.partition(":")
        if not (name.strip() and module.strip() and factory.strip()):
            raise UsageError(f"{EXTRA_BACKENDS_VARIABLE}: {item!r} is not name=module:factory")
        entries[name.strip().lower()] = BackendEntry(module.strip(), factory.strip())
    return entries


def backend_table() -> dict[str, BackendEntry]:
    """`BACKENDS` and the extra backends of this process's environment (which never replace one of
    `BACKENDS`)."""
    return {**extra_backends(os.environ.get(EXTRA_BACKENDS_VARIABLE, "")), **BACKENDS}


def backend_names() -> list[str]:
    return sorted(backend_table())


def backend_entry(name: str) -> BackendEntry | None:
    return backend_table().get(name.lower())


def backend_factory(name: str) -> Callable[[str], Backend] | None:
    """What builds backend `name` from a mode (its module imported now), or None for a name that no
    table lists."""
    entry = backend_entry(name)
    if entry is None:
        return None
    return getattr(importlib.import_module(entry.module), entry.factory)
