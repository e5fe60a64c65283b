"""`CuptiBackend` with a scripted libcupti (kineto's MockCuptiActivityBuffer idea): the real
buffer callbacks, parser and collector, driven through `lepton.start/scope/finalize`."""
from __future__ import annotations

import ctypes
import json
import os
import threading
import time

import numpy as np
import pytest
from triton_standin import LazyDict, call_exit_hook
from twins import cupti_activity as synthetic

import lepton as proton
from lepton.backends import cupti as cupti_package
from lepton.backends.cupti import backend as cupti_backend
from lepton.backends.cupti import layout
from lepton.backends.cupti.bindings import CuptiBusyError
from lepton.model.records import DeviceInfo
from lepton.model.timeline import ThreadTimelines
from lepton.runtime.hot_path import HOT_PATH
from lepton.runtime.registry import REGISTRY

NAMES = {0x7F00_0000_1000: b"add_kernel\0", 0x7F00_0000_2000: b"_ZN2at6native18elementwise_kernel\0"}
# Where Lepton's own frames come from: not "/lepton/", which is also in the path of a clone named lepton.
LEPTON_PACKAGE = os.path.dirname(os.path.abspath(proton.__file__)) + os.sep
H100 = DeviceInfo(arch="90", num_sms=132, clock_rate_khz=1_980_000, memory_clock_rate_khz=2_619_000,
                  bus_width_bits=5120)


class FakeCupti:
    """What the backend calls of libcupti, scripted: records written as CUPTI writes them (an API
    record naming the launching thread where the launch APIs' records are on, kernel records with
    their `queued` time where latency timestamps are on), delivered through the backend's real
    buffer callbacks; the graph launch callback called where it is on."""

    path, version = "fake", 130001

    def __init__(self, busy: bool = False, tsc: bool = False, latency: bool = True) -> None:
        self.busy = busy
        self.tsc = tsc  # timestamps from a foreign source (torch.profiler's TSC): 3 ticks per ns
        self.can_time_launches = latency  # cuptiActivityEnableLatencyTimestamps works
        self.latency = False
        self._stale_queued = 0  # what CUPTI leaves in a graph kernel's `queued`: the last eager one's
        self.thread_ids = 0
        self.subscribed = False
        self.detached = 0
        self.enabled: set[int] = set()
        self.api_switches: dict[tuple[str, int], bool] = {}
        self.callbacks: dict[tuple[int, int], bool] = {}
        self.zeroed_attr = 0
        self.dropped = 0
        self._corr = 0
        self._records: list[tuple[int, dict]] = []
        self._lock = threading.Lock()
        self._names = {p: ctypes.create_string_buffer(s) for p, s in NAMES.items()}

    # -- the Cupti surface ----------------------------------------------------------------------
    def subscribe(self, callback, name=b"lepton"):
        if self.busy:
            raise CuptiBusyError("CUPTI is already in use by another profiler (CUPTI for nsys)", 39)
        self.subscribed = True
        return 1

    def unsubscribe(self, handle):
        self.subscribed = False

    def detach(self):
        assert not self.subscribed, "cuptiFinalize with a subscriber still in place"
        self.detached += 1
        self.api_switches.clear()  # CUPTI's defaults again, as after cuptiFinalize
        self.enabled.clear()
        self.callbacks.clear()

    def enable_callback(self, enable, handle, domain, cbid):
        self.callbacks[(domain, cbid)] = enable

    def watched(self, domain):
        """The launch calls watched in `domain` (the synchronize calls, always watched where CUPTI
        is subscribed, are tests/unit/test_cupti_fault.py's)."""
        sync = layout.DRIVER_SYNC_CBIDS if domain == layout.CB_DOMAIN_DRIVER_API else layout.RUNTIME_SYNC_CBIDS
        return sorted(cbid for (d, cbid), on in self.callbacks.items() if d == domain and on and cbid not in sync)

    def set_attribute_u8(self, attr, value):
        self.zeroed_attr = value

    def register_buffer_callbacks(self, requested, completed):
        self.registered = (requested, completed)

    def enable(self, kind):
        self.enabled.add(kind)

    def disable(self, kind):
        self.enabled.discard(kind)
        return 0

    def enable_latency_timestamps(self, enable):
        if not self.can_time_launches:
            return -1
        self.latency = bool(enable)
        return 0

    def api_records_on(self, domain, cbid):
        """Whether a call records: its kind on and the call not switched off, or switched on alone."""
        switch = self.api_switches.get((domain, cbid))
        kind = layout.KIND_DRIVER if domain == "driver" else layout.KIND_RUNTIME
        return switch is not False if kind in self.enabled else bool(switch)

    def enable_driver_api(self, cbid, enable):
        self.api_switches[("driver", cbid)] = enable
        return 0

    def enable_runtime_api(self, cbid, enable):
        self.api_switches[("runtime", cbid)] = enable
        return 0

    def check(self, status, what):
        assert status == 0, what

    def dropped_records(self):
        n, self.dropped = self.dropped, 0
        return n

    def timestamp(self):
        if self.tsc:
            return (time.time_ns() - 1_700_000_000_000_000_000) * 3
        return time.time_ns()  # CUPTI's clock is CLOCK_REALTIME

    def fast_timestamp(self):
        return self.timestamp

    def thread_id_type(self):
        return self.thread_ids

    def set_thread_id_type(self, kind):
        self.thread_ids = kind

    def graph_node_id(self, node):
        return node + 1000

    def record_size_at(self, address, valid, offset):
        kind = ctypes.c_uint32.from_address(address + offset).value
        return layout.RECORD_SIZE.get(kind, 0)

    def flush_all(self, forced):
        """Hands every record written so far to the backend in one buffer, through the module's
        real request/complete callbacks, as CUPTI's thread would."""
        with self._lock:
            records, self._records = self._records, []
        if not records:
            return
        kinds = [k for k, _ in records]
        cols: dict[int, dict[str, list]] = {}
        for k, fields in records:
            group = "k" if k in layout.KERNEL_KINDS else "a"
            for f, v in fields.items():
                cols.setdefault(group, {}).setdefault(f, []).append(v)
        data = synthetic.pack(kinds, cols.get("k"), cols.get("a"))
        buf_p, size, max_records = ctypes.c_void_p(), ctypes.c_size_t(), ctypes.c_size_t()
        cupti_backend._buffer_requested(ctypes.addressof(buf_p), ctypes.addressof(size),
                                        ctypes.addressof(max_records))
        assert size.value >= len(data) and buf_p.value % 8 == 0
        ctypes.memmove(buf_p.value, data.ctypes.data, len(data))
        cupti_backend._buffer_completed(0, 0, buf_p.value, size.value, len(data))

    # -- the scripted program -----------------------------------------------------------------------
    def launch(self, name_ptr: int, *, graph_nodes=(0,), duration_ns: int = 2000, stream: int = 7):
        """A launch on the calling thread (`cudaLaunchKernel`, or `cuGraphLaunch` with graph nodes):
        an API record, and (later) one kernel record per graph node. Returns the correlation id."""
        graph = tuple(graph_nodes) != (0,)
        domain, cbid = ("driver", 514) if graph else ("runtime", 211)
        now = self.timestamp()
        with self._lock:
            self._corr += 1
            corr = self._corr
        # The tests call the callback of an eager launch themselves, from the frame it names.
        if graph and self.callbacks.get((layout.CB_DOMAIN_DRIVER_API, cbid)):
            self.call_back(layout.CB_DOMAIN_DRIVER_API, cbid, corr)
        with self._lock:
            if layout.KIND_CONCURRENT_KERNEL not in self.enabled:
                return corr
            if self.api_records_on(domain, cbid):
                self._records.append((layout.KIND_DRIVER if graph else layout.KIND_RUNTIME, {
                    "start": now, "end": now + 500, "correlation_id": corr, "cbid": cbid,
                    "thread_id": threading.get_native_id() if self.thread_ids == 1
                    else threading.get_ident() & 0xFFFF_FFFF}))
            queued = self.timestamp() if self.latency else 0  # inside the call
            if not graph:
                self._stale_queued = queued
            for node in graph_nodes:
                self._records.append((layout.KIND_CONCURRENT_KERNEL, {
                    "start": now + 10_000, "end": now + 10_000 + duration_ns, "correlation_id": corr,
                    "name": ctypes.addressof(self._names[name_ptr]), "graph_node_id": node, "stream_id": stream,
                    "device_id": 0, "queued": self._stale_queued if graph else queued}))
        return corr

    @staticmethod
    def call_back(domain, cbid, corr):
        """CUPTI's launch callback, at API enter and exit, on the launching thread."""
        data = _CallbackData(callback_site=0, correlation_id=corr)
        cupti_backend._resource_callback(None, domain, cbid, ctypes.addressof(data))
        data.callback_site = 1
        cupti_backend._resource_callback(None, domain, cbid, ctypes.addressof(data))


