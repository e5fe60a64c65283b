"""Instruction sampling's drains, end to end on the CPU: `PCSamplingBackend` over the scripted
libcupti of `test_cupti_backend` and a scripted PC sampling API that fills the buffers Lepton lends
it, as CUPTI does, one `cuptiPCSamplingGetData` at a time. Through `lepton.start/scope/finalize`.

What it pins down: samples drained in many windows while the program runs make the same profile as
one drain at the end; a CUPTI failure in a drain, mid-run or at finalize, leaves a written profile
with every kernel time and the samples drained before it, and one line saying what happened."""
from __future__ import annotations

import contextlib
import json
import time

import pytest
from test_cupti_backend import FakeCupti, FakeDriver
from twins import pc_samples as syn

import lepton as proton
from lepton.backends import cupti as cupti_package
from lepton.backends.cupti import backend as cupti_backend
from lepton.backends.cupti.bindings import CuptiError
from lepton.backends.cupti.pcsampling import backend as pc_sampling
from lepton.backends.cupti.pcsampling import layout as L
from lepton.backends.cupti.pcsampling.backend import PCSamplingBackend

ADD = 0x7F00_0000_1000  # FakeCupti's kernel named "add_kernel"
CTX, CRC = 0x5000, 0xC0FFEE
ERROR_UNKNOWN = 999
FUNCTION = syn.c_string("add_kernel")
LONG_SCOREBOARD, SELECTED = 0, 2  # reason indices of syn.REASONS


class ScriptedPCSampling:
    """The PC sampling calls of libcupti, scripted: `queue(pcs)` makes samples available, each
    `cuptiPCSamplingGetData` hands over at most `per_get` PCs of them (saying how many remain);
    `fail_gets[i]` is the status the i-th GetData returns instead."""

    def __init__(self, per_get: int = 2) -> None:
        self.backend: PCSamplingBackend | None = None
        self.available: list = []
        self.per_get = per_get
        self.gets = 0
        self.fail_gets: dict[int, int] = {}
        self.disabled = 0
        self.undecoded: list = []  # samples CUPTI's threads still decode: only disabling hands them over

    def queue(self, pcs) -> None:
        self.available.extend(pcs)

    def ctx_call(self, name, ctx):
        assert name == "cuptiPCSamplingEnable" and ctx == CTX
        self.enabled = getattr(self, "enabled", 0) + 1

    def stall_reasons(self, ctx):
        return syn.reason_table()

    def call(self, name, params):
        if name == "cuptiPCSamplingGetData":
            return self._get(params.pcSamplingData)
        if name == "cuptiPCSamplingDisable":  # CUPTI hands what it holds to the configured buffer
            self.disabled += 1
            state = self.backend._contexts.get(params.ctx)
            if state is not None:
                syn.fill(state.flushed, self.available + self.undecoded)
            self.available, self.undecoded = [], []
        return 0

    def _get(self, address) -> int:
        status = self.fail_gets.get(self.gets, 0)
        self.gets += 1
        if status:
            if status == L.ERROR_OUT_OF_MEMORY:
                self.available = []  # what the device's full buffer held is gone
            return status
        buffers = next(c.buffers for c in self.backend._contexts.values() if c.buffers.address == address)
        given, self.available = self.available[:self.per_get], self.available[self.per_get:]
        syn.fill(buffers, given, remaining=len(self.available))
        return 0

    def check(self, status, what):
        if status:
            raise CuptiError(f"{what} failed: CUPTI_ERROR_{status} ({status})", status)

    def cubin_crc(self, cubin):
        return CRC

    def source_line(self, cubin, function, pc_offset):
        return 10 + pc_offset // 16, "k.py", "/src"


class _Backend(PCSamplingBackend):
    """One CUDA context, always current (the scripted driver has no contexts to push)."""

    def _live_contexts(self):
        return [CTX]

    def _current(self, ctx):
        return contextlib.nullcontext()


