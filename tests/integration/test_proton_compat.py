"""Proton's behaviour where a Proton script can tell the difference (issue: "a true drop-in"), on the
CPU: string property and exclusive metrics, the type a metric's first value fixes, hooks as objects
managed per session, the launch id, the disable knob and Proton's module paths. Written from
Proton's documentation and sources (`third_party/proton/proton/hooks/hook.py`, `launch.py`)."""
from __future__ import annotations

import importlib
import json
import subprocess
import sys
import threading
import types
from pathlib import Path

import pytest
from triton_standin import LazyDict

import lepton as proton
from lepton.hooks.hook import Hook, HookManager
from lepton.hooks.launch import COMPUTE_METADATA_SCOPE_NAME, LaunchHook

SRC = Path(__file__).resolve().parents[2] / "src"


def load(path: str) -> dict:
    with open(path) as f:
        return json.load(f)[0]


def child(node: dict, name: str) -> dict:
    (found,) = [c for c in node["children"] if c["frame"]["name"] == name]
    return found


@pytest.fixture(autouse=True)
def no_hooks_left():
    yield
    assert HookManager.active_hooks == [] and not any(HookManager.session_hooks.values())


def test_property_and_exclusive_metrics_may_be_strings():
    proton.start("strings", backend="cpu")
    with proton.scope("test0", {"a (pty)": "1"}):
        pass
    for _ in range(2):
        with proton.scope("test2", {"a (pty)": 1.0}):  # properties do not add up
            pass
    with proton.scope("e0", {"c (exc)": "x"}):
        with proton.scope("e1", {"d (exc)": "y"}):
            pass
    proton.finalize()
    root = load("strings.hatchet")
    assert child(root, "test0")["metrics"] == {"a": "1"}
    assert child(root, "test2")["metrics"] == {"a": 1.0}
    e0 = child(root, "e0")
    assert e0["metrics"] == {"c": "x"} and child(e0, "e1")["metrics"] == {"d": "y"}
    assert "c" not in root["metrics"] and "d" not in root["metrics"]  # exclusive: not on ROOT


def test_an_accumulated_metric_must_be_a_number():
    proton.start("acc", backend="cpu")
    with pytest.raises(TypeError, match=r"Metric 'a' has unsupported type str .*'\(pty\)' and '\(exc\)'"), \
            proton.scope("s", {"a": "1"}):
        pass
    proton.finalize()


@pytest.mark.parametrize("second, type_name", [(1, "int64_t"), (-1, "int64_t"), ("1", None)])
def test_a_metrics_first_value_fixes_its_type_with_protons_message(second, type_name):
    proton.start("typed", backend="cpu")
    with proton.scope("test0", {"a (pty)": 1.0}):
        pass
    new = type_name or "std::string"
    with pytest.raises(ValueError, match=rf"Metric value type mismatch for valueId 0 \(a\): current=double, "
                                         rf"new={new}"), proton.scope("test0", {"a (pty)": second}):
        pass
    proton.finalize()


class RecordingHook(Hook):
    """A user's hook: records what the manager asks of it."""

    priority = 5

    def __init__(self):
        self.calls = []

    def activate(self):
        self.calls.append("activate")

    def deactivate(self):
        self.calls.append("deactivate")


def test_start_takes_a_hook_object_which_is_active_while_an_active_session_uses_it():
    hook = RecordingHook()
    sid = proton.start("hooked", backend="cpu", hook=hook)
    proton.activate(sid)
    proton.activate(sid)
    assert HookManager.active_hooks == [hook]  # one instance, however often activated
    assert list(HookManager.session_hooks[sid].values()) == [True]
    proton.deactivate(sid)
    assert list(HookManager.session_hooks[sid].values()) == [False]
    assert HookManager.active_hooks == []
    proton.deactivate(sid)  # twice is fine
    proton.activate(sid)
    proton.finalize()
    assert hook.calls == ["activate", "deactivate", "activate", "deactivate"]
    assert sid not in HookManager.session_hooks


