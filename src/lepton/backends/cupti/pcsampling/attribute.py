"""Samples to call paths: which launches of a function its samples belong to.

Sampling runs continuously (no start/stop per launch), and NVIDIA documents `correlationId` as 0 in
continuous mode, so a sample names its function (and cubin), never its launch. Samples are therefore
held per function until the kernel records of a batch are delivered (`Collector.before_ingest`) and
then split over the launches of that function in the batch:

- the launches are grouped by call path (the shadow path and the python-context path together);
- each group gets a share of every (line, stall reason) count in proportion to its kernel time in the
  batch (by launch count where the times sum to 0), rounded by largest remainder so that the shares
  add up to the drained count exactly and `num_stalled_samples` = sum of `stalled_*` holds on every
  node;
- a group's share goes on one of its launches (the last) as that launch's metrics: the kernel node
  for samples with no source line, a `ChildNode("<dir>/<file>:<line>@<function>")` for the others.

A drain window is the time between two deliveries: at a flush every kernel has finished and its
samples and records are both in, so the split is exact whenever each function is launched from one
path per window, and proportional to kernel time otherwise. Samples of a function with no launch in
the batch wait for the next batch that has one.
"""
from __future__ import annotations

import threading

import numpy as np

from ....model.records import AT_ROOT, ChildNode, KernelBatch
from . import layout as L
from .decode import LineCounts, metrics_of


def split(counts: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """Integer `counts` (any shape) split over `weights` (G,) by largest remainder: a (G, *shape)
    array whose sum over axis 0 is `counts`. Ties go to the earlier group."""
    w = np.asarray(weights, np.float64)
    total = w.sum()
    if total <= 0:
        w, total = np.ones_like(w), float(len(w))
    exact = counts[None].astype(np.float64) * (w / total).reshape((-1,) + (1,) * counts.ndim)
    base = np.floor(exact).astype(np.int64)
    remainder = counts - base.sum(axis=0)
    order = np.argsort(-(exact - base), axis=0, kind="stable")
    rank = np.argsort(order, axis=0, kind="stable")
    return base + (rank < remainder[None]).astype(np.int64)


class SampleAttributor:
    """Pending samples and their attribution to a batch. Thread-safe: drains come from launching
    threads (module callbacks) and the flushing thread, batches from CUPTI's buffer thread too."""

    def __init__(self, period_log2: int) -> None:
        self.period_log2 = period_log2
        self.pending = LineCounts(list(L.PROTON_STALL_METRICS))
        self.attributed = 0
        self.drained = 0  # every sample added so far
        self._lock = threading.Lock()

    def add(self, counts: LineCounts) -> None:
        with self._lock:
            self.pending.add(counts)
            self.drained += counts.total()

    def pending_samples(self) -> int:
        with self._lock:
            return self.pending.total()

    def take_pending(self) -> LineCounts:
        with self._lock:
            out, self.pending = self.pending, LineCounts(list(self.pending.metrics))
            return out

    def attach(self, batch: KernelBatch) -> None:
        """Puts the pending samples of every function launched in `batch` on its launches'
        `launch_metrics` (see the module's doc)."""
        if batch.correlation_id is None or not len(batch):
            return
        with self._lock:
            wanted = self.pending.functions() & set(batch.names)
            if not wanted:
                return
            taken = {fn: self.pending.pop_function(fn) for fn in wanted}
            metrics = self.pending.metrics
        for fn, lines in taken.items():
            self._attach_function(batch, fn, lines, metrics)
        row = int(batch.correlation_id[-1])
        batch.launch_metrics.setdefault(row, {})[AT_ROOT] = {f"{L.SAMPLING_PERIOD_METRIC} (pty)": self.period_log2}

    def _attach_function(self, batch: KernelBatch, fn: str, lines: dict[str, np.ndarray],
                         metrics: list[str]) -> None:
        ids = [i for i, name in enumerate(batch.names) if name == fn]
        rows = np.flatnonzero(np.isin(batch.name_id, ids))
        parent = batch.parent_path[rows]
        python = batch.python_parent_path[rows] if batch.python_parent_path is not None else parent
        keys = np.stack([parent, python], axis=1)
        uniq, inverse = np.unique(keys, axis=0, return_inverse=True)
        inverse = inverse.reshape(-1)
        duration = (batch.end_ns[rows] - batch.start_ns[rows]).astype(np.float64)
        weights = np.bincount(inverse, duration, minlength=len(uniq))
        if weights.sum() <= 0:
            weights = np.bincount(inverse, minlength=len(uniq)).astype(np.float64)
        last = np.zeros(len(uniq), np.int64)
        last[inverse] = rows  # numpy: the last write wins, so each group's last launch
        corr = batch.correlation_id[last].tolist()
        for line, counts in lines.items():
            shares = split(counts, weights)
            for g, c in enumerate(corr):
                if not shares[g].any():
                    continue
                node = metrics_of(metrics, shares[g])
                self.attributed += node[L.NUM_SAMPLES]
                target = batch.launch_metrics.setdefault(int(c), {})
                if line:
                    target[ChildNode(line)] = node
                else:
                    for name, v in node.items():
                        target[name] = target.get(name, 0) + v
