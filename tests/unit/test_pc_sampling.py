"""Instruction sampling without a GPU: synthetic `CUpti_PCSamplingData` buffers, laid out as CUPTI
13 lays them out, through the real decoder, the attribution and the hatchet writer."""
from __future__ import annotations

import io
import time
from pathlib import Path

import numpy as np
import pytest
from twins import pc_samples as syn

from lepton.backends.cupti.pcsampling import layout as L
from lepton.backends.cupti.pcsampling.attribute import SampleAttributor, split
from lepton.backends.cupti.pcsampling.decode import (
    DecodeError,
    SampleBuffers,
    StallTable,
    by_line,
    metrics_of,
)
from lepton.model.aggregate import kernel_paths
from lepton.model.paths import PathTable
from lepton.model.profile import Profile
from lepton.model.records import KernelBatch
from lepton.runtime.session import Session
from lepton.writers.hatchet import to_literal

STALLED = [m for m in L.PROTON_STALL_METRICS]


def test_cupti_stall_names_become_protons_metric_names():
    assert L.stall_metric("smsp__pcsamp_warps_issue_stalled_long_scoreboard") == ("stalled_long_scoreboard", False)
    assert L.stall_metric("smsp__pcsamp_warps_issue_stalled_long_scoreboard_not_issued") == \
        ("stalled_long_scoreboard", True)
    assert L.stall_metric("smsp__pcsamp_warps_issue_stalled_no_instructions") == ("stalled_no_instruction", False)
    assert L.stall_metric("smsp__pcsamp_warps_issue_stalled_not_selected") == ("stalled_not_Selected", False)
    assert L.stall_metric("smsp__pcsamp_warps_issue_stalled_gmma") == ("stalled_gmma", False)


@pytest.mark.parametrize("mode, k", [("pcsampling", 10), ("pcsampling:interval=1000", 10),
                                     ("pcsampling:interval=1", 5), ("pcsampling:interval=65536", 16),
                                     ("pcsampling:interval=3000", 12), ("pcsampling:interval=99999999999", 31)])
def test_the_interval_maps_to_the_nearest_power_of_two_cycles(mode, k):
    assert L.period_log2(mode) == k


def test_the_mode_objects_string_is_what_the_backend_parses():
    from lepton.mode import PCSampling

    assert L.period_log2(str(PCSampling(interval=16384))) == 14


def filled(pcs, **kw):
    buffers = SampleBuffers(8, len(syn.REASONS))
    syn.fill(buffers, pcs, **kw)
    return buffers


FOO, BAR = syn.c_string("foo"), syn.c_string("bar")


def test_the_decoder_reads_every_pc_and_stall_reason_with_samples():
    b = filled([(7, FOO, 0x10, [(0, 5), (1, 3)]), (7, FOO, 0x20, [(2, 4), (9, 0)]), (8, BAR, 0x0, [(7, 2)])],
               dropped=6, remaining=2)
    d = b.decode()
    assert d.num_pcs == 3 and d.remaining_pcs == 2 and d.dropped_samples == 6 and d.total_samples == 20
    assert d.pc_offset.tolist() == [0x10, 0x10, 0x20, 0x8 * 0]
    assert d.reason.tolist() == [0, 1, 2, 7] and d.samples.tolist() == [5, 3, 4, 2]  # zero counts dropped
    assert d.cubin_crc.tolist() == [7, 7, 7, 8]


def test_a_moved_stall_array_is_a_loud_error():
    b = filled([(7, FOO, 0x10, [(0, 5)])])
    b.pcs.view(L.PC_DTYPE)["stall_reason"][0] += 8
    with pytest.raises(DecodeError, match="moved a PC's stall-reason array"):
        b.decode()


def table():
    return StallTable(*syn.reason_table())


def lines(crc, fn, offset):
    return {0x10: "/src/k.py:3@foo", 0x20: "/src/k.py:4@foo", 0x30: "/src/k.py:4@foo"}.get(offset, "")


