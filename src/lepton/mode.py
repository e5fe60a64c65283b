"""Backend modes, as `triton.profiler.mode`: plain data whose `str()` is the mode string."""
from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum
from typing import Any, cast


class MetricType(Enum):
    CYCLE = "cycle"


class SamplingStrategy(Enum):
    NONE = "none"
    SELECTIVE = "selective"


class Granularity(Enum):
    CTA = "cta"
    WARP = "warp"
    WARP_2 = "warp_2"
    WARP_4 = "warp_4"
    WARP_8 = "warp_8"
    WARP_GROUP = "warp_group"
    WARP_GROUP_2 = "warp_group_2"
    WARP_GROUP_4 = "warp_group_4"
    WARP_GROUP_8 = "warp_group_8"


class BufferStrategy(Enum):
    CIRCULAR = "circular"
    FLUSH = "flush"


class BufferType(Enum):
    SHARED = "shared"
    GLOBAL = "global"


class Optimize(Enum):
    TIMESHIFT = "time_shift"
    SCHED_STORES = "sched_stores"
    SCHED_BARRIERS = "sched_barriers"
    CLOCK32 = "clock32"


metric_types = {"cycle": MetricType.CYCLE}
sampling_strategies = {e.value: e for e in SamplingStrategy}
granularities = {e.value: e for e in Granularity}
buffer_strategies = {e.value: e for e in BufferStrategy}
buffer_types = {e.value: e for e in BufferType}


@dataclass(frozen=True)
class BaseMode:
    name: str


@dataclass(frozen=True)
class PCSampling(BaseMode):
    name: str = "pcsampling"
    interval: int = 1000

    def __post_init__(self):
        if self.interval <= 0:
            raise ValueError("Interval must be a positive integer.")

    def __str__(self) -> str:
        return f"{self.name}:interval={self.interval}"


def _enum(table: dict, value, what: str):
    if isinstance(value, Enum):
        return value
    try:
        return table[str(value).lower()]
    except KeyError:
        raise ValueError(f"Unknown {what}: {value}") from None


@dataclass(frozen=True)
class InstrumentationMode(BaseMode):
    """Intra-kernel instrumentation options (strings are mapped to enums)."""

    metric_type: str | MetricType = MetricType.CYCLE
    sampling_strategy: str | SamplingStrategy = SamplingStrategy.NONE
    sampling_options: str = ""
    granularity: str | Granularity = Granularity.WARP
    buffer_strategy: str | BufferStrategy = BufferStrategy.CIRCULAR
    buffer_type: str | BufferType = BufferType.SHARED
    buffer_size: int = 0
    optimizations: str | list[Optimize] = field(default_factory=list)

    def __post_init__(self):
        s = object.__setattr__
        s(self, "metric_type", _enum(metric_types, self.metric_type, "metric type"))
        s(self, "sampling_strategy", _enum(sampling_strategies, self.sampling_strategy, "sampling strategy"))
        s(self, "granularity", _enum(granularities, self.granularity, "granularity"))
        s(self, "buffer_strategy", _enum(buffer_strategies, self.buffer_strategy, "buffer strategy"))
        s(self, "buffer_type", _enum(buffer_types, self.buffer_type, "buffer type"))
        given = self.optimizations
        opts: list[str | Optimize] = list(given) if not isinstance(given, str) else [
            o for o in given.split(",") if o]
        parsed = []
        for o in opts:
            try:
                parsed.append(o if isinstance(o, Optimize) else Optimize(o))
            except ValueError:
                raise ValueError(f"Unknown optimization: {o}") from None
        s(self, "optimizations", parsed)

    def __str__(self) -> str:
        optimizations = cast("list[Optimize]", self.optimizations)  # a list since __post_init__
        opts = ",".join(o.value for o in optimizations)
        return (f"{self.name}:metric_type={self.metric_type}:sampling_strategy={self.sampling_strategy}"
                f":sampling_options={self.sampling_options}:granularity={self.granularity}"
                f":buffer_strategy={self.buffer_strategy}:buffer_type={self.buffer_type}"
                f":buffer_size={self.buffer_size}:optimizations={opts}")


@dataclass(frozen=True)
class Default(InstrumentationMode):
    name: str = "default"


@dataclass(frozen=True)
class MMA(InstrumentationMode):
    name: str = "mma"


def instrumentation_mode(mode=None) -> InstrumentationMode:
    """The instrumentation mode that `start(backend="instrumentation", mode=...)` names: an
    `InstrumentationMode`, or Proton's string form, `"default"` or `"mma"` followed by
    `:option=value` pairs (e.g. `"default:buffer_type=global:granularity=warp_group"`), which is
    also what Proton's `triton.profiler.mode` objects print; None or "" is `Default()`."""
    if isinstance(mode, InstrumentationMode):
        return mode
    text = "" if mode is None else str(mode)
    name, *options = text.split(":") if text else ["default"]
    kinds = {"default": Default, "mma": MMA}
    if name not in kinds:
        raise ValueError(f"Unknown instrumentation mode: {name!r} (use 'default' or 'mma')")
    fields: dict[str, Any] = {}
    for option in options:
        key, sep, value = option.partition("=")
        if not sep:
            raise ValueError(f"Malformed instrumentation option: {option!r} (use key=value)")
        if key not in ("metric_type", "sampling_strategy", "sampling_options", "granularity", "buffer_strategy",
                       "buffer_type", "buffer_size", "optimizations"):
            raise ValueError(f"Unknown instrumentation option: {key!r}")
        if key == "buffer_size":
            fields[key] = int(value)
        elif key in ("sampling_options", "optimizations"):
            fields[key] = value
        elif value:  # Proton's mode objects print their enums as "GRANULARITY.WARP"
            fields[key] = value.rsplit(".", 1)[-1].lower()
    return kinds[name](**fields)
