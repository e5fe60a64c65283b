"""The bulk CUPTI buffer parser on synthetic buffers laid out as cupti_activity.h (13.0) says."""
from __future__ import annotations

import numpy as np
import pytest
from twins import cupti_activity as synthetic

from lepton.backends.cupti import layout, parser

CONC, RT, DRV, LAUNCH = (layout.KIND_CONCURRENT_KERNEL, layout.KIND_RUNTIME, layout.KIND_DRIVER,
                         layout.KIND_INTERNAL_LAUNCH_API)
MEMCPY = 1  # a kind the parser's table does not know (CUpti_ActivityMemcpy6: 96 bytes)


def reference_walk(buf: np.ndarray, sizes: dict[int, int]) -> list[int]:
    """What cuptiActivityGetNextRecord does: one record at a time."""
    out, off = [], 0
    while off < len(buf):
        out.append(off)
        off += sizes[int(buf[off:off + 4].view("<u4")[0])]
    return out


def test_walk_finds_every_record_of_an_interleaved_buffer():
    kinds, k, a, _, _ = synthetic.launch_stream(500, lag=20)
    buf = synthetic.pack(kinds, k, a)
    offsets, stop = parser.walk(buf, len(buf), layout.size_table())
    assert stop == len(buf)
    assert offsets.tolist() == reference_walk(buf, layout.RECORD_SIZE)
    assert len(offsets) == len(kinds)


def test_fields_that_look_like_record_kinds_do_not_fool_the_walk():
    """Thread, device and stream ids, grid sizes and correlation ids equal to the kinds the table
    knows (3, 4, 5, 10, 48) are exactly what creates false record starts."""
    n = 400
    tricky = np.array([4, 5, 10, 39, 48, 3], dtype=np.int64)
    kinds, k, a, _, _ = synthetic.launch_stream(n, lag=3, device_id=tricky[np.arange(n) % 6],
                                                stream_id=tricky[(np.arange(n) + 1) % 6], first_corr=1)
    k["grid_x"] = tricky[(np.arange(n) + 2) % 6]
    k["block_x"] = tricky[(np.arange(n) + 3) % 6]
    a["thread_id"] = tricky[(np.arange(n) + 4) % 6]
    buf = synthetic.pack(kinds, k, a)
    offsets, stop = parser.walk(buf, len(buf), layout.size_table())
    assert stop == len(buf)
    assert offsets.tolist() == reference_walk(buf, layout.RECORD_SIZE)


@pytest.mark.parametrize("seed", range(5))
def test_walk_matches_one_record_at_a_time_on_random_buffers(seed):
    """Random kind sequences whose every field is a small number (so nearly every slot is a
    candidate record start), checked against the sequential walk."""
    rng = np.random.default_rng(seed)
    kinds = rng.choice([CONC, LAUNCH, RT, DRV], size=3000, p=[0.4, 0.1, 0.3, 0.2])
    buf = synthetic.pack(kinds)
    body = buf.view("<u4")
    is_kind = np.zeros(len(body), bool)
    sizes = np.array([layout.RECORD_SIZE[int(x)] for x in kinds])
    is_kind[np.concatenate(([0], np.cumsum(sizes)[:-1])) // 4] = True
    noise = rng.choice([0, 1, 3, 4, 5, 10, 39, 48], size=len(body))
    body[~is_kind] = noise[~is_kind]
    offsets, stop = parser.walk(buf, len(buf), layout.size_table())
    assert stop == len(buf)
    assert offsets.tolist() == reference_walk(buf, layout.RECORD_SIZE)


def test_walk_stops_at_an_unknown_kind_and_resumes_once_its_size_is_known():
    kinds = [DRV, RT, CONC, MEMCPY, RT, CONC, DRV]
    buf = synthetic.pack(kinds, sizes={MEMCPY: 96})
    table = layout.size_table()
    offsets, stop = parser.walk(buf, len(buf), table)
    assert offsets.tolist() == [0, 40, 80]
    assert stop == 296  # the memcpy record
    table[MEMCPY] = 96 // 8
    rest, stop2 = parser.walk(buf, len(buf), table, start=stop)
    assert rest.tolist() == [296, 392, 432, 648]
    assert stop2 == len(buf)


def test_a_buffer_starting_with_an_unknown_kind_yields_nothing():
    buf = synthetic.pack([MEMCPY, CONC], sizes={MEMCPY: 96})
    offsets, stop = parser.walk(buf, len(buf), layout.size_table())
    assert len(offsets) == 0 and stop == 0


def test_a_record_running_past_the_valid_size_ends_the_walk_there():
    buf = synthetic.pack([RT, CONC, RT])
    offsets, stop = parser.walk(buf, 40 + 216 + 16, layout.size_table())
    assert offsets.tolist() == [0, 40] and stop == 256


def test_extract_reads_the_fields_written_at_the_header_offsets():
    kinds = [RT, CONC, DRV, CONC]
    buf = synthetic.pack(
        kinds,
        kernel={"start": [1_000, 5_000], "end": [2_500, 9_000], "device_id": [0, 3], "stream_id": [7, 13],
                    "correlation_id": [11, 12], "name": [0x7F00_0000_1000, 0x7F00_0000_2000],
                    "graph_node_id": [0, (2 << 32) | 5]},
        api={"start": [900, 4_900], "correlation_id": [11, 12], "thread_id": [0x7F1234, 0xFFFF_FFFF]})
    offsets, _ = parser.walk(buf, len(buf), layout.size_table())
    r = parser.extract(buf, offsets)
    assert r.k_start.tolist() == [1_000, 5_000] and r.k_end.tolist() == [2_500, 9_000]
    assert r.k_device.tolist() == [0, 3] and r.k_stream.tolist() == [7, 13]
    assert r.k_corr.tolist() == [11, 12]
    assert r.k_name_ptr.tolist() == [0x7F00_0000_1000, 0x7F00_0000_2000]
    assert r.k_graph_node.tolist() == [0, (2 << 32) | 5]
    assert r.a_corr.tolist() == [11, 12] and r.a_start.tolist() == [900, 4_900]
    assert r.a_thread.tolist() == [0x7F1234, 0xFFFF_FFFF]
    # parse() is walk + extract on the same buffer
    r2, stop = parser.parse(buf, len(buf), layout.size_table())
    assert stop == len(buf) and r2.k_corr.tolist() == [11, 12] and r2.a_thread.tolist() == [0x7F1234, 0xFFFF_FFFF]


def test_parse_from_a_nonzero_start_reads_the_right_records():
    buf = synthetic.pack([RT, CONC, DRV], kernel={"correlation_id": [77], "start": [5], "end": [6]},
                         api={"correlation_id": [76, 78], "thread_id": [1, 2]})
    r, stop = parser.parse(buf, len(buf), layout.size_table(), start=40)
    assert stop == len(buf)
    assert r.k_corr.tolist() == [77] and r.a_corr.tolist() == [78] and r.a_thread.tolist() == [2]


def test_size_table_rejects_sizes_that_are_not_whole_slots():
    with pytest.raises(ValueError, match="bad record size"):
        layout.size_table({CONC: 212})
