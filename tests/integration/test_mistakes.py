"""A user's mistake raises one clear error at the call that made it and leaves no state behind: the
session goes on, and the profile written at the end holds everything recorded around the mistake."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import lepton as proton
from lepton.errors import UsageError
from lepton.runtime.registry import REGISTRY

SRC = Path(__file__).resolve().parents[2] / "src"


def tree(path="p.hatchet") -> dict:
    """name -> (metrics, children) of the written profile, ROOT's children."""
    def walk(node):
        return {c["frame"]["name"]: (c["metrics"], walk(c)) for c in node["children"]}

    with open(path) as f:
        return walk(json.load(f)[0])


@pytest.mark.parametrize("name", [42, None, b"bytes", ("a",)])
def test_a_scope_name_that_is_not_a_string_raises_at_the_call(name):
    proton.start("p", backend="cpu")
    with proton.scope("before"):
        pass
    with pytest.raises(TypeError, match="scope name must be a string"), proton.scope(name):
        pass
    assert proton.context.depth() == 0
    with proton.scope("after"):
        pass
    assert proton.finalize() == ["p.hatchet"]
    assert set(tree()) == {"before", "after"}


@pytest.mark.parametrize("value", ["lots", None, object(), [1, "x"]])
def test_a_metric_value_that_cannot_be_recorded_raises_and_enters_no_scope(value):
    proton.start("p", backend="cpu")
    with proton.scope("outer"):
        with pytest.raises(TypeError, match="Metric .bytes. has unsupported type"), proton.scope("bad", {"flops": 1.0, "bytes": value}):
            pass
        assert proton.context.depth() == 1
        with proton.scope("inner", {"bytes": 8}):
            pass
    proton.finalize()
    outer = tree()["outer"]
    assert set(outer[1]) == {"inner"}  # nothing of "bad", and "inner" is not under it
    assert outer[1]["inner"][0] == {"bytes": 8}


def test_a_metric_name_that_is_not_a_string_raises():
    proton.start("p", backend="cpu")
    with pytest.raises(TypeError, match="metric name must be a string"), proton.scope("s", {1: 2}):
        pass
    assert proton.context.depth() == 0
    proton.finalize()


def test_exit_scope_naming_another_scope_raises_and_closes_nothing():
    proton.start("p", backend="cpu")
    proton.enter_scope("a")
    proton.enter_scope("b")
    with pytest.raises(UsageError, match=r"Scope name mismatch: a != b .*nothing was closed"):
        proton.exit_scope("a")
    assert proton.context.depth() == 2
    proton.exit_scope("b")
    proton.exit_scope("a")
    with proton.scope("c"):
        pass
    proton.finalize()
    assert set(tree()) == {"a", "c"} and set(tree()["a"][1]) == {"b"}


def test_exit_scope_with_metrics_it_refuses_keeps_the_scope_open():
    proton.start("p", backend="cpu")
    proton.enter_scope("a")
    with pytest.raises(TypeError, match="Metric 'm'"):
        proton.exit_scope("a", metrics={"m": "lots"})
    assert proton.context.depth() == 1
    proton.exit_scope("a", metrics={"m": 2})
    proton.finalize()
    assert tree()["a"][0] == {"m": 2}


def test_a_state_name_that_is_not_a_string_raises():
    proton.start("p", backend="cpu")
    with pytest.raises(TypeError, match="state name must be a string"):
        proton.enter_state(7)
    proton.finalize()


@pytest.mark.parametrize("backend", ["cpu", "fake"])
def test_a_mode_the_backend_does_not_have_is_refused_at_start(backend):
    with pytest.raises(UsageError, match=f"Backend '{backend}' has no mode 'bogus_mode'"):
        proton.start("p", backend=backend, mode="bogus_mode")
    assert not REGISTRY.sessions and not REGISTRY.backends


def test_a_forked_child_drops_the_parents_sessions_quietly(tmp_path):
    """Outside the CLI too: the child's exit writes nothing (no "finalize() was not called"), and
    the parent's profile is the parent's."""
    script = tmp_path / "fork.py"
    script.write_text(textwrap.dedent("""\
        import os, sys
        import lepton as proton
        proton.start("p", backend="cpu")
        with proton.scope("parent_before"):
            pass
        pid = os.fork()
        if pid == 0:
            with proton.scope("child_only"):
                pass
            sys.exit(0)  # atexit runs in the child
        os.waitpid(pid, 0)
        with proton.scope("parent_after"):
            pass
        proton.finalize()
    """))
    env = {**os.environ, "PYTHONPATH": str(SRC)}
    out = subprocess.run([sys.executable, str(script)], cwd=tmp_path, capture_output=True, text=True,
                         env=env, timeout=60, check=False)
    assert out.returncode == 0, out.stderr
    assert out.stderr == ""
    assert set(tree(tmp_path / "p.hatchet")) == {"parent_before", "parent_after"}


def test_instruction_sampling_without_a_gpu_says_a_gpu_is_needed_and_starts_nothing(monkeypatch, tmp_path, capsys):
    from lepton.backends import cupti

    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(cupti, "probe", lambda: (False, "no libcuda.so.1 (NVIDIA driver)"))
    with pytest.raises(UsageError, match=r"mode='pcsampling' samples instructions on an NVIDIA GPU, and none "
                                         r"is usable here \(no libcuda.so.1 \(NVIDIA driver\)\)"):
        proton.start("p", mode="pcsampling:interval=64")
    assert not REGISTRY.sessions
    assert "recording CPU scopes" not in capsys.readouterr().err
    proton.start("p")  # without the mode: CPU scopes, as before
    proton.finalize()
    assert os.path.exists("p.hatchet")



NO_GPU = r"none is usable here \(no libcuda.so.1 \(NVIDIA driver\)\); run it on a machine with one"


@pytest.mark.parametrize(("backend", "mode"), [("cupti", None), ("cupti", "pcsampling"), ("instrumentation", None)])
def test_a_gpu_backend_named_without_a_gpu_says_a_gpu_is_needed_and_starts_nothing(backend, mode, monkeypatch):
    from lepton.backends import cupti

    monkeypatch.setattr(cupti, "gpu_probe", lambda: (False, "no libcuda.so.1 (NVIDIA driver)"))
    with pytest.raises(UsageError, match=f"^backend='{backend}' needs an NVIDIA GPU, and {NO_GPU}"):
        proton.start("p", backend=backend, mode=mode)
    assert not REGISTRY.sessions and not REGISTRY.backends


def test_a_finalize_whose_flush_raises_still_ends_the_session(fake, monkeypatch):
    """A backend that fails to deliver at finalize (e.g. a buffer it cannot decode) raises there,
    and the next session starts clean instead of joining the broken one."""
    proton.start("broken", backend="fake")
    broken = fake()
    monkeypatch.setattr(broken, "_do_flush", lambda: (_ for _ in ()).throw(ValueError("cannot decode")))
    with pytest.raises(ValueError, match="cannot decode"):
        proton.finalize()
    assert REGISTRY.sessions == {} and REGISTRY.backends == {} and not broken.started
    proton.start("next", backend="fake")
    assert REGISTRY.backends["fake"] is not broken
    proton.finalize()
    assert Path("next.hatchet").exists()
