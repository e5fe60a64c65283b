"""Byte layouts and enums of CUPTI's PC sampling API (`cupti_pcsampling.h`), as pure data.

Layouts are those of CUPTI 12.4+ and 13 on x86-64 (from CUPTI's headers): 12.4 added `correlationId` to `CUpti_PCSamplingPCData`, growing it from 56 to 64 bytes, so an older
libcupti is refused (`MIN_API_VERSION`). No ctypes here: the decoder and its tests run without
libcupti.
"""
from __future__ import annotations

import numpy as np

from ....model.hatchet_names import NUM_SAMPLES as NUM_SAMPLES  # the decoder writes it, as L.NUM_SAMPLES
from ....model.hatchet_names import STALL_PREFIX

# CUPTI_API_VERSION of CUDA 12.4, the first whose CUpti_PCSamplingPCData is 64 bytes.
MIN_API_VERSION = 22

# -- CUpti_PCSamplingData (80 bytes) ----------------------------------------------------------------
DATA_SIZE = 80
DATA_DTYPE = np.dtype({
    "names": ["size", "collect_num_pcs", "total_samples", "dropped_samples", "total_num_pcs",
              "remaining_num_pcs", "range_id", "pc_data", "non_user_samples", "hardware_buffer_full"],
    "formats": ["<u8", "<u8", "<u8", "<u8", "<u8", "<u8", "<u8", "<u8", "<u8", "u1"],
    "offsets": [0, 8, 16, 24, 32, 40, 48, 56, 64, 72],
    "itemsize": DATA_SIZE,
})

# -- CUpti_PCSamplingPCData (64 bytes) --------------------------------------------------------------
PC_SIZE = 64
PC_DTYPE = np.dtype({
    "names": ["size", "cubin_crc", "pc_offset", "function_index", "function_name", "stall_reason_count",
              "stall_reason", "correlation_id"],
    "formats": ["<u8", "<u8", "<u8", "<u4", "<u8", "<u8", "<u8", "<u4"],
    "offsets": [0, 8, 16, 24, 32, 40, 48, 56],
    "itemsize": PC_SIZE,
})

# -- CUpti_PCSamplingStallReason (8 bytes): pcSamplingStallReasonIndex u32, samples u32 --------------
STALL_SIZE = 8

# -- CUpti_PCSamplingConfigurationAttributeType ----------------------------------------------------
ATTR_SAMPLING_PERIOD = 1  # u32 at +8: one sample per SM every 2**value cycles, value in [5, 31]
ATTR_STALL_REASON = 2  # size_t count at +8, uint32_t* indices at +16
ATTR_SCRATCH_BUFFER_SIZE = 3  # size_t at +8
ATTR_HARDWARE_BUFFER_SIZE = 4  # size_t at +8
ATTR_COLLECTION_MODE = 5  # u32 at +8
ATTR_ENABLE_START_STOP_CONTROL = 6  # u32 at +8
ATTR_SAMPLING_DATA_BUFFER = 8  # void* at +8
ATTR_WORKER_THREAD_PERIODIC_SLEEP_SPAN = 9  # u32 at +8: ms between CUPTI's worker threads' passes
COLLECTION_MODE_CONTINUOUS = 1
CONFIG_INFO_SIZE = 32  # CUpti_PCSamplingConfigurationInfo: type u32, status u32, union (24 B)

STALL_REASON_STRING_SIZE = 128  # CUPTI_STALL_REASON_STRING_SIZE

PERIOD_LOG2_MIN, PERIOD_LOG2_MAX = 5, 31
DEFAULT_PERIOD_LOG2 = 10  # Proton's (hard-coded) period: 2**10 cycles

# -- resource callbacks (CUpti_CallbackIdResource) -------------------------------------------------
CBID_CONTEXT_CREATED = 1
CBID_CONTEXT_DESTROY_STARTING = 2
CBID_MODULE_LOADED = 6
CBID_MODULE_UNLOAD_STARTING = 7
RESOURCE_CONTEXT = 0  # CUpti_ResourceData.context
MODULE_CUBIN_SIZE = 8  # CUpti_ModuleResourceData.cubinSize (size_t)
MODULE_CUBIN = 16  # CUpti_ModuleResourceData.pCubin (const char*)

# -- results (CUptiResult) -------------------------------------------------------------------------
ERROR_OUT_OF_MEMORY = 8  # from cuptiPCSamplingGetData: the device's sample buffer filled up
ERROR_NOT_SUPPORTED = 27
ERROR_INSUFFICIENT_PRIVILEGES = 35

# -- metric names ----------------------------------------------------------------------------------
NUM_STALLED_SAMPLES = "num_stalled_samples"
# Proton's stall counters (Data/Metric.h, PCSamplingMetric), in its order: every node with samples
# carries all of them. Proton spells one `stalled_not_Selected`: kept, for files that compare equal.
PROTON_STALL_METRICS = (
    "stalled_branch_resolving", "stalled_no_instruction", "stalled_short_scoreboard", "stalled_wait",
    "stalled_long_scoreboard", "stalled_tex_throttle", "stalled_barrier", "stalled_membar",
    "stalled_imc_miss", "stalled_mio_throttle", "stalled_math_pipe_throttle", "stalled_drain",
    "stalled_lg_throttle", "stalled_not_Selected", "stalled_misc", "stalled_dispatch_stall",
    "stalled_sleeping", "stalled_selected",
)
SAMPLING_PERIOD_METRIC = "pcsampling_period_log2"  # on ROOT: the k of one sample per 2**k cycles
_CUPTI_PREFIXES = ("smsp__pcsamp_warps_issue_", "smsp__pcsamp_")
NOT_ISSUED = "_not_issued"
_RENAMED = {"stalled_no_instructions": "stalled_no_instruction", "stalled_not_selected": "stalled_not_Selected"}


def stall_metric(cupti_name: str) -> tuple[str, bool]:
    """`(metric name, not issued)` of a CUPTI stall reason:
    `smsp__pcsamp_warps_issue_stalled_long_scoreboard_not_issued` -> (`stalled_long_scoreboard`,
    True). Proton's names where Proton has one; another reason keeps its own (`stalled_<reason>`),
    where Proton would not collect it at all."""
    name = cupti_name
    for prefix in _CUPTI_PREFIXES:
        if name.startswith(prefix):
            name = name[len(prefix):]
            break
    not_issued = name.endswith(NOT_ISSUED)
    if not_issued:
        name = name[:-len(NOT_ISSUED)]
    if not name.startswith(STALL_PREFIX):
        name = STALL_PREFIX + name
    return _RENAMED.get(name, name), not_issued


def period_log2(mode: str) -> int:
    """The k of `SAMPLING_PERIOD` = 2**k cycles for a mode string: `pcsampling` -> Proton's 10;
    `pcsampling:interval=N` -> the nearest power of two to N cycles, k clamped to [5, 31]."""
    interval = None
    for part in mode.split(":")[1:]:
        key, _, value = part.partition("=")
        if key.strip() == "interval":
            interval = int(value)
    if interval is None:
        return DEFAULT_PERIOD_LOG2
    if interval <= 0:
        raise ValueError(f"PC sampling interval must be a positive number of cycles, not {interval}")
    k = int(np.round(np.log2(interval)))
    return min(max(k, PERIOD_LOG2_MIN), PERIOD_LOG2_MAX)
