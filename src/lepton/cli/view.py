"""lepton-view: proton-viewer's command line, without pandas or hatchet.

Parse -> typed ViewOptions -> run -> exit code: 0 shown, 2 for a bad file, metric, pattern or
argument (with one line on stderr saying what is wrong).
"""
from __future__ import annotations

import argparse
import contextlib
import glob
import os
import shutil
import sys
import warnings
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Literal, TextIO

import numpy as np

from ..viewer.demangle import demangle
from ..viewer.derive import Catalog, Column, MetricError, derive, negative_byte_warning, short_name
from ..viewer.diff import subtract
from ..viewer.escape import printable
from ..viewer.filters import NAME_FORMATS, FilterError, apply_filters
from ..viewer.flat_tree import Tree
from ..viewer.load import ProfileError, ProfileWarning, load_bytes, read_file, without_gc
from ..viewer.next_tool import HandoffError, handoff
from ..viewer.ranks import check_one_run, merge, rank_label, rank_view
from ..viewer.render import DEFAULT_MAX_NODES, RenderOptions, write_csv, write_json, write_sorted, write_tree

__all__ = ["ViewOptions", "build_parser", "console_main", "list_text", "main", "parse_options", "run"]

PROG = "lepton-view"
EXIT_OK, EXIT_BAD_INPUT = 0, 2
DEFAULT_METRIC = "time/ms"  # proton-viewer prints nothing without -m; we show time

ColorMode = Literal["auto", "always", "never"]
OutputFormat = Literal["tree", "csv", "json"]


@dataclass(frozen=True)
class ViewOptions:
    file: str
    more_files: tuple[str, ...] = ()  # further ranks of one run (viewer.ranks)
    merge: Literal["sum", "mean"] | None = None  # several files as one profile
    html: str | None = None  # write the HTML report here instead of printing
    metrics: list[str] | None = None
    list_metrics: bool = False
    include: str | None = None
    exclude: str | None = None
    threshold: float | None = None
    depth: int = 100
    name_format: str = "full"
    print_sorted: bool = False
    diff_file: str | None = None
    color: ColorMode = "auto"
    mangled: bool = False
    full_names: bool = False
    output: OutputFormat = "tree"
    width: int | None = None  # None: the terminal's width when stdout is one; 0: never shorten
    max_nodes: int = DEFAULT_MAX_NODES  # lines of the tree and of --print-sorted; 0: all


METRICS_HELP = """Metrics to show, comma separated (default: time/ms). Names are case-insensitive
and may leave out the unit ("time" for "time (ns)"). Derived metrics:
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
    parser.add_argument("-diff", "--diff-profile", dest="diff_profile", metavar="OTHER",
                        help="show FILE minus OTHER")
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
    parser.add_argument("--output", choices=("tree", "csv", "json"), default="tree",
                        help="tree (default), or csv / json for scripts")
    parser.add_argument("--width", type=int, default=None,
                        help="shorten names to fit this many columns (default: the terminal's; 0: never)")
    parser.add_argument("--max-nodes", type=_count, default=DEFAULT_MAX_NODES, metavar="N",
                        help=f"show at most N nodes in the tree and in --print-sorted, then one line\n"
                             f"saying how many were left out (default {DEFAULT_MAX_NODES:,}; 0: all;\n"
                             "csv and json output are never cut)")
    parser.add_argument("--html", metavar="OUT.html",
                        help="write a self-contained HTML report (icicle graph, kernel table, roofline;\n"
                             "with -diff the difference) to OUT.html instead of printing")
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


def parse_options(argv: Sequence[str] | None) -> ViewOptions:
    args = build_parser().parse_args(argv)
    metrics = [m.strip() for m in args.metrics.split(",") if m.strip()] if args.metrics else None
    files = _expand(args.file)
    return ViewOptions(file=files[0], more_files=tuple(files[1:]), merge=args.merge, html=args.html, metrics=metrics, list_metrics=args.list, include=args.include,
                       exclude=args.exclude, threshold=args.threshold, depth=args.depth,
                       name_format=args.format, print_sorted=args.print_sorted, diff_file=args.diff_profile,
                       color=args.color or "auto", mangled=args.mangled, full_names=args.full_names,
                       output=args.output, width=args.width,
                       max_nodes=args.max_nodes)


def main(argv: Sequence[str] | None = None, stdout: TextIO | None = None, stderr: TextIO | None = None) -> int:
    stdout = stdout or sys.stdout
    stderr = stderr or sys.stderr
    options = parse_options(argv)  # argparse exits with 2 on a bad command line
    if options.depth < 1:  # hatchet prints nothing then: an empty output and exit 0 told the user nothing
        print(f"{PROG}: error: -d/--depth must be 1 or more (1 shows ROOT alone), not {options.depth}", file=stderr)
        return EXIT_BAD_INPUT
    with _warnings_as_lines(stderr):
        return _main(options, argv, stdout, stderr)


@contextlib.contextmanager
def _warnings_as_lines(stderr: TextIO) -> Iterator[None]:
    """The loader's `ProfileWarning`s as one line each on stderr, when they happen."""
    with warnings.catch_warnings():
        warnings.simplefilter("always", ProfileWarning)
        shown = warnings.showwarning

        def show(message, category, filename, lineno, file=None, line=None):
            if issubclass(category, ProfileWarning):
                print(f"{PROG}: warning: {printable(str(message))}", file=stderr)
            else:
                shown(message, category, filename, lineno, file, line)

        warnings.showwarning = show
        yield


