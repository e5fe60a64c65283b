"""Per-scope sums of a batch of launches, computed where their buffers are: on the GPU.

A profile tree needs, per launch and scope, only the summed cycles and nanoseconds; decoding every
interval on the host to add them up cost many times the kernel (docs/design.md). So where every
warp's buffer is well formed (no wrap, each scope's records alternating START, END), the sums
are taken where the buffers are, and only a launches x scopes table crosses to the host. Anything else (a wrapped buffer, an unpaired record, a bad slot, or a session
that keeps the trace: `HostReason`) goes through the host decoder (`decode`), which pairs every
record the way Proton does and says what was wrong.

The formulas are `decode` and `model.cycles` restated over a dense (CTA, warp, entry) grid: the
END at rank r of a scope in a warp closes the START at rank r - 1; each CTA converts cycles to ns at
its own globaltimer rate, or its launch's pooled rate. On the GPU they are two Triton kernels
(`sums_kernel`, through `TorchOps`); here they are numpy array operations (`ArrayOps`), the reference
the kernels are tested against and what the CPU tests run.
"""
from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

import numpy as np

from ...model.cycles import ScopeSums
from .decode import is_slot_size
from .layout import (
    BUF_SIZE_WORD,
    CLOCK_BITS,
    CLOCK_HIGH_MASK,
    END_BIT,
    ENTRY_BYTES,
    HEADER_WORDS,
    INIT_TIME_WORD,
    PRE_FINAL_TIME_WORD,
    PREAMBLE,
    PREAMBLE_WORD,
    SCOPE_MASK,
    SCOPE_SHIFT,
)


