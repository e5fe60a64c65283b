"""`lepton [options] TARGET [args]`: run a script, a module or pytest under one profiling session.

Parse -> typed `Options` -> `run`. The target runs in this process as `__main__`, with the
`sys.argv`, `sys.path[0]` and exit code python would give it, and the profile is written however it
ends: a normal return, an exception (exit 1), `sys.exit(n)` (exit n), Ctrl-C (exit 130) or SIGTERM
(exit 143). Triton 3.6's `proton` CLI writes nothing in the last four cases, which are the runs a
user most wants to look at.
"""
from __future__ import annotations

import argparse
import contextlib
import importlib
import importlib.util
import os
import re
import runpy
import signal
import sys
import traceback
import zipfile
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from types import FrameType
from typing import Any, Literal

from .. import __version__, api, writers
from ..backends.base import backend_names
from ..runtime import exit_signals
from ..errors import LeptonError, UsageError, WriteError
from ..model.profile import RunCommand
from ..runtime.session import CONTEXTS, DATA_KINDS

EXIT_OK = 0
EXIT_ERROR = 1  # an uncaught exception, as python
EXIT_USAGE = 2  # bad command line, as python and argparse
EXIT_SIGINT = 128 + signal.SIGINT  # 130, what a shell reports for Ctrl-C
_Handler = Callable[[int, FrameType | None], Any] | int | None  # what signal.getsignal returns

# torchrun sets RANK; Open MPI's mpirun sets OMPI_COMM_WORLD_RANK. The first one set wins.
RANK_VARIABLES = ("RANK", "OMPI_COMM_WORLD_RANK")

TargetKind = Literal["script", "module", "pytest"]
USAGE = ("lepton [options] script.py [args]\n"
         "       lepton [options] pytest [args]\n"
         "       lepton [options] python -m module [args]")
_PYTHON_NAME = re.compile(r"python(\d+(\.\d+)*)?(\.exe)?$")


@dataclass(frozen=True)
class Target:
    """What to run: a script path (file, directory or zip), a module name, or pytest."""

    kind: TargetKind
    name: str
    args: tuple[str, ...]


@dataclass(frozen=True)
class Options:
    name: str  # output path without extension; absolute, rank suffix applied
    backend: str | None  # None: chosen by `lepton.start`
    context: Literal["shadow", "python"]
    data: Literal["tree", "trace"]
    mode: str | None
    hook: Literal["triton"] | None
    print_metrics: str | None
    target: Target


# -- parse --------------------------------------------------------------------------------------------
class _Parser(argparse.ArgumentParser):
    def error(self, message: str):  # argparse prints usage + message on 2 lines; we want one line
        raise UsageError(message)


# (flags, argparse keywords). Every option takes a value, which the target splitter relies on.
_OPTIONS: tuple[tuple[tuple[str, ...], dict], ...] = (
    (("-n", "--name"), {"metavar": "NAME", "help": "output path without extension (default: proton, "
                                                   "relative to the current directory); '-' writes the "
                                                   "profile to stdout and the program's stdout to stderr"}),
    (("-b", "--backend"), {"type": str.lower, "choices": backend_names(),
                           "help": "profiler backend (default: cupti where a GPU is usable)"}),
    (("-c", "--context"), {"type": str.lower, "choices": CONTEXTS, "default": "shadow",
                           "help": "context source (default: shadow)"}),
    (("-m", "--mode"), {"metavar": "MODE", "help": "backend mode, e.g. pcsampling"}),
    (("-d", "--data"), {"type": str.lower, "choices": DATA_KINDS, "default": "tree",
                        "help": "tree (hatchet file) or trace (chrome trace) (default: tree)"}),
    (("-k", "--hook"), {"type": str.lower, "choices": ("triton",), "help": "launch hook"}),
    (("--print",), {"dest": "print_metrics", "metavar": "METRICS",
                    "help": "print the viewer's tree of METRICS (e.g. time/ms) when the run ends"}),
)
_VALUE_FLAGS = frozenset(flag for flags, _ in _OPTIONS for flag in flags)


