"""Device memory for the scratch buffers of queued launches, handed out without an allocation per
launch.

Each instrumented launch needs a buffer of its own until the queue is decoded. Taking each from
torch's caching allocator made every launch of a large kernel a `cudaMalloc` while the queue held
the earlier ones, several times the cost of a launch (docs/design.md). The
arena cuts buffers from a few large chunks with a bump pointer and reuses the chunks once the queue
is decoded (`recycle`, called only after the device has finished with every buffer handed out).
"""
from __future__ import annotations

import threading

ALIGNMENT = 128  # bytes; what Triton's launcher asks the profile allocator for
FIRST_CHUNK = 64 << 20
MAX_CHUNK = 1 << 30


class ScratchArena:
    """Chunks of one device's memory (torch uint8 tensors), filled in order, reused after `recycle`.
    `new_chunk(nbytes)` makes a chunk (tests pass a numpy one)."""

    def __init__(self, new_chunk, first_chunk: int = FIRST_CHUNK) -> None:
        self._new_chunk = new_chunk
        self._first = first_chunk
        self._chunks: list = []
        self._current = 0  # index of the chunk being filled
        self._offset = 0  # first free byte in it
        self.handed_out = 0  # bytes given out since the last recycle
        self._lock = threading.Lock()

    def take(self, nbytes: int):
        """A buffer of `nbytes` bytes, `ALIGNMENT`-aligned, valid until `recycle`."""
        size = max(-(-nbytes // ALIGNMENT) * ALIGNMENT, ALIGNMENT)
        with self._lock:
            while self._current < len(self._chunks) and self._offset + size > len(self._chunks[self._current]):
                self._current += 1
                self._offset = 0
            if self._current == len(self._chunks):
                grown = min(2 * len(self._chunks[-1]), MAX_CHUNK) if self._chunks else self._first
                self._chunks.append(self._new_chunk(max(size, grown)))
                self._offset = 0
            start = self._offset
            self._offset += size
            self.handed_out += size
            # exactly `nbytes`: a launch's CTAs are its bytes // slot size, and padding could hold one more
            return self._chunks[self._current][start:start + max(nbytes, 1)]

    def recycle(self) -> None:
        """Every buffer handed out is free again (the caller has waited for the device and copied
        out what it needs)."""
        with self._lock:
            self._current = self._offset = self.handed_out = 0

    def release(self) -> None:
        """Gives the chunks back (to torch's caching allocator) at the end of the session."""
        with self._lock:
            self._chunks.clear()
            self._current = self._offset = self.handed_out = 0

    @property
    def reserved(self) -> int:
        """Bytes the chunks hold."""
        return sum(len(c) for c in self._chunks)
