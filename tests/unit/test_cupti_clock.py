"""CUPTI's clock: recognised as the wall clock, or fitted when another client set its own source."""
from __future__ import annotations

import time

import numpy as np

from lepton.backends.cupti.clock import ClockMap, calibrate


def test_the_wall_clock_is_used_as_is():
    mark_clock, clock_map = calibrate(time.time_ns)
    assert mark_clock is time.time_ns
    assert clock_map.to_host(np.array([123, 456])).tolist() == [123, 456]


def test_a_foreign_clock_is_read_for_the_marks_and_mapped_to_nanoseconds():
    base = time.time_ns()

    def tsc():
        return (time.time_ns() - base) * 3 + 1000

    mark_clock, clock_map = calibrate(tsc)
    assert mark_clock is tsc
    assert abs(clock_map.scale - 1 / 3) < 1e-3
    before = time.time_ns()
    now_ticks = tsc()
    after = time.time_ns()
    host = int(clock_map.to_host(np.array([now_ticks]))[0])
    # within 20 ms of the wall clock around the read: a loaded 2-core CI host preempts the
    # calibration's reads for a few ms; a wrong scale or offset is off by seconds
    assert before - 20_000_000 < host < after + 20_000_000


def test_an_offset_map_shifts_times():
    assert ClockMap.offset(5).to_host(np.array([10], np.uint64)).tolist() == [15]
