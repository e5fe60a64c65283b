"""`sums.batch_sums` on the GPU as two Triton kernels: a lane per CTA checks its slot's header and
walks each warp's entries in order once per scope (the open START, summed durations, closed
intervals, the CTA's span in cycles and in globaltimer ns); then one program per launch converts
its CTAs' cycles to ns and adds them up.

Done with torch ops, the same sums took ~40 launches a scope per piece of a batch, and the host's
dispatch of those launches, not the GPU, bounded a decode (docs/design.md). Here a piece is two
launches, a copy to the device and one to the host, and the kernels read the int32 slots in place
instead of a widened int64 copy. The formulas are the numpy
ones of `sums` (`_scope_rows`, `_per_launch_sums`), which the tests hold this to.
"""
from __future__ import annotations

import numpy as np
import triton
import triton.language as tl

from .layout import (
    BUF_SIZE_WORD,
    CLOCK_BITS,
    CLOCK_HIGH_MASK,
    END_BIT,
    HEADER_WORDS,
    INIT_TIME_WORD,
    PRE_FINAL_TIME_WORD,
    PREAMBLE,
    PREAMBLE_WORD,
    SCOPE_MASK,
    SCOPE_SHIFT,
)

BLOCK = 128  # CTAs a program reads at once
NO_START = 1 << 62  # a CTA's first START where it closed no interval

# A CTA's flags; a batch with any goes to the host decoder, for the first reason in this order.
BAD_SLOT_FLAG = 1  # preamble, buffer size unlike the batch's first CTA, or a layout that does not fit
WRAPPED_FLAG = 2
TORN_FLAG = 4
UNKNOWN_SCOPE_FLAG = 8
UNPAIRED_FLAG = 16
FLAG_ORDER = (BAD_SLOT_FLAG, WRAPPED_FLAG, TORN_FLAG, UNKNOWN_SCOPE_FLAG, UNPAIRED_FLAG)


@triton.jit
def _either(a, b):
    return a | b


@triton.jit
def _u64(row, word, mask):
    return (tl.load(row + word, mask=mask, other=0).to(tl.int64) & 0xFFFFFFFF) | \
        (tl.load(row + word + 1, mask=mask, other=0).to(tl.int64) << 32)


# Nothing is specialised on (sizes equal to 1, pointers' alignment): one compiled kernel serves
# every instrumented kernel and batch (a compile is ~1 s, and would otherwise happen in the user's loop).
@triton.jit(do_not_specialize=["slot_words", "num_units", "num_scopes"],
            do_not_specialize_on_alignment=["bases", "bounds", "scope_ids", "durations", "ends", "span_cycles",
                                            "span_ns", "flags"])
