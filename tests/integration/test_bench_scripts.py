"""The CPU benchmarks stay runnable: small runs go through the same code as the full ones (an
import error once made bench/core.py skip parse_1m_s without a word)."""
from __future__ import annotations

import functools
import os

BENCH = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "bench")


def test_parse_bench_counts_every_kernel_of_a_small_run(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(BENCH)
    import parse  # bench/parse.py

    assert parse.parse_1m_s(n=20_000, repeat=1) > 0  # raises unless all 20,000 are counted


def test_core_bench_prints_scope_aggregate_and_parse_numbers(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(BENCH)
    import core  # bench/core.py
    import parse

    monkeypatch.setattr(core, "scope_us", functools.partial(core.scope_us, pairs=1000, rounds=2))
    monkeypatch.setattr(core, "aggregate_1m_s", functools.partial(core.aggregate_1m_s, kernels=20_000))
    monkeypatch.setattr(parse, "parse_1m_s", functools.partial(parse.parse_1m_s, n=20_000, repeat=1))
    core.main()
    keys = [line.split("=")[0] for line in capsys.readouterr().out.split()]
    assert keys == ["scope_us", "aggregate_1m_s", "parse_1m_s"]
