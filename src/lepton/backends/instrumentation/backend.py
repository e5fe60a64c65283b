"""`backend="instrumentation"`: scopes inside kernels, recorded by Triton's own compiler passes.

The compiler side (the proton dialect's record ops and the passes that lower them) is in libtriton;
`hook` installs it. Every launch of an instrumented kernel gets a scratch buffer of
its own, cut from this backend's arena (`arena`); the backend queues those launches, each with its
buffer, kernel and call path, and decodes them in batches, one per kernel: at flush, or once
`QUEUE_LAUNCHES` launches are queued or their buffers pass a bound (`queue_bound`). Nothing
synchronises the GPU per launch (Proton synchronises the stream and copies the buffer on every
launch: docs/design.md, "The instrumentation backend"). Only the part of each
CTA's slot that its warps wrote crosses to the host (`host_copy`).
"""
from __future__ import annotations

import contextlib
import functools
import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import NamedTuple

import numpy as np

from ...errors import UsageError
from ...model.cycles import SummedLaunches
from ...model.records import CycleLaunch
from ..base import Backend
from .arena import ScratchArena
from .decode import decode_launch, split_launches
from .layout import BUF_SIZE_BYTE, HEADER_BYTES
from .sums import ArrayOps, BatchSums, HostReason, TorchOps, batch_sums, warm_up

# Working memory of one piece of a batch's sums (`ops.row_bytes` a CTA): on the GPU the sums'
# kernels read the slots in place and write ~40 bytes a CTA, so a piece is ~1,600 launches of a
# 4096-block kernel and a full queue of them two pieces (a piece has a fixed cost of ~1.5 ms on
# the host: docs/design.md); the numpy sums (the tests') widen what they read to int64.
SUMS_BYTES = 256 << 20
# Launches queued after which the launch hook decodes the queue, whatever their buffers' size:
# with only the byte bound, kernels sized to their records (0.5-1.5 MB a launch of 4096 blocks)
# queued thousands of launches and the arena grew to gigabytes before the first decode; a decode in
# the loop has a fixed cost, so the queue holds 2,048 (docs/design.md, "Two scopes cost 30x one").
QUEUE_LAUNCHES = 2048


