"""viewer.derive: Proton's test_viewer.py ported (same example files, same expected arrays), plus
the inclusive/exclusive rules and the errors."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from lepton.viewer.derive import (
    FORMULAS,
    Catalog,
    MetricError,
    derive,
    negative_byte_warning,
    seconds_at_peak,
)
from lepton.viewer.load import from_document, load

EXAMPLES = Path(__file__).resolve().parents[2] / "tests" / "data" / "proton_examples"
TRITON = EXAMPLES / "triton.json"
CUDA = EXAMPLES / "cuda.json"
HIP = EXAMPLES / "hip.json"


def columns(path, metrics):
    derived = derive(load(path), metrics)
    return {column.label: column.values for column in derived.columns}


def check(metrics, expected, path, rtol=1e-7, atol=1e-6):
    """Proton's `derivation_metrics_test`: every derived column against its expected array."""
    got = columns(path, metrics)
    assert list(got) == list(expected)
    for label, values in expected.items():
        np.testing.assert_allclose(got[label], values, rtol=rtol, atol=atol)


def test_time_derivation():
    # Proton's expected_data also lists "time/% (inc)": [100, 50, 50, 50], which its test never
    # checks (time/% is not requested); the real values are in test_percent_of_an_inclusive_metric.
    check(["time/s", "time/ms", "time/us", "time/ns"], {
        "time/s (inc)": [0.000614, 0.0002048, 0.0002048, 0.0002048],
        "time/ms (inc)": [0.6144, 0.2048, 0.2048, 0.2048],
        "time/us (inc)": [614.4, 204.8, 204.8, 204.8],
        "time/ns (inc)": [614400.0, 204800.0, 204800.0, 204800.0],
    }, CUDA)


def test_avg_time_derivation():
    check(["avg_time/s", "avg_time/ms", "avg_time/us", "avg_time/ns"], {
        "avg_time/s (inc)": [0.0000512, 0.0000205, 0.000205, 0.000205],
        "avg_time/ms (inc)": [0.0512, 0.02048, 0.2048, 0.2048],
        "avg_time/us (inc)": [51.2, 20.48, 204.8, 204.8],
        "avg_time/ns (inc)": [51200.0, 20480.0, 204800.0, 204800.0],
    }, CUDA)


def test_util():
    check(["util"], {"util": [np.nan, 0.247044, 0.147830, 0.118451]}, CUDA)


def test_bytes_derivation():
    check(["byte/s", "gbyte/s", "tbyte/s"], {
        "byte/s (inc)": [1.953125e+11, 4.88281250e+11, 4.88281250e+10, 4.88281250e+10],
        "gbyte/s (inc)": [195.3125, 488.28125, 48.828125, 48.828125],
        "tbyte/s (inc)": [0.195312, 0.48828125, 0.04882812, 0.04882812],
    }, CUDA)


def test_flops_derivation():
    check(["flop8/s", "gflop8/s", "tflop8/s"], {
        "flop8/s (inc)": [3.417969e+14, 4.88281250e+14, 4.88281250e+13, 4.88281250e+14],
        "gflop8/s (inc)": [341796.875, 488281.25, 48828.125, 488281.25],
        "tflop8/s (inc)": [341.796875, 488.28125, 48.828125, 488.28125],
    }, CUDA)


def rows_of_device(tree, device_id):
    return tree.texts["device_id"] == device_id


def test_min_time_flops():
    tree = load(CUDA)
    flop_seconds, _, warnings = seconds_at_peak(tree)
    assert warnings == []
    np.testing.assert_allclose(flop_seconds[rows_of_device(tree, "0")], [0.000025], atol=1e-5)  # sm89
    np.testing.assert_allclose(flop_seconds[rows_of_device(tree, "1")], [0.00005], atol=1e-5)  # sm90
    np.testing.assert_allclose(flop_seconds[rows_of_device(tree, "2")], [0.000025], atol=1e-5)  # sm100
    tree = load(HIP)
    flop_seconds, _, _ = seconds_at_peak(tree)
    np.testing.assert_allclose(flop_seconds[rows_of_device(tree, "0")], [0.000055], atol=1e-5)  # CDNA2
    np.testing.assert_allclose(flop_seconds[rows_of_device(tree, "1")], [0.000038], atol=1e-5)  # CDNA3
    np.testing.assert_allclose(flop_seconds[rows_of_device(tree, "2")], [0.000217], atol=1e-5)  # CDNA4