def test_not_issued_reasons_count_in_num_samples_only():
    b = filled([(7, FOO, 0x10, [(0, 5), (1, 3), (4, 2)]), (7, FOO, 0x20, [(2, 4), (3, 1)]),
                (7, FOO, 0x30, [(7, 6)]), (7, FOO, 0x40, [(0, 1)])])
    counts = by_line(b.decode(), table(), syn_name, lines)
    assert set(counts.counts) == {("foo", "/src/k.py:3@foo"), ("foo", "/src/k.py:4@foo"), ("foo", "")}
    m3 = metrics_of(counts.metrics, counts.counts[("foo", "/src/k.py:3@foo")])
    assert m3["num_samples"] == 10 and m3["num_stalled_samples"] == 5 and m3["stalled_long_scoreboard"] == 5
    assert m3["stalled_no_instruction"] == 0
    m4 = metrics_of(counts.metrics, counts.counts[("foo", "/src/k.py:4@foo")])  # two PCs, one line
    assert m4["num_samples"] == 11 and m4["stalled_selected"] == 4 and m4["stalled_wait"] == 6
    for m in (m3, m4):
        assert m["num_stalled_samples"] == sum(v for k, v in m.items() if k.startswith("stalled_"))
        assert set(STALLED) <= set(m)  # every Proton counter, zeros included


def syn_name(address):
    import ctypes

    return ctypes.string_at(address).decode()


def test_split_is_exact_and_proportional():
    counts = np.array([[7, 1], [0, 3], [10, 0]])
    shares = split(counts, np.array([3.0, 1.0]))
    assert (shares.sum(axis=0) == counts).all()
    assert shares[0].tolist() == [[5, 1], [0, 2], [8, 0]]
    assert (split(np.array([4]), np.array([0.0, 0.0])).ravel() == [2, 2]).all()  # no time: by count


def batch(paths, rows, now):
    """rows: (parent path, kernel name, duration ns)"""
    names = sorted({r[1] for r in rows})
    n = len(rows)
    return KernelBatch.from_columns(
        parent_path=[r[0] for r in rows], names=names, name_id=[names.index(r[1]) for r in rows],
        start_ns=[now + 1000 * i for i in range(n)], end_ns=[now + 1000 * i + r[2] for i, r in enumerate(rows)],
        launch_ns=[now] * n, correlation_id=list(range(1, n + 1)))


def profile_of(paths, b):
    s = Session(0, "x", "shadow", "tree", backend=None)
    s.set_active(True)
    s.ingest(b, *kernel_paths(paths, b))
    return to_literal(Profile(paths, s.current))


def child(node, name):
    return next(c for c in node["children"] if c["frame"]["name"] == name)


def test_samples_of_a_kernel_launched_from_two_scopes_split_by_kernel_time():
    """
    ROOT                               ROOT
      a: foo x2 (300 ns)     ->          a/foo: /src/k.py:3@foo 75% of the samples, kernel node: no-line
      b: foo x1 (100 ns)                 b/foo: /src/k.py:3@foo 25%
    """
    paths = PathTable()
    a, b_ = paths.child(0, "a"), paths.child(0, "b")
    now = time.time_ns() + 10**9  # after profile_of's session starts, however loaded the machine
    kb = batch(paths, [(a, "foo", 100), (b_, "foo", 100), (a, "foo", 200), (a, "other", 50)], now)
    att = SampleAttributor(period_log2=10)
    buf = filled([(7, FOO, 0x10, [(0, 400), (1, 40)]), (7, FOO, 0x40, [(2, 8)])])
    att.add(by_line(buf.decode(), table(), syn_name, lines))
    att.attach(kb)
    assert att.pending_samples() == 0 and att.attributed == 448
    tree = profile_of(paths, kb)
    root = tree[0]
    assert root["metrics"]["num_samples"] == 0 and root["metrics"]["stalled_long_scoreboard"] == 0
    assert root["metrics"]["pcsampling_period_log2"] == 10
    fa = child(child(root, "a"), "foo")
    fb = child(child(root, "b"), "foo")
    assert fa["metrics"]["count"] == 2 and fb["metrics"]["count"] == 1
    la, lb = child(fa, "/src/k.py:3@foo")["metrics"], child(fb, "/src/k.py:3@foo")["metrics"]
    assert la["num_samples"] == 330 and lb["num_samples"] == 110
    assert la["stalled_long_scoreboard"] == 300 and lb["stalled_long_scoreboard"] == 100
    assert la["num_stalled_samples"] == sum(v for k, v in la.items() if k.startswith("stalled_"))
    assert fa["metrics"]["num_samples"] + fb["metrics"]["num_samples"] == 8  # no line: on the kernel node
    assert "num_samples" not in child(child(root, "a"), "other")["metrics"]


