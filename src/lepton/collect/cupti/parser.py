"""The bulk parser of CUPTI activity buffers: pure numpy, no ctypes, so it runs (and is tested) on
machines with no GPU.

A CUPTI buffer is a chain of records, each starting with its 4-byte `kind` and as long as its kind's
struct; records are 8-byte aligned and follow one another with no gap. Walking it one record at a
time in Python costs ≈1 µs per record, and a launch leaves three records (API, external
correlation, kernel), so a million kernels would take seconds. Instead `walk` finds the chain for
the whole buffer at once:

1. read the 32-bit word at every 8-byte slot and look it up in the per-kind size table: every slot
   whose word is a known kind is a *candidate* record start, pointing at `slot + size`;
2. the true chain is the set of candidates reachable from slot 0. Start from all candidates and
   repeatedly keep only those that slot 0 or a surviving candidate points to. A false candidate (a
   field that happens to hold 4, 10 or 39) needs an unbroken run of false predecessors to survive,
   and such runs are 1-3 long in real buffers, so this converges in a few rounds;
3. check the survivors form one unbroken chain from slot 0 and cut false runs that remain.

Everything after step 1 touches only candidates (≈2-4 per launch), not every slot.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from . import layout

_FIXPOINT_ROUNDS = 8  # real buffers converge in 2-4 rounds; the check after it fixes the rest


def walk(buf: np.ndarray, valid_bytes: int, table: np.ndarray, start: int = 0) -> tuple[np.ndarray, int]:
    """The record chain of `buf[start:valid_bytes]` (byte offsets, multiples of 8).

    Returns `(offsets, stop)`: the byte offset of every record, in order, and where the walk
    stopped: `valid_bytes` when every record was of a known kind, else the offset of the first
    record whose kind `table` does not know (or that runs past `valid_bytes`).
    """
    n = (valid_bytes - start) // 8
    if n <= 0:
        return np.zeros(0, np.int64), valid_bytes
    words = buf[start:start + 8 * n].view("<u4")[::2]
    steps = np.take(table, words, mode="clip")  # words > 255 clip to table[255] == 0
    cand = np.flatnonzero(steps)
    nxt = cand + steps[cand]
    fits = nxt <= n
    cand, nxt = cand[fits], nxt[fits]
    if not len(cand) or cand[0] != 0:
        return np.zeros(0, np.int64), start
    cand, nxt = _fixpoint(cand, nxt, n)
    chain, stop = _unbroken_prefix(cand, nxt)
    return start + 8 * chain.astype(np.int64), start + 8 * stop


def _fixpoint(cand: np.ndarray, nxt: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray]:
    """Keeps candidates that slot 0 or another kept candidate points to (see the module doc)."""
    for _ in range(_FIXPOINT_ROUNDS):
        pointed = np.zeros(n + 1, dtype=bool)
        pointed[nxt] = True
        pointed[0] = True
        keep = pointed[cand]
        if keep.all():
            break
        cand, nxt = cand[keep], nxt[keep]
    return cand, nxt


def _unbroken_prefix(cand: np.ndarray, nxt: np.ndarray) -> tuple[np.ndarray, int]:
    """The chain from slot 0 through sorted candidates `cand`, and the slot where it ends."""
    while True:
        breaks = np.flatnonzero(cand[1:] != nxt[:-1])
        if not len(breaks):
            return cand, int(nxt[-1])
        j = int(breaks[0])  # cand[:j+1] is verified; the record after cand[j] starts at nxt[j]
        target = nxt[j]
        k = int(np.searchsorted(cand, target))
        if k == len(cand) or cand[k] != target:
            return cand[:j + 1], int(target)  # an unknown kind (or a truncated record) at target
        # Drop the false candidates between cand[j] and target, then re-check from there.
        cand = np.concatenate((cand[:j + 1], cand[k:]))
        nxt = np.concatenate((nxt[:j + 1], nxt[k:]))


@dataclass
class Records:
    """The fields Lepton uses, of every kernel, API and external-correlation record of a buffer,
    as columns (CUPTI clock, not yet converted)."""

    # kernels (CONCURRENT_KERNEL / KERNEL)
    k_start: np.ndarray  # uint64 ns
    k_end: np.ndarray  # uint64 ns
    k_device: np.ndarray  # uint32
    k_stream: np.ndarray  # uint32
    k_corr: np.ndarray  # uint32
    k_name_ptr: np.ndarray  # uint64: `const char*` into CUPTI's memory; shared by launches of a kernel
    k_graph_node: np.ndarray  # uint64, 0 outside graphs
    # API records (DRIVER / RUNTIME / INTERNAL_LAUNCH_API)
    a_corr: np.ndarray  # uint32
    a_start: np.ndarray  # uint64 ns
    # external correlation records
    e_corr: np.ndarray  # uint32
    e_kind: np.ndarray  # uint32
    e_id: np.ndarray  # uint64

    @classmethod
    def empty(cls) -> Records:
        z = np.zeros(0, np.uint64)
        z32 = np.zeros(0, np.uint32)
        return cls(z, z, z32, z32, z32, z, z, z32, z, z32, z32, z)

    @classmethod
    def concat(cls, parts: list[Records]) -> Records:
        if len(parts) == 1:
            return parts[0]
        if not parts:
            return cls.empty()
        return cls(*(np.concatenate([getattr(p, f) for p in parts]) for f in cls.__dataclass_fields__))


def extract(buf: np.ndarray, offsets: np.ndarray) -> Records:
    """Reads the fields of the records at `offsets` (from `walk`) into columns."""
    end = len(buf) - len(buf) % 8
    u32 = buf[:end].view("<u4")
    u64 = buf[:end].view("<u8")
    kinds = u32[offsets // 4]
    k = offsets[(kinds == layout.KIND_CONCURRENT_KERNEL) | (kinds == layout.KIND_KERNEL)]
    a = offsets[(kinds == layout.KIND_DRIVER) | (kinds == layout.KIND_RUNTIME)
                | (kinds == layout.KIND_INTERNAL_LAUNCH_API)]
    e = offsets[kinds == layout.KIND_EXTERNAL_CORRELATION]
    K, A, E = layout.Kernel, layout.Api, layout.ExtCorr
    return Records(
        k_start=u64[(k + K.start) // 8], k_end=u64[(k + K.end) // 8],
        k_device=u32[(k + K.device_id) // 4], k_stream=u32[(k + K.stream_id) // 4],
        k_corr=u32[(k + K.correlation_id) // 4], k_name_ptr=u64[(k + K.name) // 8],
        k_graph_node=u64[(k + K.graph_node_id) // 8],
        a_corr=u32[(a + A.correlation_id) // 4], a_start=u64[(a + A.start) // 8],
        e_corr=u32[(e + E.correlation_id) // 4], e_kind=u32[(e + E.external_kind) // 4],
        e_id=u64[(e + E.external_id) // 8],
    )
