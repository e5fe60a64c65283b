"""hook="triton" on the CPU: a stand-in `triton.knobs` module and LazyDict drive the real hook,
and the fake backend plays the kernels the launches would produce."""
from __future__ import annotations

import json
import sys
import threading
import types

import pytest
from triton_standin import LazyDict, call_exit_hook, knobs_for_the_hook

import lepton as proton


@pytest.fixture(params=["slot", "chain"])
def knobs(monkeypatch, request):
    """The stand-in `triton.knobs.runtime` with one hook slot (Triton 3.3 to 3.5: the hook reads
    the metadata with `get()`) or with Triton 3.6's chains of hooks (Lepton is the only hook, and
    calls `launch_metadata` itself): every test here runs with both."""
    yield from knobs_for_the_hook(monkeypatch, chain=request.param == "chain")


def launch(knobs, backend, raw_name, meta_fn=None, duration=100):
    md = LazyDict({"name": raw_name, "function": 1, "stream": 0}, meta_fn)
    knobs.launch_enter_hook(md)
    backend.launch(raw_name, duration)
    call_exit_hook(knobs, md)


def load(path):
    with open(path) as f:
        return json.load(f)[0]


def names(node):
    return sorted(c["frame"]["name"] for c in node["children"])


def test_launch_metadata_renames_the_kernel_and_adds_its_metrics(knobs, fake):
    proton.start("hooked", backend="fake", hook="triton")
    assert knobs.launch_enter_hook is not None
    meta = lambda: {"name": "add_4096", "flops32": 4096, "bytes": 12.0 * 4096, "extra": 7, "tag": "x"}
    with proton.scope("hooked"):
        for _ in range(3):
            launch(knobs, fake(), "add_kernel", meta, 900)
    proton.finalize()
    assert knobs.launch_enter_hook is None or knobs.launch_enter_hook.calls == []  # one slot; chain
    root = load("hooked.hatchet")
    assert root["metrics"] == {"bytes": 0, "count": 0, "extra": 0, "flops32": 0, "time (ns)": 0}
    (kernel,) = root["children"][0]["children"]
    assert kernel["frame"]["name"] == "add_4096"
    assert kernel["children"] == []
    assert kernel["metrics"] == {"bytes": 147456, "count": 3, "device_id": "0", "device_type": "CUDA",
                                 "extra": 21, "flops32": 12288.0, "time (ns)": 2700}


def test_kernels_launched_inside_launch_metadata_stay_out_of_the_users_tree(knobs, fake):
    proton.start("meta", backend="fake", hook="triton")

    def meta():
        fake().launch("helper_copy", 5)  # e.g. a .item() on a device tensor
        return {"name": "owner"}

    with proton.scope("s"):
        launch(knobs, fake(), "owner_kernel", meta)
    proton.finalize()
    root = load("meta.hatchet")
    assert names(root) == ["s"]
    s = root["children"][0]
    assert names(s) == ["__proton_launch_metadata", "owner"]
    helper = s["children"][0]
    assert names(helper) == ["helper_copy"]  # its parent is the metadata node, as in Proton


def test_include_and_exclude_filters_skip_metadata_evaluation(knobs, fake):
    from lepton.hooks.launch import LaunchHook

    calls = []
    proton.start("filtered", backend="fake", hook="triton")
    LaunchHook().configure(include="keep")
    launch(knobs, fake(), "drop_me", lambda: calls.append("drop") or {"name": "x"})
    launch(knobs, fake(), "keep_me", lambda: calls.append("keep") or {"name": "keep_renamed"})
    LaunchHook().configure(exclude="keep")
    launch(knobs, fake(), "keep_me", lambda: calls.append("keep2") or {"name": "kept2"})
    proton.finalize()
    assert calls == ["keep"]
    assert names(load("filtered.hatchet")) == ["drop_me", "keep_me", "keep_renamed"]


