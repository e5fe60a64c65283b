"""Issue 34, the viewer's rows: numbers beyond the float range (6), files that are no regular file
(7), and a depth that shows nothing (12). Each ends in one line, never a traceback or a hang."""
from __future__ import annotations

import importlib
import io
import json
import os
import subprocess
import sys
import threading
from pathlib import Path

import msgpack
import pytest

import lepton as proton
from lepton.cli.view import main

load = importlib.import_module("lepton.viewer.load")  # `lepton.viewer.load` is also a function's name

SRC = Path(__file__).resolve().parents[2] / "src"


def run_view(*argv):
    out, err = io.StringIO(), io.StringIO()
    code = main([str(a) for a in argv], stdout=out, stderr=err)
    return code, out.getvalue(), err.getvalue()


def run_view_process(*argv, timeout=60):
    """`lepton-view` in a process of its own (`python -m lepton.viewer`): what a user sees."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(SRC), os.environ.get("PYTHONPATH")]))}
    return subprocess.run([sys.executable, "-m", "lepton.viewer", *map(str, argv)], capture_output=True,
                          text=True, timeout=timeout, env=env, check=False)


# -- 6. numbers beyond the float range ---------------------------------------------------------------
@pytest.fixture
def big_profiles(tmp_path):
    """The issue's profile, written by Lepton in both formats: `m` = 10**400 on one scope."""
    paths = []
    for fmt in ("hatchet", "hatchet_msgpack"):
        proton.start(str(tmp_path / "big"), backend="cpu")
        with proton.scope("x", {"m": 10**400}):
            pass
        with proton.scope("y", {"m": 5}):
            pass
        with proton.scope("z", {"m": -(10**400)}):
            pass
        paths += proton.finalize(output_format=fmt)
    return paths


def test_the_msgpack_writer_keeps_a_number_beyond_the_float_range_as_inf(big_profiles):
    """It raised OverflowError at finalize: the whole profile was lost."""
    document = msgpack.unpackb(Path(big_profiles[1]).read_bytes(), strict_map_key=False)
    metrics = {c["frame"]["name"]: c["metrics"]["m"] for c in document[0]["children"]}
    assert metrics == {"x": float("inf"), "y": 5, "z": float("-inf")}


@pytest.mark.parametrize("fmt", [0, 1], ids=["json", "msgpack"])
def test_the_viewer_shows_numbers_beyond_the_float_range_as_inf_with_one_warning(big_profiles, fmt):
    path = big_profiles[fmt]
    code, out, err = run_view("-m", "m", path)
    assert code == 0, err
    lines = out.splitlines()
    assert "─ inf x" in out and "─ -inf z" in out and "─ 5.000 y" in out, out
    if fmt == 0:  # the JSON holds the integer itself; MessagePack could hold only the float
        assert err == (f"lepton-view: warning: '{path}': metric 'm' holds integers beyond the float range "
                       "(over 1.8e308); they are shown as inf\n")
    else:
        assert err == ""


def test_the_issue_s_command_line_one_warning_and_no_traceback(big_profiles, tmp_path):
    out = run_view_process("-m", "m", big_profiles[0])
    assert out.returncode == 0, out.stderr
    assert len(out.stderr.splitlines()) == 1 and "Traceback" not in out.stderr
    # the report sizes boxes by the metric: inf sizes nothing, which the page refuses in one line
    out = run_view_process("--html", tmp_path / "r.html", "-m", "m", big_profiles[0])
    assert out.returncode == 2, out.stderr
    assert "Traceback" not in out.stderr
    lines = out.stderr.splitlines()
    assert len(lines) == 2 and "beyond the float range" in lines[0] and "nothing to draw" in lines[1]
    assert not (tmp_path / "r.html").exists()


def test_vectors_and_several_metrics_beyond_the_float_range(tmp_path):
    path = tmp_path / "hand.hatchet"
    path.write_text('[{"frame": {"name": "ROOT"}, "metrics": {"a": 0, "b": 0}, "children": ['
                    '{"frame": {"name": "k"}, "metrics": {"a": ' + "9" * 320 + ', "b": -' + "1" * 400
                    + ', "v": [' + "7" * 330 + ', 1]}, "children": []}]}, {}]')
    with pytest.warns(load.ProfileWarning, match="metrics 'a', 'b' hold integers beyond the float range"):
        tree = load.load(path)
    assert tree.numbers["a"][1] == float("inf") and tree.numbers["b"][1] == float("-inf")
    code, out, err = run_view("-m", "a", path)
    assert code == 0
    assert err.count("\n") == 1 and "metrics 'a', 'b' hold integers" in err


# -- 7. special files --------------------------------------------------------------------------------
@pytest.mark.parametrize("target, what", [("/dev/zero", "a character device"),
                                          ("/dev/urandom", "a character device"),
                                          ("/dev/null", "a character device")])
