"""The hottest instructions of sampled kernels: the function's code read out of its cubin and kept in
the profile at finalize (no disassembler there), and disassembled by `lepton-view --sass` with
nvdisasm, here a fake one put on PATH."""
from __future__ import annotations

import base64
import json
import os
import stat
import subprocess
import sys
import types
import zlib
from pathlib import Path

import pytest
from test_cubin import elf64
from twins.fake_backend import FakeBackend

import lepton as proton
from lepton.backends.cupti.pcsampling import sass
from lepton.backends.cupti.pcsampling.backend import PCSamplingBackend
from lepton.model.records import DeviceInfo
from lepton.viewer import nvdisasm
from lepton.viewer.sass import show_sass
from lepton.viewer.sass import render, with_text

SRC = Path(__file__).resolve().parents[2] / "src"
FOO_CODE = bytes(range(48))  # three 16-byte instructions
CUBIN = elf64({".nv.info": b"\x01" * 24, ".text.foo": FOO_CODE, ".text.bar": b"\xee" * 16})


# -- what finalize keeps ---------------------------------------------------------------------------------
def test_the_hottest_instructions_come_first_without_text():
    assert sass.hottest({0x0: 5, 0x10: 50, 0x20: 5, 0x30: 1}, top=3) == [[0x10, 50, ""], [0x0, 5, ""], [0x20, 5, ""]]


def backend_with_samples(cubins: dict[int, bytes], samples: dict[tuple[int, str], dict[int, int]], arch="90"):
    info = DeviceInfo(arch, 132, 1_980_000, 2_619_000, 5120) if arch else None
    backend = PCSamplingBackend(cupti=object(), driver=types.SimpleNamespace(device_info=lambda ordinal: info))
    backend._cubins, backend._pc_samples = cubins, samples
    return backend


def unpacked(entry):
    return entry["arch"], zlib.decompress(base64.b64decode(entry["zlib_b64"]))


def test_finalize_keeps_each_hot_kernels_code_and_runs_no_disassembler(monkeypatch):
    def no_subprocess(*args, **kwargs):
        raise AssertionError("finalize ran a subprocess")

    monkeypatch.setattr(subprocess, "run", no_subprocess)
    monkeypatch.setattr(subprocess, "Popen", no_subprocess)
    big = elf64({".text.big": b"\0" * (sass.MAX_CODE_BYTES + 16)})
    backend = backend_with_samples(
        {7: CUBIN, 8: big}, {(7, "foo"): {0x10: 30, 0x0: 10}, (8, "big"): {0x0: 5}, (9, "unseen"): {0x0: 2}})
    extras = backend.profile_extras()
    assert extras["sass"] == {"foo": [[0x10, 30, ""], [0x0, 10, ""]], "big": [[0x0, 5, ""]], "unseen": [[0x0, 2, ""]]}
    assert set(extras["sass_code"]) == {"foo"}  # big: over 256 KiB; unseen: no cubin
    assert unpacked(extras["sass_code"]["foo"]) == ("90", FOO_CODE)


def test_a_name_in_two_cubins_keeps_the_hotter_kernels_rows_and_code():
    other = elf64({".text.foo": b"\x11" * 16})
    backend = backend_with_samples({7: CUBIN, 8: other}, {(8, "foo"): {0x0: 3}, (7, "foo"): {0x20: 9}})
    extras = backend.profile_extras()
    assert extras["sass"] == {"foo": [[0x20, 9, ""]]}
    assert unpacked(extras["sass_code"]["foo"])[1] == FOO_CODE


def test_with_no_device_arch_the_rows_are_kept_without_code():
    extras = backend_with_samples({7: CUBIN}, {(7, "foo"): {0x0: 1}}, arch=None).profile_extras()
    assert extras == {"sass": {"foo": [[0x0, 1, ""]]}}


# -- the viewer ------------------------------------------------------------------------------------------
FAKE_NVDISASM = """\
import sys
args = sys.argv[1:]
if args[:2] != ["-b", "SM90a"]:
    sys.exit("nvdisasm fatal : this fake decodes only SM90a, not " + " ".join(args[:2]))
code = open(args[2], "rb").read()
print("        .text:")  # what raw mode may print around the instructions: not an instruction
for at in range(0, len(code), 16):
    print(f"        /*{at:04x}*/                   OP{code[at]:02x} R{code[at + 1]}, R{code[at + 2]} ;")
    print(f"                                                      /* 0x{code[at:at + 8][::-1].hex()} */")
"""


