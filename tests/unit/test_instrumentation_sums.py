"""Per-scope sums taken where the buffers are (`batch_sums`, here on numpy), against the host
decoder and `model.cycles.scope_sums`, the reference; and what makes a batch go to the host."""

import numpy as np
import pytest
from instrumentation_buffers import E, S, launch, recorded_batch, slot

from lepton.backends.instrumentation.decode import decode_launch
from lepton.backends.instrumentation.sums import ArrayOps, BatchSums, HostReason, batch_sums, warm_up
from lepton.model.cycles import scope_sums


def reference(raw, scratch, units):
    sums = scope_sums(decode_launch(raw, scratch, units))
    return dict(zip(sums.scope_ids, zip(sums.cycles, sums.ns))), sums.warps


def check_against_reference(buffers, scratch, units, scope_ids):
    ctas = [len(b) // scratch for b in buffers]
    got = batch_sums(ArrayOps, buffers, ctas, scratch, units, scope_ids)
    assert isinstance(got, BatchSums), got
    for i, raw in enumerate(buffers):
        want, warps = reference(raw, scratch, units)
        mine = got.launch(i)
        assert mine.warps == warps and mine.scope_ids == sorted(want)
        for sid, cycles, ns in zip(mine.scope_ids, mine.cycles, mine.ns):
            assert cycles == want[sid][0]
            assert ns == pytest.approx(want[sid][1], rel=1e-12)
    return got


@pytest.mark.parametrize("name", ["load_store", "nested"])
def test_the_real_buffers_sum_as_the_host_decoder_does(name):
    check_against_reference(*recorded_batch(name))


def test_interleaved_and_repeated_scopes_a_clock_wrap_and_a_ctas_zero_span():
    wrap = 1 << 43
    warps = [[(S, 0, 10), (S, 1, 12), (E, 1, 30), (E, 0, 40), (S, 0, 50), (E, 0, 65)],
             [(S, 1, wrap - 5), (E, 1, 20)],  # across the counter's wrap: 25 cycles
             [],  # a warp that recorded nothing
             [(S, 0, 100), (E, 0, 100)]]
    slots = [slot(warps, program_id=0, init_ns=1_000, pre_final_ns=1_500),
             slot(warps, program_id=1, init_ns=2_000, pre_final_ns=2_000)]  # no globaltimer tick: pooled rate
    raw, scratch = launch(slots)
    got = check_against_reference([raw], scratch, 4, [0, 1])
    assert got.launch(0).cycles == [2 * (30 + 15 + 0), 2 * (18 + 25)]


def test_a_scope_a_launch_did_not_record_is_left_out_of_its_sums():
    one, scratch = launch([slot([[(S, 0, 1), (E, 0, 9)]] * 2)])
    other, _ = launch([slot([[(S, 1, 1), (E, 1, 4)]] * 2, seg_entries=8)])
    got = batch_sums(ArrayOps, [one, other], [1, 1], scratch, 2, [0, 1])
    assert got.launch(0).scope_ids == [0] and got.launch(1).scope_ids == [1]
    assert got.launch(0).cycles == [16] and got.launch(1).cycles == [6]


@pytest.mark.parametrize("warp, why", [
    ([(S, 0, 1), (S, 0, 2), (E, 0, 9)], HostReason.UNPAIRED),  # START after START
    ([(E, 0, 3), (S, 0, 4), (E, 0, 9)], HostReason.UNPAIRED),  # END without START
    ([(S, 0, 1), (E, 0, 2), (S, 0, 3)], HostReason.UNPAIRED),  # never closed
    ([(S, 0, 1), (E, 0, 2)] * 5, HostReason.WRAPPED),
    ([(S, 7, 1), (E, 7, 2)], HostReason.UNKNOWN_SCOPE),  # a scope the kernel does not name
])
def test_a_batch_with_anything_to_report_goes_to_the_host_decoder_and_says_why(warp, why):
    raw, scratch = launch([slot([[(S, 0, 1), (E, 0, 5)], warp], seg_entries=8)])
    assert batch_sums(ArrayOps, [raw], [1], scratch, 2, [0]) is why


def test_a_bad_preamble_goes_to_the_host_decoder():
    raw, scratch = launch([slot([[(S, 0, 1), (E, 0, 5)]], preamble=0x12345678)])
    assert batch_sums(ArrayOps, [raw], [1], scratch, 1, [0]) is HostReason.BAD_SLOT


def test_a_count_of_half_an_entry_goes_to_the_host_decoder():
    raw, scratch = launch([slot([[(S, 0, 1), (E, 0, 5)]])])
    raw[40:44].view("<u4")[0] = 3  # the warp's count: three words
    assert batch_sums(ArrayOps, [raw], [1], scratch, 1, [0]) is HostReason.TORN


def test_slots_of_an_odd_warp_count_that_are_not_8_aligned_sum_as_the_host_decoder_does():
    warp = [(S, 0, 100), (S, 1, 120), (E, 1, 180), (E, 0, 200)]
    slots = [slot([warp], program_id=p, seg_entries=4, init_ns=1_000 * p) for p in range(3)]
    assert {len(s) for s in slots} == {76}
    raw = np.frombuffer(b"".join(slots), np.uint8).copy()
    got = check_against_reference([raw], 76, 1, [0, 1])
    assert got.launch(0).cycles == [3 * 100, 3 * 60]


def test_a_slot_size_that_is_not_whole_words_goes_to_the_host_decoder():
    raw, _ = launch([slot([[(S, 0, 1), (E, 0, 5)]])])
    assert batch_sums(ArrayOps, [raw], [1], 78, 1, [0]) is HostReason.SLOT_SIZE


def test_the_warm_up_batch_sums_on_the_device_path():
    got = warm_up(ArrayOps, lambda array: array)
    assert isinstance(got, BatchSums) and got.launch(1).cycles == [16 * 300, 16 * 100]


def test_launches_are_each_launch_s_sums():
    sums = BatchSums([1, 4, 7], np.array([[10, 0, 5], [0, 0, 3]]), np.array([[1.5, 0.0, 2.5], [0.0, 0.0, 0.5]]),
                     np.array([[2, 0, 1], [0, 0, 1]]), 4, [8, 16])
    first, second = sums.launches()
    assert (first.scope_ids, first.cycles, first.ns, first.warps) == ([1, 7], [10, 5], [1.5, 2.5], 32)
    assert (second.scope_ids, second.cycles, second.ns, second.warps) == ([7], [3], [0.5], 64)
