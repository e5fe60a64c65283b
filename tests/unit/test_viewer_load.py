"""viewer.load: hatchet JSON / MessagePack -> Tree, with proton-viewer's frame pruning."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from msgpack import Packer, StackError, packb, unpackb

from lepton.viewer.load import ProfileError, from_document, load, load_bytes

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "tests" / "data" / "proton_examples"
FIXTURES = ROOT / "tests" / "data" / "proton_3_6"


def node(name, metrics=None, children=(), frame_type="function"):
    frame = {"name": name} if frame_type is None else {"name": name, "type": frame_type}
    return {"children": list(children), "frame": frame, "metrics": dict(metrics or {})}


def kernel(name, time_ns, device_id="0"):
    return node(name, {"count": 1, "device_id": device_id, "device_type": "CUDA", "time (ns)": time_ns})


ROOT_ZEROS = {"count": 0, "time (ns)": 0}


def names_by_depth(tree):
    return [("  " * int(d)) + n for n, d in zip(tree.names, tree.depth)]


def test_a_tree_is_flattened_in_preorder_with_parents_before_children():
    """
    ROOT ─┬─ a ── k1
          └─ k2
    """
    tree = from_document([node("ROOT", ROOT_ZEROS, [node("a", {}, [kernel("k1", 5)]), kernel("k2", 7)]), {}])
    tree.self_check()
    assert tree.names == ["ROOT", "a", "k1", "k2"]
    assert tree.parent.tolist() == [-1, 0, 1, 0]
    assert tree.depth.tolist() == [0, 1, 2, 1]
    np.testing.assert_array_equal(tree.numbers["time (ns)"], [0, np.nan, 5, 7])
    assert tree.texts["device_id"].tolist() == [None, None, "0", "0"]
    assert tree.root_keys == ["count", "time (ns)"]
    assert tree.in_preorder


def test_launch_metadata_subtrees_are_removed_with_everything_under_them():
    """
    ROOT ── scope ─┬─ __proton_launch_metadata ── cuda_kernel      (removed)
                   ├─ __proton_launch_metadata:kern ── helper      (removed)
                   └─ triton_kernel
    """
    tree = from_document([node("ROOT", ROOT_ZEROS, [node("scope", {"cpu_time (ns)": 5}, [
        node("__proton_launch_metadata", {}, [kernel("cuda_kernel", 4064)]),
        node("__proton_launch_metadata:kern", {}, [kernel("helper", 3)]),
        kernel("triton_kernel", 1664)])]), {}])
    tree.self_check()
    assert names_by_depth(tree) == ["ROOT", "  scope", "    triton_kernel"]


def test_empty_leaves_go_and_so_do_parents_left_without_children():
    """
    ROOT ─┬─ iter_0 {}                          (no metrics, no children: removed)
          ├─ replay0 {} ── <captured_at> {} ── iter_0 {}   (all removed, bottom-up)
          ├─ keeps {"m": 1}                     (metrics, no children: kept)
          └─ has_metrics {"m": 2} ── empty {}   (children all removed: removed despite its metrics)
    """
    tree = from_document([node("ROOT", ROOT_ZEROS, [
        node("iter_0"),
        node("replay0", {}, [node("<captured_at>", {}, [node("iter_0")])]),
        node("keeps", {"m": 1}),
        node("has_metrics", {"m": 2}, [node("empty")]),
    ]), {}])
    tree.self_check()
    assert tree.names == ["ROOT", "keeps"]


def test_cudagraph_fixture_loses_its_empty_capture_placeholders():
    tree = load(FIXTURES / "cudagraph.hatchet")
    assert "replay0" not in tree.names
    assert tree.names.count("iter_0") == 1  # only the one under replay1 -> <captured_at>


@pytest.mark.parametrize("path", sorted(EXAMPLES.glob("*.json")) + sorted(FIXTURES.glob("*.hatchet")),
                         ids=lambda p: p.name)
def test_every_example_and_fixture_loads_into_a_consistent_tree(path):
    tree = load(path)
    tree.self_check()
    assert tree.names[0] == "ROOT" and tree.in_preorder


def test_subtree_sums_are_own_value_plus_childrens_sums():
    tree = load(FIXTURES / "scopes_metrics.hatchet")
    own = tree.numbers["time (ns)"]
    total = tree.subtree_sum(own)
    for node, children in enumerate(tree.children):
        parts = [own[node]] + [total[c] for c in children]
        expected = np.nansum(parts) if not np.isnan(parts).all() else np.nan
        np.testing.assert_equal(total[node], expected)


def test_a_frame_without_type_gets_hatchets_default_type():
    tree = load(EXAMPLES / "frame.json")
    assert tree.frame_types[tree.names.index("test0")] == "None"
    assert tree.frame_types[0] == "function"


def test_metric_columns_are_typed_numbers_or_texts_and_keep_first_use_order():
    tree = load(EXAMPLES / "triton.json")
    assert set(tree.numbers) == {"bytes", "count", "time (ns)", "cpu_time (ns)"}
    assert set(tree.texts) == {"device_id", "device_type"}
    assert tree.key_order == ["bytes", "count", "time (ns)", "cpu_time (ns)", "device_id", "device_type"]
    assert tree.devices == {"CUDA": {"0": {"arch": "86", "bus_width": 128, "clock_rate": 1140000,
                                           "memory_clock_rate": 5501000, "num_sms": 16}}}


def test_vector_metrics_stay_whole_as_text_values():
    tree = from_document([node("ROOT", {}, [node("s", {"vec": [1, 2, 3], "x": 1.5})]), {}])
    assert tree.texts["vec"].tolist() == [None, [1, 2, 3]]
    assert tree.numbers["x"][1] == 1.5


def test_device_info_is_optional():
    tree = from_document([node("ROOT", ROOT_ZEROS, [kernel("k", 1)])])
    assert tree.devices == {}


def test_hatchet_msgpack_loads_like_the_json_file(tmp_path):
    """Proton's msgpack layout: node = map(frame, metrics, children), empty leaves left out."""
    document = json.loads((FIXTURES / "scopes_metrics.hatchet").read_text())

    def reorder(n):
        return {"frame": n["frame"], "metrics": n["metrics"], "children": [reorder(c) for c in n["children"]]}

    path = tmp_path / "p.hatchet_msgpack"
    path.write_bytes(packb([reorder(document[0]), document[1]]))
    from_msgpack, from_json = load(path), load(FIXTURES / "scopes_metrics.hatchet")
    assert from_msgpack.names == from_json.names
    assert from_msgpack.parent.tolist() == from_json.parent.tolist()
    for key, values in from_json.numbers.items():
        np.testing.assert_array_equal(from_msgpack.numbers[key], values)
    assert from_msgpack.devices == from_json.devices


