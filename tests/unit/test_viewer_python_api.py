"""The viewer's Python API (Proton's `triton.profiler.viewer` functions) on Proton's example profiles.

Expected numbers are proton-viewer's (tests/data/viewer/proton_reference_3_8.txt) or worked out
by hand from the file, with the arithmetic written out. The example files' trees, for reading:

    cuda.json  ROOT (count 0, time 0, flops8 0, bytes 0: all four are summed)
               ├─ foo0  count 10  time 204800 ns  flops8 1e11  bytes 1e8   device 1 (sm90)
               ├─ foo1  count 1   time 204800 ns  flops8 1e10  bytes 1e7   device 0 (sm89)
               └─ foo2  count 1   time 204800 ns  flops8 1e11  bytes 1e7   device 2 (sm100)
    triton.json  ROOT ─ scope (cpu_time 12345 ns) ┬ __proton_launch_metadata ─ cuda_kernel
                                                  └ triton_kernel (time 1664 ns, bytes 2)
"""
from __future__ import annotations

import io
import json
import re
import sys
from pathlib import Path

import numpy as np
import pytest

pd = pytest.importorskip("pandas")

import lepton.viewer as proton_viewer
from lepton.cli.view import main as lepton_view
from lepton.viewer import FilterError, MetricError

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "tests" / "data" / "proton_examples"
CUDA, HIP, FRAME, TRITON, LEAVES = (str(EXAMPLES / f"{name}.json")
                                    for name in ("cuda", "hip", "frame", "triton", "leaf_nodes"))
REFERENCE = ROOT / "tests" / "data" / "viewer" / "proton_reference_3_8.txt"


def names(gf) -> list[str]:
    return gf.dataframe["name"].tolist()


def view(*argv: str) -> str:
    out, err = io.StringIO(), io.StringIO()
    assert lepton_view(list(argv), stdout=out, stderr=err) == 0, err.getvalue()
    return out.getvalue()


# --- read ------------------------------------------------------------------------------------------

def test_read_returns_the_frame_the_summed_and_per_node_metrics_and_the_device_block():
    gf, inclusive, exclusive, devices = proton_viewer.read(CUDA)
    assert inclusive == ["count", "time (ns)", "flops8", "bytes"]  # the metrics on ROOT
    assert exclusive == ["name", "device_id", "device_type"]
    assert devices == json.loads(Path(CUDA).read_text())[1]
    assert names(gf) == ["ROOT", "foo0", "foo1", "foo2"]
    assert gf.dataframe["time (ns) (inc)"].tolist() == [614400.0, 204800.0, 204800.0, 204800.0]
    assert gf.dataframe["count (inc)"].tolist() == [12.0, 10.0, 1.0, 1.0]
    assert gf.dataframe["device_id"].tolist()[1:] == ["1", "0", "2"] and pd.isna(gf.dataframe["device_id"].iloc[0])
    assert gf.exc_metrics == inclusive
    assert gf.inc_metrics == ["count (inc)", "time (ns) (inc)", "flops8 (inc)", "bytes (inc)"]


def test_the_frame_is_a_tree_to_walk_with_nodes_indexing_the_dataframe():
    gf, *_ = proton_viewer.read(LEAVES)
    (root,) = gf.graph.roots
    assert root.frame["name"] == "ROOT"
    assert [child.frame["name"] for child in root.children] == ["kernel_1_1_1", "kernel_2_1_1", "kernel_3_1_1"]
    kernel_2 = root.children[1]
    assert kernel_2.parents == [root]
    assert gf.dataframe.loc[kernel_2, "time (ns) (inc)"] == 23174888 + 1040322
    assert [str(node) for node in root.traverse()] == names(gf)  # rows are in tree order
    assert len(gf.graph) == len(gf.dataframe) == len(gf)


