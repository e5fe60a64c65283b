"""The lines panel of an instruction-sampling profile: per sampled kernel, its hottest source lines
(share of the kernel's samples, top stall reasons, the line's text where the file is readable) and
its hottest instructions where the profile keeps them. The numbers are `lepton-view --lines` and
`--sass`'s own (viewer.lines, viewer.sass), read from the same file."""
from __future__ import annotations

import re
import shutil

from ..demangle import demangle
from ..filters import format_name
from ..lines import sampled_kernels, source_text, top_stalls
from ..load import ProfileError, load_document
from ...model.hatchet_names import SASS_CODE_KEY as CODE_KEY
from ..sass import with_text

MAX_KERNELS, MAX_LINES, MAX_STALLS, MAX_INSTRUCTIONS = 50, 20, 3, 20


def lines_panel(path: str, include: str | None, exclude: str | None) -> dict | None:
    """The panel's data, or None where the file has no samples. -i / -e pick kernels by their call
    path, as `--lines` does with -i."""
    try:
        root = load_document(path)[0]
    except ProfileError:  # nested deeper than the decoders go: the icicle still shows the samples
        return None
    kernels = [k for k in sampled_kernels(root) if k.samples > 0]
    if include:
        kernels = [k for k in kernels if _matches(include, k)]
    if exclude:
        kernels = [k for k in kernels if not _matches(exclude, k)]
    run = root.get("lepton") if isinstance(root.get("lepton"), dict) else {}
    sass, notes = _instructions(run)
    if not kernels:
        return None
    return {"kernels": [_kernel(k, sass) for k in kernels[:MAX_KERNELS]],
            "left_out": max(len(kernels) - MAX_KERNELS, 0), "notes": notes}


def _matches(pattern: str, kernel) -> bool:
    """The kernel's call path (as in the file or demangled) or one of its lines matches."""
    names = [kernel.path, demangle(kernel.path), *(name for name, _ in kernel.lines)]
    return any(re.search(pattern, name) for name in names)


def _kernel(kernel, sass: dict[str, list]) -> dict:
    function = kernel.path.rsplit("/", 1)[-1]
    rows = sass.get(function, [])
    total = sum(samples for _, samples, _ in rows) or 1
    return {"path": "/".join(demangle(part) for part in kernel.path.split("/")), "samples": kernel.samples,
            "lines": [_line(name, metrics, kernel.samples) for name, metrics in kernel.lines[:MAX_LINES]],
            "more_lines": max(len(kernel.lines) - MAX_LINES, 0),
            "sass": [{"offset": offset, "share": samples / total, "samples": samples, "text": text}
                     for offset, samples, text in rows[:MAX_INSTRUCTIONS]]}


def _line(name: str, metrics: dict, kernel_samples: int) -> dict:
    samples = metrics.get("num_samples", 0)
    return {"name": name, "short": format_name(name, "file_function_line"), "samples": samples,
            "share": samples / kernel_samples if kernel_samples else 0.0,
            "stalls": [[reason, count / samples if samples else 0.0]
                       for reason, count in top_stalls(metrics, MAX_STALLS)],
            "text": source_text(name)}


def _instructions(run: dict) -> tuple[dict[str, list], list[str]]:
    """The kept hottest instructions, with their text from nvdisasm where it is on PATH."""
    sass = run.get("sass")
    if not isinstance(sass, dict) or not sass:
        return {}, []
    codes = run.get(CODE_KEY)
    return with_text(sass, codes if isinstance(codes, dict) else {}, shutil.which("nvdisasm"))
