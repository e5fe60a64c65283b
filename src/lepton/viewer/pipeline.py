"""The viewer's pipeline: load -> tree -> derive -> filter -> render, for lepton-view and the Python
API alike.

Each stage is one function here (`load_profile`, `derive_columns`, `filter_columns`); `prepare`
chains derive and filter as proton-viewer's `parse` does, and `show` runs the whole pipeline for
one `ViewOptions`, which is what `lepton-view` runs once it has parsed its command line. The Python
API (`viewer.python_api`) runs the same stages on its DataFrame.
"""
from __future__ import annotations

import os
import shutil
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal, TextIO

import numpy as np

from ..progress import progress
from . import gate
from .compare import change_columns, compare, header, json_header
from .compare import notes as diff_notes
from .demangle import demangle
from .derive import Catalog, Column, MetricError, derive, higher_is_better, negative_byte_warning, short_name
from .escape import printable
from .export_folded import write_folded
from .export_speedscope import write_speedscope
from .filters import FilterError, apply_filters
from .flat_tree import Tree
from .load import ProfileError, load
from .next_tool import handoff
from .ranks import check_one_run, merge, rank_label, rank_view
from .render import (
    DEFAULT_MAX_NODES,
    RenderOptions,
    display_names,
    name_style,
    shown_nodes,
    write_csv,
    write_json,
    write_sorted,
    write_tree,
)
from .stacks import check_adds_up

PROG = "lepton-view"
EXIT_OK, EXIT_NOTHING_TO_SHOW, EXIT_BAD_INPUT = 0, 1, 2
# proton-viewer prints nothing without -m; we show the metric a profile of its kind is about:
# samples for instruction sampling, cycles for instrumentation, kernel time, CPU scope time.
DEFAULT_METRICS = (("num_samples", "num_samples"), ("cycles", "cycles"), ("time", "time/ms"),
                   ("cpu_time", "cpu_time/ms"))

ColorMode = Literal["auto", "always", "never"]
OutputFormat = Literal["tree", "csv", "json", "speedscope", "folded"]
EXPORTS = ("speedscope", "folded")  # flame-graph files of one profile


class OptionError(ValueError):
    """Options that do not go together. The message is one line and says what to do."""


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
    ncu: str | None = None  # print the Nsight Compute command for the kernel matching this regex
    sass: str | None = None  # the hottest instructions of the sampled kernels matching this regex
    lines: int | None = None  # the N hottest source lines of each sampled kernel
    fail_above: float | None = None  # with -diff: exit 1 when a node got slower by more than this %


@dataclass(frozen=True)
class Prepared:
    """A tree derived and filtered, with its columns and the warnings to print under it."""

    tree: Tree
    columns: list[Column]
    warnings: list[str]


# -- the stages -------------------------------------------------------------------------------------
def load_profile(path: str | os.PathLike) -> Tree:
    """Load: a hatchet JSON or MessagePack file, Lepton's or Proton's, as a Tree."""
    return load(path)


def derive_columns(tree: Tree, metrics: Sequence[str]) -> tuple[list[Column], list[str]]:
    """Derive: one column per requested metric, computed on the whole tree, and the warnings."""
    derived = derive(tree, list(metrics))
    return derived.columns, list(derived.warnings)


def filter_columns(tree: Tree, columns: list[Column], include: str | None = None, exclude: str | None = None,
                   threshold: float | None = None,
                   aliases: Sequence[str] | None = None) -> tuple[Tree, list[Column]]:
    """Filter: -i / -e / -t on the tree and its columns (`aliases`: other names the patterns match)."""
    return apply_filters(tree, columns, include, exclude, threshold, aliases)


def prepare(tree: Tree, metrics: Sequence[str], options: ViewOptions) -> Prepared:
    """proton-viewer's `parse`: derive the metrics on the whole tree, then filter it. -i/-e also
    match the demangled names, since those are what the user reads."""
    columns, warnings = derive_columns(tree, metrics)
    aliases = None
    if not options.mangled and (options.include or options.exclude):
        aliases = [demangle(name) for name in tree.names]
    tree, columns = filter_columns(tree, columns, options.include, options.exclude, options.threshold,
                                   aliases)
    negative = negative_byte_warning(columns)
    return Prepared(tree, columns, warnings + [negative] if negative else warnings)


def list_text(tree: Tree) -> str:
    """`-l`, exactly as proton-viewer prints it (names lower-cased, cut at the unit)."""
    catalog = Catalog.of(tree)
    lines = ["Available inclusive metrics:"] + [f"- {printable(short_name(m))}" for m in catalog.inclusive]
    lines += ["Available exclusive metrics:"] + [f"- {printable(short_name(m))}" for m in catalog.exclusive]
    return "\n".join(lines) + "\n"