def test_read_drops_the_launch_metadata_frames_and_what_ran_under_them():
    gf, *_ = proton_viewer.read(TRITON)
    assert names(gf) == ["ROOT", "scope", "triton_kernel"]
    assert gf.dataframe["time (ns) (inc)"].tolist() == [1664.0] * 3  # cuda_kernel's 4064 ns not counted


def test_get_raw_metrics_reads_an_open_file_and_leaves_the_sums_to_update_inclusive_columns():
    with open(CUDA) as f:
        gf, inclusive, _exclusive, _ = proton_viewer.get_raw_metrics(f)
    assert "time (ns) (inc)" not in gf.dataframe.columns and gf.inc_metrics == []
    gf.update_inclusive_columns()
    assert gf.dataframe["time (ns) (inc)"].iloc[0] == 614400.0
    assert gf.show_metric_columns() == inclusive + [m + " (inc)" for m in inclusive]


# --- derive_metrics ----------------------------------------------------------------------------------

def derived(path: str, metrics: list[str]):
    gf, inclusive, exclusive, devices = proton_viewer.read(path)
    columns = proton_viewer.derive_metrics(gf, metrics, inclusive, exclusive, devices)
    return gf, columns


def test_time_in_every_unit_and_its_share_of_root():
    gf, columns = derived(CUDA, ["time/s", "time/ms", "time/us", "time/ns", "time/%"])
    assert columns == ["time/s (inc)", "time/ms (inc)", "time/us (inc)", "time/ns (inc)", "time/% (inc)"]
    total, kernel = 3 * 204800, 204800  # ns
    for column, ns_per_unit in zip(columns, (1e9, 1e6, 1e3, 1)):
        np.testing.assert_allclose(gf.dataframe[column], [total / ns_per_unit] + [kernel / ns_per_unit] * 3)
    np.testing.assert_allclose(gf.dataframe["time/% (inc)"], [100, 100 / 3, 100 / 3, 100 / 3])
    assert set(columns) <= set(gf.inc_metrics)


def test_average_time_divides_by_the_summed_count():
    gf, _columns = derived(CUDA, ["avg_time/us", "avg_time/ns"])
    # ROOT: 614400 ns over 12 launches; foo0: 204800 ns over 10
    np.testing.assert_allclose(gf.dataframe["avg_time/us (inc)"], [51.2, 20.48, 204.8, 204.8])
    np.testing.assert_allclose(gf.dataframe["avg_time/ns (inc)"], [51200, 20480, 204800, 204800])


def test_bytes_and_flops_per_second():
    gf, _columns = derived(CUDA, ["gbyte/s", "tbyte/s", "tflop8/s", "flop8/s"])
    # ROOT: 1.2e8 B / 614400e-9 s = 195.3125 GB/s; foo0: 1e8 / 204800e-9 = 488.28125 GB/s
    np.testing.assert_allclose(gf.dataframe["gbyte/s (inc)"], [195.3125, 488.28125, 48.828125, 48.828125])
    np.testing.assert_allclose(gf.dataframe["tbyte/s (inc)"], [0.1953125, 0.48828125, 0.048828125, 0.048828125])
    # ROOT: 2.1e11 flop / 614400e-9 s = 341.796875 Tflop/s
    np.testing.assert_allclose(gf.dataframe["tflop8/s (inc)"], [341.796875, 488.28125, 48.828125, 488.28125])
    np.testing.assert_allclose(gf.dataframe["flop8/s (inc)"], [3.41796875e14, 4.8828125e14, 4.8828125e13, 4.8828125e14])


def test_util_is_the_roofline_fraction_per_kernel_and_nan_elsewhere():
    gf, columns = derived(CUDA, ["util"])
    assert columns == ["util"] and "util" in gf.exc_metrics
    np.testing.assert_allclose(gf.dataframe["util"], [np.nan, 0.247044, 0.147830, 0.118451], rtol=1e-5)


