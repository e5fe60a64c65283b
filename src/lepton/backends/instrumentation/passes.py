"""The compiler side of `backend="instrumentation"`: Triton's own proton passes, added to the NVIDIA
backend's pipeline in Proton's order (`compiler.instrumentation`), with two things Proton lacks:
- each kernel's profile buffer sized to what its warps can write, where that is bounded
  (`sizing`), unless the mode names a buffer size;
- a failure of the passes on a kernel is one line naming the kernel, the mode and what to change,
  instead of MLIR's bare `PassManager::run failed`.
Both come from wrapping the `llir` stage (Triton's `add_stages_inspection_hook`), which sees each
kernel's TTGIR just before the passes run on it.
"""
from __future__ import annotations

import re
import threading

from ...errors import UsageError
from ...mode import Granularity, InstrumentationMode, Optimize, SamplingStrategy
from .arena import ALIGNMENT
from .sizing import auto_buffer_size

_KERNEL_NAME = re.compile(r"tt\.func\s+(?:public\s+|private\s+)?@([\w$.]+)")


def sizes_buffers(mode: InstrumentationMode) -> bool:
    """Whether Lepton sizes kernels' buffers under `mode`: only where the mode leaves the size to
    the compiler and each warp records into its own segment (the passes' default granularity,
    every warp sampled)."""
    return (mode.buffer_size == 0 and mode.granularity is Granularity.WARP
            and mode.sampling_strategy is SamplingStrategy.NONE)


class ProtonPasses:
    """What Triton's NVIDIA compiler calls at `ttgpuir_to_llvmir` and `llvmir_to_llvm`."""

    def __init__(self, mode: InstrumentationMode, max_shared_mem: int) -> None:
        self.mode = mode
        self.max_shared_mem = max_shared_mem
        self.sizes_buffers = sizes_buffers(mode)
        self._compiling = threading.local()  # .buffer_size: the kernel being compiled on this thread

    def cache_tag(self) -> str:
        """Triton's `instrumentation_mode` knob, part of every compile key: the mode, marked where
        Lepton sizes buffers, so that Proton's binaries and Lepton's are cached apart."""
        return f"{self.mode}:lepton_buffer=auto" if self.sizes_buffers else str(self.mode)

    # -- Triton's compiler.instrumentation interface ----------------------------------------------------
    def load_dialects(self, ctx) -> None:
        from triton._C.libtriton import proton as triton_proton

        triton_proton.load_dialects(ctx)

    def patch(self, stage: str, pm, ctx) -> None:
        from triton._C.libtriton import passes as triton_passes
        from triton._C.libtriton import proton as triton_proton

        self.load_dialects(ctx)
        m = self.mode
        if stage == "ttgpuir_to_llvmir":
            enum = triton_proton
            buffer_size = getattr(self._compiling, "buffer_size", 0) or m.buffer_size
            triton_proton.add_convert_proton_to_protongpu(
                pm, getattr(enum.METRIC_TYPE, m.metric_type.name),
                getattr(enum.SAMPLING_STRATEGY, m.sampling_strategy.name), m.sampling_options,
                getattr(enum.GRANULARITY, m.granularity.name), getattr(enum.BUFFER_STRATEGY, m.buffer_strategy.name),
                getattr(enum.BUFFER_TYPE, m.buffer_type.name), buffer_size, self.max_shared_mem, 1, ALIGNMENT,
                Optimize.CLOCK32 not in m.optimizations)
            triton_passes.common.add_cse(pm)
            if Optimize.SCHED_STORES in m.optimizations:
                triton_proton.add_schedule_buffer_store(pm)
            triton_proton.add_allocate_proton_shared_memory(pm)
        elif stage == "llvmir_to_llvm":
            triton_proton.add_allocate_proton_global_scratch_buffer(pm)
            triton_proton.add_convert_proton_nvidia_gpu_to_llvm(pm)

    # -- the llir stage ---------------------------------------------------------------------------------
    def stages_hook(self, previous):
        """Triton's `add_stages_inspection_hook`: wraps the `llir` stage (after `previous`, the hook
        that was installed before, has had its turn)."""

        def inspect_stages(backend, stages, options, language, capability):
            if previous is not None:
                previous(backend, stages, options, language, capability)
            make_llir = stages.get("llir")
            if make_llir is not None:
                stages["llir"] = lambda src, metadata: self.make_llir(make_llir, src, metadata)

        return inspect_stages

    def make_llir(self, make_llir, src, metadata):
        """Runs Triton's `llir` stage on the TTGIR module `src` with this kernel's buffer size."""
        ttgir = str(src)
        if "proton.record" not in ttgir:
            return make_llir(src, metadata)
        self._compiling.buffer_size = auto_buffer_size(ttgir) if self.sizes_buffers else 0
        try:
            return make_llir(src, metadata)
        except RuntimeError as e:
            found = _KERNEL_NAME.search(ttgir)
            name = found.group(1) if found else "?"
            raise UsageError(
                f"Triton's proton passes could not instrument kernel {name} with mode '{self.mode}' ({e}): "
                "each warp's share of buffer_size must be a power of two bytes, and a buffer in shared memory "
                "must fit beside the kernel's own; try mode='default:buffer_type=global' or a smaller "
                "buffer_size") from None
        finally:
            self._compiling.buffer_size = 0
