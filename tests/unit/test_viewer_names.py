"""viewer.names: kernel names demangled and folded, with collisions told apart (golden on the
demangler's corpus, tests/data/viewer/folded_cases.tsv)."""
from __future__ import annotations

from pathlib import Path

import pytest

from lepton.viewer.demangle import demangle
from lepton.viewer.names import MAX_UNFOLDED, fold, readable_names

DATA = Path(__file__).resolve().parents[2] / "tests" / "data" / "viewer"
GOLDEN = [tuple(line.split("\t")) for line in (DATA / "folded_cases.tsv").read_text().splitlines()
          if line and not line.startswith("#")]
NAMES = [mangled for mangled, _ in GOLDEN]
RANDN = next(name for name in NAMES if "distribution_elementwise_grid_stride_kernel" in name)
FILL_LONG = "_ZN2at6native29vectorized_elementwise_kernelILi2ENS0_11FillFunctorIlEESt5arrayIPcLm1EEEEviT0_T1_"
FILL_INT = "_ZN2at6native29vectorized_elementwise_kernelILi4ENS0_11FillFunctorIiEENS_6detail5ArrayIPcLi1EEEEEviT0_T1_"
FOO_C1, FOO_C2 = "_ZN2at6native3FooC1Ev", "_ZN2at6native3FooC2Ev"
needs_demangler = pytest.mark.skipif(demangle(FOO_C1) == FOO_C1, reason="no libstdc++ __cxa_demangle here")


def test_the_golden_file_covers_the_whole_demangler_corpus():
    corpus = [line.split("\t")[0] for line in (DATA / "demangle_cases.tsv").read_text().splitlines()
              if line and not line.startswith("#")]
    assert NAMES == corpus


@needs_demangler
def test_the_corpus_taken_as_one_profile_folds_to_the_golden_names():
    assert readable_names(NAMES) == [shown for _, shown in GOLDEN]


@needs_demangler
def test_every_distinct_symbol_shows_as_a_distinct_name():
    shown = readable_names(NAMES)
    assert len(set(shown)) == len(set(NAMES))


@needs_demangler
def test_the_randn_kernel_is_one_short_line():
    """Several thousand characters demangled; its qualified name folded."""
    assert len(demangle(RANDN)) > 3000
    assert readable_names([RANDN]) == ["at::native::distribution_elementwise_grid_stride_kernel<…>"]


@needs_demangler
def test_alone_a_kernel_folds_all_its_template_arguments():
    assert readable_names([FILL_LONG]) == ["at::native::vectorized_elementwise_kernel<…>"]


@needs_demangler
def test_kernels_that_fold_alike_show_the_first_level_of_arguments_that_differs():
    assert readable_names([FILL_LONG, FILL_INT, "add_kernel"]) == [
        "at::native::vectorized_elementwise_kernel<2, at::native::FillFunctor<…>, std::array<…> >",
        "at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<…>, at::detail::Array<…> >",
        "add_kernel"]


@needs_demangler
def test_twin_symbols_of_one_constructor_are_numbered_in_mangled_order():
    assert readable_names([FOO_C2, FOO_C1]) == ["at::native::Foo::Foo #2", "at::native::Foo::Foo #1"]


@needs_demangler
def test_a_cxx_kernel_folding_onto_a_triton_name_unfolds_and_the_triton_name_stays():
    assert readable_names(["add_kernel", "_Z10add_kernelPfS_S_i"]) == [
        "add_kernel", "add_kernel(float*, float*, float*, int)"]


@needs_demangler
def test_anonymous_namespaces_return_types_and_trailing_const_are_dropped():
    assert fold("void at::native::(anonymous namespace)::anon_kernel<double>(double)") == "at::native::anon_kernel<…>"
    assert fold("at::native::lambdas(int)::{lambda()#2}::operator()() const::{lambda()#1}::operator()() const") == \
        "at::native::lambdas::{lambda()#2}::operator()::{lambda()#1}::operator()"
    assert fold("bool at::native::Foo::operator<(at::native::Foo const&) const") == "at::native::Foo::operator<"


def test_triton_names_scopes_and_unbalanced_names_stay_as_they_are():
    names = ["matmul_kernel", "ROOT", "_attn_fwd_inner", "<captured_at>"]
    assert readable_names(names) == names
    assert fold("a<b(c") == "a<b(c"


@needs_demangler
def test_full_and_mangled_styles():
    assert readable_names([FILL_LONG], "full") == [demangle(FILL_LONG)]
    assert readable_names([FILL_LONG], "mangled") == [FILL_LONG]


@needs_demangler
def test_names_made_equal_by_a_frame_format_stay_one_name():
    assert readable_names([FILL_LONG, FILL_LONG]) == ["at::native::vectorized_elementwise_kernel<…>"] * 2


@needs_demangler
def test_names_that_differ_only_deep_inside_stay_short_and_numbered():
    """Two `std::getline` overloads differ only in template arguments nested three deep: unfolding
    them until they differ gave names of 240 characters (as torch.randn's float and half kernels
    give names of thousands); past MAX_UNFOLDED they keep the folded name, numbered."""
    getlines = [m for m, shown in GOLDEN if shown.startswith("std::getline<…> #")]
    assert len(getlines) == 2 and all(len(demangle(m)) > MAX_UNFOLDED for m in getlines)
    shown = readable_names(getlines)
    assert sorted(shown) == ["std::getline<…> #1", "std::getline<…> #2"]
