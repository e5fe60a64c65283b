"""lepton.msgpack: the pure-Python MessagePack codec the hatchet-msgpack writer and the viewer use."""
from __future__ import annotations

import math
import struct

import numpy as np
import pytest

from lepton.msgpack import MsgpackError, TruncatedError, decoder, packb, unpackb

# (value, its shortest MessagePack encoding), from the spec's format table.
KNOWN_ENCODINGS = [
    (None, b"\xc0"),
    (False, b"\xc2"),
    (True, b"\xc3"),
    (0, b"\x00"),
    (127, b"\x7f"),
    (128, b"\xcc\x80"),
    (255, b"\xcc\xff"),
    (256, b"\xcd\x01\x00"),
    (65535, b"\xcd\xff\xff"),
    (65536, b"\xce\x00\x01\x00\x00"),
    (2**32 - 1, b"\xce\xff\xff\xff\xff"),
    (2**32, b"\xcf\x00\x00\x00\x01\x00\x00\x00\x00"),
    (2**64 - 1, b"\xcf" + b"\xff" * 8),
    (-1, b"\xff"),
    (-32, b"\xe0"),
    (-33, b"\xd0\xdf"),
    (-128, b"\xd0\x80"),
    (-129, b"\xd1\xff\x7f"),
    (-32768, b"\xd1\x80\x00"),
    (-32769, b"\xd2\xff\xff\x7f\xff"),
    (-(2**31), b"\xd2\x80\x00\x00\x00"),
    (-(2**31) - 1, b"\xd3\xff\xff\xff\xff\x7f\xff\xff\xff"),
    (-(2**63), b"\xd3\x80" + b"\x00" * 7),
    (1.5, b"\xcb" + struct.pack(">d", 1.5)),
    ("", b"\xa0"),
    ("a" * 31, b"\xbf" + b"a" * 31),
    ("a" * 32, b"\xd9\x20" + b"a" * 32),
    ("a" * 256, b"\xda\x01\x00" + b"a" * 256),
    ("é", b"\xa2\xc3\xa9"),
    (b"", b"\xc4\x00"),
    (b"\x01\x02", b"\xc4\x02\x01\x02"),
    (b"x" * 256, b"\xc5\x01\x00" + b"x" * 256),
    ([], b"\x90"),
    ([1, 2], b"\x92\x01\x02"),
    (list(range(16)), b"\xdc\x00\x10" + bytes(range(16))),
    ({}, b"\x80"),
    ({"a": 1}, b"\x81\xa1a\x01"),
    ({chr(65 + i): i for i in range(16)}, b"\xde\x00\x10" + b"".join(b"\xa1" + chr(65 + i).encode() + bytes((i,)) for i in range(16))),
]


@pytest.mark.parametrize("value, encoded", KNOWN_ENCODINGS, ids=lambda v: repr(v)[:20])
def test_packb_writes_the_shortest_encoding_and_unpackb_reads_it_back(value, encoded):
    assert packb(value) == encoded
    assert unpackb(encoded) == value


def test_dict_keys_keep_insertion_order_as_protons_frame_metrics_children():
    node = {"frame": {"name": "k", "type": "function"}, "metrics": {"time (ns)": 5, "count": 1}, "children": []}
    decoded = unpackb(packb(node))
    assert list(decoded) == ["frame", "metrics", "children"]
    assert list(decoded["metrics"]) == ["time (ns)", "count"]


def test_tuples_pack_as_arrays_and_numpy_scalars_as_numbers():
    assert unpackb(packb((1, np.int64(-7), np.float32(0.5), np.uint64(2**63)))) == [1, -7, 0.5, 2**63]


def test_large_containers_use_the_32_bit_length_forms():
    big_list = [0] * 70000
    assert packb(big_list)[:5] == b"\xdd\x00\x01\x11\x70"
    assert unpackb(packb(big_list)) == big_list
    big_map = {i: None for i in range(70000)}
    assert packb(big_map)[:1] == b"\xdf"
    assert unpackb(packb(big_map)) == big_map