def test_each_threads_launch_gets_its_own_metrics(knobs, fake):
    proton.start("mt", backend="fake", hook="triton")
    barrier = threading.Barrier(8)

    def work(i):
        barrier.wait()
        for _ in range(25):
            launch(knobs, fake(), "k", lambda: {"name": f"k_{i}", "flops": i}, 10)

    ts = [threading.Thread(target=work, args=(i,)) for i in range(8)]
    [t.start() for t in ts]
    [t.join() for t in ts]
    proton.finalize()
    root = load("mt.hatchet")
    got = {c["frame"]["name"]: (c["metrics"]["count"], c["metrics"]["flops"]) for c in root["children"]}
    assert got == {f"k_{i}": (25, 25.0 * i) for i in range(8)}


def test_another_tools_hook_is_not_silently_replaced(knobs):
    knobs.launch_enter_hook = lambda md: None
    with pytest.raises(RuntimeError, match="already set by another tool"):
        proton.start("clash", backend="fake", hook="triton")
    from lepton.runtime.registry import REGISTRY

    assert not REGISTRY.sessions  # the half-started session is gone


@pytest.fixture
def compiled_kernel_class(monkeypatch):
    """A stand-in `triton.compiler.compiler.CompiledKernel` with compiled properties."""

    class CompiledKernel:
        def __init__(self):
            self.metadata = types.SimpleNamespace(num_warps=4, num_stages=3, shared=8192)
            self.n_regs, self.n_spills, self.function = 40, 2, None

        def launch_metadata(self, grid, stream, *args):
            return LazyDict({"name": "matmul_kernel", "function": None, "stream": stream},
                            lambda: {"name": "matmul [M=64]", "flops16": 2.0})

    from lepton.hooks import kernel_props

    monkeypatch.setattr(kernel_props, "_cache", {})  # properties known from another test's kernel 77
    compiler = types.ModuleType("triton.compiler.compiler")
    compiler.CompiledKernel = CompiledKernel
    compiler.LazyDict = LazyDict
    monkeypatch.setitem(sys.modules, "triton.compiler", types.ModuleType("triton.compiler"))
    monkeypatch.setitem(sys.modules, "triton.compiler.compiler", compiler)
    return CompiledKernel


def launch_compiled(knobs, fake, kernel):
    md = kernel.launch_metadata((1,), 0)  # what Triton calls right before the launch hook
    knobs.launch_enter_hook(md)
    fake().launch("matmul_kernel", 50)
    call_exit_hook(knobs, md)


def test_triton_kernels_carry_their_compiled_properties(knobs, fake, compiled_kernel_class):
    CompiledKernel = compiled_kernel_class
    original = CompiledKernel.launch_metadata
    proton.start("props", backend="fake", hook="triton")
    assert CompiledKernel.launch_metadata is not original
    kernel = CompiledKernel()
    for _ in range(2):
        launch_compiled(knobs, fake, kernel)
    proton.finalize()
    assert CompiledKernel.launch_metadata is original  # unwrapped at finalize
    root = load("props.hatchet")
    (node,) = root["children"]
    assert node["frame"]["name"] == "matmul [M=64]"
    m = node["metrics"]
    assert (m["num_warps"], m["num_stages"], m["shared_bytes"], m["registers"], m["spills"]) == (4, 3, 8192, 40, 2)
    assert m["count"] == 2 and m["flops16"] == 4.0
    assert "num_warps" not in root["metrics"] and root["metrics"]["flops16"] == 0


