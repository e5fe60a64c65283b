"""context="python": scopes' metrics and hooked launches land on Python frames."""
from __future__ import annotations

import json
import os
import re

import lepton as proton

FRAME = re.compile(r".+:\d+@.+")
LEPTON_PACKAGE = os.path.dirname(os.path.abspath(proton.__file__)) + os.sep  # its modules, subpackages too


def walk(node, depth=0):
    yield node, depth
    for c in node["children"]:
        yield from walk(c, depth + 1)


def test_scope_metrics_land_on_the_callers_frame(fake):
    proton.start("py", context="python", backend="fake")

    def inner():
        with proton.scope("ignored_name", {"bytes": 8}):
            assert proton.context.depth() >= 2

    inner()
    proton.finalize()
    with open("py.hatchet") as f:
        root = json.load(f)[0]
    nodes = [n for n, _ in walk(root)][1:]
    assert nodes and all(FRAME.fullmatch(n["frame"]["name"]) for n in nodes)
    (leaf,) = [n for n in nodes if n["metrics"].get("bytes")]
    assert leaf["frame"]["name"].endswith("@inner")
    assert leaf["metrics"]["bytes"] == 8
    assert not any(n["frame"]["name"].startswith(LEPTON_PACKAGE) for n in nodes)
