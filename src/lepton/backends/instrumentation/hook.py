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
  each launch, with its buffer and call path, on the backend (`backend`). Under
  `hook="triton"` the launch's kernel node is the op the launch hook made for it, named by the
  kernel's `launch_metadata` (Proton: `ROOT -> add_1024 -> <scopes>`); the launch hook runs first
  (`triton_knobs.add_by_priority`).
`deactivate` puts every one of those back as it was, so later kernels compile and run as before.

`enable_host_buffer` (Proton's debug switch, read by Proton's tests) makes every launch wait for
its kernel and leaves its scratch buffer on the host in `host_buffer`, behind Proton's header
(`host_buffer`). Set it before `start()`: the exit hook that fills it is
installed only then, so that launches pay nothing for it otherwise.
"""
from __future__ import annotations

import json
import threading
from typing import Any, ClassVar

from ...errors import UsageError
from ...hooks.hook import Hook
from ...mode import SamplingStrategy, instrumentation_mode
from ...runtime.hot_path import HOT_PATH
from ...runtime.registry import REGISTRY
from .arena import ALIGNMENT
from .backend import InstrumentedKernel
from .host_buffer import host_buffer, recorded_units
from .passes import ProtonPasses, sizes_buffers
from .sizing import buffer_choice


class InstrumentationHook(Hook):
    """One per instrumentation session's mode; only one may be active at a time (as Proton's)."""

    priority = 0
    _active: InstrumentationHook | None = None
    enable_host_buffer: ClassVar[bool] = False  # Proton's: set before start()
    host_buffer: ClassVar[Any] = None  # uint8 tensor on the host: header + the last launch's scratch
    # CUfunction -> what its launches need, for the process: Triton calls `init_handle` once per
    # compiled kernel, so a kernel loaded in an earlier session is launched in a later one unseen
    # (Proton's test_multi_session restarts a session on a kernel compiled in the first).
    _kernels: ClassVar[dict[int, InstrumentedKernel]] = {}

    def __init__(self, mode=None) -> None:
        self.mode = instrumentation_mode(mode)
        self.kernels = InstrumentationHook._kernels
        # .scratch: (device, address, bytes) of the calling thread's last scratch buffer; .host:
        # (that, kernel) of its launch in progress, for `exit` to copy to `host_buffer`
        self._local = threading.local()
        self._saved: dict[str, object] = {}
        # (call path, kernel) -> (the kernel's op node there, its names from ROOT): the path table
        # only grows, and finding the node took ~1 us a launch
        self._placed: dict[tuple[int, InstrumentedKernel], tuple[int, tuple[str, ...]]] = {}
        self._exit_installed = False

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
        runtime.launch_enter_hook.add(self.enter)  # after the launch hook's (lower priority)
        self._exit_installed = InstrumentationHook.enable_host_buffer and hasattr(runtime.launch_exit_hook, "add")
        if self._exit_installed:
            runtime.launch_exit_hook.add(self.exit)
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
        chains = [(runtime.kernel_load_end_hook, self.init_handle), (runtime.launch_enter_hook, self.enter)]
        if self._exit_installed:
            chains.append((runtime.launch_exit_hook, self.exit))
        for chain, fn in chains:
            try:
                chain.remove(fn)
            except (ValueError, AttributeError):
                pass
        self._exit_installed = False
        if InstrumentationHook.enable_host_buffer:  # as Proton: the last launch's copy goes too
            InstrumentationHook.host_buffer = None
        InstrumentationHook._active = None

    # -- Triton's callbacks ----------------------------------------------------------------------------
    def _allocate(self, size: int, alignment: int, stream):
        """Triton's profile allocator: a buffer per launch, so that no launch waits for the last
        one's to be read, from the backend's arena, as its address (what Triton's launcher
        passes on). Called right before the launch's enter hook, on its thread."""
        if alignment > ALIGNMENT or ALIGNMENT % alignment:
            raise RuntimeError(f"lepton: Triton asked for a profile buffer aligned to {alignment}, not {ALIGNMENT}")
        HOT_PATH.take_launch_op()  # an op an earlier launch's hook left is not this launch's
        backend = REGISTRY.backends.get("instrumentation")
        if backend is None:  # no session to decode it: a buffer that is simply freed
            import torch

            self._local.scratch = None
            return torch.empty((max(size, 1),), dtype=torch.uint8, device="cuda")
        scratch = self._local.scratch = backend.scratch(size)
        return scratch[1]

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
        target = str((meta.get("target") or {}).get("backend", "cuda"))
        with open(ttgir_path) as f:
            buffer = buffer_choice(f.read(), sizes_buffers(self.mode))
        self.kernels[function] = InstrumentedKernel(name, scratch, units, names, parents, target, buffer)

    def enter(self, metadata) -> None:
        """Before a launch: queues it with its buffer and the call path it is launched in; its
        kernel node is the launch hook's op for it, if that hook made one (it runs first)."""
        scratch = getattr(self._local, "scratch", None)
        self._local.scratch = None
        kernel = self.kernels.get(metadata.data.get("function"))
        hp = HOT_PATH
        op = hp.take_launch_op()
        if InstrumentationHook.enable_host_buffer:
            InstrumentationHook.host_buffer = None
            self._local.host = None if scratch is None or kernel is None else (scratch, kernel)
        backend = REGISTRY.backends.get("instrumentation")
        if scratch is None or kernel is None or backend is None or not hp.active:
            return
        if op >= 0:
            backend.queue(scratch, kernel, op, hp.paths.call_stack(op))
            return
        key = (hp.current(), kernel)
        placed = self._placed.get(key)
        if placed is None:
            kernel_pid = hp.paths.op(key[0], kernel.name)
            placed = self._placed[key] = (kernel_pid, hp.paths.call_stack(kernel_pid))
        backend.queue(scratch, kernel, *placed)

    def exit(self, metadata) -> None:
        """After a launch, installed only with `enable_host_buffer`: waits for the kernel and puts
        its scratch buffer, behind Proton's header, in `host_buffer`."""
        pending = getattr(self._local, "host", None)
        self._local.host = None
        backend = REGISTRY.backends.get("instrumentation")
        if pending is None or backend is None or not InstrumentationHook.enable_host_buffer:
            return
        (device, address, nbytes), kernel = pending
        buffer = backend.view(device, address, nbytes)
        mode = self.mode
        units = recorded_units(kernel.num_units, mode.sampling_strategy is SamplingStrategy.SELECTIVE,
                               mode.sampling_options)
        InstrumentationHook.host_buffer = _as_tensor(host_buffer(
            _on_host(buffer), scratch_size=kernel.scratch_size, num_warps=kernel.num_units,
            target_backend=kernel.target_backend, units=units))


def _on_host(buffer):
    """A launch's scratch buffer as a numpy array, once its kernel has run (a torch CUDA tensor:
    the device is synchronised; a numpy array, the tests' buffers: as it is)."""
    if not hasattr(buffer, "cpu"):
        return buffer
    import torch

    torch.cuda.synchronize(buffer.device)
    return buffer.cpu().numpy()


def _as_tensor(array):
    """`array` as a torch tensor (Proton's `host_buffer` is one), where torch is installed."""
    try:
        import torch
    except ImportError:
        return array
    return torch.from_numpy(array)


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
