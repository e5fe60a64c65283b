"""lepton.cli.view in-process: options, bad input (one line, exit 2), colour and width decisions."""
from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from lepton.cli.view import main, parse_options

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "tests" / "data" / "proton_examples"
FIXTURES = ROOT / "tests" / "data" / "proton_3_6"


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def run_view(*argv, stdout=None):
    out, err = stdout or io.StringIO(), io.StringIO()
    code = main([str(a) for a in argv], stdout=out, stderr=err)
    return code, out.getvalue(), err.getvalue()


def test_options_are_parsed_into_a_typed_record():
    options = parse_options(["-m", "time/ms, util", "-t", "2.5", "-d", "3", "-f", "function_line",
                             "--print_sorted", "-diff", "b.hatchet", "--no-color", "a.hatchet"])
    assert options.metrics == ["time/ms", "util"]
    assert (options.threshold, options.depth, options.name_format) == (2.5, 3, "function_line")
    assert (options.print_sorted, options.diff_file, options.color, options.file) == (True, "b.hatchet", "never", "a.hatchet")


def test_without_metrics_time_in_ms_is_shown():
    code, out, _ = run_view(EXAMPLES / "triton.json")
    assert (code, out) == (0, "0.002 ROOT\n└─ 0.002 scope\n   └─ 0.002 triton_kernel\n\n")


def test_list_wins_over_metrics():
    _, out, _ = run_view("-l", "-m", "time/ns", EXAMPLES / "cuda.json")
    assert out.startswith("Available inclusive metrics:\n- count\n- time\n- flops8\n- bytes\n")


@pytest.mark.parametrize("args, message", [
    (["missing.hatchet"], "cannot read 'missing.hatchet'"),
    (["-m", "nope", EXAMPLES / "cuda.json"], "unknown metric 'nope'; this profile has: count, time, flops8, bytes"),
    (["-m", "device_type", EXAMPLES / "cuda.json"], "is not numeric"),
    (["-m", "time/kg", EXAMPLES / "cuda.json"], "unsupported unit 'kg'"),
    (["-m", "time/ns", "-i", "zzz", EXAMPLES / "cuda.json"], "no frame matches --include 'zzz'"),
])
def test_bad_input_is_one_line_on_stderr_and_exit_code_2(args, message):
    code, out, err = run_view(*args)
    assert (code, out) == (2, "")
    assert err.count("\n") == 1 and err.startswith("lepton-view: error: ") and message in err


@pytest.mark.parametrize("content, message", [(b"plain text", "not a profile"), (b"[{\"frame\": {\"na", "truncated")])
def test_files_that_are_not_profiles_or_are_cut_short(tmp_path, content, message):
    path = tmp_path / "p.hatchet"
    path.write_bytes(content)
    code, out, err = run_view(path)
    assert (code, out) == (2, "")
    assert err.count("\n") == 1 and message in err


def test_a_profile_with_no_metrics_at_all_says_so(tmp_path):
    path = tmp_path / "empty.hatchet"
    path.write_text(json.dumps([{"frame": {"name": "ROOT", "type": "function"}, "metrics": {}, "children": []}, {}]))
    code, _, err = run_view(path)
    assert code == 2 and "has no metrics to show" in err


def test_colour_and_width_follow_the_terminal(monkeypatch):
    monkeypatch.delenv("NO_COLOR", raising=False)
    monkeypatch.setenv("TERM", "xterm")
    monkeypatch.setattr("shutil.get_terminal_size", lambda: __import__("os").terminal_size((70, 20)))
    _, out, _ = run_view("-m", "time/ns", FIXTURES / "cudagraph.hatchet", stdout=Terminal())
    assert "\033[38;5;" in out
    assert "at::native::vectorized_elementwise_kernel<…>\n" in out
    _, plain, _ = run_view("--no-color", "-m", "time/ns", FIXTURES / "cudagraph.hatchet", stdout=Terminal())
    assert "\033[" not in plain


def test_no_color_in_the_environment_turns_colour_off(monkeypatch):
    monkeypatch.setenv("NO_COLOR", "1")
    _, out, _ = run_view("-m", "time/ns", EXAMPLES / "triton.json", stdout=Terminal())
    assert "\033[" not in out


def test_diff_names_both_files_and_marks_the_nodes_of_one_side_only():
    """B − A as proton-viewer subtracts (foo0 only in B keeps its time), and a node only A has
    shows -A where hatchet prints nan: ROOT's change is its children's."""
    a, b = EXAMPLES / "triton.json", EXAMPLES / "cuda.json"
    code, out, _ = run_view("-m", "time/ns", "--no-color", "-diff", a, b)
    assert code == 0
    assert out == (f"B − A, with B = {b} and A = {a} (-diff); (%): the change from A\n"
                   "612736.000 ROOT  (+36823.1%)\n├─ 204800.000 foo0  [only in B]\n"
                   "├─ 204800.000 foo1  [only in B]\n"
                   "├─ 204800.000 foo2  [only in B]\n└─ -1664.000 scope  [only in A]\n"
                   "   └─ -1664.000 triton_kernel  [only in A]\n\n")


def test_csv_output_for_scripts():
    _, out, _ = run_view("-m", "avg_time/us", "--output", "csv", EXAMPLES / "cuda.json")
    assert out.splitlines() == ["id,parent_id,depth,name,avg_time/us (inc)", "0,,0,ROOT,51.2",
                                "1,0,1,foo0,20.48", "2,0,1,foo1,204.8", "3,0,1,foo2,204.8"]


def test_demangled_names_can_be_filtered_by_what_the_user_sees():
    code, out, _ = run_view("-m", "time/ns", "-i", "void at::native", FIXTURES / "cudagraph.hatchet")
    assert code == 0 and "add_kernel" not in out and "vectorized_elementwise_kernel" in out


@pytest.mark.parametrize("flag", [["--lines", "3"], ["--sass", "."], ["--ncu", "k"]])
def test_a_bad_file_under_lines_sass_or_ncu_is_one_line_and_exit_code_2(tmp_path, flag):
    path = tmp_path / "p.hatchet"
    path.write_bytes(b"plain text")
    code, out, err = run_view(*flag, path)
    assert (code, out) == (2, "")
    assert err.count("\n") == 1 and err.startswith("lepton-view: error: ") and "not a profile" in err


def test_lines_without_samples_says_so_and_exits_1():
    code, out, err = run_view("--lines", "3", EXAMPLES / "cuda.json")
    assert (code, out) == (1, "")
    assert err == 'lepton-view: no instruction samples in this profile (record it with mode="pcsampling")\n'


def test_lines_gets_its_options_from_the_one_parse(monkeypatch):
    """`--lines N -i REGEX` reaches the lines view as arguments, not as a second command line."""
    seen = []
    monkeypatch.setattr("lepton.viewer.lines.show_lines", lambda *args: seen.append(args[:3]) or 0)
    assert run_view("--lines", "4", "-i", "step", "x.hatchet")[0] == 0
    assert seen == [("x.hatchet", 4, "step")]


def test_version_prints_the_packages_version(capsys):
    from lepton import __version__

    with pytest.raises(SystemExit) as exited:
        main(["--version"])
    assert exited.value.code == 0
    assert capsys.readouterr().out == f"lepton-view {__version__}\n"
