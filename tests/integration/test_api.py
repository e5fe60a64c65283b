"""Proton's API behaviour (`test_api.py` of triton's proton, reference Appendix D), on the CPU with
the fake backend."""
from __future__ import annotations

import json
import os
import sys
import threading

import pytest
from twins import FAKE_BACKEND

import lepton as proton
from lepton.backends.base import EXTRA_BACKENDS_VARIABLE
from lepton.runtime.registry import REGISTRY


def load(path):
    with open(path) as f:
        return json.load(f)


def child(node, name):
    matches = [c for c in node["children"] if c["frame"]["name"] == name]
    assert len(matches) == 1, [c["frame"]["name"] for c in node["children"]]
    return matches[0]


def test_single_session_writes_its_file_and_ids_increase():
    sid = proton.start("test0", backend="fake")
    proton.activate()
    proton.deactivate()
    proton.finalize()
    assert os.path.exists("test0.hatchet")
    sid2 = proton.start("test1", backend="fake")
    assert sid2 == sid + 1
    proton.finalize()
    assert load("test1.hatchet")[0]["frame"]["name"] == "ROOT"


def test_default_name_is_proton():
    proton.start(backend="fake")
    proton.finalize()
    assert os.path.exists("proton.hatchet")
    assert proton.DEFAULT_PROFILE_NAME == "proton"


def test_start_on_the_same_path_reactivates_that_session():
    sid = proton.start("same", backend="fake")
    proton.deactivate(sid)
    assert proton.start("same", backend="fake") == sid
    assert REGISTRY.sessions[sid].active
    proton.finalize()


def test_multiple_sessions_each_write_their_file(fake):
    s0 = proton.start("a", backend="fake")
    s1 = proton.start("b", backend="fake")
    fake().launch("k", 100)
    proton.deactivate(s1)
    fake().launch("k", 100)
    proton.finalize()
    a, b = load("a.hatchet"), load("b.hatchet")
    assert child(a[0], "k")["metrics"]["count"] == 2
    assert child(b[0], "k")["metrics"]["count"] == 1
    assert s1 == s0 + 1


def test_mode_conflict_is_an_error_even_when_deactivated():
    s0 = proton.start("p0", backend="fake", mode="pcsampling")
    s1 = proton.start("p1", backend="fake", mode="pcsampling")
    proton.deactivate(s1)
    with pytest.raises(ValueError, match="different mode"):
        proton.start("p2", backend="fake")
    proton.finalize()
    assert s1 == s0 + 1


def test_profile_decorator_writes_only_after_finalize():
    @proton.profile(name="decorated", backend="fake")
    def work():
        with proton.scope("inside"):
            pass

    work()
    assert not os.path.exists("decorated.hatchet")
    proton.finalize()
    assert child(load("decorated.hatchet")[0], "inside")

    @proton.profile
    def bare():
        pass

    assert bare is not None


def test_scopes_are_allowed_while_profiling_is_off():
    with proton.scope("test"):
        pass

    @proton.scope("decorated")
    def f():
        return 3

    assert f() == 3
    assert proton.enter_scope("test0") is None
    assert proton.exit_scope() is None
    assert proton.exit_scope("test0") is None


def test_scope_metrics_sum_and_skip_deactivated(fake):
    sid = proton.start("m", backend="fake")
    with proton.scope("test0", {"a": 1.0}):
        pass
    with proton.scope("test1", {"a": 1.0}):
        pass
    proton.deactivate(sid)
    with proton.scope("test2", {"a": 1.0}):
        pass
    proton.activate(sid)
    with proton.scope("test3", {"a": 1.0}):
        pass
    with proton.scope("test3", {"a": 1.0}):
        pass
    proton.enter_scope("test4")
    proton.exit_scope(metrics={"b": 1.0})
    proton.finalize()
    root = load("m.hatchet")[0]
    names = sorted(c["frame"]["name"] for c in root["children"])
    assert names == ["test0", "test1", "test3", "test4"]
    assert child(root, "test3")["metrics"]["a"] == 2.0
    assert child(root, "test4")["metrics"]["b"] == 1.0


