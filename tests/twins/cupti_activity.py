"""Synthetic CUPTI activity buffers, laid out byte for byte as `cupti_activity.h` (13.0) says.

The test twin of libcupti's buffers (as kineto's `MockCuptiActivityBuffer`): unit tests and
`bench/parse.py` feed them to the real parser and collector. Besides the fields Lepton reads, kernel
records carry realistic values in the other fields (grid and block sizes, register counts, grid ids,
`partitionedGlobalCache*` enums), because those are what can look like a record kind to the parser.
"""
from __future__ import annotations

import itertools

import numpy as np

from lepton.backends.cupti import layout

K, A = layout.Kernel, layout.Api
THREAD_ID = 4243  # the launching thread of synthetic API records

# Offsets of Kernel10 fields the parser never reads but that occupy 8-byte slot starts.
_REGISTERS = 6  # uint16
_PARTITIONED_GLOBAL_CACHE = 8  # 2 x uint32 enum (0..3)
_COMPLETED = 32  # uint64
_GRID_Y = 56
_BLOCK_Z = 72
_LOCAL_MEMORY_TOTAL = 88
_CLUSTER_Y = 176


def pack(kinds, kernel: dict | None = None, api: dict | None = None,
         sizes: dict[int, int] | None = None) -> np.ndarray:
    """One buffer holding records of `kinds` in that order.

    The i-th kernel record (kind 3 or 10) takes the i-th value of every array in `kernel` (keys:
    `start, end, device_id, stream_id, correlation_id, name, graph_node_id, graph_id, queued, grid_x,
    block_x, grid_id`); likewise `api` (`start, end, correlation_id, cbid, thread_id`) for kinds 4/5/48. Any
    other kind gets a record of `sizes[kind]` bytes holding only its kind (what the parser must step
    over). Missing fields are 0.
    """
    kinds = np.asarray(kinds, dtype=np.int64)
    all_sizes = {**layout.RECORD_SIZE, **(sizes or {})}
    size_of = np.zeros(layout.TABLE_LEN, np.int64)
    for k, s in all_sizes.items():
        size_of[k] = s
    rec_sizes = size_of[kinds]
    if (rec_sizes == 0).any():
        raise ValueError(f"no size for kinds {sorted(set(kinds[rec_sizes == 0].tolist()))}")
    offsets = np.concatenate(([0], np.cumsum(rec_sizes)[:-1])) if len(kinds) else np.zeros(0, np.int64)
    buf = np.zeros(int(rec_sizes.sum()), np.uint8)
    u16, u32, u64 = buf.view("<u2"), buf.view("<u4"), buf.view("<u8")
    u32[offsets // 4] = kinds

    def put(view, off, field, values, width):
        if values is not None:
            view[(off + field) // width] = np.asarray(values)

    ko = offsets[np.isin(kinds, layout.KERNEL_KINDS)]
    if len(ko):
        kernel = kernel or {}
        n = len(ko)
        put(u64, ko, K.start, kernel.get("start"), 8)
        put(u64, ko, K.end, kernel.get("end"), 8)
        put(u64, ko, _COMPLETED, kernel.get("end"), 8)
        put(u32, ko, K.device_id, kernel.get("device_id"), 4)
        put(u32, ko, K.context_id, kernel.get("context_id", np.ones(n, np.uint32)), 4)
        put(u32, ko, K.stream_id, kernel.get("stream_id", np.full(n, 7)), 4)
        put(u32, ko, K.correlation_id, kernel.get("correlation_id"), 4)
        put(u64, ko, K.name, kernel.get("name"), 8)
        put(u64, ko, K.graph_node_id, kernel.get("graph_node_id"), 8)
        put(u32, ko, K.graph_id, kernel.get("graph_id"), 4)
        put(u64, ko, K.queued, kernel.get("queued"), 8)
        put(u32, ko, K.grid_x, kernel.get("grid_x", np.full(n, 4)), 4)
        put(u32, ko, _GRID_Y, np.ones(n, np.uint32), 4)
        put(u32, ko, K.block_x, kernel.get("block_x", np.full(n, 128)), 4)
        put(u32, ko, _BLOCK_Z, np.ones(n, np.uint32), 4)
        put(u64, ko, K.grid_id, kernel.get("grid_id", np.arange(1, n + 1)), 8)
        put(u16, ko, _REGISTERS, np.full(n, 26), 2)
        put(u32, ko, _PARTITIONED_GLOBAL_CACHE, np.full(n, 1), 4)  # NOT_SUPPORTED = 1
        put(u32, ko, _PARTITIONED_GLOBAL_CACHE + 4, np.full(n, 1), 4)
        put(u32, ko, _LOCAL_MEMORY_TOTAL, np.full(n, 5), 4)
        put(u32, ko, _CLUSTER_Y, np.ones(n, np.uint32), 4)
    ao = offsets[np.isin(kinds, layout.API_KINDS)]
    if len(ao):
        api = api or {}
        put(u32, ao, A.cbid, api.get("cbid", np.full(len(ao), 211)), 4)
        put(u64, ao, A.start, api.get("start"), 8)
        put(u64, ao, A.end, api.get("end"), 8)
        put(u32, ao, A.process_id, api.get("process_id", np.full(len(ao), 4242)), 4)
        put(u32, ao, A.thread_id, api.get("thread_id", np.full(len(ao), THREAD_ID)), 4)
        put(u32, ao, A.correlation_id, api.get("correlation_id"), 4)
    return buf


def record_size_of(buf: np.ndarray, offset: int, sizes: dict[int, int] | None = None) -> int:
    """What `cuptiActivityGetNextRecord` would step by at `offset` (the fake for CPU tests)."""
    kind = int(buf[offset:offset + 4].view("<u4")[0])
    return {**layout.RECORD_SIZE, **(sizes or {})}.get(kind, 0)


def launch_stream(n: int, *, lag: int = 64, paths=None, names=None, t0: int = 1_000_000_000,
                  period_ns: int = 5_000, duration_ns: int = 2_000, first_corr: int = 1,
                  device_id=0, stream_id=7, api_kind: int = layout.KIND_RUNTIME, thread_id: int = THREAD_ID):
    """`n` launches from thread `thread_id` as CUPTI writes them: per launch an API record at
    launch time, and its kernel record `lag` launches later (kernels complete after later launches
    were issued). Returns `(kinds, kernel, api)` for `pack`, the per-launch truth `(corr, paths,
    name_ptr)`, and the thread's time line `{thread_id: (times, paths)}` (what
    `timeline.ThreadTimelines.marks_by_thread` gives) putting launch i in `paths[i]`."""
    corr = np.arange(first_corr, first_corr + n, dtype=np.int64)
    paths = np.zeros(n, np.int64) if paths is None else np.asarray(paths, np.int64)
    names = np.full(n, 0x7F00_0000_1000, np.uint64) if names is None else np.asarray(names, np.uint64)
    launch = t0 + corr * period_ns
    # Event times: launch i at 2i, kernel at 2(i+lag)+1.
    ev_time = np.concatenate((2 * corr, 2 * (corr + lag) + 1))
    ev_kind = np.concatenate((np.full(n, api_kind), np.full(n, layout.KIND_CONCURRENT_KERNEL)))
    order = np.argsort(ev_time, kind="stable")
    kinds = ev_kind[order]
    kernel = {"start": launch + 10_000, "end": launch + 10_000 + duration_ns,
              "device_id": np.broadcast_to(np.asarray(device_id), (n,)),
              "stream_id": np.broadcast_to(np.asarray(stream_id), (n,)),
              "correlation_id": corr, "name": names, "grid_id": corr}
    api = {"start": launch, "end": launch + 3_000, "correlation_id": corr,
           "thread_id": np.full(n, thread_id, np.uint32)}
    marks = {thread_id: (launch - period_ns // 2, paths)}  # each launch's path set just before it
    return kinds, kernel, api, (corr, paths, names), marks


def split(kinds, kernel: dict, api: dict, max_bytes: int) -> list[np.ndarray]:
    """`pack`s a record stream into buffers of at most `max_bytes`, cut at record boundaries as
    CUPTI fills its buffers."""
    kinds = np.asarray(kinds)
    sizes = np.zeros(layout.TABLE_LEN, np.int64)
    for k, s in layout.RECORD_SIZE.items():
        sizes[k] = s
    ends = np.cumsum(sizes[kinds])
    cuts = [0]
    while cuts[-1] < len(kinds):
        base = ends[cuts[-1] - 1] if cuts[-1] else 0
        cuts.append(max(int(np.searchsorted(ends, base + max_bytes, side="right")), cuts[-1] + 1))
    is_k = np.isin(kinds, layout.KERNEL_KINDS)
    is_a = np.isin(kinds, layout.API_KINDS)
    ck, ca = np.cumsum(is_k), np.cumsum(is_a)

    def part(d: dict, cum, lo, hi):
        a = cum[lo - 1] if lo else 0
        b = cum[hi - 1] if hi else 0
        return {f: np.asarray(v)[a:b] for f, v in d.items()}

    out = []
    for lo, hi in itertools.pairwise(cuts):
        out.append(pack(kinds[lo:hi], part(kernel, ck, lo, hi), part(api, ca, lo, hi)))
    return out
