"""lepton-view on several files: the ranks of one run side by side, or merged; files of different
runs refused in one line. Fixtures: tests/data/viewer/ddp.rank0..3.hatchet (make_view_fixtures.py),
rank 2 the planted straggler (backward 1.5x, all-reduce waits 0.4x)."""
from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import pytest

from lepton.cli.view import main as view_main

DATA = Path(__file__).resolve().parents[2] / "tests" / "data" / "viewer"
RANKS = [DATA / f"ddp.rank{r}.hatchet" for r in range(4)]


def view(*args) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = view_main([str(a) for a in args], stdout=out, stderr=err)
    return code, out.getvalue(), err.getvalue()


def line_of(text: str, name: str) -> str:
    (line,) = [line for line in text.splitlines() if line.split("  [")[0].endswith(" " + name)]
    return line


def test_the_straggler_is_named_where_it_is_slow():
    """Backward on rank 2 takes 1.5x: 80 launches x 1.8 ms x 1.02 x 1.5 = 220.32 ms, against 144 ms
    (rank 0) and a median of 146.88 ms (ranks 1 and 3: 145.44, 148.32)."""
    code, out, _ = view(*RANKS, "--width", "0")
    assert code == 0
    assert out.splitlines()[0] == "4 ranks (0, 1, 2, 3); per metric: min median max over ranks"
    assert line_of(out, "backward") == "   ├─ 144.000 146.880 220.320 backward  [slowest: rank 2]"
    assert line_of(out, "step").endswith("step  [slowest: rank 2]")
    assert "[slowest: rank 2]" not in line_of(out, "allreduce")  # the straggler waits least


def test_a_quoted_glob_reads_the_same_files():
    assert view(DATA / "ddp.rank*.hatchet")[1] == view(*RANKS)[1]


def test_csv_output_has_min_median_max_and_the_slowest_rank():
    code, out, _ = view(*RANKS, "-m", "time/ms,tflop16/s", "--output", "csv")
    rows = {row["name"]: row for row in csv.DictReader(io.StringIO(out))}
    assert code == 0
    backward = rows["backward"]
    assert float(backward["time/ms (inc) max"]) == pytest.approx(220.32)
    assert float(backward["slowest rank"]) == 2.0
    # Rates are per rank: the straggler's backward matmul runs at 1/1.5 of rank 0's TFLOP/s.
    assert float(backward["tflop16/s (inc) min"]) == pytest.approx(float(backward["tflop16/s (inc) max"]) / 1.5 / 1.02,
                                                                   rel=1e-9)


@pytest.mark.parametrize("how, count, time_ms", [("sum", 320, 144 + 145.44 + 220.32 + 148.32),
                                                 ("mean", 80, (144 + 145.44 + 220.32 + 148.32) / 4)])
def test_merge_sums_or_averages_the_ranks_into_one_profile(how, count, time_ms):
    code, out, _ = view(*RANKS, "--merge", how, "-m", "time/ms,count", "--output", "csv")
    rows = {row["name"]: row for row in csv.DictReader(io.StringIO(out))}
    assert code == 0
    assert float(rows["backward"]["time/ms (inc)"]) == pytest.approx(time_ms)
    assert float(rows["backward"]["count (inc)"]) == count


def changed(tmp_path: Path, edit) -> Path:
    document = json.loads(RANKS[3].read_text())
    edit(document)
    path = tmp_path / "ddp.rank3.hatchet"
    path.write_text(json.dumps(document))
    return path


@pytest.mark.parametrize("edit, message", [
    (lambda d: d[0]["lepton"].update(command_line=["python", "other.py"]), "different runs (their recorded command lines"),
    (lambda d: d[0]["metrics"].update(extra=0), "different runs (different metrics: extra)"),
    (lambda d: d[1]["CUDA"]["0"].update(arch="80"), "ran on different devices"),
])
def test_files_of_different_runs_or_devices_are_refused_in_one_line(tmp_path, edit, message):
    code, out, err = view(*RANKS[:3], changed(tmp_path, edit))
    assert (code, out) == (2, "")
    assert err.count("\n") == 1 and message in err


def test_diff_takes_single_profiles(tmp_path):
    code, _, err = view(*RANKS, "-diff", RANKS[0])
    assert code == 2 and "one profile on each side" in err