def test_a_per_node_metric_is_not_summed_and_sorts_its_frame_first():
    gf, columns = derived(TRITON, ["cpu_time/ns"])
    gf = proton_viewer.filter_frames(gf, None, None, None, columns[0])
    np.testing.assert_allclose(gf.dataframe[columns[0]], [np.nan, 12345, np.nan])
    assert gf.dataframe.sort_values(by=columns, ascending=False)["name"].iloc[0] == "scope"


def test_raw_metrics_come_back_under_their_dataframe_names():
    gf, columns = derived(TRITON, ["count", "cpu_time", "bytes/%"])
    assert columns == ["count (inc)", "cpu_time (ns)", "bytes/% (inc)"]
    assert gf.dataframe["count (inc)"].tolist() == [1.0, 1.0, 1.0]


def test_an_unknown_metric_says_what_the_profile_has():
    gf, inclusive, exclusive, devices = proton_viewer.read(CUDA)
    with pytest.raises(MetricError, match=r"unknown metric 'watts'; this profile has: count, time, flops8, bytes"):
        proton_viewer.derive_metrics(gf, ["watts"], inclusive, exclusive, devices)


def test_derived_metrics_read_the_dataframe_so_a_users_edit_counts():
    gf, inclusive, exclusive, devices = proton_viewer.read(CUDA)
    gf.dataframe.loc[gf.dataframe["name"] == "foo1", "time (ns)"] = 0.0
    proton_viewer.derive_metrics(gf, ["time/ns"], inclusive, exclusive, devices)
    assert gf.dataframe["time/ns (inc)"].tolist() == [409600.0, 204800.0, 0.0, 204800.0]


def test_sorting_by_time_gives_protons_order():
    gf, columns = derived(LEAVES, ["time/s", "time/ms", "time/us", "time/ns"])
    gf = proton_viewer.filter_frames(gf, None, None, None, columns[0])
    top = gf.dataframe.sort_values(by=[columns[0]], ascending=False)["name"].iloc[:5].tolist()
    assert top == ["ROOT", "kernel_1_1_1", "kernel_3_1_1", "kernel_3_2_2", "kernel_1_2_2"]


# --- get_min_time_flops / get_min_time_bytes ------------------------------------------------------

def min_times(path: str):
    with open(path) as f:
        gf, _, _, devices = proton_viewer.get_raw_metrics(f)
    df = gf.dataframe
    flops = proton_viewer.get_min_time_flops(df, devices)
    bytes_ = proton_viewer.get_min_time_bytes(df, devices)
    assert list(flops.columns) == ["min_time"] and flops.index.equals(df.index)
    by_device = {device: (flops[df["device_id"] == device].to_numpy(), bytes_[df["device_id"] == device].to_numpy())
                 for device in ("0", "1", "2")}
    return by_device, flops["min_time"].iloc[0], bytes_["min_time"].iloc[0]


def test_min_time_at_peak_on_nvidia_devices():
    by_device, root_flops, root_bytes = min_times(CUDA)
    sm89_peak = 330.3e12  # flop/s at 8 bits
    sm90_peak = 132 / 114 * 1980000 / (1755 * 1e3) * 1513 * 1e12  # H100 PCIe scaled by SMs and clock
    sm100_peak = 148 * 16384 * 1700000 * 1e3
    np.testing.assert_allclose(by_device["0"][0], [[1e10 / sm89_peak]])
    np.testing.assert_allclose(by_device["1"][0], [[1e11 / sm90_peak]])
    np.testing.assert_allclose(by_device["2"][0], [[1e11 / sm100_peak]])
    np.testing.assert_allclose(by_device["0"][1], [[1e7 / (2 * 384 * 10501000 * 1e3 / 8)]])  # 9.91969e-6 s
    np.testing.assert_allclose(by_device["1"][1], [[1e8 / (2 * 6144 * 2619000 * 1e3 / 8)]])  # 2.48584e-5 s
    assert (root_flops, root_bytes) == (0.0, 0.0)  # no device: Proton's zero


