"""Random sequences of API calls — several threads, odd names, odd metric values, exits out of order —
either raise one clear error at the offending call, leaving the thread's scopes as they were, or
end in a profile that parses strictly and that `lepton-view` reads.

Bounded: fixed seeds plus two random ones a run, each printed, so that a failure can be replayed
with `pytest -k "seed_NNN"`."""
from __future__ import annotations

import io
import json
import math
import random
import threading

import msgpack
import pytest

import lepton as proton
from lepton.cli import view

FIXED_SEEDS = list(range(12))
RANDOM_SEEDS = [random.SystemRandom().randrange(1 << 30) for _ in range(2)]
NAMES = ["step", "a", "b", "", "ünïcödé", "新しい", "x" * 300, "tab\there", "new\nline", "\x1b[31mred\x1b[0m",
         "nul\x00byte", "(exc)", "time (ns)", "a/b", "  spaces  "]
BAD_NAMES = [42, None, b"bytes", ("t",), 3.5]
# Each metric keeps one kind of value (Proton raises when it changes): name -> the values it takes.
VALUES = {
    "m": [0, 1, -5, 2**40, 2**63 - 1, 2**70, True],
    "x": [0.5, -0.0, 1e300, math.nan, math.inf, -math.inf],
    "bytes": [1, 4096, 2**70],
    "flops16": [1, 2.5, 1e18],
    "v": [[1, 2], [3, 4]],
    "w (pty)": [1, 2],
    "e (exc)": [0.25, 1.5],
}
BAD_VALUES = ["lots", None, object(), [1, "x"], {"a": 1}]
FORMATS = {"tree": ["hatchet", "hatchet_msgpack"], "trace": ["chrome_trace"]}


def one_line(error: BaseException) -> bool:
    text = str(error)
    return bool(text) and "\n" not in text


class Thread:
    """One thread's view of the sequence: the scopes it opened and how it opened them."""

    def __init__(self) -> None:
        self.open: list[tuple[str, str, object]] = []  # (how, name, scope object or None)


def metrics_for(rng: random.Random, bad: bool = False) -> dict:
    name = rng.choice(list(VALUES))
    if not bad:
        return {name: rng.choice(VALUES[name])}
    accumulated = not name.endswith(("(pty)", "(exc)"))  # the others may be strings
    return {name: rng.choice([v for v in BAD_VALUES if accumulated or not isinstance(v, str)])}


def step(rng: random.Random, th: Thread, backend) -> bool:
    """One random call on the calling thread; checks what it did. Returns whether it raised."""
    depth_before = proton.context.depth()
    kind = rng.choice(["scope", "scope", "enter", "exit", "exit", "bad_name", "bad_metric", "state",
                       "launch", "launch", "wrong_exit"])
    expect_error = kind in ("bad_name", "bad_metric") or (kind in ("exit", "wrong_exit") and not th.open)
    try:
        if kind == "scope":
            with proton.scope(rng.choice(NAMES), metrics_for(rng)):
                backend.launch(rng.choice(NAMES) or "k", rng.randrange(1, 10_000))
        elif kind == "enter":
            name = rng.choice(NAMES)
            if rng.random() < 0.5:
                proton.enter_scope(name)
                th.open.append(("enter_scope", name, None))
            else:
                sc = proton.scope(name)
                sc.__enter__()
                th.open.append(("with", name, sc))
        elif kind in ("exit", "wrong_exit"):
            if not th.open:
                proton.exit_scope("nothing open")
            how, name, sc = th.open[-1]
            if kind == "wrong_exit" and how == "enter_scope" and any(n != name for _, n, _ in th.open):
                other = next(n for _, n, _ in th.open if n != name)
                expect_error = True
                proton.exit_scope(other)
            elif how == "enter_scope":
                proton.exit_scope(name)
                th.open.pop()
            else:
                sc.__exit__(None, None, None)
                th.open.pop()
        elif kind == "bad_name":
            with proton.scope(rng.choice(BAD_NAMES)):
                pass
        elif kind == "bad_metric":
            with proton.scope("m", metrics_for(rng, bad=True)):
                pass
        elif kind == "state":
            with proton.state(rng.choice(NAMES) or "s"):
                backend.launch("in_state", 100)
        else:
            backend.launch(rng.choice(NAMES) or "k", rng.randrange(1, 10_000))
    except (TypeError, ValueError) as e:  # UsageError is a ValueError
        assert expect_error, f"{kind} raised {e!r}"
        assert one_line(e), repr(e)
        assert proton.context.depth() == depth_before, f"{kind} left the scopes changed"
        return True
    assert not expect_error, f"{kind} raised nothing"
    return False


def run_sequence(seed: int, tmp_path, stats: dict | None = None) -> str:
    """Runs seed's sequence on 1 to 3 threads; returns the profile written. `stats` counts the
    calls that raised and the threads (workers) that made calls."""
    stats = {} if stats is None else stats
    rng = random.Random(seed)
    data = rng.choice(["tree", "tree", "trace"])
    fmt = rng.choice(FORMATS[data])
    proton.start(str(tmp_path / "fuzz"), backend="fake", data=data)
    from twins.fake_backend import FakeBackend

    backend = FakeBackend.instances[-1]
    errors: list[BaseException] = []

    def worker(worker_seed: int, calls: int) -> None:
        local_rng, th = random.Random(worker_seed), Thread()
        try:
            raised = sum(step(local_rng, th, backend) for _ in range(calls))
            while th.open:  # each thread closes what it opened
                how, name, sc = th.open.pop()
                proton.exit_scope(name) if how == "enter_scope" else sc.__exit__(None, None, None)
            stats["raised"] = stats.get("raised", 0) + raised
            stats["workers"] = stats.get("workers", 0) + 1
        except BaseException as e:  # noqa: BLE001  (reported by the main thread)
            errors.append(e)

    threads = [threading.Thread(target=worker, args=(rng.randrange(1 << 30), rng.randrange(20, 80)))
               for _ in range(rng.randrange(0, 3))]
    for t in threads:
        t.start()
    worker(rng.randrange(1 << 30), 150)
    for t in threads:
        t.join()
    if errors:
        proton.finalize()
        raise errors[0]
    (path,) = proton.finalize(output_format=fmt)
    return path


def check_profile(path: str) -> None:
    with open(path, "rb") as f:
        payload = f.read()
    if path.endswith(".hatchet_msgpack"):
        msgpack.unpackb(payload, strict_map_key=False)
    else:
        json.loads(payload, parse_constant=lambda c: pytest.fail(f"{path}: bare {c} is not JSON"))
    if not path.endswith(".chrome_trace"):
        out, err = io.StringIO(), io.StringIO()
        assert view.main(["-m", "time/ns", path], stdout=out, stderr=err) == 0, err.getvalue()
        assert "\x1b" not in out.getvalue()  # names with escape codes are shown escaped


@pytest.mark.parametrize("seed", FIXED_SEEDS + RANDOM_SEEDS, ids=lambda s: f"seed_{s}")
def test_a_random_api_sequence_errs_clearly_or_writes_a_readable_profile(seed, tmp_path):
    print(f"seed {seed}")
    check_profile(run_sequence(seed, tmp_path))


def test_the_sequences_raise_and_run_on_several_threads(tmp_path):
    """The fuzz test means something only if its sequences do make mistakes, on several threads."""
    stats: dict = {}
    for seed in FIXED_SEEDS:
        run_sequence(seed, tmp_path, stats)
    assert stats["raised"] > 50
    assert stats["workers"] > len(FIXED_SEEDS) + 5  # several seeds ran extra threads
