"""Instruction sampling (`mode="pcsampling"`): CUPTI's PC sampling API through ctypes, continuously.

What it does differently from Proton 3.6, and why it is cheap:
- sampling runs from enable to disable in each CUDA context (no start/stop control): no
  `cuCtxSynchronize` and no start/stop per launch, kernels stay concurrent (CONCURRENT_KERNEL
  records, as in the default mode);
- CUPTI's buffers are drained (`cuptiPCSamplingGetData`) while the program runs, by a background
  thread every `DRAIN_PERIOD_S` (`drain`), so they never fill however long the run; also at each
  flush and at module unload; the drains are decoded with numpy (`decode`);
- a CUPTI failure in a drain never loses the profile: the kernel times and the samples drained
  before it are kept, and one line says what failed and what was dropped;
- samples are attributed to call paths when the kernel records of their launches are delivered
  (`attribute`), since `correlationId` is 0 in continuous mode;
- cubins are kept by CRC from every module loaded while sampling and from Triton's compiled kernels
  (also those compiled before `start`), so source lines resolve for every Triton kernel Lepton has
  seen (`cuptiGetSassToSourceCorrelation`, cached per function and PC offset).

Threads: `_graph_callback` (module and context events) runs on the thread that loads a module or
creates a context, periodic drains on the drain thread; drains hold `_pcs_lock`, so no two read one
buffer at once.
"""
from __future__ import annotations

import contextlib
import ctypes
import gc
import sys
import threading
from ctypes import POINTER, c_char_p, c_size_t, c_uint32, c_uint64, c_void_p

import numpy as np

from ....errors import BackendError, UsageError
from ....model.hatchet_names import SASS_CODE_KEY, SASS_KEY
from .. import layout
from ..backend import CuptiBackend
from ..bindings import Cupti, CuptiError
from . import layout as L
from . import sass as sass_extras
from .attribute import SampleAttributor
from .decode import SampleBuffers, StallTable, by_line
from .drain import Drainer

SASS_KERNELS = 10  # kernels whose hottest instructions a profile keeps, the most sampled first
PCS_PER_GET = 4096  # PCs per cuptiPCSamplingGetData: 4096 x (64 B + ~40 reasons x 8 B) ≈ 1.5 MiB
PCS_AT_DISABLE = 16384  # what disabling hands over fits here; CUPTI discards what does not
SCRATCH_BUFFER_BYTES = 16 << 20  # Proton's: CUPTI's host buffer of PC records between drains
HARDWARE_BUFFER_BYTES = 128 << 20  # Proton's: the device buffer the SMs write samples to
# CUPTI's worker threads move the device buffer into the scratch buffer this often; at its default
# no sample reached a read (docs/design.md, "Draining while it runs").
WORKER_SLEEP_MS = 10
DRAIN_PERIOD_S = 0.05  # the drain thread's period (a drain's cost is mostly per distinct PC)
_MAX_GETS_PER_DRAIN = 100_000  # a runaway guard: 4e8 PCs


class _Ctx(ctypes.Structure):  # Enable/Disable/Start/Stop params (24 B)
    _fields_ = [("size", c_size_t), ("pPriv", c_void_p), ("ctx", c_void_p)]


class _GetData(ctypes.Structure):  # CUpti_PCSamplingGetDataParams (32 B)
    _fields_ = [("size", c_size_t), ("pPriv", c_void_p), ("ctx", c_void_p), ("pcSamplingData", c_void_p)]


class _NumStallReasons(ctypes.Structure):  # CUpti_PCSamplingGetNumStallReasonsParams (32 B)
    _fields_ = [("size", c_size_t), ("pPriv", c_void_p), ("ctx", c_void_p), ("numStallReasons", POINTER(c_size_t))]


class _StallReasons(ctypes.Structure):  # CUpti_PCSamplingGetStallReasonsParams (48 B)
    _fields_ = [("size", c_size_t), ("pPriv", c_void_p), ("ctx", c_void_p), ("numStallReasons", c_size_t),
                ("stallReasonIndex", POINTER(c_uint32)), ("stallReasons", POINTER(c_char_p))]


