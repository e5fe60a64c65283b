"""The HTML report's data model, without a browser: which metric a page of each kind of profile is
drawn by, what each panel holds (checked against the terminal's own views), and the one-line refusals
of `lepton-view --html`."""
from __future__ import annotations

import io
import json
import re
from pathlib import Path

import numpy as np
import pytest

from lepton.cli.view import main as view_main
from lepton.viewer.derive import Column
from lepton.viewer.lines import render as render_lines
from lepton.viewer.lines import sampled_kernels
from lepton.viewer.load import load, load_document
from lepton.viewer.ranks import rank_view
from lepton.viewer.report import Filters, ReportError, Request, page_data
from lepton.viewer.report.check import check_page
from lepton.viewer.report.metrics import unit_of
from lepton.viewer.report.sizes import box_values

DATA = Path(__file__).resolve().parents[1] / "data"
PROTON = DATA / "proton_3_6"
OURS = DATA / "report"
MATMUL = DATA / "viewer" / "matmul_bias.hatchet"
RANKS = [DATA / "viewer" / f"ddp.rank{r}.hatchet" for r in range(4)]


def data(*paths, **kw) -> dict:
    profiles = tuple(str(p) for p in paths if not str(p).endswith(".chrome_trace"))
    traces = tuple(str(p) for p in paths if str(p).endswith(".chrome_trace"))
    return page_data(Request(profiles, traces, **kw))


def run(*args) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = view_main([str(a) for a in args], stdout=out, stderr=err)
    return code, out.getvalue(), err.getvalue()


def names_of(page: dict) -> list[str]:
    tree = page["tree"]
    return [tree["names"][k] for k in tree["name"]]


# -- the metric each kind of page opens on -------------------------------------------------------------
@pytest.mark.parametrize("path, first", [(MATMUL, "time/ms"), (PROTON / "pcsampling_lines.hatchet", "num_samples"),
                                         (PROTON / "instrumentation.hatchet", "cycles"),
                                         (OURS / "lepton_instrumentation.hatchet", "cycles"),
                                         (OURS / "lepton_pcsampling.hatchet", "num_samples")])
def test_a_page_opens_on_a_metric_its_profile_has(path, first):
    page = data(path)
    assert page["sizes"][page["initialSize"]]["label"] == first
    assert "pcsampling_period_log2" not in [s["label"] for s in page["sizes"]]  # a setting kept on ROOT


def test_sampled_lines_have_boxes_when_sized_by_samples():
    page = data(PROTON / "pcsampling_lines.hatchet")
    names, samples = names_of(page), page["sizes"][0]["values"]
    hot = names.index("/home/user/bench/in_kernel_workload.py:34@work")
    assert samples[hot] == 230691
    assert page["tree"]["short"][str(page["tree"]["name"][hot])] == "in_kernel_workload.py:34@work"


def test_an_instrumentation_kernel_spans_its_scopes_and_nested_scopes_count_once():
    page = data(OURS / "lepton_instrumentation.hatchet")
    cycles = dict(zip(names_of(page), page["sizes"][0]["values"]))
    assert cycles["ikernel"] == cycles["load"] + cycles["store"]
    assert cycles["nested"] == cycles["outer"] > cycles["inner"]  # outer's cycles include inner's
    assert cycles["ROOT"] == cycles["ikernel"] + cycles["nested"]


def test_box_values_of_a_summed_column_are_the_column():
    tree = load(MATMUL)
    column = Column("time (ns) (inc)", tree.subtree_sum(tree.numbers["time (ns)"]))
    assert np.array_equal(box_values(tree, column), column.values)


# -- -m, -i, -e, -t, -d ----------------------------------------------------------------------------------
def test_the_options_shape_the_page():
    page = data(MATMUL, metrics=("flops16", "time/ms"), filters=Filters(include="fused", depth=4))
    assert [s["label"] for s in page["sizes"]] == ["flops16", "time/ms"]
    assert names_of(page) == ["ROOT", "bench", "fused", "1024", "8192"]  # as `lepton-view -i fused -d 4` prints it
    excluded = data(MATMUL, filters=Filters(exclude="torch|setup"))
    assert not {"torch", "setup"} & set(names_of(excluded))
    assert {row["name"] for row in excluded["kernels"]["rows"]} == {"matmul_kernel_bias", "matmul_kernel", "add_bias_kernel"}


