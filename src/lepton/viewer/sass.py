"""`lepton-view --sass`: the hottest instructions (SASS) of sampled kernels, as a
`mode="pcsampling"` profile keeps them in its run's metadata (`model.hatchet_names.SASS_KEY`:
function -> [[PC offset, samples, instruction], ...]). The text is disassembled here from the
kernel's code, which the profile keeps beside (`SASS_CODE_KEY`); profiles written before Lepton
kept code carry the text in the rows."""
from __future__ import annotations

import re
import shutil
from typing import TextIO

from ..model.hatchet_names import RUN_METADATA_KEY, SASS_CODE_KEY, SASS_KEY
from .escape import printable
from .filters import compiled
from .load import load_document
from .names import NameStyle, readable_names
from .nvdisasm import GET_NVDISASM, disassemble, unpack


def with_text(sass: dict[str, list], codes: dict, exe: str | None,
              shown: dict[str, str] | None = None) -> tuple[dict[str, list], list[str]]:
    """`sass` with the text of each row that has none, disassembled with `exe` (nvdisasm) from the
    code `codes` keeps for its kernel, once per kernel; and why some text is missing, each once
    (naming kernels as `shown` maps them)."""
    filled, notes = {}, []
    for function, rows in sass.items():
        name = (shown or {}).get(function, function)
        filled[function] = rows
        if all(text for _, _, text in rows):
            continue
        kept = unpack(codes.get(function))
        if kept is None:
            notes.append(f"the profile keeps no code for {printable(name)}: its instructions have no text")
        elif exe is None:
            notes.append(GET_NVDISASM)
        else:
            instructions, why = disassemble(exe, *kept)
            if why:
                notes.append(f"nvdisasm could not read the code of {printable(name)}: {printable(why)}")
            filled[function] = [[offset, samples, text or instructions.get(offset, "")]
                                for offset, samples, text in rows]
    return filled, list(dict.fromkeys(notes))


def render(sass: dict[str, list], pattern: str | None = None, top: int = 20,
           shown: dict[str, str] | None = None) -> str:
    """Each kernel matching `pattern` (a regex searched in its name): its `top` hottest
    instructions with their share of the samples the profile kept for it, under its name as
    `shown` maps it (demangled), else as in the file."""
    out = []
    for function, rows in sass.items():
        if pattern and not re.search(pattern, function):
            continue
        total = sum(samples for _, samples, _ in rows) or 1
        name = (shown or {}).get(function, function)
        out.append(f"{printable(name)}  ({total} samples in its {len(rows)} hottest instructions)")
        for offset, samples, text in rows[:top]:
            out.append(f"  {100 * samples / total:5.1f}%  /*{offset:04x}*/  {printable(text) or '(no text)'}")
        out.append("")
    return "\n".join(out)


def show_sass(path: str, pattern: str, stdout: TextIO, stderr: TextIO, style: NameStyle = "short",
              top: int = 20) -> int:
    """`lepton-view --sass REGEX`: the `top` hottest instructions of each sampled kernel whose name,
    as in the file or as shown (`style`), matches `pattern`; exit 1 when the profile keeps none or
    none matches. A file that is no profile raises ProfileError."""
    root = load_document(path)[0]
    run = (root.get(RUN_METADATA_KEY) or {}) if isinstance(root, dict) else {}
    sass = run.get(SASS_KEY)
    if not sass:
        print("lepton-view: this profile keeps no instructions (record it with mode=\"pcsampling\")",
              file=stderr)
        return 1
    wanted = compiled(pattern)
    names = dict(zip(sass, readable_names(list(sass), style)))
    shown = {function: rows for function, rows in sass.items()
             if wanted.search(function) or wanted.search(names[function])}
    if not shown:
        print(f"lepton-view: no sampled kernel matches {pattern!r}", file=stderr)
        return 1
    codes = run.get(SASS_CODE_KEY)
    shown, notes = with_text(shown, codes if isinstance(codes, dict) else {}, shutil.which("nvdisasm"), names)
    for note in notes:
        print(f"lepton-view: {note}", file=stderr)
    stdout.write(render(shown, None, top, names))
    return 0
