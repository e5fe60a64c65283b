"""Flexible metrics: how a user's `{"name": value}` is named, typed and aggregated.

Semantics are fields here (`MetricKind`), never suffixes: the `(exc)` / `(pty)` suffixes users write
are parsed once by `parse_metric_name` and exist again only in the hatchet writer.

Rules (Proton, `Data/Metric.h`): numbers are summed when a node receives a metric again, vectors are
summed element-wise (lengths must match), property metrics are overwritten. Property and exclusive
metrics may also be strings, which are overwritten too. A node keeps the type a metric first had;
another type is an error with Proton's message.
"""
from __future__ import annotations

import enum
from dataclasses import dataclass

from ..errors import MetricTypeError


class MetricKind(enum.Enum):
    INCLUSIVE = "inclusive"  # no suffix: the viewer sums it over subtrees
    EXCLUSIVE = "exclusive"  # "(exc)": per node only
    PROPERTY = "property"  # "(pty)": last value wins
    NODE_PROPERTY = "node property"  # last value wins and per node only (kernel properties)




@dataclass(frozen=True)
class MetricSpec:
    name: str
    kind: MetricKind

    @property
    def overwrites(self) -> bool:
        return self.kind is MetricKind.PROPERTY or self.kind is MetricKind.NODE_PROPERTY

    @property
    def per_node(self) -> bool:
        return self.kind is MetricKind.EXCLUSIVE or self.kind is MetricKind.NODE_PROPERTY


ROOFLINE_FLOAT_KEYS = frozenset({"flops", "flops8", "flops16", "flops32", "flops64"})
ROOFLINE_INT_KEYS = frozenset({"bytes"})
CPU_TIME_METRIC = "cpu_time (ns)"

# C++ type names in Proton's error messages (Proton main makes every Python int an int64_t; Triton
# 3.6 made it a uint64_t unless negative), and what to pass to keep a metric of that type.
_TYPE_NAMES = {int: "int64_t", float: "double", str: "std::string", (list, int): "std::vector<int64_t>",
               (list, float): "std::vector<double>"}
_PASS = {"int64_t": "an int", "double": "a float", "std::string": "a string",
         "std::vector<int64_t>": "a list of ints", "std::vector<double>": "a list of floats"}


_parsed: dict[str, MetricSpec] = {}


def parse_metric_name(raw) -> MetricSpec:
    """`"a (pty)"` -> MetricSpec("a", PROPERTY); `"cpu_time (ns)(exc)"` -> ("cpu_time (ns)", EXCLUSIVE).
    `(inc)` is not a suffix we strip (Proton keeps it in the name). A `MetricSpec` passes through."""
    if isinstance(raw, MetricSpec):
        return raw
    spec = _parsed.get(raw)
    if spec is None:
        spec = _parsed[raw] = _parse(raw)
    return spec


def _parse(raw: str) -> MetricSpec:
    name = raw.strip()
    kind = MetricKind.INCLUSIVE
    if name.endswith("(exc)"):
        name, kind = name[:-5].strip(), MetricKind.EXCLUSIVE
    elif name.endswith("(pty)"):
        name, kind = name[:-5].strip(), MetricKind.PROPERTY
    return MetricSpec(name, kind)


def is_device_tensor(value) -> bool:
    """Whether `value` is a tensor on a device (not the host): its value is read at a flush, never
    at the call (reading it would wait for the device). Duck-typed: torch's `data_ptr` and
    `device.type`, as Proton tells them apart."""
    return hasattr(value, "data_ptr") and getattr(getattr(value, "device", None), "type", "cpu") != "cpu"


def device_placeholder(value):
    """A device tensor's type as a Python value, zero: what its metric is checked and created with
    at the call (Proton's rule: floating -> double, else int64; more than one element -> a vector)."""
    zero = 0.0 if value.is_floating_point() else 0
    n = value.numel()
    return [zero] * n if n > 1 else zero