def _check_print_metrics(metrics: str) -> None:
    """`--print`'s metric list against the viewer's grammar, before the target runs (imported
    here only: the viewer loads numpy)."""
    from ..viewer.derive import MetricError, check_metric_specs

    try:
        check_metric_specs(metrics)
    except MetricError as e:
        raise UsageError(f"--print: {e}") from None


def _parser() -> _Parser:
    p = _Parser(prog="lepton", usage=USAGE, allow_abbrev=False,
                description="Run a Python program under the Lepton profiler; the profile is written "
                            "however the program ends.")
    for flags, kwargs in _OPTIONS:
        p.add_argument(*flags, **kwargs)
    p.add_argument("--version", action="version", version=f"lepton {__version__}")
    return p


def split_target(argv: Sequence[str]) -> tuple[list[str], list[str]]:
    """Splits `argv` into lepton's options and the target's words: the target starts at the first
    word that is not an option or an option's value (or after `--`). So `lepton -m pcsampling
    python -m mod` gives `-m` to lepton once and to python once."""
    i = 0
    while i < len(argv):
        word = argv[i]
        if word == "--":
            return list(argv[:i]), list(argv[i + 1:])
        if not word.startswith("-") or word == "-":
            return list(argv[:i]), list(argv[i:])
        i += 2 if word in _VALUE_FLAGS else 1
    return list(argv), []


def parse_args(argv: Sequence[str]) -> Options:
    """The typed options, or `UsageError` (one line) for anything wrong on the command line.
    `-h` and `--version` print and raise `SystemExit(0)`, as argparse does."""
    own, words = split_target(argv)
    ns = _parser().parse_args(own)
    target = parse_target(words)
    if ns.print_metrics is not None and ns.data != "tree":
        raise UsageError("--print needs --data tree (the viewer reads tree profiles)")
    if ns.print_metrics is not None:
        _check_print_metrics(ns.print_metrics)
    name = ns.name if ns.name is not None else api.DEFAULT_PROFILE_NAME
    if name in ("", "-"):
        if ns.print_metrics is not None:
            raise UsageError("--print needs a file name (-n), not '-' (stdout)")
    else:
        # Resolved now, so a script that changes directory still writes where lepton was started.
        name = ranked_name(os.path.abspath(name), rank_from_env(os.environ))
    return Options(name=name, backend=ns.backend, context=ns.context, data=ns.data, mode=ns.mode,
                   hook=ns.hook, print_metrics=ns.print_metrics, target=target)


def parse_target(words: Sequence[str]) -> Target:
    if not words:
        raise UsageError("no target: give a script, 'pytest [args]' or 'python -m module [args]'")
    head, rest = words[0], tuple(words[1:])
    base = os.path.basename(head)
    if base in ("pytest", "py.test"):
        if importlib.util.find_spec("pytest") is None:
            raise UsageError(f"pytest is not installed for {sys.executable}")
        return Target("pytest", head, rest)
    if _PYTHON_NAME.match(base):
        return _python_target(rest)
    return _script_target(head, rest)


def _python_target(rest: tuple[str, ...]) -> Target:
    """`python -m MODULE args` (also `-mMODULE`) or `python SCRIPT args`: python runs in-process,
    as lepton's own interpreter."""
    if rest and rest[0].startswith("-m"):
        module = rest[0][2:] or (rest[1] if len(rest) > 1 else "")
        args = rest[1:] if rest[0] != "-m" else rest[2:]
        if not module:
            raise UsageError("python -m: a module name is needed")
        _check_module(module)
        return Target("module", module, args)
    if rest and not rest[0].startswith("-"):
        return _script_target(rest[0], rest[1:])
    raise UsageError("a python target must be 'python -m MODULE [args]' or 'python SCRIPT [args]'")


