"""`InstrumentationHook.host_buffer`: the last launch's profile scratch on the host, behind the
header Proton 3.6 puts before it (`triton/profiler/hooks/instrumentation.py`,
`_populate_host_buffer`). A debug path (`enable_host_buffer`) that Proton's own tests read; all
u32, little-endian:

    version (1) | header_offset (4) | header_size | payload_offset (= header_size)
    payload_size | device_type (1 cuda, 2 hip, 0 other) | block_num | total_unit (num_warps)
    scratch_mem_size (profile_scratch_size) | uid_num | uid_vec[uid_num]       header_size bytes
    payload: the launch's scratch buffer as the kernel left it (block_num CTA slots, padding)

header_size = 40 + 4 * uid_num (the constants are `layout`'s). The payload's slots are in the
layout `decode` reads; `read_host_buffer` reads one back (`bench/store_gap.py` decodes Proton's with
it).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .layout import DEVICE_TYPES, HOST_BUFFER_VERSION, HOST_FIXED_HEADER_BYTES, HOST_HEADER_OFFSET


def recorded_units(num_warps: int, selective: bool, sampling_options: str) -> list[int]:
    """The warps that have a segment in each slot: those the selective sampling names, in the
    mode's order (as Proton's header lists them), else every warp."""
    if selective:
        named = [int(part) for part in sampling_options.split(",") if part.strip()]
        if named:
            return named
    return list(range(num_warps))


def host_buffer(payload: np.ndarray, *, scratch_size: int, num_warps: int, target_backend: str,
                units: list[int]) -> np.ndarray:
    """The header above followed by `payload` (the launch's whole scratch buffer, uint8), as one
    uint8 array."""
    payload = np.ascontiguousarray(payload, dtype=np.uint8).reshape(-1)
    header_size = HOST_FIXED_HEADER_BYTES + 4 * len(units)
    fields = [HOST_BUFFER_VERSION, HOST_HEADER_OFFSET, header_size, header_size, payload.size,
              DEVICE_TYPES.get(target_backend, 0), payload.size // scratch_size, num_warps, scratch_size,
              len(units), *units]
    out = np.empty(header_size + payload.size, np.uint8)
    out[:header_size] = np.asarray(fields, "<u4").view(np.uint8)
    out[header_size:] = payload
    return out


@dataclass(frozen=True)
class HostBuffer:
    """A host buffer read back: the launch's scratch (`payload`, uint8) and the header's layout."""

    payload: np.ndarray
    scratch_size: int
    num_warps: int
    ctas: int
    units: list[int]
    device_type: int


def read_host_buffer(buffer) -> HostBuffer:
    """The inverse of `host_buffer`, for Proton's `host_buffer` and Lepton's alike (a torch CPU
    tensor or a numpy array): `decode.decode_launch(hb.payload, hb.scratch_size, hb.num_warps)`
    decodes the launch. Raises ValueError on a header that is not version 1."""
    array = buffer.numpy() if hasattr(buffer, "numpy") else buffer
    raw = np.ascontiguousarray(array, dtype=np.uint8).reshape(-1)
    fields = raw[:HOST_FIXED_HEADER_BYTES].view("<u4").tolist()
    version, _, header_size, payload_offset, payload_size, device_type, ctas, num_warps, scratch, uid_num = \
        fields
    if version != HOST_BUFFER_VERSION or header_size != HOST_FIXED_HEADER_BYTES + 4 * uid_num:
        raise ValueError(f"not a version-{HOST_BUFFER_VERSION} host buffer (version {version}, header "
                         f"{header_size} bytes for {uid_num} units)")
    units = raw[HOST_FIXED_HEADER_BYTES:header_size].view("<u4").tolist()
    payload = raw[payload_offset:payload_offset + payload_size]
    return HostBuffer(payload, scratch, num_warps, ctas, units, device_type)
