"""`lepton-view B -diff A --fail-above PCT`: the header, percent changes and one-sided marks of the
diff, and the gate's exit code and offenders on pairs of profiles in tests/data/viewer/gate (each B
a copy of an A with numbers edited: a slower kernel, a new one, a removed one)."""
from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from lepton.cli.view import main

DATA = Path(__file__).resolve().parents[1] / "data"
A = DATA / "viewer" / "matmul_bias.hatchet"
GATE = DATA / "viewer" / "gate"
SLOWER, NEW = GATE / "slower_kernel.hatchet", GATE / "new_kernel.hatchet"
REMOVED = GATE / "removed_kernel.hatchet"
THREADS = DATA / "proton_3_6" / "threads.hatchet"


def run_view(*argv) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = main([str(a) for a in argv], stdout=out, stderr=err)
    return code, out.getvalue(), err.getvalue()


def test_the_header_says_b_is_the_file_and_a_the_diff_file_as_proton_subtracts():
    code, out, _ = run_view("-diff", A, SLOWER)
    assert code == 0
    assert out.splitlines()[0] == f"B − A, with B = {SLOWER} and A = {A} (-diff); (%): the change from A"
    assert out.splitlines()[1] == "42.289 ROOT  (+8.0%)"  # B − A: the slower profile minus the base


def test_each_node_shows_its_change_in_percent_of_a():
    _, out, _ = run_view("-diff", A, SLOWER)
    assert "│     │  └─ 0.000 matmul_kernel  (+0.0%)" in out.splitlines()  # unfused/1024's
    assert "│        └─ 42.289 matmul_kernel  (+25.0%)" in out.splitlines()
    assert "│  └─ 42.289 unfused  (+23.5%)" in out.splitlines()


def test_a_new_kernel_is_marked_only_in_b_and_keeps_its_value():
    _, out, _ = run_view("-diff", A, NEW)
    assert "│  │     └─ 2.000 softmax_kernel  [only in B]" in out.splitlines()


def test_a_removed_kernel_is_marked_only_in_a_and_counts_as_saved_time():
    """hatchet prints nan there; -A makes the children add up to their parent's change."""
    _, out, _ = run_view("-diff", A, REMOVED)
    lines = out.splitlines()
    assert "│     ├─ -0.161 1024  (-20.1%)" in lines
    assert "│     │  ├─ -0.161 add_bias_kernel  [only in A]" in lines


def test_a_slower_kernel_fails_the_gate_with_exit_1_naming_the_worst_first():
    code, out, err = run_view("-diff", A, "--fail-above", "10", SLOWER)
    assert code == 1
    assert out.startswith("B − A")  # the tree is printed as without the gate
    assert err.splitlines() == [
        f"lepton-view: 3 nodes got slower by more than 10% in time/ms (inc) (B = {SLOWER}, A = {A}); "
        "worst first:",
        "    +25.0%  169.156 → 211.445  bench/unfused/8192/matmul_kernel",
        "    +23.6%  179.481 → 221.770  bench/unfused/8192",
        "    +23.5%  180.283 → 222.572  bench/unfused",
    ]


def test_the_total_counts_too():
    code, _, err = run_view("-diff", A, "--fail-above", "5", "-d", "1", SLOWER)
    assert code == 1  # ROOT, the only node -d 1 shows, is 8% slower
    assert err.splitlines()[1:] == ["     +8.0%  527.129 → 569.418  ROOT (the total)"]
    assert run_view("-diff", A, "--fail-above", "9", "-d", "1", SLOWER)[0] == 0


def test_a_new_kernel_fails_the_gate_whatever_the_threshold():
    code, _, err = run_view("-diff", A, "--fail-above", "1000", NEW)
    assert code == 1
    assert err.splitlines()[1:] == ["       new  - → 2.000  bench/fused/8192/softmax_kernel"]


def test_a_removed_kernel_passes_the_gate_even_at_zero_percent():
    code, _, err = run_view("-diff", A, "--fail-above", "0", REMOVED)
    assert code == 0
    assert err == (f"lepton-view: no node got slower by more than 0% in time/ms (inc) "
                   f"(B = {REMOVED}, A = {A})\n")


