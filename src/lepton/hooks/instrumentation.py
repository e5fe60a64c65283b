"""The host side of `backend="instrumentation"`, on Triton's own compiler passes.

While active (`HookManager`), it
- turns Proton's kernel-side API on (`triton.profiler.flags.instrumentation_on`, which
  `lepton.language` and `triton.profiler.language` both read), so `enter_scope`/`exit_scope` in a
  kernel become the proton dialect's record ops;
- adds the proton passes to the NVIDIA backend's compiler, in Proton's order, with the mode's
  options (`compiler.instrumentation`);
- sets Triton's compile knob `instrumentation_mode`, so instrumented kernels are cached apart from
  plain ones, and a profile allocator that gives every launch a scratch buffer of its own;
- reads each instrumented kernel's scopes when Triton loads it (`kernel_load_end_hook`) and queues
  each launch, with its buffer and call path, on the backend (`collect.instrumentation`).
`deactivate` puts every one of those back as it was, so later kernels compile and run as before.
"""
from __future__ import annotations

import json
import threading

from ..collect.instrumentation.arena import ALIGNMENT
from ..collect.instrumentation.backend import InstrumentedKernel
from ..errors import UsageError
from ..hot_path import HOT_PATH
from ..mode import instrumentation_mode
from ..registry import REGISTRY
from .hook import Hook
from .proton_passes import ProtonPasses


class InstrumentationHook(Hook):
    """One per instrumentation session's mode; only one may be active at a time (as Proton's)."""

    priority = 0
    _active: InstrumentationHook | None = None

    def __init__(self, mode=None) -> None:
        self.mode = instrumentation_mode(mode)
        self.kernels: dict[int, InstrumentedKernel] = {}  # CUfunction -> what its launches need
        self._local = threading.local()  # .buffer: the calling thread's last scratch buffer
        self._saved: dict[str, object] = {}

    # -- activate / deactivate ------------------------------------------------------------------------
    def activate(self) -> None:
        if InstrumentationHook._active is not None:
            raise UsageError("Only one instrumentation session can be active at a time: finalize the other first")
        try:
            import triton
            from triton.backends import backends
            from triton.profiler.flags import flags
            from triton.runtime import _allocation
        except ImportError as e:
            raise UsageError(f"backend='instrumentation' needs Triton with its proton passes (3.5 or later): {e}") \
                from None
        compiler = backends["nvidia"].compiler
        if not hasattr(compiler, "instrumentation") or not hasattr(triton.knobs.compilation, "instrumentation_mode"):
            raise UsageError("backend='instrumentation': this Triton has no instrumentation pass hook "
                             "(compiler.instrumentation); Triton 3.5 or later has it")
        driver = triton.runtime.driver.active
        max_shared = driver.utils.get_device_properties(driver.get_current_device())["max_shared_mem"]
        runtime = triton.knobs.runtime
        self._saved = {"passes": compiler.instrumentation, "flag": flags.instrumentation_on,
                       "knob": triton.knobs.compilation.instrumentation_mode,
                       "allocator": _allocation._profile_allocator.get(),
                       "stages": runtime.add_stages_inspection_hook}
        self._passes = ProtonPasses(self.mode, max_shared)
        compiler.instrumentation = self._passes
        flags.instrumentation_on = True
        triton.knobs.compilation.instrumentation_mode = self._passes.cache_tag()
        runtime.add_stages_inspection_hook = self._passes.stages_hook(self._saved["stages"])
        _allocation.set_profile_allocator(self._allocate)
        runtime.kernel_load_end_hook.add(self.init_handle)
        runtime.launch_enter_hook.add(self.enter)
        InstrumentationHook._active = self

    def deactivate(self) -> None:
        if InstrumentationHook._active is not self:
            return
        import triton
        from triton.backends import backends
        from triton.profiler.flags import flags
        from triton.runtime import _allocation

        backends["nvidia"].compiler.instrumentation = self._saved["passes"]
        flags.instrumentation_on = self._saved["flag"]
        triton.knobs.compilation.instrumentation_mode = self._saved["knob"]
        _allocation.set_profile_allocator(self._saved["allocator"])
        runtime = triton.knobs.runtime
        runtime.add_stages_inspection_hook = self._saved["stages"]
        for chain, fn in ((runtime.kernel_load_end_hook, self.init_handle), (runtime.launch_enter_hook, self.enter)):
            try:
                chain.remove(fn)
            except ValueError:
                pass
        InstrumentationHook._active = None

    # -- Triton's callbacks ----------------------------------------------------------------------------
    def _allocate(self, size: int, alignment: int, stream):
        """Triton's profile allocator: a buffer per launch, so that no launch waits for the last
        one's to be read, from the backend's arena. Called right before the launch's enter hook,
        on its thread."""
        if alignment > ALIGNMENT or ALIGNMENT % alignment:
            raise RuntimeError(f"lepton: Triton asked for a profile buffer aligned to {alignment}, not {ALIGNMENT}")
        backend = REGISTRY.backends.get("instrumentation")
        if backend is None:  # no session to decode it: a buffer that is simply freed
            import torch

            buffer = torch.empty((max(size, 1),), dtype=torch.uint8, device="cuda")
        else:
            buffer = backend.scratch(size)
        self._local.buffer = buffer
        return buffer

    def init_handle(self, module, function, name: str, metadata_group: dict, hash: str) -> None:
        """A compiled kernel was loaded: if it is instrumented, its scopes and scratch layout."""
        if not function:
            return
        meta_path = next((p for k, p in metadata_group.items() if k.endswith(".json")), None)
        ttgir_path = next((p for k, p in metadata_group.items() if k.endswith(".ttgir")), None)
        if meta_path is None or ttgir_path is None:
            return
        with open(meta_path) as f:
            meta = json.load(f)
        scratch = int(meta.get("profile_scratch_size") or 0)
        if scratch <= 0:
            return  # compiled without instrumentation
        names, parents = _scopes(ttgir_path)
        units = int(meta["num_warps"])  # one recording unit per warp at the default granularity
        self.kernels[function] = InstrumentedKernel(name, scratch, units, names, parents)

    def enter(self, metadata) -> None:
        """Before a launch: queues it with its buffer and the call path it is launched in."""
        buffer = getattr(self._local, "buffer", None)
        self._local.buffer = None
        kernel = self.kernels.get(metadata.data.get("function"))
        backend = REGISTRY.backends.get("instrumentation")
        if buffer is None or kernel is None or backend is None or not HOT_PATH.active:
            return
        hp = HOT_PATH
        parent = hp.current()
        kernel_pid = hp.paths.op(parent, kernel.name)
        backend.queue(buffer, kernel, kernel_pid, ("ROOT", *hp.paths.names_of(kernel_pid)))

    def exit(self, metadata) -> None:
        pass


def _scopes(ttgir_path: str) -> tuple[dict[int, str], dict[int, int]]:
    """`(scope id -> name, child scope id -> parent id)` of a kernel's TTGIR, from Triton's proton
    dialect helpers."""
    from triton._C.libtriton import ir as triton_ir
    from triton._C.libtriton import nvidia as triton_nvidia
    from triton._C.libtriton import proton as triton_proton

    context = triton_ir.context()
    triton_ir.load_dialects(context)
    triton_nvidia.load_dialects(context)
    triton_proton.load_dialects(context)
    module = triton_ir.parse_mlir_module(ttgir_path, context)
    module.context = context
    names = {int(i): str(n) for i, n in triton_proton.get_scope_id_names(module)}
    parents = {int(c): int(p) for c, p in triton_proton.get_scope_id_parents(module)}
    return names, parents
