"""Issue 34, rows 8-10: a user's mistake raises one clear line at the call that made it and leaves
no state behind; a profile that cannot go where asked goes elsewhere, or Lepton's own error says
every place it tried.

8. Nothing writable: `WriteError` naming each place tried (not the temporary module's error), and
   the `lepton` CLI exits 1 with one line.
9. A metric dict with one refused metric records none of them.
10. `exit_scope('c')` while a `with scope('d')` opened inside it is still open closes nothing.

Each test runs in a folder of its own (the autouse fixture in tests/conftest.py).
"""
from __future__ import annotations

import errno
import json
import os
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

import pytest

import lepton as proton
from lepton import writers
from lepton.errors import MetricTypeError, UsageError, WriteError
from lepton.backends.base import EXTRA_BACKENDS_VARIABLE
from lepton.runtime.registry import REGISTRY
from twins import FAKE_BACKEND

SRC = Path(__file__).resolve().parents[2] / "src"
TESTS = Path(__file__).resolve().parents[1]
TIMEOUT_S = 60


def tree(path) -> dict:
    """ROOT's children in a hatchet file: name -> (metrics, children as the same dict)."""
    def walk(node):
        return {c["frame"]["name"]: (c["metrics"], walk(c)) for c in node["children"]}

    return walk(json.loads(Path(path).read_text())[0])


def environment() -> dict:
    env = {k: v for k, v in os.environ.items() if k not in ("LEPTON_DISABLE", "TRITON_PROTON_DISABLE")}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(SRC), str(TESTS), env.get("PYTHONPATH")]))
    env[EXTRA_BACKENDS_VARIABLE] = FAKE_BACKEND
    return env


# -- 8. nothing writable ----------------------------------------------------------------------------
def _no_usable_temporary_folder():
    """What `tempfile.gettempdir()` raises where no candidate folder can be written."""
    raise FileNotFoundError(errno.ENOENT, "No usable temporary directory found in ['/tmp', '/var/tmp']")


@pytest.fixture
def nothing_writable(tmp_path, monkeypatch):
    """The target's folder is a file, the current folder is gone, and no temporary folder is usable."""
    (tmp_path / "file").write_text("not a folder")
    gone = tmp_path / "gone"
    gone.mkdir()
    os.chdir(gone)
    os.rmdir(gone)
    monkeypatch.setattr(tempfile, "gettempdir", _no_usable_temporary_folder)
    return tmp_path / "file" / "prof"


def test_nothing_writable_raises_lepton_s_write_error_naming_each_place(nothing_writable, capsys):
    proton.start(str(nothing_writable), backend="cpu")
    with proton.scope("s"):
        pass
    with pytest.raises(WriteError) as caught:
        proton.finalize()
    message = str(caught.value)
    assert message == (f"could not write the profile anywhere: {nothing_writable}.hatchet (Not a directory); "
                       "the temporary folder (No usable temporary directory found in ['/tmp', '/var/tmp'])")
    assert "\n" not in message
    assert REGISTRY.sessions == {}


def test_the_cli_exits_1_with_one_line_when_nothing_is_writable(tmp_path):
    (tmp_path / "file").write_text("not a folder")
    script = tmp_path / "script.py"
    script.write_text(textwrap.dedent("""\
        import errno, os, tempfile
        def no_usable():
            raise FileNotFoundError(errno.ENOENT, "No usable temporary directory found in ['/tmp']")
        tempfile.gettempdir = no_usable
        os.chdir("/proc")  # the current folder cannot take a file either
        import lepton as proton
        with proton.scope("s"):
            pass
        """))
    out = subprocess.run([sys.executable, "-m", "lepton", "-b", "cpu", "-n", str(tmp_path / "file" / "prof"),
                          str(script)], cwd=tmp_path, env=environment(), capture_output=True, text=True,
                         timeout=TIMEOUT_S, check=False)
    assert out.returncode == 1
    lines = out.stderr.splitlines()
    assert len(lines) == 1, out.stderr
    assert lines[0].startswith(f"lepton: error: could not write the profile of session 0: could not write the "
                               f"profile anywhere: {tmp_path}/file/prof.hatchet (Not a directory); /proc/prof.hatchet (")
    assert lines[0].endswith("; the temporary folder (No usable temporary directory found in ['/tmp'])")


