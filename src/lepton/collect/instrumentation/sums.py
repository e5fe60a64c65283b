"""Per-scope sums of a batch of launches, computed where their buffers are: on the GPU.

A profile tree needs, per launch and scope, only the summed cycles and nanoseconds; decoding every
interval on the host to add them up cost 1.4 ms a launch of 4096 CTAs on the H100's host, forty
times the kernel, against 24 us here (docs/design.md). So where every warp's buffer is well formed (no wrap, each
scope's records alternating START, END), the sums are taken with a dozen array operations over the
whole batch, and only a launches x scopes table crosses to the host. Anything else (a wrapped
buffer, an unpaired record, a bad slot, or a session that keeps the trace: `HostReason`) goes
through the host decoder (`decode`), which pairs every record the way Proton does and says what was
wrong.

The formulas are `decode` and `model.cycles` restated over a dense (CTA, warp, entry) grid: the
END at rank r of a scope in a warp closes the START at rank r - 1; each CTA converts cycles to ns at
its own globaltimer rate, or its launch's pooled rate. They run on torch tensors (the device) or
numpy arrays (the tests) through `ArrayOps`, which names the operations the two libraries spell
differently.
"""
from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

import numpy as np

from ...model.cycles import ScopeSums
from .decode import CLOCK_BITS, HEADER_WORDS, PREAMBLE, is_slot_size


