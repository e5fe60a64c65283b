"""Properties of compiled Triton kernels, shown next to their time (beyond Proton).

With `hook="triton"`, each Triton kernel node also gets `num_warps`, `num_stages`,
`shared_bytes`, `registers` (per thread), `spills` (spilled registers) and `occupancy` (resident
blocks per SM that those allow, from the driver's occupancy calculator). They are properties: the
last launch's value is kept, never summed, and never zeroed on ROOT (so proton-viewer treats them as
per-node metrics).

Triton's launch hook receives only the kernel's name, CUfunction and stream; the compiled kernel is
taken from `CompiledKernel.launch_metadata`, which Triton calls right before the hook, through a
thin wrapper that remembers the kernel per thread.
"""
from __future__ import annotations

import ctypes
import threading

_tls = threading.local()
_cache: dict[int, dict[str, int]] = {}
_patched: list[tuple[object, object]] = []
_libcuda = None


def install() -> None:
    """Wraps `CompiledKernel.launch_metadata` (idempotent; no-op where Triton lacks it)."""
    if _patched:
        return
    try:
        from triton.compiler.compiler import CompiledKernel
    except ImportError:
        return
    original = getattr(CompiledKernel, "launch_metadata", None)
    if original is None:
        return

    def launch_metadata(self, *args, **kwargs):
        _tls.kernel = self
        if getattr(self, "function", None) in _cache:
            # Its properties are known: its next launches call Triton's method directly (this
            # wrapper is a call and a thread-local write on every hooked launch).
            try:
                self.launch_metadata = original.__get__(self, type(self))
            except AttributeError:  # an object without a __dict__
                pass
        return original(self, *args, **kwargs)

    CompiledKernel.launch_metadata = launch_metadata
    _patched.append((CompiledKernel, original))


def uninstall() -> None:
    while _patched:
        cls, original = _patched.pop()
        cls.launch_metadata = original


def take_current_kernel():
    """The compiled kernel whose launch is being hooked on this thread (and forgets it)."""
    kernel = getattr(_tls, "kernel", None)
    _tls.kernel = None
    return kernel


def _occupancy(function: int, threads: int, shared_bytes: int) -> int | None:
    """Resident blocks per SM for `threads` threads and `shared_bytes` of dynamic shared memory,
    from the driver's occupancy calculator; None where it cannot be asked."""
    global _libcuda
    try:
        if _libcuda is None:
            from ..backends.cupti.library import load_libcuda  # the process's one libcuda

            lib = load_libcuda()
            fn = lib.cuOccupancyMaxActiveBlocksPerMultiprocessor
            fn.argtypes = [ctypes.POINTER(ctypes.c_int), ctypes.c_void_p, ctypes.c_int, ctypes.c_size_t]
            fn.restype = ctypes.c_int
            _libcuda = fn
        blocks = ctypes.c_int(0)
        rc = _libcuda(ctypes.byref(blocks), function, threads, shared_bytes)
    except Exception:  # noqa: BLE001  (a property: never fatal to a launch)
        return None
    return blocks.value if rc == 0 else None


def properties_of_launch(function) -> dict[str, int] | None:
    """The properties of the kernel being launched on this thread, whose CUfunction is `function`
    (cached per function, so the compiled kernel is only needed at its first launch)."""
    props = _cache.get(function) if function else None
    if props is not None:
        return props
    kernel = take_current_kernel()
    return properties(kernel) if kernel is not None else None


def properties(kernel) -> dict[str, int]:
    """The property metrics of a compiled kernel (cached per kernel object)."""
    key = getattr(kernel, "function", None) or id(kernel)  # a loaded CUfunction is unique
    props = _cache.get(key)
    if props is not None:
        return props
    meta = getattr(kernel, "metadata", None)
    props = {}
    for name, attr in (("num_warps", "num_warps"), ("num_stages", "num_stages"), ("shared_bytes", "shared")):
        value = getattr(meta, attr, None)
        if isinstance(value, int):
            props[name] = value
    for name, attr in (("registers", "n_regs"), ("spills", "n_spills")):
        value = getattr(kernel, attr, None)
        if isinstance(value, int) and value >= 0:
            props[name] = value
    function = getattr(kernel, "function", None)
    if function and "num_warps" in props:
        occ = _occupancy(int(function), 32 * props["num_warps"], props.get("shared_bytes", 0))
        if occ is not None:
            props["occupancy"] = occ
    _cache[key] = props
    return props