def test_min_time_at_peak_on_amd_devices():
    by_device, _, _ = min_times(HIP)
    np.testing.assert_allclose(by_device["0"][0], [[1e10 / (1024 * 104 * 1700000 * 1e3)]])  # MI250X, int8
    np.testing.assert_allclose(by_device["1"][0], [[1e11 / (4096 * 304 * 2100000 * 1e3)]])  # MI300X: 3.82e-5 s
    np.testing.assert_allclose(by_device["0"][1], [[1e7 / 3.2e12]])
    np.testing.assert_allclose(by_device["1"][1], [[1e8 / 5.3e12]])


def test_a_device_with_no_peak_numbers_gives_nan_and_a_warning():
    gf, _, _, devices = proton_viewer.read(CUDA)
    devices = {"CUDA": {**devices["CUDA"], "0": {**devices["CUDA"]["0"], "arch": "75"}}}  # foo1's device
    with pytest.warns(UserWarning, match="arch '75'"):
        flops = proton_viewer.get_min_time_flops(gf.dataframe, devices)
    assert np.isnan(flops["min_time"].iloc[2])
    assert flops["min_time"].iloc[0] == 0.0 and flops["min_time"].iloc[1] > 0


# --- format_frames / filter_frames ---------------------------------------------------------------

@pytest.mark.parametrize("option, expected", [
    ("full", "/home/user/projects/example.py/test.py:1@foo"),
    ("file_function_line", "test.py:1@foo"),
    ("function_line", "1@foo"),
    ("file_function", "test.py@foo"),
])
def test_format_frames_rewrites_python_frame_names(option, expected):
    gf, *_ = proton_viewer.read(FRAME)
    assert proton_viewer.format_frames(gf, option) is gf
    assert names(gf)[2] == expected and names(gf).count(expected) == 1
    if option != "file_function":  # which makes "ROOT" "ROOT@ROOT", as Proton's does
        assert names(gf) == ["ROOT", "test0", expected, "test1"]


def test_format_frames_rejects_an_unknown_format():
    gf, *_ = proton_viewer.read(FRAME)
    with pytest.raises(ValueError, match="unknown frame format 'short'"):
        proton_viewer.format_frames(gf, "short")


@pytest.mark.parametrize("option", ["include", "exclude"])
def test_filter_frames_keeps_test0_and_drops_test1(option):
    gf, *_ = proton_viewer.read(FRAME)
    patterns = {"include": ".*test0.*", "exclude": ""} if option == "include" else {"include": "", "exclude": ".*test1.*"}
    filtered = proton_viewer.filter_frames(gf, **patterns)
    assert names(filtered) == ["ROOT", "test0", "/home/user/projects/example.py/test.py:1@foo"]
    assert names(gf) == ["ROOT", "test0", "/home/user/projects/example.py/test.py:1@foo", "test1"]  # unchanged


def test_include_keeps_the_paths_through_matches_and_derived_totals_as_lepton_view():
    gf, _columns = proton_viewer.parse(["time/ns"], LEAVES, include=".*kernel_2.*")
    assert names(gf) == ["ROOT", "kernel_2_1_1", "kernel_2_2_1", "kernel_2_3_1", "kernel_2_2_2"]
    # proton-viewer: ROOT keeps the unfiltered total in the derived column ...
    np.testing.assert_allclose(gf.dataframe["time/ns (inc)"], [225873672, 24215210, 1040322, 1040322, 23174888])
    # ... while the sum of the raw metric is taken again over what is left
    assert gf.dataframe["time (ns) (inc)"].iloc[0] == 24215210.0


def test_a_threshold_keeps_the_frames_at_or_above_it_on_the_given_metric():
    gf, _columns = proton_viewer.parse(["time/ns"], LEAVES, threshold=30_000_000)
    assert names(gf) == ["ROOT", "kernel_1_1_1", "kernel_1_2_2", "kernel_3_1_1", "kernel_3_2_2"]
    with pytest.raises(ValueError, match="a threshold needs the metric"):
        proton_viewer.filter_frames(gf, threshold=1.0)


