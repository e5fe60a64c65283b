"""Issue 34: a profile once recorded is never lost, and a mistake at `start` leaves nothing behind.

1. A session name that is not a string: a path is taken as its `os.fspath`; anything else is refused
   at `start`, and one session that cannot be written never stops the others.
2. Two sessions, one file: the second `start` is refused; a fallback never replaces a file.
3. SIGTERM and SIGHUP in plain Python (no CLI) write the profile and exit 128 + signum.
4. Ctrl-C during a write (the program's `finalize` or the one at exit) waits for the write.

Each test runs in a folder of its own (the autouse fixture in tests/conftest.py).
"""
from __future__ import annotations

import json
import os
import pathlib
import signal
import subprocess
import sys
import tempfile
import textwrap
import threading
from pathlib import Path

import pytest

import lepton as proton
from lepton import writers
from lepton.errors import UsageError
from lepton.backends.base import EXTRA_BACKENDS_VARIABLE
from lepton.runtime.registry import REGISTRY
from twins import FAKE_BACKEND

SRC = Path(__file__).resolve().parents[2] / "src"
TESTS = Path(__file__).resolve().parents[1]  # the fake backend's package, twins
TIMEOUT_S = 60


def names(path) -> set[str]:
    """The names of ROOT's children in a hatchet file (it must parse)."""
    return {c["frame"]["name"] for c in json.loads(Path(path).read_text())[0]["children"]}


def run_python(code: str, cwd: Path) -> subprocess.CompletedProcess:
    """Runs `code` in a fresh interpreter (plain python, no `lepton` CLI) in `cwd`."""
    env = {k: v for k, v in os.environ.items() if k not in ("LEPTON_DISABLE", "TRITON_PROTON_DISABLE")}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(SRC), str(TESTS), env.get("PYTHONPATH")]))
    env[EXTRA_BACKENDS_VARIABLE] = FAKE_BACKEND  # backend="fake"
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], cwd=cwd, env=env, check=False,
                          capture_output=True, text=True, timeout=TIMEOUT_S)


class _PathLike:
    def __init__(self, path) -> None:
        self.path = path

    def __fspath__(self):
        return self.path


# -- 1. the session name ----------------------------------------------------------------------------
@pytest.mark.parametrize("name", [pathlib.Path("a"), pathlib.PurePosixPath("a"), _PathLike("a")])
def test_a_path_is_a_session_name(name):
    proton.start(name, backend="cpu")
    with proton.scope("s"):
        pass
    assert proton.finalize() == ["a.hatchet"]
    assert names("a.hatchet") == {"s"}


def test_a_path_and_its_string_are_one_session():
    sid = proton.start(pathlib.Path("a"), backend="cpu")
    assert proton.start("a", backend="cpu") == sid
    assert proton.finalize() == ["a.hatchet"]


@pytest.mark.parametrize("name, shown", [
    (42, "int (42)"), (b"a", "bytes (b'a')"), (1.5, "float (1.5)"), (["a"], "list (['a'])"),
    (_PathLike(b"a"), "a path whose os.fspath is bytes (b'a')")])
def test_a_name_that_is_not_a_string_or_a_path_is_refused_at_start_and_leaves_nothing(name, shown):
    with pytest.raises(UsageError) as caught:
        proton.start(name, backend="cpu")
    message = str(caught.value)
    assert message == (f"start(): a session name must be a string or a path (os.PathLike), not {shown}; "
                       "pass the output file's name, e.g. 'proton' or 'out/run1'")
    assert isinstance(caught.value, TypeError)  # what Proton raises for it (nanobind's str argument)
    assert REGISTRY.sessions == {} and REGISTRY.backends == {}
    proton.start("good", backend="cpu")
    with proton.scope("s"):
        pass
    assert proton.finalize() == ["good.hatchet"]
    assert names("good.hatchet") == {"s"}


def test_a_name_with_a_nul_character_is_refused_at_start():
    with pytest.raises(UsageError) as caught:
        proton.start("a\0b", backend="cpu")
    assert str(caught.value) == ("start(): a session name cannot hold a NUL character ('a\\x00b'); "
                                 "pass the output file's name, e.g. 'proton' or 'out/run1'")
    assert REGISTRY.sessions == {}


def test_the_issue_s_example_a_path_then_a_string_writes_both(capsys):
    proton.start(pathlib.Path("a"), backend="cpu")
    proton.start("good", backend="cpu")
    with proton.scope("s"):
        pass
    assert sorted(proton.finalize()) == ["a.hatchet", "good.hatchet"]
    assert names("a.hatchet") == names("good.hatchet") == {"s"}
    assert capsys.readouterr().err == ""


