"""CUPTI's clock, and how its timestamps become the host's `time.time_ns()` line.

By default CUPTI stamps records with CLOCK_REALTIME on Linux (CUPTI's documentation), so its
timestamps are already on the host line and the threads' time lines are kept with `time.time_ns()`,
the cheapest clock to read.

Another client may have registered its own timestamp source: torch.profiler (Kineto) registers the
CPU's TSC through `cuptiActivityRegisterTimestampCallback` and leaves it after its session. Then the
time lines are kept with `cuptiGetTimestamp` itself, the clock of the records, and record times are
mapped to the host line by a line fitted over a short calibration (the TSC does not tick in
nanoseconds). docs/design.md, "CUPTI's clock", has the measurements.
"""
from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

_CALIBRATION_NS = 5_000_000  # two bracketed readings this far apart give the TSC's rate to ~1e-4


@dataclass(frozen=True)
class ClockMap:
    """host_ns = host_origin + (cupti - cupti_origin) * scale."""

    cupti_origin: int = 0
    host_origin: int = 0
    scale: float = 1.0

    @classmethod
    def offset(cls, offset_ns: int) -> ClockMap:
        return cls(0, offset_ns, 1.0)

    def to_host(self, cupti_ns: np.ndarray) -> np.ndarray:
        delta = cupti_ns.astype(np.int64) - self.cupti_origin
        if self.scale != 1.0:
            delta = np.rint(delta * self.scale).astype(np.int64)
        return delta + self.host_origin


def _bracketed(read_cupti: Callable[[], int], tries: int = 5) -> tuple[int, int, int]:
    """`(bracket, host, cupti)` from the tightest of `tries` host-cupti-host readings."""
    best = None
    for _ in range(tries):
        t0 = time.time_ns()
        ts = read_cupti()
        t1 = time.time_ns()
        if best is None or t1 - t0 < best[0]:
            best = (t1 - t0, (t0 + t1) // 2, ts)
    return best


def calibrate(read_cupti: Callable[[], int]) -> tuple[Callable[[], int], ClockMap]:
    """`(mark clock, map)`: the clock the threads' time lines use (the records' clock, read
    cheaply) and the map of record times to `time.time_ns()`."""
    bracket, host, cupti = _bracketed(read_cupti)
    if abs(host - cupti) <= bracket:
        return time.time_ns, ClockMap()  # CLOCK_REALTIME: the same clock
    deadline = time.perf_counter_ns() + _CALIBRATION_NS
    while time.perf_counter_ns() < deadline:
        pass
    _, host2, cupti2 = _bracketed(read_cupti)
    scale = (host2 - host) / (cupti2 - cupti) if cupti2 != cupti else 1.0
    return read_cupti, ClockMap(cupti, host, scale)