def test_a_metric_first_float_then_int_is_an_error_in_protons_words_with_the_fix():
    """Proton main's wording (a Python int is an int64_t; Triton 3.6 said uint64_t), then the fix."""
    proton.start("bad", backend="fake")
    with proton.scope("test0", {"a": 1.0}):
        pass
    with pytest.raises(ValueError) as raised, proton.scope("test0", {"a": 1}):
        pass
    proton.finalize()
    assert str(raised.value) == ("Metric value type mismatch for valueId 0 (a): current=double, new=int64_t "
                                 "(a metric keeps the type of its first value: pass a float)")


def test_positive_and_negative_ints_are_one_metric_type():
    proton.start("ints", backend="fake")
    for value in (3, -1):
        with proton.scope("test0", {"a": value}):
            pass
    proton.finalize()
    with open("ints.hatchet") as f:
        root = json.load(f)[0]
    assert child(root, "test0")["metrics"]["a"] == 2


def test_property_metrics_are_overwritten():
    proton.start("pty", backend="fake")
    for _ in range(2):
        with proton.scope("test0", {"a (pty)": 1.0}):
            pass
    proton.finalize()
    assert child(load("pty.hatchet")[0], "test0")["metrics"]["a"] == 1.0


def test_exclusive_metrics_stay_off_root():
    proton.start("exc", backend="fake")
    with proton.scope("test0", {"a (exc)": 1}), proton.scope("test1", {"b (exc)": 1}):
        pass
    proton.finalize()
    root = load("exc.hatchet")[0]
    assert root["metrics"] == {}
    t0 = child(root, "test0")
    assert t0["metrics"] == {"a": 1}
    assert child(t0, "test1")["metrics"] == {"b": 1}


def test_vector_metrics_sum_elementwise_and_check_length():
    proton.start("vec", backend="fake")
    with proton.scope("test0", {"veci": [1, 2, 3], "vecd": [1.0, 2.0, 3.0]}):
        pass
    with pytest.raises(ValueError, match="size mismatch"), proton.scope("test0", {"veci": [1, 2]}):
        pass
    proton.finalize()
    m = child(load("vec.hatchet")[0], "test0")["metrics"]
    assert m["veci"] == [1, 2, 3] and m["vecd"] == [1.0, 2.0, 3.0]


def test_roofline_metrics_are_coerced():
    proton.start("roof", backend="fake")
    with proton.scope("s", {"flops": 1, "flops32": [5, 6], "bytes": 3.0, "custom": 4}):
        pass
    proton.finalize()
    m = child(load("roof.hatchet")[0], "s")["metrics"]
    assert m["flops"] == 1.0 and isinstance(m["flops"], float)
    assert m["flops32"] == [5.0, 6.0] and isinstance(m["flops32"][0], float)
    assert m["bytes"] == 3 and isinstance(m["bytes"], int)
    assert m["custom"] == 4 and isinstance(m["custom"], int)


def test_state_is_appended_below_the_scope(fake):
    proton.start("st", backend="fake")
    with proton.scope("test0"), proton.state("state"), proton.scope("test1", {"a": 1.0}):
        fake().launch("k", 10)
    proton.finalize()
    test0 = child(load("st.hatchet")[0], "test0")
    state = child(child(test0, "test1"), "state")
    assert state["metrics"]["a"] == 1.0
    assert child(state, "k")["metrics"]["count"] == 1


def test_context_depth_follows_scopes():
    proton.start("depth", backend="fake")
    assert proton.context.depth() == 0
    proton.enter_scope("a")
    assert proton.context.depth() == 1
    proton.enter_scope("b")
    assert proton.context.depth() == 2
    proton.exit_scope()
    assert proton.context.depth() == 1
    proton.exit_scope()
    assert proton.context.depth() == 0
    proton.finalize()
    assert proton.context.depth() is None


def test_finalize_within_a_scope_leaves_the_next_session_at_depth_zero():
    proton.start("f0", backend="fake")
    with proton.scope("open"):
        proton.finalize()
    proton.start("f1", backend="fake")
    assert proton.context.depth() == 0
    proton.finalize()


def test_scopes_open_across_finalize_and_start_exit_quietly(fake):
    # Proton raises "Context stack is empty" at the outer scopes' exits here.
    proton.start("r0", backend="fake")
    with proton.scope("outer"):
        with proton.scope("inner"):
            proton.finalize()
            proton.start("r1", backend="fake")
            with proton.scope("new"):
                fake().launch("k", 10)
            fake().launch("k", 20)
        with proton.scope("after"):
            fake().launch("k", 30)
        assert proton.context.depth() == 0
    proton.finalize()
    root = load("r1.hatchet")[0]
    assert sorted(c["frame"]["name"] for c in root["children"]) == ["after", "k", "new"]
    assert child(child(root, "new"), "k")["metrics"]["time (ns)"] == 10
    assert child(child(root, "after"), "k")["metrics"]["time (ns)"] == 30


