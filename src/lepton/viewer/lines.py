"""The hottest source lines of each sampled kernel (`mode="pcsampling"` profiles): share of the
kernel's samples, top stall reasons, and the line's text where the file is readable.

usage:  python -m lepton.viewer.lines PROFILE [-k KERNEL_REGEX] [-n LINES] [--stalls N]
(meant to become `lepton-view --lines`). Line nodes are a kernel node's children named
`<dir>/<file>:<line>@<function>`; a kernel's samples are its own (no line) plus its lines'.
"""
from __future__ import annotations

import argparse
import linecache
import re
import sys
from collections.abc import Sequence
from dataclasses import dataclass

from .load import ProfileError, load_document

_LINE_NODE = re.compile(r"^(?P<file>.+):(?P<line>\d+)@(?P<function>.+)$")


@dataclass
class KernelLines:
    path: str  # the kernel node's call path, ROOT excluded
    samples: int  # the kernel's samples: own + lines
    lines: list[tuple[str, dict]]  # (line node name, metrics), hottest first


def sampled_kernels(root: dict) -> list[KernelLines]:
    """Every node that has line children (or samples of its own), hottest first."""
    out = []

    def walk(node: dict, prefix: tuple[str, ...]) -> None:
        lines = [(c["frame"]["name"], c["metrics"]) for c in node.get("children", ())
                 if _LINE_NODE.match(c["frame"]["name"]) and "num_samples" in c.get("metrics", {})]
        own = node.get("metrics", {}).get("num_samples", 0) if prefix else 0
        if lines or (own and "count" in node.get("metrics", {})):
            lines.sort(key=lambda item: -item[1]["num_samples"])
            out.append(KernelLines("/".join(prefix), own + sum(m["num_samples"] for _, m in lines), lines))
        for c in node.get("children", ()):
            if not _LINE_NODE.match(c["frame"]["name"]):
                walk(c, prefix + (c["frame"]["name"],))

    walk(root, ())
    out.sort(key=lambda k: -k.samples)
    return out


def top_stalls(metrics: dict, n: int) -> list[tuple[str, int]]:
    stalls = [(k[len("stalled_"):], v) for k, v in metrics.items() if k.startswith("stalled_") and v]
    return sorted(stalls, key=lambda kv: -kv[1])[:n]


def source_text(node_name: str) -> str:
    m = _LINE_NODE.match(node_name)
    return linecache.getline(m["file"], int(m["line"])).strip() if m else ""


def render(kernels: list[KernelLines], top: int, stalls: int) -> str:
    out = []
    for k in kernels:
        out.append(f"{k.path}  ({k.samples} samples)")
        for name, m in k.lines[:top]:
            share = m["num_samples"] / k.samples if k.samples else 0.0
            why = ", ".join(f"{r} {v / max(m['num_samples'], 1):.0%}" for r, v in top_stalls(m, stalls))
            out.append(f"  {share:6.1%}  {name}")
            text = source_text(name)
            if text:
                out.append(f"          | {text}")
            if why:
                out.append(f"          stalls: {why}")
        out.append("")
    return "\n".join(out)


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m lepton.viewer.lines", description=__doc__.splitlines()[0])
    p.add_argument("file")
    p.add_argument("-k", "--kernel", help="only kernels whose call path matches this regex")
    p.add_argument("-n", "--lines", type=int, default=10, help="lines per kernel (default 10)")
    p.add_argument("--stalls", type=int, default=3, help="stall reasons per line (default 3)")
    a = p.parse_args(argv)
    try:
        document = load_document(a.file)
    except ProfileError as e:
        print(f"lepton-view: error: {e}", file=sys.stderr)
        return 1
    kernels = sampled_kernels(document[0])
    if a.kernel:
        kernels = [k for k in kernels if re.search(a.kernel, k.path)]
    if not kernels:
        print("lepton-view: no instruction samples in this profile (record it with mode=\"pcsampling\")",
              file=sys.stderr)
        return 1
    sys.stdout.write(render(kernels, a.lines, a.stalls))
    return 0


if __name__ == "__main__":
    sys.exit(main())
