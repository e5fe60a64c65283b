"""Builds profile scratch buffers as Triton's proton passes write them (circular layout)."""
from __future__ import annotations

import json
import struct
from pathlib import Path

import numpy as np

S, E = True, False  # START / END
RECORDED = Path(__file__).resolve().parents[1] / "data" / "instrumentation"  # buffers from the H100


def entry(is_start: bool, scope: int, cycle: int) -> bytes:
    w0 = (0 if is_start else 1 << 31) | (scope & 0xFF) << 23 | (cycle >> 32) & 0x7FF
    return struct.pack("<II", w0, cycle & 0xFFFFFFFF)


def slot(warps: list[list[tuple[bool, int, int]]], *, program_id=0, hw_id=0, seg_entries=8,
         init_ns=1_000_000, pre_final_ns=None, post_final_ns=None, preamble=0xDEADBEEF,
         scratch_size=None) -> bytes:
    """One CTA's slot: `warps[w]` = that warp's events (is_start, scope, cycle) in write order;
    a warp with more than `seg_entries` events wraps, as the device's circular buffer does."""
    n_units = len(warps)
    seg = seg_entries * 8
    last = max((c for w in warps for _, _, c in w), default=0)
    first = min((c for w in warps for _, _, c in w), default=0)
    pre = init_ns + (last - first) if pre_final_ns is None else pre_final_ns
    post = pre + 128 if post_final_ns is None else post_final_ns
    head = struct.pack("<IIIIQQQ", preamble, program_id, hw_id, seg * n_units, init_ns, pre, post)
    head += struct.pack(f"<{n_units}I", *[2 * len(w) for w in warps])
    data = b""
    for events in warps:
        segment = bytearray(seg)
        for k, (is_start, scope, cycle) in enumerate(events):
            at = (k % seg_entries) * 8
            segment[at:at + 8] = entry(is_start, scope, cycle)
        data += bytes(segment)
    body = head + data
    size = len(body) if scratch_size is None else scratch_size
    return body + bytes(size - len(body))


def launch(slots: list[bytes]) -> tuple[np.ndarray, int]:
    """(raw uint8 buffer, scratch size) of CTAs given as slots, padded to one size."""
    size = max(len(s) for s in slots)
    size += -size % 128
    raw = b"".join(s + bytes(size - len(s)) for s in slots)
    return np.frombuffer(raw, np.uint8).copy(), size


# -- launches in a backend's arena, as the launch hook queues them (numpy chunks: no torch here) -------
def placed(backend, raw: np.ndarray, device: int, kernel, kernel_pid: int, call_path: tuple[str, ...],
           launch_ns: int = 1):
    """A queued launch (`backend._Launch`) whose scratch is a copy of `raw` in `backend`'s arena of
    `device`."""
    from lepton.backends.instrumentation.arena import ScratchArena
    from lepton.backends.instrumentation.backend import _Launch

    if device not in backend._arenas:
        backend._arenas[device] = ScratchArena(lambda n: np.zeros(n, np.uint8))
    _, address, _ = backend._take(device, len(raw))
    backend.view(device, address, len(raw))[:] = raw
    return _Launch(address, len(raw), device, kernel, kernel_pid, call_path, launch_ns)


def deliver(backend, kernel, launches: list) -> None:
    """`launches` (`placed`) of `kernel` decoded as the backend decodes its queue: a batch a device."""
    devices: dict[int, list] = {}
    for launch in launches:
        devices.setdefault(launch.device, []).append(launch)
    for device, batch in devices.items():
        backend._deliver(kernel, device, batch)


def enqueue(backend, raw: np.ndarray, kernel, kernel_pid: int, call_path: tuple[str, ...]) -> None:
    """Queues a launch of `kernel` on device 0 whose scratch is a copy of `raw`, as the hook does."""
    launch = placed(backend, raw, 0, kernel, kernel_pid, call_path)
    backend.queue((launch.device, launch.address, launch.nbytes), kernel, kernel_pid, call_path)


def recorded_batch(name: str) -> tuple[list[np.ndarray], int, int, list[int]]:
    """`(buffers, scratch size, warps, scope ids)`: a recorded launch's buffer (`RECORDED`), a copy
    whose pre-final time is 7,000 ns later (a slower launch), and the buffer again."""
    meta = json.loads((RECORDED / f"{name}.json").read_text())
    raw = np.fromfile(RECORDED / f"{name}.bin", np.uint8)
    later = raw.copy().reshape(meta["grid"], -1)
    later[:, 24:32].view(np.uint64)[:, 0] += 7_000
    ids = sorted(int(i) for i, _ in meta["scope_id_names"])
    return [raw, later.reshape(-1), raw], meta["profile_scratch_size"], meta["num_warps"], ids
