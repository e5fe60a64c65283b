"""No profile is lost on the write side: deep trees, values JSON cannot hold, paths that fail.

Each test runs in its own current folder (the autouse fixture in tests/conftest.py), so "the
current folder" below is a folder of the test's own.
"""
from __future__ import annotations

import contextlib
import errno
import json
import os
import stat
import sys
import tempfile
from pathlib import Path

import msgpack
import pytest

import lepton as proton
from lepton.errors import LeptonError, WriteError
from lepton.writers import write_atomic

DEPTH = 5_000  # ten times the depth at which the recursive writers hit RecursionError (~495, ~340)
# Three times the old limit (hatchet JSON's indentation made its size quadratic in depth up to issue 34).
JSON_DEPTH = 1_500


def nested_scopes(depth: int, metrics_at: int = -1, metrics: dict | None = None):
    """Enters `depth` nested scopes s0/s1/...; the one at `metrics_at` gets `metrics`."""
    stack = contextlib.ExitStack()
    for i in range(depth):
        stack.enter_context(proton.scope(f"s{i}", metrics if i == metrics_at else None))
    return stack


def strict_json(text):
    """json.loads that rejects NaN, Infinity and -Infinity, as orjson, browsers and Perfetto do."""
    def reject(constant):
        raise ValueError(f"not JSON: {constant}")

    return json.loads(text, parse_constant=reject)


def leftover_temporaries(*folders) -> list[str]:
    return [os.path.join(f, n) for f in folders if os.path.isdir(f) for n in os.listdir(f)
            if n.startswith(".lepton-") and n.endswith(".tmp")]


# -- depth ------------------------------------------------------------------------------------------
def test_scopes_1500_deep_are_written_as_hatchet_json_and_returned_by_data_get(tmp_path):
    """One test for both."""
    sid = proton.start(str(tmp_path / "deep"), backend="cpu")
    with nested_scopes(JSON_DEPTH):
        pass
    tree, _ = proton.data.get(sid)
    assert proton.finalize(sid, "hatchet") == [str(tmp_path / "deep.hatchet")]
    names = []
    while tree["children"]:
        (tree,) = tree["children"]
        names.append(tree["frame"]["name"])
    assert names == [f"s{i}" for i in range(JSON_DEPTH)]
    text = (tmp_path / "deep.hatchet").read_bytes()
    assert text.startswith(b"\n[\n    {\n") and text.endswith(b"\n    },\n    {}\n]\n")
    # json.loads itself recurses, so the depth is read by the viewer's node-by-node reader. Nodes
    # more than 100 levels below ROOT are written on one line each (the size stays linear in depth).
    assert text.count(b'"name": "s') == JSON_DEPTH
    from lepton.viewer.deep import read_json
    from lepton.viewer.walk import WalkBuilder

    builder = WalkBuilder()
    read_json(text.decode(), builder)
    assert max(builder.walk.depths) == JSON_DEPTH and builder.walk.names[-1] == f"s{JSON_DEPTH - 1}"


def test_scopes_5000_deep_are_written_as_hatchet_msgpack(tmp_path):
    """msgpack's packer stops at 512 levels and its reader near 510: the writer packs node by node,
    and the file is read back here with the streaming Unpacker's headers, level by level."""
    sid = proton.start(str(tmp_path / "deep"), backend="cpu")
    with nested_scopes(DEPTH):
        with proton.scope("leaf", {"m": 1}):
            pass
    (path,) = proton.finalize(sid, "hatchet_msgpack")
    unpacker = msgpack.Unpacker(open(path, "rb"), strict_map_key=False)
    assert unpacker.read_array_header() == 2
    names = []
    for level in range(DEPTH + 2):  # ROOT, s0 ... s4999, leaf: each a {frame, metrics, children} map
        assert unpacker.read_map_header() == (4 if level == 0 else 3)  # ROOT: + "lepton" (the run)
        assert unpacker.unpack() == "frame"
        names.append(unpacker.unpack()["name"])
        assert unpacker.unpack() == "metrics"
        metrics = unpacker.unpack()
        if level == 0:
            assert unpacker.unpack() == "lepton" and "command_line" in unpacker.unpack()
        assert unpacker.unpack() == "children"
        children = unpacker.read_array_header()
    assert names == ["ROOT", *(f"s{i}" for i in range(DEPTH)), "leaf"]
    assert (metrics, children) == ({"m": 1}, 0)
    assert unpacker.unpack() == {}  # the device block


