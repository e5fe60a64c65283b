"""`backend="instrumentation"`: scopes inside kernels, recorded by Triton's own compiler passes.

The compiler side (the proton dialect's record ops and the passes that lower them) is in libtriton;
`hooks.instrumentation` installs it and gives every launch of an instrumented kernel a scratch
buffer of its own. This backend only queues those launches, each with its buffer, kernel and call
path, and decodes them in batches: at flush, or once the queued buffers pass a bound
(`queue_bound`). Nothing synchronises the GPU per launch (Proton synchronises the stream and copies
the buffer on every launch: docs/design.md, "The instrumentation backend"). Only the part of each
CTA's slot that its warps wrote crosses to the host (`host_copy`).
"""
from __future__ import annotations

import threading
import time
from dataclasses import dataclass

import numpy as np

from ...errors import UsageError
from ...model.records import CycleLaunch
from ..backend import Backend, register_backend
from .decode import decode_launch

HEADER_BYTES = 40  # a CTA slot's header, before its per-unit counts


def queue_bound(device_bytes: int) -> int:
    """Queued scratch memory after which the launch hook decodes the queue (and so waits for the
    GPU): an eighth of the device's memory, at most 16 GiB; enough for hundreds of launches of a
    4096-block kernel, little enough to leave the program its memory."""
    return min(device_bytes // 8, 16 << 30)


def _to_host(array) -> np.ndarray:
    """A device tensor's (or a host array's) contents as a numpy array."""
    if hasattr(array, "cpu"):
        return array.contiguous().cpu().numpy()
    return np.ascontiguousarray(array)


def host_copy(buffer, scratch_size: int, num_units: int) -> tuple[np.ndarray, int]:
    """`(bytes, slot size)` of a launch's scratch on the host, each CTA's slot cut to the words its
    units wrote: a 4096-block kernel's slots hold 8 KiB each of which a few scopes use a few dozen
    bytes. Falls back to the whole buffer where a unit's circular buffer wrapped or the headers
    disagree. `buffer`: a torch CUDA tensor (or a numpy array, for tests)."""
    ctas = buffer.shape[0] // scratch_size
    slots = buffer[:ctas * scratch_size].reshape(ctas, scratch_size)
    head = HEADER_BYTES + 4 * num_units
    header = _to_host(slots[:, :head])
    buf_size = header[:, 12:16].copy().view(np.uint32)[:, 0]
    counts = header[:, HEADER_BYTES:head].copy().view(np.uint32)
    segment = int(buf_size[0]) // num_units if ctas else 0
    need = (4 * int(counts.max(initial=0)) + 7) // 8 * 8
    if not ctas or (buf_size != buf_size[0]).any() or need > segment or head + num_units * segment > scratch_size:
        return _to_host(slots).reshape(-1), scratch_size
    data = _to_host(slots[:, head:head + num_units * segment].reshape(ctas, num_units, segment)[:, :, :need])
    compact = np.empty((ctas, head + num_units * need), np.uint8)
    compact[:, :head] = header
    compact[:, head:] = data.reshape(ctas, num_units * need)
    compact[:, 12:16].view(np.uint32)[:, 0] = num_units * need  # the slot's buffer size, as cut
    return compact.reshape(-1), head + num_units * need


@dataclass(frozen=True)
class InstrumentedKernel:
    """What decoding a launch of one compiled kernel needs, read from its compile metadata."""

    name: str
    scratch_size: int  # bytes of scratch per CTA (`profile_scratch_size`)
    num_units: int  # recording units per CTA (warps, at the default granularity)
    scope_names: dict[int, str]
    scope_parents: dict[int, int]  # child scope id -> parent scope id


@dataclass
class _Launch:
    buffer: object  # a torch uint8 CUDA tensor: the launch's scratch, grid x scratch_size bytes
    kernel: InstrumentedKernel
    kernel_pid: int
    call_path: tuple[str, ...]
    launch_ns: int


class InstrumentationBackend(Backend):
    name = "instrumentation"
    modes = ("", "default", "mma")

    def __init__(self, mode: str = "") -> None:
        super().__init__(mode)
        self._queue: list[_Launch] = []
        self._queued_bytes = 0
        self._bound = 1 << 30  # set from the device's memory at start
        self._queue_lock = threading.Lock()
        self.warnings: list[str] = []

    def _do_start(self) -> None:
        try:
            import torch

            self._bound = queue_bound(torch.cuda.get_device_properties(torch.cuda.current_device()).total_memory)
        except (ImportError, RuntimeError, AssertionError) as e:  # no torch, or torch without a GPU
            raise UsageError(f"backend='instrumentation' needs Triton with its proton passes and torch on a "
                             f"CUDA GPU: {e}") from None

    def queue(self, buffer, kernel: InstrumentedKernel, kernel_pid: int, call_path: tuple[str, ...]) -> None:
        """One launch of an instrumented kernel (called by the launch hook, on the launching
        thread). Decodes the queue first when it holds more than `queue_bound`."""
        launch = _Launch(buffer, kernel, kernel_pid, call_path, time.time_ns())
        with self._queue_lock:
            self._queue.append(launch)
            self._queued_bytes += buffer.numel()
            full = self._queued_bytes > self._bound
        if full:
            self._decode_queue()

    def _do_flush(self) -> None:
        self._decode_queue()

    def _do_stop(self) -> None:
        with self._queue_lock:
            self._queue, self._queued_bytes = [], 0

    def _decode_queue(self) -> None:
        """Waits for the GPU once, then copies each queued launch's written words to the host,
        decodes it and hands it to the sessions."""
        with self._queue_lock:
            launches, self._queue, self._queued_bytes = self._queue, [], 0
        if not launches:
            return
        import torch

        torch.cuda.synchronize()
        for launch in launches:
            self._deliver(launch)

    def _deliver(self, launch: _Launch) -> None:
        kernel = launch.kernel
        raw, slot = host_copy(launch.buffer, kernel.scratch_size, kernel.num_units)
        launch.buffer = None  # back to torch's caching allocator
        events = decode_launch(raw, slot, kernel.num_units)
        for message in events.warnings:
            self.warn(f"{kernel.name}: {message}")
        cycles = CycleLaunch(kernel_pid=launch.kernel_pid, kernel_name=kernel.name,
                             scope_names=kernel.scope_names, scope_parents=kernel.scope_parents,
                             events=events, call_path=launch.call_path)
        if self.sink is not None:
            self.sink.ingest_cycles(cycles, launch.launch_ns)

    def warn(self, message: str) -> None:
        """Once per message, on stderr (decoding runs at flush, away from the user's call)."""
        if message not in self.warnings:
            self.warnings.append(message)
            import sys

            print(f"lepton: warning: {message}", file=sys.stderr)


register_backend("instrumentation", InstrumentationBackend)
