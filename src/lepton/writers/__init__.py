"""Model -> file. One module per format, each with `render(profile) -> bytes`; this module picks the
format and writes, so that no reader ever sees half a profile and no profile is lost to a bad path.

A profile goes to the path asked for; if that fails (a folder that cannot be created or written, a
full disk), to the same file name in the current folder, then in the temporary folder, with one line
on stderr saying where it went and why; a fallback never replaces a file there (`name.1.hatchet`, ...
where `name.hatchet` exists). Only when every place fails is `WriteError` raised.
"""
from __future__ import annotations

import errno
import os
import sys
import tempfile

from ..errors import WriteError
from ..model.profile import Profile
from . import chrome_trace, hatchet, hatchet_msgpack

RENDERERS = {
    "hatchet": hatchet.render,
    "hatchet_msgpack": hatchet_msgpack.render,
    "chrome_trace": chrome_trace.render,
}


def write_atomic(path: str, payload: bytes) -> None:
    """Writes `payload` to `path` atomically and durably: a temporary file in the same folder,
    fsync'd, given the mode the umask gives new files (0644 under umask 022), renamed over `path`,
    then the folder fsync'd. On any failure the temporary file is removed and the error raised."""
    folder = os.path.dirname(os.path.abspath(path))
    _make_folder(folder)
    tmp = _temporary(folder, payload)
    try:
        os.replace(tmp, path)
    except BaseException:
        _remove(tmp)
        raise
    _fsync_folder(folder)


def write_new(folder: str, name: str, payload: bytes) -> str:
    """Writes `payload` as `write_atomic` does, to a file of `folder` that did not exist: `name`, or
    the first of `stem.1.ext`, `stem.2.ext`, ... that is free; returns its path. Never replaces a
    file: the name is taken with a hard link, which fails where the name exists."""
    _make_folder(folder)
    tmp = _temporary(folder, payload)
    try:
        stem, ext = os.path.splitext(name)
        for n in range(_FRESH_NAMES):
            path = os.path.join(folder, name if n == 0 else f"{stem}.{n}{ext}")
            if _take_name(tmp, path):
                break
        else:
            raise FileExistsError(errno.EEXIST, f"{name} and {_FRESH_NAMES - 1} numbered names exist")
    finally:
        _remove(tmp)
    _fsync_folder(folder)
    return path


_FRESH_NAMES = 1000


def _make_folder(folder: str) -> None:
    """`folder` and its parents, made where missing. A file in the way is "Not a directory" (what
    `open` says of `file/x/prof`), not makedirs' "File exists", which misleads for `file/prof`."""
    try:
        os.makedirs(folder, exist_ok=True)
    except FileExistsError as e:
        raise NotADirectoryError(errno.ENOTDIR, os.strerror(errno.ENOTDIR), folder) from e


def _take_name(tmp: str, path: str) -> bool:
    """Gives the file `tmp` the name `path` too, unless `path` exists (False)."""
    try:
        os.link(tmp, path)
        return True
    except FileExistsError:
        return False
    except OSError:  # no hard links on this file system: the name is taken if it is free now
        if os.path.lexists(path):
            return False
        os.replace(tmp, path)
        return True


def _temporary(folder: str, payload: bytes) -> str:
    """A new temporary file in `folder` holding `payload`, fsync'd, with the mode the umask gives
    new files; removed if any step fails."""
    fd, tmp = tempfile.mkstemp(prefix=".lepton-", suffix=".tmp", dir=folder)  # mode 0600
    try:
        try:
            _write_all(fd, payload)
            os.fchmod(fd, 0o666 & ~_umask())
            os.fsync(fd)
        finally:
            os.close(fd)
    except BaseException:
        _remove(tmp)
        raise
    return tmp


def _remove(path: str) -> None:
    try:
        os.unlink(path)
    except OSError:
        pass  # gone already, or the error that matters is the one being raised


def _write_all(fd: int, payload: bytes) -> None:
    view = memoryview(payload)
    while view:
        view = view[os.write(fd, view):]  # Linux writes at most 2 GiB a call


