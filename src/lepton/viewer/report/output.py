"""Where the page goes: a file, written whole or not at all (no half page is ever left behind), or
stdout for `--html -`."""
from __future__ import annotations

import contextlib
import os
import tempfile
from typing import TextIO

from .errors import ReportError

STDOUT = "-"


def write_page(text: str, target: str, stdout: TextIO) -> str:
    """Writes the page; returns where it went, for the note on stderr."""
    if target == STDOUT:
        stdout.write(text)
        return "stdout"
    if os.path.isdir(target):
        raise ReportError(f"cannot write the report to '{target}': it is a folder; "
                          "name a file such as report.html")
    folder = os.path.dirname(os.path.abspath(target))
    try:
        fd, temporary = tempfile.mkstemp(prefix=".lepton-report-", suffix=".html", dir=folder)
    except OSError as err:
        raise ReportError(f"cannot write '{target}': {err.strerror or err}") from err
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        os.chmod(temporary, 0o666 & ~_umask())
        os.replace(temporary, target)
    except OSError as err:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise ReportError(f"cannot write '{target}': {err.strerror or err}") from err
    return target


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask
