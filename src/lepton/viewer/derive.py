"""Metrics the user asks for with -m: raw file metrics, and the derived ones, as a table.

Proton's rule for what is inclusive (hatchet's, in fact): the metrics present on ROOT are summed
over each subtree; every other metric is a per-node value. A raw metric and every formula below
read the inclusive sum when the metric is on ROOT and the node's own value otherwise.

Column labels are Proton's ("time/ms (inc)", "util", "count (inc)", "cpu_time (ns)"); they show in
`--print-sorted`, csv and json output.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

import numpy as np

from ..model.hatchet_names import COUNT, DEVICE_ID, DEVICE_TYPE
from ..units import NS_PER_UNIT
from . import specs
from .flat_tree import Tree

SECONDS_PER_UNIT = {unit: ns / 1e9 for unit, ns in NS_PER_UNIT.items()}  # s: 1.0, ms: 1e-3, ...
RATE_PREFIXES = {"": 1.0, "g": 1e9, "t": 1e12}  # flop/s, gflop/s, tflop/s
FLOP_WIDTHS_BITS = (8, 16, 32, 64)  # Proton's LaunchHook.flops_width


class MetricError(ValueError):
    """A metric the profile cannot provide. The message is one line and lists what exists."""


@dataclass(frozen=True)
class Formula:
    """One derived metric: `source` read from the file, shaped, then divided by `divisor`.

    duration: seconds(source) / divisor                 time/ms, cpu_time/us
    average:  seconds(source) / count / divisor         avg_time/us
    rate:     source / seconds(time) / divisor          tflop16/s, gbyte/s
    """

    source: str
    shape: Literal["duration", "average", "rate"]
    divisor: float


def _formulas() -> dict[str, Formula]:
    table: dict[str, Formula] = {}
    for unit, seconds in SECONDS_PER_UNIT.items():
        table[f"time/{unit}"] = Formula("time", "duration", seconds)
        table[f"avg_time/{unit}"] = Formula("time", "average", seconds)
        table[f"cpu_time/{unit}"] = Formula("cpu_time", "duration", seconds)
        table[f"avg_cpu_time/{unit}"] = Formula("cpu_time", "average", seconds)
    for prefix, scale in RATE_PREFIXES.items():
        table[f"{prefix}byte/s"] = Formula("bytes", "rate", scale)
        table[f"{prefix}flop/s"] = Formula("flops", "rate", scale)
        for width in FLOP_WIDTHS_BITS:
            table[f"{prefix}flop{width}/s"] = Formula(f"flops{width}", "rate", scale)
    return table


FORMULAS = _formulas()
UTIL = "util"  # max(flop time at peak, byte time at peak) / time; see _util


@dataclass
class Column:
    """One displayed metric. `resum_key` names the raw metric this column is the subtree sum of:
    filters that rewire the tree recompute it, as hatchet's `update_inclusive_columns` does, while
    derived columns keep the values computed on the whole tree (so ROOT keeps its total)."""

    label: str
    values: np.ndarray
    resum_key: str | None = None


@dataclass
class Catalog:
    """The file's metric names as proton-viewer lists them: on ROOT (inclusive), then the rest."""

    inclusive: list[str]
    exclusive: list[str]

    @staticmethod
    def of(tree: Tree) -> Catalog:
        inclusive = [k for k in tree.root_keys if k in tree.numbers or k in tree.texts]
        exclusive = ["name"] + [k for k in tree.key_order if k not in inclusive]
        return Catalog(inclusive, exclusive)

    def match(self, request: str) -> str:
        """Proton's `match_available_metrics`: case-insensitive, with or without the unit."""
        wanted = request.strip().lower()
        for raw in self.inclusive + self.exclusive:
            if wanted in (raw.lower(), short_name(raw)):
                return raw
        raise MetricError(f"unknown metric '{request}'; {self.describe()}")

    def describe(self) -> str:
        summed = ", ".join(short_name(m) for m in self.inclusive) or "none"
        per_node = ", ".join(short_name(m) for m in self.exclusive if m != "name") or "none"
        return (f"this profile has: {summed} (summed over subtrees); {per_node} (per node); "
                "derived: time/<s|ms|us|ns>, avg_time/<unit>, cpu_time/<unit>, avg_cpu_time/<unit>, "
                "[g|t]flop[8|16|32|64]/s, [g|t]byte/s, util, <metric>/%, <metric>/kernel%")


