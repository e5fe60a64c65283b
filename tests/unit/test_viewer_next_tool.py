"""lepton-view --ncu: the Nsight Compute / rocprof-compute command for one kernel, from the command
line the profile records; and that recording it keeps the file readable as Proton's."""
from __future__ import annotations

import copy
import io
import json
import sys
from pathlib import Path

import pytest

import lepton as proton
from lepton.cli.view import main as view_main
from lepton.viewer import read
from lepton.viewer.load import load, load_bytes

DATA = Path(__file__).resolve().parents[2] / "tests" / "data" / "viewer"
MATMUL_BIAS = DATA / "matmul_bias.hatchet"
SECTIONS = ("--section SpeedOfLight --section LaunchStats --section Occupancy --section ComputeWorkloadAnalysis "
            "--section MemoryWorkloadAnalysis --section SchedulerStats --section WarpStateStats")


def view(*args) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = view_main([str(a) for a in args], stdout=out, stderr=err)
    return code, out.getvalue(), err.getvalue()


def test_the_matmul_bias_fixture_gives_the_ncu_command_for_its_slowest_triton_kernel():
    code, out, err = view("--ncu", "matmul", MATMUL_BIAS)
    assert code == 0
    assert out == ("cd /work/seed && ncu --kernel-name 'regex:^matmul_kernel_bias$' --launch-skip 199 "
                   f"--launch-count 1 {SECTIONS} -- /usr/bin/python3 matmul_bias.py --sizes 1024,8192\n")
    assert err.count("\n") == 1 and "200 launch(es)" in err and "1 other matching kernel" in err


def test_a_cxx_kernel_is_named_exactly_by_its_mangled_name():
    code, out, _ = view("--ncu", "distribution_elementwise", MATMUL_BIAS)
    assert code == 0
    assert "ncu --kernel-name-base mangled --kernel-name 'regex:^_ZN2at6native12_GLOBAL__N_143distribution" in out
    assert "--launch-skip 11 --launch-count 1" in out


def test_an_amd_profile_gives_the_rocprof_compute_command(tmp_path):
    document = json.loads(MATMUL_BIAS.read_text())
    text = json.dumps(document).replace('"CUDA"', '"HIP"').replace('"arch": "90"', '"arch": "gfx942"')
    (tmp_path / "amd.hatchet").write_text(text)
    code, out, err = view("--ncu", "add_bias", tmp_path / "amd.hatchet")
    assert code == 0
    assert out == ("cd /work/seed && rocprof-compute profile --name add_bias_kernel --kernel add_bias_kernel -- "
                   "/usr/bin/python3 matmul_bias.py --sizes 1024,8192\n")
    assert "every dispatch" in err


def test_a_profile_without_a_command_line_gets_a_placeholder_and_exit_2(tmp_path):
    document = json.loads(MATMUL_BIAS.read_text())
    del document[0]["lepton"]
    (tmp_path / "proton.hatchet").write_text(json.dumps(document))
    code, out, err = view("--ncu", "add_bias", tmp_path / "proton.hatchet")
    assert code == 2 and out.endswith("-- <the program and its arguments>\n") and "records no command line" in err


def test_no_matching_kernel_is_one_line_and_exit_2():
    code, out, err = view("--ncu", "no_such_kernel", MATMUL_BIAS)
    assert (code, out) == (2, "") and err.count("\n") == 1 and "matmul_kernel" in err


def test_the_python_api_records_this_process_s_command_line(fake, tmp_path):
    proton.start(str(tmp_path / "api"), backend="fake")
    with proton.scope("s"):
        fake().launch("k", 10)
    proton.finalize()
    root = json.loads((tmp_path / "api.hatchet").read_text())[0]
    assert root["lepton"]["command_line"] == [sys.executable, *sys.orig_argv[1:]]
    assert list(root) == ["children", "frame", "lepton", "metrics"]  # keys sorted, as Proton writes them


def test_the_recorded_command_line_leaves_what_proton_s_readers_see_unchanged(tmp_path):
    """The run's key sits beside frame/metrics/children of ROOT, which hatchet's literal reader
    (and ours) skip: the tree, the metrics, the device block and lepton-view's output are those of
    the same file without it."""
    with_key = json.loads(MATMUL_BIAS.read_text())
    without = copy.deepcopy(with_key)
    del without[0]["lepton"]
    (tmp_path / "without.hatchet").write_text(json.dumps(without))
    a, b = load(MATMUL_BIAS), load(tmp_path / "without.hatchet")
    assert a.names == b.names and a.key_order == b.key_order and a.devices == b.devices
    assert a.run["command_line"][1] == "matmul_bias.py" and b.run == {}
    args = ("-m", "time/ms,tflop16/s,util", "--print-sorted")
    assert view(*args, MATMUL_BIAS)[1] == view(*args, tmp_path / "without.hatchet")[1]
    frame, _, _, devices = read(MATMUL_BIAS)
    assert "lepton" not in frame.dataframe.columns and devices == with_key[1]


def test_msgpack_files_carry_it_too_and_read_back(fake, tmp_path):
    proton.start(str(tmp_path / "mp"), backend="fake")
    with proton.scope("s"):
        fake().launch("k", 10)
    (path,) = proton.finalize(output_format="hatchet_msgpack")
    tree = load_bytes(Path(path).read_bytes(), path)
    assert tree.run["command_line"][0] == sys.executable and "k" in tree.names


@pytest.mark.parametrize("pattern", ["[", "("])
def test_a_bad_pattern_is_one_line(pattern):
    code, _, err = view("--ncu", pattern, MATMUL_BIAS)
    assert code == 2 and err.count("\n") == 1
