"""Metrics given inside a CUDA graph capture: one value per replay, under the replay's scope.

While a stream captures a graph, what it launches runs only at each replay, and so does what a
metric given there stands for: as Proton main does, such metrics (numbers and tensors alike) are
recorded by kernels captured into the graph, not at the capture. For each one `capture` captures:

- a `<metric>` kernel, whose graph node the backend tags with the metric (`HotPath.launching_as`).
  Its kernel record at each replay announces the replay: the backend puts it under the replay's
  scope, `replay/<captured_at>/<capture path>/<metric>`, and names the node the metric goes to
  there; each session that counts the kernel (active at the replay and at the capture) keeps a
  ticket for that replay's value (`Session.ingest`).
- for a tensor, that kernel is an `index_copy_` of the value into row `counter` of a ring
  (`replays_kept` rows), after two kernels (in no profile) that advance `counter` modulo the ring.
  A number needs no row: it is the same at every replay.

A flush, once the device is synchronised, reads each ring with tickets and gives the last replay
announced the row `counter` ends at, the one before it the row before, and so on (`drain`).
Neither counter nor ring needs initialising, so they are allocated inside the capture too (a
zeroing kernel there would run at every replay).

Limits: a tensor metric keeps its last `replays_kept` replays between two flushes (older ones are
reported lost; a number has no such limit); replays made while no backend records kernels, or records CUPTI dropped, shift the
pairing; the same graph replayed on two streams at once races on the counter.
"""
from __future__ import annotations

import os
import sys
import threading

from ..model.metrics import coerce_metric_value, is_device_tensor, parse_metric_name
from ..model.paths import INTERNAL
from . import tensor_ops
from .device_sums import keeps_floating

METRIC_NODE = "<metric>"  # Proton's name for the node of a metric kernel (`GraphState::metricTag`)
REPLAYS_ENV = "LEPTON_GRAPH_METRIC_REPLAYS"


RING_BYTES = 1 << 20  # a scalar's ring keeps 16,384 replays (128 KiB); a vector's fewer
MAX_ROWS = 16384


