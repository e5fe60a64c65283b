"""Writes Lepton's own profiles of tests/data/viewer, one of each kind lepton-view picks a default
metric for. From the repository root:
`PYTHONPATH=src:tests python tests/data/viewer/make_lepton_fixtures.py`.

- lepton_cpu.hatchet: `lepton -b cpu examples/hello.py`, a real run (its times are that run's),
  with the recorded command line and folder made neutral.
- lepton_pcsampling.hatchet: instruction samples of a Triton kernel (with source lines) and of a
  torch kernel (a mangled C++ name, no line information), in two scopes: synthetic CUPTI sample
  buffers (tests/twins) through Lepton's real decoder, attribution and hatchet writer, with the
  hottest instructions in the run's metadata as the backend keeps them.
- lepton_instrumentation.hatchet: the real H100 buffer tests/data/instrumentation/load_store.bin
  through Lepton's decoder and writer (scopes `load` and `store` inside `ikernel`).
"""
from __future__ import annotations

import ctypes
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from twins import pc_samples as syn

from lepton.backends.cupti.pcsampling.attribute import SampleAttributor
from lepton.backends.cupti.pcsampling.decode import SampleBuffers, StallTable, by_line
from lepton.backends.instrumentation.decode import decode_launch
from lepton.model.aggregate import kernel_paths
from lepton.model.hatchet_names import SASS_KEY
from lepton.model.paths import ROOT, PathTable
from lepton.model.profile import Profile
from lepton.model.records import CycleLaunch, KernelBatch
from lepton.model.tree import TreeData
from lepton.runtime.session import Session
from lepton.writers import hatchet

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[2]
NEUTRAL_RUN = {"command_line": ["/usr/bin/python3", "examples/hello.py"], "cwd": "/home/user/lepton"}
FILL = "_ZN2at6native29vectorized_elementwise_kernelILi4ENS0_11FillFunctorIfEESt5arrayIPcLm1EEEEviT0_T1_"
MATMUL_LINES = {0x10: "/home/user/kernels/matmul.py:41@matmul_kernel",
                0x20: "/home/user/kernels/matmul.py:44@matmul_kernel",
                0x40: "/home/user/kernels/matmul.py:47@matmul_kernel"}


def lepton_cpu() -> bytes:
    with tempfile.TemporaryDirectory() as folder:
        env = {**os.environ, "PYTHONPATH": str(REPO / "src")}
        command = [sys.executable, "-m", "lepton", "-b", "cpu", "-n", f"{folder}/cpu", "examples/hello.py"]
        subprocess.run(command, cwd=REPO, env=env, check=True, stdout=subprocess.DEVNULL)
        document = json.loads(Path(f"{folder}/cpu.hatchet").read_text())
    document[0]["lepton"] = NEUTRAL_RUN
    return ("\n" + json.dumps(document, indent=4, sort_keys=True) + "\n").encode()


def lepton_pcsampling() -> bytes:
    paths = PathTable()
    step, warmup = paths.child(ROOT, "step"), paths.child(ROOT, "warmup")
    rows = [(step, "matmul_kernel", 40_000), (step, FILL, 6_000), (warmup, "matmul_kernel", 10_000)]
    names = sorted({name for _, name, _ in rows})
    now = time.time_ns() + 10**9  # after the session below starts
    batch = KernelBatch.from_columns(
        parent_path=[r[0] for r in rows], names=names, name_id=[names.index(r[1]) for r in rows],
        start_ns=[now + 100_000 * i for i in range(len(rows))],
        end_ns=[now + 100_000 * i + r[2] for i, r in enumerate(rows)], launch_ns=[now] * len(rows),
        correlation_id=list(range(1, len(rows) + 1)))
    matmul, fill = syn.c_string("matmul_kernel"), syn.c_string(FILL)
    buffers = SampleBuffers(8, len(syn.REASONS))
    syn.fill(buffers, [(7, matmul, 0x10, [(0, 500), (2, 120)]), (7, matmul, 0x20, [(2, 300), (7, 40)]),
                       (7, matmul, 0x40, [(0, 60)]), (9, fill, 0x80, [(0, 90), (2, 30)])])
    attributor = SampleAttributor(period_log2=10)
    attributor.add(by_line(buffers.decode(), StallTable(*syn.reason_table()),
                           lambda address: ctypes.string_at(address).decode(),
                           lambda crc, function, offset: MATMUL_LINES.get(offset, "") if crc == 7 else ""))
    attributor.attach(batch)
    session = Session(0, "pcsampling", "shadow", "tree", backend=None)
    session.set_active(True)
    session.ingest(batch, *kernel_paths(paths, batch))
    sass = {"matmul_kernel": [[0x10, 620, "LDG.E.128 R4, desc[UR6][R2.64]"],
                              [0x20, 340, "HMMA.16816.F32 R8, R4, R12, R8"],
                              [0x40, 60, "STG.E.128 desc[UR6][R6.64], R8"]],
            FILL: [[0x80, 120, "STG.E desc[UR4][R2.64], R5"]]}
    return hatchet.render(Profile(paths, session.current, extras={SASS_KEY: sass}))


def lepton_instrumentation() -> bytes:
    data_dir = REPO / "tests" / "data" / "instrumentation"
    meta = json.loads((data_dir / "load_store.json").read_text())
    events = decode_launch(np.fromfile(data_dir / "load_store.bin", np.uint8), meta["profile_scratch_size"],
                           meta["num_warps"])
    paths = PathTable()
    kernel = paths.extend(ROOT, ["instr", meta["name"]])
    launch = CycleLaunch(kernel, meta["name"], dict(map(tuple, meta["scope_id_names"])),
                         dict(map(tuple, meta["scope_id_parents"])), events, ("ROOT", meta["name"]))
    data = TreeData()
    data.add_cycle_launch(launch, paths)
    return hatchet.render(Profile(paths, data))


def main() -> None:
    for name, make in [("lepton_cpu", lepton_cpu), ("lepton_pcsampling", lepton_pcsampling),
                       ("lepton_instrumentation", lepton_instrumentation)]:
        (HERE / f"{name}.hatchet").write_bytes(make())


if __name__ == "__main__":
    main()