def test_a_link_to_a_device_is_refused_in_one_line(tmp_path, target, what):
    if not os.path.exists(target):
        pytest.skip(f"no {target} here")
    link = tmp_path / "z.hatchet"
    link.symlink_to(target)
    code, out, err = run_view(link)
    assert code == 2 and out == ""
    assert err == (f"lepton-view: error: cannot read '{link}': it is {what} ({target}), not a regular file; "
                   "lepton-view reads profile files\n")


def test_a_fifo_is_refused_without_waiting_for_a_writer(tmp_path):
    fifo = tmp_path / "f.hatchet"
    os.mkfifo(fifo)
    result = {}
    thread = threading.Thread(target=lambda: result.setdefault("r", run_view(fifo)), daemon=True)
    thread.start()
    thread.join(10)
    if thread.is_alive():  # unblock the reader so that the test process can end
        with open(fifo, "wb"):
            pass
        pytest.fail("lepton-view waited on a FIFO")
    code, out, err = result["r"]
    assert code == 2 and err == (f"lepton-view: error: cannot read '{fifo}': it is a FIFO (named pipe), "
                                 "not a regular file; lepton-view reads profile files\n")


def test_a_folder_is_refused_in_one_line(tmp_path):
    code, _, err = run_view(tmp_path)
    assert code == 2 and err == (f"lepton-view: error: cannot read '{tmp_path}': it is a folder, not a "
                                 "regular file; lepton-view reads profile files\n")


def test_the_issue_s_dev_zero_link_ends_at_once_with_exit_2(tmp_path):
    link = tmp_path / "z.hatchet"
    link.symlink_to("/dev/zero")
    out = run_view_process(link, timeout=30)
    assert out.returncode == 2 and out.stderr.count("\n") == 1 and "character device" in out.stderr


def test_a_file_over_the_size_limit_is_refused_before_it_is_read(tmp_path, monkeypatch):
    path = tmp_path / "p.hatchet"
    path.write_text(json.dumps([{"frame": {"name": "ROOT"}, "metrics": {"time (ns)": 1}, "children": []}, {}]))
    size = path.stat().st_size
    monkeypatch.setenv(load.MAX_BYTES_VARIABLE, str(size - 1))
    read = []
    monkeypatch.setattr(os, "read", lambda *a: read.append(a) or b"")
    code, _, err = run_view(path)
    assert code == 2 and read == []
    assert err == (f"lepton-view: error: '{path}' is {size} bytes, over lepton-view's limit of {size - 1} "
                   f"bytes; to read it anyway, set {load.MAX_BYTES_VARIABLE}=<bytes> (0: no limit)\n")
    monkeypatch.undo()
    monkeypatch.setenv(load.MAX_BYTES_VARIABLE, str(size))
    assert run_view(path)[0] == 0
    monkeypatch.setenv(load.MAX_BYTES_VARIABLE, "0")
    assert run_view(path)[0] == 0


def test_the_default_limit_is_generous_and_a_bad_override_is_one_line(tmp_path, monkeypatch):
    assert load.max_bytes() >= 4 << 30
    path = tmp_path / "p.hatchet"
    path.write_text("[]")
    monkeypatch.setenv(load.MAX_BYTES_VARIABLE, "lots")
    code, _, err = run_view(path)
    assert code == 2 and err == (f"lepton-view: error: {load.MAX_BYTES_VARIABLE}='lots' is not a number of "
                                 "bytes (a whole number; 0: no limit)\n")


def test_a_file_that_grows_past_the_limit_while_read_is_refused(tmp_path, monkeypatch):
    """A regular file whose size says nothing (/proc's files say 0) is read up to the limit only."""
    monkeypatch.setenv(load.MAX_BYTES_VARIABLE, "100")
    path = tmp_path / "p.hatchet"
    path.write_bytes(b" " * 50)
    real_fstat = os.fstat
    monkeypatch.setattr(os, "fstat", lambda fd: os.stat_result((*real_fstat(fd)[:6], 0, *real_fstat(fd)[7:])))
    path.write_bytes(b" " * 150)
    with pytest.raises(load.ProfileError, match="over lepton-view's limit of 100 bytes"):
        load.read_file(path)


def test_proc_files_are_read(tmp_path):
    """A regular file of size 0 in /proc still has content: it is read (and found not a profile)."""
    if not os.path.exists("/proc/self/status"):
        pytest.skip("no /proc")
    code, _, err = run_view("/proc/self/status")
    assert code == 2 and "is not a profile" in err


# -- 12. the depth -----------------------------------------------------------------------------------
@pytest.mark.parametrize("depth", ["-5", "-1", "0"])
def test_a_depth_that_shows_nothing_is_refused_in_one_line(tmp_path, depth):
    path = tmp_path / "p.hatchet"
    path.write_text(json.dumps([{"frame": {"name": "ROOT"}, "metrics": {"time (ns)": 1}, "children": []}, {}]))
    code, out, err = run_view("-d", depth, path)
    assert (code, out) == (2, "")
    assert err == f"lepton-view: error: -d/--depth must be 1 or more (1 shows ROOT alone), not {depth}\n"
    code, out, _ = run_view("-d", "1", path)
    assert code == 0 and out.splitlines()[0].endswith("ROOT")
