"""Issue 34, row 5: the kernels that completed before a GPU fault are in the profile, and one line
(and ROOT's metadata) names the fault. Through the scripted libcupti of test_cupti_backend: a fault
kills the context, after which CUPTI hands over nothing more, so only the records collected at the
program's synchronizes survive. (tests/gpu/test_gpu_fault.py is the same on a real GPU.)"""
from __future__ import annotations

import ctypes
import json

import pytest
import test_cupti_backend as scripted  # the scripted libcupti and its fixture
from test_cupti_backend import fake_cupti  # noqa: F401  (the fixture)

import lepton as proton
from lepton.backends.cupti import backend as cupti_backend
from lepton.backends.cupti import layout
from lepton.errors import BackendError

ADD = 0x7F00_0000_1000
ILLEGAL_ADDRESS = 700
LINE = ("lepton: the GPU reported CUDA_ERROR_ILLEGAL_ADDRESS (an illegal memory access was encountered) "
        "after {} kernels; the profile keeps the kernels that completed")


class _SyncCallbackData(ctypes.Structure):
    """CUpti_CallbackData as CUPTI passes it to a synchronize call's callback."""

    _fields_ = [("callback_site", ctypes.c_uint32), ("_pad", ctypes.c_uint32),
                ("function_name", ctypes.c_void_p), ("function_params", ctypes.c_void_p),
                ("function_return_value", ctypes.c_void_p), ("symbol_name", ctypes.c_void_p),
                ("context", ctypes.c_void_p), ("context_uid", ctypes.c_uint32), ("_pad2", ctypes.c_uint32),
                ("correlation_data", ctypes.c_void_p), ("correlation_id", ctypes.c_uint32)]


assert _SyncCallbackData.function_return_value.offset == layout.CALLBACK_RETURN_VALUE_OFFSET
assert _SyncCallbackData.correlation_id.offset == layout.CALLBACK_CORRELATION_ID_OFFSET


class FaultingCupti(scripted.FakeCupti):
    """A libcupti whose context a fault kills: from then on a flush hands over nothing and fails,
    and the records it still held are lost, as on the H100 (a profile with 0 kernels)."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.dead = False
        self.flushes = 0

    def flush_all(self, forced):
        self.flushes += 1
        if self.dead:
            with self._lock:
                self._records = []
            raise BackendError("cuptiActivityFlushAll failed: CUPTI_ERROR_UNKNOWN (999)")
        super().flush_all(forced)

    def synchronize(self, result: int = 0, domain: int = layout.CB_DOMAIN_RUNTIME_API, cbid: int = 165):
        """The program's `cudaDeviceSynchronize` (or another synchronize call): CUPTI's callbacks at
        its enter and exit, where watched; `result` is what it returns (700: the fault shows)."""
        if result in layout.GPU_FAULTS:
            self.dead = True
        if not self.callbacks.get((domain, cbid)):
            return result
        value = ctypes.c_int(0)
        data = _SyncCallbackData(callback_site=0, function_return_value=ctypes.addressof(value))
        cupti_backend._resource_callback(None, domain, cbid, ctypes.addressof(data))
        value.value = result
        data.callback_site = 1
        cupti_backend._resource_callback(None, domain, cbid, ctypes.addressof(data))
        return result


class FaultingDriver(scripted.FakeDriver):
    def __init__(self, initialized: bool, cupti: FaultingCupti) -> None:
        super().__init__(initialized)
        self.cupti = cupti

    def synchronize_all(self):
        self.synchronized += 1
        return ILLEGAL_ADDRESS if self.cupti.dead else 0


@pytest.fixture
def faulting(fake_cupti, monkeypatch):  # noqa: F811
    """`start(backend="cupti")` over FaultingCupti; returns the fixture's dict (cupti, driver, backend)."""
    monkeypatch.setattr(scripted, "FakeCupti", FaultingCupti)
    made_driver = scripted.FakeDriver

    def driver(initialized):
        return FaultingDriver(initialized, fake_cupti["cupti"])

    monkeypatch.setattr(scripted, "FakeDriver", driver)
    yield fake_cupti
    monkeypatch.setattr(scripted, "FakeDriver", made_driver)


@pytest.fixture(autouse=True)
def collect_at_every_synchronize(monkeypatch):
    monkeypatch.setattr(cupti_backend, "SYNC_FLUSH_EVERY_NS", 0)


def profile(path="prof.hatchet"):
    with open(path) as f:
        root, _ = json.load(f)
    return root


