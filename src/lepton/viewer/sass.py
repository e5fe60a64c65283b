"""The hottest instructions (SASS) of sampled kernels, as a `mode="pcsampling"` profile keeps them
(under ROOT's `lepton` key: `sass`: function -> [[PC offset, samples, instruction], ...]; the text
is there where `nvdisasm` was on PATH when the profile was written)."""
from __future__ import annotations

import re
import sys

from .escape import printable
from .load import ProfileError, load_document


def render(sass: dict[str, list], pattern: str | None = None, top: int = 20) -> str:
    """Each kernel matching `pattern` (a regex searched in its name): its `top` hottest
    instructions with their share of the samples the profile kept for it."""
    out = []
    for function, rows in sass.items():
        if pattern and not re.search(pattern, function):
            continue
        total = sum(samples for _, samples, _ in rows) or 1
        out.append(f"{printable(function)}  ({total} samples in its {len(rows)} hottest instructions)")
        for offset, samples, text in rows[:top]:
            out.append(f"  {100 * samples / total:5.1f}%  /*{offset:04x}*/  {printable(text) or '(nvdisasm was not on PATH)'}")
        out.append("")
    return "\n".join(out)


def main(path: str, pattern: str | None, top: int) -> int:
    try:
        root = load_document(path)[0]
    except ProfileError as e:
        print(f"lepton-view: error: {e}", file=sys.stderr)
        return 2
    sass = (root.get("lepton") or {}).get("sass") if isinstance(root, dict) else None
    if not sass:
        print("lepton-view: this profile keeps no instructions (record it with mode=\"pcsampling\")",
              file=sys.stderr)
        return 1
    text = render(sass, pattern, top)
    if not text:
        print(f"lepton-view: no sampled kernel matches {pattern!r}", file=sys.stderr)
        return 1
    sys.stdout.write(text)
    return 0