@pytest.fixture
def sampled(monkeypatch, tmp_path, scripted_gpu):
    """Backend "cupti" as a pcsampling backend over the scripted libraries; the drain thread is
    parked (the tests drain by hand, as it would)."""
    monkeypatch.setattr(pc_sampling, "DRAIN_PERIOD_S", 3600)
    monkeypatch.setattr(cupti_backend, "GRAPH_NODES", cupti_backend.GraphNodePaths())
    monkeypatch.chdir(tmp_path)
    made = {}

    def factory(mode):
        made["cupti"] = FakeCupti()
        made["pcs"] = ScriptedPCSampling()
        backend = _Backend(mode, cupti=made["cupti"], driver=FakeDriver(initialized=True), pcs_api=made["pcs"])
        backend._cubins[CRC] = b"cubin"
        made["pcs"].backend = made["backend"] = backend
        return backend

    monkeypatch.setattr(cupti_package, "make_cupti_backend", factory)  # what the backend table names
    return made


def pcs(offsets, samples=4):
    """PCs of add_kernel at `offsets`, each with `samples` long-scoreboard and 1 selected sample."""
    return [(CRC, FUNCTION, off, [(LONG_SCOREBOARD, samples), (SELECTED, 1)]) for off in offsets]


def run_program(sampled, windows: int, fail_gets=None) -> dict:
    """Two scopes launch add_kernel (3 µs in `a`, 1 µs in `b`), 12 PCs sampled over `windows`
    drains while it runs; returns the profile's tree as {path: metrics}."""
    proton.start("prof", backend="cupti", mode="pcsampling")
    api, cupti = sampled["pcs"], sampled["cupti"]
    api.fail_gets = dict(fail_gets or {})
    with proton.scope("a"):
        cupti.launch(ADD, duration_ns=3000)
    with proton.scope("b"):
        cupti.launch(ADD, duration_ns=1000)
    offsets = [16 * i for i in range(12)]
    per_window = -(-len(offsets) // windows)
    for w in range(windows):
        api.queue(pcs(offsets[w * per_window:(w + 1) * per_window]))
        sampled["backend"]._drain_running()
    proton.finalize()
    return flat(json.load(open("prof.hatchet"))[0])


def flat(node, prefix=()) -> dict:
    out = {}
    for c in node.get("children", []):
        path = (*prefix, c["frame"]["name"])
        out[path] = c["metrics"]
        out.update(flat(c, path))
    return out


def samples(tree: dict) -> int:
    return sum(m.get(L.NUM_SAMPLES, 0) for m in tree.values())


def test_samples_drained_in_many_windows_make_the_profile_one_drain_makes(sampled, capsys):
    one = run_program(sampled, windows=1)
    many = run_program(sampled, windows=6)
    assert samples(one) == 12 * 5
    assert many == one
    a_lines = {k[-1] for k in one if k[:2] == ("a", "add_kernel") and len(k) == 3}
    assert "/src/k.py:10@add_kernel" in a_lines and len(a_lines) == 12
    a = sum(m[L.NUM_SAMPLES] for k, m in one.items() if k[:2] == ("a", "add_kernel") and len(k) == 3)
    assert a == 12 * 4  # per line: 3 of the 4 long-scoreboard samples (a's 3/4 of the time), and the 1
    # selected one by largest remainder
    assert "warning" not in capsys.readouterr().err


def test_a_full_device_buffer_mid_run_loses_that_window_only_and_says_so_once(sampled, capsys):
    # GetData calls of 6 windows of 2 PCs: 0..5, the final drain's 6th; the 3rd window's fails.
    tree = run_program(sampled, windows=6, fail_gets={2: L.ERROR_OUT_OF_MEMORY})
    assert samples(tree) == 10 * 5
    assert tree[("a", "add_kernel")]["count"] == 1 and tree[("b", "add_kernel")]["count"] == 1
    lines = [ln for ln in capsys.readouterr().err.splitlines() if ln.startswith("lepton")]
    assert len(lines) == 1 and "sample buffer filled up (1 times)" in lines[0]


def test_another_cupti_failure_mid_run_keeps_what_was_drained_and_says_what_was_dropped(sampled, capsys):
    tree = run_program(sampled, windows=6, fail_gets={3: ERROR_UNKNOWN})
    assert samples(tree) == 6 * 5  # three windows drained; the drains of that context end there
    assert tree[("a", "add_kernel")]["time (ns)"] == 3000 and tree[("b", "add_kernel")]["time (ns)"] == 1000
    lines = [ln for ln in capsys.readouterr().err.splitlines() if ln.startswith("lepton")]
    assert len(lines) == 1
    assert "instruction sampling stopped: cuptiPCSamplingGetData failed" in lines[0]
    assert "the 30 samples drained before it" in lines[0]
    assert sampled["pcs"].disabled == 1  # sampling was still ended, at finalize's (last) flush


def test_a_failure_in_the_final_drain_still_writes_the_profile_with_every_kernel_time(sampled, capsys):
    proton.start("prof", backend="cupti", mode="pcsampling")
    api, cupti = sampled["pcs"], sampled["cupti"]
    with proton.scope("a"):
        cupti.launch(ADD, duration_ns=3000)
    api.queue(pcs([0, 16]))
    sampled["backend"]._drain_running()
    api.queue(pcs([32]))
    api.fail_gets = {api.gets: L.ERROR_OUT_OF_MEMORY}  # the next GetData: the final drain's
    proton.finalize()
    tree = flat(json.load(open("prof.hatchet"))[0])
    assert tree[("a", "add_kernel")]["time (ns)"] == 3000
    assert samples(tree) == 2 * 5
    lines = [ln for ln in capsys.readouterr().err.splitlines() if ln.startswith("lepton")]
    assert len(lines) == 1 and "sample buffer filled up" in lines[0]


def test_the_drain_thread_drains_while_the_program_runs(sampled, monkeypatch):
    monkeypatch.setattr(pc_sampling, "DRAIN_PERIOD_S", 0.001)
    proton.start("prof", backend="cupti", mode="pcsampling")
    api = sampled["pcs"]
    api.queue(pcs([0, 16, 32]))
    deadline = time.monotonic() + 10
    while sampled["backend"].attributor.drained < 15 and time.monotonic() < deadline:
        time.sleep(0.001)
    assert not api.available and sampled["backend"].attributor.drained == 15
    proton.finalize()


def test_samples_cupti_hands_over_only_when_disabled_still_reach_the_flushed_profile(sampled, capsys):
    """On the H100 CUPTI's threads decoded samples more slowly than the GPU made them: at the end
    of a run millions were still being decoded, and GetData had none of them yet."""
    proton.start("prof", backend="cupti", mode="pcsampling")
    api, cupti = sampled["pcs"], sampled["cupti"]
    with proton.scope("a"):
        cupti.launch(ADD, duration_ns=3000)
    api.queue(pcs([0]))
    sampled["backend"]._drain_running()
    api.undecoded = pcs([16, 32, 48])
    proton.finalize()
    tree = flat(json.load(open("prof.hatchet"))[0])
    assert samples(tree) == 4 * 5
    assert len([k for k in tree if k[:2] == ("a", "add_kernel") and len(k) == 3]) == 4
    assert "warning" not in capsys.readouterr().err


def test_a_flush_mid_run_hands_over_every_sample_and_sampling_goes_on(sampled):
    """Proton's `flush` between two phases: the samples CUPTI still decodes reach the first
    phase's kernels, and the context samples again after it."""
    from lepton.runtime.registry import REGISTRY

    sid = proton.start("prof", backend="cupti", mode="pcsampling")
    api, cupti = sampled["pcs"], sampled["cupti"]
    with proton.scope("a"):
        cupti.launch(ADD, duration_ns=3000)
    api.undecoded = pcs([0, 16])
    REGISTRY.deactivate(sid, flushing=True)
    assert api.disabled == 1 and api.enabled == 2 and sampled["backend"]._contexts
    proton.activate(sid)
    with proton.scope("b"):
        cupti.launch(ADD, duration_ns=1000)
    api.queue(pcs([32]))
    proton.finalize()
    tree = flat(json.load(open("prof.hatchet"))[0])
    a = sum(m.get(L.NUM_SAMPLES, 0) for k, m in tree.items() if k[0] == "a")
    b = sum(m.get(L.NUM_SAMPLES, 0) for k, m in tree.items() if k[0] == "b")
    assert (a, b) == (2 * 5, 5) and api.disabled == 2


def test_a_cubin_lepton_never_saw_is_searched_for_once_not_once_per_pc(sampled, monkeypatch):
    """The search walks every Python object: per PC, it held the GIL for seconds of a drain."""
    walks = []
    monkeypatch.setattr(pc_sampling, "triton_cubins", lambda: walks.append(1) or [])
    proton.start("prof", backend="cupti", mode="pcsampling")
    api = sampled["pcs"]
    unknown = [(0xBAD, FUNCTION, off, [(SELECTED, 1)]) for off in range(0, 320, 16)]
    for window in range(4):
        api.queue(unknown[window * 5:(window + 1) * 5])
        sampled["backend"]._drain_running()
    proton.finalize()
    assert len(walks) == 1