def _script_target(path: str, args: tuple[str, ...]) -> Target:
    if not os.path.exists(path):
        raise UsageError(f"can't open file {path!r}: No such file or directory")
    if os.path.isdir(path) and not os.path.isfile(os.path.join(path, "__main__.py")):
        raise UsageError(f"can't find '__main__' module in {path!r}")
    return Target("script", path, args)


def _check_module(module: str) -> None:
    """Checks the top-level package is findable from where `python -m` would look first (the
    current directory). Submodules are left to runpy: finding them would import their parents
    before profiling starts."""
    if module.startswith("."):
        raise UsageError(f"relative module names are not supported: {module}")
    top = module.partition(".")[0]
    saved = sys.path[:]
    sys.path.insert(0, os.getcwd())
    try:
        found = importlib.util.find_spec(top) is not None
    finally:
        sys.path[:] = saved
    if not found:
        raise UsageError(f"No module named {top}")


def rank_from_env(env) -> str | None:
    """The process's rank from the launcher's environment, or None for a single process."""
    for var in RANK_VARIABLES:
        value = env.get(var, "").strip()
        if value:
            if not value.isdigit():
                raise UsageError(f"{var}={value!r} is not a rank (a non-negative integer)")
            return str(int(value))
    return None


def ranked_name(name: str, rank: str | None) -> str:
    """`NAME.rank<R>`, so that no two processes of a job write one file. A name that already ends
    in a format's extension keeps it last: `out.hatchet` -> `out.rank1.hatchet`."""
    if rank is None:
        return name
    for fmt in writers.RENDERERS:
        ext = "." + fmt
        if name.endswith(ext):
            return f"{name[:-len(ext)]}.rank{rank}{ext}"
    return f"{name}.rank{rank}"


# -- run ----------------------------------------------------------------------------------------------
def main(argv: Sequence[str] | None = None) -> int:
    """Runs `lepton` with `argv` (default: `sys.argv[1:]`); returns the exit code."""
    try:
        opts = parse_args(sys.argv[1:] if argv is None else argv)
    except UsageError as e:
        _say(f"error: {e}")
        return EXIT_USAGE
    except SystemExit as e:  # -h, --version
        return _exit_code(e.code)
    return run(opts)


def console_main() -> None:
    sys.exit(main())


def run(opts: Options) -> int:
    """Starts the session, runs the target, writes the profile(s); returns the exit code: the
    target's, or the viewer's when the target succeeded and `--print` failed."""
    sessions = api.cli_sessions()
    try:
        sid = api.start(opts.name, context=opts.context, data=opts.data, backend=opts.backend,
                        mode=opts.mode, hook=opts.hook)
    except UsageError as e:
        _say(f"error: {e}")
        return EXIT_USAGE
    except (LeptonError, ImportError, OSError) as e:  # no CUPTI, another profiler holds it, ...
        _say(f"error: could not start profiling: {e}")
        return EXIT_ERROR
    if sid is None:
        _say("profiling is disabled (LEPTON_DISABLE or TRITON_PROTON_DISABLE); no profile is written")
    with RunSignals() as signals:
        with sessions.pinned(sid), program_stdout_to_stderr(opts.name in ("", "-")):
            code = run_target(opts.target, on_end=signals.defer)
        sessions.record_command(target_command(opts.target))
        files, write_failed = _finalize(sid, sessions)
    received = signals.received
    if code == EXIT_OK and write_failed:
        code = EXIT_ERROR
    if code == EXIT_OK and received:
        code = EXIT_SIGINT if signal.SIGINT in received else exit_signals.exit_status(received[0])
    if opts.print_metrics is not None and files:
        printed = _print_trees(opts.print_metrics, files)
        code = code or printed
    return code


@contextlib.contextmanager
def program_stdout_to_stderr(active: bool) -> Iterator[None]:
    """With `-n -` stdout carries the profile alone, so while the target runs its stdout goes to
    stderr: file descriptor 1, so that C libraries and child processes follow too."""
    if not active:
        yield
        return
    _flush_stdout()
    try:
        saved = os.dup(1)
        os.dup2(2, 1)
    except OSError:  # no stdout or stderr to move: nothing could mix
        yield
        return
    try:
        yield
    finally:
        _flush_stdout()  # what the target left in Python's buffer is its output: to stderr too
        os.dup2(saved, 1)
        os.close(saved)


