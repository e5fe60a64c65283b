"""The per-warp timeline of an instrumentation trace (Proton's `instrumentation_trace.chrome_trace`
or Lepton's): per kernel, one row per (CTA, warp, line) and one bar per scope interval.

The trace's times are cycles shown as if the clock ran at 1 GHz (1 us = 1,000 cycles, Proton's
convention; writers.instrumentation_trace), so the page's axis is in cycles.
"""
from __future__ import annotations

import json
import re

from .errors import ReportError

LANE = re.compile(r"^(?P<kernel>.*) Core(?P<sm>\d+) CTA(?P<cta>\d+)$")
WARP = re.compile(r"^warp (?P<warp>\d+) \(line (?P<line>\d+)\)$")
CYCLES_PER_US = 1000.0  # the trace's 1 GHz
MAX_EVENTS = 100_000  # bars on one page: a browser draws them in well under a second
TRACE_SUFFIXES = (".chrome_trace", ".trace.json")


def is_trace(path: str) -> bool:
    """A Chrome trace (by name, or a JSON object that starts like one), not a hatchet profile."""
    if path.endswith(TRACE_SUFFIXES):
        return True
    try:
        with open(path, "rb") as f:
            head = f.read(4096).lstrip()
    except OSError:
        return False
    return head.startswith(b"{") and b'"traceEvents"' in head


def timeline_panel(paths: list[str]) -> dict:
    """The panel's data from the traces at `paths`; a ReportError where one has no warp events."""
    kernels: dict[str, dict] = {}
    total = 0
    for path in paths:
        events = [e for e in _events(path) if isinstance(e, dict) and e.get("ph") == "X"]
        warp_events = [e for e in events if _lane(e) is not None]
        if not warp_events:
            raise ReportError(f"'{path}' has no per-warp events: the timeline needs an instrumentation trace "
                              "(mode=\"instrumentation\", data=\"trace\")")
        for event in warp_events:
            if total >= MAX_EVENTS:
                break
            _add(kernels, event)
            total += 1
    return {"kernels": [_finish(name, k) for name, k in kernels.items()], "cut": total >= MAX_EVENTS,
            "max_events": MAX_EVENTS}


def _events(path: str) -> list:
    """The events of every JSON document in the file (Proton appends one per session)."""
    try:
        with open(path, "rb") as f:
            text = f.read().decode("utf-8")
    except OSError as err:
        raise ReportError(f"cannot read '{path}': {err.strerror or err}") from err
    except UnicodeDecodeError as err:
        raise ReportError(f"'{path}' is not a Chrome trace (not UTF-8 text)") from err
    events, at, decoder = [], 0, json.JSONDecoder()
    while at < len(text.rstrip()):
        try:
            document, at = decoder.raw_decode(text, len(text) - len(text[at:].lstrip()))
        except json.JSONDecodeError as err:
            raise ReportError(f"'{path}' is not a Chrome trace (invalid JSON: {err})") from err
        if not isinstance(document, dict) or not isinstance(document.get("traceEvents"), list):
            raise ReportError(f"'{path}' is not a Chrome trace (no traceEvents list)")
        events += document["traceEvents"]
    return events


def _lane(event: dict) -> tuple[str, int, int, int] | None:
    lane, warp = LANE.match(str(event.get("pid", ""))), WARP.match(str(event.get("tid", "")))
    if lane is None or warp is None or not isinstance(event.get("ts"), (int, float)):
        return None
    return str(event.get("cat") or lane["kernel"]), int(lane["cta"]), int(warp["warp"]), int(warp["line"])


def _add(kernels: dict, event: dict) -> None:
    kernel, cta, warp, line = _lane(event)
    entry = kernels.setdefault(kernel, {"rows": {}, "scopes": {}, "events": []})
    row = entry["rows"].setdefault((cta, warp, line), len(entry["rows"]))
    scope = entry["scopes"].setdefault(str(event.get("name", "")), len(entry["scopes"]))
    start = float(event["ts"]) * CYCLES_PER_US
    duration = float(event.get("dur") or 0.0) * CYCLES_PER_US
    entry["events"].append([row, scope, round(start, 1), round(duration, 1)])


def _finish(name: str, entry: dict) -> dict:
    """Rows sorted by CTA, warp and line; times from the kernel's first event."""
    order = sorted(entry["rows"], key=lambda key: key)
    new_row = {entry["rows"][key]: i for i, key in enumerate(order)}
    first = min(e[2] for e in entry["events"])
    events = [[new_row[r], s, round(start - first, 1), dur] for r, s, start, dur in entry["events"]]
    rows = [f"CTA {cta} warp {warp}" + (f" ({line})" if line else "") for cta, warp, line in order]
    return {"name": name, "rows": rows,
            "scopes": list(entry["scopes"]), "events": events}