def _umask() -> int:
    """The process's umask, read without changing it where Linux shows it (changing it, even for
    an instant, would affect files other threads create meanwhile)."""
    try:
        with open("/proc/self/status", encoding="ascii", errors="replace") as f:
            for line in f:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def _fsync_folder(folder: str) -> None:
    """Makes the rename durable. Not every system can open or fsync a folder: best effort."""
    try:
        fd = os.open(folder, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def write_with_fallback(path: str, payload: bytes, replace: bool = True) -> str:
    """Writes `payload` to `path`, else to its file name in the current folder, else in the
    temporary folder; returns the path written. A fallback prints one line on stderr saying where
    the profile went and why `path` failed; `WriteError` names every path tried when all fail.
    `replace=False`: not over an existing `path` either (`name.1.ext`, ... beside it)."""
    try:
        if replace:
            write_atomic(path, payload)
            return path
        return write_new(os.path.dirname(os.path.abspath(path)), os.path.basename(path), payload)
    except OSError as e:
        failures = [(path, e)]
    tried = {os.path.abspath(path)}
    for folder in _fallback_folders():
        if isinstance(folder, OSError):  # no usable temporary folder
            failures.append(("the temporary folder", folder))
            continue
        candidate = os.path.join(folder, os.path.basename(path))
        if candidate in tried:
            continue
        tried.add(candidate)
        try:
            candidate = write_new(folder, os.path.basename(path), payload)
        except OSError as e:
            failures.append((candidate, e))
            continue
        print(f"lepton: could not write {path} ({_reason(failures[0][1])}); profile written to {candidate}",
              file=sys.stderr)
        return candidate
    error = WriteError("could not write the profile anywhere: "
                       + "; ".join(f"{p} ({_reason(e)})" for p, e in failures))
    error.errno = failures[0][1].errno
    raise error from failures[0][1]


def _fallback_folders():
    """The current folder, then the temporary one; the error instead where there is none
    (`tempfile.gettempdir` raises FileNotFoundError where no candidate folder can be written)."""
    try:
        yield os.getcwd()
    except OSError:  # the current folder was removed
        pass
    try:
        folder = tempfile.gettempdir()
    except OSError as e:
        yield e
    else:
        yield folder


def _reason(error: OSError) -> str:
    return error.strerror or str(error)


def write_over(profile: Profile, name: str, fmt: str, phase_suffix: str, own: str) -> str:
    """Writes `profile` as `write` does, where an earlier write of the same run (a checkpoint) fell
    back to the file `own`: its own file if it can be written now, else over `own` (with one line
    saying so), else as `write_with_fallback` does."""
    path = output_path(name, fmt, phase_suffix)
    payload = RENDERERS[fmt](profile)
    try:
        write_atomic(path, payload)
        return path
    except OSError as e:
        reason = _reason(e)
    try:
        write_atomic(own, payload)
    except OSError:
        return write_with_fallback(path, payload)
    print(f"lepton: could not write {path} ({reason}); profile written to {own}", file=sys.stderr)
    return own


def output_path(name: str, fmt: str, phase_suffix: str = "") -> str:
    """`name` + phase suffix + `.fmt`; a name already ending in `.fmt` is not extended twice."""
    ext = "." + fmt
    name = name.removesuffix(ext)
    return name + phase_suffix + ext


def write(profile: Profile, name: str, fmt: str, phase_suffix: str = "", replace: bool = True) -> str:
    """Renders and writes `profile`; returns the file written, which is not the one asked for after
    a fallback or with `replace=False` (see `write_with_fallback`). "-" or "" writes to stdout and
    returns "-"."""
    payload = RENDERERS[fmt](profile)
    if name in ("", "-"):
        out = sys.stdout.buffer if hasattr(sys.stdout, "buffer") else None
        if out is None:
            sys.stdout.write(payload.decode("utf-8", "replace"))
        else:
            out.write(payload)
            out.flush()
        return "-"
    return write_with_fallback(output_path(name, fmt, phase_suffix), payload, replace)