def test_metadata_that_changes_between_launches_gives_each_launch_its_own_values(knobs, fake):
    """Parsed metadata is remembered per distinct result: sizes that change, values that repeat,
    and values that cannot be remembered (a list, a tensor-like) each land as launched."""

    class Scalar:  # a 0-d tensor stand-in: has `dtype` and converts to a number
        dtype = "float32"

        def __init__(self, v):
            self.v = v

        def item(self):
            return self.v

        def tolist(self):
            return self.v

    proton.start("varying", backend="fake", hook="triton")
    sizes = [1024, 2048, 1024, 2048, 1024]
    with proton.scope("s"):
        for n in sizes:
            launch(knobs, fake(), "add_kernel", lambda n=n: {"name": f"add_{n}", "bytes": n}, 10)
        for v in (3.0, 4.0):
            launch(knobs, fake(), "k2", lambda v=v: {"name": "scaled", "flops": Scalar(v), "tags": [1]}, 10)
    proton.finalize()
    (scope,) = load("varying.hatchet")["children"]
    by_name = {c["frame"]["name"]: c["metrics"] for c in scope["children"]}
    assert by_name["add_1024"]["bytes"] == 3 * 1024 and by_name["add_1024"]["count"] == 3
    assert by_name["add_2048"]["bytes"] == 2 * 2048 and by_name["add_2048"]["count"] == 2
    assert by_name["scaled"]["flops"] == 7.0 and by_name["scaled"]["count"] == 2


def test_each_phase_gets_the_properties_of_its_kernels(knobs, fake, compiled_kernel_class):
    """Properties are set once per op and phase: a new phase has them again."""
    sid = proton.start("phased", backend="fake", hook="triton")
    kernel = compiled_kernel_class()
    launch_compiled(knobs, fake, kernel)
    proton.data.advance_phase(sid)
    launch_compiled(knobs, fake, kernel)
    launch_compiled(knobs, fake, kernel)
    proton.finalize()
    for phase, count in ((0, 1), (1, 2)):
        (node,) = load(f"phased.part_{phase}.hatchet")["children"]
        assert node["metrics"]["count"] == count
        assert (node["metrics"]["num_warps"], node["metrics"]["registers"]) == (4, 40)


def test_a_launch_whose_metrics_are_refused_leaves_the_thread_in_its_scope(knobs, fake):
    """A metric whose type changes raises in the hook; kernels launched after it still land in the
    user's scope, not under the hidden metadata state."""
    proton.start("refused", backend="fake", hook="triton")
    with proton.scope("step"):
        for extra in (7, 7.5):
            md = LazyDict({"name": "k", "function": 1, "stream": 0}, lambda e=extra: {"extra": e})
            try:
                knobs.launch_enter_hook(md)
                fake().launch("k", 10)
                call_exit_hook(knobs, md)
            except proton.MetricTypeError:
                pass
        fake().launch("torch_kernel", 10)
    proton.finalize()
    (step,) = load("refused.hatchet")["children"]
    assert "torch_kernel" in names(step)


def test_remembered_metadata_tells_true_from_1_and_1_from_1_0(knobs, fake):
    proton.start("typed", backend="fake", hook="triton")
    with proton.scope("s"):
        for value in (1, True, True):
            launch(knobs, fake(), "k", lambda v=value: {"name": "k", "split_k": v}, 10)
        for value in (2, 2.0):
            launch(knobs, fake(), "k2", lambda v=value: {"name": f"k2_{type(v).__name__}", "bytes": v}, 10)
    proton.finalize()
    (scope,) = load("typed.hatchet")["children"]
    by_name = {c["frame"]["name"]: c["metrics"] for c in scope["children"]}
    assert by_name["k"]["split_k"] == 1 and by_name["k"]["count"] == 3  # booleans are not metrics
    assert by_name["k2_int"]["bytes"] == 2 and by_name["k2_float"]["bytes"] == 2.0


