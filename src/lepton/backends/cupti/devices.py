"""The CUDA driver calls the backend needs: device attributes, "is CUDA initialised", and waiting
for every device. ctypes on libcuda, so no CUDA binding package is needed."""
from __future__ import annotations

import ctypes

from ...errors import BackendError
from ...model.records import DeviceInfo
from .layout import GPU_FAULTS
from .library import load_libcuda

CUDA_SUCCESS = 0
CUDA_ERROR_NOT_INITIALIZED = 3

# CUdevice_attribute (cuda.h, CUDA 13.0)
ATTR_CLOCK_RATE = 13  # kHz
ATTR_MULTIPROCESSOR_COUNT = 16
ATTR_MEMORY_CLOCK_RATE = 36  # kHz
ATTR_GLOBAL_MEMORY_BUS_WIDTH = 37  # bits
ATTR_COMPUTE_CAPABILITY_MAJOR = 75
ATTR_COMPUTE_CAPABILITY_MINOR = 76


class Driver:
    """A few libcuda entry points. Every call releases the GIL (ctypes.CDLL)."""

    def __init__(self, lib: ctypes.CDLL | None = None) -> None:
        self.lib = lib if lib is not None else load_libcuda()
        self._infos: dict[int, DeviceInfo] = {}

    def _check(self, rc: int, what: str) -> None:
        if rc != CUDA_SUCCESS:
            name = ctypes.c_char_p()
            self.lib.cuGetErrorName(rc, ctypes.byref(name))
            raise BackendError(f"{what} failed: {(name.value or b'?').decode()} ({rc})")

    def initialized(self) -> bool:
        """Whether `cuInit` has run in this process. Does not initialise CUDA itself:
        `cuDeviceGetCount` answers CUDA_ERROR_NOT_INITIALIZED before `cuInit`."""
        n = ctypes.c_int(0)
        return self.lib.cuDeviceGetCount(ctypes.byref(n)) == CUDA_SUCCESS

    def device_count(self) -> int:
        n = ctypes.c_int(0)
        rc = self.lib.cuDeviceGetCount(ctypes.byref(n))
        return n.value if rc == CUDA_SUCCESS else 0

    def _device(self, ordinal: int) -> ctypes.c_int:
        dev = ctypes.c_int(0)
        self._check(self.lib.cuDeviceGet(ctypes.byref(dev), ordinal), f"cuDeviceGet({ordinal})")
        return dev

    def attribute(self, ordinal: int, attr: int) -> int:
        value = ctypes.c_int(0)
        self._check(self.lib.cuDeviceGetAttribute(ctypes.byref(value), attr, self._device(ordinal)),
                    f"cuDeviceGetAttribute({attr}, device {ordinal})")
        return value.value

    def device_info(self, ordinal: int) -> DeviceInfo | None:
        """What Proton's viewer needs of device `ordinal` (None before CUDA is initialised)."""
        info = self._infos.get(ordinal)
        if info is None:
            if not self.initialized():
                return None
            major = self.attribute(ordinal, ATTR_COMPUTE_CAPABILITY_MAJOR)
            minor = self.attribute(ordinal, ATTR_COMPUTE_CAPABILITY_MINOR)
            info = self._infos[ordinal] = DeviceInfo(
                arch=f"{major}{minor}",
                num_sms=self.attribute(ordinal, ATTR_MULTIPROCESSOR_COUNT),
                clock_rate_khz=self.attribute(ordinal, ATTR_CLOCK_RATE),
                memory_clock_rate_khz=self.attribute(ordinal, ATTR_MEMORY_CLOCK_RATE),
                bus_width_bits=self.attribute(ordinal, ATTR_GLOBAL_MEMORY_BUS_WIDTH),
            )
        return info

    def synchronize_all(self) -> int:
        """Waits for all work on every device's primary context (what torch and Triton use) and on
        the calling thread's current context. No-op before CUDA is initialised. Returns the current
        context's cuCtxSynchronize result (a GPU fault shows there: 700, ...), else 0."""
        if not self.initialized():
            return CUDA_SUCCESS
        lib = self.lib
        current = ctypes.c_void_p()
        result = CUDA_SUCCESS
        if lib.cuCtxGetCurrent(ctypes.byref(current)) == CUDA_SUCCESS and current.value:
            result = lib.cuCtxSynchronize()
        for ordinal in range(self.device_count()):
            dev = self._device(ordinal)
            flags, active = ctypes.c_uint(0), ctypes.c_int(0)
            if lib.cuDevicePrimaryCtxGetState(dev, ctypes.byref(flags), ctypes.byref(active)) != 0:
                continue
            if not active.value:
                continue  # never used in this process: nothing can be running there
            ctx = ctypes.c_void_p()
            if lib.cuDevicePrimaryCtxRetain(ctypes.byref(ctx), dev) != CUDA_SUCCESS:
                continue
            try:
                if ctx.value != current.value:
                    self._check(lib.cuCtxPushCurrent_v2(ctx), "cuCtxPushCurrent")
                    try:
                        code = lib.cuCtxSynchronize()
                        if code in GPU_FAULTS:  # the caller records it; the other devices still wait
                            result = result or code
                        else:
                            self._check(code, f"cuCtxSynchronize (device {ordinal})")
                    finally:
                        lib.cuCtxPopCurrent_v2(ctypes.byref(ctypes.c_void_p()))
            finally:
                lib.cuDevicePrimaryCtxRelease_v2(dev)
        return result