def queue_bound(device_bytes: int) -> int:
    """Scratch handed out to queued launches after which the launch hook decodes the queue (and so
    waits for the GPU): a sixteenth of the device's memory, at most 2 GiB. It binds kernels that
    keep Proton's 8 KiB a CTA (34 MB a launch of 4096 blocks: ~60 launches); kernels sized by
    `sizing.auto_buffer_size` (0.5-1.5 MB a launch) reach `QUEUE_LAUNCHES` first."""
    return min(device_bytes // 16, 2 << 30)


def host_copy(ops: ArrayOps, buffers: list, scratch_size: int,
              num_units: int) -> tuple[np.ndarray, int, list[int]]:
    """`(bytes, slot size, CTAs of each buffer)`: the launches' scratch `buffers` (of one kernel) on
    the host, one slot per CTA, each cut to the words the busiest unit of the batch wrote: a
    4096-block kernel's slots hold up to 8 KiB each of which a few scopes use a few dozen bytes.
    Two device-to-host copies for the whole batch (headers, then data). Falls back to whole slots
    where a unit's circular buffer wrapped or the headers disagree. `buffers`: torch CUDA tensors
    with `TorchOps` (or numpy arrays with `ArrayOps`, for tests)."""
    ctas = [b.shape[0] // scratch_size for b in buffers]
    slots = [b[:n * scratch_size].reshape(n, scratch_size) for b, n in zip(buffers, ctas)]
    total = sum(ctas)
    head = HEADER_BYTES + 4 * num_units
    if not total:
        return np.zeros(0, np.uint8), scratch_size, ctas
    header = ops.host(ops.concat([s[:, :head] for s in slots]))
    buf_size = header[:, BUF_SIZE_BYTE:BUF_SIZE_BYTE + 4].copy().view(np.uint32)[:, 0]
    counts = header[:, HEADER_BYTES:head].copy().view(np.uint32)
    segment = int(buf_size[0]) // num_units
    need = (4 * int(counts.max(initial=0)) + 7) // 8 * 8
    if (buf_size != buf_size[0]).any() or need > segment or head + num_units * segment > scratch_size:
        return ops.host(ops.concat(slots)).reshape(-1), scratch_size, ctas
    data = ops.host(ops.concat([s[:, head:head + num_units * segment].reshape(n, num_units, segment)[:, :, :need]
                                for s, n in zip(slots, ctas)]))
    compact = np.empty((total, head + num_units * need), np.uint8)
    compact[:, :head] = header
    compact[:, head:] = data.reshape(total, num_units * need)
    compact[:, BUF_SIZE_BYTE:BUF_SIZE_BYTE + 4].view(np.uint32)[:, 0] = num_units * need  # as cut
    return compact.reshape(-1), head + num_units * need, ctas


@dataclass(frozen=True, eq=False)
class InstrumentedKernel:  # hashed by identity: the backend batches launches by kernel
    """What decoding a launch of one compiled kernel needs, read from its compile metadata."""

    name: str
    scratch_size: int  # bytes of scratch per CTA (`profile_scratch_size`)
    num_units: int  # recording units per CTA (warps, at the default granularity)
    scope_names: dict[int, str]
    scope_parents: dict[int, int]  # child scope id -> parent scope id
    target_backend: str = "cuda"  # Triton's target backend (the host buffer's device_type)
    buffer: str = ""  # how its profile buffer was sized (`sizing.buffer_choice`)


@dataclass
class KernelPaths:
    """How one kernel's launches were decoded: summed on the device, or on the host and why."""

    buffer: str = ""
    device_sums: int = 0
    host_decoded: Counter = field(default_factory=Counter)  # HostReason value -> launches

    def as_dict(self) -> dict:
        return {"buffer": self.buffer, "device_sums": self.device_sums, "host_decoded": dict(self.host_decoded)}


class _Launch(NamedTuple):  # a named tuple: one is made per launch, on the launching thread
    address: int  # its scratch (grid x scratch_size bytes) in its device's arena
    nbytes: int
    device: int
    kernel: InstrumentedKernel
    kernel_pid: int
    call_path: tuple[str, ...]
    launch_ns: int


def _views(arena: ScratchArena, batch: list[_Launch]) -> list:
    """Each launch's scratch as a view the host reads (torch's cost ~3 us each: only where read)."""
    return [arena.view(launch.address, launch.nbytes) for launch in batch]


def summed_launches(kernel: InstrumentedKernel, batch: list[_Launch], sums: BatchSums) -> SummedLaunches:
    """A batch's device sums with what places each of its launches in a profile, as columns: the
    sessions merge launches of one path and grid over arrays instead of an object a launch."""
    return SummedLaunches(kernel.name, kernel.scope_names, kernel.scope_parents, sums.scope_ids, sums.cycles,
                          sums.ns, sums.intervals, sums.num_units * np.asarray(sums.ctas, np.int64),
                          np.array([launch.kernel_pid for launch in batch], np.int64),
                          np.array([launch.device for launch in batch], np.int64),
                          np.array([launch.launch_ns for launch in batch], np.int64),
                          [launch.call_path for launch in batch])


class InstrumentationBackend(Backend):
    name = "instrumentation"
    modes = ("", "default", "mma")

    def __init__(self, mode: str = "") -> None:
        super().__init__(mode)
        self._queue: list[_Launch] = []
        self._arenas: dict[int, ScratchArena] = {}  # device index -> its scratch arena
        self._bound = 1 << 30  # set from the device's memory at start
        self._only_device: int | None = None  # the device, where the process sees one (set at start)
        self._queue_lock = threading.Lock()
        self._paths: dict[str, KernelPaths] = {}  # kernel name -> how its launches were decoded
        self._paths_lock = threading.Lock()  # a decode may run on a launching thread and at flush
        self.warnings: list[str] = []
        self._sums_failed = False  # the device sums raised once: every later batch is decoded on the host

    def _do_start(self) -> None:
        try:
            import torch

            device = torch.cuda.current_device()
            self._bound = queue_bound(torch.cuda.get_device_properties(device).total_memory)
            self._only_device = device if torch.cuda.device_count() == 1 else None
        except (ImportError, RuntimeError, AssertionError) as e:  # no torch, or torch without a GPU
            raise UsageError(f"backend='instrumentation' needs Triton with its proton passes and torch on a "
                             f"CUDA GPU: {e}") from None
        # The first sums compile (or load from Triton's cache) the sums' kernels, which takes a while
        # (docs/design.md): here, not in the user's loop or at finalize.
        with self.sink.internal() if self.sink is not None else contextlib.nullcontext():
            self._summing(lambda: warm_up(TorchOps(device), lambda array: torch.from_numpy(array).to(f"cuda:{device}")))

    def scratch(self, nbytes: int) -> tuple[int, int, int]:
        """`(device, address, nbytes)` of a scratch buffer for the next launch on the current
        device (Triton's profile allocator calls this on the launching thread); it stays the
        launch's until the queue is decoded."""
        if self._only_device is not None:  # torch's current_device costs ~0.6 us a launch
            return self._take(self._only_device, nbytes)
        import torch

        return self._take(torch.cuda.current_device(), nbytes)

    def _take(self, device: int, nbytes: int) -> tuple[int, int, int]:
        arena = self._arenas.get(device)
        if arena is None:
            arena = self._arenas.setdefault(device, ScratchArena(functools.partial(self._new_chunk, device)))
        if len(self._queue) >= QUEUE_LAUNCHES or arena.handed_out + nbytes > self._bound:
            self._decode_queue()
        return device, arena.take(nbytes), nbytes

    @staticmethod
    def _new_chunk(device: int, nbytes: int):
        import torch

        return torch.empty((nbytes,), dtype=torch.uint8, device=f"cuda:{device}")

    def view(self, device: int, address: int, nbytes: int):
        """The scratch buffer `scratch` gave, as an array the host can read (a torch view)."""
        return self._arenas[device].view(address, nbytes)

    def queue(self, scratch: tuple[int, int, int], kernel: InstrumentedKernel, kernel_pid: int,
              call_path: tuple[str, ...]) -> None:
        """One launch of an instrumented kernel (called by the launch hook, on the launching
        thread), with the buffer `scratch` gave it."""
        device, address, nbytes = scratch
        launch = _Launch(address, nbytes, device, kernel, kernel_pid, call_path, time.time_ns())
        with self._queue_lock:
            self._queue.append(launch)

    def _do_flush(self) -> None:
        self._decode_queue()

    def path_counts(self) -> dict[str, dict]:
        """Per kernel name, the launches decoded so far: `device_sums` (summed where the buffers
        are), `host_decoded` (reason -> launches, `sums.HostReason`), and how its `buffer` was
        sized. A whole batch goes to the host when one of its launches must, so every launch of
        that batch counts under that reason."""
        with self._paths_lock:
            return {name: paths.as_dict() for name, paths in self._paths.items()}

    def profile_extras(self) -> dict:
        counts = self.path_counts()
        return {"instrumentation_paths": counts} if counts else {}

    def _do_stop(self) -> None:
        with self._queue_lock:
            self._queue = []
            arenas, self._arenas = self._arenas, {}
        for arena in arenas.values():
            arena.release()

    def _decode_queue(self) -> None:
        """Waits for each device with queued launches once, copies the written words of each
        kernel's launches to the host in one batch, decodes them together and hands each launch to
        the sessions; then the arenas are free for the next launches."""
        with self._queue_lock:
            launches, self._queue = self._queue, []
        if launches:
            devices = [d for d in {launch.device for launch in launches} if self._arenas[d].on_torch]
            if devices:  # (numpy arenas: the tests', written already)
                import torch

                for device in devices:
                    torch.cuda.synchronize(device)
            by_kernel: dict[tuple[InstrumentedKernel, int], list[_Launch]] = {}
            for launch in launches:
                by_kernel.setdefault((launch.kernel, launch.device), []).append(launch)
            # The sums and copies are torch ops on the GPU: a CUPTI session must not record them.
            with self.sink.internal() if self.sink is not None else contextlib.nullcontext():
                for (kernel, device), batch in by_kernel.items():
                    self._deliver(kernel, device, batch)
        for arena in self._arenas.values():
            arena.recycle()

    def _deliver(self, kernel: InstrumentedKernel, device: int, batch: list[_Launch]) -> None:
        """Decodes one kernel's queued launches on `device` in pieces of at most `SUMS_BYTES` of
        working memory."""
        arena = self._arenas[device]
        ops: ArrayOps = TorchOps(device) if arena.on_torch else ArrayOps()
        row_bytes = ops.row_bytes([] if arena.on_torch else _views(arena, batch), kernel.scratch_size,
                                  kernel.num_units, len(kernel.scope_names))
        per_piece = max(1, SUMS_BYTES // row_bytes)
        piece: list[_Launch] = []
        rows = 0
        for launch in batch:
            ctas = launch.nbytes // kernel.scratch_size
            if piece and rows + ctas > per_piece:
                self._deliver_piece(ops, arena, kernel, piece)
                piece, rows = [], 0
            piece.append(launch)
            rows += ctas
        if piece:
            self._deliver_piece(ops, arena, kernel, piece)

    def _deliver_piece(self, ops: ArrayOps, arena: ScratchArena, kernel: InstrumentedKernel,
                       batch: list[_Launch]) -> None:
        ctas = [launch.nbytes // kernel.scratch_size for launch in batch]
        sums: BatchSums | HostReason = HostReason.TRACE
        if self.sink is None or not self.sink.wants_intervals():
            # the GPU's kernels read the buffers at their addresses; numpy (the tests') reads views
            readable = [launch.address for launch in batch] if arena.on_torch else _views(arena, batch)
            sums = self._summing(lambda: batch_sums(ops, readable, ctas, kernel.scratch_size, kernel.num_units,
                                                    sorted(kernel.scope_names)))
        self._count(kernel, len(batch), sums if isinstance(sums, HostReason) else None)
        if not isinstance(sums, HostReason):
            if self.sink is not None:
                self.sink.ingest_summed(summed_launches(kernel, batch, sums))
            return
        # every interval, for a trace or to say what was wrong with a buffer
        raw, slot, ctas = host_copy(ops, _views(arena, batch), kernel.scratch_size, kernel.num_units)
        decoded = decode_launch(raw, slot, kernel.num_units)
        for message in decoded.warnings:
            self.warn(f"{kernel.name}: {message}")
        launches = [CycleLaunch(kernel_pid=launch.kernel_pid, kernel_name=kernel.name, scope_names=kernel.scope_names,
                                scope_parents=kernel.scope_parents, events=events, call_path=launch.call_path,
                                device_id=launch.device)
                    for launch, events in zip(batch, split_launches(decoded, ctas))]
        if self.sink is not None:
            self.sink.ingest_cycles(launches, [launch.launch_ns for launch in batch])

    def _summing(self, sums: Callable[[], BatchSums | HostReason]) -> BatchSums | HostReason:
        """`sums()`, or `SUMS_FAILED` where it raises or raised before: the sums are Triton kernels
        and torch ops, which a Triton or driver version may refuse, and the host decoder reads the
        same buffers; the profile must not be lost to them (one line says why)."""
        if self._sums_failed:
            return HostReason.SUMS_FAILED
        try:
            return sums()
        except Exception as e:  # noqa: BLE001  (anything the sums raise; the batch is still decodable)
            self._sums_failed = True
            self.warn(f"summing scopes on the device failed ({type(e).__name__}: {e}); "
                      "launches are decoded on the host instead, which is slower")
            return HostReason.SUMS_FAILED

    def _count(self, kernel: InstrumentedKernel, launches: int, host: HostReason | None) -> None:
        with self._paths_lock:
            paths = self._paths.setdefault(kernel.name, KernelPaths(kernel.buffer))
            if host is None:
                paths.device_sums += launches
            else:
                paths.host_decoded[host.value] += launches

    def warn(self, message: str) -> None:
        """Once per message, on stderr (decoding runs at flush, away from the user's call)."""
        if message not in self.warnings:
            self.warnings.append(message)
            import sys

            print(f"lepton: warning: {message}", file=sys.stderr)

