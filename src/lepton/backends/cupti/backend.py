"""`CuptiBackend`: kernels timed by CUPTI's activity API, attributed by launch thread and time.

A launch's path is its thread's path at the time of the launch call, on the threads' time lines
(`timeline.ThreadTimelines`); the records give the thread and the time:

- **One thread marks** (one Python thread drives the GPU): kernel records carry `queued`, a time
  inside their launch call (`cuptiActivityEnableLatencyTimestamps`), and the launch is taken as
  the marking thread's; threads that never mark (torch's autograd threads) follow it. No launch API
  record is written: they cost as much as the kernel records again. A graph's kernels have no valid
  `queued`, so a callback on the graph launch calls logs `(correlation id, thread, time)` for them.
- **Several threads mark**: the second one turns on the API records of the launch calls (its
  `ThreadCensus` callback, before its first mark), which name the thread; kernels queued before
  that still take their own time as the first thread's launches.

Only the launch calls' API records are turned on: per cbid before CUDA is initialised; after it
CUPTI ignores those per-API calls, so the whole DRIVER and RUNTIME kinds are enabled and every
other cbid is switched off again, once per start (enabling a kind again turns all of its APIs back
on).

Buffers are parsed in bulk (`collector.Collector`), never per launch. The measurements behind all
this are in docs/design.md ("Attribution by thread time lines", "CUPTI buffers").

**GPU faults.** A kernel that faults (an illegal address, a device-side assert) takes its context
down, and with it the records CUPTI still holds. So at the exit of each synchronizing call the
program makes (a callback on the driver's and runtime's synchronize calls), when every kernel it
waited for has completed, CUPTI is asked for its completed buffers (`cuptiActivityFlushAll(0)`, at
most every `SYNC_FLUSH_EVERY_NS`): they are host memory from then on, and survive the fault. The
synchronize that reports the fault records it (`fault`, written to ROOT's metadata as `gpu_fault`)
and says in one line how many kernels the profile keeps; the flushes after it deliver what they can.
"""
from __future__ import annotations

import ctypes
import os
import sys
import threading
import time
import warnings
from collections.abc import Callable
from typing import ClassVar

import numpy as np

from ...errors import BackendError, UsageError
from ...model.records import DeviceInfo
from ...model.timeline import ThreadTimelines
from ..base import Backend
from . import layout
from .bindings import BufferCompletedFunc, BufferRequestedFunc, CallbackFunc, Cupti, CuptiBusyError
from .clock import calibrate
from .collector import Collector
from .devices import Driver
from .graphs import GraphNodePaths

# 2 MiB holds ≈9.7k kernel records of 216 B. Completed buffers are parsed on CUPTI's thread only once
# PROCESS_AT_BYTES of them wait (bounded memory for a profile left on), else at the next flush or
# finalize: the parse holds the GIL, so parsing as they came stopped the launching thread
# (docs/design.md, "CUPTI buffers").
BUFFER_BYTES = 2 << 20
PROCESS_AT_BYTES = 32 << 20
# Triton's knob for Proton's CUPTI buffer size: Proton processes the records (and periodic
# flushing writes the completed phases) of each buffer as it fills. Lepton takes it as a cap on both
# sizes above: a smaller value processes records sooner (each buffer as it completes, once the
# buffers are that small), never later than Lepton's own sizes.
BUFFER_SIZE_VARIABLE = "TRITON_PROFILE_BUFFER_SIZE"
_MIN_BUFFER_BYTES = 64 << 10  # a buffer must hold records (≈300 kernels), whatever the knob says
_POOL_BYTES = 64 << 20  # parsed buffers kept for reuse
# How far back of the latest launch attributed the time lines are kept when buffers complete: an
# API record arrives at the end of its call, so older launches have all arrived (a launch call
# blocked longer than this would land at the top level).
MARKS_KEPT_NS = 10_000_000_000
# Buffers made resident at start: CUPTI writes API records on the launching thread, so the first
# writes to a fresh buffer's pages would fault them in inside the loop being profiled rather than in
# start().
_RESIDENT_AT_START_BYTES = 8 << 20

