"""`lepton-view --lines`: the hottest source lines of each sampled kernel (`mode="pcsampling"`
profiles): share of the kernel's samples, top stall reasons, and the line's text where the file is
readable. Line nodes are a kernel node's children named `<dir>/<file>:<line>@<function>`; a
kernel's samples are its own (no line) plus its lines'.
"""
from __future__ import annotations

import linecache
import re
from dataclasses import dataclass
from typing import TextIO

from ..model.hatchet_names import COUNT, NUM_SAMPLES, STALL_PREFIX
from .escape import printable
from .filters import compiled
from .load import load_document
from .names import NameStyle, readable_names

_LINE_NODE = re.compile(r"^(?P<file>.+):(?P<line>\d+)@(?P<function>.+)$")


@dataclass
class KernelLines:
    path: str  # the kernel node's call path, ROOT excluded, as in the file
    samples: int  # the kernel's samples: own + lines
    lines: list[tuple[str, dict]]  # (line node name, metrics), hottest first
    frames: tuple[str, ...] = ()  # the path's frames, as in the file
    shown_path: str = ""  # the path as the header shows it (demangled unless --mangled)


def sampled_kernels(root: dict) -> list[KernelLines]:
    """Every node that has line children (or samples of its own), hottest first."""
    out = []

    def walk(node: dict, prefix: tuple[str, ...]) -> None:
        lines = [(c["frame"]["name"], c["metrics"]) for c in node.get("children", ())
                 if _LINE_NODE.match(c["frame"]["name"]) and NUM_SAMPLES in c.get("metrics", {})]
        own = node.get("metrics", {}).get(NUM_SAMPLES, 0) if prefix else 0
        if lines or (own and COUNT in node.get("metrics", {})):
            lines.sort(key=lambda item: -item[1][NUM_SAMPLES])
            samples = own + sum(m[NUM_SAMPLES] for _, m in lines)
            out.append(KernelLines("/".join(prefix), samples, lines, prefix))
        for c in node.get("children", ()):
            if not _LINE_NODE.match(c["frame"]["name"]):
                walk(c, prefix + (c["frame"]["name"],))

    walk(root, ())
    out.sort(key=lambda k: -k.samples)
    return out


def with_shown_paths(kernels: list[KernelLines], style: NameStyle) -> list[KernelLines]:
    """Each kernel's path as the tree shows its frames: demangled C++ names, folded ("short"),
    whole ("full") or as in the file ("mangled")."""
    distinct = list(dict.fromkeys(frame for k in kernels for frame in k.frames))
    shown = dict(zip(distinct, readable_names(distinct, style)))
    for k in kernels:
        k.shown_path = "/".join(shown[frame] for frame in k.frames)
    return kernels


def top_stalls(metrics: dict, n: int) -> list[tuple[str, int]]:
    stalls = [(k[len(STALL_PREFIX):], v) for k, v in metrics.items() if k.startswith(STALL_PREFIX) and v]
    return sorted(stalls, key=lambda kv: -kv[1])[:n]


def source_text(node_name: str) -> str:
    m = _LINE_NODE.match(node_name)
    return linecache.getline(m["file"], int(m["line"])).strip() if m else ""


def render(kernels: list[KernelLines], top: int, stalls: int) -> str:
    out = []
    for k in kernels:
        out.append(f"{printable(k.shown_path or k.path)}  ({k.samples} samples)")
        for name, m in k.lines[:top]:
            share = m[NUM_SAMPLES] / k.samples if k.samples else 0.0
            why = ", ".join(f"{r} {v / max(m[NUM_SAMPLES], 1):.0%}" for r, v in top_stalls(m, stalls))
            out.append(f"  {share:6.1%}  {name}")
            text = source_text(name)
            if text:
                out.append(f"          | {text}")
            if why:
                out.append(f"          stalls: {why}")
        out.append("")
    return "\n".join(out)


def show_lines(path: str, top: int, kernel_pattern: str | None, stdout: TextIO, stderr: TextIO,
               style: NameStyle = "short", stalls: int = 3) -> int:
    """`lepton-view --lines N [-i REGEX]`: each sampled kernel's `top` hottest lines (only the
    kernels whose call path, as in the file or as shown, matches `kernel_pattern`); exit 1 when
    the profile has none. A file that is no profile raises ProfileError."""
    kernels = with_shown_paths(sampled_kernels(load_document(path)[0]), style)
    if kernel_pattern:
        wanted = compiled(kernel_pattern)
        kernels = [k for k in kernels if wanted.search(k.path) or wanted.search(k.shown_path)]
    if not kernels:
        print("lepton-view: no instruction samples in this profile (record it with mode=\"pcsampling\")",
              file=stderr)
        return 1
    stdout.write(render(kernels, top, stalls))
    return 0