def test_a_bogus_metric_is_one_line_naming_the_files_metrics_and_writes_nothing(tmp_path):
    code, out, err = run(MATMUL, "-m", "bogus", "--html", tmp_path / "r.html")
    assert code == 2 and out == "" and err.count("\n") == 1
    assert err.startswith("lepton-view: error: unknown metric 'bogus'; this profile has: bytes, count, flops16, time")
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("args, says", [
    (["-m", "util"], "'util' does not"), (["-m", "avg_time/us"], "'avg_time/us' does not"),
    (["-m", "cycles/kernel%"], "'cycles/kernel%' does not"), (["-d", "0"], "-d/--depth must be 1 or more"),
    (["-i", "nothing_matches"], "no frame matches --include"), (["-m", "flops16", "-i", "setup"], "nothing to draw with -i 'setup'"),
    (["--print-sorted", "--width", "80"], "--print-sorted, --width shape the terminal's output"),
    (["--output", "csv"], "--output shape"), (["-l"], "-l shape")])
def test_what_the_page_cannot_do_is_refused_in_one_line(tmp_path, args, says):
    code, _, err = run(MATMUL, *args, "--html", tmp_path / "r.html")
    assert code == 2 and err.count("\n") == 1 and says in err, err
    assert list(tmp_path.iterdir()) == []


def test_html_dash_writes_the_page_to_stdout_and_no_file(tmp_path):
    code, out, err = run(MATMUL, "--html", "-")
    assert code == 0 and out.startswith("<!doctype html>") and out.rstrip().endswith("</html>")
    assert err.startswith("lepton-view: report written to stdout")
    assert list(tmp_path.iterdir()) == []  # the tests run in tmp_path: no file named "-"


def test_a_folder_as_the_target_is_refused(tmp_path):
    code, _, err = run(MATMUL, "--html", tmp_path)
    assert code == 2 and "it is a folder" in err


@pytest.mark.parametrize("files, says", [([PROTON / "trace.chrome_trace"], "is a Chrome trace: give its profile too"),
                                         ([MATMUL, PROTON / "trace.chrome_trace"], "has no per-warp events")])
def test_a_trace_needs_its_profile_and_warp_events(tmp_path, files, says):
    code, _, err = run(*files, "--html", tmp_path / "r.html")
    assert code == 2 and says in err and err.count("\n") == 1


def test_a_page_with_nothing_to_draw_is_refused():
    page = data(MATMUL)
    for size in page["sizes"]:
        size["values"] = [0.0] * len(size["values"])
    with pytest.raises(ReportError, match="nothing to draw: no node has a positive time/ms"):
        check_page(page)


# -- the panels ------------------------------------------------------------------------------------------
def test_the_lines_panel_has_the_terminals_shares_and_stalls():
    page = data(PROTON / "pcsampling_lines.hatchet")
    work = next(k for k in page["lines"]["kernels"] if k["path"] == "step/work")
    first = work["lines"][0]
    terminal = render_lines(sampled_kernels(load_document(PROTON / "pcsampling_lines.hatchet")[0]), 1, 3)
    assert f"{first['share']:6.1%}  {first['name']}" in terminal  # 78.5%
    assert [reason for reason, _ in first["stalls"]] == ["selected", "long_scoreboard", "dispatch_stall"]
    assert first["short"] == "in_kernel_workload.py:34@work" and first["text"] == ""  # that file is not here


def test_the_lines_panel_shows_the_source_text_where_the_file_is_readable(tmp_path):
    source = tmp_path / "kernel.py"
    source.write_text("import triton\n\n\n\n\n\n\n\n\n\n\n\n\n\nx = tl.load(ptr + offs)\n")
    text = (PROTON / "pcsampling_lines.hatchet").read_text().replace("/home/user/bench/in_kernel_workload.py:34",
                                                                      f"{source}:15")
    (tmp_path / "p.hatchet").write_text(text)
    work = next(k for k in data(tmp_path / "p.hatchet")["lines"]["kernels"] if k["path"] == "step/work")
    assert work["lines"][0]["text"] == "x = tl.load(ptr + offs)"


def test_the_lines_panel_has_the_hottest_instructions_lepton_keeps():
    (kernel,) = data(OURS / "lepton_pcsampling.hatchet")["lines"]["kernels"]
    assert kernel["path"] == "step/add_kernel" and kernel["samples"] == 1076
    assert [(row["offset"], row["samples"]) for row in kernel["sass"]] == [(0x20, 850), (0x30, 150), (0x10, 46), (0x40, 30)]


