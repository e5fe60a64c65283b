"""Issue 34's fuzz shapes, beyond test_fuzz_api.py: names that are not strings (sessions, scopes,
states, metrics, options), sessions whose files collide, and signals at random points of a plain
Python program. Each call either raises one clear line and changes nothing, or works; every profile
written parses strictly and `lepton-view` reads it.

Seeded and bounded for CI (fixed seeds only, so that a run is repeatable). To run longer:

    LEPTON_FUZZ_ITERATIONS=500 pytest tests/integration/test_fuzz_api_2.py   # random seeds per test
    LEPTON_FUZZ_SECONDS=600 pytest tests/integration/test_fuzz_api_2.py      # each test for 10 minutes
    LEPTON_FUZZ_SEED=123 pytest tests/integration/test_fuzz_api_2.py         # replay one seed
"""
from __future__ import annotations

import io
import json
import os
import pathlib
import random
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import msgpack
import pytest

import lepton as proton
from lepton import scopes
from lepton.backends.base import EXTRA_BACKENDS_VARIABLE
from lepton.cli import view
from lepton.errors import LeptonError
from lepton.runtime.registry import REGISTRY, _files_of
from twins import FAKE_BACKEND

SRC = Path(__file__).resolve().parents[2] / "src"
TESTS = Path(__file__).resolve().parents[1]
ITERATIONS = int(os.environ.get("LEPTON_FUZZ_ITERATIONS", "0"))
SECONDS = float(os.environ.get("LEPTON_FUZZ_SECONDS", "0"))
REPLAY = os.environ.get("LEPTON_FUZZ_SEED")


def seeds(fixed: list[int]):
    """The fixed seeds, then random ones: LEPTON_FUZZ_ITERATIONS of them, or for LEPTON_FUZZ_SECONDS."""
    if REPLAY:
        yield int(REPLAY)
        return
    yield from fixed
    rng, n, deadline = random.SystemRandom(), 0, time.monotonic() + SECONDS
    while n < ITERATIONS or time.monotonic() < deadline:
        n += 1
        yield rng.randrange(1 << 30)


def for_each_seed(fixed: list[int], run) -> int:
    """Runs `run(seed, index)` for each seed; a failure names its seed (LEPTON_FUZZ_SEED replays it)."""
    count = 0
    for seed in seeds(fixed):
        try:
            run(seed, count)
        except BaseException as e:
            raise AssertionError(f"seed {seed} (replay: LEPTON_FUZZ_SEED={seed}): {e!r}") from e
        count += 1
    print(f"{count} seeds passed")
    return count


def one_line(error: BaseException) -> bool:
    text = str(error)
    return bool(text) and "\n" not in text


def check_file(path: str) -> None:
    """The profile parses strictly, and lepton-view reads a tree."""
    payload = Path(path).read_bytes()
    if path.endswith(".hatchet_msgpack"):
        msgpack.unpackb(payload, strict_map_key=False)
    else:
        json.loads(payload, parse_constant=lambda c: pytest.fail(f"{path}: bare {c} is not JSON"))
    if not path.endswith(".chrome_trace"):
        out, err = io.StringIO(), io.StringIO()
        assert view.main(["-m", "time/ns", path], stdout=out, stderr=err) in (0, 2), err.getvalue()
        assert "Traceback" not in err.getvalue()


# -- names that are not strings, sessions that share a file -----------------------------------------
NOT_STRINGS = [42, None, b"bytes", ("t",), 3.5, ["a"], {"a": 1}, True, object()]
SCOPE_NAMES = ["s", "t", "", "ü", "a/b", "x" * 200]
SESSION_NAMES = ["a", "b", "a.hatchet", "./a", "sub/../a", "A", "a.hatchet_msgpack", "x.chrome_trace",
                 "sub/c", pathlib.Path("a"), pathlib.PurePosixPath("b"), "a\0b", 42, b"a", ["a"], 1.5]


def _state() -> tuple:
    return (sorted((s.id, s.path, s.data_kind, s.active) for s in REGISTRY.sessions.values()),
            sorted(REGISTRY.backends), proton.context.depth() if REGISTRY.sessions else 0)


