"""`--output speedscope`: speedscope's JSON file format (https://www.speedscope.app), one
"sampled" profile per metric asked for.

Each shown node with a self width (viewer.stacks) is one sample: its stack of frames (indices into
the shared frame list) weighed by its self width, in the display order of the tree, so that
speedscope's time-order view draws the tree left to right and its weights add up to ROOT's.
"""
from __future__ import annotations

import json
import re
from typing import TextIO

from .. import __version__
from .derive import FORMULAS, Column
from .flat_tree import Tree
from .stacks import stacks, walk

SCHEMA = "https://www.speedscope.app/file-format-schema.json"
UNITS = {"s": "seconds", "ms": "milliseconds", "us": "microseconds", "ns": "nanoseconds"}
_LINE_NODE = re.compile(r"^(?P<file>.+):(?P<line>\d+)@(?P<function>.+)$")  # Python and sampled lines


def speedscope(tree: Tree, columns: list[Column], requests: list[str], names: list[str], depth: int,
               title: str) -> dict:
    """The file's document: one profile per column (`requests`: the -m item of each)."""
    frame_of: dict[str, int] = {}
    frames: list[dict] = []
    profiles = []
    for column, request in zip(columns, requests):
        found = stacks(tree, column.values, depth)
        widths = found.self_width.tolist()
        samples, weights = [], []
        for node, path in walk(tree, found.order):
            if widths[node] > 0:
                samples.append([_frame(names[n], frame_of, frames) for n in path])
                weights.append(widths[node])
        total = float(sum(weights))
        profiles.append({"type": "sampled", "name": f"{title}: {column.label}",
                         "unit": unit_of(request, column.label), "startValue": 0, "endValue": total,
                         "samples": samples, "weights": weights})
    return {"$schema": SCHEMA, "shared": {"frames": frames}, "profiles": profiles, "name": title,
            "activeProfileIndex": 0, "exporter": f"lepton-view {__version__}"}


def write_speedscope(out: TextIO, tree: Tree, columns: list[Column], requests: list[str], names: list[str],
                     depth: int, title: str) -> None:
    json.dump(speedscope(tree, columns, requests, names, depth, title), out, separators=(",", ":"))
    out.write("\n")


def unit_of(request: str, label: str) -> str:
    """speedscope's unit for a -m item and its column's label: time/ms -> milliseconds, a raw
    "time (ns)" -> nanoseconds, bytes -> bytes; "none" for counts, samples, cycles and flops."""
    key = request.strip().lower()
    if key in FORMULAS:
        return UNITS.get(key.rsplit("/", 1)[1], "none")
    if "/" in key:  # <metric>/%, <metric>/kernel%
        return "none"
    unit = re.search(r"\((\w+)\)", label)
    if unit and unit.group(1) in UNITS:
        return UNITS[unit.group(1)]
    return "bytes" if label.split(" ")[0] == "bytes" else "none"


def _frame(name: str, frame_of: dict[str, int], frames: list[dict]) -> int:
    index = frame_of.get(name)
    if index is None:
        index = frame_of[name] = len(frames)
        frame: dict = {"name": name}
        line = _LINE_NODE.match(name)
        if line:
            frame.update(file=line["file"], line=int(line["line"]))
        frames.append(frame)
    return index
