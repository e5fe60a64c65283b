"""The fast paths of `hot_path` (a scope entered again under the same parent, a hooked kernel launched
again under the same scope) write the same marks as the general paths they inline.

Each random sequence of enters, exits, states, metric scopes and launches (hooked and not) runs
twice on the fake backend with the same ticking clock: once through `scope` and the launch hook as
they are, once through the general paths (`HotPath.enter` and `exit` for the scopes; the fast
paths' caches unable to remember anything for the launch hook). The two runs must leave the same
marks (times included) and write the same profile."""
from __future__ import annotations

import itertools
import json
import random
import time

import pytest
from triton_standin import LazyDict, call_exit_hook

import lepton as proton
from lepton.runtime.hot_path import HOT_PATH

FIXED_SEEDS = [0, 1, 2, 3, 4, 5, 6, 7]
RANDOM_SEED = random.SystemRandom().randrange(1 << 30)
SCOPES = ("a", "b", "c")
STATES = ("s1", "s2")
KERNELS = ("k1", "k2")
METADATA = (None, {"flops": 1.0}, {"flops": 2.0, "bytes": 64}, {"name": "renamed", "flops": 1.0})


class Forgetful(dict):
    """A cache that never remembers: the fast paths always miss."""

    def __setitem__(self, key, value) -> None:
        pass


def random_sequence(seed: int, length: int = 200) -> list[tuple]:
    rng = random.Random(seed)
    ops, depth = [], 0
    for _ in range(length):
        kind = rng.choice(["enter", "enter", "exit", "exit", "state", "clear_state", "metrics_scope",
                           "hooked_launch", "hooked_launch", "hooked_launch", "plain_launch"])
        if kind == "exit" and depth == 0:
            kind = "enter"
        depth += {"enter": 1, "exit": -1}.get(kind, 0)
        if kind in ("enter", "metrics_scope"):
            ops.append((kind, rng.choice(SCOPES)))
        elif kind == "state":
            ops.append((kind, rng.choice(STATES)))
        elif kind == "hooked_launch":
            ops.append((kind, rng.choice(KERNELS), rng.randrange(len(METADATA))))
        elif kind == "plain_launch":
            ops.append((kind, rng.choice(KERNELS)))
        else:
            ops.append((kind,))
    return ops + [("exit",)] * depth


def run(ops: list[tuple], knobs, fake, *, general: bool, name: str) -> tuple[list[int], dict]:
    """Runs `ops` in a fresh session; returns the thread's marks (times counted from the first)
    and the written profile."""
    ticks = itertools.count(time.time_ns() + 10**12)  # after the session's start on its own clock
    HOT_PATH.timeline.clock = lambda: next(ticks)
    proton.start(name, backend="fake", hook="triton")
    if general:
        HOT_PATH.entered = Forgetful()
        HOT_PATH.entered_ops = Forgetful()
        HOT_PATH.hooked_kernels = Forgetful()
        HOT_PATH.hooked_launches = Forgetful()
    backend, open_scopes = fake(), []
    for op in ops:
        kind = op[0]
        if kind == "enter" and general:
            open_scopes.append((HOT_PATH.enter(op[1]), op[1]))
        elif kind == "enter":
            open_scopes.append(proton.scope(op[1]))
            open_scopes[-1].__enter__()
        elif kind == "exit" and general:
            HOT_PATH.exit(*open_scopes.pop())
        elif kind == "exit":
            open_scopes.pop().__exit__(None, None, None)
        elif kind == "metrics_scope":
            with proton.scope(op[1], {"m": 1}):
                pass
        elif kind == "state":
            proton.enter_state(op[1])
        elif kind == "clear_state":
            proton.exit_state()
        elif kind == "hooked_launch":
            values = METADATA[op[2]]
            meta = LazyDict({"name": op[1], "function": None, "stream": 0},
                            None if values is None else (lambda v=values: dict(v)))
            knobs.launch_enter_hook(meta)
            backend.launch(op[1], 100)
            call_exit_hook(knobs, meta)
        else:
            backend.launch(op[1], 100)
    proton.exit_state()
    marks = list(HOT_PATH.threads.thread().marks)
    proton.finalize()
    first = marks[0] if marks else 0
    marks[0::2] = [t - first for t in marks[0::2]]
    with open(f"{name}.hatchet") as f:
        return marks, json.load(f)


@pytest.mark.parametrize("seed", [*FIXED_SEEDS, RANDOM_SEED])
def test_fast_and_general_paths_leave_the_same_marks(seed, chained_knobs, fake, monkeypatch):
    monkeypatch.setattr(HOT_PATH.timeline, "clock", HOT_PATH.timeline.clock)  # put back afterwards
    ops = random_sequence(seed)
    fast_marks, fast_profile = run(ops, chained_knobs, fake, general=False, name="fast")
    general_marks, general_profile = run(ops, chained_knobs, fake, general=True, name="general")
    print(f"seed {seed}: {len(ops)} calls, {len(fast_marks) // 2} marks")
    assert len(fast_marks) > 100  # the sequence did mark (a started backend reads the marks)
    assert fast_marks == general_marks, f"seed {seed}"
    assert fast_profile == general_profile, f"seed {seed}"


def test_the_sequences_exercise_both_paths(chained_knobs, fake, monkeypatch):
    """The comparison above means something only if the first run takes the fast paths."""
    monkeypatch.setattr(HOT_PATH.timeline, "clock", HOT_PATH.timeline.clock)
    taken = {"enter": 0, "exit": 0, "op_after_metadata_state": 0}
    for method in taken:
        original = getattr(HOT_PATH, method)

        def counted(*args, _method=method, _original=original, **kwargs):
            taken[_method] += 1
            return _original(*args, **kwargs)

        monkeypatch.setattr(HOT_PATH, method, counted)
    ops = random_sequence(FIXED_SEEDS[0])
    enters = sum(op[0] in ("enter", "metrics_scope") for op in ops)
    exits = sum(op[0] == "exit" for op in ops)
    launches = sum(op[0] == "hooked_launch" for op in ops)
    run(ops, chained_knobs, fake, general=False, name="fast")
    assert taken["enter"] < enters and taken["exit"] < exits  # some took the fast paths
    assert taken["op_after_metadata_state"] < launches
    taken.update(dict.fromkeys(taken, 0))
    run(ops, chained_knobs, fake, general=True, name="general")
    assert taken["enter"] == enters and taken["op_after_metadata_state"] == launches  # none did
    assert taken["exit"] >= exits  # the plain exits did not either (a metric scope's may)