def default_metrics(tree: Tree) -> list[str]:
    """The first of DEFAULT_METRICS that some node of `tree` has a non-zero value of (Proton's
    writer puts zeros on ROOT for metrics no node may have)."""
    catalog = Catalog.of(tree)
    for raw_name, metric in DEFAULT_METRICS:
        try:
            values = tree.numbers.get(catalog.match(raw_name))
        except MetricError:
            continue
        if values is not None and np.any(np.nan_to_num(values) != 0):
            return [metric]
    raise MetricError("no -m given, and the profile has none of time, cpu_time, num_samples or cycles to "
                      f"show by default: pick a metric with -m; {catalog.describe()}")


# -- the whole pipeline -----------------------------------------------------------------------------
def show(options: ViewOptions, stdout: TextIO, stderr: TextIO) -> int:
    """Shows what `options` ask for; returns the exit code. Bad input raises the viewer's errors
    (ProfileError, MetricError, FilterError, HandoffError, OptionError), each with a one-line
    message."""
    check_options(options)
    if options.ncu is not None:
        return _handoff(options.file, options.ncu, stdout, stderr)
    if options.sass is not None:
        from .sass import show_sass

        style = name_style(render_options(options, stdout))
        return show_sass(options.file, options.sass, stdout, stderr, style)
    if options.lines is not None:
        from .lines import show_lines

        return show_lines(options.file, options.lines, options.include, stdout, stderr,
                          name_style(render_options(options, stdout)))
    if options.html:
        return _write_report(options, options.html, stdout, stderr)
    if options.more_files:
        return _show_ranks(options, stdout, stderr)
    return _show_one(load_profile(options.file), options, stdout, stderr)


def _handoff(path: str, pattern: str, stdout: TextIO, stderr: TextIO) -> int:
    """--ncu: the command on stdout (one line, for `$(...)`), the note on stderr; exit 2 where a
    placeholder stands for the program."""
    result = handoff(load_profile(path), pattern)
    stdout.write(result.command + "\n")
    note(stderr, result.note)
    return EXIT_OK if result.runnable else EXIT_BAD_INPUT


def _show_one(tree: Tree, options: ViewOptions, stdout: TextIO, stderr: TextIO) -> int:
    if options.list_metrics:
        stdout.write(list_text(tree))
        return EXIT_OK
    if not tree.numbers:
        raise ProfileError(f"'{options.file}' has no metrics to show")
    metrics = options.metrics or default_metrics(tree)
    view = prepare(tree, metrics, options)
    render = render_options(options, stdout)
    if options.diff_file:
        return _show_diff(view, metrics, options, render, stdout, stderr)
    tree, columns = view.tree, view.columns
    if options.output in EXPORTS:
        _export(tree, columns, metrics, options, render, stdout)
    elif options.output == "csv":
        write_csv(stdout, tree, columns, render)
    elif options.output == "json":
        write_json(stdout, tree, columns, render)
    else:
        write_tree(stdout, tree, columns, render)
        if options.print_sorted:
            write_sorted(stdout, tree, columns, render)
    for warning in view.warnings:
        note(stderr, warning)
    return EXIT_OK


def _show_diff(view: Prepared, metrics: Sequence[str], options: ViewOptions, render: RenderOptions,
               stdout: TextIO, stderr: TextIO) -> int:
    """-diff A: B (the positional profile) minus A, then --fail-above's verdict on stderr."""
    assert options.diff_file is not None
    other = prepare(load_profile(options.diff_file), metrics, options)
    with progress(f"{PROG}: comparing the profiles", stderr):
        comparison = compare(view.tree, view.columns, other.tree, other.columns, options.file,
                             options.diff_file)
    tree, columns = comparison.tree, comparison.columns
    names = display_names(tree, render, escape=False)
    verdict = None
    if options.fail_above is not None:
        verdict = gate.check(comparison, options.fail_above, higher_is_better(metrics[0]),
                             shown_nodes(tree, options.depth).order)
    if options.output in ("csv", "json"):
        with_changes = columns + change_columns(comparison)
        if options.output == "csv":
            write_csv(stdout, tree, with_changes, render, comparison.side)
        else:
            top = {**json_header(comparison), **(gate.as_json(verdict, comparison, names) if verdict else {})}
            write_json(stdout, tree, with_changes, render, comparison.side, top)
    else:
        stdout.write(header(comparison))
        write_tree(stdout, tree, columns, render, notes=diff_notes(comparison, render.color))
        if options.print_sorted:
            write_sorted(stdout, tree, columns, render)
    for warning in view.warnings + other.warnings:
        note(stderr, warning)
    if verdict is None:
        return EXIT_OK
    stdout.flush()  # the verdict comes last, after the tree, where both go to one terminal
    stderr.write(gate.report(verdict, comparison, names))
    return EXIT_OK if verdict.passed else gate.EXIT_SLOWER


def _export(tree: Tree, columns: list[Column], metrics: Sequence[str], options: ViewOptions,
            render: RenderOptions, stdout: TextIO) -> None:
    """--output speedscope|folded: flame-graph files of the metrics asked for."""
    for request in metrics:
        check_adds_up(request, options.output)
    names = display_names(tree, render, escape=False)
    if options.output == "folded":
        if len(columns) != 1:
            raise OptionError("--output folded holds one metric: give one with -m (speedscope takes several)")
        write_folded(stdout, tree, columns[0], names, options.depth)
    else:
        title = os.path.basename(options.file)
        write_speedscope(stdout, tree, columns, list(metrics), names, options.depth, title)


