"""Kernel batches -> per-path sums: the vectorised core of attribution."""
from __future__ import annotations

import numpy as np

from .paths import PathTable
from .records import KernelBatch


def kernel_paths(paths: PathTable, batch: KernelBatch) -> tuple[np.ndarray, np.ndarray]:
    """The kernel node path of every record, computed once per distinct (parent, name).

    Returns `(unique_pids, inverse)`: record i lands on `unique_pids[inverse[i]]`.
    """
    n_names = max(len(batch.names), 1)
    key = batch.parent_path.astype(np.int64) * n_names + batch.name_id
    uniq, inverse = np.unique(key, return_inverse=True)
    ops = paths.ops

    def node(k: int) -> int:
        parent = k // n_names
        return parent if parent in ops else paths.child(parent, batch.names[k % n_names])

    pids = np.fromiter((node(int(k)) for k in uniq), dtype=np.int64, count=len(uniq))
    return pids, inverse.reshape(-1)


def sum_by_group(inverse: np.ndarray, n_groups: int, durations_ns: np.ndarray, device_id: np.ndarray):
    """Per group: total duration (int64), count, and the device id of its last record."""
    time_ns = np.bincount(inverse, weights=durations_ns, minlength=n_groups)
    counts = np.bincount(inverse, minlength=n_groups)
    last_device = np.zeros(n_groups, dtype=np.int64)
    last_device[inverse] = device_id  # fancy assignment: the last write wins
    return np.rint(time_ns).astype(np.int64), counts, last_device
