"""Session functions with `triton.profiler`'s signatures: start, activate, deactivate, finalize,
profile; and `cli_sessions`, what the `lepton` CLI needs of the sessions."""
from __future__ import annotations

import contextlib
import functools
import importlib
import os
import sys
from collections.abc import Iterator

from .backends.base import backend_entry
from .errors import UsageError, UsageTypeError
from .hooks import nvtx
from .hooks.hook import Hook, HookManager
from .model.profile import RunCommand
from .runtime.registry import REGISTRY

DEFAULT_PROFILE_NAME = "proton"
_PLANNED_BACKENDS = ("roctracer", "rocprofiler")
_DISABLE_ENV = ("LEPTON_DISABLE", "TRITON_PROTON_DISABLE")


def _env_true(name: str) -> bool:
    return os.environ.get(name, "").strip().lower() in ("1", "true", "on", "yes")


def _disabled() -> bool:
    """`LEPTON_DISABLE` / `TRITON_PROTON_DISABLE`, or Triton's knob `triton.knobs.proton.disable`
    where Triton is imported."""
    if any(_env_true(v) for v in _DISABLE_ENV):
        return True
    knobs = getattr(sys.modules.get("triton"), "knobs", None)
    return bool(getattr(getattr(knobs, "proton", None), "disable", False))


# Modes that only a GPU backend has: without a usable GPU they are refused, not recorded as CPU scopes.
_GPU_MODES = ("pcsampling",)


def select_backend(mode_text: str = "") -> str:
    """The backend for `backend=None`: CUPTI where an NVIDIA GPU is usable, else CPU scopes only
    (with one warning line saying what was looked for); a GPU-only mode without a GPU is refused."""
    usable, looked_for = _probe("probe")
    if usable:
        return "cupti"
    mode_name = mode_text.split(":", 1)[0]
    if mode_name in _GPU_MODES:
        raise UsageError(f"mode={mode_name!r} samples instructions on an NVIDIA GPU, and none is usable here "
                         f"({looked_for}); run it on a machine with one, or start without mode= to record "
                         "CPU scopes")
    REGISTRY.warn_once("no-gpu", f"lepton: no usable NVIDIA GPU ({looked_for}); "
                                "recording CPU scopes and metrics only")
    return "cpu"


def _probe(which: str) -> tuple[bool, str]:
    """`lepton.backends.cupti`'s `probe` (CUPTI usable) or `gpu_probe` (an NVIDIA GPU there)."""
    try:
        return getattr(importlib.import_module("lepton.backends.cupti"), which)()
    except ImportError as e:
        return False, f"the CUPTI backend could not be imported ({e})"


def _check_gpu(backend: str) -> None:
    """A backend that records on a GPU, named where none is usable, is refused in one line."""
    entry = backend_entry(backend)
    if entry is None or not entry.needs_gpu:
        return
    usable, looked_for = _probe("gpu_probe")
    if not usable:
        raise UsageError(f"backend={backend!r} needs an NVIDIA GPU, and none is usable here ({looked_for}); "
                         "run it on a machine with one, or leave the backend out to record CPU scopes")


def _mode_string(mode) -> str:
    return "" if mode is None else str(mode)


def _instrumentation_hook(mode):
    """The hook of an instrumentation session (Proton registers one with each such session)."""
    try:
        from .backends.instrumentation.hook import InstrumentationHook

        return InstrumentationHook(mode)
    except ValueError as e:
        raise UsageError(f"backend='instrumentation': {e}") from None


def _hook_object(hook) -> Hook | None:
    """The `Hook` that `start(hook=...)` names: "triton" is the launch hook."""
    if hook is None or isinstance(hook, Hook):
        return hook
    if hook == "triton":
        try:
            return importlib.import_module("lepton.hooks.launch").LaunchHook()
        except ImportError as e:
            raise UsageError(f"hook='triton' is not available: {e}") from None
    raise UsageError(f"Unsupported hook: {hook!r} (pass 'triton' or a lepton.hooks.hook.Hook)")


def _session_name(name) -> str:
    """`start`'s name as a string: a str, or a path (`os.PathLike`, e.g. `pathlib.Path`) as its
    `os.fspath`. Anything else is refused here, at `start`: the write at finalize (or at exit) is
    too late to say so, and would lose the profile."""
    text = os.fspath(name) if isinstance(name, os.PathLike) else name
    if not isinstance(text, str):
        given = (f"a path whose os.fspath is bytes ({text!r})" if isinstance(name, os.PathLike)
                 else f"{type(name).__name__} ({name!r})")
        raise UsageTypeError("start(): a session name must be a string or a path (os.PathLike), "
                             f"not {given}; pass the output file's name, e.g. 'proton' or 'out/run1'")
    if "\0" in text:
        raise UsageError(f"start(): a session name cannot hold a NUL character ({text!r}); "
                         "pass the output file's name, e.g. 'proton' or 'out/run1'")
    return text


def _text_option(call: str, option: str, value, example: str) -> None:
    """`start`'s and `finalize`'s names of things are strings (or None): anything else is refused in
    one line, before anything changes."""
    if value is not None and not isinstance(value, str):
        raise UsageTypeError(f"{call}: {option} must be a string such as {example!r}, not "
                             f"{type(value).__name__} ({value!r})")


