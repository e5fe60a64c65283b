"""Arming instruction sampling in a context: one empty kernel launched and waited for right after
sampling is enabled. On the H100 (CUDA 13) the first kernel after `cuptiPCSamplingEnable` got no
sample at all, so a program whose first kernel is short (Proton's own test: a 1,024-element fill)
lost it; with one kernel before it, the same fill got ~120 samples (docs/design.md, "The first
kernel after enabling")."""
from __future__ import annotations

import ctypes

ARM_FUNCTION = "lepton_arm_pc_sampling"
# PTX, so that the driver compiles it for whatever GPU this is; one warp that returns at once.
_PTX = (b".version 7.0\n.target sm_70\n.address_size 64\n"
        b".visible .entry " + ARM_FUNCTION.encode() + b"()\n{\n\tret;\n}\n\0")


def arm(lib: ctypes.CDLL) -> str:
    """Loads the empty kernel in the current context, runs it once and waits for it. Returns ""
    or what failed (sampling still runs; only the first kernel may go unsampled)."""
    module, function = ctypes.c_void_p(), ctypes.c_void_p()
    steps = (
        ("cuModuleLoadData", lambda: lib.cuModuleLoadData(ctypes.byref(module), ctypes.c_char_p(_PTX))),
        ("cuModuleGetFunction", lambda: lib.cuModuleGetFunction(ctypes.byref(function), module,
                                                                ARM_FUNCTION.encode())),
        ("cuLaunchKernel", lambda: lib.cuLaunchKernel(function, 1, 1, 1, 32, 1, 1, 0, None, None, None)),
        ("cuCtxSynchronize", lambda: lib.cuCtxSynchronize()),
    )
    for name, call in steps:
        rc = call()
        if rc != 0:
            return f"{name} failed ({rc})"
    return ""
