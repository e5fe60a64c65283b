"""The instrumentation backend's launch hook against stand-ins for Triton (`triton_standin`) and
numpy buffers for the device's: where each launch's kernel node lands, with and without
`hook="triton"`, and Proton's `enable_host_buffer` / `host_buffer` read as Proton's tests read them
(test_instrumentation.py: test_tree, test_record, test_select_ids)."""
from __future__ import annotations

import json

import numpy as np
import pytest
from instrumentation_buffers import E, S, launch, slot
from test_cupti_backend import fake_cupti  # noqa: F401  (a fixture)
from triton_standin import LazyDict, call_exit_hook, install_instrumentation

import lepton as proton
from lepton.backends.instrumentation.backend import InstrumentationBackend, InstrumentedKernel
from lepton.backends.instrumentation.sums import ArrayOps
from lepton.hooks import HookManager, InstrumentationHook, LaunchHook
from lepton.runtime.registry import REGISTRY

FUNCTION = 0x5EED  # the CUfunction handle Triton passes as metadata["function"]
# Proton's test_tree kernel: kernel { load_ops { load_x, load_y } }, one warp.
KERNEL = InstrumentedKernel("add_kernel", 128, 1, {0: "kernel", 1: "load_ops", 2: "load_x", 3: "load_y"},
                            {1: 0, 2: 1, 3: 1})
TREE_WARP = [(S, 0, 10), (S, 1, 20), (S, 2, 30), (E, 2, 50), (S, 3, 60), (E, 3, 90), (E, 1, 100), (E, 0, 120)]


@pytest.fixture
def triton(monkeypatch, chained_knobs, scripted_gpu):
    """Triton 3.6's hook chains and what the instrumentation hook installs itself in; the
    backend's device work done on numpy (no torch here)."""
    install_instrumentation(monkeypatch, chained_knobs)
    monkeypatch.setattr(InstrumentationBackend, "_do_start", lambda self: None)
    monkeypatch.setattr(InstrumentationBackend, "_new_chunk", staticmethod(lambda device, n: np.zeros(n, np.uint8)))
    monkeypatch.setattr(InstrumentationBackend, "scratch", lambda self, n: self._take(0, n))
    monkeypatch.setattr(InstrumentationHook, "enable_host_buffer", False)
    monkeypatch.setattr(InstrumentationHook, "host_buffer", None)
    monkeypatch.setattr(InstrumentationHook, "_kernels", {})
    yield chained_knobs
    HookManager.unregister()  # a failed test's hooks, so that the next test starts clean


def run(runtime, slots: list[bytes], name="add_kernel", launch_metadata=None, kernel=KERNEL):
    """One launch as Triton 3.6 makes it: the profile allocator, the enter hooks, the kernel
    (writes `slots`), the exit hooks. `kernel`: what Triton's load hook gave, once (None: nothing
    this time, the kernel was loaded before)."""
    hook = InstrumentationHook._active
    if kernel is not None:
        hook.kernels[FUNCTION] = kernel
    raw, _ = launch(slots)
    address = hook._allocate(len(raw), 128, None)
    metadata = LazyDict({"name": name, "function": FUNCTION, "stream": 0}, launch_metadata)
    runtime.launch_enter_hook(metadata)
    REGISTRY.backends["instrumentation"].view(0, address, len(raw))[:] = raw
    call_exit_hook(runtime, metadata)
    return raw


def children(node) -> dict:
    return {c["frame"]["name"]: c for c in node["children"]}


def read_tree(path="t.hatchet") -> dict:
    with open(path) as f:
        return json.load(f)[0]


def check_scopes(kernel_node) -> None:
    load_ops = children(children(kernel_node)["kernel"])["load_ops"]
    cycles = {name: node["metrics"]["cycles"] for name, node in children(load_ops).items()}
    assert cycles == {"load_x": 20, "load_y": 30}


def test_under_hook_triton_the_launch_metadata_name_is_the_kernel_node(triton):
    """ROOT -> add_1024 -> kernel -> load_ops -> {load_x, load_y} (Proton's test_tree[triton])."""
    proton.start("t", backend="instrumentation", hook="triton")
    run(triton, [slot([TREE_WARP], seg_entries=8)], launch_metadata=lambda: {"name": "add_1024"})
    proton.finalize()
    root = read_tree()
    assert list(children(root)) == ["add_1024"]
    check_scopes(root["children"][0])


def test_without_the_hook_the_kernel_node_is_the_compiled_kernel(triton):
    proton.start("t", backend="instrumentation")
    run(triton, [slot([TREE_WARP], seg_entries=8)], launch_metadata=lambda: {"name": "add_1024"})
    proton.finalize()
    root = read_tree()
    assert list(children(root)) == ["add_kernel"]
    check_scopes(root["children"][0])


