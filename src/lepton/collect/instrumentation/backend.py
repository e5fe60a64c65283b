"""`backend="instrumentation"`: scopes inside kernels, recorded by Triton's own compiler passes.

The compiler side (the proton dialect's record ops and the passes that lower them) is in libtriton;
`hooks.instrumentation` installs it and gives every launch of an instrumented kernel a scratch
buffer of its own. This backend only queues those launches, each with its buffer, kernel and call
path, and decodes them in batches: at flush, or once the queued buffers pass `QUEUE_BYTES`. Nothing
synchronises the GPU per launch (Proton synchronises the stream and copies the buffer on every
launch: docs/design.md, "The instrumentation backend").
"""
from __future__ import annotations

import threading
import time
from dataclasses import dataclass

import numpy as np

from ...model.records import CycleLaunch
from ..backend import Backend, register_backend
from .decode import decode_launch

# Queued scratch memory that triggers a decode from the launch hook (which then waits for the GPU):
# a bound on what profiling holds on the device, far above what a step of a training loop queues.
QUEUE_BYTES = 256 << 20


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
        self._queue_lock = threading.Lock()
        self.warnings: list[str] = []

    def queue(self, buffer, kernel: InstrumentedKernel, kernel_pid: int, call_path: tuple[str, ...]) -> None:
        """One launch of an instrumented kernel (called by the launch hook, on the launching
        thread). Decodes the queue first when it holds more than `QUEUE_BYTES`."""
        launch = _Launch(buffer, kernel, kernel_pid, call_path, time.time_ns())
        with self._queue_lock:
            self._queue.append(launch)
            self._queued_bytes += buffer.numel()
            full = self._queued_bytes > QUEUE_BYTES
        if full:
            self._decode_queue()

    def _do_flush(self) -> None:
        self._decode_queue()

    def _do_stop(self) -> None:
        with self._queue_lock:
            self._queue, self._queued_bytes = [], 0

    def _decode_queue(self) -> None:
        """Waits for the GPU once, copies every queued buffer to the host in one transfer, decodes
        each launch and hands it to the sessions."""
        with self._queue_lock:
            launches, self._queue, self._queued_bytes = self._queue, [], 0
        if not launches:
            return
        import torch

        torch.cuda.synchronize()
        host = torch.cat([launch.buffer for launch in launches]).cpu().numpy()
        offset = 0
        for launch in launches:
            size = launch.buffer.numel()
            raw = host[offset:offset + size]
            offset += size
            self._deliver(launch, raw)

    def _deliver(self, launch: _Launch, raw: np.ndarray) -> None:
        kernel = launch.kernel
        events = decode_launch(raw, kernel.scratch_size, kernel.num_units)
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
