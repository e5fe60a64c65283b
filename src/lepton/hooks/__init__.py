"""Hooks into other libraries, as `triton.profiler.hooks`: the `Hook` base and `HookManager`
(`hook`), Triton's launch hook (`launch`), the instrumentation backend's compiler and launch hook
(`instrumentation`, re-exported from `backends.instrumentation.hook`, whose
`InstrumentationHook.enable_host_buffer` Proton's tests set as `proton.hooks.InstrumentationHook`),
the properties of compiled Triton kernels (`kernel_props`) and NVTX ranges as scopes (`nvtx`). They
sit above the session registry and the hot path: they turn other libraries' events into scopes and
ops. Importing them imports neither Triton nor torch."""
from ..backends.instrumentation.hook import InstrumentationHook
from .hook import Hook, HookManager
from .launch import LaunchHook

__all__ = ["Hook", "HookManager", "InstrumentationHook", "LaunchHook"]
