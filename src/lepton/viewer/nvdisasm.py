"""The text of the instructions a profile ranks (`lepton-view --sass`): nvdisasm, CUDA's
disassembler, run on the code the profile keeps, once per kernel shown, when it is shown. The
profile keeps the code (in its run's metadata, `hatchet_names.SASS_CODE_KEY`) because
disassembling at finalize cost seconds the user had not asked for."""
from __future__ import annotations

import base64
import binascii
import os
import re
import subprocess
import tempfile
import zlib

MAX_CODE_BYTES = 256 << 10  # what the writer keeps at most; more is not a profile Lepton wrote
GET_NVDISASM = ("the instructions' text needs nvdisasm on PATH: install the CUDA toolkit's "
                "nvdisasm (package cuda-nvdisasm) and add its bin/ to PATH")
_ARCH = re.compile(r"[0-9]{2,3}[a-z]?")  # "90", "100", "90a": the file is untrusted, so no options
_INSTRUCTION = re.compile(r"/\*([0-9a-fA-F]{4,})\*/\s*(.*?)\s*;")


def parse(text: str) -> dict[int, str]:
    """`{byte offset -> instruction}` from the output of `nvdisasm -b SM<arch>` on raw code."""
    found = {}
    for line in text.splitlines():
        instruction = _INSTRUCTION.search(line)
        if instruction:
            found[int(instruction.group(1), 16)] = " ".join(instruction.group(2).split())
    return found


def unpack(entry: object) -> tuple[str, bytes] | None:
    """`(arch, code)` from one "sass_code" entry, or None where it is not one Lepton wrote."""
    if not isinstance(entry, dict) or not isinstance(entry.get("zlib_b64"), str):
        return None
    arch = entry.get("arch")
    if not isinstance(arch, str) or not _ARCH.fullmatch(arch):
        return None
    try:
        inflate = zlib.decompressobj()
        code = inflate.decompress(base64.b64decode(entry["zlib_b64"], validate=True), MAX_CODE_BYTES + 1)
    except (binascii.Error, zlib.error):
        return None
    return (arch, code) if code and len(code) <= MAX_CODE_BYTES else None


def disassemble(exe: str, arch: str, code: bytes) -> tuple[dict[int, str], str]:
    """`({byte offset -> instruction}, "")`, or `({}, why)` where nvdisasm refused the code."""
    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, "code.bin")
        with open(path, "wb") as f:
            f.write(code)
        reasons = []
        for target in _targets(arch):
            text, why = _run(exe, target, path)
            found = parse(text)
            if found:
                return found, ""
            reasons.append(why or f"nvdisasm -b {target} printed no instruction")
    return {}, reasons[0]


def _targets(arch: str) -> list[str]:
    """SM90, then SM90a: a device says "90" where Triton compiles for sm_90a, whose wgmma SM90 may
    not decode."""
    accelerated = arch.isdigit() and int(arch) >= 90
    return [f"SM{arch}", f"SM{arch}a"] if accelerated else [f"SM{arch}"]


def _run(exe: str, target: str, path: str) -> tuple[str, str]:
    """`nvdisasm -b target path`: `(its output, "")`, or `("", why it failed)`."""
    try:
        done = subprocess.run([exe, "-b", target, path], capture_output=True, text=True, timeout=60, check=False)
    except (OSError, subprocess.TimeoutExpired) as e:
        return "", str(e)
    if done.returncode != 0:
        return "", (done.stderr.strip().splitlines() or [f"nvdisasm -b {target} exited {done.returncode}"])[0]
    return done.stdout, ""
