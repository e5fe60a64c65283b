"""What `lepton-view FILE` shows with no option, on Lepton's and Proton's files of each kind: the
metric the profile is about, "-" for a node without a value, demangled names everywhere (the tree,
--lines, --sass) and --print-sorted rows told apart by their path."""
from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from lepton.cli.view import main

DATA = Path(__file__).resolve().parents[1] / "data"
LEPTON = DATA / "viewer"
PROTON = DATA / "proton_3_6"


def run_view(*argv) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = main([str(a) for a in argv], stdout=out, stderr=err)
    return code, out.getvalue(), err.getvalue()


DEFAULTS = {
    # A CPU profile (`lepton examples/hello.py` without a GPU): cpu_time, which ROOT has none of.
    LEPTON / "lepton_cpu.hatchet": """\
- ROOT
├─ 12.833 setup
└─ 3.311 step
""",
    # Instruction sampling: samples, summed up the tree; a line node has samples and no time.
    LEPTON / "lepton_pcsampling.hatchet": """\
1140.000 ROOT
├─ 936.000 step
│  ├─ 120.000 at::native::vectorized_elementwise_kernel<…>
│  └─ 816.000 matmul_kernel
│     ├─ 496.000 /home/user/kernels/matmul.py:41@matmul_kernel
│     ├─ 272.000 /home/user/kernels/matmul.py:44@matmul_kernel
│     └─ 48.000 /home/user/kernels/matmul.py:47@matmul_kernel
└─ 204.000 warmup
   └─ 204.000 matmul_kernel
      ├─ 124.000 /home/user/kernels/matmul.py:41@matmul_kernel
      ├─ 68.000 /home/user/kernels/matmul.py:44@matmul_kernel
      └─ 12.000 /home/user/kernels/matmul.py:47@matmul_kernel
""",
    PROTON / "pcsampling.hatchet": """\
101.000 ROOT
└─ 101.000 sampled
   └─ 101.000 add_kernel
""",
    # Instrumentation: cycles, per scope (Proton's ROOT holds none, so nothing is summed).
    LEPTON / "lepton_instrumentation.hatchet": """\
- ROOT
└─ - instr
   └─ - ikernel
      ├─ 2903.000 load
      └─ 5812.000 store
""",
    PROTON / "instrumentation.hatchet": """\
- ROOT
└─ - instr
   └─ - ikernel
      ├─ 3013.000 load
      └─ 12159.000 store
""",
    # Kernels: time/ms, as before.
    PROTON / "hook.hatchet": """\
0.003 ROOT
└─ 0.003 hooked
   └─ 0.003 add_4096
""",
}


@pytest.mark.parametrize("path", DEFAULTS, ids=lambda p: p.name)
def test_without_m_the_profile_shows_the_metric_it_is_about(path):
    assert run_view(path) == (0, DEFAULTS[path] + "\n", "")


def test_a_pcsampling_profile_with_lines_shows_samples_not_a_time_it_lacks():
    _, out, _ = run_view(PROTON / "pcsampling_lines.hatchet")
    assert out.splitlines()[:3] == ["843598.000 ROOT",
                                     "├─ 14143.000 at::native::vectorized_elementwise_kernel<…>",
                                     "├─ 821830.000 step"]
    assert "│     ├─ 1781.000 /home/user/bench/in_kernel_workload.py:25@work" in out.splitlines()
    assert "nan" not in out and " - " not in out


def test_a_profile_with_none_of_the_default_metrics_asks_for_m_in_one_line(tmp_path):
    path = tmp_path / "flops.hatchet"
    kernel = {"frame": {"name": "k"}, "metrics": {"flops16": 5}, "children": []}
    root = {"frame": {"name": "ROOT"}, "metrics": {"flops16": 0}, "children": [kernel]}
    path.write_text(json.dumps([root, {}]))
    code, out, err = run_view(path)
    assert (code, out) == (2, "")
    assert err.startswith("lepton-view: error: no -m given, and the profile has none of time, cpu_time, "
                          "num_samples or cycles to show by default: pick a metric with -m; "
                          "this profile has: flops16")
    assert err.count("\n") == 1