# CUPTI's completed buffers are collected at a synchronize at most this often: a flush costs tens of
# µs, and a program that synchronizes in a tight loop would pay it each time.
SYNC_FLUSH_EVERY_NS = 10_000_000

# Graph nodes survive sessions (a graph captured in one may be replayed in the next), and path ids
# are process-wide, so the capture map is too.
GRAPH_NODES = GraphNodePaths()


def profile_buffer_bytes() -> int | None:
    """`triton.knobs.proton.profile_buffer_size` where Triton is imported, else
    `TRITON_PROFILE_BUFFER_SIZE`; None where neither holds a positive number."""
    knobs = getattr(sys.modules.get("triton"), "knobs", None)
    value = getattr(getattr(knobs, "proton", None), "profile_buffer_size", None)
    if value is None:
        value = os.environ.get(BUFFER_SIZE_VARIABLE)
    try:
        size = int(value)
    except (TypeError, ValueError):
        return None
    return size if size > 0 else None


class _Shared:
    """What CUPTI's C callbacks reach. CUPTI keeps one set of buffer callbacks per process, so the
    ctypes callback objects live here for the life of the process (freeing one CUPTI may still call
    would crash it) and dispatch to the backend that is running, if any."""

    backend: ClassVar[CuptiBackend | None] = None
    buffer_bytes = BUFFER_BYTES  # the size CUPTI is told each buffer has (at most BUFFER_BYTES)
    buffers: ClassVar[dict[int, np.ndarray]] = {}  # address -> array lent to CUPTI
    pool: ClassVar[list[np.ndarray]] = []
    lock = threading.Lock()
    # The python context's launch callback: the running collector's `launch_stacks` and the
    # caller's path function (a throwaway list and ROOT when none runs).
    launch_stacks: ClassVar[list[int]] = []
    root_path: ClassVar[Callable[[], int]] = staticmethod(lambda: 0)
    python_path: ClassVar[Callable[[], int]] = root_path
    python_on = False
    # The graph-launch callback: the running collector's `graph_launches` and the time lines' clock.
    graph_launches: ClassVar[list[int]] = []
    clock: ClassVar[Callable[[], int]] = staticmethod(lambda: 0)


def _buffer_requested(buffer_pp: int, size_p: int, max_records_p: int) -> None:
    """CUPTI wants an empty, zeroed buffer (ATTR_ZEROED_OUT_ACTIVITY_BUFFER). Called from CUPTI's
    thread or from a launching thread, so it only hands out a buffer zeroed beforehand (`_recycle`)
    or fresh from np.zeros (zero pages from the OS: no zeroing pass here)."""
    with _Shared.lock:
        buf = _Shared.pool.pop() if _Shared.pool else np.zeros(BUFFER_BYTES, np.uint8)
        address = buf.ctypes.data  # numpy's allocations are ≥16-byte aligned; CUPTI needs 8
        _Shared.buffers[address] = buf
    ctypes.c_void_p.from_address(buffer_pp).value = address
    ctypes.c_size_t.from_address(size_p).value = min(buf.nbytes, _Shared.buffer_bytes)
    ctypes.c_size_t.from_address(max_records_p).value = 0  # as many as fit


def _buffer_completed(context: int, stream_id: int, address: int, size: int, valid: int) -> None:
    """CUPTI hands a buffer back. Called from CUPTI's buffer-completion thread."""
    with _Shared.lock:
        buf = _Shared.buffers.pop(address, None)
    backend = _Shared.backend
    if backend is None:
        _recycle([(buf, valid)] if buf is not None else [])
        return
    backend._buffer_completed(buf, valid)


def _fill_pool(count: int) -> None:
    """Puts zeroed buffers whose pages are resident in the pool, up to `count`."""
    while True:
        with _Shared.lock:
            if len(_Shared.pool) >= count:
                return
        buf = np.zeros(BUFFER_BYTES, np.uint8)
        buf[::4096] = 0  # a write per page: faults it in now (it stays zero)
        with _Shared.lock:
            _Shared.pool.append(buf)