def test_min_time_bytes():
    tree = load(CUDA)
    _, byte_seconds, _ = seconds_at_peak(tree)
    np.testing.assert_allclose(byte_seconds[rows_of_device(tree, "0")], [9.91969e-06], atol=1e-6)  # sm89
    np.testing.assert_allclose(byte_seconds[rows_of_device(tree, "1")], [2.48584e-05], atol=1e-6)  # sm90
    tree = load(HIP)
    _, byte_seconds, _ = seconds_at_peak(tree)
    np.testing.assert_allclose(byte_seconds[rows_of_device(tree, "0")], [3.125e-06], atol=1e-6)  # CDNA2
    np.testing.assert_allclose(byte_seconds[rows_of_device(tree, "1")], [1.93378e-05], atol=1e-6)  # CDNA3
    np.testing.assert_allclose(byte_seconds[rows_of_device(tree, "2")], [0.000125], atol=1e-6)  # CDNA4


def test_exclusive_metrics_are_per_node():
    """cpu_time is not on ROOT, so it is not summed: only `scope` has a value (Proton's
    test_exclusive_metrics sorts by it and finds `scope` first)."""
    check(["cpu_time/ns", "cpu_time/us"], {"cpu_time/ns (inc)": [np.nan, 12345.0, np.nan],
                                          "cpu_time/us (inc)": [np.nan, 12.345, np.nan]}, TRITON)


def test_metrics_on_root_are_summed_over_subtrees():
    """triton.json puts "bytes": 0 on ROOT, so bytes is inclusive there: scope gets its kernel's 2."""
    check(["bytes", "count"], {"bytes (inc)": [2.0, 2.0, 2.0], "count (inc)": [1.0, 1.0, 1.0]}, TRITON)


def test_a_summed_subtree_with_no_value_at_all_stays_nan():
    """
    ROOT {count, time} ─┬─ empty_scope {m} ── s2 {m}     (no time below: NaN, not 0)
                        └─ k {time 5}
    """
    tree = from_document([{"frame": {"name": "ROOT"}, "metrics": {"count": 0, "time (ns)": 0}, "children": [
        {"frame": {"name": "empty_scope"}, "metrics": {"m": 1}, "children": [
            {"frame": {"name": "s2"}, "metrics": {"m": 1}, "children": []}]},
        {"frame": {"name": "k"}, "metrics": {"time (ns)": 5, "count": 1}, "children": []}]}, {}])
    values = derive(tree, ["time/ns"]).columns[0].values
    np.testing.assert_array_equal(values, [5.0, np.nan, np.nan, 5.0])


def test_percent_of_an_inclusive_metric_is_relative_to_root():
    check(["time/%"], {"time/% (inc)": [100.0, 100 / 3, 100 / 3, 100 / 3]}, CUDA)


def test_percent_of_a_per_node_metric_is_relative_to_the_column_total():
    check(["cpu_time/%"], {"cpu_time/%": [np.nan, 100.0, np.nan]}, TRITON)


def test_names_are_case_insensitive_and_may_omit_the_unit():
    assert list(columns(CUDA, ["TIME/ms", "Count", "time (ns)"])) == ["TIME/ms (inc)", "count (inc)", "time (ns) (inc)"]


def test_the_formula_table_covers_every_proton_derived_metric():
    expected = {f"{kind}/{unit}" for kind in ("time", "avg_time", "cpu_time", "avg_cpu_time")
                for unit in ("s", "ms", "us", "ns")}
    expected |= {f"{p}byte/s" for p in ("", "g", "t")}
    expected |= {f"{p}flop{w}/s" for p in ("", "g", "t") for w in ("", "8", "16", "32", "64")}
    assert set(FORMULAS) == expected


def test_a_flop_rate_reads_the_flops_of_its_width():
    document = [{"frame": {"name": "ROOT"}, "metrics": {"count": 0, "time (ns)": 0}, "children": [
        {"frame": {"name": "k"}, "metrics": {"time (ns)": 2e9, "flops16": 4e12, "flops": 1e12}, "children": []}]}, {}]
    got = {c.label: c.values[1] for c in derive(from_document(document), ["tflop16/s", "gflop/s"]).columns}
    assert got == {"tflop16/s (inc)": 2.0, "gflop/s (inc)": 500.0}


