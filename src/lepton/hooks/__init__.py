"""Hooks into other libraries, as `triton.profiler.hooks`: the `Hook` base and `HookManager`
(`hook`), Triton's launch hook (`launch`), the properties of compiled Triton kernels
(`kernel_props`) and NVTX ranges as scopes (`nvtx`). They sit above the session registry and the
hot path: they turn other libraries' events into scopes and ops."""
from .hook import Hook, HookManager
from .launch import LaunchHook

__all__ = ["Hook", "HookManager", "LaunchHook"]