def short_name(raw: str) -> str:
    """"time (ns)" -> "time": how `-l` prints a metric and how `-m` may name it."""
    return raw.split("(")[0].strip().lower()


@dataclass
class Derived:
    columns: list[Column]
    warnings: list[str] = field(default_factory=list)


class _Context:
    """The tree plus lazily computed raw columns, shared by all requested metrics."""

    def __init__(self, tree: Tree) -> None:
        self.tree = tree
        self.catalog = Catalog.of(tree)
        self._sums: dict[str, np.ndarray] = {}
        self.warnings: list[str] = []

    def raw_column(self, request: str) -> Column:
        raw = self.catalog.match(request)
        if raw not in self.tree.numbers:
            raise MetricError(f"metric '{short_name(raw)}' is not numeric (it holds text such as device ids)")
        if raw in self.catalog.inclusive and "(inc)" not in raw:
            if raw not in self._sums:
                self._sums[raw] = self.tree.subtree_sum(self.tree.numbers[raw])
            return Column(f"{raw} (inc)", self._sums[raw], resum_key=raw)
        return Column(raw, self.tree.numbers[raw])

    def seconds(self, source: str) -> np.ndarray:
        """Proton's `get_time_seconds`: the unit comes from the file's name, "time (ns)" -> ns."""
        column = self.raw_column(source)
        raw = self.catalog.match(source)
        unit = raw.split("(")[1].split(")")[0].strip() if "(" in raw else ""
        if unit not in SECONDS_PER_UNIT:
            raise MetricError(f"metric '{raw}' has no time unit of s, ms, us or ns in its name")
        return column.values * SECONDS_PER_UNIT[unit]


def derive(tree: Tree, requests: list[str]) -> Derived:
    """Computes one Column per requested metric, on the whole (unfiltered) tree."""
    ctx = _Context(tree)
    # 0/0 and x/0 are expected (scopes with no time, nodes with no flops): NaN and inf, as in pandas.
    with np.errstate(divide="ignore", invalid="ignore"):
        columns = [_one(ctx, request.strip()) for request in requests]
    return Derived(columns, ctx.warnings)


MetricKind = Literal["util", "formula", "percent", "kernel_percent", "raw"]
KERNEL_PERCENT = "kernel%"  # `<metric>/kernel%`: share of the enclosing kernel (see _kernel_percent)


def metric_kind(request: str) -> MetricKind:
    """Which rule of the -m grammar `request` (one stripped item) follows, without a profile:
    util, a derived metric of FORMULAS, `<metric>/%`, or a raw metric name (which only a profile
    can confirm). A MetricError says why an item follows none."""
    key = request.lower()
    if not key:
        raise MetricError("empty metric name")
    if key == UTIL:
        return "util"
    if key in FORMULAS:
        return "formula"
    if "/" in key:
        name, unit = request.split("/", 1)
        if unit.strip().lower() == KERNEL_PERCENT and name.strip():
            return "kernel_percent"
        if unit != "%":
            units = _UNITS_OF.get(name.strip().lower())
            hint = f"{name.strip()} takes /{', /'.join(units)} or /%" if units else \
                "only <metric>/% and the derived metrics (and <metric>/kernel%)"
            raise MetricError(f"unsupported unit '{unit}' in '{request}' ({hint})")
        if not name.strip():
            raise MetricError(f"'{request}' names no metric before /%")
        return "percent"
    return "raw"


