"""`lepton-view --ncu REGEX`: the vendor deep-dive command for one kernel of the profile.

The hot spot found here, the next step is Nsight Compute (NVIDIA) or rocprof-compute (AMD) on that
one kernel in the same program. The program's command line comes from the profile (the lepton CLI
records its target's, the Python API `sys.orig_argv`; see model.hatchet_names.RUN_METADATA_KEY).

Which launch: a hatchet profile holds launch counts per call path, not launch order. ncu counts
`--launch-skip` over the launches that pass its `--kernel-name` filter, so skipping all but the last
of the kernel's launches in the profile (all call paths together) profiles the last one: past
warm-up, JIT and autotuning, the steady state. A profile that covered only part of the run counts
fewer launches than the program makes; the launch chosen is then an earlier one, still one launch
of that kernel.
"""
from __future__ import annotations

import math
import os
import re
import shlex
from dataclasses import dataclass

import numpy as np

from ..model.hatchet_names import COUNT, DEVICE_ID, DEVICE_TYPE
from .flat_tree import Tree
from .names import readable_names

NCU_SECTIONS = ("SpeedOfLight", "LaunchStats", "Occupancy", "ComputeWorkloadAnalysis",
                "MemoryWorkloadAnalysis", "SchedulerStats", "WarpStateStats")
PLACEHOLDER = "<the program and its arguments>"


class HandoffError(ValueError):
    """No kernel of the profile matches, or the profile has no kernels. One line."""


@dataclass(frozen=True)
class Handoff:
    command: str  # one shell line
    note: str  # what was chosen and why, for stderr
    runnable: bool  # False where the profile records no command line (a placeholder stands there)


def kernel_launches(tree: Tree) -> dict[str, int]:
    """Launches per kernel name (mangled, as in the file), summed over call paths. A kernel node
    has a device_id and a count."""
    device = tree.texts.get(DEVICE_ID)
    count = tree.numbers.get(COUNT)
    if device is None or count is None:
        return {}
    launches: dict[str, int] = {}
    for node in np.flatnonzero(np.array([d is not None for d in device]) & ~np.isnan(count)).tolist():
        name = tree.names[node]
        launches[name] = launches.get(name, 0) + int(count[node])
    return launches


def kernel_device_type(tree: Tree, name: str) -> str:
    types = tree.texts.get(DEVICE_TYPE)
    if types is None:
        return "CUDA"
    for node, node_name in enumerate(tree.names):
        if node_name == name and types[node] is not None:
            return str(types[node])
    return "CUDA"


def handoff(tree: Tree, pattern: str) -> Handoff:
    """The ncu (CUDA) or rocprof-compute (HIP) command for the kernel matching `pattern` (a regex
    searched in the raw, the readable and the full demangled name); where several kernels match,
    the one with the most time."""
    launches = kernel_launches(tree)
    if not launches:
        raise HandoffError("the profile has no kernels (no node with a device_id and a count)")
    names = list(launches)
    shown = dict(zip(names, readable_names(names)))
    full = dict(zip(names, readable_names(names, "full")))
    try:
        regex = re.compile(pattern)
    except re.error as err:
        raise HandoffError(f"bad --ncu pattern '{pattern}': {err}") from None
    matches = [n for n in names if regex.search(n) or regex.search(shown[n]) or regex.search(full[n])]
    if not matches:
        raise HandoffError(f"no kernel matches '{pattern}'; the kernels are: "
                           + ", ".join(sorted(shown.values())[:20]))
    times = _kernel_times(tree)
    chosen = max(matches, key=lambda n: (times.get(n, 0.0), n))
    count = launches[chosen]
    prefix, program, runnable = _program(tree)
    device_type = kernel_device_type(tree, chosen)
    if device_type == "HIP":
        command = prefix + _rocprof_compute(chosen) + " -- " + program
        what = "every dispatch of it (rocprof-compute's --dispatch counts all kernels' dispatches, " \
               "which a profile's tree does not order)"
    else:
        command = prefix + _ncu(chosen, count) + " -- " + program
        what = f"launch {count} of {count} (the last; --launch-skip {count - 1})"
    others = f"; {len(matches) - 1} other matching kernel(s) had less time" if len(matches) > 1 else ""
    note = f"{shown[chosen]}: {count} launch(es) in the profile; the command profiles {what}{others}"
    if not runnable:
        note += "; the profile records no command line (a Proton file?): put the program where it says " + PLACEHOLDER
    return Handoff(command, note, runnable)


def _kernel_times(tree: Tree) -> dict[str, float]:
    time = next((tree.numbers[k] for k in tree.numbers if k.startswith("time")), None)
    if time is None:
        return {}
    totals: dict[str, float] = {}
    for node, value in enumerate(time.tolist()):
        if not math.isnan(value):
            totals[tree.names[node]] = totals.get(tree.names[node], 0.0) + value
    return totals


def _program(tree: Tree) -> tuple[str, str, bool]:
    """(`cd DIR && ` where the program ran elsewhere, or "", its recorded command line as shell
    words, whether one is recorded)."""
    argv = tree.run.get("command_line")
    if not isinstance(argv, list) or not argv:
        return "", PLACEHOLDER, False
    cwd = tree.run.get("cwd")
    elsewhere = isinstance(cwd, str) and cwd and os.path.abspath(cwd) != os.getcwd()
    return (f"cd {shlex.quote(cwd)} && " if elsewhere else ""), shlex.join(str(word) for word in argv), True


def _exact(name: str) -> str:
    """An anchored regex matching `name` only (kernel names are identifier characters; anything
    else is escaped)."""
    return "^" + re.sub(r"([^A-Za-z0-9_])", r"\\\1", name) + "$"


def _ncu(name: str, count: int) -> str:
    base = ["--kernel-name-base", "mangled"] if name.startswith("_Z") else []
    sections = [word for section in NCU_SECTIONS for word in ("--section", section)]
    ncu = ["ncu", *base, "--kernel-name", f"regex:{_exact(name)}", "--launch-skip", str(count - 1),
           "--launch-count", "1", *sections]
    return shlex.join(ncu)


def _rocprof_compute(name: str) -> str:
    workload = re.sub(r"[^A-Za-z0-9_]", "_", name)[:40]
    tool = ["rocprof-compute", "profile", "--name", workload, "--kernel", name]
    return shlex.join(tool)
