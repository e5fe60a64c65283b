"""What CUPTI's records cost per step, and whether a kernel record's `queued` time falls inside its
launch call (GPU machine; one process).

1. Checks, over the overhead benchmark's steps, that each kernel's `queued` time (latency
   timestamps on) lies between the start and end of its launch call's API record: what lets
   `collect.cupti.backend` take a kernel's launch time from its own record.
2. Times the steps with CUPTI detached, attached with nothing on, and with kernel records, kernel
   records with latency timestamps, kernel and launch API records. The states run in a random order
   in each round (a state run first after a switch measured slower), and CUPTI is attached again
   every round; each state is given against the detached one per round (paired).

usage:  python bench/record_costs.py [--rounds 50] [--chunk 1000]
"""
from __future__ import annotations

import os
import random
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "src"))


def main() -> None:
    from workload import (overhead_step, per_step_us, print_paired, rounds_and_chunk, set_cupti_records,
                          step_loops)

    a = rounds_and_chunk(rounds=50, chunk=1000)

    import torch

    import lepton
    from lepton.collect.cupti import layout, parser
    from lepton.collect.cupti.collector import Collector
    from lepton.runtime import RUNTIME

    step = overhead_step()
    bare, _ = step_loops(step, lepton.scope)
    out = tempfile.mkdtemp()

    # 1. queued inside the launch call
    buffers = []
    add = Collector.add_buffer

    def add_and_copy(self, buf, valid):
        buffers.append(buf[:valid].copy())
        add(self, buf, valid)

    Collector.add_buffer = add_and_copy
    lepton.start(os.path.join(out, "check"))
    RUNTIME.backends["cupti"]._launch_threads_needed()  # API records too, to check against
    bare(200)
    torch.cuda.synchronize()
    lepton.finalize()
    Collector.add_buffer = add
    calls, queued = {}, []
    for buf in buffers:
        offsets, _ = parser.walk(buf, len(buf), layout.size_table())
        u32, u64 = buf.view("<u4"), buf.view("<u8")
        for off in offsets.tolist():
            kind = int(u32[off // 4])
            if kind in layout.API_KINDS:
                corr = int(u32[(off + layout.Api.correlation_id) // 4])
                calls[corr] = (int(u64[(off + layout.Api.start) // 8]), int(u64[(off + layout.Api.end) // 8]))
            elif kind in layout.KERNEL_KINDS:
                queued.append((int(u32[(off + layout.Kernel.correlation_id) // 4]),
                               int(u64[(off + layout.Kernel.queued) // 8])))
    inside = sum(1 for corr, q in queued if corr in calls and calls[corr][0] <= q <= calls[corr][1])
    print(f"kernels {len(queued)}, with an API record {sum(corr in calls for corr, _ in queued)}, "
          f"queued inside the launch call {inside}")

    # 2. costs
    states = {"attached, nothing": (), "kernel": ("kernel",), "kernel + queued": ("kernel", "queued"),
              "kernel + API": ("kernel", "driver", "runtime")}
    per_step = {s: [] for s in ("detached", *states)}

    def timed(name):
        per_step[name].append(per_step_us(bare, a.chunk))

    rng = random.Random(1)
    for r in range(a.rounds):
        timed("detached")
        lepton.start(os.path.join(out, f"r{r}"))
        backend = RUNTIME.backends["cupti"]
        backend._launch_threads_needed()  # the API kinds on and masked once; toggled below
        order = list(states.items())
        rng.shuffle(order)
        for name, on in order:
            set_cupti_records(backend, on)
            timed(name)
        lepton.finalize()
    print_paired(per_step, a.rounds, a.chunk)

if __name__ == "__main__":
    main()