def test_one_session_that_cannot_be_written_does_not_stop_the_others(monkeypatch):
    """Defense in depth: whatever makes one session's write raise, the others are written, every
    session ends, and the first error is raised afterwards."""
    proton.start("bad", backend="cpu")
    proton.start("good", backend="cpu")
    with proton.scope("s"):
        pass
    real_write = writers.write

    def write(profile, name, fmt, suffix=""):
        if name == "bad":
            raise RuntimeError("cannot render")
        return real_write(profile, name, fmt, suffix)

    monkeypatch.setattr(writers, "write", write)
    with pytest.raises(RuntimeError, match="cannot render"):
        proton.finalize()
    assert names("good.hatchet") == {"s"}
    assert REGISTRY.sessions == {}


def test_at_exit_one_session_that_cannot_be_written_does_not_stop_the_others(tmp_path):
    out = run_python("""\
        import lepton as proton
        from lepton import writers
        proton.start("bad", backend="cpu")
        proton.start("good", backend="cpu")
        with proton.scope("s"):
            pass
        real_write = writers.write
        def write(profile, name, fmt, suffix=""):
            if name == "bad":
                raise RuntimeError("cannot render")
            return real_write(profile, name, fmt, suffix)
        writers.write = write
        """, tmp_path)
    assert out.returncode == 0, out.stderr
    assert out.stderr.splitlines() == [
        "lepton: error: could not write the profile of session 0 (bad) at exit: cannot render",
        "lepton: finalize() was not called; profile written at exit to good.hatchet"]
    assert names(tmp_path / "good.hatchet") == {"s"}


# -- 2. two sessions, one file ----------------------------------------------------------------------
@pytest.mark.parametrize("second", ["dup.hatchet", "./dup", "sub/../dup", "ABS"])
def test_a_second_session_writing_the_first_one_s_file_is_refused_at_start(second):
    os.mkdir("sub")
    second = os.path.abspath("dup") if second == "ABS" else second
    first = proton.start("dup", backend="cpu")
    with pytest.raises(UsageError) as caught:
        proton.start(second, backend="cpu")
    assert str(caught.value) == (
        f"start({second!r}): session {first} (started as 'dup') already writes "
        f"{os.path.abspath('dup.hatchet')}; give this session another name, "
        f"or finalize session {first} first")
    assert list(REGISTRY.sessions) == [first]
    with proton.scope("s"):
        pass
    assert proton.finalize() == ["dup.hatchet"]
    assert names("dup.hatchet") == {"s"}
    proton.start(second, backend="cpu")  # once the first has ended, the name is free
    proton.finalize()


def test_the_issue_s_example_leaves_the_first_session_recording():
    a = proton.start("dup", backend="cpu")
    with pytest.raises(UsageError, match="already writes"):
        proton.start("dup.hatchet", backend="cpu")
    proton.start("good", backend="cpu")
    with proton.scope("s"):
        pass
    assert sorted(proton.finalize()) == ["dup.hatchet", "good.hatchet"]
    assert names("dup.hatchet") == {"s"}


def test_the_same_name_again_is_the_same_session_as_in_proton():
    sid = proton.start("same", backend="cpu")
    proton.deactivate(sid)
    assert proton.start("same", backend="cpu") == sid
    assert REGISTRY.session(sid).active
    assert proton.finalize() == ["same.hatchet"]


def test_names_whose_files_differ_are_two_sessions():
    """`x` (tree) writes x.hatchet, `x.chrome_trace` (trace) x.chrome_trace: no file is shared."""
    proton.start("x", backend="cpu")
    proton.start("x.chrome_trace", backend="cpu", data="trace")
    proton.start("-", backend="cpu")  # stdout is no file
    assert len(REGISTRY.sessions) == 3
    REGISTRY.finalize(None, "")


def test_the_fallback_never_replaces_a_file_in_the_current_folder(tmp_path, capsys):
    (tmp_path / "file").write_text("not a folder")
    Path("prof.hatchet").write_text("a profile of an earlier run")
    asked = tmp_path / "file" / "x" / "prof"
    sid = proton.start(str(asked), backend="cpu")
    with proton.scope("a"):
        pass
    fallback = os.path.join(os.getcwd(), "prof.1.hatchet")
    assert proton.finalize(sid) == [fallback]
    assert Path("prof.hatchet").read_text() == "a profile of an earlier run"
    assert names(fallback) == {"a"}
    assert capsys.readouterr().err.splitlines() == [
        f"lepton: could not write {asked}.hatchet (Not a directory); profile written to {fallback}"]