def test_filters_match_the_names_after_format_frames():
    gf, *_ = proton_viewer.read(FRAME)
    proton_viewer.format_frames(gf, "file_function_line")
    assert names(proton_viewer.filter_frames(gf, include="test.py")) == ["ROOT", "test0", "test.py:1@foo"]


def test_a_filter_that_leaves_nothing_says_so():
    gf, *_ = proton_viewer.read(FRAME)
    with pytest.raises(FilterError, match="no frame matches --include 'nothing'"):
        proton_viewer.filter_frames(gf, include="nothing")


def test_parse_lists_the_derived_columns_in_the_frames_metrics():
    gf, columns = proton_viewer.parse(["time/s"], TRITON)
    assert columns == ["time/s (inc)"]
    assert all(column in gf.inc_metrics or column in gf.exc_metrics for column in columns)


# --- print_tree: proton-viewer's text, and lepton-view's ----------------------------------------------

def reference_cases() -> list[tuple[list[str], str]]:
    body = "\n".join(line for line in REFERENCE.read_text().split("\n") if not line.startswith("#"))
    parts = re.split(r"^=== (.+)$\n", body, flags=re.MULTILINE)
    return [(parts[i].split(), parts[i + 1]) for i in range(1, len(parts), 2)]


def api_output(args: list[str], capsys) -> str:
    """What the API prints for proton-viewer's command-line arguments, driven as Proton's main()."""
    *options, file_name = args
    path = str(EXAMPLES / file_name)
    flags = dict(zip(options[::2], options[1::2]))
    if "-l" in options:
        proton_viewer.show_metrics(path)
    else:
        threshold = float(flags["-t"]) if "-t" in flags else None
        gf, columns = proton_viewer.parse(flags["-m"].split(","), path, flags.get("-i"), flags.get("-e"), threshold)
        proton_viewer.print_tree(gf, columns, int(flags.get("-d", 100)), flags.get("-f"))
    return capsys.readouterr().out


@pytest.mark.parametrize("args, expected", reference_cases(), ids=[" ".join(a) for a, _ in reference_cases()])
def test_the_api_prints_what_proton_viewer_printed(args, expected, capsys):
    """Every number alike; a node without a value shows "-" where proton-viewer prints "nan"."""
    assert api_output(args, capsys) == re.sub(r"\bnan\b", "-", expected)


def test_print_sorted_prints_what_lepton_view_prints(capsys):
    gf, columns = proton_viewer.parse(["time/s", "avg_time/us"], LEAVES)
    proton_viewer.print_tree(gf, columns, print_sorted=True)
    assert capsys.readouterr().out == view("-m", "time/s,avg_time/us", "--print-sorted", LEAVES)


def test_print_tree_sorts_siblings_by_frame_as_lepton_view_after_format_frames(tmp_path, capsys):
    """/z/a.py:1@f sorts before /z/b.py:2@g, but their file_function_line names the other way."""
    document = [{"frame": {"name": "ROOT"}, "metrics": {"time (ns)": 0},
                 "children": [{"frame": {"name": name}, "metrics": {"time (ns)": 10 * i}, "children": []}
                              for i, name in enumerate(["/z/b.py:2@g", "/y/c.py:1@f"], start=1)]}, {}]
    path = tmp_path / "python_frames.json"
    path.write_text(json.dumps(document))
    gf, columns = proton_viewer.parse(["time/ns"], path)
    proton_viewer.print_tree(gf, columns, format="file_function_line")
    assert capsys.readouterr().out == view("-m", "time/ns", "-f", "file_function_line", str(path))


def test_a_negative_byte_sum_prints_protons_overflow_warning(tmp_path, capsys):
    document = json.loads(Path(CUDA).read_text())
    document[0]["children"][0]["metrics"]["bytes"] = -1e9
    path = tmp_path / "overflow.json"
    path.write_text(json.dumps(document))
    gf, columns = proton_viewer.parse(["bytes"], path)
    proton_viewer.print_tree(gf, columns)
    assert "Warning: Negative byte values detected" in capsys.readouterr().out