class ArrayOps:
    """numpy's spelling of what the sums need; `TorchOps` is torch's."""

    @staticmethod
    def words(buffers: list, scratch_size: int):
        """The launches' slots as one (CTAs, slot words) int64 array of the unsigned words."""
        parts = [np.asarray(b, np.uint8)[:len(b) // scratch_size * scratch_size].view("<u4")
                 .reshape(-1, scratch_size // 4) for b in buffers]
        return ArrayOps.concat(parts).astype(np.int64)

    @staticmethod
    def concat(parts: list):
        """`parts` stacked along their first axis."""
        return np.concatenate(parts) if len(parts) > 1 else parts[0]

    @staticmethod
    def repeat(counts: list[int], like):
        return np.repeat(np.arange(len(counts)), counts)

    @staticmethod
    def arange(n: int, like):
        return np.arange(n)

    @staticmethod
    def cumsum(a, axis: int):
        return np.cumsum(a, axis=axis)

    @staticmethod
    def cummax(a, axis: int):
        return np.maximum.accumulate(a, axis=axis)

    @staticmethod
    def gather(a, index, axis: int):
        return np.take_along_axis(a, index, axis=axis)

    @staticmethod
    def prefix_sums(values):
        """Sums of the first 0, 1, ..., len(values) rows."""
        return np.concatenate([np.zeros((1, *values.shape[1:]), values.dtype), np.cumsum(values, axis=0)])

    @staticmethod
    def index(values: list[int], like):
        return np.asarray(values, np.int64)

    @staticmethod
    def as_int(a):
        return a.astype(np.int64)

    @staticmethod
    def as_float(a):
        return a.astype(np.float64)

    @staticmethod
    def where(condition, a, b):
        return np.where(condition, a, b)

    @staticmethod
    def entries_first(a):
        """(CTA, warp, entry) to (entry, CTA, warp)."""
        return np.moveaxis(a, 2, 0)

    @staticmethod
    def amin(a):
        """Per CTA, over the (entry, warp) axes."""
        return a.min(axis=(0, 2))

    @staticmethod
    def amax(a):
        return a.max(axis=(0, 2))

    @staticmethod
    def amin_columns(a):
        return a.min(axis=1)

    @staticmethod
    def amax_columns(a):
        return a.max(axis=1)

    @staticmethod
    def stack(columns: list):
        return np.stack(columns, 1)

    @staticmethod
    def host(a) -> np.ndarray:
        return np.asarray(a)


class TorchOps(ArrayOps):
    @staticmethod
    def words(buffers: list, scratch_size: int):
        import torch

        parts = [b[:b.shape[0] // scratch_size * scratch_size].view(torch.int32).reshape(-1, scratch_size // 4)
                 for b in buffers]
        return TorchOps.concat(parts).to(torch.int64) & 0xFFFFFFFF

    @staticmethod
    def concat(parts: list):
        import torch

        return torch.cat(parts) if len(parts) > 1 else parts[0]

    @staticmethod
    def repeat(counts: list[int], like):
        import torch

        return torch.repeat_interleave(torch.arange(len(counts), device=like.device),
                                       torch.tensor(counts, device=like.device))

    @staticmethod
    def arange(n: int, like):
        import torch

        return torch.arange(n, device=like.device)

    @staticmethod
    def cumsum(a, axis: int):
        return a.cumsum(axis)

    @staticmethod
    def cummax(a, axis: int):
        return a.cummax(axis).values

    @staticmethod
    def gather(a, index, axis: int):
        return a.gather(axis, index)

    @staticmethod
    def prefix_sums(values):
        import torch

        return torch.cat([torch.zeros((1, *values.shape[1:]), dtype=values.dtype, device=values.device),
                          values.cumsum(0)])

    @staticmethod
    def index(values: list[int], like):
        import torch

        return torch.tensor(values, dtype=torch.int64, device=like.device)

    @staticmethod
    def as_int(a):
        return a.long()

    @staticmethod
    def as_float(a):
        return a.double()

    @staticmethod
    def where(condition, a, b):
        import torch

        return torch.where(condition, a, b)

    @staticmethod
    def entries_first(a):
        return a.permute(2, 0, 1).contiguous()

    @staticmethod
    def amin(a):
        return a.amin((0, 2))

    @staticmethod
    def amax(a):
        return a.amax((0, 2))

    @staticmethod
    def amin_columns(a):
        return a.amin(1)

    @staticmethod
    def amax_columns(a):
        return a.amax(1)

    @staticmethod
    def stack(columns: list):
        import torch

        return torch.stack(columns, 1)

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
        """Launch i's sums, over the scopes it recorded."""
        have = self.intervals[i] > 0
        return ScopeSums([s for s, h in zip(self.scope_ids, have) if h], self.cycles[i][have].tolist(),
                         self.ns[i][have].tolist(), self.num_units * self.ctas[i])


def batch_sums(ops: type[ArrayOps], buffers: list, ctas: list[int], scratch_size: int, num_units: int,
               scope_ids: list[int]) -> BatchSums | HostReason:
    """The sums of one kernel's launches, or why not where a buffer is not well formed (the
    caller then decodes the batch on the host, which reports what was wrong)."""
    if not is_slot_size(scratch_size):
        return HostReason.SLOT_SIZE
    w = ops.words(buffers, scratch_size)
    rows = w.shape[0]
    if rows == 0 or not scope_ids:
        return HostReason.EMPTY
    data_word = HEADER_WORDS + num_units
    buf_words = int(ops.host(w[0, 3])) // 4
    seg_words = buf_words // num_units
    cap = seg_words // 2
    counts = w[:, HEADER_WORDS:data_word]
    if (cap == 0 or data_word + buf_words > w.shape[1]
            or not bool(ops.host(((w[:, 0] == PREAMBLE) & (w[:, 3] == 4 * buf_words)).all()))):
        return HostReason.BAD_SLOT
    if not bool(ops.host((counts <= 2 * cap).all())):
        return HostReason.WRAPPED
    if not bool(ops.host((counts % 2 == 0).all())):
        return HostReason.TORN
    # (entry, CTA, warp): the scans below run along the entries, which torch scans fast only when
    # that axis is not the innermost (docs/design.md: 12x on the H100).
    entries = ops.entries_first(w[:, data_word:data_word + num_units * seg_words]
                                .reshape(rows, num_units, seg_words)[:, :, :2 * cap])
    w0, w1 = entries[0::2], entries[1::2]
    position = ops.arange(cap, w)[:, None, None]
    valid = position < (counts // 2)[None]
    is_start = (w0 >> 31) == 0
    scope = (w0 >> 23) & 0xFF
    cycle = ((w0 & 0x7FF) << 32) | w1
    known = valid & (scope == scope_ids[0])
    for s in scope_ids[1:]:
        known = known | (valid & (scope == s))
    if not bool(ops.host((known == valid).all())):
        return HostReason.UNKNOWN_SCOPE
    durations, ends, firsts, lasts = [], [], [], []
    for s in scope_ids:
        mine = valid & (scope == s)
        rank = ops.cumsum(ops.as_int(mine), 0) - 1  # of each of the scope's records in its warp
        if not bool(ops.host((~mine | (is_start == (rank % 2 == 0))).all())) \
                or not bool(ops.host((rank[-1] % 2 == 1).all())):
            return HostReason.UNPAIRED  # a START after a START, an END without a START, or one never closed
        start_at = ops.cummax(ops.as_int(mine & is_start) * (position + 1) - 1, 0)  # its last START, -1: none
        closes = mine & ~is_start
        start_cycle = ops.gather(cycle, start_at.clip(0), 0)
        duration = cycle - start_cycle
        duration = ops.where(duration < 0, duration + (1 << CLOCK_BITS), duration)  # the 43-bit counter wrapped
        duration = ops.where(closes, duration, 0)
        durations.append(duration.sum((0, 2)))
        ends.append(ops.as_int(closes).sum((0, 2)))
        firsts.append(ops.amin(ops.where(closes, start_cycle, 1 << 62)))
        lasts.append(ops.amax(ops.where(closes, start_cycle + duration, -1)))
    per_row = ops.stack(durations)  # (CTAs, scopes): cycles
    first, last = ops.amin_columns(ops.stack(firsts)), ops.amax_columns(ops.stack(lasts))
    launch_of_row = ops.repeat(ctas, w)
    bounds = ops.index([0, *np.cumsum(ctas).tolist()], w)

    def per_launch(values):  # sums over each launch's rows, which are contiguous (atomics were 10x slower)
        totals = ops.prefix_sums(values)[bounds]
        return totals[1:] - totals[:-1]

    span_cycles = ops.where(last > first, last - first, 0)
    init_ns = w[:, 4] | (w[:, 5] << 32)
    pre_final_ns = w[:, 6] | (w[:, 7] << 32)
    span_ns = ops.where(pre_final_ns > init_ns, pre_final_ns - init_ns, 0)
    usable = (span_cycles > 0) & (span_ns > 0)
    pooled_ns = ops.as_float(per_launch(ops.where(usable, span_ns, 0)))
    pooled_cycles = ops.as_float(per_launch(ops.where(usable, span_cycles, 0)))
    pooled = ops.where(pooled_cycles > 0, pooled_ns / ops.where(pooled_cycles > 0, pooled_cycles, 1.0), 1.0)
    rate = ops.where(usable, ops.as_float(span_ns) / ops.as_float(ops.where(usable, span_cycles, 1)),
                     pooled[launch_of_row])
    cycles = per_launch(per_row)
    ns = per_launch(ops.as_float(per_row) * rate[:, None])
    intervals = per_launch(ops.stack(ends))
    return BatchSums(list(scope_ids), ops.host(cycles), ops.host(ns), ops.host(intervals), num_units, list(ctas))
