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