def _flush_stdout() -> None:
    try:
        sys.stdout.flush()
    except (OSError, ValueError, AttributeError):  # closed or replaced by the target
        pass


def target_command(target: Target) -> RunCommand:
    """The command line that runs the target without lepton, as the profile records it (for
    `lepton-view --ncu`): python, then what `python` would be given."""
    python = sys.executable or "python"
    if target.kind == "script":
        words = [target.name]
    else:
        words = ["-m", target.name]  # a module, or pytest
    return RunCommand((python, *words, *target.args), os.getcwd())


def run_target(target: Target, on_end=lambda: None) -> int:
    """Runs the target as `__main__`; returns its exit code. Never raises. `on_end()` is called the
    moment the target ends, however it ends."""
    try:
        with _target_environment(target):
            try:
                return _RUNNERS[target.kind](target)
            finally:
                on_end()
    except SystemExit as e:
        return _exit_code(e.code)
    except KeyboardInterrupt as e:
        _print_exception(e)
        return EXIT_SIGINT
    except BaseException as e:  # noqa: BLE001  (printed as python would, then exit 1)
        _print_exception(e)
        return EXIT_ERROR


def _run_script(target: Target) -> int:
    # An absolute path, as python gives `__file__` and traceback frames since 3.9. run_path also
    # makes it sys.argv[0], where python would keep the path as typed: same basename, same file.
    runpy.run_path(os.path.abspath(target.name), run_name="__main__")
    return EXIT_OK


def _run_module(target: Target) -> int:
    # alter_sys sets sys.argv[0] to the module's file, as `python -m` does.
    runpy.run_module(target.name, run_name="__main__", alter_sys=True)
    return EXIT_OK


def _run_pytest(target: Target) -> int:
    import pytest

    return int(pytest.main(list(target.args)))


_RUNNERS = {"script": _run_script, "module": _run_module, "pytest": _run_pytest}


@contextlib.contextmanager
def _target_environment(target: Target) -> Iterator[None]:
    """`sys.argv` and `sys.path[0]` as python gives them to the target; restored afterwards."""
    if target.kind == "script":
        path = os.path.realpath(target.name)  # python resolves symbolic links here too
        path0 = path if os.path.isdir(path) or zipfile.is_zipfile(path) else os.path.dirname(path)
        argv0 = target.name
    else:  # `python -m` and `python -m pytest` put the current directory first
        path0, argv0 = os.getcwd(), ("-m" if target.kind == "module" else target.name)
    saved_argv, saved_path = sys.argv, sys.path[:]
    sys.argv = [argv0, *target.args]
    if sys.path:
        sys.path[0] = path0
    else:
        sys.path.append(path0)
    try:
        yield
    finally:
        sys.argv, sys.path[:] = saved_argv, saved_path


