"""ctypes prototypes of the libcupti functions Lepton calls, and their error handling.

Every prototype is set once here (argtypes/restype); callers get plain Python methods.
"""
from __future__ import annotations

import ctypes
from ctypes import POINTER, c_int, c_size_t, c_uint8, c_uint32, c_uint64, c_void_p

from ...errors import BackendError
from . import layout
from .library import load_cupti

# CUpti_BuffersCallbackRequestFunc(uint8_t **buffer, size_t *size, size_t *maxNumRecords)
BufferRequestedFunc = ctypes.CFUNCTYPE(None, c_void_p, c_void_p, c_void_p)
# CUpti_BuffersCallbackCompleteFunc(CUcontext, uint32_t streamId, uint8_t *buffer, size_t size,
#                                   size_t validSize)
BufferCompletedFunc = ctypes.CFUNCTYPE(None, c_void_p, c_uint32, c_void_p, c_size_t, c_size_t)
# CUpti_CallbackFunc(void *userdata, CUpti_CallbackDomain, CUpti_CallbackId, const void *cbdata)
CallbackFunc = ctypes.CFUNCTYPE(None, c_void_p, c_int, c_uint32, c_void_p)


class CuptiError(BackendError):
    """A libcupti call failed; `status` is its CUptiResult."""

    def __init__(self, message: str, status: int) -> None:
        super().__init__(message)
        self.status = status


class CuptiBusyError(CuptiError):
    """Another CUPTI client (torch.profiler, Nsight Systems, Nsight Compute, ...) holds CUPTI's
    single subscription."""


class _SubscriberParams(ctypes.Structure):  # CUpti_SubscriberParams
    _fields_ = [("structSize", c_size_t), ("subscriberName", ctypes.c_char_p),
                ("oldSubscriberName", c_void_p), ("oldSubscriberSize", c_size_t)]