def higher_is_better(request: str) -> bool:
    """Whether more of this -m metric is better (rates such as tflop16/s, and util): a drop in it
    is what --fail-above calls slower. More time, samples, cycles or bytes is slower."""
    kind = metric_kind(request.strip())
    return kind == "util" or (kind == "formula" and FORMULAS[request.strip().lower()].shape == "rate")


def _units_of() -> dict[str, list[str]]:
    """"time" -> ["s", "ms", "us", "ns"]: the units each derived metric comes in."""
    units: dict[str, list[str]] = {}
    for key in FORMULAS:
        base, unit = key.split("/")
        units.setdefault(base, []).append(unit)
    return units


_UNITS_OF = _units_of()


def check_metric_specs(text: str) -> None:
    """Checks a comma-separated metric list (lepton-view -m, lepton --print) against the grammar
    above before any profile exists: an empty item, an unknown unit (`time/h`, `flop16/ms`), a
    `/%` with no metric. Raw names pass: only the profile knows them. Raises MetricError, one line."""
    for position, item in enumerate(text.split(","), 1):
        try:
            metric_kind(item.strip())
        except MetricError as err:
            where = f"item {position} of '{text}'"
            raise MetricError(f"bad metric list: {err} ({where})" if item.strip() else
                              f"bad metric list: empty metric name ({where})") from None


def _one(ctx: _Context, request: str) -> Column:
    kind = metric_kind(request)
    if kind == "util":
        return Column(UTIL, _util(ctx))
    if kind == "formula":
        return Column(f"{request} (inc)", _apply(ctx, FORMULAS[request.lower()]))
    if kind == "percent":
        return _percent(ctx, request)
    if kind == "kernel_percent":
        return _kernel_percent(ctx, request)
    return ctx.raw_column(request)


def _apply(ctx: _Context, formula: Formula) -> np.ndarray:
    if formula.shape == "duration":
        return ctx.seconds(formula.source) / formula.divisor
    if formula.shape == "average":
        return ctx.seconds(formula.source) / ctx.raw_column(COUNT).values / formula.divisor
    return ctx.raw_column(formula.source).values / ctx.seconds("time") / formula.divisor


def _percent(ctx: _Context, request: str) -> Column:
    """`<metric>/%`: share of ROOT's value for a summed metric, of the column total otherwise."""
    name = request.split("/", 1)[0]  # metric_kind checked the rest
    column = ctx.raw_column(name)
    if column.label.endswith("(inc)"):
        total, label = column.values[0], f"{request} (inc)"
    else:
        total, label = np.nansum(column.values), request
    return Column(label, column.values / total * 100.0)


def _kernel_percent(ctx: _Context, request: str) -> Column:
    """`<metric>/kernel%`: each instrumented scope's share of its kernel, for the per-node metrics of
    `backend="instrumentation"` (cycles, normalized_cycles, ns, normalized_ns).

    Such a profile has the metric on scope nodes only, the kernel node above them has none: a
    scope's kernel is the nearest ancestor without the metric, and the kernel's total is the sum of
    the metric over that kernel's top-level scopes (its children that have it). So, under a kernel
    with scopes load and store, load + store = 100%, and a scope nested in load shows its share of
    the same total. Nodes without the metric get NaN. (On a metric every node has, such as an
    inclusive time, the only "kernel" is ROOT's: the same as `<metric>/%`.)

        ikernel                              -
          load    cycles 3013                19.9%
          store   cycles 12159               80.1%
    """
    name = request.split("/", 1)[0]
    values = ctx.raw_column(name).values
    tree = ctx.tree
    has = ~np.isnan(values)
    top = np.arange(len(tree))  # each node's outermost ancestor-or-self of an unbroken run with values
    for level in tree.levels[1:]:
        parent = tree.parent[level]
        inherit = has[level] & has[parent]
        top[level[inherit]] = top[parent[inherit]]
    tops = np.flatnonzero(has & (top == np.arange(len(tree))))
    # Tops are grouped by their parent (the kernel node); a root with the metric is its own group.
    group = np.full(len(tree), -1)
    group[tops] = np.where(tree.parent[tops] >= 0, tree.parent[tops], tops)
    totals = np.bincount(group[tops], weights=values[tops], minlength=len(tree)) if len(tops) else \
        np.zeros(len(tree))
    share = np.full(len(tree), np.nan)
    share[has] = values[has] / totals[group[top[has]]] * 100.0
    return Column(request, share)