def test_samples_of_a_function_not_in_the_batch_wait_for_one_that_has_it():
    paths = PathTable()
    now = time.time_ns() + 10**9  # after profile_of's session starts, however loaded the machine
    att = SampleAttributor(period_log2=12)
    att.add(by_line(filled([(8, BAR, 0x10, [(0, 4)])]).decode(), table(), syn_name, lines))
    first = batch(paths, [(0, "foo", 100)], now)
    att.attach(first)
    assert not first.launch_metrics and att.pending_samples() == 4
    second = batch(paths, [(0, "bar", 100)], now)
    att.attach(second)
    assert att.pending_samples() == 0
    tree = profile_of(paths, second)
    assert child(child(tree[0], "bar"), "/src/k.py:3@foo")["metrics"]["num_samples"] == 4


def test_the_cupti_backend_takes_pcsampling_and_refuses_other_modes():
    from lepton.backends.cupti.pcsampling.backend import PCSamplingBackend, make_cupti_backend
    from lepton.errors import UsageError

    with pytest.raises(UsageError, match="unsupported mode: instrumentation"):
        make_cupti_backend("instrumentation", cupti=object(), driver=object())
    b = make_cupti_backend("pcsampling:interval=4096", cupti=object(), driver=object())
    assert isinstance(b, PCSamplingBackend) and b.period_log2 == 12 and b.mode == "pcsampling:interval=4096"


def test_the_lines_view_lists_a_kernels_hottest_lines_with_shares_and_stalls():
    from lepton.viewer.lines import show_lines

    profile = Path(__file__).resolve().parents[1] / "data" / "proton_3_6" / "pcsampling_lines.hatchet"
    stdout, stderr = io.StringIO(), io.StringIO()
    assert show_lines(str(profile), 2, "^step/work", stdout, stderr) == 0
    out = stdout.getvalue()
    assert out.startswith("step/work  (293730 samples)")
    assert "78.5%  /home/user/bench/in_kernel_workload.py:34@work" in out
    assert "stalls: selected 62%, long_scoreboard 28%" in out


class _FakeFunction:
    def __init__(self, status):
        self.status = status

    def __call__(self, *args):
        return self.status


def _fake_cupti(functions, version=24, status=0):
    import types

    from lepton.backends.cupti.pcsampling.backend import _FUNCTIONS

    lib = types.SimpleNamespace(**{name: _FakeFunction(status) for name in _FUNCTIONS if name in functions})
    return types.SimpleNamespace(lib=lib, version=version, path="/opt/libcupti.so.13", check=lambda s, what: None)


def test_a_cupti_without_the_pc_sampling_api_is_one_clear_line():
    from lepton.backends.cupti.pcsampling.backend import PCSamplingApi
    from lepton.errors import BackendError

    with pytest.raises(BackendError, match=r"^pcsampling needs CUPTI 12.4 or newer .* /opt/libcupti.so.13 .*lacks "
                                           r"cuptiPCSamplingEnable") as raised:
        PCSamplingApi(_fake_cupti(functions=()))
    assert "\n" not in str(raised.value)


@pytest.mark.parametrize("status, message", [(35, r"INSUFFICIENT_PRIVILEGES.*NVreg_RestrictProfilingToAdminUsers=0"),
                                             (27, r"not supported here .*compute capability 7.0")])
def test_no_counter_permission_or_no_support_is_one_line_naming_the_fix(status, message):
    from lepton.backends.cupti.pcsampling.backend import _FUNCTIONS, PCSamplingApi
    from lepton.errors import BackendError

    api = PCSamplingApi(_fake_cupti(functions=_FUNCTIONS, status=status))
    with pytest.raises(BackendError, match=message) as raised:
        api.ctx_call("cuptiPCSamplingEnable", 0)
    assert "\n" not in str(raised.value)

