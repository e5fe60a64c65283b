"""Hooks into other libraries, as `triton.profiler.hooks`: Triton's launch hook (`launch`), the
properties of compiled Triton kernels (`kernel_props`) and NVTX ranges as scopes (`nvtx`). They sit
above the runtime: they turn other libraries' events into scopes and ops."""
from .launch import LaunchHook

__all__ = ["LaunchHook"]
