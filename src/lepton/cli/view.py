"""lepton-view: proton-viewer's command line, without pandas or hatchet.

Parse (once) -> typed `ViewOptions` -> the viewer's pipeline (`viewer.pipeline.show`) -> exit code:
0 shown, 2 for a bad file, metric, pattern or argument (with one line on stderr saying what is
wrong), 1 where `--sass` or `--lines` find nothing to show or `--fail-above` finds a node slower.
"""
from __future__ import annotations

import argparse
import contextlib
import glob
import os
import sys
import warnings
from collections.abc import Iterator, Sequence
from typing import TextIO

from .. import __version__
from ..model.gc_pause import gc_paused
from ..viewer.derive import MetricError
from ..viewer.escape import printable
from ..viewer.filters import NAME_FORMATS, FilterError
from ..viewer.load import ProfileError, ProfileWarning
from ..viewer.next_tool import HandoffError
from ..viewer.pipeline import EXIT_BAD_INPUT, EXIT_OK, PROG, OptionError, ViewOptions, list_text, show
from ..viewer.render import DEFAULT_MAX_NODES

__all__ = ["ViewOptions", "build_parser", "console_main", "list_text", "main", "parse_options"]

BAD_INPUT = (ProfileError, MetricError, FilterError, HandoffError, OptionError)


METRICS_HELP = """Metrics to show, comma separated (default: the first the profile has of num_samples,
cycles, time/ms and cpu_time/ms). Names are case-insensitive and may leave out the unit ("time"
for "time (ns)"); a node without a value shows "-". Derived metrics:
- time/s, time/ms, time/us, time/ns: time
- avg_time/<unit>: time / count; cpu_time/<unit>, avg_cpu_time/<unit>: cpu_timed_scope time
- flop[8|16|32|64]/s, gflop.../s, tflop.../s: flops / time
- byte/s, gbyte/s, tbyte/s: bytes / time
- util: max(flops / peak flops, bytes / peak bandwidth) / time, per kernel
- <metric>/%%: share of ROOT (summed metrics) or of the column total (per-node metrics)
- <metric>/kernel%%: an instrumented scope's share of its kernel (the kernel's top-level scopes = 100%%)
Metrics on ROOT are summed over subtrees; the others are per node."""


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=PROG, formatter_class=argparse.RawTextHelpFormatter,
        description="Show a Proton/Lepton profile (hatchet JSON or hatchet MessagePack) as a tree.")
    parser.add_argument("file", nargs="+",
                        help="the profile: .hatchet, .json or .hatchet_msgpack; several files (or a quoted\n"
                             "glob such as 'runs/ddp.rank*.hatchet') are the ranks of one run: per node\n"
                             "the min / median / max over ranks and the slowest rank")
    parser.add_argument("--merge", choices=("sum", "mean"),
                        help="with several files: show them as one profile, metrics summed or averaged")
    parser.add_argument("-l", "--list", action="store_true", help="list the metrics in the profile")
    parser.add_argument("-m", "--metrics", help=METRICS_HELP)
    parser.add_argument("-i", "--include", help="keep only the paths through frames matching this regex")
    parser.add_argument("-e", "--exclude", help="drop the frames matching this regex and their subtrees")
    parser.add_argument("-t", "--threshold", type=float,
                        help="drop frames whose first metric is below this value")
    parser.add_argument("-d", "--depth", type=int, default=100, help="tree depth to show (default 100)")
    parser.add_argument("-f", "--format", choices=NAME_FORMATS, default="full",
                        help="how to show file:line@function frame names (default full)")
    parser.add_argument("--print-sorted", "--print_sorted", dest="print_sorted", action="store_true",
                        help="after the tree, list the frames sorted by the first metric")
    parser.add_argument("-diff", "--diff-profile", dest="diff_profile", metavar="A",
                        help="show FILE minus A (B − A, B being FILE, as proton-viewer subtracts), with\n"
                             "each node's change in percent of A and the nodes only one profile has")
    parser.add_argument("--fail-above", type=_percent, metavar="PCT",
                        help="with -diff: exit 1 when a node shown (ROOT, the total, among them) got\n"
                             "slower than in A by more than PCT percent of the first -m metric (a node\n"
                             "only FILE has counts as slower), naming the worst on stderr; for CI")
    color = parser.add_mutually_exclusive_group()
    color.add_argument("--no-color", dest="color", action="store_const", const="never",
                       help="never colour the output (default: colour on a terminal)")
    color.add_argument("--color", dest="color", action="store_const", const="always",
                       help="colour the output even when it is not a terminal")
    names = parser.add_mutually_exclusive_group()
    names.add_argument("--mangled", action="store_true", help="show C++ kernel names as they are, not demangled")
    names.add_argument("--full-names", action="store_true",
                       help="show C++ kernel names demangled in full (default: demangled, with template\n"
                            "arguments and parameters folded: at::native::elementwise_kernel<…>)")
    parser.add_argument("--output", choices=("tree", "csv", "json", "speedscope", "folded"), default="tree",
                        help="tree (default); csv / json for scripts; speedscope (JSON for\n"
                             "https://www.speedscope.app, a profile per metric) or folded (`a;b;c value`\n"
                             "lines for flamegraph.pl and inferno, one metric) for flame graphs")
    parser.add_argument("--width", type=int, default=None,
                        help="shorten names to fit this many columns (default: the terminal's; 0: never)")
    parser.add_argument("--max-nodes", type=_count, default=DEFAULT_MAX_NODES, metavar="N",
                        help=f"show at most N nodes in the tree and in --print-sorted, then one line\n"
                             f"saying how many were left out (default {DEFAULT_MAX_NODES:,}; 0: all;\n"
                             "csv and json output are never cut)")
    parser.add_argument("--html", metavar="OUT.html",
                        help="write a self-contained HTML report to OUT.html ('-': stdout) instead of\n"
                             "printing: icicle graph, kernel table, roofline; the hottest lines of a\n"
                             "pcsampling profile; the scopes of an instrumentation one (give its\n"
                             ".chrome_trace too for the per-warp timeline); several ranks; -diff")
    parser.add_argument("--ncu", metavar="REGEX",
                        help="print the Nsight Compute command (rocprof-compute on AMD) that profiles\n"
                             "one launch of the kernel matching REGEX in the same program (the command\n"
                             "line the profile records); the note on stderr says which launch")
    parser.add_argument("--sass", metavar="REGEX", default=None,
                        help="instruction samples (mode=pcsampling): the hottest instructions (SASS) of\n"
                             "each sampled kernel whose name matches REGEX ('.' for all); their text\n"
                             "comes from nvdisasm (CUDA toolkit) on PATH when they are shown")
    parser.add_argument("--lines", type=_count, metavar="N", default=None,
                        help="instruction samples (mode=pcsampling): each sampled kernel's N hottest\n"
                             "source lines with their share, top stall reasons and source text\n"
                             "(-i picks kernels by a regex of their call path)")
    parser.add_argument("--version", action="version", version=f"{PROG} {__version__}")
    return parser


