"""Byte layouts of the CUPTI activity records Lepton reads, and the ids of the launch APIs.

Every number here was taken from `cupti_activity.h`, `cupti_callbacks.h` and the cbid headers of the
`nvidia-cuda-cupti` 13.0.85 wheel (CUPTI_API_VERSION 130001, the libcupti torch 2.11 loads), by
compiling `offsetof`/`sizeof` against them. Records are `PACKED_ALIGNMENT` (packed, 8-byte aligned)
and follow one another with no gap, so a record's size is its stride in the buffer.

CUPTI 13.5 emits `CUpti_ActivityKernel13` for kernels: Kernel10 with fields appended, so the offsets
below stay valid and only the stride grows. The stride is therefore not trusted blindly: the backend
measures it once per process with `cuptiActivityGetNextRecord` (see `backend.CuptiBackend`).

This module is pure data: no ctypes, so the parser and its tests run without libcupti.
"""
from __future__ import annotations

import numpy as np

# The oldest CUPTI whose record layouts these are. CUPTI 12.x (API versions < 100) used Kernel9.
MIN_API_VERSION = 130000

# -- activity kinds (CUpti_ActivityKind) -----------------------------------------------------------
KIND_KERNEL = 3
KIND_DRIVER = 4
KIND_RUNTIME = 5
KIND_CONCURRENT_KERNEL = 10
KIND_EXTERNAL_CORRELATION = 39
KIND_INTERNAL_LAUNCH_API = 48

# Record size in bytes of each kind Lepton enables, and of EXTERNAL_CORRELATION, which another
# client (torch.profiler) enables and which Lepton steps over. Kinds not listed are unknown to the
# parser, which stops at them; the backend then learns their size from CUPTI and walks on.
RECORD_SIZE = {
    KIND_KERNEL: 216,  # CUpti_ActivityKernel10
    KIND_CONCURRENT_KERNEL: 216,  # CUpti_ActivityKernel10
    KIND_DRIVER: 40,  # CUpti_ActivityAPI
    KIND_RUNTIME: 40,  # CUpti_ActivityAPI
    KIND_INTERNAL_LAUNCH_API: 40,  # CUpti_ActivityAPI
    KIND_EXTERNAL_CORRELATION: 24,  # CUpti_ActivityExternalCorrelation
}
KERNEL_KINDS = (KIND_KERNEL, KIND_CONCURRENT_KERNEL)
API_KINDS = (KIND_DRIVER, KIND_RUNTIME, KIND_INTERNAL_LAUNCH_API)

# Size table indexed by kind; the last entry (255) is 0 and catches every larger value, so that
# `np.take(table, kind, mode="clip")` classifies any 32-bit word.
TABLE_LEN = 256


def size_table(sizes: dict[int, int] | None = None) -> np.ndarray:
    """Record size in 8-byte slots, per kind (0 = unknown kind)."""
    t = np.zeros(TABLE_LEN, dtype=np.uint8)
    for kind, size in (RECORD_SIZE if sizes is None else sizes).items():
        if not 0 < kind < TABLE_LEN - 1 or size <= 0 or size % 8:
            raise ValueError(f"bad record size {size} for activity kind {kind}")
        t[kind] = size // 8
    return t


# -- field offsets (bytes from the record start) ---------------------------------------------------
class Kernel:  # CUpti_ActivityKernel10
    start = 16  # uint64, ns
    end = 24  # uint64, ns
    device_id = 40  # uint32
    context_id = 44  # uint32
    stream_id = 48  # uint32
    grid_x = 52  # int32
    block_x = 64  # int32
    correlation_id = 92  # uint32
    grid_id = 96  # int64
    name = 104  # const char*
    # uint64: when the launch call queued the kernel, on the API records' clock (inside the call),
    # with cuptiActivityEnableLatencyTimestamps; 0 otherwise. Not valid for a graph's kernels
    # (0, or the last eager kernel's value).
    queued = 120
    graph_node_id = 144  # uint64
    graph_id = 156  # uint32


class Api:  # CUpti_ActivityAPI
    cbid = 4  # uint32
    start = 8  # uint64
    end = 16  # uint64
    process_id = 24  # uint32
    thread_id = 28  # uint32
    correlation_id = 32  # uint32
    return_value = 36  # uint32


# -- callback API (cupti_callbacks.h) --------------------------------------------------------------
CB_DOMAIN_DRIVER_API = 1
CB_DOMAIN_RUNTIME_API = 2
CB_DOMAIN_RESOURCE = 3
# CUpti_CallbackData (cupti_callbacks.h, offsetof with gcc on the 13.0.85 header)
CALLBACK_SITE_OFFSET = 0  # CUpti_ApiCallbackSite: 0 = API_ENTER
CALLBACK_CORRELATION_ID_OFFSET = 64  # uint32_t correlationId
CALLBACK_RETURN_VALUE_OFFSET = 24  # void* functionReturnValue: the call's CUresult / cudaError_t (at EXIT)
CBID_RESOURCE_GRAPHNODE_CREATED = 13
CBID_RESOURCE_GRAPHNODE_CLONED = 20


class ResourceData:  # CUpti_ResourceData
    resource_descriptor = 16  # void*: CUpti_GraphData* for graph callbacks