def to_python_value(value):
    """Tensors and numpy values -> int, float or list; anything else is returned as is."""
    if hasattr(value, "tolist") and not isinstance(value, (list, tuple)):
        numel = getattr(value, "numel", None)
        if callable(numel) and numel() == 1 and getattr(value, "ndim", 1) == 0:
            return value.item()
        value = value.tolist()
    if isinstance(value, tuple):
        value = list(value)
    return value


def coerce_metric_value(name: str, value, kind: MetricKind = MetricKind.INCLUSIVE):
    """Applies Proton's roofline coercions (`flops*` -> float, `bytes` -> int) and checks the type:
    numbers, vectors of numbers, and strings for property and exclusive metrics."""
    t = type(value)
    if t is float or t is int:  # the common case, first (it runs on every hooked launch)
        if name in ROOFLINE_FLOAT_KEYS:
            return float(value)
        return int(value) if name in ROOFLINE_INT_KEYS else value
    if t is str and kind is not MetricKind.INCLUSIVE:
        return value
    value = to_python_value(value)
    if isinstance(value, bool):
        value = int(value)
    if not _is_number_or_vector(value):
        strings = "" if kind is not MetricKind.INCLUSIVE else " (strings only for '(pty)' and '(exc)' metrics)"
        raise TypeError(f"Metric {name!r} has unsupported type {type(value).__name__} ({value!r}): "
                        f"use int, float, a list of them, or a tensor{strings}")
    if name in ROOFLINE_FLOAT_KEYS:
        value = [float(v) for v in value] if isinstance(value, list) else float(value)
    elif name in ROOFLINE_INT_KEYS:
        value = [int(v) for v in value] if isinstance(value, list) else int(value)
    if isinstance(value, list) and not (value and all(type(v) is int for v in value)):
        return [float(v) for v in value]
    return value


def _is_number_or_vector(value) -> bool:
    if isinstance(value, list):
        return all(isinstance(v, (int, float)) for v in value)
    return isinstance(value, (int, float))


def check_metrics(metrics: dict) -> None:
    """Raises at the call that passes them if any metric name or value cannot be recorded, before
    anything is recorded (`TypeError`, one line naming the metric)."""
    if not isinstance(metrics, dict):
        raise TypeError(f"Metrics must be a dict of name -> value, not {type(metrics).__name__}")
    for raw, value in metrics.items():
        if not isinstance(raw, (str, MetricSpec)):
            raise TypeError(f"A metric name must be a string, not {type(raw).__name__} ({raw!r})")
        spec = parse_metric_name(raw)
        if is_device_tensor(value):
            if value.numel() == 0:
                raise TypeError(f"Metric {spec.name!r} is an empty device tensor: give one with at least one element")
            value = device_placeholder(value)
        coerce_metric_value(spec.name, value, spec.kind)


def type_name(value) -> str:
    if isinstance(value, list):
        elem = int if value and isinstance(value[0], int) else float
        return _TYPE_NAMES[(list, elem)]
    return _TYPE_NAMES[type(value)]


def merge_metric(name: str, kind: MetricKind, current, new):
    """The value a node holds after receiving `new` when it held `current` (None: nothing yet)."""
    if current is None:
        return list(new) if isinstance(new, list) else new
    if type(current) is type(new) and type(new) is not list:  # the common case: two equal scalars
        overwrites = kind is MetricKind.PROPERTY or kind is MetricKind.NODE_PROPERTY or type(new) is str
        return new if overwrites else current + new
    cur_t, new_t = type_name(current), type_name(new)
    if cur_t != new_t:
        raise MetricTypeError(
            f"Metric value type mismatch for valueId 0 ({name}): current={cur_t}, new={new_t} "
            f"(a metric keeps the type of its first value: pass {_PASS[cur_t]})")
    if isinstance(new, list) and len(new) != len(current):
        raise MetricTypeError(
            f"Vector metric size mismatch for valueId 0 ({name}): current={len(current)}, new={len(new)} "
            f"(a vector metric keeps the length of its first value: pass {len(current)} elements)")
    if kind is MetricKind.PROPERTY or kind is MetricKind.NODE_PROPERTY:
        return list(new) if isinstance(new, list) else new
    if isinstance(new, list):
        return [a + b for a, b in zip(current, new)]
    return current + new