class FakeDriver:
    def __init__(self, initialized: bool) -> None:
        self._initialized = initialized
        self.synchronized = 0

    def initialized(self):
        return self._initialized

    def synchronize_all(self):
        self.synchronized += 1

    def device_info(self, ordinal):
        return H100


@pytest.fixture
def fake_cupti(monkeypatch, scripted_gpu):
    """Makes backend "cupti" a CuptiBackend over FakeCupti/FakeDriver; returns the fakes."""
    made = {}

    def factory(mode, busy=False, initialized=True):
        made["cupti"] = FakeCupti(busy=made.get("busy", False), tsc=made.get("tsc", False),
                                  latency=made.get("latency", True))
        made["driver"] = FakeDriver(initialized=made.get("initialized", True))
        made["backend"] = cupti_backend.CuptiBackend(mode, cupti=made["cupti"], driver=made["driver"])
        return made["backend"]

    monkeypatch.setattr(cupti_package, "make_cupti_backend", factory)  # what the backend table names
    monkeypatch.setattr(cupti_backend, "GRAPH_NODES", cupti_backend.GraphNodePaths())
    return made


def hatchet(path):
    with open(path) as f:
        return json.load(f)


def child(node, name):
    return next(c for c in node["children"] if c["frame"]["name"] == name)


def test_kernels_land_under_the_scopes_active_at_their_launch(fake_cupti):
    proton.start("prof", backend="cupti")
    cupti = fake_cupti["cupti"]
    with proton.scope("a"):
        cupti.launch(0x7F00_0000_1000)
        with proton.scope("b"):
            cupti.launch(0x7F00_0000_2000)
            cupti.launch(0x7F00_0000_2000)
    cupti.launch(0x7F00_0000_1000)
    proton.finalize()
    root, devices = hatchet("prof.hatchet")
    a = child(root, "a")
    assert child(a, "add_kernel")["metrics"]["count"] == 1
    assert child(child(a, "b"), "_ZN2at6native18elementwise_kernel")["metrics"]["count"] == 2
    assert child(root, "add_kernel")["metrics"]["count"] == 1
    assert child(a, "add_kernel")["metrics"]["time (ns)"] == 2000
    assert devices == {"CUDA": {"0": {"arch": "90", "bus_width": 5120, "clock_rate": 1_980_000,
                                      "memory_clock_rate": 2_619_000, "num_sms": 132}}}
    assert fake_cupti["driver"].synchronized >= 1  # finalize waited for the GPU
    assert not cupti.subscribed and not cupti.enabled and cupti.zeroed_attr == 0
    assert cupti.detached == 1  # CUPTI left the process: later launches run uninstrumented


def test_one_threads_launches_are_timed_by_their_kernel_records_alone(fake_cupti):
    """No launch API record is written while one thread marks; latency timestamps are on for the
    session only."""
    proton.start("one", backend="cupti")
    backend, cupti = fake_cupti["backend"], fake_cupti["cupti"]
    assert cupti.latency and backend.api_records == ""
    assert not {layout.KIND_DRIVER, layout.KIND_RUNTIME} & cupti.enabled
    with proton.scope("a"):
        cupti.launch(0x7F00_0000_1000)
    with proton.scope("b"):
        cupti.launch(0x7F00_0000_1000)
        cupti.launch(0x7F00_0000_2000)
    assert not any(k in layout.API_KINDS for k, _ in cupti._records)
    proton.finalize()
    assert not cupti.latency
    root, _ = hatchet("one.hatchet")
    assert child(child(root, "a"), "add_kernel")["metrics"]["count"] == 1
    assert child(child(root, "b"), "add_kernel")["metrics"]["count"] == 1
    assert child(child(root, "b"), "_ZN2at6native18elementwise_kernel")["metrics"]["count"] == 1