class Cupti:
    """The loaded libcupti, with the calls the backend uses. Thread-safe as libcupti is."""

    def __init__(self) -> None:
        self.lib, self.path, self.version = load_cupti()
        lib = self.lib
        proto = {
            "cuptiGetResultString": (c_int, [c_int, POINTER(ctypes.c_char_p)]),
            "cuptiSubscribe": (c_int, [POINTER(c_void_p), CallbackFunc, c_void_p]),
            "cuptiUnsubscribe": (c_int, [c_void_p]),
            "cuptiFinalize": (c_int, []),
            "cuptiEnableCallback": (c_int, [c_uint32, c_void_p, c_int, c_uint32]),
            "cuptiActivityRegisterCallbacks": (c_int, [BufferRequestedFunc, BufferCompletedFunc]),
            "cuptiActivityEnable": (c_int, [c_int]),
            "cuptiActivityDisable": (c_int, [c_int]),
            "cuptiActivityEnableDriverApi": (c_int, [c_uint32, c_uint8]),
            "cuptiActivityEnableRuntimeApi": (c_int, [c_uint32, c_uint8]),
            "cuptiActivityFlushAll": (c_int, [c_uint32]),
            "cuptiActivityGetNumDroppedRecords": (c_int, [c_void_p, c_uint32, POINTER(c_size_t)]),
            "cuptiActivityGetNextRecord": (c_int, [c_void_p, c_size_t, POINTER(c_void_p)]),
            "cuptiGetTimestamp": (c_int, [POINTER(c_uint64)]),
            "cuptiGetGraphNodeId": (c_int, [c_void_p, POINTER(c_uint64)]),
            "cuptiActivitySetAttribute": (c_int, [c_int, POINTER(c_size_t), c_void_p]),
            "cuptiGetThreadIdType": (c_int, [POINTER(c_int)]),
            "cuptiSetThreadIdType": (c_int, [c_int]),
        }
        for name, (restype, argtypes) in proto.items():
            fn = getattr(lib, name)
            fn.restype, fn.argtypes = restype, argtypes
        self._subscribe_v2 = getattr(lib, "cuptiSubscribe_v2", None)
        if self._subscribe_v2 is not None:
            self._subscribe_v2.restype = c_int
            self._subscribe_v2.argtypes = [POINTER(c_void_p), CallbackFunc, c_void_p,
                                           POINTER(_SubscriberParams)]

    # -- errors ---------------------------------------------------------------------------------------
    def result_string(self, status: int) -> str:
        s = ctypes.c_char_p()
        if self.lib.cuptiGetResultString(status, ctypes.byref(s)) == 0 and s.value:
            return s.value.decode(errors="replace")
        return f"CUPTI error {status}"

    def check(self, status: int, what: str) -> None:
        if status != layout.SUCCESS:
            raise CuptiError(f"{what} failed: {self.result_string(status)} ({status})", status)

    # -- callback API -------------------------------------------------------------------------------
    def subscribe(self, callback, name: bytes = b"lepton") -> int:
        """Takes CUPTI's single subscription; raises `CuptiBusyError` naming the holder if taken."""
        handle = c_void_p()
        holder = ""
        if self._subscribe_v2 is not None:
            old = ctypes.create_string_buffer(layout.OLD_SUBSCRIBER_NAME_MIN_LEN)
            params = _SubscriberParams(layout.SUBSCRIBER_PARAMS_SIZE, name, ctypes.addressof(old),
                                       len(old))
            status = self._subscribe_v2(ctypes.byref(handle), callback, None, ctypes.byref(params))
            holder = old.value.decode(errors="replace")
        else:
            status = self.lib.cuptiSubscribe(ctypes.byref(handle), callback, None)
        if status == layout.ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED:
            who = f" ({holder})" if holder else ""
            raise CuptiBusyError(
                f"CUPTI is already in use by another profiler{who}: CUPTI allows one client per "
                "process, and torch.profiler, Nsight Systems, Nsight Compute and cuda-gdb each take "
                "it. Stop that profiler (or run without it) before lepton.start().", status)
        self.check(status, "cuptiSubscribe")
        return handle.value

    def unsubscribe(self, handle: int) -> None:
        self.check(self.lib.cuptiUnsubscribe(handle), "cuptiUnsubscribe")

    def detach(self) -> None:
        """`cuptiFinalize`: CUPTI leaves the process (its launch instrumentation too); the next
        CUPTI call attaches it again."""
        self.check(self.lib.cuptiFinalize(), "cuptiFinalize")

    def enable_callback(self, enable: bool, handle: int, domain: int, cbid: int) -> None:
        self.check(self.lib.cuptiEnableCallback(int(enable), handle, domain, cbid),
                   f"cuptiEnableCallback(domain {domain}, cbid {cbid})")

    # -- activity API -------------------------------------------------------------------------------
    def register_buffer_callbacks(self, requested, completed) -> None:
        self.check(self.lib.cuptiActivityRegisterCallbacks(requested, completed),
                   "cuptiActivityRegisterCallbacks")

    def enable(self, kind: int) -> None:
        self.check(self.lib.cuptiActivityEnable(kind), f"cuptiActivityEnable({kind})")

    def disable(self, kind: int) -> int:
        return self.lib.cuptiActivityDisable(kind)

    def enable_driver_api(self, cbid: int, enable: bool) -> int:
        return self.lib.cuptiActivityEnableDriverApi(cbid, int(enable))

    def enable_runtime_api(self, cbid: int, enable: bool) -> int:
        return self.lib.cuptiActivityEnableRuntimeApi(cbid, int(enable))

    def enable_latency_timestamps(self, enable: bool) -> int:
        """Kernel records carry `queued`, their launch call's time; returns CUPTI's status (-1
        where this libcupti lacks the call)."""
        fn = getattr(self.lib, "cuptiActivityEnableLatencyTimestamps", None)
        if fn is None:
            return -1
        fn.restype, fn.argtypes = c_int, [c_uint8]
        return fn(int(enable))

    def set_attribute_u8(self, attr: int, value: int) -> None:
        size, v = c_size_t(1), c_uint8(value)
        self.check(self.lib.cuptiActivitySetAttribute(attr, ctypes.byref(size), ctypes.byref(v)),
                   f"cuptiActivitySetAttribute({attr})")

    def flush_all(self, forced: bool) -> None:
        """Delivers buffers through the completion callback, on CUPTI's thread; the GIL is
        released meanwhile (CDLL), so that callback can run."""
        flag = layout.ACTIVITY_FLAG_FLUSH_FORCED if forced else 0
        status = self.lib.cuptiActivityFlushAll(flag)
        if status != layout.ERROR_NOT_INITIALIZED:  # nothing ran on a GPU yet: nothing to flush
            self.check(status, "cuptiActivityFlushAll")

    def dropped_records(self) -> int:
        """Records dropped since the last call (CUPTI resets the count)."""
        n = c_size_t(0)
        if self.lib.cuptiActivityGetNumDroppedRecords(None, 0, ctypes.byref(n)) != 0:
            return 0
        return n.value

    def timestamp(self) -> int:
        ts = c_uint64(0)
        self.check(self.lib.cuptiGetTimestamp(ctypes.byref(ts)), "cuptiGetTimestamp")
        return ts.value

    def fast_timestamp(self):
        """`timestamp` as a plain call without the error check that keeps the GIL (it only reads a
        clock): the time lines' clock when CUPTI's is not the wall clock."""
        address = ctypes.cast(self.lib.cuptiGetTimestamp, c_void_p).value
        fn = ctypes.PYFUNCTYPE(c_int, POINTER(c_uint64))(address)

        def read() -> int:
            ts = c_uint64()
            fn(ctypes.byref(ts))
            return ts.value

        return read

    def thread_id_type(self) -> int:
        t = c_int(0)
        self.check(self.lib.cuptiGetThreadIdType(ctypes.byref(t)), "cuptiGetThreadIdType")
        return t.value

    def set_thread_id_type(self, kind: int) -> None:
        self.check(self.lib.cuptiSetThreadIdType(kind), f"cuptiSetThreadIdType({kind})")

    def graph_node_id(self, node: int) -> int:
        nid = c_uint64(0)
        self.check(self.lib.cuptiGetGraphNodeId(node, ctypes.byref(nid)), "cuptiGetGraphNodeId")
        return nid.value

    def record_size_at(self, buffer_address: int, valid: int, offset: int) -> int:
        """Size in bytes of the record at `offset`, as CUPTI steps over it (0 if it cannot)."""
        rec = c_void_p(buffer_address + offset)
        status = self.lib.cuptiActivityGetNextRecord(buffer_address, valid, ctypes.byref(rec))
        if status == layout.ERROR_MAX_LIMIT_REACHED:
            return valid - offset  # the last record of the buffer
        if status != layout.SUCCESS or not rec.value:
            return 0
        return rec.value - buffer_address - offset