def _call(rng: random.Random, backend, open_scopes: list) -> None:
    """One random call; raises what the call raised."""
    kind = rng.choice(["start", "start", "scope", "scope", "enter", "exit", "metrics", "state", "finalize",
                       "activate", "deactivate", "get", "phase", "launch"])
    sids = [*REGISTRY.sessions, 99, None, "0"]
    name = rng.choice(SCOPE_NAMES + NOT_STRINGS)
    if kind == "start":
        sid = proton.start(rng.choice(SESSION_NAMES), backend=rng.choice(["fake", "fake", "cpu", 7]),
                           data=rng.choice(["tree", "tree", "trace", 3]),
                           context=rng.choice(["shadow", "shadow", "python", None, 1]))
        assert sid in REGISTRY.sessions
    elif kind == "scope":
        with proton.scope(name, rng.choice([None, {"m": 1}, {1: 2}, {None: 1}, {"m": "x"}])):
            backend().launch("k", 10) if backend() is not None else None
    elif kind == "enter":
        if proton.enter_scope(name) is not None:
            open_scopes.append(name)
    elif kind == "exit":
        if proton.exit_scope(rng.choice([*open_scopes[-1:], name])) is not None:
            open_scopes.pop()
    elif kind == "metrics":
        with proton.cpu_timed_scope(rng.choice(SCOPE_NAMES), {rng.choice(["b", 5, None]): rng.choice([1, 2.5])}):
            pass
    elif kind == "state":
        with proton.state(rng.choice(SCOPE_NAMES[:2] + NOT_STRINGS)):
            pass
    elif kind == "finalize":
        fmt = rng.choice(["", "hatchet", "hatchet_msgpack", "chrome_trace", "csv", 5, None])
        for path in proton.finalize(rng.choice(sids), output_format=fmt):
            if path != "-":
                check_file(path)
    elif kind == "activate":
        proton.activate(rng.choice(sids))
    elif kind == "deactivate":
        proton.deactivate(rng.choice(sids))
    elif kind == "get":
        proton.data.get(rng.choice(sids))
    elif kind == "phase":
        proton.data.advance_phase(rng.choice(sids))
    else:
        if backend() is not None:
            backend().launch(name if isinstance(name, str) and name else "k", 100)


def _names_and_collisions(seed: int, folder: Path) -> int:
    """Returns how many calls raised."""
    from twins.fake_backend import FakeBackend

    def backend():
        live = [b for b in REGISTRY.backends.values() if isinstance(b, FakeBackend)]
        return live[0] if live else None

    rng = random.Random(seed)
    scopes._open_scopes().clear()  # enter_scope's stack outlives sessions (as Proton's): an earlier seed's
    os.makedirs(folder / "sub", exist_ok=True)
    os.chdir(folder)
    raised, open_scopes = 0, []
    try:
        for _ in range(120):
            before = _state()
            files_before = {sid: _files_of(s.path, s.data_kind) for sid, s in REGISTRY.sessions.items()}
            try:
                _call(rng, backend, open_scopes)
            except (TypeError, ValueError, LeptonError) as e:  # UsageError, SessionNotFound, MetricTypeError
                raised += 1
                assert one_line(e), repr(e)
                assert _state() == before, f"{e!r} changed {before} to {_state()}"
                continue
            # Two live sessions never write one file.
            files = [(sid, _files_of(s.path, s.data_kind)) for sid, s in REGISTRY.sessions.items()]
            for i, (a, fa) in enumerate(files):
                for b, fb in files[i + 1:]:
                    assert not fa & fb, f"sessions {a} and {b} both write {fa & fb}"
            for sid, fs in files:
                assert sid not in files_before or files_before[sid] == fs
    finally:
        while open_scopes and REGISTRY.sessions:
            try:
                proton.exit_scope()
            except ValueError:
                break
            open_scopes.pop()
        for path in REGISTRY.finalize(None, "") if REGISTRY.sessions else []:
            if path != "-":
                check_file(path)
    return raised


def test_names_that_are_not_strings_and_sessions_that_share_a_file(tmp_path):
    raised = []

    def run(seed, index):
        folder = tmp_path / f"{index}-seed{seed}"  # a random seed may come twice in a long run
        folder.mkdir()
        raised.append(_names_and_collisions(seed, folder))

    for_each_seed(list(range(12)), run)
    assert REPLAY or sum(raised) > 100  # the sequences do make mistakes


