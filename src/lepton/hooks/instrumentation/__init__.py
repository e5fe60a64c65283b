"""`triton.profiler.hooks.instrumentation`'s import path, for drop-in use (Proton's tests read
`InstrumentationHook.enable_host_buffer` and `.host_buffer` through it). The hook lives with its
backend, in `lepton.backends.instrumentation.hook`."""
from ...backends.instrumentation.hook import InstrumentationHook

__all__ = ["InstrumentationHook"]
