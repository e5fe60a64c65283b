"""The calls of `make_fixtures.py` (the script that wrote `tests/data/proton_3_6`), driven with the fake backend, write files
whose tree shape and metrics match what the real Proton wrote (kernel and CPU times aside)."""
from __future__ import annotations

import json
import threading
from pathlib import Path

import pytest

import lepton as proton

FIXTURES = Path(__file__).resolve().parents[1] / "data" / "proton_3_6"
MUL = ("_ZN2at6native29vectorized_elementwise_kernelILi4ENS0_13AUnaryFunctorIfffNS0_15binary_internal"
       "10MulFunctorIfEEEESt5arrayIPcLm2EEEEviT0_T1_")
TIMES = {"time (ns)", "cpu_time (ns)"}


def shape(node):
    """(name, metrics without times, children) with times replaced by their presence."""
    metrics = {k: (v if k not in TIMES else "present") for k, v in node["metrics"].items()}
    return (node["frame"]["name"], metrics, [shape(c) for c in node["children"]])


def load(path):
    with open(path) as f:
        return json.load(f)


def assert_same_shape(ours: str, fixture: str):
    if not (FIXTURES / fixture).exists():
        pytest.skip(f"fixture {fixture} not found next to the checkout")
    mine, theirs = load(ours), load(FIXTURES / fixture)
    assert shape(mine[0]) == shape(theirs[0])
    assert mine[1] == theirs[1]
    with open(ours) as f:
        text = f.read()
    assert text.startswith("\n[\n    {") and text.endswith("\n]\n")


def test_scopes_metrics_matches_proton(fake):
    proton.start("scopes_metrics", backend="fake")
    add = lambda: fake().launch("add_kernel", 864)
    with proton.scope("outer", {"bytes": 100, "a (pty)": 2.0}):
        with proton.scope("inner", {"flops16": 1e6}):
            add()
        with proton.cpu_timed_scope("timed"):
            add()
            fake().launch(MUL, 1120)
    with proton.state("st"), proton.scope("s1"):
        add()
    proton.enter_scope("manual")
    add()
    proton.exit_scope("manual", metrics={"m": 3})
    proton.finalize()
    assert_same_shape("scopes_metrics.hatchet", "scopes_metrics.hatchet")


def test_threads_matches_proton(fake):
    proton.start("threads", backend="fake")

    def work(i):
        with proton.scope(f"thread_{i}"):
            fake().launch("add_kernel", 896)

    ts = [threading.Thread(target=work, args=(i,)) for i in range(4)]
    [t.start() for t in ts]
    [t.join() for t in ts]
    proton.finalize()
    assert_same_shape("threads.hatchet", "threads.hatchet")


def test_multi_session_matches_proton(fake):
    proton.start("multi_session_a", backend="fake")
    s1 = proton.start("multi_session_b", backend="fake")
    fake().launch("add_kernel", 850)
    proton.deactivate(s1)
    fake().launch("add_kernel", 850)
    proton.finalize()
    assert_same_shape("multi_session_a.hatchet", "multi_session_a.hatchet")
    assert_same_shape("multi_session_b.hatchet", "multi_session_b.hatchet")


def test_our_files_load_in_llnl_hatchet_where_installed(fake):
    hatchet = pytest.importorskip("hatchet")
    proton.start("h", backend="fake")
    with proton.scope("s"):
        fake().launch("k", 10)
    proton.finalize()
    tree, _ = load("h.hatchet")
    gf = hatchet.GraphFrame.from_literal([tree])
    assert "time (ns)" in gf.dataframe.columns
