"""From a filled `CUpti_PCSamplingData` to sample counts per (function, source line): numpy only.

CUPTI fills the PC array and each PC's stall-reason array that Lepton lent it (`pc_sampling`): one
array of `collect_num_pcs` PC records and one block of `collect_num_pcs x num_reasons` stall entries,
row i lent to PC i. The decoder reads them as numpy views, so a drain costs a few array operations
plus one Python call per distinct PC not seen before (its source line, cached by the caller), never a
Python object per sample.

Counting follows Proton (`CuptiPCSampling.cpp`): a reason whose CUPTI name ends in `_not_issued`
counts in `num_samples` only; any other counts in `num_samples`, `num_stalled_samples` and its
`stalled_<reason>`. So `num_stalled_samples` = the sum of the `stalled_*` counters, always.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from . import layout as L


class DecodeError(RuntimeError):
    """CUPTI's buffer is not laid out as expected (a libcupti whose layouts differ)."""


class StallTable:
    """The stall reasons of one context: CUPTI index -> (metric column, not issued)."""

    def __init__(self, indices: list[int], cupti_names: list[str]) -> None:
        self.metrics: list[str] = list(L.PROTON_STALL_METRICS)
        size = max(indices, default=0) + 1
        self.column = np.full(size, -1, np.int64)
        self.not_issued = np.zeros(size, bool)
        for index, cupti_name in zip(indices, cupti_names):
            metric, not_issued = L.stall_metric(cupti_name)
            if metric not in self.metrics:
                self.metrics.append(metric)
            self.column[index] = self.metrics.index(metric)
            self.not_issued[index] = not_issued
        self.indices = list(indices)


@dataclass
class Drain:
    """What one `cuptiPCSamplingGetData` returned: one row per (PC, stall reason) with samples."""

    cubin_crc: np.ndarray  # uint64
    pc_offset: np.ndarray  # uint64
    function_ptr: np.ndarray  # uint64, CUPTI's functionName pointer
    reason: np.ndarray  # uint32, CUPTI stall reason index
    samples: np.ndarray  # uint32
    total_samples: int = 0
    dropped_samples: int = 0
    hardware_buffer_full: bool = False
    remaining_pcs: int = 0
    num_pcs: int = 0


def decode(header: np.ndarray, pcs: np.ndarray, stalls: np.ndarray, stalls_address: int) -> Drain:
    """Reads a filled buffer. `header`: the 80-byte `CUpti_PCSamplingData`; `pcs`: the lent PC array
    (`collect_num_pcs` x 64 bytes); `stalls`: the lent stall block (`collect_num_pcs`, reasons, 2)
    uint32 at `stalls_address`. Raises `DecodeError` if a PC's stall pointer is not the row lent
    for it."""
    h = header.view(L.DATA_DTYPE)[0]
    n = int(h["total_num_pcs"])
    capacity, reasons = stalls.shape[0], stalls.shape[1]
    if n > capacity or n > len(pcs) // L.PC_SIZE:
        raise DecodeError(f"CUPTI reports {n} PCs in a buffer lent for {capacity}")
    pc = pcs[:n * L.PC_SIZE].view(L.PC_DTYPE)
    row_bytes = reasons * L.STALL_SIZE
    expected = stalls_address + np.arange(n, dtype=np.uint64) * np.uint64(row_bytes)
    if n and not np.array_equal(pc["stall_reason"], expected):
        raise DecodeError("CUPTI moved a PC's stall-reason array: this libcupti's CUpti_PCSamplingPCData "
                          "layout differs from CUPTI 12.4+/13's")
    count = pc["stall_reason_count"].astype(np.int64)
    if n and int(count.max()) > reasons:
        raise DecodeError(f"a PC has {int(count.max())} stall reasons, more than the {reasons} configured")
    used = np.arange(reasons)[None, :] < count[:, None]  # (n, reasons)
    block = stalls[:n]
    row = np.broadcast_to(np.arange(n)[:, None], used.shape)[used]
    reason, samples = block[:, :, 0][used], block[:, :, 1][used]
    keep = samples > 0
    row = row[keep]
    return Drain(cubin_crc=pc["cubin_crc"][row], pc_offset=pc["pc_offset"][row],
                 function_ptr=pc["function_name"][row], reason=reason[keep], samples=samples[keep],
                 total_samples=int(h["total_samples"]), dropped_samples=int(h["dropped_samples"]),
                 hardware_buffer_full=bool(h["hardware_buffer_full"]),
                 remaining_pcs=int(h["remaining_num_pcs"]), num_pcs=n)


LineOf = Callable[[int, str, int], str]
"""`(cubin CRC, function name, PC offset) -> "<dir>/<file>:<line>@<function>"`, or "" with no line."""


