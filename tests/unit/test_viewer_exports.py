"""`--output folded` and `--output speedscope`: flame graphs whose widths add up to ROOT's value."""
from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from lepton.cli.view import main

DATA = Path(__file__).resolve().parents[1] / "data"
MATMUL = DATA / "viewer" / "matmul_bias.hatchet"
CPU = DATA / "viewer" / "lepton_cpu.hatchet"
SAMPLED = DATA / "viewer" / "lepton_pcsampling.hatchet"
PROTON_SAMPLED = DATA / "proton_3_6" / "pcsampling_lines.hatchet"
UNITS = {"none", "nanoseconds", "microseconds", "milliseconds", "seconds", "bytes"}
SCHEMA = "https://www.speedscope.app/file-format-schema.json"


def run_view(*argv) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = main([str(a) for a in argv], stdout=out, stderr=err)
    return code, out.getvalue(), err.getvalue()


def folded(*argv) -> dict[tuple[str, ...], float]:
    """`--output folded`'s lines read back: {(frame, ...): value}."""
    code, out, err = run_view("--output", "folded", *argv)
    assert (code, err) == (0, ""), err
    stacks = {}
    for line in out.splitlines():
        stack, _, value = line.rpartition(" ")
        assert stack and tuple(stack.split(";")) not in stacks
        stacks[tuple(stack.split(";"))] = float(value)
    return stacks


def root_value(*argv) -> float:
    _, out, _ = run_view("--output", "json", "-d", "1", *argv)
    values = json.loads(out)["nodes"][0]["values"]
    return next(iter(values.values()))


@pytest.mark.parametrize("args", [
    ["-m", "time/ms", MATMUL],
    ["-m", "count", MATMUL],
    ["-m", "time/ns", "-d", "3", MATMUL],  # what -d hides is its shown ancestor's own width
    ["-m", "time/ms", "-i", "unfused", MATMUL],  # ROOT keeps its unfiltered total, as in the tree
    [SAMPLED],  # num_samples, the default
    ["-m", "num_samples", PROTON_SAMPLED],
], ids=lambda a: " ".join(map(str, a)) if isinstance(a, list) else None)
def test_folded_values_add_up_to_roots_metric(args):
    stacks = folded(*args)
    assert sum(stacks.values()) == pytest.approx(root_value(*args), rel=1e-12)
    assert all(stack[0] == "ROOT" for stack in stacks)


def test_folded_lines_are_each_nodes_own_width_under_its_whole_path():
    stacks = folded("-m", "time/ns", MATMUL)
    assert stacks[("ROOT", "bench", "unfused", "8192", "matmul_kernel")] == 169_155_635
    assert ("ROOT", "bench") not in stacks  # a scope with no time of its own
    assert stacks[("ROOT", "setup", "at::native::vectorized_elementwise_kernel<…>")] == 760_000


def test_a_per_node_metric_is_as_wide_as_its_value_and_a_node_without_one_as_its_children():
    """cpu_time is on the scopes only: ROOT (no value) is as wide as setup and step together."""
    stacks = folded(CPU)  # cpu_time/ms, the default for a CPU profile
    assert stacks == {("ROOT", "setup"): 12.833495, ("ROOT", "step"): 3.31089}


def test_a_frame_holding_a_semicolon_stays_one_frame(tmp_path):
    document = [{"frame": {"name": "ROOT"}, "metrics": {"time (ns)": 0}, "children": [
        {"frame": {"name": "a;b\nc"}, "metrics": {"time (ns)": 5}, "children": []}]}, {}]
    path = tmp_path / "odd.hatchet"
    path.write_text(json.dumps(document))
    assert folded("-m", "time/ns", path) == {("ROOT", "a:b\\nc"): 5.0}


@pytest.mark.parametrize("args, message", [
    (["-m", "tflop16/s", MATMUL], "--output folded draws widths that add up, which 'tflop16/s' does not"),
    (["-m", "avg_time/us", MATMUL], "which 'avg_time/us' does not"),
    (["-m", "time/ms,count", MATMUL], "--output folded holds one metric: give one with -m"),
])
def test_folded_refuses_what_does_not_add_up_in_one_line(args, message):
    code, out, err = run_view("--output", "folded", *args)
    assert (code, out) == (2, "") and err.count("\n") == 1 and message in err


def test_speedscope_has_the_schemas_required_keys_and_one_profile_per_metric():
    code, out, err = run_view("--output", "speedscope", "-m", "time/ms,count,time/ns", MATMUL)
    assert (code, err) == (0, "")
    document = json.loads(out)
    assert document["$schema"] == SCHEMA
    frames = document["shared"]["frames"]
    assert frames and all(isinstance(frame["name"], str) for frame in frames)
    assert len(document["profiles"]) == 3
    for profile in document["profiles"]:
        assert {"type", "name", "unit", "startValue", "endValue", "samples", "weights"} <= set(profile)
        assert profile["type"] == "sampled" and profile["unit"] in UNITS
        assert len(profile["samples"]) == len(profile["weights"]) > 0
        assert all(0 <= i < len(frames) for stack in profile["samples"] for i in stack)
        assert profile["startValue"] == 0 and profile["endValue"] == pytest.approx(sum(profile["weights"]))
    assert [p["unit"] for p in document["profiles"]] == ["milliseconds", "none", "nanoseconds"]
    assert document["profiles"][0]["endValue"] == pytest.approx(root_value("-m", "time/ms", MATMUL))
    assert 0 <= document["activeProfileIndex"] < len(document["profiles"])


def test_speedscope_samples_are_the_folded_stacks():
    _, out, _ = run_view("--output", "speedscope", "-m", "time/ns", MATMUL)
    document = json.loads(out)
    names = [frame["name"] for frame in document["shared"]["frames"]]
    profile = document["profiles"][0]
    stacks = {tuple(names[i] for i in stack): weight
              for stack, weight in zip(profile["samples"], profile["weights"])}
    assert stacks == folded("-m", "time/ns", MATMUL)


def test_speedscope_frames_of_source_lines_name_their_file_and_line():
    _, out, _ = run_view("--output", "speedscope", SAMPLED)
    frames = json.loads(out)["shared"]["frames"]
    line = next(f for f in frames if f["name"].endswith(":41@matmul_kernel"))
    assert line["file"] == "/home/user/kernels/matmul.py" and line["line"] == 41