def test_a_metric_only_roots_zeros_hold_is_passed_over(tmp_path):
    """Proton's writer puts num_samples: 0 on ROOT of any profile with sampling counters."""
    path = tmp_path / "zeros.hatchet"
    kernel = {"frame": {"name": "k"}, "metrics": {"time (ns)": 2e6}, "children": []}
    root = {"frame": {"name": "ROOT"}, "metrics": {"num_samples": 0, "time (ns)": 0}, "children": [kernel]}
    path.write_text(json.dumps([root, {}]))
    assert run_view(path)[1] == "2.000 ROOT\n└─ 2.000 k\n\n"


def test_the_lines_header_names_kernels_as_the_tree_does():
    _, out, _ = run_view("--lines", "1", LEPTON / "lepton_pcsampling.hatchet")
    headers = [line for line in out.splitlines() if "samples)" in line]
    assert headers == ["step/matmul_kernel  (816 samples)", "warmup/matmul_kernel  (204 samples)",
                       "step/at::native::vectorized_elementwise_kernel<…>  (120 samples)"]
    _, mangled, _ = run_view("--lines", "1", "--mangled", PROTON / "pcsampling_lines.hatchet")
    _, full, _ = run_view("--lines", "1", "--full-names", PROTON / "pcsampling_lines.hatchet")
    assert mangled.splitlines()[0] == ("step/_ZN2at6native29vectorized_elementwise_kernelILi4ENS0_21"
                                       "CUDAFunctorOnSelf_addIfEESt5arrayIPcLm2EEEEviT0_T1_"
                                       "  (528100 samples)")
    assert full.splitlines()[0].startswith("step/void at::native::vectorized_elementwise_kernel<4, "
                                           "at::native::CUDAFunctorOnSelf_add<float>")


def test_lines_i_matches_the_demangled_path_too():
    _, out, _ = run_view("--lines", "1", "-i", "elementwise_kernel<", LEPTON / "lepton_pcsampling.hatchet")
    assert out.splitlines() == ["step/at::native::vectorized_elementwise_kernel<…>  (120 samples)"]


def test_the_sass_header_names_kernels_as_the_tree_does():
    # "<" is in the demangled name only
    code, out, _ = run_view("--sass", "elementwise_kernel<", LEPTON / "lepton_pcsampling.hatchet")
    assert code == 0
    assert out.splitlines() == [
        "at::native::vectorized_elementwise_kernel<…>  (120 samples in its 1 hottest instructions)",
        "  100.0%  /*0080*/  STG.E desc[UR4][R2.64], R5"]
    _, mangled, _ = run_view("--sass", "Fill", "--mangled", LEPTON / "lepton_pcsampling.hatchet")
    assert mangled.startswith("_ZN2at6native29vectorized_elementwise_kernelILi4ENS0_11FillFunctorIfEE")


def test_print_sorted_tells_repeated_names_apart_by_their_path():
    _, out, _ = run_view("--print-sorted", "-d", "1", LEPTON / "matmul_bias.hatchet")
    rows = [line.split()[0] for line in out.split("\n\n")[1].splitlines()[1:]]
    cublas = "sm90_xmma_gemm_f16f16_f16f32_f32_tn_n_tilesize128x128x64_warp…e_segment_k_off_kernel__5x_cublas"
    assert rows == ["bench", "unfused", "unfused/8192", "fused", "torch", "fused/8192",
                    "8192/matmul_kernel_bias", "torch/8192", f"8192/{cublas}", "8192/matmul_kernel", "8192/add_bias_kernel", "setup",
                    "at::native::distribution_elementwise_grid_stride_kernel<…>", "unfused/1024",
                    "at::native::vectorized_elementwise_kernel<…>", "fused/1024", "1024/matmul_kernel_bias",
                    "1024/matmul_kernel", "torch/1024", f"1024/{cublas}", "1024/add_bias_kernel"]
    assert len(set(rows)) == len(rows)


def test_print_sorted_shows_the_frame_that_tells_rows_apart_and_elides_the_rest():
    _, out, _ = run_view("--print-sorted", "-d", "1", LEPTON / "lepton_pcsampling.hatchet")
    rows = [line.rsplit(None, 1)[0] for line in out.split("\n\n")[1].splitlines()[1:]]
    assert rows[:4] == ["step", "step/matmul_kernel", "step/…//home/user/kernels/matmul.py:41@matmul_kernel",
                        "step/…//home/user/kernels/matmul.py:44@matmul_kernel"]