def test_an_int_beyond_64_bits_is_written_to_msgpack_as_a_float(tmp_path):
    sid = proton.start(str(tmp_path / "big"), backend="cpu")
    with proton.scope("s", {"bytes": 2**70, "v": [2**65, 1]}):
        pass
    (path,) = proton.finalize(sid, "hatchet_msgpack")
    (s,) = msgpack.unpackb(Path(path).read_bytes(), strict_map_key=False)[0]["children"]
    assert s["metrics"] == {"bytes": float(2**70), "v": [float(2**65), 1.0]}


def test_scopes_5000_deep_are_written_as_a_chrome_trace(tmp_path, monkeypatch):
    sid = proton.start(str(tmp_path / "deep"), backend="cpu", data="trace")
    with nested_scopes(DEPTH):
        pass
    (path,) = proton.finalize(sid, "chrome_trace")
    events = strict_json(Path(path).read_text())["traceEvents"]
    scopes = [e for e in events if e["ph"] == "X" and e["cat"] == "scope"]
    assert sorted(e["name"] for e in scopes) == sorted(f"s{i}" for i in range(DEPTH))


# -- values JSON cannot hold ------------------------------------------------------------------------
@pytest.mark.parametrize("value", [float("nan"), float("inf"), float("-inf")])
def test_non_finite_metrics_are_strict_json_and_read_as_missing(value):
    sid = proton.start("values", backend="cpu")
    with proton.scope("a", {"flops": value, "v": [1.0, value]}):
        pass
    tree, _ = proton.data.get(sid)
    (path,) = proton.finalize(sid, "hatchet")
    assert tree["children"][0]["metrics"] == {"flops": None, "v": [1.0, None]}
    written, _ = strict_json(Path(path).read_text())
    assert written["children"][0]["metrics"] == {"flops": None, "v": [1.0, None]}


def test_non_finite_metrics_in_a_trace_are_strict_json(monkeypatch):
    sid = proton.start("values", backend="cpu", data="trace")
    with proton.scope("a", {"flops": float("nan"), "bytes": 3}):
        pass
    (path,) = proton.finalize(sid, "chrome_trace")
    (event,) = [e for e in strict_json(Path(path).read_text())["traceEvents"] if e["ph"] == "X"]
    assert event["args"]["metrics"] == {"bytes": "3", "flops": "nan"}


# -- paths that fail --------------------------------------------------------------------------------
@pytest.fixture
def temp_folder(tmp_path, monkeypatch):
    """A folder of the test's own stands for `tempfile.gettempdir()`."""
    folder = tmp_path / "system-tmp"
    folder.mkdir()
    monkeypatch.setattr(tempfile, "gettempdir", lambda: str(folder))
    return folder


@pytest.fixture
def full_folders(monkeypatch):
    """Folders on a "full disk": `os.write` to a file in one of them raises ENOSPC."""
    if not os.path.isdir("/proc/self/fd"):
        pytest.skip("needs /proc/self/fd to tell which folder a file descriptor writes to")
    folders: set[str] = set()
    real_write = os.write

    def write(fd, data):
        try:
            target = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:
            target = ""
        if os.path.dirname(target) in folders:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        return real_write(fd, data)

    monkeypatch.setattr(os, "write", write)
    return folders


def stderr_lines(capsys) -> list[str]:
    return capsys.readouterr().err.splitlines()


def test_a_path_under_a_regular_file_falls_back_to_the_current_folder(tmp_path, temp_folder, capsys):
    (tmp_path / "file").write_text("not a folder")
    asked = tmp_path / "file" / "x" / "prof"
    sid = proton.start(str(asked), backend="cpu")
    with proton.scope("a"):
        pass
    fallback = os.path.join(os.getcwd(), "prof.hatchet")
    assert proton.finalize(sid) == [fallback]
    assert stderr_lines(capsys) == [
        f"lepton: could not write {asked}.hatchet (Not a directory); profile written to {fallback}"]
    tree, _ = json.loads(Path(fallback).read_text())
    assert tree["children"][0]["frame"]["name"] == "a"
    assert os.listdir(temp_folder) == []


