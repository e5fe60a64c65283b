"""What the python context and `hook="triton"` cost per step, part by part, in one process (GPU
machine).

Issue 6's targets are loop ratios of overhead.py's step (1 Triton and 2 torch launches, inside a
scope). Between processes, host speed varies more than these parts cost, so here the states of one
session alternate in short chunks in one process (as `gpu_costs.py` does for the shadow context).

Part 1, a `context="python"` session; each state adds one part to the one before it:
- `no launch stacks`: no CUPTI launch callbacks, no Triton stack hook (the shadow context's cost
  plus the python context's slower scopes);
- `+ torch callbacks, no stack walk`: CUPTI's enter and exit callbacks on the runtime's launch
  APIs, through ctypes, storing ROOT as each launch's stack;
- `+ stack walk (torch as it runs)`: the callback walks the Python stack;
- `+ Triton stack hook (as it runs)`: Triton's launch hook marks the stacks of Triton's launches;
- `Triton by callbacks instead`: the same, with `cuLaunchKernelEx` watched by CUPTI callbacks
  instead of the Triton hook.

Part 2, a `hook="triton"` shadow session:
- `no Triton hook`: Triton's empty hook chains;
- `hook: metadata.get() only`: the least any metadata hook does (Triton builds the LazyDict and
  calls the kernel's `launch_metadata`);
- `Lepton's hook (as it runs)`.

usage:  python bench/launch_costs.py [--rounds 20] [--chunk 300]
"""
from __future__ import annotations

import functools
import os
import statistics
import sys
import tempfile
from collections.abc import Callable

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "src"))


def alternate(states: dict[str, Callable[[], Callable[[int], None]]], rounds: int, chunk: int) -> dict[str, float]:
    """Median µs per step of each state; `states[name]()` switches to the state and returns its loop."""
    from workload import per_step_us

    times: dict[str, list[float]] = {name: [] for name in states}
    for _ in range(rounds):
        for name, switch in states.items():
            times[name].append(per_step_us(switch(), chunk))
    return {name: statistics.median(t) for name, t in times.items()}


def print_table(title: str, medians: dict[str, float], rounds: int) -> None:
    names = list(medians)
    print(f"{title} (µs per step, median of {rounds}; + against the state above, total against the first)")
    for i, name in enumerate(names):
        step = medians[name] - medians[names[i - 1]] if i else 0.0
        print(f"  {name:36} {medians[name]:8.2f} {step:+7.2f} {medians[name] - medians[names[0]]:+7.2f}")


def python_context_parts(step, rounds: int, chunk: int) -> dict[str, float]:
    import lepton
    from lepton.collect.cupti import backend as backend_module
    from lepton.hooks.launch import mark_triton_stacks
    from lepton.runtime import RUNTIME
    from workload import step_loops

    lepton.start(os.path.join(tempfile.mkdtemp(), "python"), context="python")
    backend = RUNTIME.backends["cupti"]
    stacks = RUNTIME.python_timeline
    caller_path = RUNTIME.caller_path
    _, scoped = step_loops(step, lepton.scope)

    def state(torch_callbacks: bool, walk: bool, triton: str) -> Callable[[int], None]:
        hooked = triton == "hook" and mark_triton_stacks(stacks, caller_path)
        if triton != "hook":
            mark_triton_stacks(None)
        on = torch_callbacks or triton == "callbacks"
        # With `triton_stacks` given, the backend leaves cuLaunchKernelEx unwatched.
        backend.set_python_context(on, caller_path if walk else (lambda: 0),
                                   stacks if triton != "callbacks" and (hooked or triton == "") else None)
        return scoped

    states = {
        "no launch stacks": functools.partial(state, False, False, ""),
        "+ torch callbacks, no stack walk": functools.partial(state, True, False, ""),
        "+ stack walk (torch as it runs)": functools.partial(state, True, True, ""),
        "+ Triton stack hook (as it runs)": functools.partial(state, True, True, "hook"),
        "Triton by callbacks instead": functools.partial(state, True, True, "callbacks"),
    }
    try:
        return alternate(states, rounds, chunk)
    finally:
        state(True, True, "hook")
        lepton.finalize()
        assert backend_module._Shared.backend is None


def hook_parts(step, rounds: int, chunk: int) -> dict[str, float]:
    import lepton
    from triton import knobs
    from workload import step_loops, triton_hook_pairs

    lepton.start(os.path.join(tempfile.mkdtemp(), "hook"), hook="triton")
    runtime = knobs.runtime
    pairs = triton_hook_pairs()
    if pairs is None:
        print("  (Lepton's hook is not the sole hook here: its empty chains are unknown; part 2 skipped)")
        lepton.finalize()
        return {}
    lepton_hooks, empty, metadata_only = pairs
    _, scoped = step_loops(step, lepton.scope)

    def state(enter, exit) -> Callable[[int], None]:
        runtime.launch_enter_hook, runtime.launch_exit_hook = enter, exit
        return scoped

    states = {
        "no Triton hook": functools.partial(state, *empty),
        "hook: metadata.get() only": functools.partial(state, *metadata_only),
        "Lepton's hook (as it runs)": functools.partial(state, *lepton_hooks),
    }
    try:
        return alternate(states, rounds, chunk)
    finally:
        state(*lepton_hooks)
        lepton.finalize()


def main() -> None:
    from workload import overhead_step, rounds_and_chunk

    a = rounds_and_chunk(rounds=20, chunk=300)

    step = overhead_step()
    print_table("python context", python_context_parts(step, a.rounds, a.chunk), a.rounds)
    hooks = hook_parts(step, a.rounds, a.chunk)
    if hooks:
        print_table("hook='triton'", hooks, a.rounds)


if __name__ == "__main__":
    main()