def test_msgpack_is_recognised_by_content_whatever_the_file_name(tmp_path):
    path = tmp_path / "profile.hatchet"
    path.write_bytes(packb([node("ROOT", ROOT_ZEROS, [kernel("k", 3)]), {}]))
    assert load(path).names == ["ROOT", "k"]


def chain_msgpack(depth: int, leaf: dict, devices: dict | None = None) -> bytes:
    """[ROOT -> s0 -> s1 ... -> leaf, devices] in Proton's layout, packed a level at a time: the
    msgpack package packs nothing nested deeper than 511 containers."""
    headers = Packer()
    levels = [headers.pack_map_header(3) + packb("frame") + packb({"name": name, "type": "function"})
              + packb("metrics") + packb(metrics) + packb("children") + headers.pack_array_header(1)
              for name, metrics in [("ROOT", ROOT_ZEROS), *((f"s{i}", {}) for i in range(depth))]]
    tail = packb(devices) if devices is not None else b""
    return headers.pack_array_header(2 if tail else 1) + b"".join(levels) + packb(leaf) + tail


def test_trees_too_deep_for_msgpacks_decoder_load_node_by_node():
    depth = 1500  # beyond what json.loads accepts (~500 tree levels), and msgpack.unpackb (~510)
    data = chain_msgpack(depth, kernel("k", 1), {"CUDA": {"0": {"arch": "90"}}})
    with pytest.raises(StackError):
        unpackb(data)
    tree = load_bytes(data)
    assert len(tree) == depth + 2
    assert int(tree.depth.max()) == depth + 1
    assert tree.names[-1] == "k" and tree.numbers["time (ns)"][-1] == 1
    assert tree.devices == {"CUDA": {"0": {"arch": "90"}}}


def test_a_deep_tree_loads_the_same_node_by_node_as_whole(assert_same_tree):
    shallow = load_bytes(chain_msgpack(400, kernel("k", 1), {}))  # msgpack's own decoder
    deep = load_bytes(chain_msgpack(1500, kernel("k", 1), {}))  # node by node
    names = shallow.names[:-1] + [f"s{i}" for i in range(400, 1500)] + ["k"]
    assert deep.names == names
    assert deep.numbers["time (ns)"][-1] == shallow.numbers["time (ns)"][-1]


@pytest.mark.parametrize("cut, message", [(-5, "is truncated"), (None, "bytes follow")])
def test_a_broken_deep_msgpack_profile_says_what_is_wrong(cut, message):
    data = chain_msgpack(1500, kernel("k", 3), {})
    data = data[:cut] if cut else data + b"\x00\x00"
    with pytest.raises(ProfileError, match=message):
        load_bytes(data, "p.hatchet_msgpack")


def test_deep_nesting_that_is_no_tree_is_too_deep_to_read():
    with pytest.raises(ProfileError, match="too deeply"):
        load_bytes(b"\x91" * 2000 + b"\x00", "p.hatchet_msgpack")