def test_unknown_session_ids_are_errors():
    sid = proton.start("throw", backend="fake")
    with pytest.raises(IndexError, match=f"Session has not been initialized: {sid + 1}"):
        proton.activate(sid + 1)
    with pytest.raises(IndexError, match=f"Session has not been initialized: {sid + 1}"):
        proton.deactivate(sid + 1)
    proton.finalize()


@pytest.mark.parametrize("kwargs, message", [
    ({"backend": "nope"}, "Unknown profiler: nope"),
    ({"context": "nope"}, "Unknown context source: nope"),
    ({"data": "nope"}, "Unknown data: nope"),
    ({"hook": "nope"}, "Unsupported hook: nope"),
])
def test_unknown_names_are_clear_errors(kwargs, message):
    with pytest.raises(ValueError, match=message):
        proton.start("bad", **({"backend": "fake"} | kwargs))
    assert not REGISTRY.sessions


def test_unbalanced_scopes_are_errors():
    proton.start("unbal", backend="fake")
    proton.enter_scope("a")
    with pytest.raises(ValueError, match="Scope name mismatch: b != a"):
        proton.exit_scope("b")
    proton.exit_scope("a")
    outer = proton.scope("outer")
    outer.__enter__()
    inner = proton.scope("inner")
    inner.__enter__()
    with pytest.raises(ValueError, match="not balanced"):
        outer.__exit__(None, None, None)
    inner.__exit__(None, None, None)
    outer.__exit__(None, None, None)
    with pytest.raises(ValueError, match="without a matching enter_scope"):
        proton.exit_scope("never")
    proton.finalize()


def test_disable_environment_turns_start_into_a_no_op(monkeypatch):
    monkeypatch.setenv("TRITON_PROTON_DISABLE", "1")
    assert proton.start("disabled", backend="fake") is None
    proton.finalize()
    assert not os.path.exists("disabled.hatchet")


def test_cpu_timed_scope_records_cpu_time_and_reserves_the_name():
    with pytest.raises(ValueError, match="reserved"):
        proton.cpu_timed_scope("x", {"cpu_time": 1})
    proton.start("cpu", backend="fake")
    with proton.cpu_timed_scope("timed"), proton.cpu_timed_scope("nested"):
        pass
    proton.finalize()
    root = load("cpu.hatchet")[0]
    timed = child(root, "timed")
    assert timed["metrics"]["cpu_time (ns)"] > 0
    assert child(timed, "nested")["metrics"]["cpu_time (ns)"] > 0
    assert "cpu_time (ns)" not in root["metrics"]


def test_data_api_phases():
    sid = proton.start("data", backend="fake")
    assert proton.data.get(sid) is not None
    assert isinstance(proton.data.get_msgpack(sid), bytes)
    assert not proton.data.is_phase_complete(sid, 0)
    assert proton.data.advance_phase(sid) == 1
    assert not proton.data.is_phase_complete(sid, 1)
    proton.activate(sid)
    assert proton.data.advance_phase(sid) == 2
    proton.deactivate(sid, flushing=True)
    assert proton.data.is_phase_complete(sid, 1)
    assert not proton.data.is_phase_complete(sid, 2)
    proton.data.clear(sid, phase=0)
    proton.data.clear(sid, phase=2, clear_up_to_phase=True)
    with pytest.raises(ValueError, match="Phase 1 has no data"):
        proton.data.get(sid, 1)
    proton.finalize()


def test_phases_split_kernels_and_write_part_files(fake):
    sid = proton.start("phased", backend="fake")
    fake().launch("k0", 10)
    proton.data.advance_phase(sid)
    fake().launch("k1", 10)
    fake().launch("k1", 10)
    proton.deactivate(sid, flushing=True)
    p0 = proton.data.get(sid, 0)[0]
    assert [c["frame"]["name"] for c in p0["children"]] == ["k0"]
    proton.finalize()
    assert child(load("phased.part_0.hatchet")[0], "k0")["metrics"]["count"] == 1
    assert child(load("phased.part_1.hatchet")[0], "k1")["metrics"]["count"] == 2


