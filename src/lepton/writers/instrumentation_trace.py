"""Proton's instrumentation trace: one Chrome `X` event per scope interval of every warp.

Lanes as Proton 3.6 writes them (`tests/data/proton_3_6/instrumentation_trace.chrome_trace`):
`pid` = `"<kernel> Core<SM> CTA<program id>"`, `tid` = `"warp <w> (line <l>)"`, where a warp's
overlapping intervals (nested scopes) are packed on lines 0, 1, ... (first line free at the
interval's start); `name` = scope name, `cat` = kernel name, `cname` = a Chrome color per scope id.

Time: cycles shown as if the clock ran at 1 GHz (1 cycle = 1 ns, `ts`/`dur` = cycles / 1000 us,
`args["Frequency (MHz)"]` = 1000), as Proton. A CTA starts at its globaltimer start (`init_ns`)
relative to the earliest CTA of the trace, its first record at that offset; SM clocks are not
synchronised, so cycles are only compared within a CTA. Later launches start after the previous
launch's last event (plus `LAUNCH_GAP_NS`) when their globaltimer offset would overlap it, since
cycles at 1 GHz can outlast the real time between launches.

Every number is a finite int or float, so the document is strict JSON.
"""
from __future__ import annotations

import json

import numpy as np

from ..model.profile import Profile
from ..model.records import CycleLaunch
from ..model.trace import TraceData

FREQUENCY_MHZ = 1000.0
LAUNCH_GAP_NS = 1000
CHROME_COLORS = ("cq_build_passed", "cq_build_failed", "thread_state_iowait", "thread_state_running",
                 "thread_state_runnable", "thread_state_unknown", "rail_response", "rail_idle",
                 "rail_load", "cq_build_attempt_passed", "cq_build_attempt_failed")


def render(profile: Profile) -> bytes:
    data = profile.data
    assert isinstance(data, TraceData)
    events: list[str] = []
    launches = sorted((c for c in data.cycle_launches if c.events is not None and len(c.events)), key=lambda c: int(c.events.init_ns.min()))
    if launches:
        base = min(int(c.events.init_ns.min()) for c in launches)
        floor = None  # the earliest ts (1 GHz ns) the next launch may start at
        for launch in launches:
            floor = _launch_events(launch, base, floor, events)
    return ('{"displayTimeUnit":"ns","traceEvents":[' + ",".join(events) + "]}\n").encode()


def _launch_events(launch: CycleLaunch, base: int, floor: int | None, out: list[str]) -> int:
    """Appends the launch's events; returns where the next launch may start."""
    ev = launch.events
    first = np.full(len(ev.cta_ids), np.iinfo(np.int64).max, np.int64)
    np.minimum.at(first, ev.cta_index, ev.start_cycle)
    # Proton: ts = cycle - (CTA's first cycle) + (CTA's init_ns - earliest init_ns).
    adjust = (ev.init_ns - base) - first
    ts = ev.start_cycle + adjust[ev.cta_index]
    shift = 0 if floor is None or ts.min() >= floor else floor - int(ts.min())
    ts = ts + shift
    dur = ev.end_cycle - ev.start_cycle
    order = np.lexsort((ev.start_cycle, ev.unit, ev.cta_index, ev.hw_id))  # Proton: by SM, CTA, warp
    lines = _lines(ev.cta_index[order], ev.unit[order], ev.start_cycle[order], ev.end_cycle[order])
    colors: dict[int, str] = {}
    args_of = _args_by_cta(launch)
    kernel = launch.kernel_name
    cat = json.dumps(kernel)
    names = {s: json.dumps(launch.scope_names.get(s, f"scope_{s}")) for s in np.unique(ev.scope).tolist()}
    for i, line in zip(order.tolist(), lines):
        scope = int(ev.scope[i])
        color = colors.setdefault(scope, CHROME_COLORS[len(colors) % len(CHROME_COLORS)])
        c = int(ev.cta_index[i])
        pid = json.dumps(f"{kernel} Core{int(ev.hw_id[i])} CTA{int(ev.cta[i])}")
        out.append(f'{{"args":{args_of[c]},"cat":{cat},"cname":"{color}","dur":{int(dur[i]) / FREQUENCY_MHZ!r},'
                   f'"name":{names[scope]},"ph":"X","pid":{pid},'
                   f'"tid":"warp {int(ev.unit[i])} (line {line})","ts":{int(ts[i]) / FREQUENCY_MHZ!r}}}')
    return int((ts + dur).max()) + LAUNCH_GAP_NS


def _args_by_cta(launch: CycleLaunch) -> list[str]:
    ev = launch.events
    stack = json.dumps(list(launch.call_path), separators=(",", ":"))
    final = (ev.post_final_ns - ev.pre_final_ns).tolist()
    return [f'{{"Finalization Time (ns)":{f},"Frequency (MHz)":{FREQUENCY_MHZ!r},"call_stack":{stack}}}'
            for f in final]


def _lines(cta: np.ndarray, unit: np.ndarray, start: np.ndarray, end: np.ndarray) -> list[int]:
    """Each interval's line within its (CTA, warp), intervals sorted by (CTA, warp, start): the
    first line whose last interval ended by this one's start, as Proton's `assignLineIds`."""
    lines: list[int] = []
    ends: list[int] = []
    prev = None
    for c, u, s, e in zip(cta.tolist(), unit.tolist(), start.tolist(), end.tolist()):
        if (c, u) != prev:
            prev, ends = (c, u), []
        for line, last in enumerate(ends):
            if last <= s:
                ends[line] = e
                break
        else:
            line = len(ends)
            ends.append(e)
        lines.append(line)
    return lines
