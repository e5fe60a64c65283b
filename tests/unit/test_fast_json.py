"""The hatchet writer's JSON encoder equals `json.dumps(indent=4, sort_keys=True)` byte for byte."""
from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from lepton.writers.fast_json import dumps

FIXTURES = Path(__file__).resolve().parents[1] / "data" / "proton_3_6"


def reference(obj) -> str:
    return json.dumps(obj, indent=4, sort_keys=True)


@pytest.mark.parametrize("obj", [
    [], {}, [[]], {"a": {}}, "ünïcode \"quoted\" \n", 0, -5, 2**64, 1.0, 1e16, 1e-7, float("nan"),
    float("inf"), True, None, {"b": [1, 2.5, "x"], "a": {"z": None, "y": [False]}},
])
def test_values_and_containers(obj):
    assert dumps(obj) == reference(obj)


def test_every_fixture_round_trips():
    files = sorted(FIXTURES.glob("*.hatchet"))
    if not files:
        pytest.skip("fixtures not found next to the checkout")
    for f in files:
        obj = json.loads(f.read_text())
        assert dumps(obj) == reference(obj), f.name


def test_random_trees():
    rng = random.Random(7)

    def node(depth):
        return {"frame": {"name": "".join(rng.choice("ab_:/@<>ü") for _ in range(5)), "type": "function"},
                "metrics": {rng.choice(["count", "time (ns)", "bytes", "v"]): rng.choice([1, 2.5, [1, 2], "0"])},
                "children": [node(depth + 1) for _ in range(rng.randint(0, 3))] if depth < 4 else []}

    for _ in range(20):
        tree = [node(0), {"CUDA": {"0": {"arch": "90", "num_sms": 132}}}]
        assert dumps(tree) == reference(tree)


def test_nesting_far_past_the_recursion_limit():
    """1,000 levels of `{"c": [...]}` (2,000 containers, twice Python's recursion limit): the text
    json.dumps would write, built level by level here because json.dumps itself recurses. (Indent 4
    makes the text quadratic in depth: 16 MB here, 400 MB at 5,000 levels.)"""
    depth = 1_000
    obj: object = 1
    for _ in range(depth):
        obj = {"c": [obj]}
    pad = [" " * (4 * i) for i in range(2 * depth + 1)]
    opening = "".join(f"{{\n{pad[2 * i + 1]}\"c\": [\n{pad[2 * i + 2]}" for i in range(depth))
    closing = "".join(f"\n{pad[2 * i + 1]}]\n{pad[2 * i]}}}" for i in reversed(range(depth)))
    assert dumps(obj) == opening + "1" + closing


def test_small_nestings_equal_json_dumps():
    """Each path through the writer: flat dicts written in one call, dicts that hold containers,
    lists of dicts, empty containers at every position."""
    for obj in [{"a": {"b": {"c": []}}}, {"a": [{}], "b": {"x": [], "y": {}}}, [[{"k": [1.5, None]}], []],
                ({"t": (1, 2)},), {"m": {"v": [1, 2], "s": "x"}}, [{"a": 1}, {"b": {"c": 2}}]]:
        assert dumps(obj) == reference(obj), obj