def _expand(patterns: list[str]) -> list[str]:
    """Each argument, or the files its glob matches (sorted) where it names no file itself: a
    quoted 'runs/ddp.rank*.hatchet' works where the shell does not expand it."""
    files = []
    for pattern in patterns:
        matches = sorted(glob.glob(pattern)) if not os.path.exists(pattern) and glob.has_magic(pattern) else []
        files += matches or [pattern]
    return files


def _count(text: str) -> int:
    value = int(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be 0 or more, not {value}")
    return value


def _percent(text: str) -> float:
    value = float(text.rstrip("%"))
    if not value >= 0:  # NaN too
        raise argparse.ArgumentTypeError(f"must be a percentage of 0 or more, not {text}")
    return value


def parse_options(argv: Sequence[str] | None) -> ViewOptions:
    """The typed options of a command line; argparse exits with 2 on a bad one (0 for -h, --version)."""
    args = build_parser().parse_args(argv)
    metrics = [m.strip() for m in args.metrics.split(",") if m.strip()] if args.metrics else None
    files = _expand(args.file)
    return ViewOptions(file=files[0], more_files=tuple(files[1:]), merge=args.merge, html=args.html,
                       metrics=metrics, list_metrics=args.list, include=args.include, exclude=args.exclude,
                       threshold=args.threshold, depth=args.depth, name_format=args.format,
                       print_sorted=args.print_sorted, diff_file=args.diff_profile,
                       color=args.color or "auto", mangled=args.mangled, full_names=args.full_names,
                       output=args.output, width=args.width, max_nodes=args.max_nodes, ncu=args.ncu,
                       sass=args.sass, lines=args.lines, fail_above=args.fail_above)


def main(argv: Sequence[str] | None = None, stdout: TextIO | None = None, stderr: TextIO | None = None) -> int:
    stdout = stdout or sys.stdout
    stderr = stderr or sys.stderr
    options = parse_options(argv)  # argparse exits with 2 on a bad command line
    if options.depth < 1:  # hatchet prints nothing then: an empty output and exit 0 told the user nothing
        print(f"{PROG}: error: -d/--depth must be 1 or more (1 shows ROOT alone), not {options.depth}", file=stderr)
        return EXIT_BAD_INPUT
    try:
        with gc_paused(), _warnings_as_lines(stderr):  # loading and rendering make no reference cycles
            return show(options, stdout, stderr)
    except BAD_INPUT as err:
        print(f"{PROG}: error: {printable(str(err))}", file=stderr)  # messages quote names from the file
        return EXIT_BAD_INPUT


@contextlib.contextmanager
def _warnings_as_lines(stderr: TextIO) -> Iterator[None]:
    """The loader's `ProfileWarning`s as one line each on stderr, when they happen."""
    with warnings.catch_warnings():
        warnings.simplefilter("always", ProfileWarning)
        shown = warnings.showwarning

        def show_line(message, category, filename, lineno, file=None, line=None):
            if issubclass(category, ProfileWarning):
                print(f"{PROG}: warning: {printable(str(message))}", file=stderr)
            else:
                shown(message, category, filename, lineno, file, line)

        warnings.showwarning = show_line
        yield


def console_main() -> None:
    try:
        code = main()
        sys.stdout.flush()
    except BrokenPipeError:  # `lepton-view big.hatchet | head`: the reader left, which is fine
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        code = EXIT_OK
    sys.exit(code)