class _ConfigInfo(ctypes.Structure):  # CUpti_PCSamplingConfigurationInfo (32 B): the union as 3 words
    _fields_ = [("attributeType", c_uint32), ("attributeStatus", c_uint32), ("word0", c_uint64),
                ("word1", c_uint64), ("word2", c_uint64)]


class _ConfigParams(ctypes.Structure):  # CUpti_PCSamplingConfigurationInfoParams (40 B)
    _fields_ = [("size", c_size_t), ("pPriv", c_void_p), ("ctx", c_void_p), ("numAttributes", c_size_t),
                ("pPCSamplingConfigurationInfo", POINTER(_ConfigInfo))]


class _CubinCrc(ctypes.Structure):  # CUpti_GetCubinCrcParams (32 B)
    _fields_ = [("size", c_size_t), ("cubinSize", c_size_t), ("cubin", c_void_p), ("cubinCrc", c_uint64)]


class _SassToSource(ctypes.Structure):  # CUpti_GetSassToSourceCorrelationParams (64 B)
    _fields_ = [("size", c_size_t), ("cubin", c_void_p), ("functionName", c_char_p), ("cubinSize", c_size_t),
                ("lineNumber", c_uint32), ("pcOffset", c_uint64), ("fileName", c_void_p), ("dirName", c_void_p)]


for _s, _n in ((_Ctx, 24), (_GetData, 32), (_NumStallReasons, 32), (_StallReasons, 48), (_ConfigInfo, 32),
               (_ConfigParams, 40), (_CubinCrc, 32), (_SassToSource, 64)):
    assert ctypes.sizeof(_s) == _n, (_s.__name__, ctypes.sizeof(_s))

_FUNCTIONS = ("cuptiPCSamplingEnable", "cuptiPCSamplingDisable", "cuptiPCSamplingStart", "cuptiPCSamplingStop",
              "cuptiPCSamplingGetData", "cuptiPCSamplingGetNumStallReasons", "cuptiPCSamplingGetStallReasons",
              "cuptiPCSamplingSetConfigurationAttribute", "cuptiGetCubinCrc", "cuptiGetSassToSourceCorrelation")
_libc = ctypes.CDLL(None)  # the process's own symbols: libc's free(), which CUPTI's strings need
_libc.free.argtypes, _libc.free.restype = [c_void_p], None