def test_a_second_marking_thread_turns_the_launch_api_records_on(fake_cupti):
    """Kernels launched before the second thread's first scope keep theirs; after it, each thread's
    launches land in its own scope; a thread that never marks follows the first (torch's autograd
    threads launch backward()'s kernels while the calling thread waits in its scope)."""
    proton.start("two", backend="cupti")
    backend, cupti = fake_cupti["backend"], fake_cupti["cupti"]
    with proton.scope("main"):
        cupti.launch(0x7F00_0000_1000)
        assert backend.api_records == ""

        def worker():
            with proton.scope("worker"):
                cupti.launch(0x7F00_0000_2000)

        t = threading.Thread(target=worker)
        t.start()
        t.join()
        assert backend.api_records == "masked"
        cupti.launch(0x7F00_0000_1000)
        unmarked = threading.Thread(target=cupti.launch, args=(0x7F00_0000_2000,))
        unmarked.start()
        unmarked.join()
    proton.finalize()
    root, _ = hatchet("two.hatchet")
    main = child(root, "main")
    assert child(main, "add_kernel")["metrics"]["count"] == 2
    assert child(main, "_ZN2at6native18elementwise_kernel")["metrics"]["count"] == 1  # the unmarked thread's
    # The worker inherits the main thread's stack (Proton's shadow context), then its own scope.
    assert child(child(main, "worker"), "_ZN2at6native18elementwise_kernel")["metrics"]["count"] == 1


def test_graph_replays_take_their_launch_from_the_graph_launch_callback(fake_cupti):
    """CUPTI leaves the last eager kernel's `queued` time in a graph's kernels; each replay's kernels
    still land under that replay's scope."""
    proton.start("replays", backend="cupti")
    backend, cupti = fake_cupti["backend"], fake_cupti["cupti"]
    assert cupti.watched(layout.CB_DOMAIN_DRIVER_API) == [514, 515]
    assert cupti.watched(layout.CB_DOMAIN_RUNTIME_API) == [311, 312]
    with proton.scope("eager"):
        cupti.launch(0x7F00_0000_2000)
    for replay in ("replay0", "replay1"):
        with proton.scope(replay):
            cupti.launch(0x7F00_0000_1000, graph_nodes=[1, 2])
    proton.finalize()
    assert backend.api_records == ""
    root, _ = hatchet("replays.hatchet")
    eager = [c["frame"]["name"] for c in child(root, "eager")["children"]]
    assert eager == ["_ZN2at6native18elementwise_kernel"]
    for replay in ("replay0", "replay1"):
        assert child(child(root, replay), "add_kernel")["metrics"]["count"] == 2