def _main(options: ViewOptions, argv: Sequence[str] | None, stdout: TextIO, stderr: TextIO) -> int:
    args = build_parser().parse_args(argv)
    lines, ncu = args.lines, args.ncu
    if ncu is not None:
        return _handoff(options.file, ncu, stdout, stderr)
    if args.sass is not None:
        from ..viewer import sass

        return sass.main(options.file, args.sass, 20)
    if lines is not None:
        from ..viewer import lines as hottest_lines

        return hottest_lines.main([options.file, "-n", str(lines), *(["-k", options.include] if options.include else [])])
    try:
        with without_gc():  # see without_gc: loading and rendering make no reference cycles
            return run(options, stdout, stderr)
    except (ProfileError, MetricError, FilterError) as err:
        print(f"{PROG}: error: {printable(str(err))}", file=stderr)  # messages quote names from the file
        return EXIT_BAD_INPUT


def _handoff(path: str, pattern: str, stdout: TextIO, stderr: TextIO) -> int:
    """--ncu: the command on stdout (one line, for `$(...)`), the note on stderr; exit 2 where a
    placeholder stands for the program."""
    try:
        result = handoff(_load(path), pattern)
    except (ProfileError, HandoffError) as err:
        print(f"{PROG}: error: {printable(str(err))}", file=stderr)
        return EXIT_BAD_INPUT
    stdout.write(result.command + "\n")
    print(f"{PROG}: {printable(result.note)}", file=stderr)
    return EXIT_OK if result.runnable else EXIT_BAD_INPUT


def console_main() -> None:
    try:
        code = main()
        sys.stdout.flush()
    except BrokenPipeError:  # `lepton-view big.hatchet | head`: the reader left, which is fine
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        code = EXIT_OK
    sys.exit(code)


def run(options: ViewOptions, stdout: TextIO, stderr: TextIO) -> int:
    if options.html:
        return _write_report(options, stdout, stderr)
    if options.more_files:
        return _run_ranks(options, stdout, stderr)
    return _run_one(_load(options.file), options, stdout, stderr)


def _run_ranks(options: ViewOptions, stdout: TextIO, stderr: TextIO) -> int:
    """Several files: the ranks of one run, side by side (or merged into one profile)."""
    paths = [options.file, *options.more_files]
    if options.diff_file:
        raise FilterError("-diff takes one profile on each side, not several")
    trees = [_load(path) for path in paths]
    check_one_run(trees, paths)
    if options.merge:
        return _run_one(merge(trees, options.merge), options, stdout, stderr)
    if options.list_metrics:
        stdout.write(list_text(trees[0]))
        return EXIT_OK
    ranks = [rank_label(path, i) for i, path in enumerate(paths)]
    metrics = options.metrics or _default_metrics(trees[0])
    tree, columns, warnings = rank_view(trees, ranks, metrics)
    aliases = [demangle(name) for name in tree.names] if not options.mangled else None
    tree, columns = apply_filters(tree, columns, options.include, options.exclude, options.threshold, aliases)
    render = _render_options(options, stdout)
    if options.output == "csv":
        write_csv(stdout, tree, columns, render)
    elif options.output == "json":
        write_json(stdout, tree, columns, render)
    else:
        slowest = columns.pop()
        notes = ["" if np.isnan(r) else f"  [slowest: rank {int(r)}]" for r in slowest.values.tolist()]
        stdout.write(f"{len(paths)} ranks ({', '.join(map(str, ranks))}); per metric: min median max over ranks\n")
        write_tree(stdout, tree, columns, render, notes=notes)
        if options.print_sorted:
            write_sorted(stdout, tree, columns[2:3], render)  # by the first metric's max
    for warning in warnings:
        print(f"{PROG}: {printable(warning)}", file=stderr)
    return EXIT_OK