class ArrayOps:
    """The sums as numpy array operations: the reference the GPU's kernels (`TorchOps`) are held to,
    and what the CPU tests run."""

    @staticmethod
    def slots(buffers: list, scratch_size: int) -> list:
        """Each launch's slots as a (CTAs, slot words) view of its 32-bit words."""
        return [np.asarray(b, np.uint8)[:len(b) // scratch_size * scratch_size].view("<u4")
                .reshape(-1, scratch_size // 4) for b in buffers]

    @staticmethod
    def words(slots: list, first: int, end: int):
        """Words `first:end` of every slot of the launches (`slots()`), as one (CTAs, words) int64
        array."""
        parts = [s[:, first:end] for s in slots]
        return ArrayOps.concat(parts).astype(np.int64)

    @staticmethod
    def segments(slots: list, first: int, num_units: int, seg_words: int, width: int):
        """The first `width` words of each unit's segment (which starts at word `first` of its
        slot), entry first: one (width, CTAs, units) int64 array. Only these words are read."""
        parts = [s[:, first:first + num_units * seg_words].reshape(-1, num_units, seg_words)[:, :, :width]
                 for s in slots]
        return np.moveaxis(ArrayOps.concat(parts), 2, 0).astype(np.int64)

    @classmethod
    def sums(cls, buffers: list, ctas: list[int], scratch_size: int, num_units: int,
             scope_ids: list[int]) -> BatchSums | HostReason:
        """`batch_sums` past its checks of the arguments: the formulas as array operations."""
        return _array_sums(cls, buffers, ctas, scratch_size, num_units, scope_ids)

    @staticmethod
    def row_bytes(buffers: list, scratch_size: int, num_units: int, num_scopes: int) -> int:
        """Bytes of working memory one CTA takes in `batch_sums`, so that a batch can be cut into
        pieces of a bounded size."""
        return widened_row_bytes(buffers, scratch_size, num_units)

    @staticmethod
    def concat(parts: list):
        """`parts` stacked along their first axis."""
        return np.concatenate(parts) if len(parts) > 1 else parts[0]

    @staticmethod
    def host(a) -> np.ndarray:
        return np.asarray(a)


class TorchOps(ArrayOps):
    """The GPU's, on one device: the sums are two Triton kernels (`sums_kernel`) that read each
    launch's buffer at its address; the rest of `ArrayOps` is not used on torch tensors but to copy
    launches to the host."""

    def __init__(self, device) -> None:
        self.device = device  # torch's device (an index, or "cpu" for Triton's interpreter)

    def sums(self, buffers: list, ctas: list[int], scratch_size: int, num_units: int,
             scope_ids: list[int]) -> BatchSums | HostReason:
        """Two kernels and a copy each way, whatever the scopes: ~40 torch ops a scope cost more
        host time in dispatch than the GPU took (docs/design.md). `buffers`: each launch's
        buffer on the device, or its address (the backend's arena hands out addresses)."""
        from .sums_kernel import FLAG_ORDER, launch_sums

        addresses = [b if isinstance(b, int) else b.data_ptr() for b in buffers]
        cycles, ns, intervals, flags = launch_sums(addresses, ctas, self.device, num_units, scope_ids, scratch_size)
        for flag, reason in zip(FLAG_ORDER, FLAG_REASONS):
            if flags & flag:
                return reason
        return BatchSums(list(scope_ids), cycles, ns, intervals, num_units, list(ctas))

    @staticmethod
    def row_bytes(buffers: list, scratch_size: int, num_units: int, num_scopes: int) -> int:
        """The kernels read the slots in place: a CTA takes its sums, spans and flags."""
        return 8 * (2 * num_scopes + 3)

    @staticmethod
    def concat(parts: list):
        import torch

        return torch.cat(parts) if len(parts) > 1 else parts[0]

    @staticmethod
    def host(a) -> np.ndarray:
        return a.contiguous().cpu().numpy()


class HostReason(str, Enum):
    """Why a batch of launches was decoded on the host instead of summed on the device: the
    backend counts launches by these (`InstrumentationBackend.path_counts`)."""

    TRACE = "trace session"  # the session keeps every interval
    SLOT_SIZE = "slot not whole words"
    EMPTY = "no CTAs or no scopes"
    BAD_SLOT = "bad slot header"  # preamble, buffer size, or a layout that does not fit the slot
    WRAPPED = "buffer wrapped"  # a warp wrote more entries than its segment holds
    TORN = "odd word count"  # a warp's count is not whole entries
    UNKNOWN_SCOPE = "unknown scope"  # a record of a scope the kernel does not name
    UNPAIRED = "unpaired record"  # START after START, END without START, or never closed
    SUMS_FAILED = "device sums failed"  # the sums raised (a Triton or torch error): the backend said why


# The reasons of `sums_kernel.FLAG_ORDER`'s flags, in its order.
FLAG_REASONS = (HostReason.BAD_SLOT, HostReason.WRAPPED, HostReason.TORN, HostReason.UNKNOWN_SCOPE,
                HostReason.UNPAIRED)


@dataclass
class BatchSums:
    """Per launch (rows) and scope (`scope_ids`, columns): cycles, ns and intervals."""

    scope_ids: list[int]
    cycles: np.ndarray  # int64 (launches, scopes)
    ns: np.ndarray  # float64 (launches, scopes)
    intervals: np.ndarray  # int64 (launches, scopes)
    num_units: int
    ctas: list[int]  # CTAs of each launch

    def launch(self, i: int) -> ScopeSums:
        """Launch i's sums (`launches`)."""
        return self.launches()[i]

    def launches(self) -> list[ScopeSums]:
        """Every launch's sums, over the scopes it recorded, converted to Python once for the batch
        (the sessions take the arrays themselves: `backend.summed_launches`)."""
        out = []
        for have, cycles, ns, ctas in zip((self.intervals > 0).tolist(), self.cycles.tolist(), self.ns.tolist(),
                                          self.ctas):
            out.append(ScopeSums([s for s, h in zip(self.scope_ids, have) if h], [c for c, h in zip(cycles, have) if h],
                                 [n for n, h in zip(ns, have) if h], self.num_units * ctas))
        return out


def batch_sums(ops: ArrayOps | type[ArrayOps], buffers: list, ctas: list[int], scratch_size: int, num_units: int,
               scope_ids: list[int]) -> BatchSums | HostReason:
    """The sums of one kernel's launches, or why not where a buffer is not well formed (the
    caller then decodes the batch on the host, which reports what was wrong). Waits for the device
    a fixed number of times whatever the scopes and launches."""
    if not is_slot_size(scratch_size):
        return HostReason.SLOT_SIZE
    if not sum(ctas) or not scope_ids:
        return HostReason.EMPTY
    if HEADER_WORDS + num_units > scratch_size // 4:
        return HostReason.BAD_SLOT
    return ops.sums(buffers, ctas, scratch_size, num_units, list(scope_ids))


def _array_sums(ops: ArrayOps | type[ArrayOps], buffers: list, ctas: list[int], scratch_size: int, num_units: int,
                scope_ids: list[int]) -> BatchSums | HostReason:
    data_word = HEADER_WORDS + num_units
    slots = ops.slots(buffers, scratch_size)
    head = ops.words(slots, 0, data_word)  # (CTAs, header words)
    layout = written_layout(head, scratch_size, num_units)
    if isinstance(layout, HostReason):
        return layout
    seg_words, width = layout
    # (entry word, CTA, warp): only the words the busiest warp wrote, widened; the scans below run
    # along the entries (numpy scans any axis alike; torch, where this ran before, did not).
    entries = ops.segments(slots, data_word, num_units, seg_words, width)
    per_row, ends, first, last, checks = _scope_rows(entries, head[:, HEADER_WORDS:] // 2, scope_ids)
    ok = np.stack(checks)
    if not ok[0]:
        return HostReason.UNKNOWN_SCOPE
    if not ok[1:].all():
        return HostReason.UNPAIRED  # a START after a START, an END without a START, or one never closed
    cycles, ns, intervals = _per_launch_sums(head, ctas, per_row, ends, first, last)
    return BatchSums(list(scope_ids), cycles, ns, intervals, num_units, list(ctas))


def written_layout(head, scratch_size: int, num_units: int) -> tuple[int, int] | HostReason:
    """`(words of a unit's segment, words the busiest unit wrote)` of a batch whose slot headers
    are `head`, or why the batch goes to the host. A kernel that
    records in a loop has 8 KiB segments of which it may write a few dozen bytes: the sums read
    only those."""
    counts = head[:, HEADER_WORDS:]
    same = (head[:, PREAMBLE_WORD] == PREAMBLE) & (head[:, BUF_SIZE_WORD] == head[0, BUF_SIZE_WORD])
    buf_bytes, most, odd, whole = (int(head[0, BUF_SIZE_WORD]), int(counts.max()), int((counts % 2).max()),
                                   bool(same.all()))
    seg_words = buf_bytes // 4 // num_units
    fits = HEADER_WORDS + num_units + buf_bytes // 4 <= scratch_size // 4
    if not whole or buf_bytes % 4 or seg_words < 2 or not fits:
        return HostReason.BAD_SLOT
    if most > seg_words - seg_words % 2:
        return HostReason.WRAPPED
    if odd:
        return HostReason.TORN
    return seg_words, max(2, most)


def _scope_rows(entries, written, scope_ids: list[int]):
    """Per CTA (rows) and scope (columns): summed cycles and intervals, each CTA's first START and
    last END, and the checks (0-d: the records name known scopes; per scope, they pair).
    `written`: (CTAs, units) entries each unit wrote."""
    w0, w1 = entries[0::2], entries[1::2]
    position = np.arange(w0.shape[0])[:, None, None]
    valid = position < written[None]
    is_start = (w0 >> END_BIT) == 0
    scope = (w0 >> SCOPE_SHIFT) & SCOPE_MASK
    cycle = ((w0 & CLOCK_HIGH_MASK) << 32) | w1
    known = valid & (scope == scope_ids[0])
    for s in scope_ids[1:]:
        known = known | (valid & (scope == s))
    checks = [(known == valid).all()]
    durations, ends, firsts, lasts = [], [], [], []
    for s in scope_ids:
        mine = valid & (scope == s)
        rank = np.cumsum(mine, 0, dtype=np.int64) - 1  # of each of the scope's records in its warp
        checks.append((~mine | (is_start == (rank % 2 == 0))).all() & (rank[-1] % 2 == 1).all())
        # its last START, -1: none
        start_at = np.maximum.accumulate((mine & is_start).astype(np.int64) * (position + 1) - 1, 0)
        closes = mine & ~is_start
        start_cycle = np.take_along_axis(cycle, start_at.clip(0), 0)
        duration = cycle - start_cycle
        duration = np.where(duration < 0, duration + (1 << CLOCK_BITS), duration)  # the 43-bit counter wrapped
        duration = np.where(closes, duration, 0)
        durations.append(duration.sum((0, 2)))
        ends.append(closes.sum((0, 2), dtype=np.int64))
        firsts.append(np.where(closes, start_cycle, 1 << 62).min(axis=(0, 2)))
        lasts.append(np.where(closes, start_cycle + duration, -1).max(axis=(0, 2)))
    first, last = np.stack(firsts, 1).min(axis=1), np.stack(lasts, 1).max(axis=1)
    return np.stack(durations, 1), np.stack(ends, 1), first, last, checks


def _per_launch_sums(head, ctas: list[int], per_row, ends, first, last):
    """`(cycles, ns, intervals)` per launch and scope from the per-CTA sums: each CTA's cycles
    converted at its own globaltimer rate, or its launch's pooled rate."""
    rows = per_row.shape[0]
    bounds = np.concatenate([[0], np.cumsum(ctas)])

    def per_launch(values):  # sums over each launch's rows, which are contiguous
        columns = 1 if values.ndim == 1 else values.shape[1]
        at = (np.arange(columns)[:, None] * rows + bounds[None, :]).reshape(-1)
        flat = values.T.reshape(-1)  # column after column: each launch's sum is two subtractions
        totals = np.concatenate([np.zeros(1, values.dtype), np.cumsum(flat)])[at].reshape(columns, len(ctas) + 1)
        sums = totals[:, 1:] - totals[:, :-1]  # (columns, launches)
        return sums[0] if values.ndim == 1 else sums.T

    span_cycles = np.where(last > first, last - first, 0)
    init_ns = head[:, INIT_TIME_WORD] | (head[:, INIT_TIME_WORD + 1] << 32)
    pre_final_ns = head[:, PRE_FINAL_TIME_WORD] | (head[:, PRE_FINAL_TIME_WORD + 1] << 32)
    span_ns = np.where(pre_final_ns > init_ns, pre_final_ns - init_ns, 0)
    usable = (span_cycles > 0) & (span_ns > 0)
    pooled_ns = per_launch(np.where(usable, span_ns, 0)).astype(np.float64)
    pooled_cycles = per_launch(np.where(usable, span_cycles, 0)).astype(np.float64)
    pooled = np.where(pooled_cycles > 0, pooled_ns / np.where(pooled_cycles > 0, pooled_cycles, 1.0), 1.0)
    rate = np.where(usable, span_ns.astype(np.float64) / np.where(usable, span_cycles, 1).astype(np.float64),
                    pooled[np.repeat(np.arange(len(ctas)), ctas)])
    ns = per_launch(per_row.astype(np.float64) * rate[:, None])
    return per_launch(per_row), ns, per_launch(ends)


def widened_row_bytes(buffers: list, scratch_size: int, num_units: int) -> int:
    """Bytes of memory one CTA's words take in the numpy sums (the header and what its busiest unit
    wrote, as int64), so that a batch can be cut into pieces of a bounded size."""
    data_word = HEADER_WORDS + num_units
    if not is_slot_size(scratch_size) or data_word > scratch_size // 4 or not buffers:
        return 2 * scratch_size
    most = int(ArrayOps.words(ArrayOps.slots(buffers, scratch_size), HEADER_WORDS, data_word).max())
    return 8 * (data_word + num_units * min(max(2, most), scratch_size // 4))


def warm_up(ops: ArrayOps | type[ArrayOps], to_device) -> BatchSums | HostReason:
    """Runs the sums once on a small made-up batch (two launches of 8 CTAs x 2 warps, two nested
    scopes), so that the first real batch does not pay for loading the library's kernels.
    `to_device(uint8 numpy array)`: the array where `ops` works."""
    units, ctas, entries = 2, 8, 4
    words = np.zeros((ctas, 32), np.uint32)  # 128-byte slots, as Triton pads them
    words[:, PREAMBLE_WORD], words[:, BUF_SIZE_WORD] = PREAMBLE, ENTRY_BYTES * entries * units
    words[:, INIT_TIME_WORD], words[:, PRE_FINAL_TIME_WORD] = 1_000, 2_000  # globaltimer, ns
    words[:, HEADER_WORDS:HEADER_WORDS + units] = 2 * entries
    for unit in range(units):  # scope 0 around scope 1: START 0, START 1, END 1, END 0
        at = HEADER_WORDS + units + 2 * entries * unit
        words[:, at:at + 2 * entries:2] = [0, 1 << SCOPE_SHIFT, 1 << END_BIT | 1 << SCOPE_SHIFT, 1 << END_BIT]
        words[:, at + 1:at + 2 * entries:2] = [100, 200, 300, 400]
    raw = words.reshape(-1).view(np.uint8)
    buffers = [to_device(raw.copy()), to_device(raw.copy())]
    return batch_sums(ops, buffers, [ctas, ctas], 128, units, [0, 1])