def kernels_under(root, scope):
    node = next(c for c in root["children"] if c["frame"]["name"] == scope)
    return sum(c["metrics"].get("count", 0) for c in node["children"])


def seven_kernels_then_a_fault(cupti, program_synchronizes: bool):
    """The issue's program: 7 kernels complete and synchronize, then one faults."""
    with proton.scope("ok"):
        for _ in range(7):
            cupti.launch(ADD)
    assert cupti.synchronize() == 0
    with proton.scope("faulting"):
        cupti.launch(ADD)
    if program_synchronizes:
        assert cupti.synchronize(ILLEGAL_ADDRESS) == ILLEGAL_ADDRESS  # torch raises here
    else:
        cupti.dead = True  # the program ends before it synchronizes again


def test_the_kernels_completed_before_a_fault_are_in_the_profile_and_one_line_names_it(faulting, capsys):
    proton.start("prof", backend="cupti")
    seven_kernels_then_a_fault(faulting["cupti"], program_synchronizes=True)
    assert capsys.readouterr().err.splitlines() == [LINE.format(7)]  # said when the fault shows
    assert proton.finalize() == ["prof.hatchet"]
    assert capsys.readouterr().err == ""
    root = profile()
    assert kernels_under(root, "ok") == 7
    assert root["lepton"]["gpu_fault"] == {"error": "CUDA_ERROR_ILLEGAL_ADDRESS",
                                           "message": "an illegal memory access was encountered",
                                           "code": ILLEGAL_ADDRESS, "kernels": 7}


def test_a_fault_first_seen_at_finalize_is_named_there(faulting, capsys):
    proton.start("prof", backend="cupti")
    seven_kernels_then_a_fault(faulting["cupti"], program_synchronizes=False)
    assert capsys.readouterr().err == ""
    assert proton.finalize() == ["prof.hatchet"]
    assert capsys.readouterr().err.splitlines() == [LINE.format(7)]
    root = profile()
    assert kernels_under(root, "ok") == 7 and root["lepton"]["gpu_fault"]["kernels"] == 7


@pytest.mark.parametrize("domain, cbid", [(layout.CB_DOMAIN_DRIVER_API, c) for c in layout.DRIVER_SYNC_CBIDS]
                         + [(layout.CB_DOMAIN_RUNTIME_API, c) for c in layout.RUNTIME_SYNC_CBIDS])
def test_every_synchronize_call_collects_the_completed_records(faulting, domain, cbid):
    proton.start("prof", backend="cupti")
    cupti = faulting["cupti"]
    with proton.scope("ok"):
        for _ in range(3):
            cupti.launch(ADD)
    flushes = cupti.flushes
    cupti.synchronize(domain=domain, cbid=cbid)
    assert cupti.flushes == flushes + 1 and cupti._records == []
    proton.finalize()
    assert kernels_under(profile(), "ok") == 3


def test_synchronizes_collect_at_most_every_10_ms(faulting, monkeypatch):
    monkeypatch.setattr(cupti_backend, "SYNC_FLUSH_EVERY_NS", 10_000_000)
    proton.start("prof", backend="cupti")
    cupti = faulting["cupti"]
    cupti.synchronize()
    flushes = cupti.flushes
    for _ in range(100):  # a tight loop of synchronizes: one flush at most in these 10 ms
        cupti.synchronize()
    assert cupti.flushes - flushes <= 1
    proton.finalize()


def test_a_synchronize_that_fails_otherwise_is_no_fault(faulting, capsys):
    proton.start("prof", backend="cupti")
    cupti = faulting["cupti"]
    flushes = cupti.flushes
    cupti.synchronize(result=1)  # cudaErrorInvalidValue: the call failed, the context lives
    assert cupti.flushes == flushes
    proton.finalize()
    assert "lepton" not in capsys.readouterr().err
    assert "gpu_fault" not in profile()["lepton"]


def test_no_fault_no_metadata_and_the_launch_callbacks_stay_as_they_were(faulting):
    proton.start("prof", backend="cupti")
    cupti = faulting["cupti"]
    watched = {(d, c) for (d, c), on in cupti.callbacks.items() if on}
    assert {(layout.CB_DOMAIN_DRIVER_API, c) for c in layout.DRIVER_SYNC_CBIDS} <= watched
    assert {(layout.CB_DOMAIN_RUNTIME_API, c) for c in layout.RUNTIME_SYNC_CBIDS} <= watched
    with proton.scope("ok"):
        cupti.launch(ADD)
    proton.finalize()
    assert "gpu_fault" not in profile()["lepton"] and kernels_under(profile(), "ok") == 1