def _cta_sums(bases, bounds, slot_words, num_units, scope_ids, num_scopes,
              durations, ends, span_cycles, span_ns, flags,
              HEADER: tl.constexpr, PREAMBLE_AT: tl.constexpr, MAGIC: tl.constexpr, BUF_AT: tl.constexpr,
              INIT_AT: tl.constexpr, PRE_FINAL_AT: tl.constexpr, END_SHIFT: tl.constexpr,
              ID_SHIFT: tl.constexpr, ID_MASK: tl.constexpr, HIGH_MASK: tl.constexpr, WRAP: tl.constexpr,
              NONE: tl.constexpr, BAD_SLOT: tl.constexpr, WRAPPED: tl.constexpr, TORN: tl.constexpr,
              UNKNOWN: tl.constexpr, UNPAIRED: tl.constexpr, BLOCK: tl.constexpr):
    """A lane per CTA, `BLOCK` CTAs of one launch a program (grid: launches x blocks of the
    largest launch): each lane walks its warps' entries in order, so the pairing is a comparison
    per entry, and neighbouring lanes read neighbouring slots. A launch's buffer is found by its
    address (`bases`), so launches of other kernels may lie between them."""
    launch = tl.program_id(0)
    begin = tl.load(bounds + launch)
    local = tl.program_id(1).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    here = local < tl.load(bounds + launch + 1) - begin
    row = tl.load(bases + launch).to(tl.pointer_type(tl.int32)) + local * slot_words
    first_slot = tl.load(bases).to(tl.pointer_type(tl.int32))
    out = begin + local
    data_word = HEADER + num_units
    buf_bytes = tl.load(row + BUF_AT, mask=here, other=0).to(tl.int64) & 0xFFFFFFFF
    seg_words = buf_bytes // 4 // num_units
    fits = (data_word + buf_bytes // 4 <= slot_words) & (buf_bytes % 4 == 0) & (seg_words >= 2)
    same = ((tl.load(row + PREAMBLE_AT, mask=here, other=0).to(tl.int64) & 0xFFFFFFFF) == MAGIC) & \
        (buf_bytes == (tl.load(first_slot + BUF_AT).to(tl.int64) & 0xFFFFFFFF))
    flag = tl.where(fits & same, 0, BAD_SLOT)
    capacity = seg_words - seg_words % 2
    written = tl.zeros((BLOCK,), tl.int64)
    for unit in range(num_units):
        count = tl.load(row + HEADER + unit, mask=here, other=0).to(tl.int64) & 0xFFFFFFFF
        flag |= tl.where(count > capacity, WRAPPED, 0) | tl.where(count % 2 != 0, TORN, 0)
        written += count // 2
    readable = here & (flag == 0)  # else the layout cannot be trusted to stay inside the slot
    first = tl.full((BLOCK,), NONE, tl.int64)
    last = tl.full((BLOCK,), -1, tl.int64)
    unpaired = tl.zeros((BLOCK,), tl.int32)
    matched = tl.zeros((BLOCK,), tl.int64)
    for s in range(num_scopes):
        scope = tl.load(scope_ids + s).to(tl.int64)
        total = tl.zeros((BLOCK,), tl.int64)
        closed = tl.zeros((BLOCK,), tl.int64)
        for unit in range(num_units):
            entries = tl.load(row + HEADER + unit, mask=readable, other=0).to(tl.int64) // 2
            segment = row + data_word + unit * seg_words
            seen = tl.zeros((BLOCK,), tl.int32)  # the scope's records so far in this warp
            open_cycle = tl.zeros((BLOCK,), tl.int64)  # the cycle of its last START
            for at in range(0, tl.max(entries, 0)):
                valid = at < entries
                w0 = tl.load(segment + 2 * at, mask=valid, other=0).to(tl.int64) & 0xFFFFFFFF
                w1 = tl.load(segment + 2 * at + 1, mask=valid, other=0).to(tl.int64) & 0xFFFFFFFF
                mine = valid & (((w0 >> ID_SHIFT) & ID_MASK) == scope)
                is_start = (w0 >> END_SHIFT) == 0
                cycle = ((w0 & HIGH_MASK) << 32) | w1
                unpaired |= (mine & (is_start != (seen % 2 == 0))).to(tl.int32)
                closes = mine & ~is_start
                duration = cycle - open_cycle
                duration = tl.where(duration < 0, duration + WRAP, duration)  # the 43-bit clock wrapped
                total += tl.where(closes, duration, 0)
                closed += closes.to(tl.int64)
                first = tl.where(closes, tl.minimum(first, open_cycle), first)
                last = tl.where(closes, tl.maximum(last, open_cycle + duration), last)
                open_cycle = tl.where(mine & is_start, cycle, open_cycle)
                seen += mine.to(tl.int32)
            unpaired |= seen % 2  # a START never closed
            matched += seen
        tl.store(durations + out * num_scopes + s, total, mask=here)
        tl.store(ends + out * num_scopes + s, closed, mask=here)
    init_ns = _u64(row, INIT_AT, here)
    pre_final_ns = _u64(row, PRE_FINAL_AT, here)
    tl.store(span_cycles + out, tl.where(last > first, last - first, 0), mask=here)
    tl.store(span_ns + out, tl.where(pre_final_ns > init_ns, pre_final_ns - init_ns, 0), mask=here)
    flag |= tl.where(unpaired != 0, UNPAIRED, 0) | tl.where(readable & (matched != written), UNKNOWN, 0)
    tl.store(flags + out, flag.to(tl.int32), mask=here)


@triton.jit
def _spans(span_cycles, span_ns, at, valid):
    """CTAs' cycle and globaltimer spans at `at`, and which CTAs have both (the others take the
    launch's pooled rate)."""
    sc = tl.load(span_cycles + at, mask=valid, other=0)
    sn = tl.load(span_ns + at, mask=valid, other=0)
    return sc, sn, (sc > 0) & (sn > 0)


@triton.jit(do_not_specialize=["num_scopes"],
            do_not_specialize_on_alignment=["bounds", "durations", "ends", "span_cycles", "span_ns", "flags",
                                            "cycles", "ns", "intervals", "launch_flags"])
def _launch_sums(bounds, durations, ends, span_cycles, span_ns, flags, num_scopes, cycles, ns, intervals,
                 launch_flags, BLOCK: tl.constexpr):
    """Per launch: each CTA's cycles converted at its own globaltimer rate, or where it has none the
    launch's pooled rate, and summed per scope; and its CTAs' flags."""
    launch = tl.program_id(0).to(tl.int64)
    begin = tl.load(bounds + launch)
    end = tl.load(bounds + launch + 1)
    pooled_ns = tl.full((), 0.0, tl.float64)
    pooled_cycles = tl.full((), 0.0, tl.float64)
    flag = tl.full((), 0, tl.int32)
    for chunk in range(begin, end, BLOCK):
        at = chunk + tl.arange(0, BLOCK)
        valid = at < end
        sc, sn, usable = _spans(span_cycles, span_ns, at, valid)
        pooled_ns += tl.sum(tl.where(usable, sn, 0), 0).to(tl.float64)
        pooled_cycles += tl.sum(tl.where(usable, sc, 0), 0).to(tl.float64)
        flag |= tl.reduce(tl.load(flags + at, mask=valid, other=0), 0, _either)
    pooled = tl.where(pooled_cycles > 0, pooled_ns / tl.where(pooled_cycles > 0, pooled_cycles, 1.0), 1.0)
    for s in range(num_scopes):
        total = tl.full((), 0, tl.int64)
        closed = tl.full((), 0, tl.int64)
        total_ns = tl.full((), 0.0, tl.float64)
        for chunk in range(begin, end, BLOCK):
            at = chunk + tl.arange(0, BLOCK)
            valid = at < end
            sc, sn, usable = _spans(span_cycles, span_ns, at, valid)
            rate = tl.where(usable, sn.to(tl.float64) / tl.where(usable, sc, 1).to(tl.float64), pooled)
            d = tl.load(durations + at * num_scopes + s, mask=valid, other=0)
            total += tl.sum(d, 0)
            closed += tl.sum(tl.load(ends + at * num_scopes + s, mask=valid, other=0), 0)
            total_ns += tl.sum(d.to(tl.float64) * rate, 0)
        tl.store(cycles + launch * num_scopes + s, total)
        tl.store(intervals + launch * num_scopes + s, closed)
        tl.store(ns + launch * num_scopes + s, total_ns)
    tl.store(launch_flags + launch, flag)


def launch_sums(addresses: list[int], ctas: list[int], device, num_units: int, scope_ids: list[int],
                scratch_size: int):
    """`(cycles, ns, intervals, flags)` on the host: (launches, scopes) arrays and the OR of every
    CTA's `*_FLAG` bits, for one kernel's launches whose scratch (`ctas` slots each) is at
    `addresses` on torch's `device`. One copy each way."""
    import torch

    rows, launches, num_scopes = sum(ctas), len(ctas), len(scope_ids)
    table = np.concatenate([np.cumsum([0, *ctas]), addresses, scope_ids]).astype(np.int64)
    small = torch.from_numpy(table).to(device)
    bounds, bases, ids = small[:launches + 1], small[launches + 1:2 * launches + 1], small[2 * launches + 1:]
    per_cta = torch.empty((2 * num_scopes + 2, rows), dtype=torch.int64, device=device)
    durations, ends = per_cta[:num_scopes].view(rows, num_scopes), per_cta[num_scopes:2 * num_scopes].view(rows, num_scopes)
    span_cycles, span_ns = per_cta[-2], per_cta[-1]
    flags = torch.empty((rows,), dtype=torch.int32, device=device)
    _cta_sums[(launches, triton.cdiv(max(ctas), BLOCK))](
        bases, bounds, scratch_size // 4, num_units, ids, num_scopes,
        durations, ends, span_cycles, span_ns, flags,
        HEADER=HEADER_WORDS, PREAMBLE_AT=PREAMBLE_WORD, MAGIC=PREAMBLE, BUF_AT=BUF_SIZE_WORD,
        INIT_AT=INIT_TIME_WORD, PRE_FINAL_AT=PRE_FINAL_TIME_WORD, END_SHIFT=END_BIT, ID_SHIFT=SCOPE_SHIFT,
        ID_MASK=SCOPE_MASK, HIGH_MASK=CLOCK_HIGH_MASK, WRAP=1 << CLOCK_BITS, NONE=NO_START,
        BAD_SLOT=BAD_SLOT_FLAG, WRAPPED=WRAPPED_FLAG, TORN=TORN_FLAG, UNKNOWN=UNKNOWN_SCOPE_FLAG,
        UNPAIRED=UNPAIRED_FLAG, BLOCK=BLOCK, num_warps=4)
    out = torch.empty((3 * num_scopes + 1, launches), dtype=torch.int64, device=device)
    _launch_sums[(launches,)](bounds, durations, ends, span_cycles, span_ns, flags, num_scopes,
                              out[:num_scopes], out[num_scopes:2 * num_scopes].view(torch.float64),
                              out[2 * num_scopes:3 * num_scopes], out[-1], BLOCK=BLOCK, num_warps=4)
    host = out.cpu().numpy()
    cycles = host[:num_scopes].reshape(launches, num_scopes)
    ns = host[num_scopes:2 * num_scopes].reshape(-1).view(np.float64).reshape(launches, num_scopes)
    intervals = host[2 * num_scopes:3 * num_scopes].reshape(launches, num_scopes)
    return cycles, ns, intervals, int(np.bitwise_or.reduce(host[-1]))