class GraphData:  # CUpti_GraphData
    graph = 0
    original_graph = 8
    node = 16  # CUgraphNode
    original_node = 24  # CUgraphNode (GRAPHNODE_CLONED only)
    node_type = 32  # CUgraphNodeType (uint32)


GRAPH_NODE_TYPE_KERNEL = 0  # CU_GRAPH_NODE_TYPE_KERNEL: the only nodes that leave kernel records


SUBSCRIBER_PARAMS_SIZE = 32  # CUpti_SubscriberParams_STRUCT_SIZE
OLD_SUBSCRIBER_NAME_MIN_LEN = 64

# -- results (CUptiResult) -------------------------------------------------------------------------
SUCCESS = 0
ERROR_MAX_LIMIT_REACHED = 12
ERROR_NOT_INITIALIZED = 15
ERROR_QUEUE_EMPTY = 18
ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED = 39

ACTIVITY_FLAG_FLUSH_FORCED = 1
# CUpti_ActivityThreadIdType: what API records carry as `threadId`. DEFAULT is pthread_self() cut to
# 32 bits, which collided for live threads (docs/design.md, "Thread ids"); SYSTEM
# is gettid(), unique among live threads, and Python's threading.get_native_id().
THREAD_ID_TYPE_SYSTEM = 1
# CUpti_ActivityAttribute: with 1, CUPTI trusts the client to hand out zeroed buffers instead of
# zeroing each one itself "in the main thread", which the header says stalls the launch path.
ATTR_ZEROED_OUT_ACTIVITY_BUFFER = 5

# -- the launch APIs, whose records give each kernel its launching thread and time ---------------
# Every other API's records stay off: whole domains write many records per launch.
DRIVER_LAUNCH_CBIDS = (
    115,  # cuLaunch
    116,  # cuLaunchGrid
    117,  # cuLaunchGridAsync
    307,  # cuLaunchKernel
    442,  # cuLaunchKernel_ptsz
    652,  # cuLaunchKernelEx (Triton)
    653,  # cuLaunchKernelEx_ptsz
    477,  # cuLaunchCooperativeKernel
    478,  # cuLaunchCooperativeKernel_ptsz
    480,  # cuLaunchCooperativeKernelMultiDevice
    514,  # cuGraphLaunch
    515,  # cuGraphLaunch_ptsz
)
RUNTIME_LAUNCH_CBIDS = (
    211,  # cudaLaunchKernel_v7000 (torch)
    214,  # cudaLaunchKernel_ptsz_v7000
    430,  # cudaLaunchKernelExC_v11060
    431,  # cudaLaunchKernelExC_ptsz_v11060
    269,  # cudaLaunchCooperativeKernel_v9000
    270,  # cudaLaunchCooperativeKernel_ptsz_v9000
    272,  # cudaLaunchCooperativeKernelMultiDevice_v9000
    311,  # cudaGraphLaunch_v10000
    312,  # cudaGraphLaunch_ptsz_v10000
)
# The synchronizing calls: at their exit every kernel they waited for has completed, so its record
# can be collected before a later GPU fault takes the context (and CUPTI's records) down.
DRIVER_SYNC_CBIDS = (
    17,  # cuCtxSynchronize
    121,  # cuEventSynchronize
    126,  # cuStreamSynchronize
    440,  # cuStreamSynchronize_ptsz
)
RUNTIME_SYNC_CBIDS = (
    126,  # cudaThreadSynchronize_v3020
    131,  # cudaStreamSynchronize_v3020 (torch: .item(), .cpu(), ...)
    137,  # cudaEventSynchronize_v3020
    165,  # cudaDeviceSynchronize_v3020 (torch.cuda.synchronize())
    239,  # cudaStreamSynchronize_ptsz_v7000
)
# The errors of a fault that ends the context (CUresult and cudaError_t share these numbers): name,
# and the text torch shows after "CUDA error: ".
GPU_FAULTS = {
    700: ("CUDA_ERROR_ILLEGAL_ADDRESS", "an illegal memory access was encountered"),
    702: ("CUDA_ERROR_LAUNCH_TIMEOUT", "the launch timed out and was terminated"),
    710: ("CUDA_ERROR_ASSERT", "device-side assert triggered"),
    714: ("CUDA_ERROR_HARDWARE_STACK_ERROR", "hardware stack error"),
    715: ("CUDA_ERROR_ILLEGAL_INSTRUCTION", "an illegal instruction was encountered"),
    716: ("CUDA_ERROR_MISALIGNED_ADDRESS", "misaligned address"),
    717: ("CUDA_ERROR_INVALID_ADDRESS_SPACE", "operation not supported on global/shared address space"),
    718: ("CUDA_ERROR_INVALID_PC", "invalid program counter"),
    719: ("CUDA_ERROR_LAUNCH_FAILED", "unspecified launch failure"),
}
# Driver launch calls made directly by Python-level launchers (Triton), not through the runtime.
DRIVER_DIRECT_LAUNCH_CBIDS = (652, 653, 514, 515)  # cuLaunchKernelEx(_ptsz), cuGraphLaunch(_ptsz)
TRITON_LAUNCH_CBIDS = (652, 653)  # cuLaunchKernelEx(_ptsz): how Triton launches
DRIVER_CBID_COUNT = 807  # CUPTI_DRIVER_TRACE_CBID_SIZE
RUNTIME_CBID_COUNT = 523  # CUPTI_RUNTIME_TRACE_CBID_SIZE
