"""The hottest instructions (SASS) of a sampled kernel: each PC's samples, with the instruction's
text where `nvdisasm` (CUDA's disassembler) is on PATH when the profile is written."""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import tempfile

_FUNCTION = re.compile(r"^\s*\.text\.(\S+):\s*$")
_INSTRUCTION = re.compile(r"/\*([0-9a-fA-F]{4,})\*/\s*(.*?)\s*;")
TOP_INSTRUCTIONS = 40  # per kernel: what a reader looks at, and what keeps the profile small


def parse_disassembly(text: str) -> dict[str, dict[int, str]]:
    """`function -> {byte offset -> instruction}` from `nvdisasm -c` output."""
    functions: dict[str, dict[int, str]] = {}
    current: dict[int, str] | None = None
    for line in text.splitlines():
        label = _FUNCTION.match(line)
        if label:
            current = functions.setdefault(label.group(1), {})
            continue
        instruction = _INSTRUCTION.search(line)
        if instruction and current is not None:
            current[int(instruction.group(1), 16)] = " ".join(instruction.group(2).split())
    return functions


def disassemble(cubin: bytes) -> dict[str, dict[int, str]]:
    """The cubin's instructions per function, or {} where nvdisasm is not on PATH or fails."""
    exe = shutil.which("nvdisasm")
    if exe is None:
        return {}
    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, "kernel.cubin")
        with open(path, "wb") as f:
            f.write(cubin)
        try:
            done = subprocess.run([exe, "-c", path], capture_output=True, text=True, timeout=60, check=False)
        except (OSError, subprocess.TimeoutExpired):
            return {}
    return parse_disassembly(done.stdout) if done.returncode == 0 else {}


def hottest(samples: dict[int, int], instructions: dict[int, str], top: int = TOP_INSTRUCTIONS) -> list[list]:
    """`[[byte offset, samples, instruction text or ""], ...]`, the most sampled first."""
    ranked = sorted(samples.items(), key=lambda item: (-item[1], item[0]))[:top]
    return [[offset, count, instructions.get(offset, "")] for offset, count in ranked]