def _write_report(options: ViewOptions, stdout: TextIO, stderr: TextIO) -> int:
    """--html: several files are merged first (--merge, default sum); -diff adds the other side."""
    from ..viewer.report import report_html

    paths = [options.file, *options.more_files]
    trees = [_load(path) for path in paths]
    if len(trees) > 1:
        check_one_run(trees, paths)
    tree = merge(trees, options.merge or "sum") if len(trees) > 1 else trees[0]
    other = _load(options.diff_file) if options.diff_file else None
    render = _render_options(options, stdout)
    title = os.path.basename(options.file) + (f" (+{len(paths) - 1} ranks, {options.merge or 'sum'})" if len(paths) > 1 else "")
    text = report_html(tree, title, render, other, os.path.basename(options.diff_file) if other is not None else None)
    try:
        with open(options.html, "w", encoding="utf-8") as f:
            f.write(text)
    except OSError as err:
        raise ProfileError(f"cannot write '{options.html}': {err.strerror or err}") from err
    print(f"{PROG}: report written to {options.html} ({len(tree):,} nodes, {len(text) / 1e6:.1f} MB)", file=stderr)
    return EXIT_OK


def _run_one(tree: Tree, options: ViewOptions, stdout: TextIO, stderr: TextIO) -> int:
    if options.list_metrics:
        stdout.write(list_text(tree))
        return EXIT_OK
    if not tree.numbers:
        raise ProfileError(f"'{options.file}' has no metrics to show")
    metrics = options.metrics or _default_metrics(tree)
    tree, columns, warnings = _prepare(tree, metrics, options)
    side = None
    if options.diff_file:
        other, other_columns, other_warnings = _prepare(_load(options.diff_file), metrics, options)
        result = subtract(tree, columns, other, other_columns)
        tree, columns, side, warnings = result.tree, result.columns, result.side, warnings + other_warnings
    render = _render_options(options, stdout)
    if options.output == "csv":
        write_csv(stdout, tree, columns, render, side)
    elif options.output == "json":
        write_json(stdout, tree, columns, render, side)
    else:
        write_tree(stdout, tree, columns, render, side)
        if options.print_sorted:
            write_sorted(stdout, tree, columns, render)
    for warning in warnings:
        print(f"{PROG}: {printable(warning)}", file=stderr)
    return EXIT_OK


def _load(path: str) -> Tree:
    return load_bytes(read_file(path), path)


def list_text(tree: Tree) -> str:
    """`-l`, exactly as proton-viewer prints it (names lower-cased, cut at the unit)."""
    catalog = Catalog.of(tree)
    lines = ["Available inclusive metrics:"] + [f"- {printable(short_name(m))}" for m in catalog.inclusive]
    lines += ["Available exclusive metrics:"] + [f"- {printable(short_name(m))}" for m in catalog.exclusive]
    return "\n".join(lines) + "\n"


def _default_metrics(tree: Tree) -> list[str]:
    try:
        Catalog.of(tree).match("time")
        return [DEFAULT_METRIC]
    except MetricError:
        raise MetricError(f"no -m given and the profile has no time; {Catalog.of(tree).describe()}") from None


def _prepare(tree: Tree, metrics: list[str], options: ViewOptions) -> tuple[Tree, list[Column], list[str]]:
    """proton-viewer's `parse`: derive the metrics on the whole tree, then filter it. -i/-e also
    match the demangled names, since those are what the user reads."""
    derived = derive(tree, metrics)
    aliases = None
    if not options.mangled and (options.include or options.exclude):
        aliases = [demangle(name) for name in tree.names]
    tree, columns = apply_filters(tree, derived.columns, options.include, options.exclude,
                                  options.threshold, aliases)
    warnings = list(derived.warnings)
    negative = negative_byte_warning(columns)
    if negative:
        warnings.append(negative)
    return tree, columns, warnings


def _render_options(options: ViewOptions, stdout: TextIO) -> RenderOptions:
    is_terminal = hasattr(stdout, "isatty") and stdout.isatty()
    if options.color == "auto":
        color = is_terminal and "NO_COLOR" not in os.environ and os.environ.get("TERM") != "dumb"
    else:
        color = options.color == "always"
    width = options.width
    if width is None and is_terminal:
        width = shutil.get_terminal_size().columns
    return RenderOptions(depth=options.depth, name_format=options.name_format, demangle=not options.mangled,
                         full_names=options.full_names, color=color, width=width or None, max_nodes=options.max_nodes or None)