def test_the_fallback_never_replaces_a_file_in_the_temporary_folder(tmp_path, monkeypatch, capsys):
    temp = tmp_path / "system-tmp"
    temp.mkdir()
    (temp / "prof.hatchet").write_text("someone else's")
    (temp / "prof.1.hatchet").write_text("someone else's too")
    monkeypatch.setattr(tempfile, "gettempdir", lambda: str(temp))
    monkeypatch.setattr(writers, "_fallback_folders", lambda: iter([str(temp)]))
    (tmp_path / "file").write_text("not a folder")
    sid = proton.start(str(tmp_path / "file" / "prof"), backend="cpu")
    fallback = str(temp / "prof.2.hatchet")
    assert proton.finalize(sid) == [fallback]
    assert (temp / "prof.hatchet").read_text() == "someone else's"
    assert (temp / "prof.1.hatchet").read_text() == "someone else's too"
    assert json.loads(Path(fallback).read_text())[0]["frame"]["name"] == "ROOT"
    assert capsys.readouterr().err.splitlines()[-1].endswith(f"; profile written to {fallback}")
    assert sorted(os.listdir(temp)) == ["prof.1.hatchet", "prof.2.hatchet", "prof.hatchet"]  # no temporary


def test_two_sessions_that_fall_back_to_one_folder_get_two_files(tmp_path, capsys):
    (tmp_path / "file").write_text("not a folder")
    proton.start(str(tmp_path / "file" / "a" / "prof"), backend="cpu")
    proton.start(str(tmp_path / "file" / "b" / "prof"), backend="cpu")
    written = proton.finalize()
    assert written == [os.path.join(os.getcwd(), "prof.hatchet"), os.path.join(os.getcwd(), "prof.1.hatchet")]
    assert len(capsys.readouterr().err.splitlines()) == 2


NOT_FINALIZED_LINE = "lepton: finalize() was not called; profile written at exit to t.hatchet"


# -- 3. SIGTERM and SIGHUP in plain python ----------------------------------------------------------
RECORD_THEN_SIGNAL = """\
import os, signal
import lepton as proton
{before}
proton.start("t", backend="cpu")
try:
    with proton.scope("work"):
        os.kill(os.getpid(), signal.{sig})
    print("after the signal", flush=True)
    {after}
finally:
    print("finally ran", flush=True)
"""


@pytest.mark.parametrize("sig, code", [("SIGTERM", 143), ("SIGHUP", 129)])
def test_sigterm_and_sighup_write_the_profile_and_exit_128_plus_the_signal(tmp_path, sig, code):
    out = run_python(RECORD_THEN_SIGNAL.format(sig=sig, before="", after=""), tmp_path)
    assert out.returncode == code, out.stderr
    assert out.stdout == "finally ran\n"
    assert out.stderr.splitlines() == [f"lepton: {sig} received; profile written at exit to t.hatchet"]
    assert names(tmp_path / "t.hatchet") == {"work"}


def test_a_handler_the_program_installed_is_called_and_decides(tmp_path):
    """The program's handler runs; it lets the program go on, and Lepton does not exit behind its
    back: the program finalizes itself."""
    before = textwrap.dedent("""\
        def handler(signum, frame):
            print("program handler", signum, flush=True)
        signal.signal(signal.SIGTERM, handler)""")
    after = "print(proton.finalize(), flush=True)"
    out = run_python(RECORD_THEN_SIGNAL.format(sig="SIGTERM", before=before, after=after), tmp_path)
    assert out.returncode == 0, out.stderr
    assert out.stdout == (f"program handler {int(signal.SIGTERM)}\n"
                          "after the signal\n['t.hatchet']\nfinally ran\n")
    assert out.stderr == ""
    assert names(tmp_path / "t.hatchet") == {"work"}


def test_a_program_handler_that_exits_still_gets_the_profile_written(tmp_path):
    before = textwrap.dedent("""\
        import sys
        def handler(signum, frame):
            print("program handler", flush=True)
            sys.exit(3)
        signal.signal(signal.SIGTERM, handler)""")
    out = run_python(RECORD_THEN_SIGNAL.format(sig="SIGTERM", before=before, after=""), tmp_path)
    assert out.returncode == 3, out.stderr
    assert out.stdout == "program handler\nfinally ran\n"
    assert out.stderr.splitlines() == [NOT_FINALIZED_LINE]
    assert names(tmp_path / "t.hatchet") == {"work"}