# --- apply_diff_profile ------------------------------------------------------------------------------

def test_diff_of_equal_times_is_zero(capsys):
    gf, columns = proton_viewer.parse(["time/ns"], CUDA)
    diff = proton_viewer.apply_diff_profile(gf, columns, HIP, ["time/ns"], None, None, None)
    assert diff.dataframe["time/ns (inc)"].tolist() == [0.0] * 4
    proton_viewer.print_tree(diff, columns)
    proton_prints = "0.000 ROOT\n├─ 0.000 foo0\n├─ 0.000 foo1\n└─ 0.000 foo2\n\n"
    assert capsys.readouterr().out == proton_prints


def test_diff_subtracts_the_other_profile_and_marks_frames_on_one_side(tmp_path, capsys):
    document = json.loads(Path(CUDA).read_text())
    document[0]["children"][1]["metrics"]["time (ns)"] = 2 * 204800  # foo1 twice as slow
    document[0]["children"][2]["frame"]["name"] = "bar"  # foo2 only in the first profile
    other = tmp_path / "slower.json"
    other.write_text(json.dumps(document))
    gf, columns = proton_viewer.parse(["time/ns"], CUDA)
    diff = proton_viewer.apply_diff_profile(gf, columns, other, ["time/ns"], None, None, None)
    values = dict(zip(names(diff), diff.dataframe["time/ns (inc)"].tolist()))
    assert values["ROOT"] == 614400 - 819200 and values["foo1"] == -204800 and values["foo2"] == 204800
    assert np.isnan(values["bar"])
    proton_viewer.print_tree(diff, columns)
    out = capsys.readouterr().out  # hatchet's marks, as Proton's print_tree prints them
    assert "204800.000 foo2 ◀" in out and "- bar ▶" in out


# --- the rest of Proton's module -------------------------------------------------------------------

def test_match_available_metrics_gives_dataframe_column_names():
    _, inclusive, exclusive, _ = proton_viewer.read(TRITON)
    assert proton_viewer.match_available_metrics(["TIME", "cpu_time"], inclusive, exclusive) == \
        ["time (ns) (inc)", "cpu_time (ns)"]
    assert proton_viewer.match_available_metrics("count", inclusive, exclusive) == ["count (inc)"]
    with pytest.raises(MetricError, match="unknown metric 'flops'"):
        proton_viewer.match_available_metrics(["flops"], inclusive, exclusive)


def test_remove_frames_prunes_a_document_as_the_loader_does():
    document = json.loads(Path(TRITON).read_text())
    document[0]["children"].append({"frame": {"name": "empty"}, "metrics": {}, "children": []})
    document[0]["children"].append({"frame": {"name": "launched_nothing"}, "metrics": {"cpu_time (ns)": 1},
                                    "children": [{"frame": {"name": "empty"}, "metrics": {}, "children": []}]})
    pruned = proton_viewer.remove_frames(document)

    def walk(node):
        yield node["frame"]["name"]
        for child in node["children"]:
            yield from walk(child)

    assert list(walk(pruned[0])) == ["ROOT", "scope", "triton_kernel"]
    assert pruned[1] == document[1]  # the device block
    assert "__proton_launch_metadata" in list(walk(document[0]))  # the input is left as it was


def test_to_hatchet_gives_a_graphframe_with_the_same_numbers():
    pytest.importorskip("hatchet")
    gf, _columns = proton_viewer.parse(["time/ns", "util"], CUDA)
    hgf = gf.to_hatchet()
    by_name = hgf.dataframe.set_index("name")
    assert by_name.loc["foo1", "time/ns (inc)"] == 204800.0
    np.testing.assert_allclose(by_name.loc["foo0", "util"], 0.247044, rtol=1e-5)
    assert "time/ns (inc)" in hgf.inc_metrics