class PCSamplingApi:
    """The PC sampling calls of the loaded libcupti. Raises one line where it has none."""

    def __init__(self, cupti: Cupti) -> None:
        self.cupti = cupti
        missing = [f for f in _FUNCTIONS if not hasattr(cupti.lib, f)]
        if missing or cupti.version < L.MIN_API_VERSION:
            raise BackendError(
                f"pcsampling needs CUPTI 12.4 or newer with the PC sampling API; the libcupti at "
                f"{cupti.path} (API version {cupti.version}) lacks {', '.join(missing) or 'the 12.4 layouts'}")
        self.fn = {}
        for name in _FUNCTIONS:
            f = getattr(cupti.lib, name)
            f.restype, f.argtypes = ctypes.c_int, [c_void_p]
            self.fn[name] = f

    def call(self, name: str, params: ctypes.Structure) -> int:
        return self.fn[name](ctypes.addressof(params))

    def check(self, status: int, what: str) -> None:
        if status == L.ERROR_INSUFFICIENT_PRIVILEGES:
            raise BackendError(
                "pcsampling cannot read the GPU's performance counters "
                "(CUPTI_ERROR_INSUFFICIENT_PRIVILEGES): run as root, or load the NVIDIA driver with "
                "NVreg_RestrictProfilingToAdminUsers=0 (see https://developer.nvidia.com/ERR_NVGPUCTRPERM)")
        if status == L.ERROR_NOT_SUPPORTED:
            raise BackendError(f"pcsampling is not supported here ({what}: CUPTI_ERROR_NOT_SUPPORTED): "
                               "PC sampling needs a GPU of compute capability 7.0 or newer and a native "
                               "(not virtualised or MIG-restricted) device")
        self.cupti.check(status, what)

    def ctx_call(self, name: str, ctx: int) -> None:
        self.check(self.call(name, _Ctx(24, None, ctx)), name)

    def stall_reasons(self, ctx: int) -> tuple[list[int], list[str]]:
        n = c_size_t(0)
        self.check(self.call("cuptiPCSamplingGetNumStallReasons", _NumStallReasons(32, None, ctx, ctypes.pointer(n))),
                   "cuptiPCSamplingGetNumStallReasons")
        names = [ctypes.create_string_buffer(L.STALL_REASON_STRING_SIZE) for _ in range(n.value)]
        name_ptrs = (c_char_p * n.value)(*[ctypes.cast(b, c_char_p) for b in names])
        indices = (c_uint32 * n.value)()
        self.check(self.call("cuptiPCSamplingGetStallReasons",
                             _StallReasons(48, None, ctx, n.value, indices, name_ptrs)),
                   "cuptiPCSamplingGetStallReasons")
        return list(indices), [b.value.decode(errors="replace") for b in names]

    def cubin_crc(self, cubin: bytes) -> int:
        params = _CubinCrc(32, len(cubin), ctypes.cast(c_char_p(cubin), c_void_p), 0)
        self.check(self.call("cuptiGetCubinCrc", params), "cuptiGetCubinCrc")
        return params.cubinCrc

    def source_line(self, cubin: bytes, function: str, pc_offset: int) -> tuple[int, str, str] | None:
        """`(line, file, dir)` of a PC, or None where the cubin has no line info for it. Frees the
        strings CUPTI mallocs for the caller."""
        params = _SassToSource(64, ctypes.cast(c_char_p(cubin), c_void_p), function.encode(), len(cubin), 0,
                               pc_offset, None, None)
        status = self.call("cuptiGetSassToSourceCorrelation", params)
        try:
            if status != layout.SUCCESS or not params.fileName:
                return None
            file = ctypes.string_at(params.fileName).decode(errors="replace")
            folder = ctypes.string_at(params.dirName).decode(errors="replace") if params.dirName else ""
            return params.lineNumber, file, folder
        finally:
            for p in (params.fileName, params.dirName):
                if p:
                    _libc.free(p)


class _Context:
    """One sampled CUDA context: its stall table and the memory lent to CUPTI (kept alive: CUPTI
    holds the pointers until the context is disabled)."""

    def __init__(self, api: PCSamplingApi, ctx: int, period_log2: int) -> None:
        self.ctx = ctx
        api.ctx_call("cuptiPCSamplingEnable", ctx)
        indices, names = api.stall_reasons(ctx)
        self.table = StallTable(indices, names)
        # Two buffers: CUPTI flushes into the configured one by itself (module unload, context
        # end), and `cuptiPCSamplingGetData` must be given another (given the configured one, it
        # returned no PC; docs/design.md, "Draining while it runs").
        self.flushed = SampleBuffers(PCS_AT_DISABLE, len(indices))
        self.buffers = SampleBuffers(PCS_PER_GET, len(indices))
        self.indices = (c_uint32 * max(len(indices), 1))(*indices)
        words = [
            (L.ATTR_SAMPLING_PERIOD, period_log2, 0),
            (L.ATTR_STALL_REASON, len(indices), ctypes.addressof(self.indices)),
            (L.ATTR_SCRATCH_BUFFER_SIZE, SCRATCH_BUFFER_BYTES, 0),
            (L.ATTR_HARDWARE_BUFFER_SIZE, HARDWARE_BUFFER_BYTES, 0),
            (L.ATTR_SAMPLING_DATA_BUFFER, self.flushed.address, 0),
            # Off: with start/stop control, cuptiPCSamplingGetData returns nothing until a stop,
            # and a stop from another thread while one launches hung (docs/design.md).
            (L.ATTR_ENABLE_START_STOP_CONTROL, 0, 0),
            (L.ATTR_COLLECTION_MODE, L.COLLECTION_MODE_CONTINUOUS, 0),
        ]
        self.configs = _configure(api, ctx, words)
        # Apart: a libcupti without this attribute still samples, with its own worker period.
        self.worker_sleep = _configure(api, ctx, [(L.ATTR_WORKER_THREAD_PERIODIC_SLEEP_SPAN, WORKER_SLEEP_MS, 0)],
                                       required=False)
        self.failed = ""  # the error that ended this context's drains, if one did


