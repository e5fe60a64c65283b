"""The scratch arena: per-launch buffers without an allocation per launch."""
import numpy as np

from lepton.backends.instrumentation.arena import ALIGNMENT, ScratchArena


def arena(first=1024):
    made = []

    def new_chunk(size):
        made.append(np.zeros(size, np.uint8))
        return made[-1]

    return ScratchArena(new_chunk, first_chunk=first), made


def test_buffers_are_aligned_disjoint_views_of_few_chunks():
    a, made = arena()
    bufs = [a.take(n) for n in (100, 129, 1, 300, 200)]
    assert [len(b) for b in bufs] == [100, 129, 1, 300, 200]  # each its own bytes, each start aligned
    assert len(made) == 2 and [len(c) for c in made] == [1024, 2048]  # the fifth did not fit the first
    for i, b in enumerate(bufs):
        b[:] = i + 1
    assert [int(b[0]) for b in bufs] == [1, 2, 3, 4, 5] and all((b == b[0]).all() for b in bufs)
    for b in bufs:
        base = b.base if b.base is not None else b
        offset = b.__array_interface__["data"][0] - base.__array_interface__["data"][0]
        assert offset % ALIGNMENT == 0
    assert a.handed_out == 128 + 256 + 128 + 384 + 256


def test_recycling_reuses_the_chunks_without_allocating():
    a, made = arena()
    for _ in range(3):
        for _ in range(20):
            a.take(128 * 5)
        a.recycle()
    assert len(made) == 4 and a.handed_out == 0  # 1 + 2 + 4 + 8 KiB held 20 x 640 bytes
    first = a.take(10)
    assert np.shares_memory(first, made[0])


def test_a_buffer_larger_than_a_chunk_gets_a_chunk_of_its_own():
    a, made = arena()
    big = a.take(5000)
    assert len(big) == 5000 and len(made) == 1 and len(made[0]) == 5120
    a.release()
    assert a.reserved == 0