def test_launches_of_one_kernel_under_scopes_in_turn_each_land_under_their_own_scope(triton):
    """The hook remembers where a kernel's node is under each call path: a launch under `b`
    between two under `a` must not take `a`'s node, nor a later session's launch another's."""
    for _ in range(2):  # the second session finds the nodes the first made
        proton.start("t", backend="instrumentation")
        for name in ("a", "b", "a"):
            with proton.scope(name):
                run(triton, [slot([TREE_WARP], seg_entries=8)])
        run(triton, [slot([TREE_WARP], seg_entries=8)])
        proton.finalize()
        root = read_tree()
        assert sorted(children(root)) == ["a", "add_kernel", "b"]
        def kernel_cycles(node):  # of the `kernel` scope: 110 a launch
            return children(children(node)["add_kernel"])["kernel"]["metrics"]["cycles"]

        assert [kernel_cycles(node) for node in (children(root)["a"], children(root)["b"], root)] == [220, 110, 110]
        check_scopes(children(children(root)["b"])["add_kernel"])


def test_with_a_cupti_session_beside_it_the_device_sums_are_in_no_profile(triton, fake_cupti, monkeypatch):
    """Proton's test_multi_session: the decode's sums run torch kernels on the GPU (here a scripted
    CUPTI launch in `ArrayOps.words`); the CUPTI profile's first child is still the user's kernel."""
    words = ArrayOps.words

    def words_on_the_device(*args):
        fake_cupti["cupti"].launch(0x7F00_0000_2000)  # torch's kernel
        return words(*args)

    monkeypatch.setattr(ArrayOps, "words", staticmethod(words_on_the_device))
    proton.start("inst", backend="instrumentation")
    proton.start("driver", backend="cupti")
    run(triton, [slot([TREE_WARP], seg_entries=8)])
    fake_cupti["cupti"].launch(0x7F00_0000_1000)  # the kernel itself (the stand-in launches none)
    proton.finalize()
    assert [c["frame"]["name"] for c in read_tree("driver.hatchet")["children"]] == ["add_kernel"]
    check_scopes(children(read_tree("inst.hatchet"))["add_kernel"])


def test_the_launch_hook_runs_first_though_its_session_started_after_the_instrumentation_one(triton):
    proton.start("t", backend="instrumentation")
    proton.start("f", backend="fake", hook="triton")
    calls = triton.launch_enter_hook.calls
    assert [type(c.__self__) for c in calls] == [LaunchHook, InstrumentationHook]
    run(triton, [slot([TREE_WARP], seg_entries=8)], launch_metadata=lambda: {"name": "add_1024"})
    proton.finalize()
    root = read_tree()
    assert list(children(root)) == ["add_1024"]
    check_scopes(root["children"][0])


def test_an_op_the_launch_hook_left_before_the_instrumentation_session_is_not_used(triton):
    """A launch hooked while no instrumentation hook ran leaves its op on the thread; a later
    instrumented launch that the launch hook skips (filtered out) must not take it."""
    proton.start("f", backend="fake", hook="triton")
    triton.launch_enter_hook(LazyDict({"name": "plain", "function": 1, "stream": 0}, lambda: {"name": "other"}))
    proton.start("t", backend="instrumentation")
    LaunchHook().configure(exclude="add_kernel")
    run(triton, [slot([TREE_WARP], seg_entries=8)])
    proton.finalize()
    assert list(children(read_tree())) == ["add_kernel"]
    check_scopes(children(read_tree())["add_kernel"])


def test_a_kernel_loaded_in_an_earlier_session_is_recorded_in_a_later_one(triton):
    """Triton calls the load hook once per compiled kernel: a session started after the kernel was
    loaded (Proton's test_multi_session restart) still knows its scopes."""
    proton.start("first", backend="instrumentation")
    run(triton, [slot([TREE_WARP], seg_entries=8)])
    proton.finalize()
    proton.start("t", backend="instrumentation")
    run(triton, [slot([TREE_WARP], seg_entries=8)], kernel=None)
    proton.finalize()
    check_scopes(children(read_tree())["add_kernel"])


def u32(buffer, at: int) -> int:
    return int.from_bytes(np.asarray(buffer[at:at + 4]).tobytes(), "little")


