"""lepton.progress: one updating stderr line for slow work, on a terminal only, after a second."""
from __future__ import annotations

import functools
import importlib
import io
import sys
import time
from pathlib import Path

import pytest

import lepton
from lepton.progress import Progress, progress
from lepton.runtime import registry

viewer_load = importlib.import_module("lepton.viewer.load")  # the module, which the package's `load` hides
EXAMPLE = Path(__file__).resolve().parents[1] / "data" / "proton_examples" / "cuda.json"


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def shown(text: str) -> str:
    """What a terminal shows of `text` on its last line: each "\\r" starts the line over."""
    line: list[str] = []
    for part in text.split("\r"):
        line[:len(part)] = part
    return "".join(line).rstrip()


def wait_for(condition, timeout_s: float = 5.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.005)


def test_nothing_shows_within_the_first_second_then_the_label_and_the_seconds():
    out, clock = Terminal(), Clock()
    line = Progress("lepton-view: loading big.hatchet", out, clock)
    clock.now += 0.9
    line.tick()
    assert out.getvalue() == ""
    clock.now += 0.35
    line.tick()
    assert shown(out.getvalue()) == "lepton-view: loading big.hatchet… 1.2 s"
    clock.now += 10
    line.tick()
    assert shown(out.getvalue()) == "lepton-view: loading big.hatchet… 11.2 s"
    line.clear()
    assert shown(out.getvalue()) == "" and out.getvalue().endswith("\r")


def test_a_shorter_text_leaves_nothing_of_the_longer_one_behind():
    out, clock = Terminal(), Clock()
    line = Progress("x", out, clock, delay_s=0)
    clock.now += 123.4
    line.tick()
    line.label = ""
    line.tick()
    assert shown(out.getvalue()) == "… 123.4 s"


def test_off_a_terminal_nothing_is_written_and_no_thread_starts():
    out = io.StringIO()
    with progress("work", out, delay_s=0, every_s=0.001) as line:
        time.sleep(0.02)
    assert line is None and out.getvalue() == ""


def test_the_timer_thread_shows_the_line_once_the_clock_passes_a_second_and_erases_it_at_the_end():
    out, clock = Terminal(), Clock()
    with progress("lepton: writing proton", out, clock, every_s=0.001) as line:
        time.sleep(0.02)
        assert out.getvalue() == ""  # the fake clock has not moved: under a second
        clock.now += 2.5
        wait_for(lambda: "2.5 s" in out.getvalue())
        assert shown(out.getvalue()) == "lepton: writing proton… 2.5 s"
    assert line is not None and shown(out.getvalue()) == ""


def test_where_no_thread_can_start_the_work_runs_without_a_line(monkeypatch):
    """Python 3.12 refuses new threads at exit, where a program's unfinalized profile is written."""
    def refuse(self):
        raise RuntimeError("can't create new thread at interpreter shutdown")

    monkeypatch.setattr("threading.Thread.start", refuse)
    out = Terminal()
    with progress("lepton: writing proton", out, delay_s=0) as line:
        ran = True
    assert ran and line is None and out.getvalue() == ""


def test_a_write_to_stderr_while_the_line_shows_starts_on_a_clean_line(monkeypatch):
    terminal, clock = Terminal(), Clock()
    monkeypatch.setattr(sys, "stderr", terminal)
    with progress("loading", clock=clock, every_s=0.001):
        clock.now += 1.5
        wait_for(lambda: "1.5 s" in terminal.getvalue())
        print("lepton: warning: something", file=sys.stderr)
    assert sys.stderr is terminal
    assert "\rlepton: warning: something\n" in terminal.getvalue().replace(" " * len("loading… 1.5 s"), "")


def test_a_finalize_shows_what_it_writes(monkeypatch, tmp_path):
    terminal = Terminal()
    monkeypatch.setattr(registry, "progress", functools.partial(progress, stream=terminal, delay_s=0,
                                                                every_s=0.001))
    real_write = registry.writers.write

    def slow_write(*args, **kwargs):
        wait_for(lambda: "lepton: writing slow…" in terminal.getvalue())
        return real_write(*args, **kwargs)

    monkeypatch.setattr(registry.writers, "write", slow_write)
    lepton.start(str(tmp_path / "slow"), backend="cpu")
    lepton.finalize()
    assert (tmp_path / "slow.hatchet").exists()
    assert shown(terminal.getvalue()) == ""  # erased once written


@pytest.mark.parametrize("read", [viewer_load.load, viewer_load.load_document])
def test_a_load_shows_the_file_and_its_size(monkeypatch, read):
    terminal = Terminal()
    monkeypatch.setattr(viewer_load, "progress", functools.partial(progress, stream=terminal, delay_s=0,
                                                                   every_s=0.001))
    real_read = viewer_load.read_file

    def slow_read(path):
        wait_for(lambda: f"lepton-view: loading {EXAMPLE} (0 MB)…" in terminal.getvalue())
        return real_read(path)

    monkeypatch.setattr(viewer_load, "read_file", slow_read)
    read(EXAMPLE)
    assert shown(terminal.getvalue()) == ""
