"""viewer.demangle: Itanium C++ names through libstdc++'s __cxa_demangle, the raw name otherwise."""
from __future__ import annotations

import importlib
import shutil
import subprocess
from pathlib import Path

import pytest

from lepton.viewer.demangle import demangle

# The module itself: lepton.viewer's `demangle` attribute is the function it re-exports.
demangle_module = importlib.import_module("lepton.viewer.demangle")

DATA = Path(__file__).resolve().parents[2] / "tests" / "data" / "viewer"


def read_tsv(name: str) -> list[tuple[str, str]]:
    lines = (DATA / name).read_text().splitlines()
    return [tuple(line.split("\t")) for line in lines if line and not line.startswith("#")]


CXXFILT = read_tsv("demangle_cases.tsv")  # what GNU c++filt prints
# The names libstdc++ spells otherwise than c++filt, with libstdc++'s spelling: that is what we show.
LIBSTDCXX = dict(read_tsv("demangle_libstdcxx.tsv"))
# c++filt writes out the templates that libstdc++ names by the standard abbreviations Ss, So, Si.
ABBREVIATIONS = {
    "std::string": "std::basic_string<char, std::char_traits<char>, std::allocator<char> >",
    "std::ostream": "std::basic_ostream<char, std::char_traits<char> >",
    "std::istream": "std::basic_istream<char, std::char_traits<char> >",
}

MUL_KERNEL = ("_ZN2at6native29vectorized_elementwise_kernelILi4ENS0_13AUnaryFunctorIfffNS0_15binary_internal"
              "10MulFunctorIfEEEESt5arrayIPcLm2EEEEviT0_T1_")


def test_the_torch_kernel_in_the_proton_fixtures():
    assert demangle(MUL_KERNEL) == (
        "void at::native::vectorized_elementwise_kernel<4, at::native::AUnaryFunctor<float, float, float, "
        "at::native::binary_internal::MulFunctor<float> >, std::array<char*, 2ul> >(int, "
        "at::native::AUnaryFunctor<float, float, float, at::native::binary_internal::MulFunctor<float> >, "
        "std::array<char*, 2ul>)")


@pytest.mark.parametrize("mangled, cxxfilt", CXXFILT, ids=[m[:60] for m, _ in CXXFILT])
def test_matches_cxxfilt_but_for_libstdcxx_spellings(mangled, cxxfilt):
    assert demangle(mangled) == LIBSTDCXX.get(mangled, cxxfilt)


def test_the_case_list_is_substantial_and_nearly_all_agree_with_cxxfilt():
    assert len(CXXFILT) > 400
    assert set(LIBSTDCXX) < {mangled for mangled, _ in CXXFILT} and len(LIBSTDCXX) == 12


@pytest.mark.parametrize("mangled", [m for m in LIBSTDCXX if "decltype" not in LIBSTDCXX[m]])
def test_the_abbreviations_are_the_one_difference_in_the_names_of_the_standard_library(mangled):
    text = LIBSTDCXX[mangled]
    for short, long in ABBREVIATIONS.items():
        text = text.replace(short, long)
    assert text == dict(CXXFILT)[mangled]


@pytest.mark.parametrize("name", ["add_kernel", "ROOT", "_attn_fwd", "/home/u/f.py:3@g", "__proton_launch_metadata",
                                  "f", "i"])  # "f" and "i" alone are type codes libstdc++ would print
def test_names_that_are_not_mangled_come_back_unchanged(name):
    assert demangle(name) == name


@pytest.mark.parametrize("name", ["_Z", "_Zfoo", "_ZN3fooE3ba", "_Z3fooPT_", "_ZN1aIiE", "_ZNK", "_Z3fooé"])
def test_names_libstdcxx_refuses_come_back_unchanged(name):
    assert demangle(name) == name


@pytest.fixture
def fresh_caches():
    demangle.cache_clear()
    demangle_module._demangler.cache_clear()
    yield
    demangle.cache_clear()
    demangle_module._demangler.cache_clear()


def test_without_libstdcxx_names_come_back_unchanged(monkeypatch, fresh_caches):
    monkeypatch.setattr(demangle_module, "_libraries", lambda: iter(["/nonexistent/libstdc++.so.6", "libm.so.6"]))
    assert demangle(MUL_KERNEL) == MUL_KERNEL


def test_libstdcxx_is_found_by_its_file_name_past_a_library_without_it(monkeypatch, fresh_caches):
    monkeypatch.setattr(demangle_module, "_libraries", lambda: iter(["libm.so.6", "libstdc++.so.6"]))
    assert demangle(MUL_KERNEL).startswith("void at::native::vectorized_elementwise_kernel<4, ")


@pytest.mark.skipif(shutil.which("c++filt") is None, reason="c++filt (binutils) is not installed")
def test_matches_the_installed_cxxfilt_too():
    names = [m for m, _ in CXXFILT if m not in LIBSTDCXX]
    out = subprocess.run(["c++filt"], input="\n".join(names) + "\n", capture_output=True, text=True, check=True)
    assert [demangle(n) for n in names] == out.stdout.splitlines()
