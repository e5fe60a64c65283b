"""`start(backend="instrumentation", mode=...)`'s mode: Proton's strings, Lepton's mode objects, and
Proton's mode objects (as they print themselves)."""
from __future__ import annotations

import pytest

from lepton.mode import MMA, BufferType, Default, Granularity, instrumentation_mode

PROTONS_DEFAULT = ("default:metric_type=METRIC_TYPE.CYCLE:sampling_strategy=SAMPLING_STRATEGY.NONE:sampling_options="
                   ":granularity=GRANULARITY.WARP:buffer_strategy=BUFFER_STRATEGY.CIRCULAR:buffer_type=BUFFER_TYPE.SHARED"
                   ":buffer_size=0:optimizations=")  # str(triton.profiler.mode.Default()) in Triton 3.6


class ProtonsMode:
    def __init__(self, text):
        self.text = text

    def __str__(self):
        return self.text


@pytest.mark.parametrize("mode", [None, "", "default", ProtonsMode(PROTONS_DEFAULT), Default()])
def test_the_default_mode_in_every_spelling(mode):
    assert instrumentation_mode(mode) == Default()


def test_options_are_read_from_strings_and_from_protons_objects():
    text = "mma:buffer_type=global:granularity=warp_group:buffer_size=4096:optimizations=clock32,sched_stores"
    mode = instrumentation_mode(text)
    assert isinstance(mode, MMA) and mode.buffer_type is BufferType.GLOBAL
    assert mode.granularity is Granularity.WARP_GROUP and mode.buffer_size == 4096
    assert [o.value for o in mode.optimizations] == ["clock32", "sched_stores"]
    printed = PROTONS_DEFAULT.replace("BUFFER_TYPE.SHARED", "BUFFER_TYPE.GLOBAL")
    assert instrumentation_mode(ProtonsMode(printed)).buffer_type is BufferType.GLOBAL


@pytest.mark.parametrize("mode, message", [("bogus", "Unknown instrumentation mode"),
                                           ("default:granularity", "Malformed instrumentation option"),
                                           ("default:colour=red", "Unknown instrumentation option"),
                                           ("default:granularity=warp_3", "Unknown granularity")])
def test_a_bad_mode_says_what_is_wrong(mode, message):
    with pytest.raises(ValueError, match=message):
        instrumentation_mode(mode)


def test_start_says_in_one_line_what_is_wrong_and_leaves_no_session(monkeypatch, scripted_gpu):
    import sys

    import lepton as proton
    from lepton.errors import UsageError
    from lepton.runtime.registry import REGISTRY

    with pytest.raises(UsageError, match="backend='instrumentation': Unknown instrumentation mode: 'bogus'"):
        proton.start("p", backend="instrumentation", mode="bogus")
    monkeypatch.setitem(sys.modules, "triton", None)  # no Triton, no torch (as on the CI machine)
    monkeypatch.setitem(sys.modules, "torch", None)
    with pytest.raises(UsageError, match="backend='instrumentation' needs Triton with its proton passes"):
        proton.start("p", backend="instrumentation")
    assert not REGISTRY.sessions and not REGISTRY.backends
