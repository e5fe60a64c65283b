"""backends.instrumentation.decode: synthetic buffers in the device's layout, and two real buffers
from an H100 (tests/data/instrumentation, Triton 3.6's passes, 4 warps a CTA)."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from instrumentation_buffers import E, S, launch, slot

from lepton.backends.instrumentation.decode import decode_launch
from lepton.backends.instrumentation.host_buffer import host_buffer, read_host_buffer

DATA = Path(__file__).resolve().parents[1] / "data" / "instrumentation"


def decode(slots, units):
    raw, size = launch(slots)
    return decode_launch(raw, size, units)


def intervals(ev):
    """(program id, warp, scope, start, end) of every interval, sorted."""
    return sorted(zip(ev.cta.tolist(), ev.unit.tolist(), ev.scope.tolist(), ev.start_cycle.tolist(),
                      ev.end_cycle.tolist()))


def test_a_single_start_end_pair_is_one_interval():
    ev = decode([slot([[(S, 3, 100), (E, 3, 250)]], program_id=7, hw_id=42, init_ns=5000)], units=1)
    assert intervals(ev) == [(7, 0, 3, 100, 250)]
    assert ev.hw_id.tolist() == [42] and ev.cta_ids.tolist() == [7] and ev.init_ns.tolist() == [5000]
    assert (ev.num_ctas, ev.num_units, ev.dropped, ev.unpaired, ev.warnings) == (1, 1, 0, 0, [])


def test_a_start_after_start_is_ignored_and_the_first_start_kept():
    # Proton's parser: the second START of an open scope is a mismatch; the END closes the first.
    ev = decode([slot([[(S, 0, 10), (S, 0, 20), (E, 0, 30)]])], units=1)
    assert intervals(ev) == [(0, 0, 0, 10, 30)]
    assert ev.unpaired == 1
    assert len(ev.warnings) == 1 and "START after START" in ev.warnings[0]


def test_an_end_without_start_is_ignored():
    ev = decode([slot([[(E, 0, 5), (S, 0, 10), (E, 0, 30), (E, 0, 40)]])], units=1)
    assert intervals(ev) == [(0, 0, 0, 10, 30)]
    assert ev.unpaired == 2
    assert len(ev.warnings) == 1 and "2 event(s) END without START" in ev.warnings[0]


def test_a_scope_never_closed_is_counted_and_reported():
    ev = decode([slot([[(S, 0, 10), (E, 0, 30), (S, 1, 40)]])], units=1)
    assert intervals(ev) == [(0, 0, 0, 10, 30)]
    assert ev.unpaired == 1 and "never closed" in ev.warnings[0]


def test_scopes_pair_by_id_so_nested_scopes_interleave():
    ev = decode([slot([[(S, 0, 10), (S, 1, 20), (E, 1, 30), (E, 0, 40), (S, 0, 50), (E, 0, 60)]])], units=1)
    assert intervals(ev) == [(0, 0, 0, 10, 40), (0, 0, 0, 50, 60), (0, 0, 1, 20, 30)]


def test_several_warps_and_ctas_keep_their_own_ids():
    warps = lambda base: [[(S, 0, base + w), (E, 0, base + 100 + w)] for w in range(4)]
    ev = decode([slot(warps(1000 * p), program_id=p, hw_id=100 + p) for p in (2, 0, 1)], units=4)
    assert len(ev) == 12 and ev.num_ctas == 3
    assert ev.cta_ids.tolist() == [2, 0, 1]  # slot order
    got = intervals(ev)
    assert got == sorted((p, w, 0, 1000 * p + w, 1000 * p + 100 + w) for p in (0, 1, 2) for w in range(4))
    assert (ev.hw_id - ev.cta).tolist() == [100] * 12


def test_a_wrapped_buffer_drops_the_oldest_events_and_keeps_the_rest_in_order():
    # 7 pairs (14 events) into room for 8: the first 6 events are overwritten; the buffer then holds
    # events 8..13 at slots 0..5 and events 6, 7 at slots 6, 7.
    events = [e for k in range(7) for e in ((S, 0, 100 * k), (E, 0, 100 * k + 10 + k))]
    ev = decode([slot([events], seg_entries=8)], units=1)
    assert intervals(ev) == [(0, 0, 0, 100 * k, 100 * k + 10 + k) for k in range(3, 7)]
    assert ev.dropped == 6 and ev.unpaired == 0
    assert len(ev.warnings) == 1 and "6 event(s) dropped" in ev.warnings[0]


def test_a_wrap_that_cuts_a_pair_leaves_its_end_unpaired():
    events = [e for k in range(5) for e in ((S, 0, 100 * k), (E, 0, 100 * k + 50))]  # 10 into 7
    ev = decode([slot([events], seg_entries=7)], units=1)
    assert intervals(ev) == [(0, 0, 0, 100 * k, 100 * k + 50) for k in (2, 3, 4)]
    assert ev.dropped == 3 and ev.unpaired == 1


def test_a_bad_preamble_skips_that_cta_only():
    good = slot([[(S, 0, 10), (E, 0, 20)]], program_id=0)
    bad = slot([[(S, 0, 10), (E, 0, 20)]], program_id=1, preamble=0x12345678)
    ev = decode([good, bad, good], units=1)
    assert ev.num_ctas == 2 and len(ev) == 2 and ev.cta_ids.tolist() == [0, 0]
    assert len(ev.warnings) == 1 and "preamble" in ev.warnings[0] and "slots 1" in ev.warnings[0]


def test_an_end_before_its_start_crossed_the_43_bit_clock_and_is_unwrapped():
    top = (1 << 43) - 5
    ev = decode([slot([[(S, 0, top), (E, 0, 20)]])], units=1)
    assert (ev.end_cycle - ev.start_cycle).tolist() == [25]
    assert "43-bit" in ev.warnings[0]


def test_4096_ctas_decode_whole():
    one = slot([[(S, 0, 10 + w), (E, 0, 50 + w), (S, 1, 60 + w), (E, 1, 90 + w)] for w in range(4)],
               scratch_size=8320)
    ev = decode_launch(np.frombuffer(one * 4096, np.uint8), 8320, 4)
    assert len(ev) == 4096 * 4 * 2 and ev.unpaired == 0 and ev.num_ctas == 4096
    assert (ev.end_cycle - ev.start_cycle).tolist() == [40, 30] * 4096 * 4


def real(name):
    meta = json.loads((DATA / f"{name}.json").read_text())
    raw = np.fromfile(DATA / f"{name}.bin", np.uint8)
    return meta, decode_launch(raw, meta["profile_scratch_size"], meta["num_warps"])


@pytest.mark.parametrize("name", ["load_store", "nested"])
def test_real_buffers_decode_without_warnings(name):
    meta, ev = real(name)
    assert ev.warnings == [] and ev.dropped == 0 and ev.unpaired == 0
    assert ev.num_ctas == meta["grid"] and ev.num_units == meta["num_warps"] == 4
    assert sorted(ev.cta_ids.tolist()) == list(range(meta["grid"]))
    assert (ev.pre_final_ns >= ev.init_ns).all() and (ev.post_final_ns >= ev.pre_final_ns).all()


def test_real_load_store_has_one_load_and_one_store_per_warp():
    _, ev = real("load_store")
    keys = sorted(zip(ev.cta.tolist(), ev.unit.tolist(), ev.scope.tolist()))
    assert keys == [(c, w, s) for c in range(4) for w in range(4) for s in (0, 1)]
    duration = ev.end_cycle - ev.start_cycle
    assert ((duration > 50) & (duration < 5000)).all(), duration  # ~170 (load), ~300-500 (store)
    # Within each warp, load ends before store starts.
    load, store = ev.scope == 0, ev.scope == 1
    order = np.lexsort((ev.unit, ev.cta))
    assert (ev.end_cycle[load][np.lexsort((ev.unit[load], ev.cta[load]))]
            <= ev.start_cycle[store][np.lexsort((ev.unit[store], ev.cta[store]))]).all()
    assert len(order) == 32


def test_real_nested_inner_lies_inside_outer_in_every_warp():
    _, ev = real("nested")
    by_key = {(c, w, s): (a, b) for c, w, s, a, b in intervals(ev)}
    assert len(by_key) == 8 * 4 * 2
    for c in range(8):
        for w in range(4):
            (o0, o1), (i0, i1) = by_key[(c, w, 0)], by_key[(c, w, 1)]
            assert o0 < i0 < i1 < o1


@pytest.mark.parametrize("name", ["load_store", "nested"])
def test_the_host_copy_keeps_only_the_written_words_and_decodes_the_same(name):
    """Each CTA's 8 KiB slot holds a few dozen written bytes: the copy to the host takes those."""
    from lepton.backends.instrumentation.backend import host_copy
    from lepton.backends.instrumentation.sums import ArrayOps

    raw = np.fromfile(DATA / f"{name}.bin", dtype=np.uint8)
    meta = json.loads((DATA / f"{name}.json").read_text())
    compact, slot, ctas = host_copy(ArrayOps, [raw], meta["profile_scratch_size"], meta["num_warps"])
    assert slot < 300 and len(compact) == slot * meta["grid"] and ctas == [meta["grid"]]
    full, cut = decode_launch(raw, meta["profile_scratch_size"], meta["num_warps"]), decode_launch(compact, slot, meta["num_warps"])
    for field in ("cta", "unit", "scope", "start_cycle", "end_cycle", "init_ns", "pre_final_ns"):
        assert np.array_equal(getattr(full, field), getattr(cut, field)), field


