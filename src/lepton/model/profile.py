"""What a writer receives: one phase of one session, with the device table it refers to."""
from __future__ import annotations

from dataclasses import dataclass, field

from .paths import PathTable
from .records import DeviceInfo
from .trace import TraceData
from .tree import TreeData


@dataclass(frozen=True)
class RunCommand:
    """The command line that ran the profiled program and where, so that a tool can run the same
    program again (lepton-view --ncu). `argv[0]` is the executable (the Python interpreter for
    Python programs)."""

    argv: tuple[str, ...]
    cwd: str

    def as_metadata(self) -> dict:
        return {"command_line": list(self.argv), "cwd": self.cwd}


@dataclass
class Profile:
    paths: PathTable
    data: TreeData | TraceData
    # device_type -> device_id -> properties; only devices that ran a kernel are written.
    devices: dict[str, dict[int, DeviceInfo]] = field(default_factory=dict)
    dropped_records: int = 0
    timeline: bool = False  # a trace with CPU scopes, lane names and flows, beyond Proton's kernels
    command: RunCommand | None = None  # written where Proton's readers ignore it (writers.hatchet)
    extras: dict = field(default_factory=dict)  # more of the run's metadata, from the backend

    def metadata(self) -> dict:
        """The run's metadata the writers add beside Proton's tree ({} for none)."""
        out = self.command.as_metadata() if self.command is not None else {}
        return {**out, **self.extras}
