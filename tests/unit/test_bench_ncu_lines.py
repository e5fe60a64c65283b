"""bench/ncu_lines.py's pure parts: per-line samples from hatchet trees and from ncu's source page,
and the table. No GPU, torch or triton.

The CSV layouts are those that public scripts read from `ncu -i REP --page source --csv`, not yet
seen on this project's machines: `--print-source sass` (ncu 2025.3.1) opens with `"Kernel Name",...`
and a header row `"Address","Source","Warp Stall Sampling (All Samples)",...`; `cuda,sass` gives
`"File Path"` and `"Function Name"` rows, then a header `"Line No","Source","Address","Source",...`
with each source line's row (no address) followed by its SASS rows (no line); ncu folds runs of
SASS into `...` rows."""
from __future__ import annotations

import os

import pytest

BENCH = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "bench")


@pytest.fixture
def nl(monkeypatch):
    monkeypatch.syspath_prepend(BENCH)
    import ncu_lines  # bench/ncu_lines.py

    return ncu_lines


def node(name: str, children=(), **metrics) -> dict:
    return {"frame": {"name": name, "type": "function"}, "metrics": metrics, "children": list(children)}


def test_a_kernels_line_shares_count_its_samples_on_no_line_and_every_call_path(nl):
    """ROOT ─ step ─ work (10 own) ─ .../in_kernel.py:31@work 60, :37@work 20
            └─ work (0 own) ─ .../in_kernel.py:31@work 10
            └─ add_kernel (5 own): another kernel, not counted"""
    tree = node("ROOT", [
        node("step", [node("work", [node("/r/bench/in_kernel.py:31@work", num_samples=60),
                                    node("/r/bench/in_kernel.py:37@work", num_samples=20)],
                           num_samples=10, count=4)]),
        node("work", [node("/r/bench/in_kernel.py:31@work", num_samples=10)], count=1),
        node("add_kernel", num_samples=5, count=5),
    ])
    got = nl.hatchet_line_samples([tree, {"CUDA": {}}], "work")
    assert dict(got.lines) == {("in_kernel.py", 31): 70, ("in_kernel.py", 37): 20}
    assert got.total == 100 and got.share(("in_kernel.py", 31)) == 70.0 and got.share(None) == 10.0
    assert got.paths == {"in_kernel.py": "/r/bench/in_kernel.py"}


def test_a_kernel_node_is_known_by_its_lines_function_when_its_own_name_differs(nl):
    lines = [node("/t/language/standard.py:290@work", num_samples=3)]
    tree = node("ROOT", [node("work_0d1d", lines, num_samples=1)])
    got = nl.hatchet_line_samples(tree, "work")
    assert dict(got.lines) == {("standard.py", 290): 3} and got.no_line == 1


ALL, NOT_ISSUED = '"Warp Stall Sampling (All Samples)"', '"Warp Stall Sampling (Not-issued Samples)"'
CUDA_SASS_HEADER = f'"Line No","Source","Address","Source",{ALL},{NOT_ISSUED},"Instructions Executed"'
CUDA_SASS = f'''==PROF== Connected to process 1
"File Path","/r/bench/in_kernel.py"
"Function Name","work"
{CUDA_SASS_HEADER}
"31","        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)","","","7","1","100"
"","","0x7f0000000100","S2R R0, SR_CTAID.X","4","0","50"
"","","...","","-","-","-"
"","","0x7f0000000110","IMAD R0, R0, 0x400, R3","3","1","50"
"37","            acc = acc * 1.0001 + 0.5","","","1,200","10","409600"
"","","0x7f0000000200","FFMA R5, R5, 1.0001, 0.5","1,200","10","409600"
"40","    tl.store(z + offs, acc, mask=m)","","","-","",""
"File Path","/t/language/standard.py"
{CUDA_SASS_HEADER}
"290","    return a + b","","","2","0","8"
"","","0x7f0000000300","FADD R1, R1, R2","2","0","8"
'''


def test_ncu_cuda_sass_view_sums_each_lines_sass_rows_per_file(nl):
    got = nl.parse_ncu_source(CUDA_SASS, "/elsewhere/in_kernel.py")
    assert dict(got.by_sass) == {("in_kernel.py", 31): 7, ("in_kernel.py", 37): 1200, ("standard.py", 290): 2}
    assert got.lines() is got.by_sass and got.instructions == 1209 and got.headers == 2
    assert got.paths["standard.py"] == "/t/language/standard.py"


