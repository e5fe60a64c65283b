"""Per-scope sums of an instrumented launch: cycles, and the same durations in nanoseconds.

Cycles to nanoseconds. A record holds the SM's cycle counter, whose rate (the SM clock) changes with
boost and power limits and is not reported per launch. Each CTA's header, though, holds the
globaltimer (ns) at the CTA's start (`init_ns`) and before it writes its buffer out
(`pre_final_ns`). So each CTA gets its own rate, `ns_per_cycle = (pre_final_ns - init_ns) /
(last END cycle - first START cycle)`, and each of its intervals is converted with it. The
globaltimer span also covers the code before the first record and after the last one, so the rate,
and the nanoseconds, are upper bounds, close when the scopes cover most of the kernel
(docs/design.md, "Cycles to nanoseconds").

Where a CTA's span is 0 (the globaltimer ticks coarsely, so a short CTA can see none) or it
recorded nothing, the CTA uses the launch's pooled rate, the
sum of the usable CTAs' ns spans over the sum of their cycle spans; when no CTA is usable, 1 ns per
cycle (1 GHz, what Proton's trace assumes).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .records import CycleLaunch, LaunchEvents

FALLBACK_NS_PER_CYCLE = 1.0  # 1 GHz


def ns_per_cycle(events: LaunchEvents) -> np.ndarray:
    """float64, one rate per CTA of `events` (see the module docstring)."""
    n = len(events.cta_ids)
    first = np.full(n, np.iinfo(np.int64).max, np.int64)
    last = np.full(n, np.iinfo(np.int64).min, np.int64)
    np.minimum.at(first, events.cta_index, events.start_cycle)
    np.maximum.at(last, events.cta_index, events.end_cycle)
    span_cycles = np.where(last > first, last - first, 0)
    span_ns = np.maximum(events.pre_final_ns - events.init_ns, 0)
    usable = (span_cycles > 0) & (span_ns > 0)
    pooled = span_ns[usable].sum() / span_cycles[usable].sum() if usable.any() else FALLBACK_NS_PER_CYCLE
    rate = np.full(n, float(pooled))
    rate[usable] = span_ns[usable] / span_cycles[usable]
    return rate


@dataclass
class ScopeSums:
    """Per scope id of one launch: summed over every warp of every CTA."""

    scope_ids: list[int]
    cycles: list[int]
    ns: list[float]
    warps: int  # that the sums are over: warps x CTAs


def scope_sums(events: LaunchEvents) -> ScopeSums:
    durations = events.end_cycle - events.start_cycle
    ids, inverse = np.unique(events.scope, return_inverse=True)
    cycles = np.zeros(len(ids), np.int64)
    np.add.at(cycles, inverse, durations)
    ns = np.bincount(inverse, weights=durations * ns_per_cycle(events)[events.cta_index], minlength=len(ids))
    return ScopeSums(ids.tolist(), cycles.tolist(), ns.tolist(), events.num_units * events.num_ctas)


@dataclass
class SummedLaunches:
    """Launches of one instrumented kernel summed on the device, one row per launch: what a tree
    needs of them, as columns, so that thousands of launches cost a few array operations and one
    tree update per path instead of one object each (`CycleLaunch` is one launch, with its
    intervals where they were decoded on the host)."""

    kernel_name: str
    scope_names: dict[int, str]
    scope_parents: dict[int, int]  # child scope id -> parent scope id
    scope_ids: list[int]  # ascending: the columns of `cycles`, `ns` and `intervals`
    cycles: np.ndarray  # int64 (launches, scopes)
    ns: np.ndarray  # float64 (launches, scopes)
    intervals: np.ndarray  # int64 (launches, scopes): 0 where a launch did not record the scope
    warps: np.ndarray  # int64 per launch: warps x CTAs, what its sums are over
    kernel_pid: np.ndarray  # int64 per launch: the kernel's node (a path id)
    device_id: np.ndarray  # int64 per launch
    launch_ns: np.ndarray  # int64 per launch (`time.time_ns()`): places it in a session's time line
    call_paths: list[tuple[str, ...]]  # per launch: from ROOT to the kernel

    def __len__(self) -> int:
        return len(self.launch_ns)

    def merged(self, rows: np.ndarray, phase: np.ndarray) -> list[tuple[int, CycleLaunch]]:
        """The launches `rows` (ascending) as `(phase, launch)`, one launch per phase (`phase`: one
        per launch), path, device and grid, in the order of each one's first row: the tree's
        metrics are linear in the sums of launches over one grid. The sums are added in row order
        from zero, as adding the launches one after another does, so every float is the same."""
        if not len(rows):
            return []
        keys = np.stack([phase[rows], self.kernel_pid[rows], self.device_id[rows], self.warps[rows]], 1)
        _, first, group = np.unique(keys, axis=0, return_index=True, return_inverse=True)
        order = np.argsort(first)
        rank = np.empty_like(order)
        rank[order] = np.arange(len(order))
        group = rank[group.reshape(-1)]  # groups numbered by their first row
        have = self.intervals[rows] > 0
        shape = (len(order), len(self.scope_ids))
        cycles, ns, seen = np.zeros(shape, np.int64), np.zeros(shape), np.zeros(shape, bool)
        np.add.at(cycles, group, np.where(have, self.cycles[rows], 0))  # unbuffered: in row order
        np.add.at(ns, group, np.where(have, self.ns[rows], 0.0))
        np.logical_or.at(seen, group, have)
        out = []
        for row, in_group, group_cycles, group_ns in zip(rows[first[order]].tolist(), seen.tolist(),
                                                         cycles.tolist(), ns.tolist()):
            sums = ScopeSums([s for s, h in zip(self.scope_ids, in_group) if h],
                             [c for c, h in zip(group_cycles, in_group) if h],
                             [n for n, h in zip(group_ns, in_group) if h], int(self.warps[row]))
            out.append((int(phase[row]), CycleLaunch(
                int(self.kernel_pid[row]), self.kernel_name, self.scope_names, self.scope_parents, None,
                self.call_paths[row], int(self.device_id[row]), sums)))
        return out


def scope_name(launch: CycleLaunch, scope_id: int) -> str:
    """Proton's name for a scope id the kernel did not name: `scope_<id>`."""
    return launch.scope_names.get(scope_id, f"scope_{scope_id}")


def scope_chain(launch: CycleLaunch, scope_id: int) -> list[int]:
    """The scope ids from the outermost enclosing scope down to `scope_id` (a cycle in
    `scope_parents`, which a correct compiler never gives, is cut where it repeats)."""
    chain = [scope_id]
    parent = launch.scope_parents.get(scope_id)
    while parent is not None and parent not in chain:
        chain.append(parent)
        parent = launch.scope_parents.get(parent)
    chain.reverse()
    return chain