def _recycle(buffers: list[tuple[np.ndarray, int]]) -> None:
    """Zeroes the used part of parsed buffers and keeps a few for reuse. Called from CUPTI's buffer
    thread or the flushing thread, off the launch path."""
    with _Shared.lock:
        keep = buffers[:max(_POOL_BYTES // BUFFER_BYTES - len(_Shared.pool), 0)]
    for buf, used in keep:
        buf[:used] = 0
    with _Shared.lock:
        _Shared.pool.extend(buf for buf, _ in keep)


def _resource_callback(userdata: int, domain: int, cbid: int, cbdata: int) -> None:
    """Graph node created (on the capturing thread) or cloned (at instantiation); with the python
    context, a launch API entered (on the launching thread)."""
    if domain != _DOMAIN_RESOURCE:  # a launch or synchronize API: runs twice per call, kept flat
        data = _callback_views.get(cbdata)
        if data is None:
            data = _callback_data_at(cbdata)
        if cbid in _SYNC_CBIDS:  # no launch cbid watched is one of these, in either domain
            if data.site == 1:  # API_EXIT: what it waited for has completed, or it reports a fault
                _after_synchronize(cbdata)
            return
        if data.site == 0:  # API_ENTER (EXIT fires too)
            corr = data.correlation_id
            if cbid in _GRAPH_LAUNCH_CBIDS:  # the launch record of a graph's kernels
                _Shared.graph_launches.extend((corr, _native_id(), _Shared.clock()))
            if _Shared.python_on:  # Collector.remember_launch_stack, inlined
                _Shared.launch_stacks.append(_Shared.python_path() << 32 | corr)
        return
    backend = _Shared.backend
    if backend is not None:
        backend._graph_callback(cbid, cbdata)


def _after_synchronize(cbdata: int) -> None:
    """A synchronizing call returns (on the program's thread): its result to the backend. Never
    raises (a ctypes callback)."""
    backend = _Shared.backend
    if backend is None:
        return
    try:
        result = ctypes.c_void_p.from_address(cbdata + layout.CALLBACK_RETURN_VALUE_OFFSET).value
        backend._synchronized(ctypes.c_int.from_address(result).value if result else 0)
    except Exception:  # noqa: BLE001  (the program's call goes on whatever happens here)
        pass


class _CallbackData(ctypes.Structure):
    """The two fields of CUpti_CallbackData that the launch callbacks read."""

    _fields_ = [("_before_site", ctypes.c_uint8 * layout.CALLBACK_SITE_OFFSET),
                ("site", ctypes.c_uint32),
                ("_before_correlation_id",
                 ctypes.c_uint8 * (layout.CALLBACK_CORRELATION_ID_OFFSET - layout.CALLBACK_SITE_OFFSET - 4)),
                ("correlation_id", ctypes.c_uint32)]


# CUPTI passes the callback data of each call site at one address, so a structure mapped at each is
# kept: a dict lookup is cheaper than mapping a structure per call (docs/design.md, "The python
# context"). Bounded, in case some caller's data does move.
_callback_views: dict[int, _CallbackData] = {}
_CALLBACK_VIEWS_MAX = 256


def _callback_data_at(address: int) -> _CallbackData:
    """The structure mapped at `address`, kept for the next call from there."""
    if len(_callback_views) >= _CALLBACK_VIEWS_MAX:
        _callback_views.clear()
    data = _callback_views[address] = _CallbackData.from_address(address)
    return data


_native_id = threading.get_native_id
_DOMAIN_RESOURCE = layout.CB_DOMAIN_RESOURCE
# The graph launch calls whose callbacks are on: cudaGraphLaunch(_ptsz) in the runtime domain,
# cuGraphLaunch(_ptsz) in the driver's. No other watched call has one of these cbids in its domain.
_GRAPH_LAUNCH_WATCH = frozenset({(layout.CB_DOMAIN_RUNTIME_API, 311), (layout.CB_DOMAIN_RUNTIME_API, 312),
                                 (layout.CB_DOMAIN_DRIVER_API, 514), (layout.CB_DOMAIN_DRIVER_API, 515)})
_GRAPH_LAUNCH_CBIDS = frozenset(cbid for _, cbid in _GRAPH_LAUNCH_WATCH)
_SYNC_WATCH = frozenset({(layout.CB_DOMAIN_DRIVER_API, cbid) for cbid in layout.DRIVER_SYNC_CBIDS}
                        | {(layout.CB_DOMAIN_RUNTIME_API, cbid) for cbid in layout.RUNTIME_SYNC_CBIDS})
_SYNC_CBIDS = frozenset(cbid for _, cbid in _SYNC_WATCH)
_C_REQUESTED = BufferRequestedFunc(_buffer_requested)
_C_COMPLETED = BufferCompletedFunc(_buffer_completed)
_C_CALLBACK = CallbackFunc(_resource_callback)


class CuptiBackend(Backend):
    name = "cupti"
    device_type = "CUDA"
    modes = ("",)
    reads_marks = True
    reads_triton_stacks = True

    def __init__(self, mode: str = "", *, cupti: Cupti | None = None, driver: Driver | None = None) -> None:
        """`cupti` and `driver` default to the real libraries; tests pass fakes."""
        if mode.split(":", 1)[0] not in self.modes:
            raise UsageError(f"CuptiProfiler: unsupported mode: {mode}")
        super().__init__(mode)
        self.cupti = cupti if cupti is not None else Cupti()
        self.driver = driver if driver is not None else Driver()
        self._thread_id_type: int | None = None
        self.collector: Collector | None = None
        self.api_records = ""  # "per-cbid" or "masked": how launch API records were turned on
        self.latency_timestamps = False  # kernel records carry their launch time (`queued`)
        self._switch_lock = threading.Lock()
        self.graph_capture_scopes = False  # whether graph-node callbacks record capture scopes
        self._subscriber: int | None = None
        self._masked: tuple[list[int], list[int]] = ([], [])
        self._current_path: Callable[[], int] = lambda: 0
        self._take_graph_tag: Callable[[], object] = lambda: None
        self.python_context = False
        self._watched: set[tuple[int, int]] = set()  # (domain, cbid) of the launch callbacks on
        self._python_watch: set[tuple[int, int]] = set()  # ... for the python context
        self._graph_watch: frozenset[tuple[int, int]] = frozenset()  # ... for graph launch records
        self._triton_stacks: ThreadTimelines | None = None  # see set_python_context
        self.process_at_bytes = PROCESS_AT_BYTES
        self._sync_watch: frozenset[tuple[int, int]] = frozenset()  # ... for collecting at synchronizes
        self._synced_at = 0  # time.monotonic_ns() of the last collection at a synchronize
        # The GPU fault a synchronize reported: {"error", "message", "code", "kernels"}; None: none.
        self.fault: dict | None = None

    # -- start / flush / stop ---------------------------------------------------------------------------
    def _do_start(self) -> None:
        cupti = self.cupti
        try:
            self._subscriber = cupti.subscribe(_C_CALLBACK)
        except CuptiBusyError:
            if not _idle_torch_profiler_holds_cupti():
                raise
            # torch.profiler (Kineto) subscribes at its first use and never unsubscribes (docs/design.md,
            # "CUPTI's clock"), but between its sessions CUPTI's activity API is free; Kineto registers
            # its buffer callbacks again when it next starts. Without a subscription there are no
            # graph-node callbacks, so replayed kernels land under the replay scope only.
            self._subscriber = None
            self.graph_capture_scopes = False
            warnings.warn("lepton: torch.profiler keeps CUPTI's callback slot after its session; "
                          "kernels of CUDA graphs are attributed to the scope of their replay only "
                          "(not to the scopes they were captured in)", RuntimeWarning, stacklevel=2)
        self._current_path = self.sink.current_path
        self._take_graph_tag = getattr(self.sink, "take_graph_tag", lambda: None)
        try:
            if self._subscriber is not None:
                self.graph_capture_scopes = True
                for cbid in (layout.CBID_RESOURCE_GRAPHNODE_CREATED, layout.CBID_RESOURCE_GRAPHNODE_CLONED):
                    cupti.enable_callback(True, self._subscriber, layout.CB_DOMAIN_RESOURCE, cbid)
                self._sync_watch = _SYNC_WATCH  # turned on by `_watch`, below
            self._thread_id_type = cupti.thread_id_type()
            cupti.set_thread_id_type(layout.THREAD_ID_TYPE_SYSTEM)
            mark_clock, clock_map = calibrate(cupti.fast_timestamp())
            self.sink.timeline.clock = mark_clock
            self.collector = Collector(self.sink, _kernel_name, self.sink.timeline.paths_at, graphs=GRAPH_NODES,
                                       record_size=self._record_size, clock=clock_map)
            self.collector.hooked_stacks_at = self._hooked_stacks_at()
            _Shared.backend = self
            _Shared.launch_stacks = self.collector.launch_stacks
            _Shared.graph_launches = self.collector.graph_launches
            _Shared.clock = mark_clock
            cap = profile_buffer_bytes()
            if cap is not None:
                _Shared.buffer_bytes = min(BUFFER_BYTES, max(cap, _MIN_BUFFER_BYTES))
                # a buffer of at most `cap` bytes is processed as it completes, as Proton's are
                self.process_at_bytes = 1 if cap <= BUFFER_BYTES else min(PROCESS_AT_BYTES, cap)
            _fill_pool(-(-_RESIDENT_AT_START_BYTES // BUFFER_BYTES))
            cupti.set_attribute_u8(layout.ATTR_ZEROED_OUT_ACTIVITY_BUFFER, 1)
            # Registered at every start: torch.profiler registers its own and leaves them.
            cupti.register_buffer_callbacks(_C_REQUESTED, _C_COMPLETED)
            cupti.dropped_records()  # zero CUPTI's count, which a previous client may have left
            cupti.enable(layout.KIND_CONCURRENT_KERNEL)
            self._attribute_launches()
        except BaseException:
            self._release()
            raise

    def _attribute_launches(self) -> None:
        """How kernels find their launching thread and time (see the module's doc): from their own
        record while one thread marks, from the launch API records once several do. The API
        records are on from the start where several threads marked already, where this libcupti
        cannot time launches in kernel records, or where no subscription gives the graph launch
        callbacks."""
        census = self.sink.timeline.census
        if self._subscriber is None or census.several or self.cupti.enable_latency_timestamps(True) != 0:
            self._enable_launch_records()
            if self._subscriber is not None:
                self._watch()
            return
        self.latency_timestamps = True
        self.collector.launch_thread = lambda: census.first
        self._graph_watch = _GRAPH_LAUNCH_WATCH
        self._watch()
        census.on_second_thread = self._launch_threads_needed

    def _launch_threads_needed(self) -> None:
        """A second thread marks a path (called on it, before its first mark): launches need their
        thread from now on. Kernels queued before the API records are on still take their
        `queued` time as the first thread's launches."""
        with self._switch_lock:
            collector = self.collector
            if collector is None or self.api_records:
                return
            self._enable_launch_records()
            switched = self.sink.timeline.clock()
            with collector.lock:
                collector.api_records_from = switched

    def _enable_launch_records(self) -> None:
        cupti = self.cupti
        if not self.driver.initialized():
            for cbid in layout.DRIVER_LAUNCH_CBIDS:
                cupti.check(cupti.enable_driver_api(cbid, True), f"cuptiActivityEnableDriverApi({cbid})")
            for cbid in layout.RUNTIME_LAUNCH_CBIDS:
                cupti.check(cupti.enable_runtime_api(cbid, True), f"cuptiActivityEnableRuntimeApi({cbid})")
            self.api_records = "per-cbid"
            return
        cupti.enable(layout.KIND_DRIVER)
        cupti.enable(layout.KIND_RUNTIME)
        drv, rt = set(layout.DRIVER_LAUNCH_CBIDS), set(layout.RUNTIME_LAUNCH_CBIDS)
        # Some cbids are gaps in CUPTI's tables and answer an error: those have no records anyway.
        off_drv = [c for c in range(1, layout.DRIVER_CBID_COUNT)
                   if c not in drv and cupti.enable_driver_api(c, False) == 0]
        off_rt = [c for c in range(1, layout.RUNTIME_CBID_COUNT)
                  if c not in rt and cupti.enable_runtime_api(c, False) == 0]
        self._masked = (off_drv, off_rt)
        self.api_records = "masked"

    def _do_flush(self) -> None:
        if self.collector is None:
            return
        flush_start = self.sink.timeline.clock()
        if self.fault is None:
            result = self.driver.synchronize_all()  # kernels still running get their records too
            if result in layout.GPU_FAULTS:  # the program ended before a synchronize of its own saw it
                self._gpu_fault(result)
        for forced in (False, True):  # then also the partly filled buffers
            try:
                self.cupti.flush_all(forced=forced)
            except BackendError:
                if self.fault is None:
                    raise
                break  # the context is gone: what was collected before the fault is delivered below
        self._report_dropped()
        self.collector.process(flush=True)
        _recycle(self.collector.take_parsed_buffers())
        for timeline in self._time_lines():
            timeline.forget_before(flush_start)  # every launch before it has been attributed

    # -- synchronizes and GPU faults (called from the program's threads, in CUPTI's callbacks) ----------
    def _synchronized(self, result: int) -> None:
        """A synchronizing call of the program returned `result` (a CUresult / cudaError_t)."""
        if result in layout.GPU_FAULTS:
            self._gpu_fault(result)
            return
        now = time.monotonic_ns()
        if result != 0 or self.fault is not None or now - self._synced_at < SYNC_FLUSH_EVERY_NS:
            return
        self._synced_at = now
        self.cupti.flush_all(forced=False)  # the buffers whose kernels all completed: host memory now

    def _gpu_fault(self, result: int) -> None:
        """The GPU reported a fault that ends the context: the kernels collected so far are kept
        (delivered now, as far as CUPTI still hands them over), and one line says so."""
        if self.fault is not None:
            return
        error, message = layout.GPU_FAULTS[result]
        self.fault = {"error": error, "message": message, "code": result}
        collector = self.collector
        try:
            self.cupti.flush_all(forced=False)
        except Exception:  # noqa: BLE001  (a dead context may refuse; what was collected stays)
            pass
        kernels = 0
        if collector is not None:
            try:
                collector.process(flush=False)
                _recycle(collector.take_parsed_buffers())
            except Exception:  # noqa: BLE001  (delivered at the flush, then)
                pass
            kernels = collector.kernels_delivered
        self.fault["kernels"] = kernels
        print(f"lepton: the GPU reported {error} ({message}) after {kernels} kernel{'s' if kernels != 1 else ''}; "
              "the profile keeps the kernels that completed", file=sys.stderr, flush=True)

    def profile_extras(self) -> dict:
        """The GPU fault, if one was reported (ROOT's metadata, `gpu_fault`)."""
        if self.fault is None:
            return {}
        kernels = self.collector.kernels_delivered if self.collector is not None else self.fault["kernels"]
        return {"gpu_fault": {**self.fault, "kernels": max(kernels, self.fault["kernels"])}}

    def _do_deliver_completed(self) -> None:
        """The buffers CUPTI has filled (not the partly filled ones, whose kernels may still run):
        no device synchronize, so the program's GPU work goes on meanwhile. Kernels whose launch
        record has not arrived wait for the next delivery, as on CUPTI's buffer thread."""
        if self.collector is None:
            return
        self.cupti.flush_all(forced=False)
        self._report_dropped()
        if self.collector.pending:
            self.collector.process(flush=False)
            _recycle(self.collector.take_parsed_buffers())

    def _do_stop(self) -> None:
        try:
            cupti = self.cupti
            for kind in (layout.KIND_CONCURRENT_KERNEL, layout.KIND_DRIVER, layout.KIND_RUNTIME):
                cupti.disable(kind)
            self.sink.timeline.census.on_second_thread = None
            with self._switch_lock:
                self._restore_api_records()
            if self.latency_timestamps:
                cupti.enable_latency_timestamps(False)
                self.latency_timestamps = False
            try:
                cupti.flush_all(forced=True)  # records written between the last flush and the disable
            except BackendError:
                if self.fault is None:
                    raise  # after a GPU fault CUPTI may refuse: the context is gone
            # The next client (torch.profiler) hands CUPTI unzeroed buffers: let CUPTI zero them.
            cupti.set_attribute_u8(layout.ATTR_ZEROED_OUT_ACTIVITY_BUFFER, 0)
            self._report_dropped()
            if self.collector is not None:
                self.collector.process(flush=True)
                _recycle(self.collector.take_parsed_buffers())
        finally:
            self._release()

    def _restore_api_records(self) -> None:
        """Leaves CUPTI's per-API switches as they were, for the next client (torch.profiler).
        Not where CUPTI is detached next, which resets them all (docs/design.md, "Detaching CUPTI")."""
        cupti, how, (off_drv, off_rt) = self.cupti, self.api_records, self._masked
        self._masked, self.api_records = ([], []), ""
        if self._detaches():
            return
        if how == "per-cbid":
            for cbid in layout.DRIVER_LAUNCH_CBIDS:
                cupti.enable_driver_api(cbid, False)
            for cbid in layout.RUNTIME_LAUNCH_CBIDS:
                cupti.enable_runtime_api(cbid, False)
        elif how == "masked":
            for cbid in off_drv:
                cupti.enable_driver_api(cbid, True)
            for cbid in off_rt:
                cupti.enable_runtime_api(cbid, True)

    def _detaches(self) -> bool:
        """Whether `_release` detaches CUPTI (`cuptiFinalize`, as Proton's doStop does): only where
        Lepton held the subscription, never under a torch.profiler that keeps it. Unsubscribed but
        attached, CUPTI's launch instrumentation stays in every later launch of the process
        (docs/design.md, "Detaching CUPTI")."""
        return self._subscriber is not None

    def _release(self) -> None:
        _Shared.backend = None
        _Shared.buffer_bytes = BUFFER_BYTES
        _Shared.launch_stacks = []
        _Shared.python_path = _Shared.root_path
        _Shared.python_on = False
        _Shared.graph_launches = []
        self.python_context = False  # its callbacks go with the subscription
        self._watched, self._python_watch, self._graph_watch = set(), set(), frozenset()
        self._triton_stacks = None
        if self._thread_id_type is not None:  # as the next client (torch.profiler) left it
            self.cupti.set_thread_id_type(self._thread_id_type)
            self._thread_id_type = None
        if self._subscriber is not None:
            detach = self._detaches()
            try:
                self.cupti.unsubscribe(self._subscriber)
                if detach:
                    self.cupti.detach()
            finally:
                self._subscriber = None

    # -- CUPTI callbacks (dispatched from _Shared) -----------------------------------------------------
    def _buffer_completed(self, buf: np.ndarray | None, valid: int) -> None:
        """A completed buffer. Called from CUPTI's buffer-completion thread."""
        self._report_dropped()
        collector = self.collector
        if buf is None or collector is None or valid == 0:
            _recycle([(buf, valid)] if buf is not None else [])
            return
        collector.add_buffer(buf, valid)
        if collector.pending_bytes >= self.process_at_bytes:
            collector.process(flush=False)
            _recycle(collector.take_parsed_buffers())
            # A profile left on for hours must not keep every scope's marks (16 B each) until
            # finalize: a thread's launches this much older than its latest one attributed have
            # come in (its records arrive in order; other threads' may lag behind).
            window = MARKS_KEPT_NS / collector.clock.scale  # in CUPTI's units (ticks after Kineto)
            horizons = {tid: int(t - window) for tid, t in collector.latest_launch.items()}
            for timeline in self._time_lines():
                timeline.forget_before_each(horizons)

    def _report_dropped(self) -> None:
        """Called from CUPTI's buffer thread and from flush."""
        n = self.cupti.dropped_records()
        if n and self.sink is not None:
            self.sink.report_dropped(n, "cupti")

    def _record_size(self, buf: np.ndarray, valid: int, offset: int) -> int:
        """Called from CUPTI's buffer thread (via the collector)."""
        return self.cupti.record_size_at(buf.ctypes.data, valid, offset)

    def _graph_callback(self, cbid: int, cbdata: int) -> None:
        """A RESOURCE callback: GRAPHNODE_CREATED runs on the thread that adds the node (the
        capturing thread during stream capture, inside the launch call), GRAPHNODE_CLONED at graph
        instantiation."""
        graph_data = ctypes.c_void_p.from_address(cbdata + layout.ResourceData.resource_descriptor).value
        if not graph_data:
            return
        node = ctypes.c_void_p.from_address(graph_data + layout.GraphData.node).value
        if ctypes.c_uint32.from_address(graph_data + layout.GraphData.node_type).value != layout.GRAPH_NODE_TYPE_KERNEL:
            return  # a copy or memset: no kernel record, and it must not take a kernel's op or tag
        if cbid == layout.CBID_RESOURCE_GRAPHNODE_CREATED:
            GRAPH_NODES.created(self.cupti.graph_node_id(node), self._current_path(), _Shared.clock(),
                                self._take_graph_tag())
        elif cbid == layout.CBID_RESOURCE_GRAPHNODE_CLONED:
            original = ctypes.c_void_p.from_address(graph_data + layout.GraphData.original_node).value
            GRAPH_NODES.cloned(self.cupti.graph_node_id(original), self.cupti.graph_node_id(node))

    # -- python context -------------------------------------------------------------------------------
    def set_python_context(self, on: bool, path_of_caller: Callable[[], int],
                           triton_stacks: ThreadTimelines | None = None) -> None:
        """With a python-context session, every launch API call records the Python stack it was
        made from (a Python callback per launch, as Proton unwinds the stack per launch); the
        kernel lands there instead of under the marked scope. A kernel carries the correlation id
        of the API call that launched it: the runtime's for torch and other runtime users, the
        driver's `cuLaunchKernelEx` for Triton. The driver's `cuLaunchKernel` is not watched: the
        runtime calls it inside every `cudaLaunchKernel`, and each watched call costs two Python
        callbacks through ctypes (enter and exit; their cost: docs/design.md, "The python context").

        `triton_stacks`, when given, is a time line on which Triton's launch hook marks the Python
        stack of each of its launches (path + 1 during the launch, 0 after): then
        `cuLaunchKernelEx` is not watched either, and its kernels take the marked stack."""
        if self._subscriber is None:
            return
        watch: set[tuple[int, int]] = set()
        if on:
            watch.update((layout.CB_DOMAIN_RUNTIME_API, cbid) for cbid in layout.RUNTIME_LAUNCH_CBIDS)
            watch.update((layout.CB_DOMAIN_DRIVER_API, cbid) for cbid in layout.DRIVER_DIRECT_LAUNCH_CBIDS
                         if triton_stacks is None or cbid not in layout.TRITON_LAUNCH_CBIDS)
        _Shared.python_on = False
        self._python_watch = watch
        self._watch()
        _Shared.python_path = path_of_caller
        _Shared.python_on = on
        self._triton_stacks = triton_stacks if on else None
        if self.collector is not None:
            self.collector.hooked_stacks_at = self._hooked_stacks_at()
        self.python_context = on

    def _watch(self) -> None:
        """Turns the launch callbacks the python context and the graph launch records need on,
        and the others off."""
        watch = self._python_watch | self._graph_watch | self._sync_watch
        for domain, cbid in self._watched - watch:
            self.cupti.enable_callback(False, self._subscriber, domain, cbid)
        for domain, cbid in watch - self._watched:
            self.cupti.enable_callback(True, self._subscriber, domain, cbid)
        self._watched = watch

    def _time_lines(self) -> list[ThreadTimelines]:
        """The time lines launches are looked up on: the scope marks, and the stacks Triton's
        launch hook marks in the python context."""
        triton_stacks = self._triton_stacks
        return [self.sink.timeline] if triton_stacks is None else [self.sink.timeline, triton_stacks]

    def _hooked_stacks_at(self):
        return self._triton_stacks.paths_at if self._triton_stacks is not None else None

    # -- devices ----------------------------------------------------------------------------------------
    def device_info(self, device_id: int) -> DeviceInfo | None:
        return self.driver.device_info(device_id)


def _idle_torch_profiler_holds_cupti() -> bool:
    """Whether the CUPTI subscription that refused us is Kineto's, left over from a torch.profiler
    session that has ended (rather than a live torch.profiler, or Nsight tools injected through
    CUDA_INJECTION64_PATH, whose activity buffers we must not take over)."""
    torch = sys.modules.get("torch")
    if torch is None or os.environ.get("CUDA_INJECTION64_PATH"):
        return False
    enabled = getattr(getattr(torch, "autograd", None), "_profiler_enabled", None)
    return enabled is not None and not enabled()


def _kernel_name(address: int) -> str:
    """The kernel name CUPTI keeps at `address`. Called from CUPTI's buffer thread."""
    return ctypes.string_at(address).decode("utf-8", errors="replace")