def test_repeated_launches_keep_launch_metadata_work_out_of_the_users_tree(knobs, fake):
    """The second and later launches of a kernel take the hook's fast path: what their
    launch_metadata launches or opens still lands under the metadata state."""
    proton.start("meta_repeat", backend="fake", hook="triton")

    def meta():
        fake().launch("helper_copy", 5)
        with proton.scope("inside_meta"):
            fake().launch("helper_inner", 5)
        return {"name": "owner", "bytes": 8}

    with proton.scope("s"):
        for _ in range(4):
            launch(knobs, fake(), "owner_kernel", meta)
    proton.finalize()
    (s,) = load("meta_repeat.hatchet")["children"]
    by_name = {c["frame"]["name"]: c for c in s["children"]}
    assert sorted(by_name) == ["__proton_launch_metadata", "inside_meta", "owner"]
    assert by_name["owner"]["metrics"]["count"] == 4 and by_name["owner"]["metrics"]["bytes"] == 32

    def state_kernel(node, kernel):  # the metadata state's node -> kernel
        (k,) = node["children"]
        assert k["frame"]["name"] == kernel
        return k["metrics"]["count"]

    assert state_kernel(by_name["__proton_launch_metadata"], "helper_copy") == 4
    # A scope opened in launch_metadata gets the state appended, as Proton appends a state.
    (inside_state,) = by_name["inside_meta"]["children"]
    assert inside_state["frame"]["name"] == "__proton_launch_metadata"
    assert state_kernel(inside_state, "helper_inner") == 4


def test_a_repeated_launch_lands_under_the_scope_it_is_made_in(knobs, fake):
    proton.start("alternating", backend="fake", hook="triton")
    meta = lambda: {"name": "k_named", "flops": 2}
    for _ in range(3):
        for scope_name in ("a", "b"):
            with proton.scope(scope_name):
                launch(knobs, fake(), "k", meta, 10)
        launch(knobs, fake(), "k", meta, 10)
    proton.finalize()
    root = load("alternating.hatchet")
    by_name = {c["frame"]["name"]: c for c in root["children"]}
    assert sorted(by_name) == ["a", "b", "k_named"]
    assert by_name["k_named"]["metrics"]["count"] == 3 and by_name["k_named"]["metrics"]["flops"] == 6
    for scope_name in ("a", "b"):
        (k,) = by_name[scope_name]["children"]
        assert (k["frame"]["name"], k["metrics"]["count"], k["metrics"]["flops"]) == ("k_named", 3, 6)


def test_launch_metadata_raising_on_a_repeated_launch_leaves_the_thread_in_its_scope(knobs, fake):
    proton.start("raising", backend="fake", hook="triton")
    fail = [False]

    def meta():
        if fail[0]:
            raise ValueError("bad shape")
        return {"name": "k"}

    with proton.scope("step"):
        launch(knobs, fake(), "k", meta, 10)
        fail[0] = True
        with pytest.raises(ValueError, match="bad shape"):
            launch(knobs, fake(), "k", meta, 10)
        fake().launch("after", 10)
        with proton.scope("inner"):
            fake().launch("nested", 10)
    proton.finalize()
    (step,) = load("raising.hatchet")["children"]
    assert names(step) == ["after", "inner", "k"]


def test_a_kernels_properties_wrapper_steps_aside_once_they_are_known(knobs, fake, compiled_kernel_class):
    CompiledKernel = compiled_kernel_class
    proton.start("aside", backend="fake", hook="triton")
    kernel = CompiledKernel()
    kernel.function = 77
    launch_compiled(knobs, fake, kernel)
    assert "launch_metadata" not in vars(kernel)  # the first launch reads the properties
    launch_compiled(knobs, fake, kernel)
    assert "launch_metadata" in vars(kernel)  # known now: Triton's own method from here on
    launch_compiled(knobs, fake, kernel)
    proton.finalize()
    (node,) = load("aside.hatchet")["children"]
    assert node["metrics"]["count"] == 3 and node["metrics"]["num_warps"] == 4


