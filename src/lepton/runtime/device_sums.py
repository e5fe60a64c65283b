"""Tensor metrics outside graph capture: summed on the device, read at a flush.

A metric whose value is a device tensor (`{"flops": x.sum()}`) is not read where it is given:
reading it would wait for the kernels that compute it (Proton main copies it to the host there,
synchronously). Instead one kernel, on the current stream, adds it into a slot of a device buffer
kept for its (session phase, node, metric); the flush reads every slot once the device is
synchronised (`drain`) and adds the sums to the nodes. So a metric given in every step costs a
kernel launch per step, and the memory grows with the distinct nodes, not with the steps.

A slot's first write after a drain is a copy and later ones add (a property metric, `(pty)`, always
copies): the buffers need no zeroing kernel, which a kernel on another stream could overtake.
"""
from __future__ import annotations

import threading
from dataclasses import dataclass

from ..model.metrics import ROOFLINE_FLOAT_KEYS, ROOFLINE_INT_KEYS, MetricKind, parse_metric_name
from . import tensor_ops

CHUNK_ELEMENTS = 4096  # 32 KiB a buffer: thousands of scalar slots per allocation


@dataclass
class _Buffer:
    tensor: object  # 1-D, float64 or int64, on one device
    capacity: int
    used: int = 0


@dataclass
class _Slot:
    """Where one (session, phase data, node, metric) sums its values between two drains."""

    session: object
    data: object
    pid: int
    raw: str
    buffer: _Buffer
    offset: int
    width: int
    overwrite: bool
    view: object  # the slot's elements of the buffer, sliced once (a slice costs as much as a launch)
    fresh: bool = True  # no write since the last drain: the next one copies


def keeps_floating(name: str, value) -> bool:
    """Whether a metric's device values are kept as doubles: the roofline keys have Proton's fixed
    types (`flops*` double, `bytes` int64), the others follow the tensor."""
    if name in ROOFLINE_FLOAT_KEYS:
        return True
    if name in ROOFLINE_INT_KEYS:
        return False
    return bool(value.is_floating_point())


class DeviceSums:
    """Every slot written since the last drain. Thread-safe: `_lock` orders the launching threads'
    writes with a drain's read."""

    def __init__(self) -> None:
        self._slots: dict[tuple, _Slot] = {}
        self._buffers: dict[tuple, list[_Buffer]] = {}  # (device, floating) -> buffers, newest last
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._slots)

    def waiting_for(self, data) -> bool:
        """Whether device values of phase `data` are still to be read (at the next drain)."""
        with self._lock:
            return any(slot.data is data for slot in self._slots.values())

    def add(self, session, data, pid: int, raw: str, value) -> None:
        """Adds device tensor `value` to metric `raw` of node `pid` in `data`, a phase of `session`,
        by one kernel (two where a float tensor feeds an integer metric). Never reads it."""
        spec = parse_metric_name(raw)
        with self._lock:
            slot = self._slots.get((data, pid, raw))
            if slot is None:
                slot = self._slots[(data, pid, raw)] = self._new_slot(session, data, pid, raw, value, spec.kind)
            src = value.detach().reshape(-1)  # no autograd history kept in the buffer
            view = slot.view
            if slot.fresh or slot.overwrite:
                view.copy_(src)  # converts the dtype as it copies
                slot.fresh = False
            elif src.is_floating_point() and not view.is_floating_point():
                view.add_(src.to(view.dtype))  # Proton's `.long()` of each value
            else:
                view.add_(src)

    def _new_slot(self, session, data, pid: int, raw: str, value, kind: MetricKind) -> _Slot:
        width = value.numel()
        floating = keeps_floating(parse_metric_name(raw).name, value)
        buffers = self._buffers.setdefault((str(value.device), floating), [])
        buffer = next((b for b in buffers if b.used + width <= b.capacity), None)
        if buffer is None:
            capacity = max(CHUNK_ELEMENTS, width)
            buffer = _Buffer(tensor_ops.empty(capacity, floating, value.device), capacity)
            buffers.append(buffer)
        offset, buffer.used = buffer.used, buffer.used + width
        overwrite = kind is MetricKind.PROPERTY or kind is MetricKind.NODE_PROPERTY
        view = buffer.tensor[offset:offset + width]
        return _Slot(session, data, pid, raw, buffer, offset, width, overwrite, view)

    def drain(self) -> list[tuple[object, object, int, dict]]:
        """`(session, data, pid, {metric: value})` of every slot written since the last drain, read
        after waiting for the devices (one copy to the host per buffer); the slots start over."""
        with self._lock:
            slots, self._slots = self._slots, {}
            if not slots:
                return []
            tensor_ops.synchronize(sorted({device for device, _ in self._buffers}))
            host = {id(b): b.tensor[:b.used].tolist() for bs in self._buffers.values() for b in bs if b.used}
            for buffers in self._buffers.values():
                for b in buffers:
                    b.used = 0
        out = []
        for s in slots.values():
            values = host[id(s.buffer)][s.offset:s.offset + s.width]
            out.append((s.session, s.data, s.pid, {s.raw: values if s.width > 1 else values[0]}))
        return out

    def reset(self) -> None:
        """Forgets every slot and buffer (no session is left)."""
        with self._lock:
            self._slots = {}
            self._buffers = {}