def test_catalog_lists_inclusive_then_exclusive_metrics_as_proton_viewer():
    catalog = Catalog.of(load(TRITON))
    assert catalog.inclusive == ["bytes", "count", "time (ns)"]
    assert catalog.exclusive == ["name", "cpu_time (ns)", "device_id", "device_type"]


def test_an_unknown_metric_names_the_metrics_that_exist():
    with pytest.raises(MetricError, match=r"unknown metric 'flops'; this profile has: bytes, count, time .*cpu_time"):
        derive(load(TRITON), ["tflop/s"])


def test_a_text_metric_cannot_be_shown():
    with pytest.raises(MetricError, match="not numeric"):
        derive(load(TRITON), ["device_id"])


def test_an_unsupported_percent_unit_is_refused():
    with pytest.raises(MetricError, match="unsupported unit 'foo'"):
        derive(load(TRITON), ["time/foo"])


def test_util_on_an_arch_without_peak_numbers_is_nan_with_a_warning():
    document = [{"frame": {"name": "ROOT"}, "metrics": {"count": 0, "time (ns)": 0}, "children": [
        {"frame": {"name": "k"}, "metrics": {"time (ns)": 1000, "count": 1, "device_id": "0",
                                            "device_type": "CUDA", "flops16": 1e6, "bytes": 10}, "children": []}]},
                {"CUDA": {"0": {"arch": "75", "bus_width": 256, "clock_rate": 1, "memory_clock_rate": 1, "num_sms": 1}}}]
    derived = derive(from_document(document), ["util"])
    assert np.isnan(derived.columns[0].values).all()
    assert derived.warnings == ["util is nan on CUDA device 0: no peak FLOP/s for CUDA arch '75'"]


def test_negative_byte_counts_raise_protons_overflow_warning():
    document = [{"frame": {"name": "ROOT"}, "metrics": {"bytes": 0}, "children": [
        {"frame": {"name": "k"}, "metrics": {"bytes": -5}, "children": []}]}, {}]
    columns_ = derive(from_document(document), ["bytes"]).columns
    assert negative_byte_warning(columns_) == (
        "Warning: Negative byte values detected, this is usually the result of a datatype overflow")
    assert negative_byte_warning(derive(load(TRITON), ["bytes"]).columns) is None


# ------------------------------------------------------------ the metric grammar, without a profile

@pytest.mark.parametrize("text", [
    "time/ms", "Time/MS, util", "avg_time/us,cpu_time/ns,avg_cpu_time/s", "flop/s,flop8/s,gflop16/s,tflop64/s",
    "byte/s,gbyte/s,tbyte/s", "time/%,count/%", "time (ns),count,bytes", " util ",
])
def test_metric_lists_in_the_grammar_pass_the_check(text):
    from lepton.viewer import check_metric_specs

    assert check_metric_specs(text) is None


@pytest.mark.parametrize("text, message", [
    ("", r"empty metric name \(item 1 of ''\)"),
    ("time/ms,,util", r"empty metric name \(item 2 of"),
    ("time/ms,", "empty metric name"),
    (" , ", "empty metric name"),
    ("time/hours", r"unsupported unit 'hours' in 'time/hours' \(time takes /ns, /us, /ms, /s or /%\)"),
    ("util,avg_time/min", r"unsupported unit 'min' .*avg_time takes .* \(item 2 of"),
    ("flop16/ms", r"flop16 takes /s or /%"),
    ("gbyte/ms", r"gbyte takes /s or /%"),
    ("time/ms/%", "unsupported unit 'ms/%'"),
    ("count/x", r"only <metric>/% and the derived metrics"),
    ("/%", "names no metric before /%"),
])
def test_bad_metric_lists_are_refused_in_one_line_before_any_profile(text, message):
    from lepton.viewer import check_metric_specs

    with pytest.raises(MetricError, match=message) as info:
        check_metric_specs(text)
    assert "\n" not in str(info.value) and str(info.value).startswith("bad metric list: ")


@pytest.mark.parametrize("item", ["time/hours", "flop16/ms", "time/ms/%", "count/x", "/%"])
def test_what_the_check_refuses_derive_refuses_too(item):
    """One grammar: metric_kind serves both."""
    with pytest.raises(MetricError, match="unsupported unit|names no metric"):
        derive(load(CUDA), [item])