def test_the_host_copy_takes_whole_slots_where_a_unit_wrapped():
    from lepton.backends.instrumentation.backend import host_copy
    from lepton.backends.instrumentation.sums import ArrayOps

    raw = np.fromfile(DATA / "load_store.bin", dtype=np.uint8).copy()
    slots = raw.reshape(4, 8320)
    slots[0, 40:44].view(np.uint32)[0] = 10_000  # more words than the 2 KiB segment holds
    compact, slot, _ = host_copy(ArrayOps, [raw], 8320, 4)
    assert slot == 8320 and np.array_equal(compact, raw)


def test_launches_copied_and_decoded_as_one_batch_split_back_as_each_alone():
    """The backend decodes a kernel's queued launches together: split back, each launch must be
    what decoding it alone gives, a CTA whose slot is bad included."""
    from lepton.backends.instrumentation.backend import host_copy
    from lepton.backends.instrumentation.decode import split_launches
    from lepton.backends.instrumentation.sums import ArrayOps

    raw = np.fromfile(DATA / "load_store.bin", dtype=np.uint8)
    bad = raw.copy()
    bad[8320:8324] = 0  # the second CTA's preamble
    shifted = raw.copy().reshape(4, 8320)
    shifted[:, 16:24].view(np.uint64)[:, 0] += 5_000  # another launch: later init times
    launches = [raw, bad, shifted.reshape(-1), raw[:8320 * 2]]
    compact, slot, ctas = host_copy(ArrayOps, launches, 8320, 4)
    assert ctas == [4, 4, 4, 2]
    pieces = split_launches(decode_launch(compact, slot, 4), ctas)
    for alone_raw, piece in zip(launches, pieces):
        alone = decode_launch(alone_raw, 8320, 4)
        assert piece.num_ctas == alone.num_ctas and len(piece) == len(alone)
        for field in ("cta", "hw_id", "unit", "scope", "start_cycle", "end_cycle", "cta_index", "cta_ids",
                      "init_ns", "pre_final_ns", "post_final_ns"):
            assert np.array_equal(getattr(piece, field), getattr(alone, field)), field
    assert pieces[1].num_ctas == 3 and any("preamble" in w for w in pieces[0].warnings)


