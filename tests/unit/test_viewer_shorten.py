"""viewer.shorten: a demangled name fitted to a width, inner brackets first, then the middle cut."""
from __future__ import annotations

from lepton.viewer.shorten import ELLIPSIS, shorten

MUL_KERNEL = (  # demangled
    "void at::native::vectorized_elementwise_kernel<4, at::native::AUnaryFunctor<float, float, float, "
    "at::native::binary_internal::MulFunctor<float> >, std::array<char*, 2ul> >(int, "
    "at::native::AUnaryFunctor<float, float, float, at::native::binary_internal::MulFunctor<float> >, "
    "std::array<char*, 2ul>)")


def test_shorten_leaves_names_that_fit():
    assert shorten("add_kernel", 40) == "add_kernel"


def test_shorten_collapses_the_innermost_brackets_first():
    name = MUL_KERNEL
    assert shorten(name, 150) == ("void at::native::vectorized_elementwise_kernel<4, at::native::AUnaryFunctor<…>, "
                                  "std::array<…> >(int, at::native::AUnaryFunctor<…>, std::array<…>)")
    assert shorten(name, 100) == "void at::native::vectorized_elementwise_kernel<4, at::native::AUnaryFunctor<…>, std::array<…> >(…)"
    assert shorten(name, 60) == "void at::native::vectorized_elementwise_kernel<…>(…)"


def test_shorten_cuts_the_middle_when_brackets_are_not_enough():
    text = shorten(MUL_KERNEL, 30)
    assert len(text) == 30 and ELLIPSIS in text
    assert text.startswith("void at::native::")
    assert text.endswith("(…)")


def test_shorten_handles_unbalanced_brackets_by_cutting_the_middle():
    name = "operator<" + "x" * 50
    text = shorten(name, 20)
    assert len(text) == 20 and text.startswith("operator<")