@pytest.fixture
def fake_nvdisasm(tmp_path, monkeypatch):
    """A folder on PATH with an `nvdisasm` that prints, per 16 bytes, nvdisasm's line format."""
    folder = tmp_path / "bin"
    folder.mkdir()
    exe = folder / "nvdisasm"
    exe.write_text(f"#!{sys.executable}\n{FAKE_NVDISASM}")
    exe.chmod(exe.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setenv("PATH", str(folder))
    return folder


def test_raw_disassembly_is_read_per_offset():
    text = "        /*0000*/                   LDC R1, c[0x0][0x28] ;\n" \
           "                                                      /* 0x00000a00ff017b82 */\n" \
           ".L_x_1:\n" \
           "        /*0020*/               @P0 BRA `(.L_x_1) ;\n"
    assert nvdisasm.parse(text) == {0x0: "LDC R1, c[0x0][0x28]", 0x20: "@P0 BRA `(.L_x_1)"}


def write_profile(path: Path, extras: dict) -> None:
    path.write_text(json.dumps([{"frame": {"name": "ROOT", "type": "function"}, "metrics": {}, "children": [],
                                 "lepton": extras}]))


def test_lepton_view_disassembles_the_kept_code_with_nvdisasm(fake_nvdisasm, tmp_path):
    extras = backend_with_samples({7: CUBIN}, {(7, "foo"): {0x10: 30, 0x20: 10}}).profile_extras()
    write_profile(tmp_path / "p.hatchet", extras)
    out = subprocess.run([sys.executable, "-m", "lepton.viewer", "--sass", "fo", str(tmp_path / "p.hatchet")],
                         capture_output=True, text=True, timeout=60, check=False,
                         env={"PYTHONPATH": str(SRC), "PATH": str(fake_nvdisasm)})
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines()[:3] == ["foo  (40 samples in its 2 hottest instructions)",
                                          "   75.0%  /*0010*/  OP10 R17, R18",
                                          "   25.0%  /*0020*/  OP20 R33, R34"]
    assert out.stderr == ""


def test_without_nvdisasm_the_viewer_says_once_how_to_get_the_text(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("PATH", str(tmp_path))
    extras = backend_with_samples({7: CUBIN}, {(7, "foo"): {0x10: 3}, (7, "bar"): {0x0: 1}}).profile_extras()
    write_profile(tmp_path / "p.hatchet", extras)
    assert show_sass(str(tmp_path / "p.hatchet"), ".", sys.stdout, sys.stderr) == 0
    out, err = capsys.readouterr()
    assert "  100.0%  /*0010*/  (no text)" in out
    assert err.splitlines() == [f"lepton-view: {nvdisasm.GET_NVDISASM}"]


def test_a_code_nvdisasm_refuses_keeps_the_rows_and_says_why(fake_nvdisasm):
    rows, notes = with_text({"foo": [[0x0, 1, ""]]}, {"foo": {"arch": "80", "zlib_b64": base64.b64encode(
        zlib.compress(FOO_CODE)).decode()}}, str(fake_nvdisasm / "nvdisasm"))
    assert rows == {"foo": [[0x0, 1, ""]]}
    why = "nvdisasm fatal : this fake decodes only SM90a, not -b SM80"
    assert notes == [f"nvdisasm could not read the code of foo: {why}"]


def test_rows_with_text_from_older_profiles_run_no_nvdisasm(tmp_path):
    rows = {"foo": [[0x0, 1, "EXIT"]]}
    assert with_text(rows, {}, str(tmp_path / "missing-nvdisasm")) == (rows, [])


@pytest.mark.parametrize("entry", [None, {"arch": "90"}, {"arch": "-o x", "zlib_b64": ""},
                                   {"arch": "90", "zlib_b64": "not base64!"},
                                   {"arch": "90", "zlib_b64": base64.b64encode(b"not zlib").decode()},
                                   {"arch": "90", "zlib_b64": base64.b64encode(zlib.compress(
                                       bytes(nvdisasm.MAX_CODE_BYTES + 1))).decode()}])
def test_code_lepton_did_not_write_is_not_disassembled(entry):
    assert nvdisasm.unpack(entry) is None


def test_a_backends_extras_reach_the_file_and_lepton_view_shows_them(monkeypatch, tmp_path):
    rows = [[0x10, 30, "FFMA R2, R2, R3, R4"], [0x0, 10, ""]]
    monkeypatch.setattr(FakeBackend, "profile_extras", lambda self: {"sass": {"foo": rows}})
    proton.start("sampled", backend="fake")
    with proton.scope("s"):
        pass
    proton.finalize()
    assert json.loads(Path("sampled.hatchet").read_text())[0]["lepton"]["sass"] == {"foo": rows}
    out = subprocess.run([sys.executable, "-m", "lepton.viewer", "--sass", "fo", "sampled.hatchet"],
                         capture_output=True, text=True, env={"PYTHONPATH": str(SRC), "PATH": os.defpath},
                         timeout=60, check=False)
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines()[:3] == ["foo  (40 samples in its 2 hottest instructions)",
                                          "   75.0%  /*0010*/  FFMA R2, R2, R3, R4",
                                          "   25.0%  /*0000*/  (no text)"]
    assert "keeps no code for foo" in out.stderr


def test_only_matching_kernels_are_shown_and_names_are_shown_safely():
    assert render({"foo": [[0, 1, "EXIT"]]}, "nomatch") == ""
    assert "\x1b" not in render({"\x1b[31mfoo": [[0, 1, "EXIT"]]})