def _util(ctx: _Context) -> np.ndarray:
    """Fraction of the roofline bound reached: max(flop time at peak, byte time at peak) / time.

    The flops and bytes are the node's own (Proton reads the raw columns), the time is inclusive;
    nodes that are not kernels (no device_id) get NaN."""
    flop_seconds, byte_seconds, warnings = seconds_at_peak(ctx.tree)
    ctx.warnings.extend(warnings)
    # pandas `combine(..., max)` with Python's max: a NaN byte time leaves the flop time.
    bound = np.where(byte_seconds > flop_seconds, byte_seconds, flop_seconds)
    util = bound / ctx.seconds("time")
    util[_text_column(ctx.tree, DEVICE_ID) == ""] = np.nan
    return util


def seconds_at_peak(tree: Tree) -> tuple[np.ndarray, np.ndarray, list[str]]:
    """Per node: the time its own flops need at the device's peak (summed over flops8..flops64),
    the time its own bytes need at peak bandwidth, and warnings for devices with no peak numbers
    (their nodes get NaN). Proton's `get_min_time_flops` / `get_min_time_bytes`."""
    device_ids = _text_column(tree, DEVICE_ID)
    device_types = _text_column(tree, DEVICE_TYPE)
    flop_seconds = np.zeros(len(tree))
    byte_seconds = np.zeros(len(tree))
    warnings = []
    for device in specs.devices_of(tree.devices):
        # Proton matches rows on device_id alone; we also match the type, so a CUDA "0" and a HIP
        # "0" in one profile do not add up. Same numbers for every single-vendor profile.
        rows = (device_ids == device.device_id) & ((device_types == device.device_type) | (device_types == ""))
        if not rows.any():
            continue
        try:
            for width in FLOP_WIDTHS_BITS:
                flops = tree.numbers.get(f"flops{width}")
                if flops is not None:
                    flop_seconds[rows] += np.nan_to_num(flops[rows], nan=0.0) / specs.max_flops(device, width)
            byte_values = tree.numbers.get("bytes")
            bytes_at_rows = byte_values[rows] if byte_values is not None else np.nan
            byte_seconds[rows] += bytes_at_rows / specs.max_bytes_per_s(device)
        except specs.UnknownDevice as err:
            warnings.append(f"util is nan on {device.device_type} device {device.device_id}: {err}")
            flop_seconds[rows] = np.nan
    return flop_seconds, byte_seconds, warnings


def _text_column(tree: Tree, key: str) -> np.ndarray:
    """A text metric as a str array, "" where a node has none (ids written as numbers included)."""
    if key in tree.texts:
        return np.array(["" if v is None else str(v) for v in tree.texts[key]], dtype=object)
    if key in tree.numbers:
        return np.array(["" if np.isnan(v) else str(int(v)) for v in tree.numbers[key]], dtype=object)
    return np.full(len(tree), "", dtype=object)


def negative_byte_warning(columns: list[Column]) -> str | None:
    """Proton's `emit_warnings`: a negative inclusive byte count means an int overflow upstream."""
    for column in columns:
        if column.label == "bytes (inc)" and np.nanmin(column.values) < 0:
            return "Warning: Negative byte values detected, this is usually the result of a datatype overflow"
    return None
