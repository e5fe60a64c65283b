"""The checkpoint benchmarks stay runnable (small runs; the kill benchmark runs in test_checkpoints)."""
from __future__ import annotations

import os
import subprocess
import sys

BENCH = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "bench")


def test_checkpoint_cost_bench_prints_both_loops_and_a_checkpoint(tmp_path):
    p = subprocess.run([sys.executable, os.path.join(BENCH, "checkpoint_cost.py"), "--nodes", "200",
                        "--rounds", "1", "--seconds", "0.3", "--every", "0.1"],
                       capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    figures = dict(line.split("=") for line in p.stdout.split())
    assert list(figures) == ["nodes", "every_s", "changing", "scope_us_off", "scope_us_on", "ratio",
                             "checkpoint_ms", "checkpoint_bytes", "checkpoints_written"]
    assert float(figures["checkpoint_ms"]) > 0 and int(figures["checkpoints_written"]) > 5