def test_the_direction_is_b_against_a_a_faster_b_passes():
    assert run_view("-diff", SLOWER, "--fail-above", "0", A)[0] == 0  # B is the base, A the slow one
    assert run_view("-diff", A, "--fail-above", "0", A)[0] == 0


def test_for_a_rate_slower_means_less():
    """tflop16/s of the slowed matmul drops by 20%: slower, though the number got smaller."""
    code, _, err = run_view("-m", "tflop16/s", "-diff", A, "--fail-above", "15", SLOWER)
    assert code == 1
    worst = err.splitlines()[1]
    assert worst.endswith("bench/unfused/8192/matmul_kernel") and "-20.0%" in worst
    assert run_view("-m", "tflop16/s", "-diff", SLOWER, "--fail-above", "15", A)[0] == 0


def test_the_gate_reads_the_first_metric_only():
    # The counts are equal; the time of the second metric is not looked at.
    assert run_view("-m", "count,time/ms", "-diff", A, "--fail-above", "1", SLOWER)[0] == 0


def test_proton_profiles_are_gated_alike():
    code, _, err = run_view("-diff", THREADS, "--fail-above", "20", GATE / "threads_slower.hatchet")
    assert code == 1
    assert err.splitlines()[1:] == ["    +33.3%  0.001 → 0.001  thread_2/add_kernel",  # a tie: deeper first
                                     "    +33.3%  0.001 → 0.001  thread_2"]
    code, _, err = run_view("-m", "time/ns", "-diff", THREADS, "--fail-above", "20",
                            GATE / "threads_slower.hatchet")
    assert err.splitlines()[1] == "    +33.3%  864.000 → 1152.000  thread_2/add_kernel"


def test_json_output_carries_both_files_the_changes_and_the_verdict_for_scripts():
    code, out, _ = run_view("-diff", A, "--fail-above", "10", "--output", "json", NEW)
    document = json.loads(out)
    assert code == 1
    assert document["diff"]["B"] == str(NEW) and document["diff"]["A"] == str(A)
    assert document["gate"]["passed"] is False and document["gate"]["fail_above %"] == 10
    (slower,) = document["gate"]["slower"]
    assert slower == {"id": slower["id"], "path": "bench/fused/8192/softmax_kernel", "change %": None,
                      "A": None, "B": 2.0}
    softmax = next(n for n in document["nodes"] if n["name"] == "softmax_kernel")
    assert softmax["only_in"] == "B"
    assert softmax["values"] == {"time/ms (inc)": 2.0, "time/ms (inc) change %": None}
    root = document["nodes"][0]
    assert root["only_in"] is None
    assert root["values"]["time/ms (inc) change %"] == pytest.approx(2 / 527.129371 * 100)


def test_csv_output_has_a_change_column_and_the_side():
    _, out, _ = run_view("-diff", A, "--output", "csv", REMOVED)
    header, *rows = out.splitlines()
    assert header == "id,parent_id,depth,name,time/ms (inc),time/ms (inc) change %,only_in"
    assert any(row.endswith(",add_bias_kernel,-0.161398,-100,A") for row in rows)


@pytest.mark.parametrize("args, message", [
    (["--fail-above", "5", A], "--fail-above compares two profiles: give the baseline with -diff BASELINE"),
    (["--output", "folded", "-diff", A, SLOWER], "--output folded draws one profile, not a difference"),
])
def test_a_gate_or_export_without_what_it_needs_is_one_line_and_exit_2(args, message):
    code, out, err = run_view(*args)
    assert (code, out) == (2, "")
    assert err == f"lepton-view: error: {message}" + err.split(message, 1)[1] and err.count("\n") == 1


def test_a_negative_threshold_is_refused(capsys):
    with pytest.raises(SystemExit) as exit_:
        main(["-diff", str(A), "--fail-above", "-5", str(SLOWER)])
    assert exit_.value.code == 2
    assert "--fail-above: must be a percentage of 0 or more, not -5" in capsys.readouterr().err