def test_the_only_hook_is_called_without_triton_chain_and_hands_it_back(chained_knobs, fake):
    """With no other hook in Triton 3.6's chains, Lepton's hooks take the chains' place (Triton calls
    them straight); another tool adding its hook meanwhile puts the chain back with both in it, and
    finalize leaves that tool's hook alone."""
    enter_chain, exit_chain = chained_knobs.launch_enter_hook, chained_knobs.launch_exit_hook
    proton.start("sole", backend="fake", hook="triton")
    sole = chained_knobs.launch_enter_hook
    assert sole is not enter_chain and len(sole.calls) == 1 and chained_knobs.launch_exit_hook is not exit_chain
    calls = []
    meta = lambda: calls.append(1) or {"name": "k_named"}
    with proton.scope("s"):
        launch(chained_knobs, fake(), "k", meta)
        seen = []
        chained_knobs.launch_enter_hook.add(seen.append)  # another tool, as Proton's HookManager adds
        assert chained_knobs.launch_enter_hook is enter_chain and len(enter_chain.calls) == 2
        launch(chained_knobs, fake(), "k", meta)
    proton.finalize()
    assert chained_knobs.launch_enter_hook is enter_chain and enter_chain.calls == [seen.append]
    assert chained_knobs.launch_exit_hook is exit_chain and exit_chain.calls == []
    # The other tool reads the metadata Lepton evaluated through get(): launch_metadata ran once.
    assert len(seen) == 1 and seen[0].get()["name"] == "k_named" and len(calls) == 2
    (s,) = load("sole.hatchet")["children"]
    assert [(c["frame"]["name"], c["metrics"]["count"]) for c in s["children"]] == [("k_named", 2)]


def test_the_only_hook_calls_launch_metadata_itself_once_per_launch(chained_knobs, fake):
    """Alone in Triton 3.6's chains, the hook calls the kernel's launch_metadata from the LazyDict's
    `extras` (no `get()`), once per launch, and compares only what it returned: changing values,
    repeats, and a kernel with no launch_metadata each land as launched."""
    from lepton.hooks.launch import LaunchHook

    proton.start("alone", backend="fake", hook="triton")
    sole = chained_knobs.launch_enter_hook
    assert sole.func == LaunchHook().enter_as and sole.args == (True,)
    calls = []

    def meta(n):
        calls.append(n)
        return {"name": f"add_{n}", "bytes": n}

    with proton.scope("s"):
        for n in (8, 8, 16, 8, 16, 16):
            md = LazyDict({"name": "add_kernel", "function": 1, "stream": 0})
            md.add(lambda grid, metadata, args: meta(args["n"]), ((1,), None, {"n": n}))
            chained_knobs.launch_enter_hook(md)
            fake().launch("add_kernel", 10)
        for _ in range(2):
            launch(chained_knobs, fake(), "plain_kernel")  # no launch_metadata: `extras` is empty
    proton.finalize()
    assert calls == [8, 8, 16, 8, 16, 16]
    (s,) = load("alone.hatchet")["children"]
    got = {c["frame"]["name"]: (c["metrics"]["count"], c["metrics"].get("bytes")) for c in s["children"]}
    assert got == {"add_8": (3, 24), "add_16": (3, 48), "plain_kernel": (2, None)}


def test_launch_metadata_returning_no_dict_raises_as_tritons_merge_does(knobs, fake):
    """`metadata.get()` raises TypeError where launch_metadata returns None; so does the hook that
    calls it itself, on a first and on a repeated launch, and the thread stays in its scope."""
    proton.start("nodict", backend="fake", hook="triton")
    returned = [{"name": "k_named"}]
    with proton.scope("step"):
        launch(knobs, fake(), "k", lambda: returned[0], 10)
        returned[0] = None
        for _ in range(2):
            with pytest.raises(TypeError):
                launch(knobs, fake(), "k", lambda: returned[0], 10)
        fake().launch("after", 10)
    proton.finalize()
    (step,) = load("nodict.hatchet")["children"]
    assert names(step) == ["after", "k_named"]


