"""Periodic flushing: `mode="periodic_flushing[:format=F]"` writes each phase to NAME.part_N.F as
soon as it is complete, on a thread of its own, and frees it; finalize writes the rest.

The fake backend delivers its kernels at `flush()`, as the CUPTI backend delivers a completed buffer:
a kernel of a later phase completes the phases before it.
"""
from __future__ import annotations

import glob
import json
import os
import threading
import time

import msgpack
import pytest

import lepton as proton
from lepton import writers
from lepton.errors import PhaseNotFound, WriteError
from lepton.runtime.registry import REGISTRY


def load(path: str) -> list:
    if path.endswith(".hatchet_msgpack"):
        with open(path, "rb") as f:
            return msgpack.unpackb(f.read(), raw=False, strict_map_key=False)
    with open(path) as f:
        return json.load(f)


def names(path: str) -> list[str]:
    return [c["frame"]["name"] for c in load(path)[0]["children"]]


def written_so_far() -> list[str]:
    """The files written once every write handed to the writer's thread so far is done."""
    REGISTRY.phase_writer.drain()
    return sorted(glob.glob("*.hatchet*"))


@pytest.mark.parametrize("data_format", ["hatchet", "hatchet_msgpack"])
def test_a_file_per_phase_each_with_its_scopes_and_kernels(fake, data_format):
    """Proton main's test_periodic_flushing, scaled down: 10 phases of 50 scoped launches."""
    session = proton.start("flushed", backend="fake", mode=f"periodic_flushing:format={data_format}")
    for i in range(500):
        if i != 0 and i % 50 == 0:
            proton.data.advance_phase(session=session)
            fake().flush()  # a buffer of records completes
        with proton.scope(f"test_{i}", metrics={"count": 1}):
            fake().launch("zeros_kernel", 100)
    # phases 0-7 are complete; phase 8's kernels came in the last buffer, with none of phase 9 yet
    assert written_so_far() == [f"flushed.part_{p}.{data_format}" for p in range(8)]
    proton.finalize(output_format=data_format)
    files = sorted(glob.glob(f"*.{data_format}"))
    assert files == sorted(f"flushed.part_{p}.{data_format}" for p in range(10))
    num_scopes = 0
    for path in files:
        data = load(path)
        assert len(data[0]["children"]) == 50
        assert data[0]["children"][0]["metrics"]["count"] == 1
        assert data[0]["children"][0]["frame"]["name"].startswith("test_")
        assert data[0]["children"][0]["children"][0]["metrics"]["time (ns)"] > 0
        num_scopes += len(data[0]["children"])
    assert num_scopes == 500


def test_a_completed_phase_is_on_disk_before_finalize_and_freed(fake):
    sid = proton.start("early", backend="fake", mode="periodic_flushing")
    with proton.scope("first"):
        fake().launch("k", 10)
    proton.data.advance_phase(sid)
    assert not proton.data.is_phase_complete(sid, 0)
    with proton.scope("second"):
        fake().launch("k", 10)
    fake().flush()  # delivers a kernel of phase 1: phase 0 is complete
    assert proton.data.is_phase_complete(sid, 0) and not proton.data.is_phase_complete(sid, 1)
    assert written_so_far() == ["early.part_0.hatchet"]
    assert names("early.part_0.hatchet") == ["first"]
    with pytest.raises(PhaseNotFound, match=r"Phase 0 has no data\. \(periodic flushing wrote it to "
                                            r"early\.part_0\.hatchet and freed it\)"):
        proton.data.get(sid, 0)
    proton.finalize()
    assert names("early.part_1.hatchet") == ["second"]


def test_a_flush_completes_the_phases_before_the_current_one(fake):
    sid = proton.start("flush", backend="fake", mode="periodic_flushing")
    fake().launch("k0", 10)
    proton.data.advance_phase(sid)
    proton.data.advance_phase(sid)  # phase 1 holds nothing
    assert written_so_far() == []
    proton.deactivate(sid, flushing=True)
    assert written_so_far() == ["flush.part_0.hatchet", "flush.part_1.hatchet"]
    assert names("flush.part_0.hatchet") == ["k0"] and names("flush.part_1.hatchet") == []
    proton.finalize()
    assert written_so_far()[-1] == "flush.part_2.hatchet"


def test_without_kernels_a_phase_is_complete_when_the_next_one_starts():
    sid = proton.start("cpu", backend="cpu", mode="periodic_flushing")
    with proton.scope("a", {"n": 1}):
        pass
    proton.data.advance_phase(sid)
    assert proton.data.is_phase_complete(sid, 0)
    assert written_so_far() == ["cpu.part_0.hatchet"]
    proton.finalize()
    assert written_so_far() == ["cpu.part_0.hatchet", "cpu.part_1.hatchet"]


def test_a_session_that_never_advances_writes_one_file_at_finalize(fake):
    proton.start("single", backend="fake", mode="periodic_flushing")
    fake().launch("k", 10)
    proton.finalize()
    assert written_so_far() == ["single.hatchet"]


def test_the_phase_is_written_on_another_thread_while_the_program_goes_on(fake, monkeypatch):
    """A slow disk holds up the writer's thread only: neither advance_phase, nor a buffer's
    delivery, nor a scope waits for it."""
    release, writing = threading.Event(), []
    real_write = writers.write

    def slow_write(*args, **kwargs):
        writing.append(threading.current_thread().name)
        release.wait(10)
        return real_write(*args, **kwargs)

    monkeypatch.setattr(writers, "write", slow_write)
    sid = proton.start("slow", backend="fake", mode="periodic_flushing")
    fake().launch("k", 10)
    proton.data.advance_phase(sid)
    fake().launch("k", 10)
    began = time.perf_counter()
    fake().flush()
    proton.data.advance_phase(sid)
    with proton.scope("goes_on"):
        fake().launch("k", 10)
    fake().flush()
    took = time.perf_counter() - began
    release.set()
    proton.finalize()
    assert took < 5  # the write waited 10 s at most; nothing here waited for it
    assert writing == ["lepton-phase-writer"] * 2 + ["MainThread"]  # the last phase's, by finalize
    assert written_so_far() == [f"slow.part_{p}.hatchet" for p in range(3)]


