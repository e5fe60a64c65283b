"""The hottest instructions (SASS) of a sampled kernel, as a profile keeps them: each PC's samples,
and the kernel's code (its cubin's `.text.<function>` section, compressed) for the viewer to
disassemble. Writing a profile runs no disassembler: nvdisasm on a whole cubin costs seconds that
the user has not asked for (docs/design.md, "Instruction sampling")."""
from __future__ import annotations

import base64
import zlib

from .cubin import function_code

TOP_INSTRUCTIONS = 40  # per kernel: what a reader looks at, and what keeps the profile small
MAX_CODE_BYTES = 256 << 10  # 16k instructions; larger kernels keep their samples but not their code


def hottest(samples: dict[int, int], top: int = TOP_INSTRUCTIONS) -> list[list]:
    """`[[byte offset, samples, ""], ...]`, the most sampled first; the viewer fills in the text."""
    ranked = sorted(samples.items(), key=lambda item: (-item[1], item[0]))[:top]
    return [[offset, count, ""] for offset, count in ranked]


def packed_code(cubin: bytes | None, function: str, arch: str | None) -> dict | None:
    """`{"arch": "90", "zlib_b64": ...}`: the function's code as the viewer's `nvdisasm -b SM<arch>`
    reads it, or None where the cubin or the arch is unknown, the function is not in the cubin, or
    its code is over MAX_CODE_BYTES."""
    code = function_code(cubin, function) if cubin is not None and arch else None
    if not code or len(code) > MAX_CODE_BYTES:
        return None
    return {"arch": arch, "zlib_b64": base64.b64encode(zlib.compress(code, 6)).decode("ascii")}
