"""The CUPTI backend: the only package that touches libcupti.

`probe()` says, cheaply and without initialising CUDA, whether this process can use it; importing
the package registers the backend as "cupti".
"""
from __future__ import annotations

import sys

from ..base import register_backend
from .backend import CuptiBackend
from .library import find_cupti, find_libcuda, nvidia_device_present
from .pcsampling.backend import PCSamplingBackend, make_cupti_backend

__all__ = ["CuptiBackend", "PCSamplingBackend", "probe"]


def probe() -> tuple[bool, str]:
    """`(True, where CUPTI is)` if an NVIDIA GPU and a libcupti are there, else `(False, what was
    looked for)`. Loads libcuda (loading does not initialise CUDA) but calls nothing in it."""
    if not sys.platform.startswith("linux"):
        return False, f"the CUPTI backend supports Linux only (this is {sys.platform})"
    if find_libcuda() is None:
        return False, "no libcuda.so.1 (NVIDIA driver)"
    if not nvidia_device_present():
        return False, "no NVIDIA device (/dev/nvidia0.., /proc/driver/nvidia/gpus)"
    path, how = find_cupti()
    if path is None:
        return False, how
    return True, f"CUPTI at {path} ({how})"


register_backend("cupti", make_cupti_backend)  # mode "" or "pcsampling[:interval=N]"
