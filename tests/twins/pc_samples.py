"""Synthetic PC sampling buffers: `SampleBuffers` filled as CUPTI fills them, for tests without a GPU
(kineto's `MockCuptiActivityBuffer` idea). The decoder reads them exactly as it reads CUPTI's."""
from __future__ import annotations

import ctypes

import numpy as np

from lepton.backends.cupti.pcsampling import layout as L
from lepton.backends.cupti.pcsampling.decode import SampleBuffers

# Stall reasons as an H100's CUPTI lists them (a subset, with a `_not_issued` twin for some).
REASONS = [
    (0, "smsp__pcsamp_warps_issue_stalled_long_scoreboard"),
    (1, "smsp__pcsamp_warps_issue_stalled_long_scoreboard_not_issued"),
    (2, "smsp__pcsamp_warps_issue_stalled_selected"),
    (3, "smsp__pcsamp_warps_issue_stalled_no_instructions"),
    (4, "smsp__pcsamp_warps_issue_stalled_no_instructions_not_issued"),
    (5, "smsp__pcsamp_warps_issue_stalled_not_selected"),
    (7, "smsp__pcsamp_warps_issue_stalled_wait"),
    (9, "smsp__pcsamp_warps_issue_stalled_gmma"),
]

_kept: list[ctypes.Array] = []


def c_string(text: str) -> int:
    """The address of a NUL-terminated copy of `text`, kept alive for the process (as CUPTI keeps
    its function names)."""
    buf = ctypes.create_string_buffer(text.encode())
    _kept.append(buf)
    return ctypes.addressof(buf)


def fill(buffers: SampleBuffers, pcs: list[tuple[int, int, int, list[tuple[int, int]]]], *,
         remaining: int = 0, dropped: int = 0, hardware_buffer_full: bool = False) -> None:
    """Writes `pcs` = [(cubin CRC, function name address, PC offset, [(reason index, samples)])]
    into the buffers as one `cuptiPCSamplingGetData` would."""
    h = buffers.header.view(L.DATA_DTYPE)
    pc = buffers.pcs.view(L.PC_DTYPE)
    if len(pcs) > len(pc):
        raise ValueError("more PCs than the buffer was lent for")
    total = 0
    for i, (crc, name, offset, stalls) in enumerate(pcs):
        pc["cubin_crc"][i], pc["function_name"][i], pc["pc_offset"][i] = crc, name, offset
        pc["stall_reason_count"][i] = len(stalls)
        row = buffers.stalls[i]
        row[:] = 0
        for j, (reason, samples) in enumerate(stalls):
            row[j] = (reason, samples)
            total += samples
    h["total_num_pcs"] = len(pcs)
    h["remaining_num_pcs"] = remaining
    h["total_samples"] = total + dropped
    h["dropped_samples"] = dropped
    h["hardware_buffer_full"] = int(hardware_buffer_full)


def reason_table() -> tuple[list[int], list[str]]:
    return [i for i, _ in REASONS], [n for _, n in REASONS]


def stalls_array(shape: tuple[int, int]) -> np.ndarray:
    return np.zeros((*shape, 2), np.uint32)
