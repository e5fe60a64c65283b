"""viewer.msgpack_walk: hatchet MessagePack read in place gives the Tree the generic decoding gives,
and any other layout is left to the generic decoding."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from lepton.msgpack import MsgpackError, packb, unpackb
from lepton.viewer.load import ProfileError, from_document, load_bytes
from lepton.viewer.msgpack_walk import walk_msgpack

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "tests" / "data" / "proton_3_6"
ROOT_ZEROS = {"count": 0, "time (ns)": 0}


def node(name, metrics=None, children=(), frame_type="function"):
    """A node as Proton's and our msgpack writers lay it out: frame, metrics, children."""
    frame = {"name": name, "type": frame_type}
    return {"frame": frame, "metrics": dict(metrics or {}), "children": list(children)}


def kernel(name, time_ns, **more):
    return node(name, {"time (ns)": time_ns, "count": 1, "device_id": "0", "device_type": "CUDA", **more})


def proton_layout(n: dict) -> dict:
    return node(n["frame"]["name"], n.get("metrics"), [proton_layout(c) for c in n.get("children", [])],
                n["frame"].get("type", "function"))


def generic(data: bytes):
    return from_document(unpackb(data), "p.hatchet_msgpack")


@pytest.mark.parametrize("path", sorted(FIXTURES.glob("*.hatchet")), ids=lambda p: p.name)
def test_proton_fixtures_in_msgpack_layout_are_walked_in_place_into_the_same_tree(path, assert_same_tree):
    document = json.loads(path.read_text())
    data = packb([proton_layout(document[0]), document[1]])
    assert walk_msgpack(data) is not None
    assert_same_tree(load_bytes(data, "p.hatchet_msgpack"), generic(data))


def test_pruning_big_arrays_and_maps_long_strings_and_other_types_match_the_generic_decoding(assert_same_tree):
    many_metrics = {f"m{i:02d}": i * 1.5 for i in range(20)}  # a map16
    children = [kernel(f"k{i:02d}", 100 + i) for i in range(20)]  # an array16
    document = [node("ROOT", ROOT_ZEROS, [
        node("scope", {"cpu_time (ns)": 5}, [
            node("__proton_launch_metadata", {}, [kernel("cuda_kernel", 4064)]),
            node("many_metrics", many_metrics, []),
            node("__proton_launch_metadata:kern", {}, [kernel("helper", 3)]),
            kernel("_Z" + "x" * 40, 1664, bytes=70000, flops16=2.5e9)]),  # str8 name, uint32, float
        node("empty_scope"),
        node("n" * 300, {}, children),  # str16 name
        node("py", {"time (ns)": 7}, frame_type="python"),
        node("vec", {"vec": [1, 2, 3], "neg": -3, "flag": True, "none": None}, [kernel("k", 1)]),
    ]), {"CUDA": {"0": {"arch": "90"}}}]
    data = packb(document)
    walked = walk_msgpack(data)
    assert walked is not None and "__proton_launch_metadata" in walked[0].names
    tree = load_bytes(data, "p.hatchet_msgpack")
    assert "helper" not in tree.names and "empty_scope" not in tree.names
    assert_same_tree(tree, generic(data))


def test_deep_trees_are_walked_in_place():
    leaf = kernel("k", 1)
    for i in range(1500):
        leaf = node(f"s{i}", {}, [leaf])
    data = packb([node("ROOT", ROOT_ZEROS, [leaf]), {}])
    assert walk_msgpack(data) is not None
    tree = load_bytes(data)
    assert len(tree) == 1502 and int(tree.depth.max()) == 1501


def other_layouts():
    good = node("ROOT", ROOT_ZEROS, [kernel("k", 3)])
    json_order = {"children": good["children"], "frame": good["frame"], "metrics": good["metrics"]}
    type_first = {**good, "frame": {"type": "function", "name": "ROOT"}}
    more_frame = {**good, "frame": {"name": "ROOT", "type": "function", "file": "a.py"}}
    number_name = node(7, ROOT_ZEROS, [kernel("k", 3)])
    return {
        "json key order": packb([json_order, {}]),
        "type before name": packb([type_first, {}]),
        "more frame keys": packb([more_frame, {}]),
        "a name that is no string": packb([number_name, {}]),
        "a second root": packb([good, good]),
        "three items": packb([good, {}, {}]),
        "devices that are no map": packb([good, [1]]),
        "bytes after the document": packb([good, {}]) + b"\x00",
        "truncated": packb([good, {}])[:-3],
        "a bare node": packb(good),
    }


@pytest.mark.parametrize("data", other_layouts().values(), ids=list(other_layouts()))
def test_other_layouts_are_left_to_the_generic_decoding(data, assert_same_tree):
    assert walk_msgpack(data) is None
    try:
        expected = generic(data)
    except (MsgpackError, ProfileError):
        with pytest.raises(ProfileError):
            load_bytes(data, "p.hatchet_msgpack")
    else:
        assert_same_tree(load_bytes(data, "p.hatchet_msgpack"), expected)
