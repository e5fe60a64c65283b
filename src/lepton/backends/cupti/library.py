"""Finding and loading libcupti and libcuda, without loading a second copy of either.

One process must hold exactly one libcupti (with two, torch's Kineto and Lepton each talk to their
own instance). So the search order is:

1. `LEPTON_CUPTI_PATH` (a file, or a folder holding `libcupti.so*`): the user's explicit choice;
2. a libcupti already mapped into this process (`/proc/self/maps`): `import torch` maps the one
   from its `nvidia-cuda-cupti` wheel, before any CUDA call;
3. the `nvidia-cuda-cupti` wheel on `sys.path` (`nvidia/cu13/lib/libcupti.so.13`, or CUDA 12's
   `nvidia/cuda_cupti/lib/libcupti.so.12`): the same file torch will map later, so a later
   `import torch` finds it already loaded (the loader matches it by path and soname);
4. a CUDA toolkit: `$CUDA_HOME`, `$CUDA_PATH`, `/usr/local/cuda` (`extras/CUPTI/lib64`, `lib64`).

Loading a library does not initialise CUDA; only driver calls do.
"""
from __future__ import annotations

import ctypes
import glob
import os
import sys
import threading

from ...errors import BackendError
from . import layout

ENV_PATH = "LEPTON_CUPTI_PATH"
_WHEEL_LIBS = (("nvidia", "cu13", "lib", "libcupti.so.13"), ("nvidia", "cuda_cupti", "lib", "libcupti.so.12"))
_TOOLKIT_DIRS = (("extras", "CUPTI", "lib64"), ("lib64",), ("targets", "x86_64-linux", "lib"))

_lock = threading.Lock()
_loaded: dict[str, object] = {}


def mapped_cupti(maps_path: str = "/proc/self/maps") -> str | None:
    """The libcupti already mapped into this process, if any."""
    try:
        with open(maps_path) as f:
            for line in f:
                path = line.rstrip("\n").split(None, 5)[-1]
                if os.path.basename(path).startswith("libcupti.so") and os.path.isfile(path):
                    return path
    except OSError:
        pass
    return None


def _in_folder(folder: str) -> str | None:
    hits = sorted(glob.glob(os.path.join(folder, "libcupti.so*")), key=len)
    return hits[0] if hits else None


def find_cupti() -> tuple[str | None, str]:
    """`(path, how)` of the libcupti to use, or `(None, what was looked for)`."""
    override = os.environ.get(ENV_PATH)
    if override:
        path = _in_folder(override) if os.path.isdir(override) else override
        if path and os.path.isfile(path):
            return path, ENV_PATH
        return None, f"{ENV_PATH}={override} (no such file)"
    path = mapped_cupti()
    if path:
        return path, "already mapped"
    for base in sys.path:
        for parts in _WHEEL_LIBS:
            path = os.path.join(base or ".", *parts)
            if os.path.isfile(path):
                return path, "nvidia-cuda-cupti wheel"
    roots = [os.environ.get(v) for v in ("CUDA_HOME", "CUDA_PATH")] + ["/usr/local/cuda"]
    for root in filter(None, roots):
        for parts in _TOOLKIT_DIRS:
            path = _in_folder(os.path.join(root, *parts))
            if path:
                return path, "CUDA toolkit"
    return None, ("no libcupti (looked in /proc/self/maps, the nvidia-cuda-cupti wheel on sys.path, "
                  f"$CUDA_HOME, /usr/local/cuda; set {ENV_PATH})")


def load_cupti() -> tuple[ctypes.CDLL, str, int]:
    """`(lib, path, api_version)`; loaded once per process.

    Bound with `ctypes.CDLL`, which releases the GIL around each call: CUPTI calls back into Python
    from its own thread while a flush waits; holding it (`PyDLL`) saves too little to risk a lock
    order against CUPTI's thread (docs/design.md, "Binding libcupti").
    Raises `BackendError` when there is none or its record layouts are not the ones Lepton reads.
    """
    with _lock:
        if "cupti" not in _loaded:
            path, how = find_cupti()
            if path is None:
                raise BackendError(f"CUPTI not found: {how}")
            try:
                lib = ctypes.CDLL(path)
            except OSError as e:
                raise BackendError(f"cannot load CUPTI from {path} ({how}): {e}") from None
            version = ctypes.c_uint32(0)
            rc = lib.cuptiGetVersion(ctypes.byref(version))
            if rc != 0:
                raise BackendError(f"cuptiGetVersion failed ({rc}) for {path}")
            if version.value < layout.MIN_API_VERSION:
                raise BackendError(
                    f"CUPTI API version {version.value} at {path} is too old: Lepton reads the record "
                    f"layouts of CUPTI 13 (API version >= {layout.MIN_API_VERSION}); point "
                    f"{ENV_PATH} at a CUDA 13 libcupti")
            _loaded["cupti"] = (lib, path, version.value)
        return _loaded["cupti"]  # type: ignore[return-value]


def find_libcuda() -> str | None:
    """`libcuda.so.1` if the dynamic loader can load it (the driver is installed)."""
    try:
        ctypes.CDLL("libcuda.so.1")
    except OSError:
        return None
    return "libcuda.so.1"


def load_libcuda() -> ctypes.CDLL:
    with _lock:
        if "cuda" not in _loaded:
            try:
                _loaded["cuda"] = ctypes.CDLL("libcuda.so.1")
            except OSError as e:
                raise BackendError(f"the NVIDIA driver library libcuda.so.1 cannot be loaded: {e}") from None
        return _loaded["cuda"]  # type: ignore[return-value]


def nvidia_device_present() -> bool:
    """An NVIDIA GPU node exists (no driver call: /dev/nvidia0.. or /proc/driver/nvidia/gpus)."""
    if glob.glob("/dev/nvidia[0-9]*"):
        return True
    return bool(glob.glob("/proc/driver/nvidia/gpus/*"))