# -- 9. a refused metric records none of its siblings -----------------------------------------------
def test_a_refused_metric_dict_records_none_of_its_metrics():
    proton.start("t", backend="cpu")
    with proton.scope("s", {"m": 1}):
        pass
    with pytest.raises(MetricTypeError, match=r"\(m\): current=int64_t, new=double"):
        with proton.scope("s", {"a_first": 7, "m": 2.5}):
            pass
    assert proton.context.depth() == 0
    proton.finalize()
    assert tree("t.hatchet") == {"s": ({"m": 1}, {})}


def test_a_refused_metric_dict_at_exit_scope_records_none_and_leaves_the_scope_open():
    proton.start("t", backend="cpu")
    proton.enter_scope("s", metrics={"v": [1, 2]})
    with pytest.raises(MetricTypeError, match="Vector metric size mismatch"):
        proton.exit_scope("s", metrics={"a_first": 7, "v": [1, 2, 3]})
    assert proton.context.depth() == 1
    proton.exit_scope("s", metrics={"a_first": 1})
    proton.finalize()
    assert tree("t.hatchet") == {"s": ({"a_first": 1, "v": [1, 2]}, {})}


def test_two_names_of_one_metric_in_one_dict_are_merged_in_order():
    """`a` and `a (exc)` are one metric: the second adds to the first, as before."""
    proton.start("t", backend="cpu")
    with proton.scope("s", {"a": 1, "a(exc)": 2}):
        pass
    proton.finalize()
    assert tree("t.hatchet")["s"][0] == {"a": 3}


def test_a_metric_refused_by_one_session_is_recorded_by_none():
    """Session `old` knows `m` as an int, session `new` has not seen it: neither records the dict."""
    proton.start("old", backend="cpu")
    with proton.scope("s", {"m": 1}):
        pass
    proton.start("new", backend="cpu")
    with pytest.raises(MetricTypeError):
        with proton.scope("s", {"a_first": 7, "m": 2.5}):
            pass
    proton.finalize()
    assert tree("old.hatchet") == {"s": ({"m": 1}, {})}
    assert tree("new.hatchet") == {"s": ({}, {})} or tree("new.hatchet") == {}


def test_a_refused_launch_metric_of_the_hook_records_none_of_its_siblings():
    """The launch hook's first launch of a kind adds its metrics at once (`Session.launch_counter`)."""
    session = REGISTRY.session(proton.start("t", backend="cpu"))
    pid = REGISTRY.hot_path.paths.child(0, "op")
    session.add_metrics(pid, {"m": 1})
    with pytest.raises(MetricTypeError):
        session.launch_counter((pid, (("a_first", 7), ("m", 2.5))))
    proton.finalize()
    assert tree("t.hatchet") == {"op": ({"m": 1}, {})}


# -- 10. exit_scope across a `with scope` -----------------------------------------------------------
def test_exit_scope_across_an_open_with_scope_closes_nothing():
    proton.start("t", backend="cpu")
    proton.enter_scope("c")
    with proton.scope("d"):
        with pytest.raises(UsageError) as caught:
            proton.exit_scope("c")
        assert proton.context.depth() == 2
    assert str(caught.value) == ("Context stack is not balanced: exit_scope('c') would close 'c' while 'd', "
                                 "entered inside it (with scope), is still open; leave 'd' first, then "
                                 "exit_scope('c') (nothing was closed)")
    with proton.scope("inside_c"):
        pass
    assert proton.exit_scope("c") is not None
    with proton.scope("later"):
        pass
    assert proton.context.depth() == 0
    proton.finalize()
    assert tree("t.hatchet") == {"c": ({}, {"d": ({}, {}), "inside_c": ({}, {})}), "later": ({}, {})}


