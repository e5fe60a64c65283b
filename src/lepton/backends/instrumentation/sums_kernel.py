"""The per-CTA scope sums of `sums` as one Triton kernel: a program per CTA walks each warp's
entries once per scope and keeps the open START, the summed durations, the interval count, the
first START and last END, and whether the records pair.

Done with torch ops, the same sums took ~40 launches a scope per piece, and the host's dispatch of
those launches, not the GPU, bounded a decode (docs/design.md); here a piece is one launch per run
of contiguous launches, and it reads the int32 slots in place instead of a widened int64 copy.
"""
from __future__ import annotations

import triton
import triton.language as tl

from .layout import CLOCK_BITS, CLOCK_HIGH_MASK, END_BIT, HEADER_WORDS, SCOPE_MASK, SCOPE_SHIFT

BLOCK = 128  # entries a program reads at once
NO_START = 1 << 62  # a CTA's first START where it closed no interval (`sums._scope_rows` uses the same)
UNKNOWN_SCOPE_FLAG = 1
UNPAIRED_FLAG = 2


@triton.jit
def _later_start(flag_a, cycle_a, flag_b, cycle_b):
    """The scan's combine: the last START seen, if any."""
    return flag_a | flag_b, tl.where(flag_b != 0, cycle_b, cycle_a)


# The sizes are runtime values, not specialised on: one compiled kernel serves every instrumented
# kernel (a compile is ~1 s, and would otherwise happen inside the user's loop).
@triton.jit(do_not_specialize=["slot_words", "data_word", "seg_words", "num_units", "num_scopes", "row0"])
def _cta_scope_sums(slots, slot_words, data_word, seg_words, num_units, scope_ids, num_scopes, row0,
                    durations, ends, firsts, lasts, flags,
                    HEADER: tl.constexpr, END_SHIFT: tl.constexpr, ID_SHIFT: tl.constexpr,
                    ID_MASK: tl.constexpr, HIGH_MASK: tl.constexpr, WRAP: tl.constexpr,
                    NONE: tl.constexpr, UNKNOWN: tl.constexpr, UNPAIRED: tl.constexpr,
                    BLOCK: tl.constexpr):
    cta = tl.program_id(0).to(tl.int64)
    row = slots + cta * slot_words
    out = row0 + cta
    offsets = tl.arange(0, BLOCK)
    first = tl.full((), NONE, tl.int64)
    last = tl.full((), -1, tl.int64)
    unpaired = tl.full((), 0, tl.int32)
    matched = tl.full((), 0, tl.int64)
    written = tl.full((), 0, tl.int64)
    for unit in range(num_units):
        written += tl.load(row + HEADER + unit).to(tl.int64) // 2
    for s in range(num_scopes):
        scope = tl.load(scope_ids + s).to(tl.int64)
        total = tl.full((), 0, tl.int64)
        closed = tl.full((), 0, tl.int64)
        for unit in range(num_units):
            entries = tl.load(row + HEADER + unit) // 2
            segment = row + data_word + unit * seg_words
            seen = tl.full((), 0, tl.int32)  # the scope's records so far in this warp
            open_cycle = tl.full((), 0, tl.int64)  # the cycle of its last START
            for chunk in range(0, entries, BLOCK):
                at = chunk + offsets
                valid = at < entries
                w0 = tl.load(segment + 2 * at, mask=valid, other=0).to(tl.int64) & 0xFFFFFFFF
                w1 = tl.load(segment + 2 * at + 1, mask=valid, other=0).to(tl.int64) & 0xFFFFFFFF
                mine = valid & (((w0 >> ID_SHIFT) & ID_MASK) == scope)
                is_start = (w0 >> END_SHIFT) == 0
                cycle = ((w0 & HIGH_MASK) << 32) | w1
                rank = seen + tl.cumsum(mine.to(tl.int32), 0) - 1
                unpaired |= tl.max((mine & (is_start != ((rank % 2) == 0))).to(tl.int32), 0)
                opens = (mine & is_start).to(tl.int32)
                any_open, last_open = tl.associative_scan((opens, cycle), 0, _later_start)
                start_cycle = tl.where(any_open != 0, last_open, open_cycle)
                closes = mine & ~is_start
                duration = cycle - start_cycle
                duration = tl.where(duration < 0, duration + WRAP, duration)
                total += tl.sum(tl.where(closes, duration, 0), 0)
                closed += tl.sum(closes.to(tl.int64), 0)
                first = tl.minimum(first, tl.min(tl.where(closes, start_cycle, NONE), 0))
                last = tl.maximum(last, tl.max(tl.where(closes, start_cycle + duration, -1), 0))
                seen += tl.sum(mine.to(tl.int32), 0)
                chunk_open, chunk_cycle = tl.reduce((opens, cycle), 0, _later_start)
                open_cycle = tl.where(chunk_open != 0, chunk_cycle, open_cycle)
            unpaired |= seen % 2  # a START never closed
            matched += seen
        tl.store(durations + out * num_scopes + s, total)
        tl.store(ends + out * num_scopes + s, closed)
    tl.store(firsts + out, first)
    tl.store(lasts + out, last)
    flag = tl.where(unpaired != 0, UNPAIRED, 0) | tl.where(matched != written, UNKNOWN, 0)
    tl.store(flags + out, flag.to(tl.int32))


def cta_scope_sums(slots: list, data_word: int, seg_words: int, num_units: int, scope_ids: list[int]):
    """`(durations, ends, first, last, flags)` per CTA of the runs `slots` (int32 (CTAs, slot
    words) tensors, `sums.TorchOps.slots`): summed cycles and closed intervals per scope
    (CTAs, scopes), the first START and last END of any closed interval, and the `*_FLAG` bits."""
    import torch

    like = slots[0]
    rows = sum(s.shape[0] for s in slots)
    num_scopes = len(scope_ids)
    ids = torch.tensor(scope_ids, dtype=torch.int32, device=like.device)
    durations = torch.empty((rows, num_scopes), dtype=torch.int64, device=like.device)
    ends = torch.empty_like(durations)
    first = torch.empty((rows,), dtype=torch.int64, device=like.device)
    last = torch.empty_like(first)
    flags = torch.empty((rows,), dtype=torch.int32, device=like.device)
    row = 0
    for run in slots:
        n = run.shape[0]
        if n:
            _cta_scope_sums[(n,)](
                run, run.shape[1], data_word, seg_words, num_units, ids, num_scopes, row,
                durations, ends, first, last, flags,
                HEADER=HEADER_WORDS, END_SHIFT=END_BIT, ID_SHIFT=SCOPE_SHIFT, ID_MASK=SCOPE_MASK,
                HIGH_MASK=CLOCK_HIGH_MASK, WRAP=1 << CLOCK_BITS, NONE=NO_START, UNKNOWN=UNKNOWN_SCOPE_FLAG,
                UNPAIRED=UNPAIRED_FLAG, BLOCK=BLOCK, num_warps=4)
        row += n
    return durations, ends, first, last, flags
