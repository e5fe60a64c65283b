"""Hooks into other libraries, per session, as `triton.profiler.hooks.hook`: the `Hook` base and the
`HookManager` that keeps which sessions use which hook.

A hook is active while at least one active session uses it: `activate()` installs it where it
listens (Triton's launch hooks, for `LaunchHook`), `deactivate()` takes it out. There is one
instance per hook class that keeps state for the process (`LaunchHook` is a singleton), however
often a session is started or activated.
"""
from __future__ import annotations

from collections import defaultdict
from typing import ClassVar


class Hook:
    """What a hook implements. `priority`: hooks of higher priority are called first on a launch's
    enter and last on its exit."""

    priority: int = 0

    def init_handle(self, module, function, name: str, metadata_group, hash) -> None:
        """A compiled kernel was loaded."""

    def activate(self) -> None:
        """Starts listening (the first active session that uses the hook)."""

    def deactivate(self) -> None:
        """Stops listening (no active session uses the hook any more)."""

    def enter(self, metadata) -> None:
        """Before a kernel launch."""

    def exit(self, metadata) -> None:
        """After a kernel launch."""


class HookManager:
    """Process-wide (class attributes, as Proton's): `active_hooks`, highest priority first, and
    `session_hooks[session][hook]`, whether the hook is active for that session."""

    active_hooks: ClassVar[list[Hook]] = []
    session_hooks: ClassVar[dict[int, dict[Hook, bool]]] = defaultdict(dict)

    @staticmethod
    def register(hook: Hook, session: int) -> None:
        """`session` uses `hook` from now on (and the hook is active)."""
        HookManager.session_hooks[session][hook] = True
        HookManager._activate_hook(hook)

    @staticmethod
    def unregister(session: int | None = None) -> None:
        """`session` (None: every session) uses no hook any more; hooks no session uses stop."""
        if session is None:
            released = {h for hooks in HookManager.session_hooks.values() for h in hooks}
            HookManager.session_hooks.clear()
        else:
            released = set(HookManager.session_hooks.pop(session, {}))
        for hook in released:
            HookManager._deactivate_unused(hook)

    @staticmethod
    def activate(session: int | None = None) -> None:
        for sid in HookManager._sessions(session):
            hooks = HookManager.session_hooks[sid]
            for hook in hooks:
                hooks[hook] = True
                HookManager._activate_hook(hook)

    @staticmethod
    def deactivate(session: int | None = None) -> None:
        touched = set()
        for sid in HookManager._sessions(session):
            hooks = HookManager.session_hooks[sid]
            for hook in hooks:
                hooks[hook] = False
                touched.add(hook)
        for hook in touched:
            HookManager._deactivate_unused(hook)

    @staticmethod
    def _sessions(session: int | None) -> list[int]:
        if session is None:
            return list(HookManager.session_hooks)
        return [session] if session in HookManager.session_hooks else []

    @staticmethod
    def _activate_hook(hook: Hook) -> None:
        if hook not in HookManager.active_hooks:
            hook.activate()
            HookManager.active_hooks.append(hook)
            HookManager.active_hooks.sort(key=lambda h: h.priority, reverse=True)

    @staticmethod
    def _deactivate_unused(hook: Hook) -> None:
        in_use = any(hooks.get(hook) for hooks in HookManager.session_hooks.values())
        if not in_use and hook in HookManager.active_hooks:
            HookManager.active_hooks.remove(hook)
            hook.deactivate()
