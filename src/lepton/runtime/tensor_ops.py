"""The torch calls behind tensor metrics, in one place.

Lepton never imports torch: a program that gives a device tensor as a metric has imported it, and
these functions find it in `sys.modules`. The CPU tests put a stand-in there (`torch_module` is the
one seam, see tests/twins/fake_torch.py).
"""
from __future__ import annotations

import sys


def torch_module():
    """torch, where the program imported it; None otherwise."""
    return sys.modules.get("torch")


_probe: tuple = (None, None)  # (torch, its capture status function), once CUDA is initialised


def capturing() -> bool:
    """Whether the calling thread's current CUDA stream is capturing a graph. False where torch is
    not imported or CUDA not initialised: no capture can be running then, and asking would
    initialise CUDA. Asked on each hooked launch with metrics, so torch's C function is called
    directly once CUDA is up (one call instead of three)."""
    global _probe
    torch = torch_module()
    if torch is None:
        return False
    module, probe = _probe
    if module is not torch:
        if not torch.cuda.is_initialized():
            return False
        probe = getattr(getattr(torch, "_C", None), "_cuda_isCurrentStreamCapturing", None) \
            or torch.cuda.is_current_stream_capturing
        _probe = (torch, probe)
    return probe()


def dtype(floating: bool):
    """What a metric's values are kept in on the device: Proton's double and int64."""
    torch = torch_module()
    return torch.float64 if floating else torch.int64


def empty(n: int, floating: bool, device=None):
    """`n` uninitialised elements on `device` (None: the current CUDA device). No kernel runs: the
    first write to each element is a copy."""
    torch = torch_module()
    return torch.empty(n, dtype=dtype(floating), device="cuda" if device is None else device)


def synchronize(devices) -> None:
    """Waits for every stream of each device: the kernels that write metric values may have run
    on any of them."""
    torch = torch_module()
    for device in devices:
        torch.cuda.synchronize(device)