def _configure(api: PCSamplingApi, ctx: int, words: list[tuple[int, int, int]], required: bool = True):
    """Sets `(attribute, word0, word1)` configuration words; returns the array CUPTI was given (it
    keeps pointers into it), or None where an optional setting was refused."""
    configs = (_ConfigInfo * len(words))(*[_ConfigInfo(t, 0, a, b, 0) for t, a, b in words])
    status = api.call("cuptiPCSamplingSetConfigurationAttribute", _ConfigParams(40, None, ctx, len(words), configs))
    if status != layout.SUCCESS and not required:
        return None
    bad = [(c.attributeType, c.attributeStatus) for c in configs if c.attributeStatus]
    api.check(status, f"cuptiPCSamplingSetConfigurationAttribute (attribute, status: {bad})")
    return configs


def triton_cubins() -> list[bytes]:
    """The cubins of every Triton kernel compiled in this process so far (`CompiledKernel.asm`),
    also those compiled before `start`, whose module loads CUPTI never showed us."""
    compiler = sys.modules.get("triton.compiler.compiler")
    cls = getattr(compiler, "CompiledKernel", None)
    if cls is None:
        return []
    out = []
    for obj in gc.get_objects():
        if isinstance(obj, cls):
            asm = getattr(obj, "asm", None)
            cubin = asm.get("cubin") if isinstance(asm, dict) else None
            if isinstance(cubin, bytes):
                out.append(cubin)
    return out


