"""The CPU benchmarks stay runnable: small runs go through the same code as the full ones (an
import error once made bench/core.py skip parse_1m_s without a word)."""
from __future__ import annotations

import functools
import os
import time

import pytest

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


FAKE_OVERHEAD = '''
import sys
CONFIGS = [
    "none",
    "proton:shadow:tree:none", "lepton:shadow:tree:none",
    "lepton:python:tree:none",
]
LOOP = {"none": 0.5, "proton:shadow:tree:none": 0.75, "lepton:shadow:tree:none": 0.6}
if sys.argv[1] == "--child":
    mode = sys.argv[2]
    if mode not in LOOP:
        sys.exit("no GPU for " + mode)
    print(f"RESULT {mode} start=0.0400 loop={LOOP[mode]:.4f} finalize=0.0125 total=1 bytes=2420")
'''


def test_overhead_detail_runs_overhead_children_and_adds_start_finalize_and_per_process_columns(tmp_path):
    """overhead.py's children stood in for by a script answering `--child` as they do."""
    import subprocess
    import sys

    fake = tmp_path / "overhead.py"
    fake.write_text(FAKE_OVERHEAD)
    p = subprocess.run([sys.executable, os.path.join(BENCH, "overhead_detail.py"), "--overhead", str(fake),
                        "--reps", "2", "--extra", "lepton8:shadow:tree:none"],
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    rows = {line.split()[0]: line.split() for line in p.stdout.splitlines() if line.strip()}
    assert rows["lepton:shadow:tree:none"][1:6] == ["0.6000", "1.20", "40.0", "12.5", "2420"]
    assert rows["lepton:shadow:tree:none"][6:] == ["1.20", "1.20"]  # each process's ratio
    assert rows["proton:shadow:tree:none"][2] == "1.50"
    assert rows["lepton:python:tree:none"][1:] == ["failed"]  # its children printed no RESULT
    assert rows["lepton8:shadow:tree:none"][1:] == ["failed"]  # the extra config ran too
    assert p.stdout.count("FAILED lepton:python:tree:none: no GPU for lepton:python:tree:none") == 2


def test_overhead_detail_says_where_overhead_py_is_missing(tmp_path):
    import subprocess
    import sys

    p = subprocess.run([sys.executable, os.path.join(BENCH, "overhead_detail.py"), "--overhead",
                        str(tmp_path / "nowhere.py")], capture_output=True, text=True, timeout=60)
    assert p.returncode == 1 and "no overhead.py at" in p.stderr


def test_paired_table_gives_each_rounds_ratio_to_the_base_rounds_median(monkeypatch, capsys):
    monkeypatch.syspath_prepend(BENCH)
    from workload import print_paired

    print_paired({"detached": [10.0, 20.0, 30.0], "kernel": [11.0, 24.0, 33.0]}, rounds=3, chunk=1000)
    rows = {line.split()[0]: line.split()[1:] for line in capsys.readouterr().out.splitlines()[1:]}
    assert rows["detached"] == ["20.00", "0.00", "1.000"]
    assert rows["kernel"] == ["24.00", "4.00", "1.100"]  # ratios 1.1, 1.2, 1.1 round by round


def test_loop_chunks_resamples_what_a_run_of_overhead_py_would_read(monkeypatch, capsys):
    monkeypatch.syspath_prepend(BENCH)
    import loop_chunks

    loops = {"none": [0.50, 0.50, 0.50, 0.50], "fast": [0.60, 0.60, 0.60, 0.60],
             "slow": [0.70, 0.70, 0.70, 0.70], "split": [0.60, 0.60, 0.70, 0.70]}
    loop_chunks.print_resampled(loops, reps=5, target=1.3)
    rows = {line.split()[1]: line.split()[2:] for line in capsys.readouterr().out.splitlines()
            if line.startswith("RESAMPLED")}
    assert "none" not in rows
    assert rows["fast"] == ["1.20", "/", "1.20", "/", "1.20", "100%"]
    assert rows["slow"] == ["1.40", "/", "1.40", "/", "1.40", "0%"]
    low, high, share = float(rows["split"][0]), float(rows["split"][4]), int(rows["split"][5].rstrip("%"))
    assert low == 1.2 and high == 1.4 and 20 < share < 80  # 5 draws of two speeds: either median


@pytest.mark.skipif(not os.path.exists("/proc/thread-self/status"), reason="needs Linux's /proc")
def test_loop_chunks_counts_the_calling_threads_context_switches(monkeypatch):
    monkeypatch.syspath_prepend(BENCH)
    import loop_chunks

    voluntary, involuntary = loop_chunks.context_switches()
    time.sleep(0.01)  # blocks: a voluntary switch of this thread
    after = loop_chunks.context_switches()
    assert after[0] > voluntary and after[1] >= involuntary


def test_loop_chunks_reads_each_tagged_line_of_a_childs_output(monkeypatch):
    monkeypatch.syspath_prepend(BENCH)
    import loop_chunks

    output = "warning: something\nGC 1 0 0 0.3\nTHREAD 0.5012 9 2\nRESULT 0.5020 0.0 0 50.1 49.8\n"
    assert loop_chunks.child_line(output, "THREAD") == ["0.5012", "9", "2"]
    assert loop_chunks.child_line(output, "GC") == ["1", "0", "0", "0.3"]
    assert loop_chunks.child_line(output, "RESULT")[0] == "0.5020"
    assert loop_chunks.child_line("Traceback ...\n", "RESULT") is None
