"""The bulk parser of CUPTI activity buffers: pure numpy, no ctypes, so it runs (and is tested) on
machines with no GPU.

A CUPTI buffer is a chain of records, each starting with its 4-byte `kind` and as long as its kind's
struct; records are 8-byte aligned and follow one another with no gap. Walking it one record at a
time in Python would take seconds for a million kernels (docs/design.md, "CUPTI buffers"). Instead
`walk` finds the chain for the whole buffer at once:

1. read the 32-bit word at every 8-byte slot and look it up in the per-kind size table: every slot
   whose word is a known kind is a *candidate* record start, pointing at `slot + size`;
2. the true chain is the set of candidates reachable from slot 0. Start from all candidates and
   repeatedly keep only those that slot 0 or a surviving candidate points to. A false candidate (a
   field that happens to hold 4, 10 or 39) needs an unbroken run of false predecessors to survive,
   and such runs are 1-3 long in real buffers, so this converges in a few rounds;
3. check the survivors form one unbroken chain from slot 0 and cut the few false runs left.

Everything after step 1 touches only candidates (≈2-4 per launch), not every slot.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from . import layout

_MAX_ROUNDS = 8
_FEW_BREAKS = 16  # below this many breaks, `_unbroken_prefix` cuts the false runs one by one


def walk(buf: np.ndarray, valid_bytes: int, table: np.ndarray, start: int = 0) -> tuple[np.ndarray, int]:
    """The record chain of `buf[start:valid_bytes]` (byte offsets, multiples of 8).

    Returns `(offsets, stop)`: the byte offset of every record, in order, and where the walk
    stopped: `valid_bytes` when every record was of a known kind, else the offset of the first
    record whose kind `table` does not know (or that runs past `valid_bytes`).
    """
    chain, _, stop = _chain(buf, valid_bytes, table, start)
    return start + 8 * chain, start + 8 * stop


def parse(buf: np.ndarray, valid_bytes: int, table: np.ndarray, start: int = 0) -> tuple[Records, int]:
    """`walk`, then the fields of its records as columns: `(records, stop)`."""
    chain, words, stop = _chain(buf, valid_bytes, table, start)
    return _fields(buf, start, chain, words), start + 8 * stop


def _chain(buf: np.ndarray, valid_bytes: int, table: np.ndarray, start: int):
    """`(slots, words, stop_slot)`: the chain as slot numbers relative to `start`, and the low
    32-bit word of every slot (a record's kind at its first slot)."""
    n = (valid_bytes - start) // 8
    if n <= 0:
        return np.zeros(0, np.int64), np.zeros(0, np.uint32), 0
    # Copy the strided words first: np.take is slower on a strided view, and so is flatnonzero on
    # uint8 rather than bool (docs/design.md, "CUPTI buffers").
    words = buf[start:start + 8 * n].view("<u4")[::2].copy()
    steps = np.take(table, words, mode="clip")  # words > 255 clip to table[255] == 0
    cand = np.flatnonzero(steps != 0)
    nxt = cand + steps[cand]
    fits = nxt <= n
    cand, nxt = cand[fits], nxt[fits]
    if not len(cand) or cand[0] != 0:
        return np.zeros(0, np.int64), words, 0
    for _ in range(_MAX_ROUNDS):
        if np.count_nonzero(cand[1:] != nxt[:-1]) <= _FEW_BREAKS:
            break
        cand, nxt = _drop_unpointed(cand, nxt, n)
    chain, stop = _unbroken_prefix(cand, nxt)
    return chain, words, stop


def _drop_unpointed(cand: np.ndarray, nxt: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray]:
    """One round of step 2: keeps candidates that slot 0 or another candidate points to."""
    pointed = np.zeros(n + 1, dtype=bool)
    pointed[nxt] = True
    pointed[0] = True
    keep = pointed[cand]
    return cand[keep], nxt[keep]


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
    """The fields Lepton uses, of every kernel and API record of a buffer, as columns (CUPTI
    clock, not yet converted)."""

    # kernels (CONCURRENT_KERNEL / KERNEL)
    k_start: np.ndarray  # uint64 ns
    k_end: np.ndarray  # uint64 ns
    k_device: np.ndarray  # uint32
    k_stream: np.ndarray  # uint32
    k_corr: np.ndarray  # uint32
    k_name_ptr: np.ndarray  # uint64: `const char*` into CUPTI's memory; shared by launches of a kernel
    k_graph_node: np.ndarray  # uint64, 0 outside graphs
    k_queued: np.ndarray  # uint64: launch time from the kernel record itself (0: not collected)
    k_graph_id: np.ndarray  # uint32, 0 outside graphs
    # API records (DRIVER / RUNTIME / INTERNAL_LAUNCH_API)
    a_corr: np.ndarray  # uint32
    a_start: np.ndarray  # uint64 ns
    a_thread: np.ndarray  # uint32: pthread_self() of the launching thread, cut to 32 bits

    @classmethod
    def empty(cls) -> Records:
        z = np.zeros(0, np.uint64)
        z32 = np.zeros(0, np.uint32)
        return cls(z, z, z32, z32, z32, z, z, z, z32, z32, z, z32)

    @classmethod
    def concat(cls, parts: list[Records]) -> Records:
        if len(parts) == 1:
            return parts[0]
        if not parts:
            return cls.empty()
        return cls(*(np.concatenate([getattr(p, f) for p in parts]) for f in cls.__dataclass_fields__))


def extract(buf: np.ndarray, offsets: np.ndarray) -> Records:
    """Reads the fields of the records at `offsets` (byte offsets, as from `walk`) into columns."""
    words = buf[:len(buf) - len(buf) % 8].view("<u4")[::2]
    return _fields(buf, 0, offsets >> 3, words)


def _fields(buf: np.ndarray, start: int, chain: np.ndarray, words: np.ndarray) -> Records:
    """The columns of the records at slots `chain` (relative to byte `start`). 4-byte fields that
    open an 8-byte slot are read from `words`, the compact copy `_chain` made, which is half the
    size of the buffer and still in cache."""
    end = len(buf) - len(buf) % 8
    u32 = buf[:end].view("<u4")
    u64 = buf[:end].view("<u8")
    b4, b8 = start >> 2, start >> 3
    kinds = words[chain]
    is_kernel = (kinds == layout.KIND_CONCURRENT_KERNEL) | (kinds == layout.KIND_KERNEL)
    is_api = (kinds == layout.KIND_RUNTIME) | (kinds == layout.KIND_DRIVER)
    is_api |= kinds == layout.KIND_INTERNAL_LAUNCH_API
    k, a = chain[is_kernel], chain[is_api]
    K, A = layout.Kernel, layout.Api
    return Records(
        k_start=u64[b8 + k + K.start // 8], k_end=u64[b8 + k + K.end // 8],
        k_device=words[k + K.device_id // 8], k_stream=words[k + K.stream_id // 8],
        k_corr=u32[b4 + 2 * k + K.correlation_id // 4], k_name_ptr=u64[b8 + k + K.name // 8],
        k_graph_node=u64[b8 + k + K.graph_node_id // 8], k_queued=u64[b8 + k + K.queued // 8],
        k_graph_id=u32[b4 + 2 * k + K.graph_id // 4],
        a_corr=words[a + A.correlation_id // 8], a_start=u64[b8 + a + A.start // 8],
        a_thread=u32[b4 + 2 * a + A.thread_id // 4],
    )
