"""The benchmarks stay runnable: small runs go through the same code as the full ones (an import
error once made bench/core.py skip parse_1m_s without a word)."""
from __future__ import annotations

import os
import subprocess
import sys

BENCH = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "bench")


def test_parse_bench_counts_every_kernel_of_a_small_run(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(BENCH)
    import parse  # bench/parse.py

    assert parse.parse_1m_s(n=20_000, repeat=1) > 0  # raises unless the profile counts all 20,000


def test_core_bench_prints_scope_aggregate_and_parse_numbers(tmp_path):
    p = subprocess.run([sys.executable, os.path.join(BENCH, "core.py"), "--pairs", "1000",
                        "--kernels", "20000"], capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    figures = dict(line.split("=") for line in p.stdout.split())
    assert list(figures) == ["scope_us", "aggregate_1m_s", "decode_launch_ms", "parse_1m_s"]
    assert all(float(v) > 0 for v in figures.values())


def test_view_bench_times_the_viewer_on_json_and_msgpack(tmp_path):
    p = subprocess.run([sys.executable, os.path.join(BENCH, "view.py"), "--nodes", "2000",
                        "--keep", str(tmp_path)], capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    first, *figures = p.stdout.splitlines()
    assert first.startswith("nodes=2") and [f.split("=")[0] for f in figures] == ["view_s", "view_msgpack_s"]
    import msgpack

    root, devices = msgpack.unpackb((tmp_path / "bench.hatchet_msgpack").read_bytes())
    assert list(root) == ["frame", "metrics", "children"]  # Proton's node order
    assert root["frame"]["name"] == "ROOT" and "CUDA" in devices  # view.py exits non-zero unless read


def test_view_memory_bench_runs_every_case_on_a_small_deep_profile(tmp_path):
    p = subprocess.run([sys.executable, os.path.join(BENCH, "view_memory.py"), "--nodes", "3000", "--depth", "600",
                        "--keep", str(tmp_path)], capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    first, *cases = p.stdout.splitlines()
    assert first.startswith("nodes=2403 depth=601 ")  # deeper than json.loads or msgpack.unpackb go
    assert len(cases) == 4 and all(" exit=0 " in case and "stderr_last=''" in case for case in cases), cases
    assert all(float(case.split("peak_mb=")[1].split()[0]) > 0 for case in cases)



def test_instrumentation_host_bench_times_a_batch_from_its_sums_to_the_tree(tmp_path):
    p = subprocess.run([sys.executable, os.path.join(BENCH, "instrumentation_host.py"), "--launches", "300",
                        "--scopes", "1,3", "--repeat", "2"], capture_output=True, text=True, timeout=120, cwd=tmp_path,
                       check=False)
    assert p.returncode == 0, p.stderr  # it fails unless the tree holds every launch's cycles
    lines = [dict(field.split("=") for field in line.split()) for line in p.stdout.splitlines()]
    assert [(line["launches"], line["scopes"]) for line in lines] == [("300", "1"), ("300", "3")]
    assert all(float(line["us_per_launch"]) > 0 for line in lines)

STEPS = """FRESH 50.0 52.0 48.0
STEP none 40.0 50.0 60.0
STEP shadow:tree:none 44.0 60.0 66.0
"""


def test_paired_bench_gives_each_rounds_ratio_to_the_bare_chunk_of_that_round(monkeypatch):
    monkeypatch.syspath_prepend(BENCH)
    import paired  # bench/paired.py

    fresh, table = paired.summary("warning: something\n" + STEPS)
    assert fresh == 50.0
    assert table["none"] == (50.0, 0.0, 1.0)
    median, added, ratio = table["shadow:tree:none"]
    assert (median, added) == (60.0, 10.0)
    assert round(ratio, 6) == 1.1  # ratios 1.1, 1.2, 1.1 round by round; not 60 / 50
    assert paired.summary("Traceback ...\n") is None


ROUNDS = """lepton: warning: something
ROUND 2000 0.05000 0.09000 0.0100
ROUND 2000 0.04000 0.09000 0.0110
ROUND 2000 0.06000 0.09000 0.0090
ROUND 20000 0.05000 0.11000 0.0100
"""


def test_the_paired_instrumentation_bench_takes_each_rounds_ratio_to_its_own_bare_steps(monkeypatch):
    monkeypatch.syspath_prepend(BENCH)
    import instrumentation_paired  # bench/instrumentation_paired.py

    results = instrumentation_paired.summary(ROUNDS)
    first = results[2000]
    assert (first["bare"], first["amortized"], first["finalize"], first["rounds"]) == (0.05, 0.09, 0.01, 3)
    # ratios 1.8, 2.25, 1.5 round by round: their median, not 0.09 / 0.05
    assert (round(first["ratio"], 6), first["low"], round(first["high"], 6)) == (1.8, 1.5, 2.25)
    assert instrumentation_paired.goal("one_scope", results) == "misses ≤ 2x: 2.20x at 20,000 steps"
    assert instrumentation_paired.goal("in_loop", results) == "met"
    assert instrumentation_paired.goal("one_scope", {200: first}).startswith("not measured")
    assert instrumentation_paired.summary("Traceback ...\n") == {}


CHILD = '''import sys
shape = sys.argv[sys.argv.index("--child") + 1]
if shape == "gone":
    print("SKIP no such thing here")
elif shape == "slow":
    import time; time.sleep(30)
else:
    print("lepton: warning: something to pass on", file=sys.stderr)
    print("RESULT ms_per_step=0.0500 finalize_s=1.000 dev_peak_mib=300")
    print('DETAIL {"k": {"buffer": "sized to its records", "device_sums": 3, "host_decoded": {}}}')
'''


def test_run_child_reads_the_result_the_detail_a_skip_and_gives_up_on_a_slow_child(tmp_path, monkeypatch, capsys):
    monkeypatch.syspath_prepend(BENCH)
    import in_kernel  # bench/in_kernel.py

    script = tmp_path / "child.py"
    script.write_text(CHILD)
    got = in_kernel.run_child(str(script), "fast", label="fast")
    assert got == {"ms_per_step": 0.05, "finalize_s": 1.0, "dev_peak_mib": 300.0,
                   "detail": {"k": {"buffer": "sized to its records", "device_sums": 3, "host_decoded": {}}}}
    assert in_kernel.amortized_ms(got, 200) == 0.05 + 5.0
    assert in_kernel.run_child(str(script), "gone", label="gone") == {"skipped": "no such thing here"}
    assert in_kernel.run_child(str(script), "slow", label="slow", timeout=0.5) is None
    assert "fast: lepton: warning: something to pass on" in capsys.readouterr().err


def instrumentation_bench(monkeypatch):
    monkeypatch.syspath_prepend(BENCH)
    import instrumentation  # bench/instrumentation.py

    return instrumentation


def test_the_instrumentation_bench_runs_the_bare_step_then_proton_then_lepton_per_shape(monkeypatch):
    bench = instrumentation_bench(monkeypatch)

    runs = bench.plan(["one_scope", "gluon"], [200, 2000], [200], ["none", "lepton", "proton"])
    assert [(r.shape, r.tool, r.steps) for r in runs] == [
        ("one_scope", "none", 2000), ("one_scope", "proton", 200), ("one_scope", "lepton", 200),
        ("one_scope", "lepton", 2000), ("gluon", "none", 2000), ("gluon", "proton", 200),
        ("gluon", "lepton", 200), ("gluon", "lepton", 2000)]


def test_the_instrumentation_bench_table_gives_paths_and_the_goal_per_shape(monkeypatch, capsys):
    """The parent against scripted children: a shape on the fast path, one decoded on the host,
    Gluon missing, and a Proton run that timed out."""
    bench = instrumentation_bench(monkeypatch)

    def paths(device, host):
        return {"k": {"buffer": "sized to its records", "device_sums": device, "host_decoded": host}}

    results = {
        ("fast", "none"): {"ms_per_step": 0.04, "finalize_s": 0.0},
        ("fast", "proton"): {"ms_per_step": 20.0, "finalize_s": 0.5},
        ("fast", "lepton"): {"ms_per_step": 0.05, "finalize_s": 0.4, "dev_peak_mib": 120.0, "detail": paths(2005, {})},
        ("slow", "none"): {"ms_per_step": 0.04, "finalize_s": 0.0},
        ("slow", "proton"): None,
        ("slow", "lepton"): {"ms_per_step": 0.2, "finalize_s": 4.0, "dev_peak_mib": 2200.0,
                             "detail": paths(5, {"buffer wrapped": 2000})},
        ("gluon", "none"): {"skipped": "triton.experimental.gluon is not available"},
    }
    monkeypatch.setattr(bench, "run_child", lambda script, shape, tool, steps, **kw: results[shape, tool])
    monkeypatch.setitem(bench.GOAL_X_BARE, "slow", 3.0)
    runs = bench.plan(["fast", "slow", "gluon"], [2000], [200], ["none", "lepton", "proton"])
    bench.measure(runs, bench.argparse.Namespace(budget=60, proton_timeout=180, timeout=240, mode=""))
    out = capsys.readouterr().out.splitlines()
    fast = next(line for line in out if line.startswith("| fast | lepton |"))
    assert fast == ("| fast | lepton | 2,000 | 0.050 | 0.400 | 0.250 | 6.25 | 90× | 2,005 / 0 | sized to its records "
                    "| 120 |")
    slow = next(line for line in out if line.startswith("| slow | lepton |"))
    assert "| 5 / 2,000 (buffer wrapped: 2,000) |" in slow and "| — |" in slow  # no Proton to compare with
    assert any(line.startswith("| slow | proton | 200 |") and "skipped: failed or ran past 60 s" in line
               for line in out)
    assert [line for line in out if line.startswith("| gluon")] == [
        "| gluon | none | 2,000 | — | — | — | — | — | triton.experimental.gluon is not available; the shape's other "
        "runs skipped | — | — |"]
    goal = out[out.index("") + 2:]
    assert goal == ["- fast: 6.25× bare at 2,000 steps (goal ≤ 2×)",
                    "- slow: 55.00× bare at 2,000 steps (goal ≤ 3×) (Proton not measured)",
                    "- gluon: not measured"]


def test_store_gap_bench_compares_trees_with_the_decoded_buffers_of_the_same_launches(tmp_path, monkeypatch,
                                                                                     capsys):
    """bench/store_gap.py's analysis on a real H100 buffer standing in for every variant's launches,
    with one tree that agrees with it and one that does not."""
    import json

    import numpy as np

    from lepton.backends.instrumentation.host_buffer import host_buffer

    monkeypatch.syspath_prepend(BENCH)
    import store_gap  # bench/store_gap.py

    data = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "data", "instrumentation")
    raw = np.fromfile(os.path.join(data, "load_store.bin"), np.uint8)
    wrapped = host_buffer(raw, scratch_size=8320, num_warps=4, target_backend="cuda", units=[0, 1, 2, 3])
    for variant, store in (("proton", 5 * 5812), ("lepton", 1)):
        for label in store_gap.LAUNCHES:
            wrapped.tofile(tmp_path / f"{variant}.{label}.bin")
        for kind in ("ttgir", "llir", "ptx", "sass"):
            ptx = "mov.u64 %rd1, %clock64;\nst.global.b32 [%rd2], %r1;\n"
            (tmp_path / f"{variant}.{kind}").write_text(ptx)
        meta = {"profile_scratch_size": 8320, "shared": 8192, "num_warps": 4, "device": "H100",
                "correct": True}
        (tmp_path / f"{variant}.json").write_text(json.dumps(meta))
        scopes = [{"frame": {"name": n}, "metrics": {"cycles": c}, "children": []}
                  for n, c in (("load", 5 * 2903), ("store", store))]
        tree = {"frame": {"name": "ROOT"}, "metrics": {}, "children": [
            {"frame": {"name": "ikernel"}, "metrics": {}, "children": scopes}]}
        (tmp_path / f"{variant}.hatchet").write_text(json.dumps([tree, {}]))
    monkeypatch.setattr(store_gap, "scope_names", lambda out, variant: {0: "load", 1: "store"})
    store_gap.compare(tmp_path, ["proton", "lepton"])
    printed = capsys.readouterr().out
    assert "| proton | 14515 | 14515 | 29060 | 29060 | yes |" in printed
    assert "| lepton | 14515 | 14515 | 1 | 29060 | NO |" in printed
    assert "| cold | 5812 | 5812 | 1.00 |" in printed
    assert (tmp_path / "report.md").exists()