def test_a_lazy_dict_of_another_shape_is_read_with_get(chained_knobs, fake, monkeypatch):
    """Where Triton's LazyDict does not keep its calls in `extras` as Lepton knows them, the only
    hook still reads the metadata through `get()`."""
    from lepton.hooks.launch import LaunchHook

    class OtherLazyDict:
        def __init__(self, data):
            self.data, self.functions = data, []

        def add(self, func, args):
            self.functions.append((func, args))

        def get(self):
            for func, args in self.functions:
                self.data = self.data | func(*args)
            return self.data

    monkeypatch.setattr(sys.modules["triton.compiler.compiler"], "LazyDict", OtherLazyDict)
    proton.start("other", backend="fake", hook="triton")
    assert chained_knobs.launch_enter_hook.func == LaunchHook().enter
    for _ in range(2):
        md = OtherLazyDict({"name": "k", "function": 1, "stream": 0})
        md.add(lambda: {"name": "k_named", "bytes": 4}, ())
        chained_knobs.launch_enter_hook(md)
        fake().launch("k", 10)
    proton.finalize()
    (k,) = load("other.hatchet")["children"]
    assert (k["frame"]["name"], k["metrics"]["count"], k["metrics"]["bytes"]) == ("k_named", 2, 8)


def test_a_hook_already_in_triton_chain_keeps_running(chained_knobs, fake):
    seen = []
    chained_knobs.launch_enter_hook.add(seen.append)
    proton.start("joined", backend="fake", hook="triton")
    assert chained_knobs.launch_enter_hook.calls[0] == seen.append and len(chained_knobs.launch_enter_hook.calls) == 2
    launch(chained_knobs, fake(), "k", lambda: {"name": "k_named"})
    proton.finalize()
    assert chained_knobs.launch_enter_hook.calls == [seen.append] and len(seen) == 1
    assert [c["frame"]["name"] for c in load("joined.hatchet")["children"]] == ["k_named"]


def test_repeated_launch_counts_survive_reads_and_phases(knobs, fake):
    """Repeats are counted without a lock and folded in whenever the data is read: a read in the
    middle neither loses nor doubles launches, and each phase gets the launches made in it."""
    sid = proton.start("counted", backend="fake", hook="triton")
    meta = lambda: {"name": "add", "bytes": 10}  # noqa: E731
    with proton.scope("s"):
        for _ in range(3):
            launch(knobs, fake(), "k", meta, 1)
        mid = proton.data.get(sid, 0)[0]
        for _ in range(4):
            launch(knobs, fake(), "k", meta, 1)
    (scope,) = mid["children"]
    assert scope["children"][0]["metrics"]["bytes"] == 30
    proton.data.advance_phase(sid)
    with proton.scope("s"):
        for _ in range(2):
            launch(knobs, fake(), "k", meta, 1)
    proton.finalize()
    for phase, launches in ((0, 7), (1, 2)):
        (scope,) = load(f"counted.part_{phase}.hatchet")["children"]
        (op,) = scope["children"]
        assert (op["frame"]["name"], op["metrics"]["bytes"], op["metrics"]["count"]) == (
            "add", 10 * launches, launches)


def test_a_tensor_in_metadata_is_never_compared_with_remembered_values(knobs, fake):
    """The fast path compares a launch's metadata with its last launch's: a value of another type
    (a tensor, whose `==` would launch a kernel) must not reach `==`."""

    class Tensor:
        dtype = "int64"

        def __init__(self, v):
            self.v = v

        def __eq__(self, other):
            raise AssertionError("compared")

        __hash__ = None

        def item(self):
            return self.v

        def tolist(self):
            return self.v

    proton.start("tensor", backend="fake", hook="triton")
    with proton.scope("s"):
        for value in (5, 5, Tensor(5), Tensor(6), 5):
            launch(knobs, fake(), "k", lambda v=value: {"name": "k", "bytes": v}, 10)
    proton.finalize()
    (scope,) = load("tensor.hatchet")["children"]
    (op,) = scope["children"]
    assert (op["metrics"]["bytes"], op["metrics"]["count"]) == (26, 5)
