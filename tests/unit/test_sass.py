"""The hottest instructions of sampled kernels: nvdisasm's output parsed, ranked, written into the
profile's metadata and shown by `lepton-view --sass`."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import lepton as proton
from lepton.collect.cupti import sass
from lepton.collect.fake import FakeBackend
from lepton.viewer.sass import render

NVDISASM = """\
        .section\t.text.foo,"ax",@progbits
        .global         foo
foo:
.text.foo:
        /*0000*/                   LDC R1, c[0x0][0x28] ;
        /*0010*/                   S2R R0, SR_CTAID.X ;
        /*0020*/               @P0 BRA `(.L_x_1) ;
.text.bar:
        /*0000*/                   EXIT ;
"""
SRC = Path(__file__).resolve().parents[2] / "src"


def test_nvdisasm_output_is_read_per_function_and_offset():
    assert sass.parse_disassembly(NVDISASM) == {
        "foo": {0x0: "LDC R1, c[0x0][0x28]", 0x10: "S2R R0, SR_CTAID.X", 0x20: "@P0 BRA `(.L_x_1)"},
        "bar": {0x0: "EXIT"}}


def test_the_hottest_instructions_come_first_with_their_text():
    rows = sass.hottest({0x0: 5, 0x10: 50, 0x20: 5, 0x30: 1}, sass.parse_disassembly(NVDISASM)["foo"], top=3)
    assert rows == [[0x10, 50, "S2R R0, SR_CTAID.X"], [0x0, 5, "LDC R1, c[0x0][0x28]"],
                    [0x20, 5, "@P0 BRA `(.L_x_1)"]]


def test_a_backends_extras_reach_the_file_and_lepton_view_shows_them(monkeypatch, tmp_path):
    rows = [[0x10, 30, "FFMA R2, R2, R3, R4"], [0x0, 10, ""]]
    monkeypatch.setattr(FakeBackend, "profile_extras", lambda self: {"sass": {"foo": rows}})
    proton.start("sampled", backend="fake")
    with proton.scope("s"):
        pass
    proton.finalize()
    assert json.loads(Path("sampled.hatchet").read_text())[0]["lepton"]["sass"] == {"foo": rows}
    out = subprocess.run([sys.executable, "-m", "lepton.viewer", "--sass", "fo", "sampled.hatchet"],
                         capture_output=True, text=True, env={"PYTHONPATH": str(SRC)}, timeout=60, check=False)
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines()[:3] == ["foo  (40 samples in its 2 hottest instructions)",
                                          "   75.0%  /*0010*/  FFMA R2, R2, R3, R4",
                                          "   25.0%  /*0000*/  (nvdisasm was not on PATH)"]


def test_only_matching_kernels_are_shown_and_names_are_shown_safely():
    assert render({"foo": [[0, 1, "EXIT"]]}, "nomatch") == ""
    assert "\x1b" not in render({"\x1b[31mfoo": [[0, 1, "EXIT"]]})
