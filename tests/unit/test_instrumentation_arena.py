"""The scratch arena: per-launch buffers without an allocation per launch."""
import numpy as np
import pytest

from lepton.backends.instrumentation.arena import ALIGNMENT, ScratchArena


def arena(first=1024, most=1 << 20):
    made = []

    def new_chunk(size):
        made.append(np.zeros(size, np.uint8))
        return made[-1]

    return ScratchArena(new_chunk, first_chunk=first, max_chunk=most), made


def test_buffers_are_aligned_disjoint_addresses_in_few_chunks_and_their_views_are_exactly_their_bytes():
    a, made = arena()
    sizes = (100, 129, 1, 300, 200)
    addresses = [a.take(n) for n in sizes]
    bufs = [a.view(address, n) for address, n in zip(addresses, sizes)]
    assert [len(b) for b in bufs] == list(sizes)
    assert len(made) == 2 and [len(c) for c in made] == [1024, 2048]  # the fifth did not fit the first
    for i, b in enumerate(bufs):
        b[:] = i + 1
    assert [int(b[0]) for b in bufs] == [1, 2, 3, 4, 5] and all((b == b[0]).all() for b in bufs)
    assert [address - b.ctypes.data for address, b in zip(addresses, bufs)] == [0] * 5
    # each start aligned from its chunk's: the fifth starts the second chunk
    assert [address - made[0].ctypes.data for address in addresses[:4]] == [0, 128, 384, 512]
    assert addresses[4] == made[1].ctypes.data and ALIGNMENT == 128
    assert a.handed_out == 128 + 256 + 128 + 384 + 256 and not a.on_torch


def test_an_address_from_no_chunk_has_no_view():
    a, _ = arena()
    a.take(10)
    with pytest.raises(ValueError, match="none of the arena's chunks"):
        a.view(1, 10)


def test_recycling_reuses_the_chunks_without_allocating():
    a, made = arena()
    for _ in range(3):
        for _ in range(20):
            a.take(128 * 5)
        a.recycle()
    assert len(made) == 4 and a.handed_out == 0  # 1 + 2 + 4 + 8 KiB held 20 x 640 bytes
    assert a.take(10) == made[0].ctypes.data


def test_a_buffer_larger_than_a_chunk_gets_a_chunk_of_its_own():
    a, made = arena()
    big = a.take(5000)
    assert len(a.view(big, 5000)) == 5000 and len(made) == 1 and len(made[0]) == 5120
    a.release()
    assert a.reserved == 0


def test_chunks_stop_doubling_at_the_largest_so_a_queue_holds_little_more_than_its_buffers():
    a, made = arena(first=1024, most=4096)
    for _ in range(36):
        a.take(512)
    assert [len(c) for c in made] == [1024, 2048, 4096, 4096, 4096, 4096]
    assert a.handed_out == 36 * 512 and a.reserved == 19456  # doubling on: 1 + 2 + 4 + 8 + 16 KiB
    big = a.take(10000)  # larger than the largest chunk: one of its own
    assert len(made) == 7 and len(made[-1]) == 10112 and len(a.view(big, 10000)) == 10000