class RunSignals:
    """What SIGINT, SIGTERM and SIGHUP do during a run (a context manager around it).

    While the target runs, SIGTERM raises `SystemExit(143)` and SIGHUP (the terminal closed, the
    ssh connection dropped) `SystemExit(129)`, so finally-blocks run and the profile is written;
    SIGINT raises KeyboardInterrupt as usual. From `defer()` (called the moment the
    target ends) until the profile is written, both are only recorded in `received`: torchrun sends
    SIGTERM to every rank when one fails, which may be while the others are writing. Handlers are
    swapped rather than signals masked because a mask is per thread and the target's threads, or
    the backend's, would still take the signal. A signal the launcher set to be ignored stays
    ignored; off the main thread (where `signal.signal` cannot be called) nothing changes. Meanwhile
    the handlers a session installs in plain Python (`lepton.runtime.exit_signals`) stand aside."""

    _SIGNALS = (signal.SIGINT, *exit_signals.TERMINATING)

    def __init__(self) -> None:
        self.received: list[int] = []
        self._saved: dict[int, _Handler] = {}

    def __enter__(self) -> RunSignals:  # noqa: PYI034  (typing.Self needs 3.11; we support 3.10)
        exit_signals.hold()
        if exit_signals.on_main_thread():
            self._saved = {s: signal.getsignal(s) for s in self._SIGNALS
                           if signal.getsignal(s) is not signal.SIG_IGN}
        for sig in exit_signals.TERMINATING:
            if sig in self._saved:
                signal.signal(sig, exit_signals.terminate)
        return self

    def _record(self, signum, frame) -> None:
        self.received.append(signum)

    def defer(self) -> None:
        for sig in self._saved:
            signal.signal(sig, self._record)

    def __exit__(self, *exc) -> None:
        for sig, handler in self._saved.items():
            signal.signal(sig, signal.SIG_DFL if handler is None else handler)
        exit_signals.release()


def _exit_code(code) -> int:
    """`SystemExit.code` as python turns it into an exit status."""
    if code is None:
        return EXIT_OK
    if isinstance(code, int):
        return code
    print(code, file=sys.stderr)
    return EXIT_ERROR


def _print_exception(exc: BaseException) -> None:
    """Prints `exc` through `sys.excepthook`, as python does for an uncaught exception, without
    the leading frames of this runner and runpy."""
    tb = exc.__traceback__
    while tb is not None and tb.tb_frame.f_globals.get("__name__") in (__name__, "runpy"):
        tb = tb.tb_next
    sys.stdout.flush()
    # The hook prints exc.__traceback__ when the exception has one, whatever `tb` it is given.
    sys.excepthook(type(exc), exc.with_traceback(tb), tb)


# -- write --------------------------------------------------------------------------------------------
def _finalize(sid: int | None, sessions: api.CliSessions) -> tuple[list[str], bool]:
    """Finalizes the CLI's session and any the target started and left open (as Proton's CLI
    finalizes all); says on stderr where each profile went. Returns (files written, any failure)."""
    if sessions.finalized_by_target(sid):
        _say("the script finalized the profiling session itself; its profile was written then")
    ids = sessions.open_ids(sid)
    files: list[str] = []
    failed = False
    for i in ids:
        try:
            session_files = api.finalize(i)
        except WriteError as e:  # every place was tried, and the message names each: no traceback
            _say(f"error: could not write the profile of session {i}: {e}")
            failed = True
            continue
        except Exception:  # noqa: BLE001  (shown in full; the exit code says it failed)
            _say(f"error: could not write the profile of session {i}:")
            traceback.print_exc()
            failed = True
            continue
        files += [f for f in session_files if f != "-"]
        shown = ["stdout" if f == "-" else f for f in session_files]
        _say(f"profile{'s' if len(shown) > 1 else ''} written to {', '.join(shown)}")
    return files, failed


def _print_trees(metrics: str, files: list[str]) -> int:
    """`--print`: the viewer's tree of each file. The viewer is optional: without it, one note."""
    try:
        view = importlib.import_module("lepton.cli.view")
    except ImportError as e:
        _say(f"--print: the viewer is not available ({e}); run: lepton-view -m {metrics} {files[0]}")
        return EXIT_OK
    code = EXIT_OK
    for path in files:
        sys.stdout.flush()
        try:
            printed = view.main(["-m", metrics, path])
        except SystemExit as e:  # the viewer's argparse, e.g. on `--print=-x`
            printed = _exit_code(e.code)
        except Exception:  # noqa: BLE001  (shown in full; the exit code says it failed)
            _say(f"error: --print failed on {path}:")
            traceback.print_exc()
            printed = EXIT_ERROR
        code = code or printed
    return code


def _say(message: str) -> None:
    sys.stdout.flush()
    print(f"lepton: {message}", file=sys.stderr, flush=True)
