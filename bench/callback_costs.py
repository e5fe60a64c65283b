"""What CUPTI's subscription and API callbacks cost per step, apart from the activity records
(GPU machine; one process).

Times overhead.py's bare step with CUPTI detached, and attached in each of these states, in a random
order per round, each against the detached state of its round (paired):
- subscribed with no callback on; with the graph-node resource callbacks; with the graph launch
  callbacks (what every Lepton session has on);
- the torch launch calls' callbacks (the python context) with a callback taking no arguments (CUPTI's
  and ctypes' own cost), with a no-op taking CUPTI's four, and with Lepton's callback;
- the driver's `cuLaunchKernel` instead (the runtime calls it inside `cudaLaunchKernel`), and
  Triton's `cuLaunchKernelEx`;
- kernel records with `queued`, with and without a subscription.

usage:  python bench/callback_costs.py [--rounds 20] [--chunk 1000]
"""
from __future__ import annotations

import ctypes
import os
import random
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "src"))


def main() -> None:
    from workload import overhead_step, per_step_us, print_paired, rounds_and_chunk, step_loops

    a = rounds_and_chunk(rounds=20, chunk=1000)

    from lepton.collect.cupti import backend, layout
    from lepton.collect.cupti.bindings import CallbackFunc, Cupti

    bare, _ = step_loops(overhead_step(), None)
    cupti = Cupti()
    no_args = ctypes.CFUNCTYPE(None)(lambda: None)  # called with CUPTI's 4 arguments, which it ignores
    callbacks = {"none": CallbackFunc(ctypes.cast(no_args, ctypes.c_void_p).value),
                 "no-op": CallbackFunc(lambda userdata, domain, cbid, cbdata: None),
                 "lepton": backend._C_CALLBACK}
    resource = [(layout.CB_DOMAIN_RESOURCE, cbid) for cbid in
                (layout.CBID_RESOURCE_GRAPHNODE_CREATED, layout.CBID_RESOURCE_GRAPHNODE_CLONED)]
    graph_launch = sorted(backend._GRAPH_LAUNCH_WATCH)
    torch_launch = [(layout.CB_DOMAIN_RUNTIME_API, cbid) for cbid in (211, 214, 430, 431)]
    driver_launch = [(layout.CB_DOMAIN_DRIVER_API, cbid) for cbid in (307, 442)]  # cuLaunchKernel(_ptsz)
    triton_launch = [(layout.CB_DOMAIN_DRIVER_API, cbid) for cbid in layout.TRITON_LAUNCH_CBIDS]
    # name: (callback or None for no subscription, callbacks on, kernel records)
    states = {
        "subscribed": ("none", [], False),
        "+ resource callbacks": ("none", resource, False),
        "+ graph launch callbacks": ("none", graph_launch, False),
        "torch launches, no args": ("none", torch_launch, False),
        "torch launches, no-op": ("no-op", torch_launch, False),
        "torch launches, lepton": ("lepton", torch_launch, False),
        "cuLaunchKernel, no args": ("none", driver_launch, False),
        "cuLaunchKernelEx, no args": ("none", triton_launch, False),
        "kernel+queued, unsubscribed": (None, [], True),
        "kernel+queued, subscribed": ("none", resource + graph_launch, True),
    }
    per_step = {s: [] for s in ("detached", *states)}
    rng = random.Random(4)
    for _ in range(a.rounds):
        per_step["detached"].append(per_step_us(bare, a.chunk))
        order = list(states.items())
        rng.shuffle(order)
        for name, (callback, watched, kernels) in order:
            handle = cupti.subscribe(callbacks[callback]) if callback else None
            for domain, cbid in watched:
                cupti.enable_callback(True, handle, domain, cbid)
            if kernels:
                cupti.register_buffer_callbacks(backend._C_REQUESTED, backend._C_COMPLETED)
                cupti.enable(layout.KIND_CONCURRENT_KERNEL)
                cupti.enable_latency_timestamps(True)
            per_step[name].append(per_step_us(bare, a.chunk))
            if kernels:
                cupti.disable(layout.KIND_CONCURRENT_KERNEL)
                cupti.enable_latency_timestamps(False)
                cupti.flush_all(True)
            if handle is not None:
                cupti.unsubscribe(handle)
            cupti.detach()
    print_paired(per_step, a.rounds, a.chunk)

if __name__ == "__main__":
    main()