# -- signals at random points of a plain Python program --------------------------------------------
CHILD = """\
import os, random, signal, sys, time
import lepton as proton
from twins.fake_backend import FakeBackend

rng = random.Random(int(sys.argv[1]))
if rng.random() < 0.2:
    def handler(signum, frame):
        sys.exit(3)
    signal.signal(signal.SIGTERM, handler)
data = rng.choice(["tree", "tree", "trace"])
sid = proton.start("sig", backend="fake", data=data)
if rng.random() < 0.3:
    proton.start("other", backend="fake")
fake = FakeBackend.instances[-1]
print("started", flush=True)
end = time.monotonic() + 0.6
stack = []
while time.monotonic() < end:
    r = rng.random()
    if r < 0.3:
        with proton.scope(rng.choice(["a", "b", "c"]), rng.choice([None, {"m": 1}])):
            fake.launch("k", 100)
    elif r < 0.45 and len(stack) < 50:
        stack.append(proton.enter_scope(rng.choice(["e", "f"])))
    elif r < 0.6 and stack:
        stack.pop()
        proton.exit_scope()
    elif r < 0.65:
        fake.flush()
    elif r < 0.7:
        proton.data.get(sid) if data == "tree" else None
    elif r < 0.72:
        proton.deactivate(sid)
        proton.activate(sid)
    elif r < 0.74:
        with proton.state("st"):
            fake.launch("k2", 100)
    else:
        fake.launch("k3", 100)
while stack:
    stack.pop()
    proton.exit_scope()
print("finalizing", flush=True)
proton.finalize(output_format=rng.choice(["", "hatchet_msgpack"]) if data == "tree" else "")
print("finished", flush=True)
"""
SIGNALS = [signal.SIGTERM, signal.SIGHUP, signal.SIGINT]


def _signal_at_random(seed: int, folder: Path) -> None:
    rng = random.Random(seed)
    env = {k: v for k, v in os.environ.items() if k not in ("LEPTON_DISABLE", "TRITON_PROTON_DISABLE",
                                                            "LEPTON_CHECKPOINT_S")}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(SRC), str(TESTS), env.get("PYTHONPATH")]))
    env[EXTRA_BACKENDS_VARIABLE] = FAKE_BACKEND
    folder.mkdir()
    child = subprocess.Popen([sys.executable, "-c", textwrap.dedent(CHILD), str(seed)], cwd=folder, env=env,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert child.stdout.readline() == "started\n", child.stderr.read()
        time.sleep(rng.uniform(0, 0.7))
        signals = [rng.choice(SIGNALS) for _ in range(rng.choice([1, 1, 1, 2]))]
        for sig in signals:
            if child.poll() is None:
                child.send_signal(sig)
            time.sleep(rng.uniform(0, 0.01))
        out, err = child.communicate(timeout=60)
    finally:
        if child.poll() is None:
            child.kill()
            child.communicate()
    code = child.returncode
    first = signals[0]
    finished = "finished" in out
    # A later signal that comes once no session records (the program finalized) has its default action.
    allowed = {0, 3, 1, 130, *(128 + s for s in signals), *(-int(s) for s in signals)}
    assert code in allowed, (code, signals, err)
    assert "lepton: error" not in err, err
    if "Exception ignored" in err:  # Python's own: a signal (Ctrl-C, or the program's handler's
        # sys.exit) while the interpreter shuts down, in threading._shutdown; the profile is still written
        assert "threading" in err and ("KeyboardInterrupt" in err or "SystemExit" in err), err
    assert not [line for line in err.splitlines() if "lepton/" in line and "Error" in line
                and "KeyboardInterrupt" not in err], err
    written = sorted(p for p in os.listdir(folder) if p.startswith("sig"))
    assert written, f"no profile written (exit {code}, signals {signals}, finished={finished}): {err}"
    for name in written:
        assert not name.startswith(".lepton-"), written
        check_file(str(folder / name))
    if first != signal.SIGINT and not finished and code == 128 + first:
        assert f"lepton: {first.name} received; profile written at exit to sig" in err or \
            "finalizing" in out, err


def test_signals_at_random_points_of_a_plain_python_program_leave_a_valid_profile(tmp_path):
    for_each_seed(list(range(6)), lambda seed, index: _signal_at_random(seed, tmp_path / f"{index}-seed{seed}"))