def test_exit_scope_across_an_open_with_scope_adds_no_metrics():
    proton.start("t", backend="cpu")
    proton.enter_scope("c")
    with proton.scope("d"):
        with pytest.raises(UsageError, match="nothing was closed"):
            proton.exit_scope(metrics={"b": 1})
    proton.exit_scope("c", metrics={"b": 2})
    proton.finalize()
    assert tree("t.hatchet") == {"c": ({"b": 2}, {"d": ({}, {})})}


# -- a flush that fails --------------------------------------------------------------------------
def test_a_finalize_whose_flush_raises_still_writes_what_was_delivered(fake, monkeypatch):
    """A backend that fails at its last flush (a GPU gone, a buffer it cannot decode): the profile
    is written with what was delivered before, then the error is raised."""
    proton.start("broken", backend="fake")
    backend = fake()
    with proton.scope("delivered"):
        backend.launch("k", 10)
    backend.flush()
    with proton.scope("never_delivered"):
        backend.launch("k", 10)
    monkeypatch.setattr(backend, "_do_flush", lambda: (_ for _ in ()).throw(ValueError("cannot decode")))
    with pytest.raises(ValueError, match="cannot decode"):
        proton.finalize()
    assert set(tree("broken.hatchet")) == {"delivered", "never_delivered"}
    assert tree("broken.hatchet")["delivered"][1]["k"][0]["count"] == 1
    assert REGISTRY.sessions == {}


# -- a signal just before the write's wait begins (found by tests/integration/test_fuzz_api_2.py) --
INTERRUPTED_ONCE = """\
import lepton as proton
from lepton.runtime import exit_signals

real, calls = exit_signals.deferred, []


def interrupted_once(*args, **kwargs):
    if not calls:  # a Ctrl-C that lands just before the wait for the write begins
        calls.append(1)
        raise KeyboardInterrupt
    return real(*args, **kwargs)


exit_signals.deferred = interrupted_once
proton.start("t", backend="cpu")
with proton.scope("work"):
    pass
"""


def run_python(code: str, cwd) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], cwd=cwd, env=environment(),
                          check=False, capture_output=True, text=True, timeout=TIMEOUT_S)


def test_a_signal_just_before_the_write_at_exit_begins_is_no_loss(tmp_path):
    """SIGHUP, then Ctrl-C as the write at exit started: the atexit callback ended with
    "Exception ignored" and no profile."""
    out = run_python(INTERRUPTED_ONCE, tmp_path)
    assert out.returncode == 0, out.stderr
    assert out.stderr.splitlines() == ["lepton: finalize() was not called; profile written at exit to t.hatchet"]
    assert set(tree(tmp_path / "t.hatchet")) == {"work"}


def test_a_signal_just_before_finalize_s_write_begins_leaves_the_session_for_the_write_at_exit(tmp_path):
    out = run_python(INTERRUPTED_ONCE + textwrap.dedent("""\
        try:
            proton.finalize()
        except KeyboardInterrupt:
            print("interrupted", flush=True)
        """), tmp_path)
    assert out.returncode == 0 and out.stdout == "interrupted\n", out.stderr
    assert out.stderr.splitlines() == ["lepton: finalize() was not called; profile written at exit to t.hatchet"]
    assert set(tree(tmp_path / "t.hatchet")) == {"work"}


def test_a_signal_while_the_handlers_are_swapped_puts_them_back(monkeypatch):
    import signal as signals

    from lepton.runtime import exit_signals

    before = {s: signals.getsignal(s) for s in (signals.SIGINT, signals.SIGTERM, signals.SIGHUP)}
    real, calls = signals.signal, []

    def interrupted_second_swap(sig, handler):
        calls.append(sig)
        if len(calls) == 2:
            raise KeyboardInterrupt
        return real(sig, handler)

    monkeypatch.setattr(signals, "signal", interrupted_second_swap)
    with pytest.raises(KeyboardInterrupt):
        with exit_signals.deferred():
            pytest.fail("the body ran")
    monkeypatch.undo()
    assert {s: signals.getsignal(s) for s in before} == before
