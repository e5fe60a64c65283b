"""lepton-view shows any profile safely: names that hold terminal escapes or newlines, trees
thousands of levels deep, and trees too big to print whole (issue 21)."""
from __future__ import annotations

import csv
import io
import json
import re
from pathlib import Path

import numpy as np
import pytest
from msgpack import Packer, packb, unpackb

from lepton.cli.view import main
from lepton.viewer import render
from lepton.viewer.derive import Column
from lepton.viewer.load import from_document
from lepton.viewer.render import RenderOptions, tree_text, write_tree

HOSTILE = ["\x1b[31mred\x1b[0m", "\x1b]0;title\x07", "two\nlines", "cr\rtab\t", "csi\x9b2J", "bidi\u202eevil"]
SHOWN = [r"\x1b[31mred\x1b[0m", r"\x1b]0;title\x07", r"two\nlines", r"cr\rtab\t", r"csi\x9b2J", r"bidi\u202eevil"]
RAW_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]")


def run_view(*argv):
    out, err = io.StringIO(), io.StringIO()
    code = main([str(a) for a in argv], stdout=out, stderr=err)
    return code, out.getvalue(), err.getvalue()


def hostile_profile(tmp_path: Path) -> Path:
    """ROOT with one kernel per hostile name, and a metric whose name is hostile too; written as
    JSON text by hand, as anyone could."""
    kernels = ",".join(
        f'{{"children": [], "frame": {{"name": {json.dumps(name)}, "type": "function"}}, '
        f'"metrics": {{"count": 1, "time (ns)": {1000 * (i + 1)}, "evil\\u001b[2Jmetric": 1}}}}'
        for i, name in enumerate(HOSTILE))
    path = tmp_path / "hostile.hatchet"
    path.write_text(f'[{{"children": [{kernels}], "frame": {{"name": "ROOT", "type": "function"}}, '
                    f'"metrics": {{"count": 0, "time (ns)": 0}}}}, {{}}]')
    return path


def test_control_characters_in_names_are_escaped_and_each_node_stays_one_line(tmp_path):
    code, out, err = run_view("--no-color", "-m", "time/ns", "--print-sorted", hostile_profile(tmp_path))
    assert (code, err) == (0, "")
    assert not RAW_CONTROL.search(out)
    tree, sorted_list = out.split("\n\n")
    lines = tree.split("\n")
    assert len(lines) == 1 + len(HOSTILE)
    assert [line.split(" ", 2)[2] for line in lines[1:]] == sorted(SHOWN, key=lambda s: HOSTILE[SHOWN.index(s)])
    assert all(any(line.startswith(name) for line in sorted_list.splitlines()) for name in SHOWN)


def test_escapes_stay_escaped_in_colour_and_when_names_are_shortened(tmp_path):
    _, out, _ = run_view("--color", "--width", "30", hostile_profile(tmp_path))
    assert "\x1b]" not in out and "\x1b[31mred" not in out and "\x9b" not in out
    assert len(out.splitlines()) == 1 + len(HOSTILE) + 1  # splitlines also splits at \x1c-\x1e, \x85, \u2028


def test_csv_escapes_names_as_the_tree_does_one_physical_line_per_row(tmp_path):
    code, out, _ = run_view("--output", "csv", hostile_profile(tmp_path))
    assert code == 0 and not RAW_CONTROL.search(out)
    assert len(out.splitlines()) == 2 + len(HOSTILE)
    rows = list(csv.DictReader(io.StringIO(out)))
    assert sorted(row["name"] for row in rows[1:]) == sorted(SHOWN)


def test_json_keeps_names_exact_with_its_own_escapes(tmp_path):
    code, out, _ = run_view("--output", "json", "-m", "time/ns,evil\x1b[2jmetric", hostile_profile(tmp_path))
    assert code == 0 and not RAW_CONTROL.search(out)
    document = json.loads(out)
    assert sorted(node["name"] for node in document["nodes"][1:]) == sorted(HOSTILE)
    assert document["metrics"][1] == "evil\x1b[2Jmetric"


def test_metric_names_from_the_file_are_escaped_in_lists_and_errors(tmp_path):
    path = hostile_profile(tmp_path)
    code, out, _ = run_view("-l", path)
    assert code == 0 and r"- evil\x1b[2jmetric" in out and not RAW_CONTROL.search(out)
    code, _, err = run_view("-m", "nope", path)
    assert code == 2 and r"evil\x1b[2jmetric" in err and not RAW_CONTROL.search(err)
    assert len(err.splitlines()) == 1