def test_unpackb_reads_float32_and_the_32_bit_str_and_bin_forms():
    assert unpackb(b"\xca" + struct.pack(">f", 0.25)) == 0.25
    assert unpackb(b"\xdb\x00\x00\x00\x02hi") == "hi"
    assert unpackb(b"\xc6\x00\x00\x00\x01z") == b"z"
    assert math.isnan(unpackb(b"\xcb" + struct.pack(">d", math.nan)))


def test_packb_refuses_integers_outside_64_bits_and_unknown_types():
    with pytest.raises(OverflowError):
        packb(2**64)
    with pytest.raises(OverflowError):
        packb(-(2**63) - 1)
    with pytest.raises(TypeError, match="set"):
        packb({1, 2})


@pytest.mark.parametrize("data", [b"\xd4\x01\x00", b"\xc7\x01\x05x", b"\xd6\xff\x00\x00\x00\x01"])
def test_ext_types_are_refused_with_an_error(data):
    with pytest.raises(MsgpackError, match="ext type"):
        unpackb(data)


@pytest.mark.parametrize("data", [b"", b"\x92\x01", b"\xcd\x01", b"\xa5abc", b"\x81\xa1a", b"\xdc\x00"])
def test_truncated_data_raises_truncated_error(data):
    with pytest.raises(TruncatedError):
        unpackb(data)


def test_invalid_tag_extra_bytes_and_bad_utf8_are_errors():
    with pytest.raises(MsgpackError, match="invalid MessagePack tag 0xc1"):
        unpackb(b"\xc1")
    with pytest.raises(MsgpackError, match="extra data"):
        unpackb(b"\x01\x02")
    with pytest.raises(MsgpackError, match="UTF-8"):
        unpackb(b"\xa1\xff")


def test_deep_nesting_decodes_beyond_the_default_recursion_limit():
    depth = 2000  # a 1000-level call tree: map + children array per level
    data = b"\x91" * depth + b"\x00"
    value = unpackb(data)
    for _ in range(depth):
        value = value[0]
    assert value == 0


# ------------------------------------------------------------ against the reference implementation

@pytest.fixture
def reference():
    """The msgpack package (in the test extra); only these comparisons need it."""
    return pytest.importorskip("msgpack")


SAMPLES = [
    None, True, False, 0, 1, -1, 127, 128, -32, -33, 255, 256, 65535, 65536, 2**32, 2**63, 2**64 - 1,
    -(2**15), -(2**31), -(2**63), 0.0, -2.5, 1e300, "", "x" * 31, "y" * 32, "z" * 70000, "ünï", b"",
    b"\x00" * 300, b"q" * 70000, [], list(range(20)), {}, {"a": [1, {"b": None}], "c": 2.0},
    [{"frame": {"name": "ROOT", "type": "function"}, "metrics": {"count": 0, "time (ns)": 0}, "children": []},
     {"CUDA": {"0": {"arch": "90", "num_sms": 132}}}],
]


@pytest.mark.parametrize("value", SAMPLES, ids=lambda v: repr(v)[:20])
def test_packb_matches_the_msgpack_package_byte_for_byte(reference, value):
    assert packb(value) == reference.packb(value, use_bin_type=True, use_single_float=False)


@pytest.mark.parametrize("value", SAMPLES, ids=lambda v: repr(v)[:20])
def test_unpackb_reads_what_the_msgpack_package_writes(reference, value):
    assert unpackb(reference.packb(value, use_bin_type=True)) == value


def test_unpackb_reads_msgpack_float32_output(reference):
    assert unpackb(reference.packb(0.5, use_single_float=True)) == 0.5


def test_a_decoder_reads_one_object_at_any_offset():
    data = packb([{"name": "k", "time (ns)": 70000, "flops": 2.5}, "k", [1, -1]])
    read_at = decoder(data)
    first, after_first = read_at(1)
    assert first == {"name": "k", "time (ns)": 70000, "flops": 2.5}
    assert read_at(after_first) == ("k", after_first + 2)
    assert read_at(0) == (unpackb(data), len(data))
    with pytest.raises(TruncatedError):
        decoder(data[:-1])(after_first + 2)


def test_equal_strings_decode_to_one_object():
    first, second = unpackb(packb([{"type": "function"}, {"type": "function"}]))
    assert next(iter(first)) is next(iter(second)) and first["type"] is second["type"]