def test_the_hook_manager_keeps_a_hook_while_any_session_uses_it(knobs):
    HookManager.register(LaunchHook(), 0)
    HookManager.register(LaunchHook(), 0)  # the launch hook is a singleton
    assert HookManager.active_hooks == [LaunchHook()]
    assert HookManager.session_hooks[0][LaunchHook()] is True
    HookManager.register(LaunchHook(), 1)
    HookManager.unregister(0)
    assert HookManager.active_hooks == [LaunchHook()]
    HookManager.unregister(1)
    assert HookManager.active_hooks == []
    other = RecordingHook()
    HookManager.register(other, 2)
    HookManager.register(LaunchHook(), 2)
    assert HookManager.active_hooks == [LaunchHook(), other]  # higher priority first
    HookManager.unregister()
    assert HookManager.active_hooks == [] and other.calls == ["activate", "deactivate"]


def test_a_configured_launch_hook_object_filters_kernels(knobs, fake):
    evaluated = []
    hook = LaunchHook()
    hook.configure(include=".*foo")
    proton.start("filtered", backend="fake", hook=hook)
    for raw in ("foo_kernel", "bar_kernel"):
        md = LazyDict({"name": raw, "function": None, "stream": 0},
                      lambda raw=raw: evaluated.append(raw) or {"name": raw + "_meta"})
        knobs.launch_enter_hook(md)
        fake().launch(raw, 10)
    proton.finalize()
    assert evaluated == ["foo_kernel"]
    assert {c["frame"]["name"] for c in load("filtered.hatchet")["children"]} == {"foo_kernel_meta", "bar_kernel"}


def test_every_hooked_launch_gets_its_own_id_in_its_thread(knobs, fake):
    launch_module = importlib.import_module("lepton.hooks.launch")
    proton.start("ids", backend="fake", hook="triton")
    ids = []

    def launches(name):
        for _ in range(100):
            knobs.launch_enter_hook(LazyDict({"name": name, "function": None, "stream": 0}, lambda: {}))
            ids.append(launch_module.id.get())

    threads = [threading.Thread(target=launches, args=(n,)) for n in ("foo", "bar")]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    proton.finalize()
    assert len(set(ids)) == 200 and None not in ids


def test_kernels_launched_by_launch_metadata_sit_under_the_metadata_node(knobs, fake):
    proton.start("meta", backend="fake", hook="triton")

    def meta():
        fake().launch("reduce_kernel", 5)  # x.sum().item()
        return {"name": "foo_test", "bytes": 4}

    with proton.scope("test0"):
        knobs.launch_enter_hook(LazyDict({"name": "foo", "function": None, "stream": 0}, meta))
        fake().launch("foo", 10)
    proton.finalize()
    test0 = child(load("meta.hatchet"), "test0")
    assert COMPUTE_METADATA_SCOPE_NAME == "__proton_launch_metadata"
    assert [c["frame"]["name"] for c in child(test0, COMPUTE_METADATA_SCOPE_NAME)["children"]] == ["reduce_kernel"]


def test_tritons_disable_knob_turns_start_into_a_no_op(monkeypatch, tmp_path):
    triton = types.ModuleType("triton")
    triton.knobs = types.SimpleNamespace(proton=types.SimpleNamespace(disable=True))
    monkeypatch.setitem(sys.modules, "triton", triton)
    assert proton.start("off", backend="cpu") is None
    with proton.scope("s"):
        pass
    proton.finalize()
    assert not (tmp_path / "off.hatchet").exists()
    triton.knobs.proton.disable = False
    assert proton.start("on", backend="cpu") == proton.start("on", backend="cpu")
    proton.finalize()
    assert (tmp_path / "on.hatchet").exists()


@pytest.mark.parametrize("module", ["lepton.viewer", "lepton.hooks.hook", "lepton.hooks.launch", "lepton.mode",
                                    "lepton.data", "lepton.context"])
def test_protons_module_paths_exist(module):
    importlib.import_module(module)


@pytest.mark.parametrize("module, expected", [("lepton", "usage: lepton"), ("lepton.viewer", "usage: lepton-view")])
def test_python_dash_m_runs_the_cli_and_the_viewer(module, expected):
    out = subprocess.run([sys.executable, "-m", module, "--help"], capture_output=True, text=True, timeout=60,
                         env={"PYTHONPATH": str(SRC)}, check=False)
    assert out.returncode == 0 and expected in out.stdout, out.stderr
