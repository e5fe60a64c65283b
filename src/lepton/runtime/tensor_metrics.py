"""Metrics whose values are device tensors, and metrics given inside a CUDA graph capture.

Neither is read where it is given. Outside a capture a device tensor is summed on the device
(`device_sums`); inside one every metric is captured into the graph and recorded at each replay
(`graph_metrics`). A flush reads both once the device is synchronised (`drain`), so no host waits
for the device on the launch path. How this compares with Proton main: docs/design.md, "Tensor
metrics".
"""
from __future__ import annotations

import sys

from ..model.metrics import device_placeholder, is_device_tensor
from . import tensor_ops
from .device_sums import DeviceSums
from .graph_metrics import GraphMetrics


def split(metrics: dict) -> tuple[dict, dict]:
    """`(host, device)`: the metrics with each device tensor replaced by its placeholder (zero of
    its type, which checks and creates the metric at the call), and the device tensors."""
    device = {raw: v for raw, v in metrics.items() if is_device_tensor(v)}
    if not device:
        return metrics, device
    return {raw: device_placeholder(v) if raw in device else v for raw, v in metrics.items()}, device


class TensorMetrics:
    def __init__(self) -> None:
        self.sums = DeviceSums()
        self.graphs = GraphMetrics()

    @staticmethod
    def capturing() -> bool:
        """Whether the calling thread's stream is capturing a CUDA graph."""
        return tensor_ops.capturing()

    def drain(self, sessions) -> None:
        """Adds every device value gathered since the last drain to its session's node. Called
        after a flush, from the flushing thread; the devices are synchronised first."""
        tickets = [(s, *t) for s in sessions for t in s.take_replayed()]
        for session, data, pid, metrics in self.sums.drain() + self.graphs.drain(tickets):
            try:
                session.add_metrics_to(data, pid, metrics)
            except (TypeError, ValueError) as e:  # a type that changed between the call and now
                print(f"lepton: warning: metric {next(iter(metrics))!r} not recorded: {e}", file=sys.stderr)

    def waiting_for(self, session, data) -> bool:
        """Whether phase `data` of `session` has device values not yet read: tensor metrics, or
        metrics of CUDA graph replays. They are read consistently only at a drain (the device
        synchronised, every record of it delivered), so such a phase is written after one."""
        return session.has_replayed(data) or self.sums.waiting_for(data)

    def reset(self) -> None:
        """No session is left: the device sums of the ended sessions go (captured metrics stay,
        with the graphs that may be replayed in a later session)."""
        self.sums.reset()
