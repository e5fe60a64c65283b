"""The one place that converts time units."""
from __future__ import annotations

NS_PER_UNIT = {"ns": 1, "us": 1_000, "ms": 1_000_000, "s": 1_000_000_000}


def ns_to_us(ns: float) -> float:
    return ns / 1_000.0