def test_a_phase_not_writable_where_asked_goes_to_the_current_folder_with_one_line(fake, capsys):
    (open("not_a_folder", "w")).close()
    sid = proton.start("not_a_folder/prof", backend="fake", mode="periodic_flushing")
    fake().launch("k", 10)
    proton.data.advance_phase(sid)
    fake().launch("k", 10)
    fake().flush()
    assert written_so_far() == ["prof.part_0.hatchet"]
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("lepton: could not write not_a_folder/prof.part_0.hatchet")
    assert err[0].endswith("profile written to " + os.path.abspath("prof.part_0.hatchet"))
    proton.finalize()
    assert written_so_far() == ["prof.part_0.hatchet", "prof.part_1.hatchet"]


def test_a_phase_not_writable_anywhere_stays_in_memory_and_finalize_writes_it(fake, capsys, monkeypatch):
    failures = []
    real = writers.write_with_fallback

    def nowhere_once(path, payload, replace=True):
        if not failures:
            failures.append(path)
            raise WriteError(f"could not write the profile anywhere: {path} (No space left on device)")
        return real(path, payload, replace)

    monkeypatch.setattr(writers, "write_with_fallback", nowhere_once)
    sid = proton.start("full", backend="fake", mode="periodic_flushing")
    with proton.scope("kept"):
        fake().launch("k", 10)
    proton.data.advance_phase(sid)
    fake().launch("k", 10)
    fake().flush()
    assert written_so_far() == []
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert line == (f"lepton: could not write phase 0 of session {sid} (full) as it completed: could not "
                    "write the profile anywhere: full.part_0.hatchet (No space left on device); it stays in "
                    "memory and finalize writes it")
    assert names_of_phase(sid, 0) == ["kept"]  # back in the session
    proton.finalize()
    assert written_so_far() == ["full.part_0.hatchet", "full.part_1.hatchet"]
    assert names("full.part_0.hatchet") == ["kept"]


def names_of_phase(sid: int, phase: int) -> list[str]:
    return [c["frame"]["name"] for c in proton.data.get(sid, phase)[0]["children"]]


def test_kernels_that_arrive_after_their_phase_was_written_go_beside_it(fake):
    """A kernel of phase 0 whose record comes after one of phase 1 (it ran long, on another
    stream) is not lost: it goes to a file beside phase 0's first."""
    sid = proton.start("late", backend="fake", mode="periodic_flushing")
    fake().launch("long_kernel", 10)
    held = fake()._queue.pop()  # its record is not in this buffer
    proton.data.advance_phase(sid)
    fake().launch("short_kernel", 10)
    fake().flush()
    assert written_so_far() == ["late.part_0.hatchet"]
    fake()._queue.append(held)
    proton.finalize()
    assert written_so_far() == ["late.part_0.1.hatchet", "late.part_0.hatchet", "late.part_1.hatchet"]
    assert names("late.part_0.hatchet") == [] and names("late.part_0.1.hatchet") == ["long_kernel"]
    assert names("late.part_1.hatchet") == ["short_kernel"]


def test_a_trace_session_flushes_chrome_traces(fake):
    sid = proton.start("tr", backend="fake", data="trace", mode="periodic_flushing")
    with proton.scope("s0"):
        fake().launch("k", 10)
    proton.data.advance_phase(sid)
    fake().launch("k", 10)
    fake().flush()
    REGISTRY.phase_writer.drain()
    with open("tr.part_0.chrome_trace") as f:
        events = json.load(f)["traceEvents"]
    proton.finalize()
    assert [e["name"] for e in events if e["ph"] == "X"] == ["s0", "k"]
    assert sorted(glob.glob("*.chrome_trace")) == ["tr.part_0.chrome_trace", "tr.part_1.chrome_trace"]


@pytest.mark.parametrize("mode, data, message", [
    ("periodic_flushing:fmt=hatchet", "tree",
     ("periodic flushing takes one option, format "
      "(use periodic_flushing or periodic_flushing:format=hatchet)")),
    ("periodic_flushing:format=hatchet:x=1", "tree", "takes one option, format"),
    ("periodic_flushing:format=chrome_trace", "tree",
     ("a data='tree' session cannot be written as 'chrome_trace' "
      "(use format=hatchet or format=hatchet_msgpack)")),
    ("periodic_flushing:format=hatchet", "trace",
     "a data='trace' session cannot be written as 'hatchet' (use format=chrome_trace)"),
])
def test_a_malformed_mode_is_refused_at_start_in_one_line(mode, data, message):
    with pytest.raises(proton.UsageError, match=message.replace("(", r"\(").replace(")", r"\)")):
        proton.start("bad", backend="fake", data=data, mode=mode)
    assert not REGISTRY.sessions and "fake" not in REGISTRY.backends


def test_sessions_of_one_backend_share_its_mode_as_in_proton(fake):
    proton.start("periodic", backend="fake", mode="periodic_flushing")
    with pytest.raises(proton.UsageError, match="same profiler but a different mode than existing sessions"):
        proton.start("plain", backend="fake")
    proton.start("periodic_too", backend="fake", mode="periodic_flushing")
    proton.finalize()