class PCSamplingBackend(CuptiBackend):
    """The CUPTI backend with instruction sampling: kernels timed as in the default mode, samples
    on their nodes and on one child per source line."""

    modes = ("pcsampling",)

    def __init__(self, mode: str = "pcsampling", *, pcs_api=None, **kw) -> None:
        """`pcs_api` defaults to the PC sampling calls of the loaded libcupti; tests pass a fake."""
        super().__init__(mode, **kw)
        self.period_log2 = L.period_log2(mode)
        self._pcs_api = pcs_api
        self.api: PCSamplingApi | None = None
        self.attributor = SampleAttributor(self.period_log2)
        self._contexts: dict[int, _Context] = {}
        self._cubins: dict[int, bytes] = {}  # CRC -> cubin
        self._lines: dict[tuple[int, str, int], str] = {}  # (CRC, function, PC offset) -> node name
        self._triton_seen = 0  # how many Triton cubins were hashed at the last scan
        self._searched_crcs: set[int] = set()  # CRCs of cubins searched for among Triton's
        self._pcs_lock = threading.RLock()  # drains and context changes (not Backend._lock)
        self._drainer: Drainer | None = None
        self._errors: list[str] = []
        self.full_buffer_drains = 0  # drains CUPTI refused because the device's buffer had filled
        self.dropped_samples = 0
        self._pc_samples: dict[tuple[int, str], dict[int, int]] = {}  # (cubin CRC, function) -> PC -> samples

    # -- start / flush / stop ---------------------------------------------------------------------------
    def _do_start(self) -> None:
        # One line, before anything is touched, if CUPTI lacks the API.
        self.api = self._pcs_api if self._pcs_api is not None else PCSamplingApi(self.cupti)
        super()._do_start()  # kernel records first: CUPTI refuses them once a context samples
        try:
            if self._subscriber is None:
                raise UsageError("pcsampling needs CUPTI's callbacks, which torch.profiler still holds; "
                                 "run without torch.profiler in this process")
            for cbid in (L.CBID_CONTEXT_CREATED, L.CBID_CONTEXT_DESTROY_STARTING, L.CBID_MODULE_LOADED,
                         L.CBID_MODULE_UNLOAD_STARTING):
                self.cupti.enable_callback(True, self._subscriber, layout.CB_DOMAIN_RESOURCE, cbid)
            self.collector.before_ingest = self.attributor.attach
            for ctx in self._live_contexts():
                self._enable(ctx)
            self._drainer = Drainer(self._drain_running, DRAIN_PERIOD_S)
        except BaseException:
            self._do_stop()
            raise

    def _live_contexts(self) -> list[int]:
        """The current context and every active primary context (torch's and Triton's)."""
        driver = self.driver
        if not driver.initialized():
            return []
        lib, found = driver.lib, []
        current = c_void_p()
        if lib.cuCtxGetCurrent(ctypes.byref(current)) == 0 and current.value:
            found.append(current.value)
        for ordinal in range(driver.device_count()):
            dev, flags, active = ctypes.c_int(0), ctypes.c_uint(0), ctypes.c_int(0)
            if lib.cuDeviceGet(ctypes.byref(dev), ordinal) != 0:
                continue
            if lib.cuDevicePrimaryCtxGetState(dev, ctypes.byref(flags), ctypes.byref(active)) or not active.value:
                continue
            ctx = c_void_p()
            if lib.cuDevicePrimaryCtxRetain(ctypes.byref(ctx), dev) == 0:
                lib.cuDevicePrimaryCtxRelease_v2(dev)  # stays alive: it is active
                if ctx.value and ctx.value not in found:
                    found.append(ctx.value)
        return found

    def _enable(self, ctx: int) -> None:
        with self._pcs_lock, self._current(ctx):
            if ctx not in self._contexts:
                self._contexts[ctx] = _Context(self.api, ctx, self.period_log2)

    @contextlib.contextmanager
    def _current(self, ctx: int):
        """`ctx` current on the calling thread meanwhile (CUPTI's PC sampling calls name the context,
        but the driver work behind them may run in the current one)."""
        lib = self.driver.lib
        current = c_void_p()
        if lib.cuCtxGetCurrent(ctypes.byref(current)) != 0 or current.value == ctx:
            yield
            return
        if lib.cuCtxPushCurrent_v2(c_void_p(ctx)) != 0:
            yield
            return
        try:
            yield
        finally:
            lib.cuCtxPopCurrent_v2(ctypes.byref(c_void_p()))

    def _do_flush(self) -> None:
        self._flush_samples(last=False)
        super()._do_flush()  # its kernel records are delivered, with the samples (`before_ingest`)
        self._report()

    def _do_last_flush(self) -> None:
        self._flush_samples(last=True)
        super()._do_flush()
        self._report()

    def _flush_samples(self, last: bool) -> None:
        """Every sample so far, before the kernel records are delivered: what GetData has, then
        what CUPTI still decodes, which only disabling hands over (its threads are joined); then,
        unless it is the `last` flush before the stop, sampling again."""
        if self.collector is None:
            return
        self.driver.synchronize_all()  # every kernel ended: its samples are on their way
        with self._pcs_lock:
            for ctx, state in list(self._contexts.items()):
                self._guarded(state, lambda: self._drain(state))
                self._disable(ctx)
                if not last:
                    self._enable(ctx)

    def _do_stop(self) -> None:
        try:
            if self._drainer is not None:
                self._drainer.stop()
                self._drainer = None
            self._flush_samples(last=True)  # contexts a last flush left (none, after a finalize)
        finally:
            super()._do_stop()
            self._report()
            left = self.attributor.take_pending().total()
            if left:
                print(f"lepton: warning: {left} instruction samples belong to kernels whose records were "
                      "delivered before their samples were drained; they are not in the profile",
                      file=sys.stderr)

    def _disable(self, ctx: int) -> None:
        """Ends sampling in `ctx`: CUPTI copies the samples it still holds into the configured
        buffer, which is read here."""
        with self._pcs_lock:
            state = self._contexts.get(ctx)
            if state is None or self.api is None:
                return
            status = self.api.call("cuptiPCSamplingDisable", _Ctx(24, None, ctx))  # the context may be going
            del self._contexts[ctx]
            if status == layout.SUCCESS and not state.failed:
                self._guarded(state, lambda: self._take(state, state.flushed))

    # -- drains -------------------------------------------------------------------------------------------
    def _drain_running(self) -> None:
        """The drain thread's pass: what CUPTI holds of every context, while kernels run."""
        with self._pcs_lock:
            for state in list(self._contexts.values()):
                self._guarded(state, lambda: self._drain(state))

    def _guarded(self, state: _Context, drain) -> None:
        """Runs a drain of `state`; a CUPTI failure keeps what was drained before it. A full device
        buffer loses that window's samples and sampling goes on; any other failure ends this
        context's drains, with one line at the next report."""
        if state.failed:
            return
        try:
            drain()
        except CuptiError as e:
            if e.status == L.ERROR_OUT_OF_MEMORY:
                self.full_buffer_drains += 1
                return
            state.failed = str(e)
            self._errors.append(f"instruction sampling stopped: {e}; the profile keeps every kernel time and "
                                f"the {self.attributor.drained} samples drained before it")

    def _drain(self, state: _Context) -> None:
        """Moves CUPTI's samples of `state` into the attributor: those CUPTI flushed into the
        configured buffer by itself (module unload), then whatever `cuptiPCSamplingGetData` has."""
        api = self.api
        with self._pcs_lock, self._current(state.ctx):
            self._take(state, state.flushed)
            params = _GetData(32, None, state.ctx, state.buffers.address)
            for _ in range(_MAX_GETS_PER_DRAIN):
                api.check(api.call("cuptiPCSamplingGetData", params), "cuptiPCSamplingGetData")
                drain = self._take(state, state.buffers)
                if drain.remaining_pcs == 0:
                    break

    def _take(self, state: _Context, buffers: SampleBuffers):
        """Moves what `buffers` holds into the attributor, marks it read, and returns the drain."""
        drain = buffers.decode()
        buffers.mark_read()
        self.dropped_samples += drain.dropped_samples
        if drain.hardware_buffer_full:
            self.full_buffer_drains += 1
        if drain.num_pcs:
            self.attributor.add(by_line(drain, state.table, _string_at, self._line_of))
            self._count_pcs(drain)
        return drain

    def _count_pcs(self, drain) -> None:
        """Adds a drain's samples per (cubin, function, PC), for the hottest instructions."""
        keys = np.stack([drain.cubin_crc, drain.function_ptr, drain.pc_offset], axis=1)
        uniq, inverse = np.unique(keys, axis=0, return_inverse=True)
        totals = np.zeros(len(uniq), np.int64)
        np.add.at(totals, inverse.reshape(-1), drain.samples.astype(np.int64))
        for (crc, ptr, offset), count in zip(uniq.tolist(), totals.tolist()):
            per_pc = self._pc_samples.setdefault((crc, _string_at(ptr)), {})
            per_pc[offset] = per_pc.get(offset, 0) + count

    def profile_extras(self) -> dict:
        """The hottest instructions of the most sampled kernels, under "sass": function -> [[PC
        offset, samples, ""], ...], and their code, under "sass_code": function -> {"arch",
        "zlib_b64"}, which `lepton-view --sass` disassembles. No disassembler runs here."""
        info = self.device_info(0)  # the arch of device 0: hosts that mix GPU generations are rare
        arch = info.arch if info is not None else None
        with self._pcs_lock:
            ranked = sorted(self._pc_samples.items(), key=lambda item: -sum(item[1].values()))[:SASS_KERNELS]
            sass, code = {}, {}
            for (crc, function), samples in ranked:
                if function in sass:
                    continue  # one name in two cubins (a kernel compiled twice): the hotter one
                sass[function] = sass_extras.hottest(samples)
                packed = sass_extras.packed_code(self._cubins.get(crc), function, arch)
                if packed is not None:
                    code[function] = packed
        extras = super().profile_extras()  # a GPU fault
        if sass:
            extras[SASS_KEY] = sass
        if code:
            extras[SASS_CODE_KEY] = code
        return extras

    def _report(self) -> None:
        n, self.dropped_samples = self.dropped_samples, 0
        if n and self.sink is not None:
            self.sink.report_dropped(n, "pc sampling")
        full, self.full_buffer_drains = self.full_buffer_drains, 0
        if full:
            self._errors.append(f"the GPU's sample buffer filled up ({full} times): the samples of those "
                                "moments were lost (a longer PCSampling(interval=...) keeps fewer)")
        errors, self._errors = self._errors, []
        for message in dict.fromkeys(errors):
            print(f"lepton: warning: {message}", file=sys.stderr)

    # -- source lines -------------------------------------------------------------------------------------
    def _line_of(self, crc: int, function: str, pc_offset: int) -> str:
        key = (crc, function, pc_offset)
        name = self._lines.get(key)
        if name is None:
            cubin = self._cubins.get(crc)
            if cubin is None and crc not in self._searched_crcs:
                # Once per cubin: the search walks every Python object (docs/design.md),
                # holding the GIL against the launching thread when a drain runs it.
                self._searched_crcs.add(crc)
                self._keep_triton_cubins()
                cubin = self._cubins.get(crc)
            where = self.api.source_line(cubin, function, pc_offset) if cubin is not None else None
            # Proton's name: "<dir>/<file>:<line>@<function>"; "" = no line (the kernel node's).
            name = "" if where is None else f"{where[2]}/{where[1]}:{where[0]}@{function}"
            self._lines[key] = name
        return name

    def _keep_cubin(self, cubin: bytes) -> None:
        self._cubins.setdefault(self.api.cubin_crc(cubin), cubin)

    def _keep_triton_cubins(self) -> None:
        cubins = triton_cubins()
        if len(cubins) != self._triton_seen:
            self._triton_seen = len(cubins)
            known = set(map(id, self._cubins.values()))
            for cubin in cubins:
                if id(cubin) not in known:
                    self._keep_cubin(cubin)

    # -- CUPTI resource callbacks (on the thread that loads the module or creates the context) -------------
    def _graph_callback(self, cbid: int, cbdata: int) -> None:
        if cbid not in (L.CBID_CONTEXT_CREATED, L.CBID_CONTEXT_DESTROY_STARTING, L.CBID_MODULE_LOADED,
                        L.CBID_MODULE_UNLOAD_STARTING):
            super()._graph_callback(cbid, cbdata)
            return
        try:
            ctx = c_void_p.from_address(cbdata + L.RESOURCE_CONTEXT).value
            if cbid == L.CBID_CONTEXT_CREATED:
                self._enable(ctx)
            elif cbid == L.CBID_CONTEXT_DESTROY_STARTING:
                state = self._contexts.get(ctx)
                if state is not None:
                    self._guarded(state, lambda: self._drain(state))
                self._disable(ctx)
            else:
                module = c_void_p.from_address(cbdata + layout.ResourceData.resource_descriptor).value
                if module:
                    size = c_size_t.from_address(module + L.MODULE_CUBIN_SIZE).value
                    pointer = c_void_p.from_address(module + L.MODULE_CUBIN).value
                    if pointer and size:
                        self._keep_cubin(ctypes.string_at(pointer, size))
                state = self._contexts.get(ctx)
                if state is not None and cbid == L.CBID_MODULE_UNLOAD_STARTING:
                    self._guarded(state, lambda: self._drain(state))  # before its functions' names go
        except Exception as e:  # noqa: BLE001  (an exception cannot cross CUPTI's C callback)
            self._errors.append(str(e))
            print(f"lepton: error: {e}", file=sys.stderr)


def _string_at(address: int) -> str:
    return ctypes.string_at(address).decode("utf-8", errors="replace") if address else "<unknown function>"


def make_cupti_backend(mode: str = "", **kw) -> CuptiBackend:
    """The CUPTI backend for `mode`: "" (kernel times) or "pcsampling[:interval=N]"."""
    if mode.split(":", 1)[0] == "pcsampling":
        return PCSamplingBackend(mode, **kw)
    return CuptiBackend(mode, **kw)
