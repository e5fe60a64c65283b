"""Stand-ins for the parts of Triton the launch hook talks to, for tests on machines without it:
`triton.knobs.runtime` (where hooks are installed) and Triton's `LazyDict`."""
from __future__ import annotations

import sys
import types


class LazyDict:
    """Triton's LazyDict (3.3 to 3.6): `data` holds name/function/stream; `extras` the
    `launch_metadata` calls that `get()` makes once. `fn`: a launch_metadata taking no arguments."""

    def __init__(self, data, fn=None):
        self.data = data
        self.extras = []
        if fn is not None:
            self.add(fn, ())

    def get(self):
        for func, args in self.extras:
            self.data = self.data | func(*args)
        self.extras.clear()
        return self.data

    def add(self, func, args):
        self.extras.append((func, args))


class HookChain:
    """Triton 3.6's chain of launch hooks (`knobs.runtime.launch_enter_hook`): tools add theirs."""

    def __init__(self):
        self.calls = []

    def add(self, func):
        if func not in self.calls:
            self.calls.append(func)

    def remove(self, func):
        self.calls.remove(func)

    def __bool__(self):
        return bool(self.calls)

    def __call__(self, *args):
        for call in self.calls:
            call(*args)


def call_exit_hook(runtime, metadata) -> None:
    """What Triton's C launcher does after a launch: calls the exit slot unless it is None."""
    if runtime.launch_exit_hook is not None:
        runtime.launch_exit_hook(metadata)


def install_knobs(monkeypatch, chain: bool = False) -> types.SimpleNamespace:
    """Makes `from triton import knobs` find a fresh stand-in; returns its `runtime`. Its hooks
    are one slot each (Triton 3.3 to 3.5) or, with `chain`, `HookChain`s (Triton 3.6)."""
    if chain:
        runtime = types.SimpleNamespace(launch_enter_hook=HookChain(), launch_exit_hook=HookChain())
    else:
        runtime = types.SimpleNamespace(launch_enter_hook=None, launch_exit_hook=None)
    triton = types.ModuleType("triton")
    triton.knobs = types.ModuleType("triton.knobs")
    triton.knobs.runtime = runtime
    triton.compiler = types.ModuleType("triton.compiler")
    triton.compiler.compiler = types.ModuleType("triton.compiler.compiler")
    triton.compiler.compiler.LazyDict = LazyDict
    monkeypatch.setitem(sys.modules, "triton", triton)
    monkeypatch.setitem(sys.modules, "triton.knobs", triton.knobs)
    monkeypatch.setitem(sys.modules, "triton.compiler", triton.compiler)
    monkeypatch.setitem(sys.modules, "triton.compiler.compiler", triton.compiler.compiler)
    return runtime


def knobs_for_the_hook(monkeypatch, chain: bool = False):
    """Yields `install_knobs(monkeypatch, chain)`'s runtime with Lepton's launch hook unfiltered,
    and leaves the hook unfiltered after (the body of the tests' knobs fixtures)."""
    from lepton.hooks.launch import LaunchHook

    runtime = install_knobs(monkeypatch, chain=chain)
    LaunchHook().configure()
    yield runtime
    LaunchHook().configure()


def install_instrumentation(monkeypatch, runtime) -> types.SimpleNamespace:
    """Adds to `install_knobs(monkeypatch, chain=True)`'s stand-in what `InstrumentationHook`'s
    activate and deactivate touch (the NVIDIA compiler's `instrumentation` slot, the compile knob,
    Proton's flag, the profile allocator, the device's shared memory); returns them."""
    triton = sys.modules["triton"]
    runtime.add_stages_inspection_hook = None
    runtime.kernel_load_end_hook = HookChain()
    triton.knobs.compilation = types.SimpleNamespace(instrumentation_mode="")
    compiler = types.SimpleNamespace(instrumentation=None)
    allocator = types.SimpleNamespace(current=None)
    allocation = types.ModuleType("triton.runtime._allocation")
    allocation._profile_allocator = types.SimpleNamespace(get=lambda: allocator.current)
    allocation.set_profile_allocator = lambda fn: setattr(allocator, "current", fn)
    driver = types.SimpleNamespace(get_current_device=lambda: 0, utils=types.SimpleNamespace(
        get_device_properties=lambda device: {"max_shared_mem": 232448}))
    modules = {
        "triton.backends": {"backends": {"nvidia": types.SimpleNamespace(compiler=compiler)}},
        "triton.runtime": {"driver": types.SimpleNamespace(active=driver), "_allocation": allocation},
        "triton.profiler": {},
        "triton.profiler.flags": {"flags": types.SimpleNamespace(instrumentation_on=False)},
    }
    for name, attributes in modules.items():
        module = types.ModuleType(name)
        module.__dict__.update(attributes)
        monkeypatch.setitem(sys.modules, name, module)
        setattr(sys.modules[name.rsplit(".", 1)[0]], name.rsplit(".", 1)[1], module)
    monkeypatch.setitem(sys.modules, "triton.runtime._allocation", allocation)
    return types.SimpleNamespace(compiler=compiler, allocator=allocator,
                                 flags=sys.modules["triton.profiler.flags"].flags)