def replays_kept(width: int) -> int:
    """Rows of a ring of `width` values: the replays a captured tensor metric keeps between two
    flushes (`LEPTON_GRAPH_METRIC_REPLAYS` sets it)."""
    text = os.environ.get(REPLAYS_ENV, "").strip()
    if text.isdigit() and int(text) > 0:
        return int(text)
    return max(64, min(MAX_ROWS, RING_BYTES // (8 * width)))


class CapturedMetric:
    """One metric given while a graph was being captured (the tag of its `<metric>` node)."""

    __slots__ = ("announced", "counter", "device", "marker", "raw", "resolved", "ring", "rows",
                 "target_path", "value", "width")

    def __init__(self, raw: str, target_path: int) -> None:
        self.raw = raw
        self.target_path = target_path  # the node it belongs to, at capture (read by the backends)
        self.value = None  # a number's value; None for a tensor (its values are in `ring`)
        self.ring = self.counter = self.marker = self.device = None
        self.rows = self.width = 0
        self.announced = 0  # replays announced so far; replay k is ticket k
        self.resolved = 0  # tickets below this were read at an earlier drain


class GraphMetrics:
    """The captured metrics with replays announced since the last drain. Thread-safe."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._announced: dict[int, CapturedMetric] = {}  # id -> metric, since the last drain

    def capture(self, hp, target: int, parent: int, metrics: dict) -> None:
        """Captures the kernels of `metrics`, given for node `target` while the calling thread's
        stream captures a graph; their `<metric>` nodes go under `parent`. A value that cannot be
        recorded raises here, before anything is captured."""
        checked = {raw: value if is_device_tensor(value) else
                   coerce_metric_value(parse_metric_name(raw).name, value, parse_metric_name(raw).kind)
                   for raw, value in metrics.items()}
        op = hp.paths.op(parent, METRIC_NODE)
        for raw, value in checked.items():
            metric = CapturedMetric(raw, target)
            if is_device_tensor(value):
                self._capture_tensor(hp, metric, op, value)
            else:
                metric.value = value
                metric.marker = tensor_ops.empty(1, False)  # kept: the graph writes it at each replay
                with hp.launching_as(op, metric):
                    metric.marker.zero_()

    @staticmethod
    def _capture_tensor(hp, metric: CapturedMetric, op: int, value) -> None:
        width = value.numel()
        rows = replays_kept(width)
        floating = keeps_floating(parse_metric_name(metric.raw).name, value)
        metric.rows, metric.width, metric.device = rows, width, str(value.device)
        metric.ring = tensor_ops.empty(rows * width, floating, value.device).view(rows, width)
        metric.counter = tensor_ops.empty(1, False, value.device)
        with hp.launching_as(INTERNAL):
            metric.counter.add_(1)
            metric.counter.remainder_(rows)
            src = value.detach().reshape(1, width)
            if src.dtype != metric.ring.dtype:
                src = src.to(metric.ring.dtype)
        with hp.launching_as(op, metric):
            metric.ring.index_copy_(0, metric.counter, src)

    def announce(self, replayed: list[tuple[int, CapturedMetric, int]]) -> list[tuple[int, CapturedMetric, int, int]]:
        """`(row, metric, target)` of each `<metric>` kernel record of a batch, in the order the
        replays ran -> `(row, metric, ticket, target)`. Called from the backend's thread."""
        out = []
        with self._lock:
            for row, metric, target in replayed:
                out.append((row, metric, metric.announced, target))
                metric.announced += 1
                self._announced[id(metric)] = metric
        return out

    def drain(self, tickets: list[tuple]) -> list[tuple[object, object, int, dict]]:
        """`(session, data, node, {metric: value})` of each ticket `(session, data, node, metric,
        ticket)`, reading each ring once after waiting for its device."""
        with self._lock:
            announced, self._announced = self._announced, {}
            by_metric: dict[int, list[tuple]] = {}
            for ticket in tickets:
                by_metric.setdefault(id(ticket[3]), []).append(ticket)
            devices = sorted({ts[0][3].device for ts in by_metric.values() if ts[0][3].ring is not None})
            if devices:
                tensor_ops.synchronize(devices)
            out = []
            for metric_tickets in by_metric.values():
                out += _paired(metric_tickets)
            for metric in announced.values():
                metric.resolved = metric.announced
        return out


def _paired(tickets: list[tuple]) -> list[tuple]:
    """`(session, data, node, {metric: value})` of the tickets of one metric; those whose row a
    later replay overwrote are reported on stderr."""
    metric = tickets[0][3]
    values = _values(metric)
    out = [(session, data, node, {metric.raw: values[ticket]})
           for session, data, node, _, ticket in tickets if ticket in values]
    lost = len(tickets) - len(out)
    if lost:
        print(f"lepton: warning: {lost} values of metric {metric.raw!r}, given inside a CUDA graph capture, "
              f"were overwritten before a flush read them (each such metric keeps its last {metric.rows} "
              f"replays between flushes); flush more often (deactivate(flushing=True)) or set {REPLAYS_ENV}",
              file=sys.stderr)
    return out


def _values(metric: CapturedMetric) -> dict[int, object]:
    """Ticket -> value of the replays announced since the metric's last drain that its ring still
    holds (every one, for a number)."""
    first, last = metric.resolved, metric.announced
    if metric.ring is None:
        return dict.fromkeys(range(first, last), metric.value)
    end = int(metric.counter.tolist()[0])  # the row of the last replay
    rows = metric.ring.tolist()
    out = {}
    for ticket in range(max(first, last - metric.rows), last):
        row = rows[(end - (last - 1 - ticket)) % metric.rows]
        out[ticket] = row if metric.width > 1 else row[0]
    return out
