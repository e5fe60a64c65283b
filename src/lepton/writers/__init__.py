"""Model -> file. One module per format, each with `render(profile) -> bytes`; this module picks the
format and writes atomically, so that no reader ever sees half a profile."""
from __future__ import annotations

import os
import sys
import tempfile

from ..model.profile import Profile
from . import chrome_trace, hatchet, hatchet_msgpack

RENDERERS = {
    "hatchet": hatchet.render,
    "hatchet_msgpack": hatchet_msgpack.render,
    "chrome_trace": chrome_trace.render,
}


def write_atomic(path: str, payload: bytes) -> None:
    """Writes `payload` to `path` through a temporary file in the same folder and a rename."""
    folder = os.path.dirname(os.path.abspath(path))
    os.makedirs(folder, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=".lepton-", suffix=".tmp", dir=folder)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(payload)
        os.replace(tmp, path)
    except BaseException:  # noqa: BLE001  (removes the temporary file, then re-raises)
        try:
            os.unlink(tmp)
        finally:
            raise


def output_path(name: str, fmt: str, phase_suffix: str = "") -> str:
    """`name` + phase suffix + `.fmt`; a name already ending in `.fmt` is not extended twice."""
    ext = "." + fmt
    name = name.removesuffix(ext)
    return name + phase_suffix + ext


def write(profile: Profile, name: str, fmt: str, phase_suffix: str = "") -> str:
    """Renders and writes `profile`; returns the file written ("-" or "" writes to stdout)."""
    payload = RENDERERS[fmt](profile)
    if name in ("", "-"):
        out = sys.stdout.buffer if hasattr(sys.stdout, "buffer") else None
        if out is None:
            sys.stdout.write(payload.decode("utf-8", "replace"))
        else:
            out.write(payload)
            out.flush()
        return "-"
    path = output_path(name, fmt, phase_suffix)
    write_atomic(path, payload)
    return path