def start(name: str | os.PathLike | None = None, *, context: str | None = "shadow",
          data: str | None = "tree", backend: str | None = None, mode=None, hook=None) -> int | None:
    """Starts a profiling session writing to `name` (default "proton") and returns its id.

    `name` is a string or a path (`os.PathLike`); anything else raises `UsageTypeError` (also a
    TypeError, as in Proton). A `start` on a path that already has a session re-activates that
    session; one whose file another session already writes (`out` and `out.hatchet`, `./out`) is
    refused with `UsageError`. Under the `lepton` CLI it joins the CLI's session. With
    `LEPTON_DISABLE=1` (or `TRITON_PROTON_DISABLE=1`) it does nothing and returns None.
    """
    if _disabled():
        return None
    pinned = REGISTRY.pinned_session()
    if pinned is not None:
        activate(pinned)
        return pinned
    name = DEFAULT_PROFILE_NAME if name is None else _session_name(name)
    _text_option("start()", "context", context, "shadow")
    _text_option("start()", "data", data, "tree")
    _text_option("start()", "backend", backend, "cupti")
    if backend is None:
        backend = select_backend(_mode_string(mode))
    else:
        backend = backend.lower()
        if backend in _PLANNED_BACKENDS:
            raise UsageError(f"backend {backend!r} is not available in this version of Lepton "
                             "(use 'cupti', or backend=None to choose automatically)")
    if isinstance(hook, str) and hook != "triton":
        raise UsageError(f"Unsupported hook: {hook} (the only hook name is 'triton')")
    instrumenting = backend == "instrumentation"
    mode_text = _mode_string(mode)
    if instrumenting:  # a bad mode string is the caller's mistake: said before anything starts
        instrumentation_hook = _instrumentation_hook(mode)
        mode_text = str(instrumentation_hook.mode).split(":", 1)[0]
    _check_gpu(backend)
    sid = REGISTRY.start(name, context or "shadow", data or "tree", backend, mode_text, hook)
    try:
        hook_object = _hook_object(hook)
        if hook_object is not None:
            HookManager.register(hook_object, sid)
        if instrumenting:
            HookManager.register(instrumentation_hook, sid)
    except BaseException:
        REGISTRY.discard(sid)  # no half-started session stays behind
        HookManager.unregister(sid)
        raise
    nvtx.install()
    return sid


def activate(session: int | None = None) -> None:
    """Re-activates one session (or all): kernels and scopes are recorded again."""
    REGISTRY.activate(session)
    HookManager.activate(session)


def deactivate(session: int | None = None, flushing: bool = False) -> None:
    """Pauses one session (or all); its data stays in memory. `flushing=True` first waits for the
    kernels launched so far and marks the finished phases complete."""
    HookManager.deactivate(session)
    REGISTRY.deactivate(session, flushing)


def finalize(session: int | None = None, output_format: str | None = "") -> list[str]:
    """Waits for running kernels, writes the profile(s) and ends the session (or all sessions);
    returns the files written. Under the `lepton` CLI, the CLI's own session keeps running until the
    script ends, whether `finalize()` names it or not."""
    pinned = REGISTRY.pinned_session()
    if session is not None and session == pinned:
        return []
    _text_option("finalize()", "output_format", output_format, "hatchet")
    ending = [s for s in REGISTRY.sessions_for(session) if s.id != pinned]
    for s in ending:  # a format a session cannot write is refused before anything ends
        s.check_format(output_format or "")
    for sid in [s.id for s in ending]:
        HookManager.unregister(sid)
    written = REGISTRY.finalize(session, output_format or "")
    if not REGISTRY.sessions:
        nvtx.uninstall()
    return written


def profile(func=None, *, name: str | None = None, context: str | None = "shadow",
            data: str | None = "tree", backend: str | None = None, mode=None, hook=None):
    """Decorator: starts a session around each call of `func` and deactivates it afterwards (as in
    Proton, it does not finalize: call `finalize()` to write the file)."""
    if func is None:
        return functools.partial(profile, name=name, context=context, data=data, backend=backend,
                                 mode=mode, hook=hook)

    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        sid = start(name, context=context, data=data, backend=backend, mode=mode, hook=hook)
        try:
            return func(*args, **kwargs)
        finally:
            if sid is not None:
                deactivate(sid)

    return wrapper


class CliSessions:
    """The `lepton` CLI's sessions: its own, pinned while the target runs (the target's `start()`
    joins it and its `finalize()` leaves it recording), and those the target starts itself, which
    the CLI writes at the end too."""

    def __init__(self) -> None:
        self._first_id = REGISTRY.next_id  # sessions from this id on are the run's

    @contextlib.contextmanager
    def pinned(self, sid: int | None) -> Iterator[None]:
        """Makes `sid` the CLI's session while the block runs."""
        REGISTRY.pin(sid)
        try:
            yield
        finally:
            REGISTRY.pin(None)

    def record_command(self, command: RunCommand) -> None:
        """Every session of the run records the target's command line, not `lepton ...`."""
        for sid, session in list(REGISTRY.sessions.items()):
            if sid >= self._first_id:
                session.command = command

    def finalized_by_target(self, sid: int | None) -> bool:
        """Whether the target ended the CLI's session itself (a forked child never owned it)."""
        return sid is not None and sid not in REGISTRY.sessions and not REGISTRY.forked_from_owner()

    def open_ids(self, sid: int | None) -> list[int]:
        """The run's sessions still open: the CLI's and those the target left open."""
        return sorted(i for i in REGISTRY.sessions if i == sid or i >= self._first_id)


def cli_sessions() -> CliSessions:
    """What the `lepton` CLI needs of the sessions, and all it uses; called before its `start()`."""
    return CliSessions()