def test_msgpack_nodes_with_keys_in_any_order_load():
    """Proton writes frame, metrics, children; JSON's sorted order (and any other) reads the same."""
    document = [node("ROOT", ROOT_ZEROS, [kernel("k", 3)]), {}]
    tree = load_bytes(packb(document), "p.hatchet_msgpack")
    assert tree.names == ["ROOT", "k"] and tree.numbers["time (ns)"].tolist() == [0, 3]


def chain_json(depth: int, leaf: dict, devices: dict | None = None) -> bytes:
    """The JSON twin of chain_msgpack, in Proton's sorted key order (children before frame), written
    a level at a time: json.dumps nests no deeper than the recursion limit."""
    tails = [f'],"frame":{json.dumps({"name": name, "type": "function"})},"metrics":{json.dumps(metrics)}}}'
             for name, metrics in [("ROOT", ROOT_ZEROS), *((f"s{i}", {}) for i in range(depth))]]
    text = '{"children":[' * len(tails) + json.dumps(leaf) + "".join(reversed(tails))
    return f"[{text}{', ' + json.dumps(devices) if devices is not None else ''}]".encode()


def test_json_trees_5000_levels_deep_load_node_by_node():
    """json.loads stops near 500 tree levels (two containers a level); the tree must not."""
    data = chain_json(5000, kernel("k", 7), {"CUDA": {"0": {"arch": "90"}}})
    with pytest.raises(RecursionError):
        json.loads(data)
    tree = load_bytes(data, "deep.hatchet")
    tree.self_check()
    assert len(tree) == 5002 and int(tree.depth.max()) == 5001
    assert tree.names[:3] == ["ROOT", "s0", "s1"] and tree.names[-1] == "k"
    assert tree.numbers["time (ns)"][-1] == 7 and tree.texts["device_type"][-1] == "CUDA"
    assert tree.devices == {"CUDA": {"0": {"arch": "90"}}}
    assert tree.subtree_sum(tree.numbers["time (ns)"])[0] == 7


@pytest.mark.parametrize("depth", [5000, 30_000])
def test_msgpack_trees_5000_and_30000_levels_deep_load(depth):
    """30,000 levels is beyond the recursion limit the node-by-node reader once raised (40,000
    frames, two a level)."""
    tree = load_bytes(chain_msgpack(depth, kernel("k", 7), {"CUDA": {}}), "deep.hatchet_msgpack")
    assert len(tree) == depth + 2 and int(tree.depth.max()) == depth + 1
    assert tree.names[-1] == "k" and tree.subtree_sum(tree.numbers["time (ns)"])[0] == 7


@pytest.mark.parametrize("fixture", sorted(p.name for p in EXAMPLES.glob("*.json")) + ["scopes_metrics.hatchet"])
def test_the_node_by_node_json_reader_reads_every_example_as_json_loads_does(fixture, assert_same_tree):
    from lepton.viewer.deep import read_json
    from lepton.viewer.load import _deep_tree

    path = EXAMPLES / fixture if (EXAMPLES / fixture).exists() else FIXTURES / fixture
    text = path.read_text()
    assert_same_tree(_deep_tree(fixture, lambda builder: read_json(text, builder)), load(path))


def test_the_node_by_node_readers_prune_as_the_whole_document_walk_does(assert_same_tree):
    """Keys in any order, the device block first, metadata and empty leaves dropped."""
    from lepton.viewer.deep import read_json, read_msgpack
    from lepton.viewer.load import _deep_tree, _unpacker

    meta = node("__proton_launch_metadata", {}, [kernel("meta_k", 5)])
    tree = node("ROOT", ROOT_ZEROS, [node("empty"), meta, node("s", {}, [kernel("k", 3), node("e")])])
    document = [{"CUDA": {"0": {"arch": "90"}}}, {"metrics": tree["metrics"], "children": tree["children"],
                                                 "frame": tree["frame"]}]
    whole = from_document(document)
    assert whole.names == ["ROOT", "s", "k"]
    text, data = json.dumps(document), packb(document)
    assert_same_tree(_deep_tree("j", lambda builder: read_json(text, builder)), whole)
    assert_same_tree(_deep_tree("m", lambda builder: read_msgpack(data, _unpacker(data), builder)), whole)


def test_a_decoded_document_50000_levels_deep_is_walked_without_recursion():
    leaf = kernel("k", 2)
    top = leaf
    for i in reversed(range(50_000)):
        top = node(f"s{i}", {}, [top])
    tree = from_document([node("ROOT", ROOT_ZEROS, [top])])
    assert len(tree) == 50_002 and tree.names[-1] == "k" and int(tree.depth[-1]) == 50_001