# ------------------------------------------------------------ depth

def kernel_json(i: int) -> str:
    return f'{{"children":[],"frame":{{"name":"k","type":"function"}},"metrics":{{"count":1,"time (ns)":{i + 1}}}}}'


def deep_json(depth: int) -> bytes:
    """ROOT -> s0 -> ... -> s{depth-1}, each scope with a kernel k before the next scope, as text
    written a level at a time (json.dumps nests no deeper than the recursion limit)."""
    def tail(name, metrics="{}"):
        return f'],"frame":{{"name":"{name}","type":"function"}},"metrics":{metrics}}}'

    opens = ",".join('{"children":[' + kernel_json(i) for i in range(depth))
    closes = "".join(tail(f"s{i}") for i in reversed(range(depth)))
    return ('[{"children":[' + opens + closes + tail("ROOT", '{"count":0,"time (ns)":0}') + "]").encode()


def deep_msgpack(depth: int) -> bytes:
    """deep_json's tree in Proton's msgpack layout, packed a level at a time with Packer's headers."""
    packer = Packer()

    def head(name, metrics, children):
        return (packer.pack_map_header(3) + packb("frame") + packb({"name": name, "type": "function"})
                + packb("metrics") + packb(metrics) + packb("children") + packer.pack_array_header(children))

    levels = [head(f"s{i}", {}, 2 if i < depth - 1 else 1) + packb(json.loads(kernel_json(i)))
              for i in range(depth)]
    return packer.pack_array_header(1) + head("ROOT", {"count": 0, "time (ns)": 0}, 1) + b"".join(levels)


def test_the_deep_builders_make_the_same_tree():
    assert json.loads(deep_json(3)) == unpackb(deep_msgpack(3))


@pytest.fixture(scope="module")
def deep_files(tmp_path_factory):
    folder = tmp_path_factory.mktemp("deep")
    (folder / "deep.hatchet").write_bytes(deep_json(5000))
    (folder / "deep.hatchet_msgpack").write_bytes(deep_msgpack(5000))
    return folder


@pytest.mark.parametrize("name", ["deep.hatchet", "deep.hatchet_msgpack"])
def test_a_tree_5000_levels_deep_is_shown_whole_with_d_10000(deep_files, name):
    code, out, err = run_view("-d", "10000", "-m", "time/ns", deep_files / name)
    assert (code, err) == (0, "")
    lines = out.split("\n")
    assert len(lines) == 2 * 5000 + 1 + 2  # every scope and kernel, ROOT, the empty line
    assert lines[0] == f"{sum(range(1, 5001))}.000 ROOT"
    assert lines[-4] == "   " * 4999 + "└─ 5000.000 s4999" and lines[-3] == "   " * 5000 + "└─ 5000.000 k"


@pytest.mark.parametrize("args", [["-i", "s4999"], ["-e", "s4990$"], ["-t", "5"], ["--output", "csv"],
                                  ["--output", "json"], ["--print-sorted"], ["-m", "time/%,avg_time/us"]])
def test_every_view_of_a_5000_level_tree_works(deep_files, args):
    code, out, err = run_view("-d", "10000", *args, deep_files / "deep.hatchet_msgpack")
    assert (code, err) == (0, ""), err
    assert len(out) > 5000


def test_a_diff_of_two_5000_level_trees_works(deep_files):
    code, out, err = run_view("-d", "10000", "-m", "time/ns", "-diff", deep_files / "deep.hatchet",
                              deep_files / "deep.hatchet_msgpack")
    assert (code, err) == (0, "")
    assert out.split("\n")[-3] == "   " * 5000 + "└─ 0.000 k  (+0.0%)"


# ------------------------------------------------------------ bounded work

def wide_tree(n: int, sorted_children: bool = True):
    names = [f"k{i:06d}" for i in range(n)]
    kids = [{"frame": {"name": name, "type": "function"}, "metrics": {"m": 1}, "children": []}
            for name in (names if sorted_children else names[::-1])]
    tree = from_document([{"frame": {"name": "ROOT", "type": "function"}, "metrics": {"m": 0}, "children": kids}])
    return tree, [Column("m", np.arange(len(tree), dtype=float))]