@dataclass
class LineCounts:
    """Samples per (function, line), not yet attributed to call paths. `counts[i]` is a
    (metric columns, 2) array: samples of issued (0) and not-issued (1) reasons."""

    metrics: list[str]
    counts: dict[tuple[str, str], np.ndarray] = field(default_factory=dict)

    def add(self, other: LineCounts) -> None:
        if len(other.metrics) > len(self.metrics):
            self._widen(other.metrics)
        for key, c in other.counts.items():
            mine = self.counts.get(key)
            if mine is None:
                mine = self.counts[key] = np.zeros((len(self.metrics), 2), np.int64)
            mine[:len(c)] += c

    def _widen(self, metrics: list[str]) -> None:
        self.metrics = list(metrics)
        for key, c in self.counts.items():
            wide = np.zeros((len(metrics), 2), np.int64)
            wide[:len(c)] = c
            self.counts[key] = wide

    def functions(self) -> set[str]:
        return {fn for fn, _ in self.counts}

    def pop_function(self, fn: str) -> dict[str, np.ndarray]:
        """Removes and returns `line -> counts` of function `fn`."""
        out = {line: self.counts.pop((fn, line)) for f, line in list(self.counts) if f == fn}
        return out

    def total(self) -> int:
        return int(sum(int(c.sum()) for c in self.counts.values()))


def by_line(drain: Drain, table: StallTable, function_name: Callable[[int], str], line_of: LineOf) -> LineCounts:
    """Sums a drain's samples per (function, line). `function_name(ptr)` reads CUPTI's string;
    `line_of` is called once per distinct PC of the drain (and should cache)."""
    out = LineCounts(table.metrics)
    if not len(drain.samples):
        return out
    if int(drain.reason.max()) >= len(table.column) or (table.column[drain.reason] < 0).any():
        raise DecodeError("CUPTI returned a stall reason index it did not list")
    keys = np.stack([drain.cubin_crc, drain.function_ptr, drain.pc_offset], axis=1)
    uniq, inverse = np.unique(keys, axis=0, return_inverse=True)
    names: dict[int, str] = {}
    target_of_key: dict[tuple[str, str], int] = {}
    pc_target = np.empty(len(uniq), np.int64)
    for i, (crc, ptr, offset) in enumerate(uniq.tolist()):
        fn = names.get(ptr)
        if fn is None:
            fn = names[ptr] = function_name(ptr)
        key = (fn, line_of(crc, fn, offset))
        pc_target[i] = target_of_key.setdefault(key, len(target_of_key))
    mat = np.zeros((len(target_of_key), len(table.metrics), 2), np.int64)
    np.add.at(mat, (pc_target[inverse.reshape(-1)], table.column[drain.reason],
                    table.not_issued[drain.reason].astype(np.int64)), drain.samples.astype(np.int64))
    for key, t in target_of_key.items():
        out.counts[key] = mat[t]
    return out


def metrics_of(metrics: list[str], counts: np.ndarray) -> dict[str, int]:
    """The node metrics of (columns, 2) counts: every stall counter (0s included, as Proton writes
    them), `num_samples` (issued + not issued) and `num_stalled_samples` (issued)."""
    issued = counts[:, 0]
    out = {L.NUM_SAMPLES: int(counts.sum()), L.NUM_STALLED_SAMPLES: int(issued.sum())}
    out.update(zip(metrics, issued.tolist()))
    return out


class SampleBuffers:
    """The memory lent to CUPTI for one context (`SAMPLING_DATA_BUFFER`): a `CUpti_PCSamplingData`,
    its PC array and one stall-reason row per PC. CUPTI keeps the pointers: the arrays live as long
    as the context is sampled."""

    def __init__(self, num_pcs: int, num_reasons: int) -> None:
        self.header = np.zeros(L.DATA_SIZE, np.uint8)
        self.pcs = np.zeros(num_pcs * L.PC_SIZE, np.uint8)
        self.stalls = np.zeros((num_pcs, max(num_reasons, 1), 2), np.uint32)
        h = self.header.view(L.DATA_DTYPE)
        h["size"] = L.DATA_SIZE
        h["collect_num_pcs"] = num_pcs
        h["pc_data"] = self.pcs.ctypes.data
        pc = self.pcs.view(L.PC_DTYPE)
        pc["size"] = L.PC_SIZE
        pc["stall_reason"] = self.stalls.ctypes.data + np.arange(num_pcs, dtype=np.uint64) * np.uint64(
            self.stalls.shape[1] * L.STALL_SIZE)

    @property
    def address(self) -> int:
        return self.header.ctypes.data

    def decode(self) -> Drain:
        return decode(self.header, self.pcs, self.stalls, self.stalls.ctypes.data)

    def mark_read(self) -> None:
        """Empties the counts, so that a buffer CUPTI did not write again reads as empty."""
        h = self.header.view(L.DATA_DTYPE)
        for name in ("total_num_pcs", "total_samples", "dropped_samples", "remaining_num_pcs",
                      "non_user_samples", "hardware_buffer_full"):
            h[name] = 0
