"""lepton-view reproduces what the real proton-viewer printed, character for character.

Two sources: the reference's section 3.8 (Proton's test example files, in tests/data/proton_examples)
and tests/data/proton_3_6/viewer_outputs.txt (real Triton 3.6 profiles). Names are shown
--mangled there, as proton-viewer shows them; demangling is our default. One difference is
intended: a node without a value shows "-" where proton-viewer prints "nan".
"""
from __future__ import annotations

import io
import re
from pathlib import Path

import pytest

from lepton.cli.view import main

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "tests" / "data" / "proton_examples"
REFERENCE_CASES = ROOT / "tests" / "data" / "viewer" / "proton_reference_3_8.txt"
FIXTURES = ROOT / "tests" / "data" / "proton_3_6"


def run_view(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = main(list(argv), stdout=out, stderr=err)
    return code, out.getvalue(), err.getvalue()


def parse_cases(text: str) -> list[tuple[str, str]]:
    """`=== <args>` headers, each followed by the exact output; `#` lines before the first are notes."""
    body = "\n".join(line for line in text.split("\n") if not line.startswith("#"))
    parts = re.split(r"^=== (.+)$\n", body, flags=re.MULTILINE)
    return [(parts[i], parts[i + 1]) for i in range(1, len(parts), 2)]


REFERENCE = parse_cases(REFERENCE_CASES.read_text())


def as_lepton_view_prints(proton_output: str) -> str:
    """proton-viewer's output with "-" for its "nan": the one place lepton-view prints otherwise."""
    return re.sub(r"\bnan\b", "-", proton_output)


@pytest.mark.parametrize("args, expected", REFERENCE, ids=[a for a, _ in REFERENCE])
def test_reference_3_8_outputs_are_reproduced_verbatim(args, expected):
    *options, file_name = args.split()
    code, out, err = run_view(*options, "--mangled", str(EXAMPLES / file_name))
    assert (code, err) == (0, "")
    assert out == as_lepton_view_prints(expected)


def test_reference_cases_cover_every_output_of_section_3_8():
    assert len(REFERENCE) == 11  # the 12th, --print-sorted, is only partly given: its own test below


def test_print_sorted_lists_frames_after_the_tree_as_in_section_3_8():
    code, out, _ = run_view("-m", "time/s", "--print-sorted", str(EXAMPLES / "leaf_nodes.json"))
    assert code == 0
    tree, sorted_part = out.split("\n\n", 1)
    assert tree.splitlines()[0] == "0.226 ROOT"
    assert sorted_part.splitlines()[:3] == [
        "Sorted kernels by metric time/s (inc)",
        "kernel_1_1_1" + " " * 94 + "0.1023",
        "kernel_3_1_1" + " " * 94 + "0.09934",
    ]
    # Every other node follows, ROOT (the first row once sorted) left out, as proton-viewer does.
    assert len(sorted_part.splitlines()) == 1 + 12
    assert "ROOT" not in sorted_part


def test_diff_of_profiles_with_equal_times_prints_zeros():
    """Proton prints the numbers alone; lepton-view says which file is which above them and the
    change in percent after each name."""
    hip, cuda = str(EXAMPLES / "hip.json"), str(EXAMPLES / "cuda.json")
    code, out, _ = run_view("-m", "time/ns", "-diff", hip, cuda)
    assert code == 0
    assert out == (f"B − A, with B = {cuda} and A = {hip} (-diff); (%): the change from A\n"
                   "0.000 ROOT  (+0.0%)\n├─ 0.000 foo0  (+0.0%)\n├─ 0.000 foo1  (+0.0%)\n"
                   "└─ 0.000 foo2  (+0.0%)\n\n")


# ------------------------------------------------------------ real Triton 3.6 files

def fixture_cases() -> list[tuple[str, str, str]]:
    text = (FIXTURES / "viewer_outputs.txt").read_text()
    parts = re.split(r"^=== (\S+) (.+)$\n", text, flags=re.MULTILINE)
    return [(parts[i], parts[i + 1], parts[i + 2]) for i in range(1, len(parts), 3)]


FIXTURE_CASES = fixture_cases()


def test_fixture_outputs_file_holds_all_cases():
    assert len(FIXTURE_CASES) == 20


@pytest.mark.parametrize("file_name, args, expected", [c for c in FIXTURE_CASES if "Traceback" not in c[2]],
                         ids=[f"{f} {a}" for f, a, e in FIXTURE_CASES if "Traceback" not in e])
def test_proton_3_6_viewer_outputs_are_reproduced_verbatim(file_name, args, expected):
    code, out, err = run_view(*args.split(), "--mangled", str(FIXTURES / file_name))
    assert (code, err) == (0, "")
    assert out == as_lepton_view_prints(expected)


def test_where_proton_viewer_crashed_on_a_missing_metric_we_print_one_line_and_exit_2():
    """proton-viewer raised RuntimeError('Metric time is not found...') with a traceback on the
    instrumentation profile, whose ROOT has no metrics (so nothing there is summed)."""
    (file_name, args, expected), = [c for c in FIXTURE_CASES if "Traceback" in c[2]]
    assert "Metric time is not found" in expected
    code, out, err = run_view(*args.split(), str(FIXTURES / file_name))
    assert (code, out) == (2, "")
    assert len(err.splitlines()) == 1
    assert "unknown metric 'time'" in err and "cycles" in err and "normalized_cycles" in err


def test_kernel_names_are_demangled_and_folded_unless_full_names_or_mangled_is_given():
    path = str(FIXTURES / "cudagraph.hatchet")
    _, folded, _ = run_view("-m", "time/ns", path)
    # Two vectorized_elementwise_kernel<…> in one profile: both show their template arguments.
    assert ("├─ 1631.000 at::native::vectorized_elementwise_kernel<2, at::native::FillFunctor<…>, "
            "std::array<…> >\n") in folded
    _, demangled, _ = run_view("-m", "time/ns", "--full-names", path)
    assert ("├─ 1631.000 void at::native::vectorized_elementwise_kernel<2, at::native::FillFunctor<long>, "
            "std::array<char*, 1ul> >(int, at::native::FillFunctor<long>, std::array<char*, 1ul>)\n") in demangled
    _, mangled, _ = run_view("-m", "time/ns", "--mangled", path)
    assert "├─ 1631.000 _ZN2at6native29vectorized_elementwise_kernelILi2ENS0_11FillFunctorIlEESt5arrayIPcLm1EEEEviT0_T1_\n" in mangled