@pytest.mark.parametrize("edit, message", [
    (lambda data: data[:-40], "is truncated"),
    (lambda data: data[:-1] + b",]", "invalid JSON"),
    (lambda data: data.replace(b'"metrics":{}', b'"metrics":{} "x":1', 1), "invalid JSON"),
    (lambda data: data.replace(b'{"children":[', b'{"children":[7,', 1), "malformed"),
    (lambda data: data.replace(b'"name": "s9"', b'"nom": "s9"', 1), "no name"),
    (lambda data: data + b"x", "invalid JSON"),
])
def test_a_broken_deep_json_profile_says_what_is_wrong(edit, message):
    with pytest.raises(ProfileError, match=message) as info:
        load_bytes(edit(chain_json(1000, kernel("k", 3), {})), "deep.hatchet")
    assert "\n" not in str(info.value)


def test_deep_json_nesting_that_is_no_tree_is_too_deep_to_read():
    with pytest.raises(ProfileError, match="too deeply"):
        load_bytes(b"[" * 5000 + b"]" * 5000, "p.hatchet")
    with pytest.raises(ProfileError, match="too deeply"):
        load_bytes(b'[{"frame": {"name": "a"}, "metrics": ' + b"[" * 5000 + b"]" * 5000 + b"}]", "p.hatchet")


def test_a_json_profile_with_a_utf8_byte_order_mark_reads_as_json(tmp_path, assert_same_tree):
    plain = (FIXTURES / "scopes_metrics.hatchet").read_bytes()
    path = tmp_path / "bom.hatchet"
    path.write_bytes(b"\xef\xbb\xbf" + plain)
    assert_same_tree(load(path), load(FIXTURES / "scopes_metrics.hatchet"))
    deep = load_bytes(b"\xef\xbb\xbf" + chain_json(1000, kernel("k", 3)), "deep.hatchet")
    assert deep.names[-1] == "k"


# ------------------------------------------------------------ bad input: one line, says what is wrong

def test_a_missing_file_says_it_cannot_be_read(tmp_path):
    with pytest.raises(ProfileError, match=r"cannot read '.*nope\.hatchet': No such file or directory"):
        load(tmp_path / "nope.hatchet")


def test_a_directory_is_not_a_profile(tmp_path):
    with pytest.raises(ProfileError, match="cannot read"):
        load(tmp_path)


@pytest.mark.parametrize("content, message", [
    (b"", "is empty"),
    (b"hello world", "not a profile"),
    (b'{"traceEvents": []}', "looks like a Chrome trace"),
    (b"[1, 2]", "no tree node"),
    (b'[{"frame": {"name": "ROOT"}, "metrics": [1], "children": []}]', "malformed"),
    (b'[{"frame": "ROOT", "metrics": {"a": 1}, "children": []}]', "malformed"),
    (b'[{"frame": {"type": "function"}, "metrics": {"a": 1}, "children": []}]', "no name"),
    (b"[{}, {]", "invalid JSON at line 1"),
    (b"\xff\xfe\x00garbage", "not a profile"),
    (b"\xa6chrome", "single string"),
])
def test_a_file_that_is_not_a_profile_says_why(content, message):
    with pytest.raises(ProfileError, match=message):
        load_bytes(content, "bad.hatchet")


@pytest.mark.parametrize("fixture", ["triton.json", "cuda.json"])
@pytest.mark.parametrize("keep", [0.3, 0.5, 0.97])
def test_a_truncated_json_profile_says_it_is_truncated(fixture, keep):
    data = (EXAMPLES / fixture).read_bytes()
    with pytest.raises(ProfileError, match="is truncated"):
        load_bytes(data[:int(len(data) * keep)], fixture)


def test_a_truncated_msgpack_profile_says_it_is_truncated():
    data = packb([node("ROOT", ROOT_ZEROS, [kernel("k", 3)]), {}])
    with pytest.raises(ProfileError, match="is truncated"):
        load_bytes(data[:-5], "p.hatchet_msgpack")


@pytest.mark.parametrize("data, message", [
    (packb([node("ROOT", ROOT_ZEROS, [kernel("k", 3)]), {}]) + b"\x00", "1 bytes follow the MessagePack data"),
    (b"\xc1", "not a profile"),  # a tag MessagePack never uses
    (b"\xa1\xff", "not a profile"),  # a str that is not UTF-8
    (b"\x81\x91\x01\x02", "not a profile"),  # a map key that is an array
    (b"\xd4\x01\x00", "expected a list"),  # an ext type
])
def test_a_msgpack_file_that_is_not_a_profile_says_why(data, message):
    with pytest.raises(ProfileError, match=message):
        load_bytes(data, "p.hatchet_msgpack")


def test_errors_are_one_line():
    with pytest.raises(ProfileError) as info:
        load_bytes(b"[{}, {]", "x")
    assert "\n" not in str(info.value)