@pytest.mark.parametrize("hook", [None, "triton"])
def test_the_host_buffer_is_the_launch_scratch_behind_protons_header_as_test_record_reads_it(triton, hook):
    InstrumentationHook.enable_host_buffer = True
    proton.start("t", backend="instrumentation", hook=hook)
    warps = [[(S, 0, 5 << 32 | 100), (E, 0, 5 << 32 | 400)], [(S, 0, 90), (E, 0, 95)], [], []]
    k = InstrumentedKernel("add_kernel", 256, 4, {0: "load0"}, {})
    raw = run(triton, [slot(warps, seg_entries=4, program_id=p) for p in range(2)], kernel=k)
    host = InstrumentationHook.host_buffer
    # Proton's test_record, line for line (its tensors' .numpy() aside)
    payload_offset = u32(host, 12)
    payload = host[payload_offset:]
    assert u32(payload, 0) == 0xDEADBEEF
    metadata_size = 40 + 4 * 4
    start_tag, start_clock = u32(payload, metadata_size), u32(payload, metadata_size + 4)
    end_tag, end_clock = u32(payload, metadata_size + 8), u32(payload, metadata_size + 12)
    assert start_tag & 0xFFFFF800 == 0 and end_tag & 0xFFFFF800 == 0x80000000
    assert (end_tag & 0x7FF) << 32 | end_clock > (start_tag & 0x7FF) << 32 | start_clock
    # the rest of the header, and the payload as the kernel left it
    assert [u32(host, 4 * i) for i in range(10)] == [1, 4, 56, 56, len(raw), 1, 2, 4, 256, 4]
    assert [u32(host, 40 + 4 * i) for i in range(4)] == [0, 1, 2, 3]
    assert np.asarray(payload).tobytes() == raw.tobytes()
    proton.finalize()
    assert InstrumentationHook.host_buffer is None  # Proton drops it when the hook deactivates


def test_the_host_buffer_lists_the_selected_warps_as_test_select_ids_reads_them(triton):
    InstrumentationHook.enable_host_buffer = True
    mode = proton.mode.Default(sampling_strategy="selective", sampling_options="0,2", granularity="warp")
    proton.start("t", backend="instrumentation", mode=mode)
    k = InstrumentedKernel("add_kernel", 256, 4, {0: "load_ops"}, {})
    run(triton, [slot([[(S, 0, 1), (E, 0, 9)]] * 4, seg_entries=4)], kernel=k)
    host = InstrumentationHook.host_buffer
    uid_num = u32(host, 36)
    assert uid_num == 2 and sorted(u32(host, 40 + 4 * i) for i in range(uid_num)) == [0, 2]
    assert u32(host, 12) == 40 + 4 * 2
    InstrumentationHook.enable_host_buffer = False
    proton.finalize()
    assert InstrumentationHook.host_buffer is not None  # kept: the switch was off at deactivate


def test_without_enable_host_buffer_no_exit_hook_is_installed_and_nothing_is_kept(triton):
    proton.start("t", backend="instrumentation")
    assert triton.launch_exit_hook.calls == []
    run(triton, [slot([TREE_WARP], seg_entries=8)])
    assert InstrumentationHook.host_buffer is None
    proton.finalize()


def test_protons_hooks_module_has_the_instrumentation_hook_and_its_switches():
    assert proton.hooks.InstrumentationHook is InstrumentationHook
    assert InstrumentationHook.enable_host_buffer is False and InstrumentationHook.host_buffer is None


def test_a_trace_of_two_one_warp_kernels_lists_each_kernels_scopes_outermost_first(triton):
    """Proton's test_trace: events 0-3 are kernel, load_ops of add_kernel, then of sub_kernel."""
    proton.start("t", backend="instrumentation", data="trace")
    warp = [(S, 0, 100), (S, 1, 120), (E, 1, 180), (E, 0, 200)]
    for name in ("add_kernel", "sub_kernel"):
        k = InstrumentedKernel(name, 128, 1, {0: "kernel", 1: "load_ops"}, {1: 0})
        run(triton, [slot([warp], seg_entries=4)], name=name, kernel=k)
    proton.finalize()
    with open("t.chrome_trace") as f:
        events = json.load(f)["traceEvents"]
    assert [(e["name"], e["cat"]) for e in events[:4]] == [
        ("kernel", "add_kernel"), ("load_ops", "add_kernel"), ("kernel", "sub_kernel"), ("load_ops", "sub_kernel")]


def test_the_profile_says_under_roots_lepton_key_how_each_kernels_launches_were_decoded(triton):
    proton.start("t", backend="instrumentation")
    for _ in range(2):
        run(triton, [slot([TREE_WARP], seg_entries=8)])
    run(triton, [slot([TREE_WARP[:-1]], seg_entries=8)])  # `kernel` never closed
    proton.finalize()
    assert read_tree()["lepton"]["instrumentation_paths"] == {
        "add_kernel": {"buffer": "", "device_sums": 0, "host_decoded": {"unpaired record": 3}}}
