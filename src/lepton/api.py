"""Session functions with `triton.profiler`'s signatures: start, activate, deactivate, finalize,
profile."""
from __future__ import annotations

import functools
import importlib
import os

from .collect import fake as _fake  # noqa: F401  (registers the "fake" and "cpu" backends)
from .collect.backend import backend_factory
from .errors import UsageError
from .hooks import nvtx
from .runtime import RUNTIME

DEFAULT_PROFILE_NAME = "proton"
_PLANNED_BACKENDS = ("roctracer", "rocprofiler", "instrumentation")
_DISABLE_ENV = ("LEPTON_DISABLE", "TRITON_PROTON_DISABLE")


def _env_true(name: str) -> bool:
    return os.environ.get(name, "").strip().lower() in ("1", "true", "on", "yes")


def _load_backend_module(name: str) -> None:
    """Imports the module that registers backend `name`, if it has one."""
    if name == "cupti" and backend_factory("cupti") is None:
        importlib.import_module("lepton.collect.cupti")


def select_backend() -> str:
    """The backend for `backend=None`: CUPTI where an NVIDIA GPU is usable, else CPU scopes only
    (with one warning line saying what was looked for)."""
    try:
        cupti = importlib.import_module("lepton.collect.cupti")
        usable, looked_for = cupti.probe()
    except ImportError as e:
        usable, looked_for = False, f"the CUPTI backend could not be imported ({e})"
    if usable:
        return "cupti"
    RUNTIME.warn_once("no-gpu", f"lepton: no usable NVIDIA GPU ({looked_for}); "
                                "recording CPU scopes and metrics only")
    return "cpu"


def _mode_string(mode) -> str:
    return "" if mode is None else str(mode)


def _install_hook(hook, sid: int) -> None:
    if hook is None:
        return
    if hook == "triton":
        try:
            triton_hook = importlib.import_module("lepton.hooks.launch")
        except ImportError as e:
            raise UsageError(f"hook='triton' is not available: {e}") from None
        triton_hook.register(sid)
        return
    if isinstance(hook, str):
        raise UsageError(f"Unsupported hook: {hook} (the only hook name is 'triton')")
    register = getattr(hook, "register", None)
    if register is None:
        raise UsageError(f"Unsupported hook: {hook!r} (pass 'triton' or an object with register(session))")
    register(sid)


def start(name: str | None = None, *, context: str | None = "shadow", data: str | None = "tree",
          backend: str | None = None, mode=None, hook=None) -> int | None:
    """Starts a profiling session writing to `name` (default "proton") and returns its id.

    A `start` on a path that already has a session re-activates that session. Under the `lepton`
    CLI it joins the CLI's session. With `LEPTON_DISABLE=1` (or `TRITON_PROTON_DISABLE=1`) it does
    nothing and returns None.
    """
    if any(_env_true(v) for v in _DISABLE_ENV):
        return None
    if RUNTIME.cli_session is not None and RUNTIME.cli_session in RUNTIME.sessions:
        RUNTIME.activate(RUNTIME.cli_session)
        return RUNTIME.cli_session
    name = DEFAULT_PROFILE_NAME if name is None else name
    if backend is None:
        backend = select_backend()
    else:
        backend = backend.lower()
        if backend in _PLANNED_BACKENDS:
            raise UsageError(f"backend {backend!r} is not available in this version of Lepton "
                             "(use 'cupti', or backend=None to choose automatically)")
        _load_backend_module(backend)
    if hook is not None and hook != "triton" and isinstance(hook, str):
        raise UsageError(f"Unsupported hook: {hook} (the only hook name is 'triton')")
    sid = RUNTIME.start(name, context or "shadow", data or "tree", backend, _mode_string(mode), hook)
    try:
        _install_hook(hook, sid)
    except BaseException:
        RUNTIME.discard(sid)  # no half-started session stays behind
        raise
    nvtx.install()
    return sid


def activate(session: int | None = None) -> None:
    """Re-activates one session (or all): kernels and scopes are recorded again."""
    RUNTIME.activate(session)


def deactivate(session: int | None = None, flushing: bool = False) -> None:
    """Pauses one session (or all); its data stays in memory. `flushing=True` first waits for the
    kernels launched so far and marks the finished phases complete."""
    RUNTIME.deactivate(session, flushing)


def finalize(session: int | None = None, output_format: str | None = "") -> list[str]:
    """Waits for running kernels, writes the profile(s) and ends the session (or all sessions);
    returns the files written. Under the `lepton` CLI, the CLI's own session keeps running until the
    script ends, whether `finalize()` names it or not."""
    if session is not None and session == RUNTIME.cli_session:
        return []
    _unregister_hooks(session)
    written = RUNTIME.finalize(session, output_format or "")
    if not RUNTIME.sessions:
        nvtx.uninstall()
    return written


def _unregister_hooks(session: int | None) -> None:
    targets = list(RUNTIME.sessions.values()) if session is None else \
        [RUNTIME.sessions[session]] if session in RUNTIME.sessions else []
    for s in targets:
        if s.hook is None or s.id == RUNTIME.cli_session:
            continue
        if s.hook == "triton":
            importlib.import_module("lepton.hooks.launch").unregister(s.id)
        elif hasattr(s.hook, "unregister"):
            s.hook.unregister(s.id)


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
