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


def merge_sums(sums: list[ScopeSums]) -> ScopeSums:
    """The sums of launches over one grid (`warps` alike), as one launch's: the tree adds launches'
    cycles and their per-warp cycles, both linear in the sums."""
    cycles: dict[int, int] = {}
    ns: dict[int, float] = {}
    for one in sums:
        for sid, c, n in zip(one.scope_ids, one.cycles, one.ns):
            cycles[sid] = cycles.get(sid, 0) + c
            ns[sid] = ns.get(sid, 0.0) + n
    ids = sorted(cycles)
    return ScopeSums(ids, [cycles[i] for i in ids], [ns[i] for i in ids], sums[0].warps)


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
