"""lepton-view as users run it: the console script and `python -m lepton.viewer`, in a subprocess."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "tests" / "data" / "proton_examples"
FIXTURES = ROOT / "tests" / "data" / "proton_3_6"

COMMANDS = {
    "python -m lepton.viewer": [sys.executable, "-m", "lepton.viewer"],
    "lepton-view": [shutil.which("lepton-view") or "lepton-view"],
}


@pytest.fixture(params=list(COMMANDS))
def command(request):
    if request.param == "lepton-view" and shutil.which("lepton-view") is None:
        pytest.skip("the lepton-view console script is not installed (pip install -e .)")
    return COMMANDS[request.param]


def view(command, *args, **kwargs) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(ROOT / "src"))
    env.pop("NO_COLOR", None)
    return subprocess.run([*command, *map(str, args)], capture_output=True, text=True, env=env, timeout=60,
                          check=False, **kwargs)


def test_prints_the_tree_as_proton_viewer(command):
    result = view(command, "-m", "time/ns,time/%", EXAMPLES / "cuda.json")
    assert (result.returncode, result.stderr) == (0, "")
    assert result.stdout == ("614400.000 100.000 ROOT\n├─ 204800.000 33.333 foo0\n"
                             "├─ 204800.000 33.333 foo1\n└─ 204800.000 33.333 foo2\n\n")


def test_real_proton_profiles_list_their_metrics(command):
    result = view(command, "-l", FIXTURES / "threads.hatchet")
    assert result.returncode == 0
    assert result.stdout == ("Available inclusive metrics:\n- count\n- time\n"
                             "Available exclusive metrics:\n- name\n- device_id\n- device_type\n")


def test_piped_output_has_no_colour_unless_asked(command):
    plain = view(command, "-m", "time/ns", EXAMPLES / "triton.json")
    assert "\033[" not in plain.stdout
    forced = view(command, "--color", "-m", "time/ns", EXAMPLES / "triton.json")
    assert "\033[38;5;" in forced.stdout
    assert view(command, "--no-color", "-m", "time/ns", EXAMPLES / "triton.json").stdout == plain.stdout


def test_json_output_is_machine_readable(command):
    result = view(command, "-m", "time/ns,util", "--output", "json", EXAMPLES / "cuda.json")
    document = json.loads(result.stdout)
    assert document["metrics"] == ["time/ns (inc)", "util"]
    root = document["nodes"][0]
    assert (root["name"], root["values"]["util"]) == ("ROOT", None)


def write(tmp_path, name, content: bytes) -> Path:
    path = tmp_path / name
    path.write_bytes(content)
    return path


def bad_inputs(tmp_path):
    full = (EXAMPLES / "cuda.json").read_bytes()
    return {
        "missing file": ([tmp_path / "missing.hatchet"], "cannot read"),
        "not a profile": ([write(tmp_path, "notes.txt", b"these are my notes\n")], "not a profile"),
        "json that is not a profile": ([write(tmp_path, "t.json", b'{"traceEvents": []}')], "Chrome trace"),
        "truncated file": ([write(tmp_path, "cut.hatchet", full[: len(full) // 2])], "truncated"),
        "unknown metric": (["-m", "tflop16/s", EXAMPLES / "cuda.json"], "unknown metric 'flops16'; this profile has: count, time, flops8, bytes"),
        "unknown metric name": (["-m", "nope", EXAMPLES / "cuda.json"], "unknown metric 'nope'"),
        "bad regex": (["-m", "time/ns", "-i", "(", EXAMPLES / "cuda.json"], "invalid regular expression"),
        "include and exclude": (["-i", "a", "-e", "b", EXAMPLES / "cuda.json"], "cannot use --include and --exclude"),
        "bad diff file": (["-m", "time/ns", "-diff", tmp_path / "nope", EXAMPLES / "cuda.json"], "cannot read"),
    }


@pytest.mark.parametrize("case", ["missing file", "not a profile", "json that is not a profile", "truncated file",
                                  "unknown metric", "unknown metric name", "bad regex", "include and exclude",
                                  "bad diff file"])
def test_bad_input_gets_one_line_saying_what_is_wrong_and_exit_code_2(command, tmp_path, case):
    args, message = bad_inputs(tmp_path)[case]
    result = view(command, *args)
    assert result.returncode == 2
    assert result.stdout == ""
    assert len(result.stderr.splitlines()) == 1, result.stderr
    assert result.stderr.startswith("lepton-view: error: ")
    assert message in result.stderr


def test_a_bad_command_line_is_an_argparse_error_with_exit_code_2(command):
    result = view(command, "--depth", "many", EXAMPLES / "cuda.json")
    assert result.returncode == 2
    assert "invalid int value" in result.stderr


def test_help_mentions_every_proton_viewer_option(command):
    result = view(command, "-h")
    assert result.returncode == 0
    for option in ("-l", "-m", "-i", "-e", "-t", "-d", "-f", "--print-sorted", "-diff", "--no-color", "--mangled",
                   "--output"):
        assert option in result.stdout


def test_a_reader_that_stops_early_is_not_an_error(command, tmp_path):
    """`lepton-view big.hatchet | head -1`: no BrokenPipeError traceback."""
    document = json.loads((EXAMPLES / "cuda.json").read_text())
    document[0]["children"] = [dict(document[0]["children"][0], frame={"name": f"k{i}", "type": "function"})
                               for i in range(20000)]
    path = write(tmp_path, "big.hatchet", json.dumps(document).encode())
    env = dict(os.environ, PYTHONPATH=str(ROOT / "src"))
    process = subprocess.Popen([*command, "-m", "time/ns", str(path)], stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, env=env)
    first = process.stdout.readline()
    process.stdout.close()
    stderr = process.stderr.read()
    assert process.wait(timeout=60) == 0
    assert first == b"4096000000.000 ROOT\n"
    assert b"Traceback" not in stderr


def test_lines_lists_each_sampled_kernels_hottest_lines(tmp_path):
    """On Proton's own pcsampling profile (`-i` picks kernels by their call path)."""
    out = subprocess.run([sys.executable, "-m", "lepton.viewer", "--lines", "2", "-i", "work",
                          str(ROOT / "tests" / "data" / "proton_3_6" / "pcsampling_lines.hatchet")],
                         capture_output=True, text=True, timeout=60, env={**os.environ, "PYTHONPATH": str(ROOT / "src")},
                         check=False)
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert lines[0] == "step/work  (293730 samples)"
    assert lines[1].split() == ["78.5%", "/home/user/bench/in_kernel_workload.py:34@work"]
    assert lines[2].strip().startswith("stalls: selected 62%, long_scoreboard 28%")
    assert "vectorized_elementwise" not in out.stdout