def test_the_scopes_panel_shows_cycles_shares_and_ns():
    proton = data(PROTON / "instrumentation.hatchet")["scopes"]
    (kernel,) = proton["kernels"]
    load_, store = kernel["scopes"]
    assert (load_["name"], load_["cycles"], load_["normalized_cycles"]) == ("load", 3013, 188.3125)
    assert load_["share"] == pytest.approx(100 * 3013 / 15172)
    assert proton["ns_source"] == "clock" and load_["ns"] == pytest.approx(3013 / 1.98)  # cycles only: estimated
    ours = data(OURS / "lepton_instrumentation.hatchet")["scopes"]
    assert ours["ns_source"] == "globaltimer"
    nested = next(k for k in ours["kernels"] if k["name"] == "nested")
    assert [(s["name"], s["depth"]) for s in nested["scopes"]] == [("outer", 0), ("inner", 1)]


def test_the_timeline_has_a_row_per_cta_and_warp_and_a_bar_per_scope_interval():
    page = data(PROTON / "instrumentation.hatchet", PROTON / "instrumentation_trace.chrome_trace")
    (kernel,) = page["timeline"]["kernels"]
    assert kernel["name"] == "ikernel" and len(kernel["rows"]) == 16 and len(kernel["events"]) == 32
    assert kernel["rows"][0] == "CTA 0 warp 0" and kernel["scopes"] == ["load", "store"]
    trace = json.loads((PROTON / "instrumentation_trace.chrome_trace").read_text())["traceEvents"]
    assert sorted(e[3] for e in kernel["events"]) == sorted(round(e["dur"] * 1000, 1) for e in trace)  # cycles


def test_the_ranks_page_has_the_terminals_min_median_max_and_slowest_rank():
    page = data(*RANKS)
    tree, columns, _ = rank_view([load(p) for p in RANKS], [0, 1, 2, 3], ["time/ms"])
    root = tree.roots[0]
    ranks = page["ranks"]
    assert (ranks["min"][0][0], page["sizes"][0]["values"][0], ranks["max"][0][0]) == \
        pytest.approx((columns[0].values[root], columns[1].values[root], columns[2].values[root]))
    assert ranks["slowest"][0] == 2
    assert ranks["rows"][0]["name"] == "step/backward" and ranks["rows"][0]["slowest"] == 2
    assert page["title"].startswith("4 ranks:")


def test_merged_ranks_are_one_profile():
    page = data(*RANKS, merge="sum")
    assert "ranks" not in page and page["title"] == "ddp.rank0.hatchet (+3 ranks, sum)"


def test_the_diff_says_which_file_is_subtracted_from_which(tmp_path):
    other = tmp_path / "before.hatchet"
    other.write_text(MATMUL.read_text().replace('"matmul_kernel_bias"', '"matmul_kernel_bias_v2"'))
    page = data(MATMUL, other=str(other))
    assert (page["diff"]["file"], page["diff"]["other"]) == ("matmul_bias.hatchet", "before.hatchet")
    names = names_of(page)
    only = dict(zip(names, page["diff"]["only"]))
    assert only["matmul_kernel_bias"] == 1 and only["matmul_kernel_bias_v2"] == 2 and only["matmul_kernel"] == 0
    assert "diff-legend" in page["panels"]


def test_the_roofline_has_a_point_per_kernel_and_shape():
    points = data(MATMUL)["roofline"]
    labels = sorted(p["label"] for p in points)
    assert labels == ["add_bias_kernel · 1024", "add_bias_kernel · 8192", "matmul_kernel · 1024", "matmul_kernel · 8192",
                      "matmul_kernel_bias · 1024", "matmul_kernel_bias · 8192"]
    big = next(p for p in points if p["label"] == "matmul_kernel_bias · 8192")
    assert big["perf"] == pytest.approx(642e12, rel=1e-3) and big["ai"] == pytest.approx(2730.6, rel=1e-3)


@pytest.mark.parametrize("label, unit", [
    ("time/ms (inc)", {"kind": "time", "ns": 1e6}), ("time (ns) (inc)", {"kind": "time", "ns": 1.0}),
    ("ns", {"kind": "time", "ns": 1.0}), ("cycles", {"kind": "count", "suffix": "cycles"}),
    ("num_samples (inc)", {"kind": "count", "suffix": "samples"}), ("bytes (inc)", {"kind": "bytes"}),
    ("flops16 (inc)", {"kind": "flops"}), ("time/% (inc)", {"kind": "percent"})])
def test_each_metric_is_shown_in_its_unit(label, unit):
    assert unit_of(label) == unit


def test_no_path_outside_the_repository_reaches_the_page():
    text = run(MATMUL, "--html", "-")[1]
    assert not re.search(r"/work/|/tmp/", text)
