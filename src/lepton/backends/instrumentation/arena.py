"""Device memory for the scratch buffers of queued launches, handed out without an allocation per
launch.

Each instrumented launch needs a buffer of its own until the queue is decoded. Taking each from
torch's caching allocator made every launch of a large kernel a `cudaMalloc` while the queue held
the earlier ones, several times the cost of a launch (docs/design.md). The
arena cuts buffers from a few large chunks with a bump pointer and reuses the chunks once the queue
is decoded (`recycle`, called only after the device has finished with every buffer handed out).
A buffer is handed out as its address, which Triton's launcher takes as it is: a torch view of the
chunk cost more per launch than the launch itself on an H100 host (docs/design.md); `view` makes
one where the host reads a buffer.
"""
from __future__ import annotations

import threading

ALIGNMENT = 128  # bytes; what Triton's launcher asks the profile allocator for
FIRST_CHUNK = 64 << 20
# Chunks double up to this: a queue fills its last chunk only in part, and chunks doubling to
# 1 GiB held ~2 GiB for 1 GiB of queued buffers (docs/design.md, "The arena's size").
MAX_CHUNK = 256 << 20


class ScratchArena:
    """Chunks of one device's memory (torch uint8 tensors), filled in order, reused after `recycle`;
    each twice the last, from `first_chunk` up to `max_chunk`, or a buffer's size where that is
    larger. `new_chunk(nbytes)` makes a chunk (tests pass a numpy one)."""

    @staticmethod
    def _address(chunk) -> int:
        return chunk.data_ptr() if hasattr(chunk, "data_ptr") else chunk.ctypes.data

    def __init__(self, new_chunk, first_chunk: int = FIRST_CHUNK, max_chunk: int = MAX_CHUNK) -> None:
        self._new_chunk = new_chunk
        self._first = first_chunk
        self._max = max(max_chunk, first_chunk)
        self._chunks: list = []
        self._bases: list[int] = []  # each chunk's address
        self._sizes: list[int] = []  # and bytes (`len` of a torch tensor costs ~1 us a launch)
        self._current = 0  # index of the chunk being filled
        self._offset = 0  # first free byte in it
        self.handed_out = 0  # bytes given out since the last recycle
        self._lock = threading.Lock()

    def take(self, nbytes: int) -> int:
        """The address of a buffer of `nbytes` bytes, `ALIGNMENT`-aligned, valid until `recycle`."""
        size = max(-(-nbytes // ALIGNMENT) * ALIGNMENT, ALIGNMENT)
        with self._lock:
            while self._current < len(self._chunks) and self._offset + size > self._sizes[self._current]:
                self._current += 1
                self._offset = 0
            if self._current == len(self._chunks):
                grown = min(2 * self._sizes[-1], self._max) if self._chunks else self._first
                chunk = self._new_chunk(max(size, grown))
                self._chunks.append(chunk)
                self._bases.append(self._address(chunk))
                self._sizes.append(len(chunk))
                self._offset = 0
            start = self._offset
            self._offset += size
            self.handed_out += size
            return self._bases[self._current] + start

    def view(self, address: int, nbytes: int):
        """The buffer of `nbytes` bytes at `address` (from `take`) as a view of its chunk: exactly
        `nbytes`, as a launch's CTAs are its bytes // slot size and padding could hold one more."""
        for base, chunk, size in zip(self._bases, self._chunks, self._sizes):
            if base <= address < base + size:
                return chunk[address - base:address - base + nbytes]
        raise ValueError(f"address {address:#x} is in none of the arena's chunks")

    @property
    def on_torch(self) -> bool:
        """Whether the chunks are torch tensors (the GPU's; the tests' are numpy arrays)."""
        return bool(self._chunks) and hasattr(self._chunks[0], "cpu")

    def recycle(self) -> None:
        """Every buffer handed out is free again (the caller has waited for the device and copied
        out what it needs)."""
        with self._lock:
            self._current = self._offset = self.handed_out = 0

    def release(self) -> None:
        """Gives the chunks back (to torch's caching allocator) at the end of the session."""
        with self._lock:
            self._chunks.clear()
            self._bases.clear()
            self._sizes.clear()
            self._current = self._offset = self.handed_out = 0

    @property
    def reserved(self) -> int:
        """Bytes the chunks hold."""
        return sum(self._sizes)