def test_an_ignored_sigterm_stays_ignored(tmp_path):
    before = "signal.signal(signal.SIGTERM, signal.SIG_IGN)"
    after = "print(proton.finalize(), signal.getsignal(signal.SIGTERM) is signal.SIG_IGN, flush=True)"
    out = run_python(RECORD_THEN_SIGNAL.format(sig="SIGTERM", before=before, after=after), tmp_path)
    assert out.returncode == 0, out.stderr
    assert out.stdout == "after the signal\n['t.hatchet'] True\nfinally ran\n"


def test_a_sigterm_during_the_program_s_finalize_waits_for_the_write(tmp_path):
    out = run_python("""\
        import os, signal
        import lepton as proton
        from twins.fake_backend import FakeBackend
        proton.start("t", backend="fake")
        fake = FakeBackend.instances[-1]
        with proton.scope("work"):
            fake.launch("k", 10)
        flush = fake._do_flush
        def flush_then_get_terminated():  # the backend's flush runs inside finalize
            os.kill(os.getpid(), signal.SIGTERM)
            flush()
        fake._do_flush = flush_then_get_terminated
        try:
            proton.finalize()
        finally:
            print("finally ran", flush=True)
        """, tmp_path)
    assert out.returncode == 143, out.stderr
    assert out.stdout == "finally ran\n" and out.stderr == ""
    assert names(tmp_path / "t.hatchet") == {"work"}


@pytest.fixture
def default_handlers():
    saved = {s: signal.signal(s, signal.SIG_DFL) for s in (signal.SIGTERM, signal.SIGHUP)}
    yield
    for s, handler in saved.items():
        signal.signal(s, handler)


def test_the_handlers_are_lepton_s_while_a_session_lives_and_restored_after(default_handlers):
    a = proton.start("a", backend="cpu")
    proton.start("b", backend="cpu")
    assert signal.getsignal(signal.SIGTERM) is not signal.SIG_DFL
    assert signal.getsignal(signal.SIGHUP) is not signal.SIG_DFL
    proton.finalize(a)
    assert signal.getsignal(signal.SIGTERM) is not signal.SIG_DFL  # session b still records
    with pytest.raises(SystemExit) as raised:
        os.kill(os.getpid(), signal.SIGTERM)
    assert raised.value.code == 143
    proton.finalize()
    assert signal.getsignal(signal.SIGTERM) is signal.SIG_DFL
    assert signal.getsignal(signal.SIGHUP) is signal.SIG_DFL


def test_a_handler_the_program_installs_after_start_is_kept_at_finalize(default_handlers):
    proton.start("a", backend="cpu")

    def mine(signum, frame):
        pass

    signal.signal(signal.SIGTERM, mine)
    proton.finalize()
    assert signal.getsignal(signal.SIGTERM) is mine
    assert signal.getsignal(signal.SIGHUP) is signal.SIG_DFL


def test_a_start_off_the_main_thread_installs_nothing(default_handlers):
    errors = []

    def start():
        try:
            proton.start("a", backend="cpu")
        except BaseException as e:  # noqa: BLE001
            errors.append(e)

    thread = threading.Thread(target=start)
    thread.start()
    thread.join()
    assert errors == []
    assert signal.getsignal(signal.SIGTERM) is signal.SIG_DFL
    proton.finalize()


# -- 4. Ctrl-C during a write -----------------------------------------------------------------------
def test_ctrl_c_during_the_write_at_exit_waits_for_the_write(tmp_path):
    out = run_python("""\
        import os, signal
        import lepton as proton
        from lepton import writers
        proton.start("t", backend="cpu")
        with proton.scope("work"):
            pass
        render = writers.RENDERERS["hatchet"]
        def interrupted_render(profile):
            os.kill(os.getpid(), signal.SIGINT)  # Ctrl-C, in the middle of the write
            return render(profile)
        writers.RENDERERS["hatchet"] = interrupted_render
        """, tmp_path)
    assert out.stderr.splitlines() == [NOT_FINALIZED_LINE]
    assert names(tmp_path / "t.hatchet") == {"work"}


def test_ctrl_c_during_finalize_raises_once_the_profile_is_written(monkeypatch):
    proton.start("t", backend="cpu")
    with proton.scope("work"):
        pass
    render = writers.RENDERERS["hatchet"]

    def interrupted_render(profile):
        os.kill(os.getpid(), signal.SIGINT)
        return render(profile)

    monkeypatch.setitem(writers.RENDERERS, "hatchet", interrupted_render)
    with pytest.raises(KeyboardInterrupt):
        proton.finalize()
    assert names("t.hatchet") == {"work"}
    assert REGISTRY.sessions == {}