def check_options(options: ViewOptions) -> None:
    """Options that do not go together, before anything is read."""
    if options.fail_above is not None and not options.diff_file:
        raise OptionError("--fail-above compares two profiles: give the baseline with -diff BASELINE")
    if options.output in EXPORTS and options.diff_file:
        raise OptionError(f"--output {options.output} draws one profile, not a difference: "
                          "drop -diff, or use --output json")
    if options.output in EXPORTS and options.more_files and not options.merge:
        raise OptionError(f"--output {options.output} draws one profile: give one file, or --merge sum|mean")


def _show_ranks(options: ViewOptions, stdout: TextIO, stderr: TextIO) -> int:
    """Several files: the ranks of one run, side by side (or merged into one profile)."""
    paths = [options.file, *options.more_files]
    if options.diff_file:
        raise FilterError("-diff takes one profile on each side, not several")
    trees = [load_profile(path) for path in paths]
    check_one_run(trees, paths)
    if options.merge:
        return _show_one(merge(trees, options.merge), options, stdout, stderr)
    if options.list_metrics:
        stdout.write(list_text(trees[0]))
        return EXIT_OK
    ranks = [rank_label(path, i) for i, path in enumerate(paths)]
    tree, columns, warnings = rank_view(trees, ranks, options.metrics or default_metrics(trees[0]))
    aliases = [demangle(name) for name in tree.names] if not options.mangled else None
    tree, columns = filter_columns(tree, columns, options.include, options.exclude, options.threshold,
                                   aliases)
    render = render_options(options, stdout)
    if options.output == "csv":
        write_csv(stdout, tree, columns, render)
    elif options.output == "json":
        write_json(stdout, tree, columns, render)
    else:
        slowest = columns.pop()
        notes = ["" if np.isnan(r) else f"  [slowest: rank {int(r)}]" for r in slowest.values.tolist()]
        stdout.write(f"{len(paths)} ranks ({', '.join(map(str, ranks))}); "
                     "per metric: min median max over ranks\n")
        write_tree(stdout, tree, columns, render, notes=notes)
        if options.print_sorted:
            write_sorted(stdout, tree, columns[2:3], render)  # by the first metric's max
    for warning in warnings:
        note(stderr, warning)
    return EXIT_OK


def _write_report(options: ViewOptions, html: str, stdout: TextIO, stderr: TextIO) -> int:
    """--html: the page of every kind of profile (`report`); a Chrome trace among the files goes
    beside its profile (the per-warp timeline), `-` writes the page to stdout."""
    from .report import Filters, ReportError, Request, is_trace, make_page, write_page

    terminal_only = [flag for flag, given in (
        ("-l", options.list_metrics), ("--print-sorted", options.print_sorted), ("--output", options.output != "tree"),
        ("--width", options.width is not None), ("--max-nodes", options.max_nodes != DEFAULT_MAX_NODES),
        ("--color/--no-color", options.color != "auto")) if given]
    paths = [options.file, *options.more_files]
    request = Request(tuple(p for p in paths if not is_trace(p)), tuple(p for p in paths if is_trace(p)),
                      options.diff_file, options.merge, tuple(options.metrics) if options.metrics else None,
                      Filters(options.include, options.exclude, options.threshold, options.depth,
                              not options.mangled),
                      RenderOptions(name_format=options.name_format, demangle=not options.mangled,
                                    full_names=options.full_names))
    try:
        if terminal_only:
            raise ReportError(f"{', '.join(terminal_only)} shape the terminal's output, not the --html page: "
                              "leave them out")
        with progress(f"{PROG}: making the report", stderr):
            text = make_page(request)
        where = write_page(text, html, stdout)
    except ReportError as err:
        print(f"{PROG}: error: {printable(str(err))}", file=stderr)
        return EXIT_BAD_INPUT
    print(f"{PROG}: report written to {where} ({len(text.encode()) / 1e3:,.0f} kB)", file=stderr)
    return EXIT_OK


def note(stderr: TextIO, message: str) -> None:
    """One line on stderr, names from the file made printable."""
    print(f"{PROG}: {printable(message)}", file=stderr)


def render_options(options: ViewOptions, stdout: TextIO) -> RenderOptions:
    """Colour and width as the terminal (where stdout is one) and the options say."""
    is_terminal = hasattr(stdout, "isatty") and stdout.isatty()
    if options.color == "auto":
        color = is_terminal and "NO_COLOR" not in os.environ and os.environ.get("TERM") != "dumb"
    else:
        color = options.color == "always"
    width = options.width
    if width is None and is_terminal:
        width = shutil.get_terminal_size().columns
    return RenderOptions(depth=options.depth, name_format=options.name_format, demangle=not options.mangled,
                         full_names=options.full_names, color=color, width=width or None,
                         max_nodes=options.max_nodes or None)