def test_kernels_from_many_threads_land_under_each_threads_own_scope(fake_cupti):
    """Proton's test_scope_multiple_threads, through the time lines: every thread launches inside
    its own scope while the others do the same."""
    proton.start("threads", backend="cupti")
    cupti = fake_cupti["cupti"]
    start = threading.Barrier(20)

    def work(i):
        start.wait()
        for _ in range(5):
            with proton.scope(f"t{i}"):
                cupti.launch(0x7F00_0000_1000)
            cupti.launch(0x7F00_0000_2000)  # between scopes: ROOT

    threads = [threading.Thread(target=work, args=(i,)) for i in range(20)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    proton.finalize()
    root, _ = hatchet("threads.hatchet")
    for i in range(20):
        assert child(child(root, f"t{i}"), "add_kernel")["metrics"]["count"] == 5
    assert child(root, "_ZN2at6native18elementwise_kernel")["metrics"]["count"] == 100


def test_with_a_foreign_timestamp_source_kernels_still_land_in_their_scopes_in_nanoseconds(fake_cupti):
    """torch.profiler leaves its TSC timestamp callback registered: record times are then TSC ticks
    (here 3 per ns), and the time lines must use that clock too."""
    fake_cupti["tsc"] = True
    proton.start("tsc", backend="cupti")
    cupti = fake_cupti["cupti"]
    for _ in range(50):
        with proton.scope("a"):
            cupti.launch(0x7F00_0000_1000, duration_ns=6000)  # 6000 ticks: 2000 ns
        with proton.scope("b"):
            cupti.launch(0x7F00_0000_2000)
    proton.finalize()
    root, _ = hatchet("tsc.hatchet")
    k = child(child(root, "a"), "add_kernel")["metrics"]
    assert k["count"] == 50
    assert abs(k["time (ns)"] - 50 * 2000) <= 50 * 20  # the fitted rate: within 1%
    assert child(child(root, "b"), "_ZN2at6native18elementwise_kernel")["metrics"]["count"] == 50
    assert cupti.thread_ids == 0  # the thread id type is restored for the next client


def test_launch_records_are_switched_per_api_before_cuda_init_and_masked_after(fake_cupti):
    """CUPTI is detached at the end (which resets every switch). (A libcupti that cannot time
    launches in kernel records: the launch API records are on from the start.)"""
    fake_cupti["latency"] = False
    fake_cupti["initialized"] = False
    proton.start("early", backend="cupti")
    backend, cupti = fake_cupti["backend"], fake_cupti["cupti"]
    assert backend.api_records == "per-cbid"
    assert all(cupti.api_switches[("driver", c)] for c in layout.DRIVER_LAUNCH_CBIDS)
    assert layout.KIND_DRIVER not in cupti.enabled
    proton.finalize()
    assert cupti.detached == 1 and not any(cupti.api_switches.values())

    fake_cupti["initialized"] = True
    proton.start("late", backend="cupti")
    backend, cupti = fake_cupti["backend"], fake_cupti["cupti"]
    assert backend.api_records == "masked"
    assert {layout.KIND_DRIVER, layout.KIND_RUNTIME} <= cupti.enabled
    assert cupti.api_switches[("driver", 1)] is False and ("driver", 307) not in cupti.api_switches
    proton.finalize()
    assert cupti.detached == 1 and cupti.api_switches == {}


@pytest.mark.parametrize("initialized", [False, True])
def test_where_torch_profiler_keeps_cupti_the_api_switches_are_put_back_for_it(fake_cupti, monkeypatch,
                                                                               initialized):
    """Without the subscription CUPTI is not Lepton's to detach, so the per-API switches are put
    back as they were, for torch.profiler: switched off again before CUDA init, unmasked after."""
    monkeypatch.setattr(cupti_backend, "_idle_torch_profiler_holds_cupti", lambda: True)
    fake_cupti["busy"] = True
    fake_cupti["initialized"] = initialized
    with pytest.warns(RuntimeWarning, match="torch.profiler keeps CUPTI's callback slot"):
        proton.start("kept", backend="cupti")
    backend, cupti = fake_cupti["backend"], fake_cupti["cupti"]
    assert backend.api_records == ("masked" if initialized else "per-cbid")
    switched = dict(cupti.api_switches)
    proton.finalize()
    assert cupti.detached == 0
    if initialized:
        assert switched[("driver", 1)] is False and cupti.api_switches[("driver", 1)] is True
        assert cupti.api_switches.keys() == switched.keys()
    else:
        assert all(switched[("driver", c)] for c in layout.DRIVER_LAUNCH_CBIDS)
        assert not any(cupti.api_switches.values())


def test_dropped_records_are_reported_and_kept_in_the_profile(fake_cupti, capsys):
    proton.start("prof", backend="cupti")
    cupti = fake_cupti["cupti"]
    with proton.scope("a"):
        cupti.launch(0x7F00_0000_1000)
    cupti.dropped = 7
    proton.finalize()
    root, _ = hatchet("prof.hatchet")
    assert root["metrics"]["dropped_records"] == 7
    assert "7 cupti activity records were dropped" in capsys.readouterr().err
    assert child(child(root, "a"), "add_kernel")["metrics"]["count"] == 1


USER, LEPTONS = 0x7F00_0000_1000, 0x7F00_0000_2000  # add_kernel; a torch kernel of the device sums


def names_in(node) -> list[str]:
    return [n for c in node["children"] for n in (c["frame"]["name"], *names_in(c))]


def test_kernels_lepton_launches_itself_are_in_no_profile_and_those_around_them_stay(fake_cupti):
    """`HotPath.internal` (the instrumentation backend's device sums at a decode): its kernels are
    dropped; the user's before and after it land in their scope (one marking thread: kernels timed
    by their own records)."""
    proton.start("own", backend="cupti")
    cupti = fake_cupti["cupti"]
    with proton.scope("a"):
        cupti.launch(USER)
        with HOT_PATH.internal():
            cupti.launch(LEPTONS)
            cupti.launch(LEPTONS)
        cupti.launch(USER)
    cupti.launch(USER)
    proton.finalize()
    assert fake_cupti["backend"].api_records == ""
    root, _ = hatchet("own.hatchet")
    assert "_ZN2at6native18elementwise_kernel" not in names_in(root)
    assert child(child(root, "a"), "add_kernel")["metrics"]["count"] == 2
    assert child(root, "add_kernel")["metrics"]["count"] == 1


def test_with_several_threads_only_the_internal_threads_launches_in_it_are_dropped(fake_cupti):
    """With the launch API records on: a worker's decode drops the worker's kernels only; the main
    thread's launches meanwhile stay, and so do those of a thread that never marked (it follows the
    main thread) made while the main thread decodes."""
    proton.start("own", backend="cupti")
    cupti = fake_cupti["cupti"]
    inside, done = threading.Event(), threading.Event()

    def decode():
        with HOT_PATH.internal():
            cupti.launch(LEPTONS)
            inside.set()
            done.wait(5)

    with proton.scope("main"):
        worker = threading.Thread(target=decode)
        worker.start()
        inside.wait(5)
        cupti.launch(USER)
        done.set()
        worker.join()
        assert fake_cupti["backend"].api_records == "masked"
        with HOT_PATH.internal():
            cupti.launch(LEPTONS)
            unmarked = threading.Thread(target=cupti.launch, args=(USER,))
            unmarked.start()
            unmarked.join()
    proton.finalize()
    root, _ = hatchet("own.hatchet")
    assert "_ZN2at6native18elementwise_kernel" not in names_in(root)
    assert child(child(root, "main"), "add_kernel")["metrics"]["count"] == 2


def test_kernels_launched_while_deactivated_are_not_counted(fake_cupti):
    proton.start("prof", backend="cupti")
    cupti = fake_cupti["cupti"]
    with proton.scope("on"):
        cupti.launch(0x7F00_0000_1000)
    proton.deactivate()
    with proton.scope("off"):
        cupti.launch(0x7F00_0000_1000)
    proton.activate()
    proton.finalize()
    root, _ = hatchet("prof.hatchet")
    assert child(child(root, "on"), "add_kernel")["metrics"]["count"] == 1
    assert all(c["frame"]["name"] != "off" or not c["children"] for c in root["children"])


def test_another_cupti_client_is_a_clear_error_and_leaves_no_session(fake_cupti, monkeypatch):
    monkeypatch.setattr(cupti_backend, "_idle_torch_profiler_holds_cupti", lambda: False)
    fake_cupti["busy"] = True
    with pytest.raises(proton.BackendError, match="CUPTI is already in use"):
        proton.start("refused", backend="cupti")
    assert not REGISTRY.sessions
    assert fake_cupti["cupti"].detached == 0  # the other client's CUPTI: not ours to detach


def test_after_a_finished_torch_profiler_session_kernels_are_collected_without_the_subscription(
        fake_cupti, monkeypatch):
    monkeypatch.setattr(cupti_backend, "_idle_torch_profiler_holds_cupti", lambda: True)
    fake_cupti["busy"] = True
    with pytest.warns(RuntimeWarning, match="torch.profiler keeps CUPTI's callback slot"):
        proton.start("prof", backend="cupti")
    assert fake_cupti["backend"].graph_capture_scopes is False
    with proton.scope("a"):
        fake_cupti["cupti"].launch(0x7F00_0000_1000)
    proton.finalize()
    root, _ = hatchet("prof.hatchet")
    assert child(child(root, "a"), "add_kernel")["metrics"]["count"] == 1
    assert fake_cupti["cupti"].detached == 0  # CUPTI is torch.profiler's: left attached for it


class _GraphData(ctypes.Structure):  # CUpti_GraphData, as layout.GraphData reads it
    _fields_ = [("graph", ctypes.c_void_p), ("original_graph", ctypes.c_void_p),
                ("node", ctypes.c_void_p), ("original_node", ctypes.c_void_p),
                ("node_type", ctypes.c_uint32), ("dependency", ctypes.c_void_p),
                ("graph_exec", ctypes.c_void_p)]


class _ResourceData(ctypes.Structure):  # CUpti_ResourceData
    _fields_ = [("context", ctypes.c_void_p), ("handle", ctypes.c_void_p),
                ("descriptor", ctypes.POINTER(_GraphData))]


def test_graph_callbacks_carry_capture_scopes_to_replayed_kernels(fake_cupti, monkeypatch):
    """A captured node (id 1000+5) is cloned at instantiation (id 1000+6); a replay under scope
    `replay` then puts its kernel at replay/<captured_at>/capture/add_kernel."""
    assert _GraphData.node.offset == layout.GraphData.node
    assert _GraphData.original_node.offset == layout.GraphData.original_node
    assert _ResourceData.descriptor.offset == layout.ResourceData.resource_descriptor
    proton.start("prof", backend="cupti")
    backend, cupti = fake_cupti["backend"], fake_cupti["cupti"]
    with proton.scope("capture"):
        gd = _GraphData(node=5)
        rd = _ResourceData(descriptor=ctypes.pointer(gd))
        cupti_backend._resource_callback(None, layout.CB_DOMAIN_RESOURCE,
                                         layout.CBID_RESOURCE_GRAPHNODE_CREATED, ctypes.addressof(rd))
    gd2 = _GraphData(node=6, original_node=5)
    rd2 = _ResourceData(descriptor=ctypes.pointer(gd2))
    cupti_backend._resource_callback(None, layout.CB_DOMAIN_RESOURCE,
                                     layout.CBID_RESOURCE_GRAPHNODE_CLONED, ctypes.addressof(rd2))
    for replay in ("replay0", "replay1"):
        with proton.scope(replay):
            cupti.launch(0x7F00_0000_1000, graph_nodes=[1006])
    proton.finalize()
    assert backend.graph_capture_scopes
    root, _ = hatchet("prof.hatchet")
    for replay in ("replay0", "replay1"):
        k = child(child(child(child(root, replay), "<captured_at>"), "capture"), "add_kernel")
        assert k["metrics"]["count"] == 1


def _node_created(node: int, node_type: int = 0) -> None:
    gd = _GraphData(node=node, node_type=node_type)
    rd = _ResourceData(descriptor=ctypes.pointer(gd))
    cupti_backend._resource_callback(None, layout.CB_DOMAIN_RESOURCE, layout.CBID_RESOURCE_GRAPHNODE_CREATED,
                                     ctypes.addressof(rd))


def test_a_node_captured_while_its_session_was_deactivated_is_not_counted_at_replay(fake_cupti):
    """Proton's test_cudagraph_deactivate: `deactivate` during the capture leaves what is captured
    meanwhile out of that session's replays; a session started after the capture counts them."""
    sid = proton.start("prof", backend="cupti")
    cupti = fake_cupti["cupti"]
    with proton.scope("scope_a"):
        _node_created(5)
    proton.deactivate(sid)
    with proton.scope("scope_b"):
        _node_created(6)
    proton.activate(sid)
    late = proton.start("late", backend="cupti")
    with proton.scope("test0"):
        cupti.launch(0x7F00_0000_1000, graph_nodes=[1005, 1006])
    proton.finalize()
    for name, expected in (("prof", {"scope_a"}), ("late", {"scope_a", "scope_b"})):
        root, _ = hatchet(f"{name}.hatchet")
        captured = child(child(root, "test0"), "<captured_at>")
        assert {c["frame"]["name"] for c in captured["children"]} == expected, name
    assert late == sid + 1


def test_the_node_of_a_hooked_launch_takes_its_op_and_lepton_own_nodes_their_tag(fake_cupti):
    """The graph node made right after the launch hook's one-shot pair is that launch's: it takes
    the op, as the launch's kernel record would; the next node takes the scope again. A node made
    inside `launching_as(path, tag)` takes the path, and the first one the tag."""
    from lepton.runtime.hot_path import HOT_PATH

    proton.start("prof", backend="cupti")
    with proton.scope("s"):
        t = HOT_PATH.thread()
        op = HOT_PATH.paths.op(HOT_PATH.current(), "foo_test")
        HOT_PATH.mark_next_launch(t, op)
        _node_created(1)
        _node_created(2)
        tag = object()
        metric = HOT_PATH.paths.op(HOT_PATH.current(), "<metric>")
        with HOT_PATH.launching_as(metric, tag):
            _node_created(7, node_type=2)  # a memset node first: it takes neither path nor tag
            _node_created(3)
            _node_created(4)
        _node_created(5)
    proton.finalize()
    paths, _, tags = cupti_backend.GRAPH_NODES.nodes(np.array([1001, 1002, 1003, 1004, 1005]))
    s = HOT_PATH.paths.child(0, "s")
    assert paths.tolist() == [op, s, metric, metric, s]
    assert [x is tag for x in tags] == [False, False, True, False, False]
    assert cupti_backend.GRAPH_NODES.nodes(np.array([1007]))[0].tolist() == [-1]


def test_buffers_are_zeroed_before_reuse(monkeypatch):
    """CUPTI is told (ATTR_ZEROED_OUT_ACTIVITY_BUFFER) that buffers come zeroed."""
    monkeypatch.setattr(cupti_backend._Shared, "pool", [])
    buf = np.full(64, 7, np.uint8)
    cupti_backend._recycle([(buf, 40)])
    assert (buf[:40] == 0).all() and (buf[40:] == 7).all()
    assert cupti_backend._Shared.pool == [buf]


class _CallbackData(ctypes.Structure):  # CUpti_CallbackData up to correlationId (offsets 0 and 64)
    _fields_ = [("callback_site", ctypes.c_uint32), ("_pad", ctypes.c_uint32),
                ("_pointers", ctypes.c_void_p * 5), ("context_uid", ctypes.c_uint32), ("_pad2", ctypes.c_uint32),
                ("correlation_data", ctypes.c_void_p), ("correlation_id", ctypes.c_uint32)]


def test_python_context_puts_kernels_under_the_launching_python_line(fake_cupti):
    """CUPTI calls the launch callback on the launching thread, at API enter and exit; the kernel
    with that call's correlation id lands under the Python stack of the caller."""
    assert ctypes.sizeof(_CallbackData) == 72 and _CallbackData.correlation_id.offset == 64
    proton.start("py", context="python", backend="cupti")
    cupti = fake_cupti["cupti"]
    assert fake_cupti["backend"].python_context

    def launch_from_here():
        data = _CallbackData(callback_site=0, correlation_id=cupti._corr + 1)
        cupti_backend._resource_callback(None, layout.CB_DOMAIN_RUNTIME_API, 211, ctypes.addressof(data))
        data.callback_site = 1  # API_EXIT: nothing to record
        cupti_backend._resource_callback(None, layout.CB_DOMAIN_RUNTIME_API, 211, ctypes.addressof(data))
        cupti.launch(0x7F00_0000_1000)

    launch_from_here()
    proton.finalize()
    assert not fake_cupti["backend"].python_context  # callbacks switched off with the session
    root, _ = hatchet("py.hatchet")
    path = []
    node = root
    while node["children"]:
        (node,) = node["children"]
        path.append(node["frame"]["name"])
    assert path[-1] == "add_kernel" and node["metrics"]["count"] == 1
    assert path[-2].endswith("@launch_from_here") and "test_cupti_backend.py:" in path[-2]


def test_launch_callbacks_at_one_address_read_each_calls_data(fake_cupti):
    """CUPTI passes each call site's data at one address, so the callback keeps a structure mapped
    there: every call must still read that call's site and correlation id, and the kept mappings
    stay bounded when addresses keep changing."""
    proton.start("sameaddr", context="python", backend="cupti")
    collector = fake_cupti["backend"].collector
    data = _CallbackData()
    for corr in (7, 8, 9):
        data.callback_site, data.correlation_id = 0, corr
        cupti_backend._resource_callback(None, layout.CB_DOMAIN_RUNTIME_API, 211, ctypes.addressof(data))
        data.callback_site, data.correlation_id = 1, 1000 + corr  # API_EXIT: nothing recorded
        cupti_backend._resource_callback(None, layout.CB_DOMAIN_RUNTIME_API, 211, ctypes.addressof(data))
    assert [entry & 0xFFFF_FFFF for entry in collector.launch_stacks] == [7, 8, 9]
    moving = [_CallbackData(correlation_id=100 + i) for i in range(cupti_backend._CALLBACK_VIEWS_MAX + 10)]
    for d in moving:
        cupti_backend._resource_callback(None, layout.CB_DOMAIN_RUNTIME_API, 211, ctypes.addressof(d))
    assert len(cupti_backend._callback_views) <= cupti_backend._CALLBACK_VIEWS_MAX
    correlation_ids = [entry & 0xFFFF_FFFF for entry in collector.launch_stacks]
    assert correlation_ids[3:] == [d.correlation_id for d in moving]
    proton.finalize()


def test_python_context_launches_inside_scopes_land_under_their_whole_stack(fake_cupti):
    """A walk made inside a scope stops at the frame that entered it and takes the frames outside
    it from the scope (`runtime.python_stacks`): the kernel's path is still the whole stack."""
    proton.start("pyscoped", context="python", backend="cupti")
    cupti = fake_cupti["cupti"]

    def launch_from_here():
        data = _CallbackData(callback_site=0, correlation_id=cupti._corr + 1)
        cupti_backend._resource_callback(None, layout.CB_DOMAIN_RUNTIME_API, 211, ctypes.addressof(data))
        cupti.launch(0x7F00_0000_1000)

    def step():
        with proton.scope("inner"):
            launch_from_here()

    for _ in range(3):
        with proton.scope("outer"):
            step()
    step()  # the same launch outside the outer scope: the frames outside step() differ
    proton.finalize()

    def kernel_paths(node, path=()):
        if node["frame"]["name"] == "add_kernel":
            yield path, node["metrics"]["count"]
        for c in node["children"]:
            yield from kernel_paths(c, path + (node["frame"]["name"],))

    found = sorted(kernel_paths(hatchet("pyscoped.hatchet")[0]), key=lambda pc: pc[1])
    assert [count for _, count in found] == [1, 3]
    for path, _ in found:
        assert [n.rsplit("@", 1)[1] for n in path[-3:]] == [
            "test_python_context_launches_inside_scopes_land_under_their_whole_stack", "step", "launch_from_here"]
        assert all("test_cupti_backend.py:" in n for n in path[-3:])
    assert found[0][0][:-1] != found[1][0][:-1]  # two call sites of step()
    assert found[0][0][-2:] == found[1][0][-2:]


def test_python_context_launches_in_a_decorated_function_land_under_their_whole_stack(fake_cupti):
    """`@scope` enters its scope from its wrapper's frame, which is Lepton's and folded: a walk
    from inside stops there, and the frames outside it are still the caller's."""
    proton.start("pydecorated", context="python", backend="cupti")
    cupti = fake_cupti["cupti"]

    @proton.scope("decorated")
    def launch_from_here():
        data = _CallbackData(callback_site=0, correlation_id=cupti._corr + 1)
        cupti_backend._resource_callback(None, layout.CB_DOMAIN_RUNTIME_API, 211, ctypes.addressof(data))
        cupti.launch(0x7F00_0000_1000)

    def caller():
        launch_from_here()
        launch_from_here()

    caller()
    proton.finalize()
    found = []

    def walk(node, path):
        if node["frame"]["name"] == "add_kernel":
            found.append((path, node["metrics"]["count"]))
        for c in node["children"]:
            walk(c, [*path, c["frame"]["name"]])

    walk(hatchet("pydecorated.hatchet")[0], [])
    assert [count for _, count in found] == [1, 1]  # from caller's two lines
    for path, _ in found:
        assert [n.rsplit("@", 1)[1] for n in path[-4:-1]] == [
            "test_python_context_launches_in_a_decorated_function_land_under_their_whole_stack", "caller",
            "launch_from_here"]
        assert not any(n.startswith(LEPTON_PACKAGE) for n in path)  # Lepton's own frames are folded
    assert found[0][0][-2] == found[1][0][-2] and found[0][0][-3] != found[1][0][-3]


def test_python_context_puts_every_kernel_of_a_graph_launch_under_the_launching_line(fake_cupti):
    """The kernels of one graph launch share its correlation id: all of them take its stack."""
    proton.start("pygraph", context="python", backend="cupti")
    cupti = fake_cupti["cupti"]

    def replay_from_here():
        cupti.launch(0x7F00_0000_1000, graph_nodes=[1, 2, 3])  # calls the graph launch callback

    replay_from_here()
    proton.finalize()
    root, _ = hatchet("pygraph.hatchet")
    leaves = []

    def walk(node, names):
        if not node["children"]:
            leaves.append((names, node["metrics"]["count"]))
        for c in node["children"]:
            walk(c, [*names, c["frame"]["name"]])

    walk(root, [])
    assert sum(count for _, count in leaves) == 3
    assert all(any(n.endswith("@replay_from_here") for n in names) for names, _ in leaves)


def test_start_leaves_a_resident_zeroed_buffer_for_cupti(fake_cupti, monkeypatch):
    """The first buffer CUPTI asks for is ready (pages faulted in at start, not in the loop)."""
    monkeypatch.setattr(cupti_backend._Shared, "pool", [])
    proton.start("prof", backend="cupti")
    pool = list(cupti_backend._Shared.pool)
    proton.finalize()
    assert len(pool) * cupti_backend.BUFFER_BYTES >= cupti_backend._RESIDENT_AT_START_BYTES
    assert all(b.nbytes == cupti_backend.BUFFER_BYTES and not b.any() for b in pool)


def test_time_line_marks_are_dropped_once_their_launches_are_attributed(fake_cupti, monkeypatch):
    """A session left on keeps the marks of recent launches only, not one per scope since start."""
    monkeypatch.setattr(cupti_backend, "PROCESS_AT_BYTES", 1)  # process every completed buffer
    monkeypatch.setattr(cupti_backend, "MARKS_KEPT_NS", 0)
    proton.start("trim", backend="cupti")
    cupti = fake_cupti["cupti"]
    for i in range(300):
        with proton.scope(f"s{i % 3}"):
            cupti.launch(0x7F00_0000_1000)
        cupti.flush_all(forced=False)  # a buffer completes after every step
    kept = len(HOT_PATH.timeline.log())
    proton.finalize()
    assert kept <= 3  # the mark in force at the last launch and those after it
    root, _ = hatchet("trim.hatchet")
    assert {c["frame"]["name"]: child(c, "add_kernel")["metrics"]["count"] for c in root["children"]} == \
        {"s0": 100, "s1": 100, "s2": 100}


def _quiet_thread_profile(fake_cupti, monkeypatch, *, tsc: bool, kept_ns: int, quiet_for_s: float) -> dict:
    """A quiet thread's launch record sits in its own, not yet completed CUPTI buffer (CUPTI may
    keep a buffer per thread) while a busy thread's buffers complete, get processed and trim the
    time lines; the quiet buffer comes in at finalize. Returns scope -> kernel names."""
    fake_cupti["tsc"] = tsc
    monkeypatch.setattr(cupti_backend, "PROCESS_AT_BYTES", 1)
    monkeypatch.setattr(cupti_backend, "MARKS_KEPT_NS", kept_ns)
    proton.start("quiet", backend="cupti")
    cupti = fake_cupti["cupti"]
    launched, done = threading.Event(), threading.Event()
    held = []

    def quiet():
        with proton.scope("quiet_scope"):
            cupti.launch(0x7F00_0000_2000)
            with cupti._lock:
                held.extend(cupti._records)
                cupti._records.clear()
        with proton.scope("quiet_later"):
            launched.set()
            done.wait()

    t = threading.Thread(target=quiet)
    t.start()
    launched.wait()
    time.sleep(quiet_for_s)
    for _ in range(5):
        with proton.scope("main"):
            cupti.launch(0x7F00_0000_1000)
        cupti.flush_all(forced=False)
    with cupti._lock:
        cupti._records[:0] = held
    proton.finalize()
    done.set()
    t.join()
    root, _ = hatchet("quiet.hatchet")
    return {c["frame"]["name"]: [g["frame"]["name"] for g in c["children"]] for c in root["children"]}


def test_a_quiet_threads_marks_are_not_trimmed_by_a_busy_threads_launches(fake_cupti, monkeypatch):
    got = _quiet_thread_profile(fake_cupti, monkeypatch, tsc=False, kept_ns=50_000_000, quiet_for_s=0.15)
    assert got["quiet_scope"] == ["_ZN2at6native18elementwise_kernel"] and got["main"] == ["add_kernel"]


def test_the_trim_window_is_in_nanoseconds_whatever_clock_cupti_runs_on(fake_cupti, monkeypatch):
    """Marks and records on torch.profiler's tick clock (3 per ns here): 300 ms is 9e8 ticks."""
    windows = []
    real = ThreadTimelines.forget_before_each

    def spy(self, horizons):
        latest = fake_cupti["backend"].collector.latest_launch
        windows.extend(latest[tid] - h for tid, h in horizons.items())
        return real(self, horizons)

    monkeypatch.setattr(ThreadTimelines, "forget_before_each", spy)
    _quiet_thread_profile(fake_cupti, monkeypatch, tsc=True, kept_ns=300_000_000, quiet_for_s=0.0)
    assert windows and all(abs(w - 900_000_000) < 9_000_000 for w in windows)


def test_shadow_and_python_sessions_on_one_backend_each_get_their_own_paths(fake_cupti):
    proton.start("both_shadow", backend="cupti", context="shadow")
    proton.start("both_py", backend="cupti", context="python")
    cupti, backend = fake_cupti["cupti"], fake_cupti["backend"]

    def launch_here():
        data = _CallbackData(callback_site=0, correlation_id=cupti._corr + 1)
        cupti_backend._resource_callback(None, layout.CB_DOMAIN_RUNTIME_API, 211, ctypes.addressof(data))
        cupti.launch(0x7F00_0000_1000)

    with proton.scope("step"):
        launch_here()
    proton.finalize()
    assert backend is not None
    shadow, _ = hatchet("both_shadow.hatchet")
    assert child(child(shadow, "step"), "add_kernel")["metrics"]["count"] == 1
    python, _ = hatchet("both_py.hatchet")
    leaf_parents = []

    def walk(node, parent_name):
        for c in node["children"]:
            if c["frame"]["name"] == "add_kernel":
                leaf_parents.append(parent_name)
            walk(c, c["frame"]["name"])

    walk(python, "ROOT")
    assert len(leaf_parents) == 1 and leaf_parents[0].endswith("@launch_here")


def test_python_context_with_the_launch_hook_keeps_the_kernel_under_its_op(fake_cupti, knobs):
    """The hook's op node (made under the Python stack) wins over the bare stack of the launch."""
    proton.start("pyhook", backend="cupti", context="python", hook="triton")
    cupti = fake_cupti["cupti"]

    def launch_here():
        md = LazyDict({"name": "add_kernel", "function": 1, "stream": 0},
                      lambda: {"name": "add_4096", "bytes": 8})
        knobs.launch_enter_hook(md)
        data = _CallbackData(callback_site=0, correlation_id=cupti._corr + 1)
        cupti_backend._resource_callback(None, layout.CB_DOMAIN_DRIVER_API, 652, ctypes.addressof(data))
        cupti.launch(0x7F00_0000_1000)
        call_exit_hook(knobs, md)

    launch_here()
    proton.finalize()
    root, _ = hatchet("pyhook.hatchet")
    found = []

    def walk(node):
        for c in node["children"]:
            if c["frame"]["name"] in ("add_4096", "add_kernel"):  # the op is the kernel's node
                found.append((node["frame"]["name"].split("@")[-1], c["frame"]["name"],
                              c["metrics"]["count"], c["metrics"].get("bytes")))
            walk(c)

    walk(root)
    assert found == [("launch_here", "add_4096", 1, 8)]


def _triton_launch(knobs, cupti, name_ptr=0x7F00_0000_1000):
    """A Triton launch as Triton 3.6 makes it: hooks around the driver's cuLaunchKernelEx, whose
    callback (were it watched) would run inside."""
    md = LazyDict({"name": "add_kernel", "function": 1, "stream": 0}, lambda: {"name": "add_4096"})
    knobs.launch_enter_hook(md)
    cupti.launch(name_ptr)
    call_exit_hook(knobs, md)


def _kernel_paths(root, kernel="add_kernel"):
    """`(function names of the frames above, count)` of every node named `kernel`."""
    found = []

    def walk(node, path):
        for c in node["children"]:
            if c["frame"]["name"] == kernel:
                found.append((path, c["metrics"]["count"]))
            walk(c, path + (c["frame"]["name"].split("@")[-1],))

    walk(root, ())
    return found


def test_python_context_takes_triton_launch_stacks_from_its_hook_not_a_launch_callback(fake_cupti, chained_knobs):
    """With Triton's chain of hooks, Triton's launch call (cuLaunchKernelEx) is not watched: its
    kernels take the Python stack the hook marked; torch's runtime launches keep their callback."""
    proton.start("pytriton", backend="cupti", context="python")
    cupti = fake_cupti["cupti"]
    assert cupti.watched(layout.CB_DOMAIN_DRIVER_API) == [514, 515]  # cuGraphLaunch only
    assert set(layout.RUNTIME_LAUNCH_CBIDS) <= set(cupti.watched(layout.CB_DOMAIN_RUNTIME_API))

    def triton_from_here():
        _triton_launch(chained_knobs, cupti)

    def torch_from_here():
        data = _CallbackData(callback_site=0, correlation_id=cupti._corr + 1)
        cupti_backend._resource_callback(None, layout.CB_DOMAIN_RUNTIME_API, 211, ctypes.addressof(data))
        cupti.launch(0x7F00_0000_2000)

    with proton.scope("step"):
        for _ in range(3):
            triton_from_here()
            torch_from_here()
        cupti.launch(0x7F00_0000_1000)  # neither hooked nor watched: the time line's path
    proton.finalize()
    assert not chained_knobs.launch_enter_hook.calls and not chained_knobs.launch_exit_hook.calls
    assert not cupti.subscribed  # the launch callbacks went with the subscription
    root, _ = hatchet("pytriton.hatchet")
    (unhooked, n_unhooked), (hooked, n_hooked) = sorted(_kernel_paths(root), key=lambda p: p[1])
    assert (unhooked, n_unhooked) == (("step",), 1)
    assert hooked[-2:] == ("triton_from_here", "_triton_launch") and n_hooked == 3
    ((torch_path, n_torch),) = _kernel_paths(root, "_ZN2at6native18elementwise_kernel")
    assert torch_path[-1] == "torch_from_here" and n_torch == 3


def test_python_context_watches_triton_launch_calls_where_triton_has_one_hook_slot(fake_cupti, knobs):
    proton.start("pyslot", backend="cupti", context="python")
    cupti = fake_cupti["cupti"]
    assert knobs.launch_enter_hook is None  # left free for hook="triton"
    assert cupti.watched(layout.CB_DOMAIN_DRIVER_API) == [514, 515, 652, 653]
    proton.finalize()


def test_python_context_with_the_launch_hook_and_chained_hooks_keeps_the_kernel_under_its_op(
        fake_cupti, chained_knobs):
    proton.start("pyhookchain", backend="cupti", context="python", hook="triton")
    cupti = fake_cupti["cupti"]
    assert len(chained_knobs.launch_enter_hook.calls) == 2  # the stack marks and the op

    def launch_here():
        _triton_launch(chained_knobs, cupti)

    for _ in range(2):
        launch_here()
    proton.finalize()
    root, _ = hatchet("pyhookchain.hatchet")
    ((path, count),) = _kernel_paths(root, "add_4096")
    # Two hooks: Triton's chain calls them (the stand-in chain is a frame of the tests; Triton's
    # own is folded away with Triton's frames).
    assert path[-3:] == ("launch_here", "_triton_launch", "__call__") and count == 2
    assert _kernel_paths(root, "add_kernel") == []


# -- Triton's profile_buffer_size knob and periodic flushing ----------------------------------------
def requested_buffer_bytes() -> int:
    """The size the backend tells CUPTI a new buffer has."""
    buf_p, size, max_records = ctypes.c_void_p(), ctypes.c_size_t(), ctypes.c_size_t()
    cupti_backend._buffer_requested(ctypes.addressof(buf_p), ctypes.addressof(size),
                                    ctypes.addressof(max_records))
    cupti_backend._buffer_completed(0, 0, buf_p.value, size.value, 0)  # hand it back, unused
    return size.value


def test_without_the_knob_buffers_and_processing_keep_leptons_sizes(fake_cupti, monkeypatch):
    monkeypatch.delenv(cupti_backend.BUFFER_SIZE_VARIABLE, raising=False)
    proton.start("sizes", backend="cupti")
    sizes = requested_buffer_bytes(), fake_cupti["backend"].process_at_bytes
    proton.finalize()
    assert sizes == (cupti_backend.BUFFER_BYTES, cupti_backend.PROCESS_AT_BYTES)


def test_tritons_profile_buffer_size_knob_makes_buffers_complete_and_process_sooner(fake_cupti, monkeypatch):
    """`triton.knobs.proton.profile_buffer_size` (Proton's CUPTI buffer size) caps both sizes."""
    import sys
    import types

    triton = types.ModuleType("triton")
    triton.knobs = types.SimpleNamespace(proton=types.SimpleNamespace(profile_buffer_size=256 * 1024))
    monkeypatch.setitem(sys.modules, "triton", triton)
    proton.start("knob", backend="cupti")
    sizes = requested_buffer_bytes(), fake_cupti["backend"].process_at_bytes
    proton.finalize()
    assert sizes == (256 * 1024, 1)  # each buffer is processed as it completes
    assert requested_buffer_bytes() == cupti_backend.BUFFER_BYTES  # back to Lepton's once it stops


def test_periodic_flushing_writes_a_phase_when_a_buffer_brings_a_later_phases_kernel(fake_cupti, monkeypatch):
    """Proton main's test_periodic_flushing through the CUPTI backend's buffers: with a small
    TRITON_PROFILE_BUFFER_SIZE every completed buffer is processed, and each phase's file is on
    disk before finalize."""
    monkeypatch.setenv(cupti_backend.BUFFER_SIZE_VARIABLE, str(64 * 1024))
    session = proton.start("periodic", backend="cupti", mode="periodic_flushing:format=hatchet")
    cupti = fake_cupti["cupti"]
    on_disk = []
    for i in range(40):
        if i != 0 and i % 10 == 0:
            proton.data.advance_phase(session=session)
        with proton.scope(f"test_{i}", metrics={"count": 1}):
            cupti.launch(0x7F00_0000_1000)
        cupti.flush_all(forced=False)  # a buffer completes after every step
        REGISTRY.phase_writer.drain()
        on_disk.append(len([f for f in os.listdir(".") if f.endswith(".hatchet")]))
    proton.finalize(output_format="hatchet")
    # phase p is written when the buffer with phase p + 1's first kernel completes
    assert on_disk == [0] * 10 + [1] * 10 + [2] * 10 + [3] * 10
    for phase in range(4):
        root, _ = hatchet(f"periodic.part_{phase}.hatchet")
        assert len(root["children"]) == 10
        assert root["children"][0]["metrics"]["count"] == 1
        assert root["children"][0]["children"][0]["metrics"]["time (ns)"] > 0