@pytest.mark.skipif(not os.path.isdir("/proc/self"), reason="needs Linux's /proc")
def test_a_path_in_proc_falls_back_to_the_current_folder(temp_folder, capsys):
    sid = proton.start("/proc/x/prof", backend="cpu")
    assert proton.finalize(sid) == [os.path.join(os.getcwd(), "prof.hatchet")]
    (line,) = stderr_lines(capsys)
    assert line.startswith("lepton: could not write /proc/x/prof.hatchet (")


def test_a_full_disk_falls_back_to_the_current_folder_then_the_temporary_folder(
        tmp_path, temp_folder, full_folders, capsys):
    asked = tmp_path / "out" / "prof"
    full_folders.update({str(tmp_path / "out"), os.getcwd()})
    sid = proton.start(str(asked), backend="cpu")
    with proton.scope("a"):
        pass
    fallback = str(temp_folder / "prof.hatchet")
    assert proton.finalize(sid) == [fallback]
    assert stderr_lines(capsys) == [
        f"lepton: could not write {asked}.hatchet (No space left on device); profile written to {fallback}"]
    assert json.loads(Path(fallback).read_text())[0]["children"][0]["frame"]["name"] == "a"
    assert not os.path.exists(f"{asked}.hatchet")
    assert leftover_temporaries(str(tmp_path / "out"), os.getcwd(), str(temp_folder)) == []


def test_when_every_place_fails_one_error_names_each_path_and_leaves_nothing(
        tmp_path, temp_folder, full_folders, capsys):
    asked = tmp_path / "out" / "prof"
    full_folders.update({str(tmp_path / "out"), os.getcwd(), str(temp_folder)})
    sid = proton.start(str(asked), backend="cpu")
    with pytest.raises(WriteError) as caught:
        proton.finalize(sid)
    error = caught.value
    assert isinstance(error, LeptonError) and isinstance(error, OSError) and error.errno == errno.ENOSPC
    tried = [f"{asked}.hatchet", os.path.join(os.getcwd(), "prof.hatchet"), str(temp_folder / "prof.hatchet")]
    assert str(error) == "could not write the profile anywhere: " + "; ".join(
        f"{p} (No space left on device)" for p in tried)
    assert leftover_temporaries(str(tmp_path / "out"), os.getcwd(), str(temp_folder)) == []
    assert stderr_lines(capsys) == []


def test_a_relative_path_in_the_current_folder_is_not_tried_twice(temp_folder, full_folders, capsys):
    full_folders.add(os.getcwd())
    sid = proton.start("prof", backend="cpu")
    assert proton.finalize(sid) == [str(temp_folder / "prof.hatchet")]
    (line,) = stderr_lines(capsys)
    assert line == ("lepton: could not write prof.hatchet (No space left on device); "
                    f"profile written to {temp_folder / 'prof.hatchet'}")


def test_a_failed_rename_keeps_the_old_file_and_leaves_no_temporary(tmp_path, monkeypatch):
    target = tmp_path / "prof.hatchet"
    target.write_bytes(b"old")

    def no_space(src, dst):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(os, "replace", no_space)
    with pytest.raises(OSError, match="No space left"):
        write_atomic(str(target), b"new")
    assert target.read_bytes() == b"old"
    assert os.listdir(tmp_path) == ["prof.hatchet"]


def test_a_failed_fsync_is_a_failed_write(tmp_path, monkeypatch):
    def io_error(fd):
        raise OSError(errno.EIO, os.strerror(errno.EIO))

    monkeypatch.setattr(os, "fsync", io_error)
    with pytest.raises(OSError, match="Input/output error"):
        write_atomic(str(tmp_path / "prof.hatchet"), b"new")
    assert os.listdir(tmp_path) == []


# -- file mode --------------------------------------------------------------------------------------
@contextlib.contextmanager
def umask(mask: int):
    old = os.umask(mask)
    try:
        yield
    finally:
        os.umask(old)


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX file modes")
@pytest.mark.parametrize(("mask", "mode"), [(0o022, 0o644), (0o077, 0o600), (0o002, 0o664)])
def test_files_get_the_mode_the_umask_gives(mask, mode):
    with umask(mask):
        sid = proton.start("prof", backend="cpu")
        (path,) = proton.finalize(sid)
    assert stat.S_IMODE(os.stat(path).st_mode) == mode