# One warp, two nested scopes (test_instrumentation.py's test_trace kernel, num_warps=1): four
# entries in a 32-byte segment, so the host copy's slot is 40 + 4 + 32 = 76 bytes, not 8-aligned.
ONE_WARP = [[(S, 0, 100), (S, 1, 120), (E, 1, 180), (E, 0, 200)]]


@pytest.mark.parametrize("warps", [1, 3])
def test_an_odd_warp_count_cut_to_its_written_words_decodes_as_the_whole_slot(warps):
    from lepton.backends.instrumentation.backend import host_copy
    from lepton.backends.instrumentation.sums import ArrayOps

    raw, size = launch([slot(ONE_WARP * warps, program_id=p, seg_entries=4) for p in range(2)])
    assert size % 128 == 0  # Triton pads a slot to the scratch alignment
    compact, cut, _ = host_copy(ArrayOps, [raw], size, warps)
    assert cut == 40 + 4 * warps + 32 * warps and cut % 8 == 4
    full, ev = decode_launch(raw, size, warps), decode_launch(compact, cut, warps)
    assert intervals(ev) == intervals(full) and len(intervals(ev)) == 2 * 2 * warps
    assert ev.warnings == []


def test_a_slot_size_that_is_not_whole_words_is_refused():
    raw, _ = launch([slot(ONE_WARP, seg_entries=4)])
    with pytest.raises(ValueError, match="not a positive multiple of 4 bytes"):
        decode_launch(raw, 78, 1)


def test_a_host_buffer_reads_back_to_the_launch_it_wraps_and_decodes_the_same():
    meta = json.loads((DATA / "load_store.json").read_text())
    raw = np.fromfile(DATA / "load_store.bin", np.uint8)
    wrapped = host_buffer(raw, scratch_size=meta["profile_scratch_size"], num_warps=4, target_backend="cuda",
                          units=[0, 1, 2, 3])
    hb = read_host_buffer(wrapped)
    assert (hb.scratch_size, hb.num_warps, hb.ctas, hb.units, hb.device_type) == (8320, 4, 4, [0, 1, 2, 3], 1)
    assert np.array_equal(hb.payload, raw)
    read_back = decode_launch(hb.payload, hb.scratch_size, hb.num_warps)
    assert intervals(read_back) == intervals(real("load_store")[1])


def test_a_host_buffer_of_another_version_is_refused():
    wrapped = host_buffer(np.zeros(128, np.uint8), scratch_size=128, num_warps=1, target_backend="cuda",
                          units=[0])
    wrapped[0] = 2
    with pytest.raises(ValueError, match="not a version-1 host buffer"):
        read_host_buffer(wrapped)
