"""viewer.demangle: Itanium C++ names as GNU c++filt prints them, and shortening to a width."""
from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from lepton.viewer.demangle import ELLIPSIS, demangle, shorten

DATA = Path(__file__).resolve().parents[2] / "tests" / "data" / "viewer"


def read_cases() -> list[tuple[str, str]]:
    lines = (DATA / "demangle_cases.tsv").read_text().splitlines()
    return [tuple(line.split("\t")) for line in lines if line and not line.startswith("#")]


CASES = read_cases()
UNSUPPORTED = [line for line in (DATA / "demangle_unsupported.txt").read_text().splitlines()
               if line and not line.startswith("#")]

MUL_KERNEL = ("_ZN2at6native29vectorized_elementwise_kernelILi4ENS0_13AUnaryFunctorIfffNS0_15binary_internal"
              "10MulFunctorIfEEEESt5arrayIPcLm2EEEEviT0_T1_")


def test_the_torch_kernel_in_the_proton_fixtures():
    assert demangle(MUL_KERNEL) == (
        "void at::native::vectorized_elementwise_kernel<4, at::native::AUnaryFunctor<float, float, float, "
        "at::native::binary_internal::MulFunctor<float> >, std::array<char*, 2ul> >(int, "
        "at::native::AUnaryFunctor<float, float, float, at::native::binary_internal::MulFunctor<float> >, "
        "std::array<char*, 2ul>)")


def test_template_parameters_resolve_where_they_are_printed_as_cxxfilt_does():
    """In this ROCm kernel a substitution (SK_) names a template parameter (T2_) of a function
    nested in a template argument; c++filt prints it, at the end, as the outer function's T2_."""
    name = ("_ZN2at6native12_GLOBAL__N_143distribution_elementwise_grid_stride_kernelIfLi4EZNS0_9templates4cuda"
            "20normal_and_transformIN3c104HalfEfLm4EPNS_17CUDAGeneratorImplEZZZNS4_13normal_kernelIS9_EEvRKNS_10"
            "TensorBaseEddT_ENKUlvE_clEvENKUlvE1_clEvEUlfE_EEvRNS_18TensorIteratorBaseET2_T3_EUlP25hiprandState"
            "Philox4_32_10E0_ZNS1_27distribution_nullary_kernelIS7_fLi4ES9_SO_SH_EEvSJ_SK_RKSL_T4_EUlifE_EEviNS_"
            "15PhiloxCudaStateET1_SK_")
    text = demangle(name)
    assert text.startswith("void at::native::(anonymous namespace)::distribution_elementwise_grid_stride_kernel<"
                           "float, 4, at::native::templates::cuda::normal_and_transform<c10::Half, float, 4ul, ")
    assert text.endswith("::{lambda(float)#1})::{lambda(int, float)#1})")
    assert dict(CASES)[name] == text


@pytest.mark.parametrize("mangled, expected", CASES, ids=[m[:60] for m, _ in CASES])
def test_matches_cxxfilt(mangled, expected):
    assert demangle(mangled) == expected


def test_the_case_list_is_substantial():
    assert len(CASES) > 400


@pytest.mark.parametrize("name", ["add_kernel", "ROOT", "_attn_fwd", "/home/u/f.py:3@g", "__proton_launch_metadata",
                                  "_Z", "_Zfoo", "_ZN3fooE3ba", "_Z3fooPT_", "_ZN1aIiE", "_ZNK", *UNSUPPORTED])
def test_names_it_cannot_read_come_back_unchanged(name):
    assert demangle(name) == name


@pytest.mark.skipif(shutil.which("c++filt") is None, reason="c++filt (binutils) is not installed")
def test_matches_the_installed_cxxfilt_too():
    names = [m for m, _ in CASES]
    out = subprocess.run(["c++filt"], input="\n".join(names) + "\n", capture_output=True, text=True, check=True)
    assert [demangle(n) for n in names] == out.stdout.splitlines()


def test_shorten_leaves_names_that_fit():
    assert shorten("add_kernel", 40) == "add_kernel"


def test_shorten_collapses_the_innermost_brackets_first():
    name = demangle(MUL_KERNEL)
    assert shorten(name, 150) == ("void at::native::vectorized_elementwise_kernel<4, at::native::AUnaryFunctor<…>, "
                                  "std::array<…> >(int, at::native::AUnaryFunctor<…>, std::array<…>)")
    assert shorten(name, 100) == "void at::native::vectorized_elementwise_kernel<4, at::native::AUnaryFunctor<…>, std::array<…> >(…)"
    assert shorten(name, 60) == "void at::native::vectorized_elementwise_kernel<…>(…)"


def test_shorten_cuts_the_middle_when_brackets_are_not_enough():
    text = shorten(demangle(MUL_KERNEL), 30)
    assert len(text) == 30 and ELLIPSIS in text
    assert text.startswith("void at::native::")
    assert text.endswith("(…)")


def test_shorten_handles_unbalanced_brackets_by_cutting_the_middle():
    name = "operator<" + "x" * 50
    text = shorten(name, 20)
    assert len(text) == 20 and text.startswith("operator<")