@pytest.mark.parametrize("sorted_children", [True, False])
def test_max_nodes_cuts_the_tree_and_says_how_many_were_left_out(sorted_children):
    tree, columns = wide_tree(10, sorted_children)
    text = tree_text(tree, columns, RenderOptions(demangle=False, max_nodes=4))
    lines = text.split("\n")
    assert lines[:4] == ["0.000 ROOT", f"├─ {1 if sorted_children else 10}.000 k000000",
                         f"├─ {2 if sorted_children else 9}.000 k000001", f"├─ {3 if sorted_children else 8}.000 k000002"]
    assert lines[4] == "[7 more nodes not shown: --max-nodes 4 reached; --max-nodes 0 shows all, -d, -i, -e or -t fewer]"
    assert lines[5:] == ["", ""]
    whole = tree_text(tree, columns, RenderOptions(demangle=False, max_nodes=None))
    assert len(whole.split("\n")) == 11 + 2 and "not shown" not in whole


def test_max_nodes_counts_only_what_depth_would_show():
    tree, columns = wide_tree(10)
    text = tree_text(tree, columns, RenderOptions(demangle=False, max_nodes=1, depth=1))
    assert text == "0.000 ROOT\n\n"


def test_the_cli_cuts_at_100000_nodes_by_default_and_max_nodes_0_shows_all(tmp_path):
    path = tmp_path / "wide.hatchet_msgpack"
    kids = [{"frame": {"name": f"k{i:06d}"}, "metrics": {"time (ns)": 1}, "children": []} for i in range(100_005)]
    path.write_bytes(packb([{"frame": {"name": "ROOT"}, "metrics": {"time (ns)": 0}, "children": kids}]))
    _, out, _ = run_view(path)
    lines = out.split("\n")
    assert len(lines) == 100_000 + 3 and lines[-3].startswith("[6 more nodes not shown: --max-nodes 100000")
    _, out, _ = run_view("--max-nodes", "0", "--print-sorted", path)
    assert "not shown" not in out and len(out.split("\n")) == 100_006 + 1 + 1 + 100_005 + 1
    _, out, _ = run_view("--max-nodes", "3", "--print-sorted", path)
    assert out.endswith("[100,002 more nodes not shown: --max-nodes 3 reached; --max-nodes 0 shows all, "
                        "-d, -i, -e or -t fewer]\n")
    with pytest.raises(SystemExit) as exit_info:  # argparse: usage and exit 2
        run_view("--max-nodes", "-1", path)
    assert exit_info.value.code == 2


def test_the_tree_is_written_in_chunks_and_only_the_shown_rows_are_formatted(monkeypatch):
    tree, columns = wide_tree(1000)
    formatted = []
    real_format_rows = render.format_rows
    monkeypatch.setattr(render, "format_rows", lambda values, **kw: formatted.append(len(values[0]))
                        or real_format_rows(values, **kw))
    monkeypatch.setattr(render, "CHUNK_NODES", 7)
    writes = []

    class Out(io.StringIO):
        def write(self, text):
            writes.append(text)
            return super().write(text)

    out = Out()
    write_tree(out, tree, columns, RenderOptions(demangle=False, max_nodes=20))
    assert formatted == [7, 7, 6]  # 20 rows of 1,001, in chunks of 7
    assert len(writes) == 3 + 2  # the chunks, the left-out line, the empty line
    assert out.getvalue() == tree_text(tree, columns, RenderOptions(demangle=False, max_nodes=20))


@pytest.mark.parametrize("side", [False, True])
def test_json_written_node_by_node_is_what_json_dumps_writes_for_the_whole(monkeypatch, side):
    tree, columns = wide_tree(20)
    columns.append(Column("evil\x1b", np.full(len(tree), np.nan)))
    sides = np.array([0, 1, 2] * 7, dtype=np.int8) if side else None
    monkeypatch.setattr(render, "CHUNK_NODES", 6)
    text = render.json_text(tree, columns, RenderOptions(demangle=False), sides)
    whole = json.loads(text)
    assert text == json.dumps(whole, indent=1) + "\n"
    assert len(whole["nodes"]) == 21 and whole["nodes"][20]["values"] == {"m": 20.0, "evil\x1b": None}
    empty = render.json_text(tree, columns, RenderOptions(demangle=False, depth=0))
    assert empty == json.dumps({"metrics": ["m", "evil\x1b"], "nodes": []}, indent=1) + "\n"