# --- a notebook -------------------------------------------------------------------------------------

def test_a_notebook_loads_filters_derives_tflops_and_sorts():
    """leaf_nodes.json has flops on ROOT, so they are summed. The kernel_1 subtree:
        kernel_1_1_1 ┬ kernel_1_2_1 (flops 1534939103232) ─ kernel_1_3_1 (24125138 ns)
                     └ kernel_1_2_2 (78190414 ns)"""
    gf, inclusive, exclusive, devices = proton_viewer.read(LEAVES)
    gf = proton_viewer.filter_frames(gf, include="kernel_1")
    metrics = proton_viewer.derive_metrics(gf, ["tflop/s", "time/ms"], inclusive, exclusive, devices)
    assert metrics == ["tflop/s (inc)", "time/ms (inc)"]
    table = gf.dataframe.sort_values(metrics[0], ascending=False)[["name", *metrics]]
    assert table["name"].tolist()[:3] == ["kernel_1_2_1", "ROOT", "kernel_1_1_1"]
    flops, kernel_seconds, subtree_seconds = 1534939103232, 24125138e-9, (24125138 + 78190414) * 1e-9
    by_subtree = flops / subtree_seconds / 1e12  # 15.0 Tflop/s
    assert table[metrics[0]].tolist()[:3] == pytest.approx([flops / kernel_seconds / 1e12, by_subtree, by_subtree])
    assert table[metrics[0]].iloc[3:].isna().all()  # no flops under kernel_1_2_1's siblings: NaN, sorted last
    assert table.loc[table["name"] == "ROOT", "time/ms (inc)"].item() == pytest.approx(subtree_seconds * 1e3)


# --- without pandas ---------------------------------------------------------------------------------

def test_without_pandas_the_api_says_what_to_install_and_lepton_view_still_works(monkeypatch):
    monkeypatch.setitem(sys.modules, "pandas", None)  # `import pandas` now raises ImportError
    with pytest.raises(ImportError) as error:
        proton_viewer.read(CUDA)
    assert str(error.value) == 'lepton.viewer.read needs pandas: pip install "lepton-profiler[pandas]"'
    with pytest.raises(ImportError, match=re.escape('pip install "lepton-profiler[pandas]"')):
        proton_viewer.parse(["time/ns"], CUDA)
    assert view("-m", "time/ns", CUDA).startswith("614400.000 ROOT\n")


def test_a_copy_is_independent_and_tree_takes_one_metric_or_several():
    gf, *_ = proton_viewer.read(CUDA)
    copy = gf.copy()
    copy.dataframe["time (ns) (inc)"] = 0.0
    copy.inc_metrics.append("extra")
    assert gf.dataframe["time (ns) (inc)"].iloc[0] == 614400.0 and "extra" not in gf.inc_metrics
    assert gf.tree("time (ns) (inc)").splitlines()[:2] == ["614400.000 ROOT", "├─ 204800.000 foo0"]
    assert gf.tree(["count (inc)", "time (ns) (inc)"], depth=1) == "12.000 614400.000 ROOT\n\n"


REAL_PROFILES = sorted(p for p in (ROOT / "tests" / "data" / "proton_3_6").glob("*.hatchet")
                       if p.name != "instrumentation.hatchet")  # cycles only: no time to show


@pytest.mark.parametrize("path", REAL_PROFILES, ids=lambda p: p.name)
@pytest.mark.parametrize("metrics", [["time/ms", "util"], ["count", "avg_time/us"]], ids=",".join)
def test_the_api_prints_what_lepton_view_prints_on_real_triton_3_6_profiles(path, metrics, capsys):
    gf, columns = proton_viewer.parse(metrics, path)
    proton_viewer.print_tree(gf, columns, print_sorted=True)
    assert capsys.readouterr().out == view("-m", ",".join(metrics), "--print-sorted", str(path))