def test_msgpack_output_format(fake):
    msgpack = pytest.importorskip("msgpack")
    proton.start("mp", backend="fake")
    with proton.scope("s"):
        fake().launch("k", 10)
    proton.finalize(output_format="hatchet_msgpack")
    with open("mp.hatchet_msgpack", "rb") as f:
        tree, devices = msgpack.unpackb(f.read(), raw=False, strict_map_key=False)
    assert list(tree) == ["frame", "metrics", "lepton", "children"]
    assert tree["lepton"]["command_line"][0] == sys.executable
    k = tree["children"][0]["children"][0]
    assert list(k["metrics"]) == ["time (ns)", "count", "device_id", "device_type"]
    assert devices["CUDA"]["0"]["arch"] == "90"


def test_unsupported_output_format_is_an_error():
    proton.start("fmt", backend="fake")
    with pytest.raises(ValueError, match="not supported"):
        proton.finalize(output_format="chrome_trace")
    proton.finalize()


def test_deactivated_kernels_are_not_counted(fake):
    sid = proton.start("deact", backend="fake")
    fake().launch("k", 10)
    proton.deactivate(sid)
    fake().launch("k", 10)
    proton.activate(sid)
    fake().launch("k", 10)
    proton.finalize()
    assert child(load("deact.hatchet")[0], "k")["metrics"]["count"] == 2


def test_public_calls_are_safe_from_many_threads(fake):
    """100 threads, each in its own scope, launching at once (Proton's test_scope_multiple_threads)."""
    proton.start("threads", backend="fake")
    barrier = threading.Barrier(100)

    def work(i):
        barrier.wait()
        with proton.scope(f"scope_{i}", {"i": i}):
            for _ in range(5):
                fake().launch("k", 10)

    ts = [threading.Thread(target=work, args=(i,)) for i in range(100)]
    [t.start() for t in ts]
    [t.join() for t in ts]
    proton.finalize()
    root = load("threads.hatchet")[0]
    assert len(root["children"]) == 100
    for i in range(100):
        node = child(root, f"scope_{i}")
        assert node["metrics"]["i"] == i
        assert child(node, "k")["metrics"]["count"] == 5


def test_new_threads_inherit_the_starting_threads_stack(fake):
    proton.start("inherit", backend="fake")
    with proton.scope("main_scope"):
        def worker():
            fake().launch("from_thread", 10)
            with proton.scope("own"):
                fake().launch("inner", 10)

        t = threading.Thread(target=worker)
        t.start()
        t.join()
    proton.finalize()
    main = child(load("inherit.hatchet")[0], "main_scope")
    assert child(main, "own")
    assert child(child(main, "own"), "inner")["metrics"]["count"] == 1


def test_stdout_path_writes_the_profile_to_stdout(capsysbinary):
    proton.start("-", backend="fake")
    proton.finalize()
    out = capsysbinary.readouterr().out
    assert json.loads(out)[0]["frame"]["name"] == "ROOT"


def test_a_script_that_crashes_before_finalize_still_leaves_its_profile(tmp_path):
    import subprocess
    import sys
    from pathlib import Path

    script = tmp_path / "crash.py"
    script.write_text(
        "import lepton\n"
        "from twins.fake_backend import FakeBackend\n"
        "lepton.start('crashed', backend='fake')\n"
        "with lepton.scope('work'):\n"
        "    FakeBackend.instances[-1].launch('k', 10)\n"
        "    raise RuntimeError('boom')\n")
    repo = Path(__file__).resolve().parents[2]
    p = subprocess.run([sys.executable, str(script)], cwd=tmp_path, capture_output=True, text=True,
                       env={"PYTHONPATH": f"{repo / 'src'}{os.pathsep}{repo / 'tests'}", "PATH": "/usr/bin:/bin",
                            EXTRA_BACKENDS_VARIABLE: FAKE_BACKEND}, check=False)
    assert p.returncode == 1 and "RuntimeError: boom" in p.stderr
    assert "profile written at exit" in p.stderr
    root = load(tmp_path / "crashed.hatchet")[0]
    assert child(child(root, "work"), "k")["metrics"]["count"] == 1
