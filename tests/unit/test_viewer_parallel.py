"""viewer.parallel: a big pretty-printed profile loads on two processes into the very same Tree."""
from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from lepton.viewer.load import ProfileError, load_bytes
from lepton.viewer.parallel import load_split, load_split_file

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the split load is Linux-only")

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "tests" / "data" / "proton_3_6"


def pretty(document) -> bytearray:
    """As Proton's writer and ours print a profile (writable, as load_split wants it)."""
    return bytearray(("\n" + json.dumps(document, indent=4, sort_keys=True) + "\n").encode())


def node(name, metrics=None, children=()):
    return {"children": list(children), "frame": {"name": name, "type": "function"}, "metrics": dict(metrics or {})}


def kernel(name, i):
    return node(name, {"count": 1, "device_id": "0", "device_type": "CUDA", "time (ns)": 100 + i,
                       "vec": [i, i + 1]} if i % 7 == 0 else {"count": 1, "device_id": str(i % 2),
                                                               "device_type": "CUDA", "time (ns)": 100 + i})


def profile(scopes: int) -> list:
    children = [node(f"scope_{s:03d}", {"bytes": s} if s % 3 else {}, [kernel(f"k{j}", s * 10 + j) for j in range(4)])
                for s in range(scopes)]
    return [node("ROOT", {"count": 0, "time (ns)": 0}, children), {"CUDA": {"0": {"arch": "90"}}}]


def test_a_split_load_gives_the_same_tree_as_a_serial_one(assert_same_tree):
    data = pretty(profile(50))
    tree = load_split(data, "p.hatchet", min_bytes=0)
    assert tree is not None
    tree.self_check()
    assert_same_tree(tree, load_bytes(data, "p.hatchet"))
    assert data == pretty(profile(50))  # the bytes it rewrote for a while are restored


@pytest.mark.parametrize("sizes, splits", [
    ([2], False),  # ROOT's only child cannot be cut
    ([1, 1], True),
    ([200, 1, 1, 1], True),
    ([1, 1, 1, 200], False),  # no child starts past the first cut point: not worth it anyway
    ([3] * 100, True),
], ids=str)
def test_root_children_of_any_number_and_size_split_into_pieces_that_join_into_the_same_tree(sizes, splits, assert_same_tree):
    children = [node(f"scope_{s:03d}", {}, [kernel(f"k{j}", s * 1000 + j) for j in range(size)])
                for s, size in enumerate(sizes)]
    data = pretty([node("ROOT", {"count": 0, "time (ns)": 0}, children), {"CUDA": {"0": {"arch": "90"}}}])
    tree = load_split(data, "p.hatchet", min_bytes=0)
    assert (tree is not None) == splits
    if tree is not None:
        tree.self_check()
        assert_same_tree(tree, load_bytes(data, "p.hatchet"))


def test_a_file_is_split_from_its_mapping(tmp_path, assert_same_tree):
    path = tmp_path / "p.hatchet"
    path.write_bytes(pretty(profile(50)))
    tree = load_split_file(str(path), min_bytes=0)
    assert tree is not None
    assert_same_tree(tree, load_bytes(path.read_bytes(), "p.hatchet"))
    assert tree.name_codes.values() == tree.names and tree.frame_type_codes.values() == tree.frame_types


def test_missing_empty_and_msgpack_named_files_are_left_to_the_serial_load(tmp_path):
    assert load_split_file(str(tmp_path / "missing.hatchet"), min_bytes=0) is None
    (tmp_path / "empty.hatchet").write_bytes(b"")
    assert load_split_file(str(tmp_path / "empty.hatchet"), min_bytes=0) is None
    # The serial load reads a .hatchet_msgpack file as MessagePack, whatever it holds.
    assert load_split(pretty(profile(50)), "p.hatchet_msgpack", min_bytes=0) is None


@pytest.mark.parametrize("path", sorted(FIXTURES.glob("*.hatchet")), ids=lambda p: p.name)
def test_proton_files_load_split_or_fall_back_but_never_differ(path, assert_same_tree):
    data = bytearray(path.read_bytes())
    tree = load_split(data, path.name, min_bytes=0)
    if tree is not None:
        assert_same_tree(tree, load_bytes(data, path.name))


def test_the_threads_fixture_is_actually_split():
    data = bytearray((FIXTURES / "threads.hatchet").read_bytes())
    assert load_split(data, "threads.hatchet", min_bytes=0) is not None


def test_small_files_and_compact_json_are_left_to_the_serial_load():
    document = profile(50)
    assert load_split(pretty(document), "p.hatchet") is None  # below MIN_SPLIT_BYTES
    assert load_split(bytearray(json.dumps(document).encode()), "p.hatchet", min_bytes=0) is None


def test_when_root_survives_only_through_the_second_half_the_serial_load_decides():
    """ROOT's first-half children are all empty scopes, pruned; ROOT lives on its second half."""
    children = [node(f"a{i:02d}" + "x" * 300) for i in range(20)] + [kernel(f"z{i:02d}", i) for i in range(3)]
    data = pretty([node("ROOT", {"count": 0, "time (ns)": 0}, children), {}])
    assert load_split(data, "p.hatchet", min_bytes=0) is None
    assert load_bytes(data, "p.hatchet").names[0] == "ROOT"


def test_a_broken_second_half_falls_back_to_the_serial_error():
    data = pretty(profile(20)).replace(b'"name": "scope_015"', b'"nam": "scope_015"')
    assert load_split(data, "p.hatchet", min_bytes=0) is None
    with pytest.raises(ProfileError, match="a frame has no name"):
        load_bytes(data, "p.hatchet")
