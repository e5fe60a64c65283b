"""The per-warp profile buffer a kernel needs, read from its TTGIR before Triton's proton passes run.

Proton's default gives every CTA 4% of the GPU's shared memory (8 KiB on the H100), whatever the
kernel records, and Triton's launcher then asks for that much global scratch per CTA on every launch:
34 MB for a 4096-block kernel whose warps write 16 bytes each. Where no record op sits inside a
loop, each warp writes at most one entry per record op, so a buffer of that many entries can never
wrap; Lepton compiles such kernels with it (`auto_buffer_size`). Kernels that record inside loops
keep Proton's default, and a buffer size the user chose is always kept.
"""
from __future__ import annotations

import re

from .layout import ENTRY_BYTES

_NUM_WARPS = re.compile(r'"ttg\.(?:total-)?num-warps"\s*=\s*(\d+)')
_LOOP_OPS = ("scf.for", "scf.while", "scf.parallel")


def record_ops_outside_loops(ttgir: str) -> int | None:
    """How many `proton.record` ops the module has, or None if one of them sits inside a loop (its
    entries are then unbounded). Reads MLIR's generic text: a line ending in `{` opens a region,
    a line starting with `}` closes one (`} do {` of `scf.while` closes one and opens its body)."""
    loops: list[bool] = []  # per open region: whether it is (inside) a loop body
    records = 0
    for line in ttgir.splitlines():
        text = line.strip()
        if text.startswith("}") and loops:
            closed = loops.pop()
            if text.endswith("{"):  # `} do {`, `} else {`: the next region of the same op
                loops.append(closed or text.startswith("} do"))
            continue
        if text.startswith("proton.record"):
            if any(loops):
                return None
            records += 1
        elif text.endswith("{"):
            opens_loop = any(op in text for op in _LOOP_OPS)
            loops.append(opens_loop or bool(loops and loops[-1]))
    return records


def num_warps(ttgir: str) -> int | None:
    """The module's total warps (warp-specialised partitions included), as the passes count them."""
    found = [int(n) for n in _NUM_WARPS.findall(ttgir)]
    return max(found) if found else None


def auto_buffer_size(ttgir: str) -> int:
    """Bytes of profile buffer per CTA that hold every entry each warp can write (a power of two per
    warp, as the passes require), or 0 (Proton's default) where that is unbounded or unknown."""
    records = record_ops_outside_loops(ttgir)
    warps = num_warps(ttgir)
    if not records or not warps:
        return 0
    per_warp = 1 << (records * ENTRY_BYTES - 1).bit_length()
    return per_warp * warps


def buffer_choice(ttgir: str, sizes_buffers: bool) -> str:
    """How a kernel's profile buffer was sized, in words, for the path counts
    (`backend.path_counts`): a kernel with a default-size buffer pays 8 KiB of scratch a CTA on
    every launch, and its device sums scan that much."""
    if not sizes_buffers:
        return "the mode's"
    if record_ops_outside_loops(ttgir) is None:
        return "default: a record op inside a loop"
    return "sized to its records" if auto_buffer_size(ttgir) else "default: warps unknown"
