"""The CUPTI backend: the only package that touches libcupti.

`probe()` says, cheaply and without initialising CUDA, whether this process can use it, and
`gpu_probe()` whether it has an NVIDIA GPU at all (what every GPU backend needs).
"""
from __future__ import annotations

import sys

from .backend import CuptiBackend
from .library import find_cupti, find_libcuda, nvidia_device_present
from .pcsampling.backend import PCSamplingBackend, make_cupti_backend

__all__ = ["CuptiBackend", "PCSamplingBackend", "gpu_probe", "make_cupti_backend", "probe"]


def gpu_probe() -> tuple[bool, str]:
    """`(True, what was found)` if an NVIDIA driver and device are there, else `(False, what was
    looked for)`. Loads libcuda (loading does not initialise CUDA) but calls nothing in it."""
    if not sys.platform.startswith("linux"):
        return False, f"Lepton's GPU backends support Linux only (this is {sys.platform})"
    if find_libcuda() is None:
        return False, "no libcuda.so.1 (NVIDIA driver)"
    if not nvidia_device_present():
        return False, "no NVIDIA device (/dev/nvidia0.., /proc/driver/nvidia/gpus)"
    return True, "an NVIDIA driver and device"


def probe() -> tuple[bool, str]:
    """`(True, where CUPTI is)` if an NVIDIA GPU and a libcupti are there, else `(False, what was
    looked for)`."""
    usable, looked_for = gpu_probe()
    if not usable:
        return False, looked_for
    path, how = find_cupti()
    if path is None:
        return False, how
    return True, f"CUPTI at {path} ({how})"