def test_ncu_launches_printed_one_table_each_are_summed(nl):
    got = nl.parse_ncu_source(CUDA_SASS + CUDA_SASS, "/r/bench/in_kernel.py")
    assert got.by_sass[("in_kernel.py", 37)] == 2400 and got.instructions == 2418


CUDA_ONLY = '''"File Path","/r/bench/in_kernel.py"
"Line No","Source","Warp Stall Sampling (All Samples)","Warp Stall Sampling (Not-issued Samples)"
"30","    def work(x, z, n, ITERS: tl.constexpr, BLOCK: tl.constexpr, SCOPED: tl.constexpr):","0","0"
"31","        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)","7","1"
"37","            acc = acc * 1.0001 + 0.5","1,200","10"
'''


def test_ncu_cuda_view_reads_the_line_rows(nl):
    got = nl.parse_ncu_source(CUDA_ONLY, "/r/bench/in_kernel.py")
    assert dict(got.by_line) == {("in_kernel.py", 30): 0, ("in_kernel.py", 31): 7, ("in_kernel.py", 37): 1200}
    assert got.lines() is got.by_line and got.instructions == 0


def test_ncu_cuda_view_with_no_line_column_finds_lines_by_text_in_file_order(nl, tmp_path):
    src = tmp_path / "k.py"
    src.write_text("def k():\n    x = 1\n    y = 2\n    x = 1\n")
    text = ('"Source","Warp Stall Sampling (All Samples)"\n'
            '"    x = 1","5"\n"    y = 2","6"\n"    x = 1","7"\n"    not in the file","9"\n')
    got = nl.parse_ncu_source(text, str(src))
    assert dict(got.by_line) == {("k.py", 2): 5, ("k.py", 3): 6, ("k.py", 4): 7}


SASS_ONLY = f'''"Kernel Name","work"
"Address","Source",{ALL},{NOT_ISSUED},"Instructions Executed"
"0x7f0000000100","S2R R0, SR_CTAID.X","4","0","50"
"0x7f0000000110","IMAD R0, R0, 0x400, R3","3","1","50"
"0x7f0000000200","FFMA R5, R5, 1.0001, 0.5","1,200","10","409600"
"0x7f0000000300","FADD R1, R1, R2","2","0","8"
"0x7f0000000400","EXIT","11","0","4096"
'''


def test_ncus_samples_on_no_line_are_what_the_sass_total_has_beyond_the_lines(nl):
    views = {v: nl.parse_ncu_source(t, "/r/bench/in_kernel.py")
             for v, t in (("cuda", CUDA_ONLY), ("cuda,sass", CUDA_SASS), ("sass", SASS_ONLY))}
    got = nl.ncu_line_samples(views)
    assert got.lines[("in_kernel.py", 37)] == 1200 and got.lines[("standard.py", 290)] == 2
    assert got.no_line == 11 and got.total == 1220


def test_ncu_with_nothing_parsed_gives_no_lines(nl):
    assert not nl.ncu_line_samples({"cuda": nl.parse_ncu_source("==ERROR== no source\n", "/x.py")}).lines


def test_the_table_shows_each_tool_per_line_and_names_a_missing_tool(nl):
    def samples(lines: dict, no_line: float):
        s = nl.LineSamples(no_line=no_line, paths={"in_kernel.py": os.path.join(BENCH, "in_kernel.py")})
        s.lines.update(lines)
        return s

    ncu = samples({("in_kernel.py", 38): 90, ("in_kernel.py", 32): 10}, 0)
    lepton = samples({("in_kernel.py", 38): 80, ("in_kernel.py", 32): 10, ("standard.py", 5): 0.1}, 9.9)
    table = nl.render("a", {"ncu": ncu, "lepton": lepton, "proton": None})
    rows = {line.split(" | ")[0]: line for line in table.splitlines() if line.startswith("| ")}
    assert rows["| 38"].split(" | ")[2:6] == ["90.0", "80.0", "–", "10.0"]
    assert "acc = acc * 1.0001 + 0.5" in rows["| 38"]  # the line's text, read from bench/in_kernel.py
    assert "| standard.py:5" not in rows  # under 0.5% everywhere: summed into (other lines)
    assert rows["| (no line)"].split(" | ")[2:4] == ["0.0", "9.9"]
    assert rows["| samples"].split(" | ")[2:5] == ["100", "100", "–"]
    assert "Largest |Lepton − ncu|: 10.0 pp (line 38)" in table
    assert "No samples from: proton." in table
