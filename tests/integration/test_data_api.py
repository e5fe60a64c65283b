"""Proton main's data API (`proton.data`) and what its tests do with the result: the viewer reads the
decoded profile (`viewer.get_raw_metrics(database)`), and the MessagePack form decodes to the same."""
from __future__ import annotations

import copy

import msgpack
import pytest

import lepton as proton
from lepton import viewer
from lepton.errors import PhaseNotFound


def scoped_session(fake):
    """Proton main's test_get_data, with the fake backend's kernels: foo twice, ones once."""
    session = proton.start("get_data", context="shadow", backend="fake")
    with proton.scope("test"):
        fake().launch("_ZN2at6native29vectorized_elementwise_kernel", 100)
        fake().launch("foo", 100)
        fake().launch("foo", 100)
    proton.deactivate(session, flushing=True)
    return session


def test_the_viewer_reads_the_decoded_profile_and_messagepack_decodes_to_the_same(fake):
    pytest.importorskip("pandas")
    session = scoped_session(fake)
    database = proton.data.get(session)
    before = copy.deepcopy(database)
    gf, inclusive, _exclusive, devices = viewer.get_raw_metrics(database)
    database_unpacked = msgpack.loads(proton.data.get_msgpack(session), raw=False, strict_map_key=False)
    proton.finalize()
    assert database == before  # read, not changed
    assert database == database_unpacked
    counts = dict(zip(gf.dataframe["name"], gf.dataframe["count"]))
    assert counts["foo"] == 2 and counts["_ZN2at6native29vectorized_elementwise_kernel"] == 1
    assert "count" in inclusive and devices["CUDA"]["0"]["arch"] == "90"
    assert "time (ns) (inc)" not in gf.dataframe.columns  # the sums are the caller's to ask for
    gf.update_inclusive_columns()
    assert gf.dataframe["time (ns) (inc)"].iloc[0] == 300


def test_hatchets_query_language_on_a_frame_needs_hatchet_and_says_so_in_one_line(fake, monkeypatch):
    pytest.importorskip("pandas")
    session = scoped_session(fake)
    gf, *_ = viewer.get_raw_metrics(proton.data.get(session))
    proton.finalize()
    query = "MATCH ('*', c) WHERE c.'name' =~ '.*foo.*' AND c IS LEAF"
    try:
        import hatchet  # noqa: F401
    except ImportError:
        with pytest.raises(ImportError, match=r"^ProfileFrame.filter \(hatchet's query language\) needs "
                                              r"llnl-hatchet: pip install llnl-hatchet$"):
            gf.filter(query)
        return
    foo_frame = gf.filter(query).dataframe
    assert len(foo_frame) == 1 and int(foo_frame["count"].values[0]) == 2


def test_a_phase_with_no_data_is_a_runtime_error_saying_why(fake):
    sid = proton.start("phases", backend="fake")
    proton.data.advance_phase(sid)
    proton.data.clear(sid, phase=0)
    with pytest.raises(RuntimeError, match=r"^Phase 0 has no data\. \(it was cleared \(data\.clear\)\)$"):
        proton.data.get(sid, 0)
    with pytest.raises(PhaseNotFound, match=r"^Phase 3 has no data\. \(session \d+ is in phase 1; "
                                            r"data\.advance_phase\(\) starts the next\)$"):
        proton.data.get_msgpack(sid, 3)
    proton.finalize()


def test_the_data_api_does_nothing_for_no_session():
    """What `start` returns when profiling is disabled (None) is taken everywhere, as in Proton."""
    assert proton.data.get(None) is None and proton.data.get_msgpack(None) is None
    assert proton.data.advance_phase(None) is None
    assert proton.data.is_phase_complete(None) is False
    assert proton.data.clear(None) is None
