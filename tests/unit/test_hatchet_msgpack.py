"""writers.hatchet_msgpack: the bytes it writes (pinned by digest) and what the viewer reads back.

The digests in tests/data/writers/hatchet_msgpack.sha256 were taken with Lepton's own MessagePack
codec before it was replaced by the `msgpack` package: the files must not change by a byte.
"""
from __future__ import annotations

import hashlib
import io
import json
from pathlib import Path

import pytest

from lepton.cli.view import main as view_main
from lepton.model.paths import ROOT, PathTable
from lepton.model.profile import Profile
from lepton.model.records import DeviceInfo
from lepton.model.tree import TreeData
from lepton.viewer.load import load_bytes
from lepton.writers import hatchet, hatchet_msgpack

DATA = Path(__file__).resolve().parents[2] / "tests" / "data"
FIXTURES = sorted([*(DATA / "proton_3_6").glob("*.hatchet"), *(DATA / "proton_examples").glob("*.json")])
# sha256sum's format: "<digest>  <profile>"
DIGESTS = {name: digest for digest, name in (line.split("  ", 1) for line in
                                              (DATA / "writers" / "hatchet_msgpack.sha256").read_text().splitlines())}
KERNEL_KEYS = ("time (ns)", "count", "device_id", "device_type")


def profile_of(document: list) -> Profile:
    """A Profile that holds the tree of a hatchet document: kernels where a node has kernel
    metrics, the other metrics as user metrics, empty nodes as scopes."""
    root, devices = document
    paths, data = PathTable(), TreeData()

    def visit(node: dict, pid: int) -> None:
        # Instrumentation nodes carry a device id and type but no time: not kernels, and
        # strings are no user metric.
        metrics = dict(node.get("metrics", {}))
        if pid != ROOT and all(key in metrics for key in KERNEL_KEYS):
            time_ns, count, device_id, device_type = (metrics.pop(key) for key in KERNEL_KEYS)
            data.add_kernels([pid], [time_ns], [count], [int(device_id)], device_type)
        if pid != ROOT:
            data.scopes.add(pid)
            data.add_metrics(pid, {key: value for key, value in metrics.items() if not isinstance(value, str)})
        for child in node.get("children", []):
            visit(child, paths.child(pid, child["frame"]["name"]))

    visit(root, ROOT)
    infos = {kind: {int(i): DeviceInfo(d["arch"], d["num_sms"], d["clock_rate"], d["memory_clock_rate"],
                                       d["bus_width"]) for i, d in ids.items()} for kind, ids in devices.items()}
    return Profile(paths, data, infos)


def edge_cases() -> Profile:
    """What the fixtures lack: every integer width, negative and float values, vectors, exclusive
    metrics, names of 32 and 300 bytes, 20 children (array16), 20 metrics (map16), dropped records."""
    paths, data = PathTable(), TreeData()
    wide = paths.child(ROOT, "w" * 300)
    kernels = [paths.child(wide, f"k{i:02d}_" + "x" * 29) for i in range(20)]
    data.add_kernels(kernels, [2**i for i in range(0, 60, 3)], [1 + i for i in range(20)], [i % 2 for i in range(20)],
                     "CUDA")
    data.add_metrics(wide, {f"m{i:02d}": (-1) ** i * 7 ** i for i in range(20)})
    data.add_metrics(kernels[0], {"flops16": 2.5e12, "bytes": 2**33, "vec": [1, -2, 3], "neg": -200,
                                  "cpu_time (ns)(exc)": 5, "ratio (pty)": 0.25})
    data.add_metrics(ROOT, {"launches": 3})
    h200 = DeviceInfo("90", 132, 1980000, 3201000, 6016)
    return Profile(paths, data, {"CUDA": {0: h200, 1: h200}}, dropped_records=70000)


def fixture_profile(path: Path) -> Profile:
    return profile_of(json.loads(path.read_text()))


PROFILES = {**{path.name: (lambda path=path: fixture_profile(path)) for path in FIXTURES}, "edge cases": edge_cases}


def test_every_profile_has_a_digest():
    assert sorted(DIGESTS) == sorted(PROFILES)


@pytest.mark.parametrize("name", PROFILES)
def test_the_bytes_written_are_those_lepton_always_wrote(name):
    payload = hatchet_msgpack.render(PROFILES[name]())
    assert hashlib.sha256(payload).hexdigest() == DIGESTS[name]


@pytest.mark.parametrize("name", PROFILES)
def test_the_viewer_reads_back_what_the_json_writer_would_have_given(name, assert_same_tree):
    profile = PROFILES[name]()
    from_msgpack = load_bytes(hatchet_msgpack.render(profile), "p.hatchet_msgpack")
    from_json = load_bytes(hatchet.render(profile), "p.hatchet")
    from_msgpack.self_check()
    # The JSON file sorts metric keys, MessagePack lists kernel metrics first: only the order differs.
    assert sorted(from_msgpack.key_order) == sorted(from_json.key_order)
    from_msgpack.key_order, from_msgpack.root_keys = from_json.key_order, from_json.root_keys
    assert_same_tree(from_msgpack, from_json)


def shown(payload: bytes, name: str, tmp_path: Path) -> str:
    path = tmp_path / name
    path.write_bytes(payload)
    out = io.StringIO()
    assert view_main(["--no-color", "--width", "0", str(path)], stdout=out, stderr=io.StringIO()) == 0
    return out.getvalue()


def test_lepton_view_shows_the_msgpack_file_as_the_json_file(tmp_path):
    profile = fixture_profile(DATA / "proton_3_6" / "scopes_metrics.hatchet")
    text = shown(hatchet_msgpack.render(profile), "p.hatchet_msgpack", tmp_path)
    assert "ROOT" in text
    assert text == shown(hatchet.render(profile), "p.hatchet", tmp_path)


def test_a_tree_as_deep_as_the_writer_goes_is_written_and_read_back():
    """The writer recurses, three Python frames a tree level: about 330 levels is where it stops
    today, below msgpack's own limit of 511 nested containers (about 510 tree levels)."""
    paths, data = PathTable(), TreeData()
    pid = ROOT
    for i in range(300):
        pid = paths.child(pid, f"s{i}")
    data.add_kernels([pid], [5], [1], [0], "CUDA")
    tree = load_bytes(hatchet_msgpack.render(Profile(paths, data)), "p.hatchet_msgpack")
    assert len(tree) == 301 and int(tree.depth.max()) == 300 and tree.numbers["time (ns)"][-1] == 5
