"""Writes Lepton's own profiles for the HTML report's tests (run from the repository's root:
`PYTHONPATH=src:tests:tests/unit python tests/data/report/make_report_fixtures.py`; deterministic
except for the pcsampling kernel times, which the tests do not pin).

- lepton_instrumentation.hatchet / .chrome_trace: the two real instrumentation buffers of
  tests/data/instrumentation (an H100, Triton 3.6's passes) through Lepton's decoder and writers:
  `ikernel` (load, store) under `instr`, `nested` (outer > inner) under `nest`.
- lepton_pcsampling.hatchet: synthetic CUPTI sample buffers (tests/twins) through Lepton's decoder,
  attribution and hatchet writer, with the hottest instructions and their code (a tiny ELF) that
  the pcsampling backend keeps under ROOT's "lepton" key.
"""
from __future__ import annotations

import json
import time
import types
from pathlib import Path

import numpy as np
from test_cubin import elf64
from twins import pc_samples as syn

from lepton.backends.cupti.pcsampling.attribute import SampleAttributor
from lepton.backends.cupti.pcsampling.backend import PCSamplingBackend
from lepton.backends.cupti.pcsampling.decode import SampleBuffers, StallTable, by_line
from lepton.backends.instrumentation.decode import decode_launch
from lepton.model.aggregate import kernel_paths
from lepton.model.paths import ROOT, PathTable
from lepton.model.profile import Profile
from lepton.model.records import CycleLaunch, DeviceInfo, KernelBatch
from lepton.model.trace import TraceData
from lepton.model.tree import TreeData
from lepton.runtime.session import Session
from lepton.writers import chrome_trace, hatchet

HERE = Path(__file__).resolve().parent
BUFFERS = HERE.parent / "instrumentation"
H100 = DeviceInfo("90", 132, 1_980_000, 2_619_000, 5120)


def real_launch(name: str, paths: PathTable, call: tuple[str, ...]) -> CycleLaunch:
    meta = json.loads((BUFFERS / f"{name}.json").read_text())
    raw = np.fromfile(BUFFERS / f"{name}.bin", np.uint8)
    events = decode_launch(raw, meta["profile_scratch_size"], meta["num_warps"])
    kernel = paths.extend(ROOT, [*call, meta["name"]])
    return CycleLaunch(kernel, meta["name"], dict(map(tuple, meta["scope_id_names"])),
                       dict(map(tuple, meta["scope_id_parents"])), events, ("ROOT", *call, meta["name"]))


def instrumentation() -> None:
    paths = PathTable()
    launches = [real_launch("load_store", paths, ("instr",)), real_launch("nested", paths, ("nest",))]
    tree, trace = TreeData(), TraceData()
    for launch in launches:
        tree.add_cycle_launch(launch, paths)
        trace.add_cycle_launch(launch, paths)
    devices = {"CUDA": {0: H100}}
    (HERE / "lepton_instrumentation.hatchet").write_bytes(hatchet.render(Profile(paths, tree, devices)))
    (HERE / "lepton_instrumentation.chrome_trace").write_bytes(chrome_trace.render(Profile(paths, trace, devices)))


ADD = syn.c_string("add_kernel")
LINES = {0x10: "/src/kernels/add.py:12@add_kernel", 0x20: "/src/kernels/add.py:14@add_kernel",
         0x30: "/src/kernels/add.py:15@add_kernel", 0x40: "/src/kernels/add.py:17@add_kernel"}
SAMPLES = [(7, ADD, 0x10, [(0, 40), (2, 6)]), (7, ADD, 0x20, [(0, 700), (1, 60), (7, 90)]),
           (7, ADD, 0x30, [(2, 120), (5, 30)]), (7, ADD, 0x40, [(7, 25), (3, 5)])]
ADD_CODE = bytes(range(0x50))  # five 16-byte "instructions": nvdisasm (when on PATH) gives their text


def pcsampling() -> None:
    paths = PathTable()
    step = paths.child(ROOT, "step")
    now = time.time_ns() + 10**9  # after the session starts
    rows = [(step, "add_kernel", 4000), (step, "add_kernel", 4200), (step, "scale_kernel", 900)]
    names = sorted({r[1] for r in rows})
    batch = KernelBatch.from_columns(
        parent_path=[r[0] for r in rows], names=names, name_id=[names.index(r[1]) for r in rows],
        start_ns=[now + 10_000 * i for i in range(len(rows))],
        end_ns=[now + 10_000 * i + r[2] for i, r in enumerate(rows)],
        launch_ns=[now] * len(rows), correlation_id=list(range(1, len(rows) + 1)))
    buffers = SampleBuffers(8, len(syn.REASONS))
    syn.fill(buffers, SAMPLES)
    attributor = SampleAttributor(period_log2=10)
    attributor.add(by_line(buffers.decode(), StallTable(*syn.reason_table()), _name,
                           lambda crc, fn, offset: LINES.get(offset, "")))
    attributor.attach(batch)
    session = Session(0, "pcsampling", "shadow", "tree", backend=None)
    session.set_active(True)
    session.ingest(batch, *kernel_paths(paths, batch))
    backend = PCSamplingBackend(cupti=object(), driver=types.SimpleNamespace(device_info=lambda ordinal: H100))
    backend._cubins = {7: elf64({".text.add_kernel": ADD_CODE})}
    backend._pc_samples = {(7, "add_kernel"): {pc: sum(n for _, n in stalls) for _, _, pc, stalls in SAMPLES}}
    profile = Profile(paths, session.current, {"CUDA": {0: H100}}, extras=backend.profile_extras())
    (HERE / "lepton_pcsampling.hatchet").write_bytes(hatchet.render(profile))


def _name(address: int) -> str:
    import ctypes

    return ctypes.string_at(address).decode()


if __name__ == "__main__":
    instrumentation()
    pcsampling()
