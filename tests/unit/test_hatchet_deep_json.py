"""Issue 34, row 11: the hatchet JSON grows linearly with depth (indentation made it quadratic: 1.1 GB
for 5,000 nested scopes), and stays byte-identical to Proton's at ordinary depths."""
from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

import lepton as proton
from lepton.cli.view import main
from lepton.writers import fast_json, hatchet

GOLDEN = Path(__file__).resolve().parents[1] / "data" / "proton_3_6"


def nested(depth: int, fmt: str = "hatchet") -> Path:
    """A profile of `depth` nested scopes, each with a metric, written through the API."""
    proton.start(f"deep{depth}", backend="cpu")
    scopes = [proton.scope(f"s{i}", {"m": i}) for i in range(depth)]
    for sc in scopes:
        sc.__enter__()
    for sc in reversed(scopes):
        sc.__exit__(None, None, None)
    (path,) = proton.finalize(output_format=fmt)
    return Path(path)


@pytest.mark.parametrize("name", sorted(p.name for p in GOLDEN.glob("*.hatchet")))
def test_proton_s_own_files_are_written_byte_for_byte(name):
    """Triton 3.6's files, decoded and written again with the cap: the same bytes."""
    text = (GOLDEN / name).read_text()
    assert "\n" + fast_json.dumps(json.loads(text), hatchet.COMPACT_FROM) + "\n" == text


def test_a_profile_as_deep_as_the_cap_is_what_proton_writes():
    """Nodes down to INDENTED_LEVELS below ROOT: json.dumps(indent=4, sort_keys=True) exactly."""
    text = nested(hatchet.INDENTED_LEVELS).read_text()
    assert text == "\n" + json.dumps(json.loads(text), indent=4, sort_keys=True) + "\n"
    deepest = " " * 4 * (2 * hatchet.INDENTED_LEVELS + 1) + '"frame": {'
    assert deepest in text


def test_deeper_nodes_are_written_on_one_line_each_and_read_back_the_same():
    depth = hatchet.INDENTED_LEVELS + 50  # json.loads still decodes it (300 containers deep)
    text = nested(depth).read_text()
    document = json.loads(text)
    assert text != "\n" + json.dumps(document, indent=4, sort_keys=True) + "\n"
    assert max(len(line) - len(line.lstrip(" ")) for line in text.splitlines()) \
        <= 4 * (hatchet.COMPACT_FROM + 1)
    node = document[0]
    for i in range(depth):
        (node,) = node["children"]
        assert node["frame"]["name"] == f"s{i}" and node["metrics"] == {"m": i}
    # Below the cap, each node is the compact JSON of its subtree, as json.dumps writes it.
    node = document[0]
    for _ in range(hatchet.INDENTED_LEVELS + 1):
        (node,) = node["children"]
    assert json.dumps(node, sort_keys=True) in text


def test_5000_nested_scopes_make_a_file_linear_in_depth_that_lepton_view_reads():
    sizes = {depth: nested(depth).stat().st_size for depth in (2_500, 5_000)}
    msgpack_size = nested(5_000, "hatchet_msgpack").stat().st_size
    assert sizes[5_000] < 4 * msgpack_size  # was 1.1 GB, 4,000 times the MessagePack file
    per_level = (sizes[5_000] - sizes[2_500]) / 2_500
    assert per_level < 120  # the same bytes per level at any depth: ~ `{"children": [...], ...}`
    out, err = io.StringIO(), io.StringIO()
    assert main(["-d", "10000", "-m", "m", "--output", "csv", "deep5000.hatchet"], stdout=out, stderr=err) == 0, \
        err.getvalue()
    rows = out.getvalue().splitlines()
    assert len(rows) == 1 + 5_001 and rows[-1].split(",")[2:4] == ["5000", "s4999"]
