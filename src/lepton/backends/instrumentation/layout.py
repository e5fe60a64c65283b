"""The profile buffer's format, the one place that defines it: what Triton's proton passes make an
instrumented kernel write (circular layout, cycle metric, all little-endian), and the header that
Proton's host buffer puts before a launch's buffer. `decode`, `sums`, `backend`, `sizing` and
`host_buffer` read and write buffers through these names.

A launch's buffer is one slot of `scratch_size` bytes per CTA, read as 32-bit words:

    word 0  PREAMBLE                 word 1  program id              word 2  hw id (SM)
    word 3  buf_size (data bytes)    words 4-5, 6-7, 8-9  init, pre-final, post-final time (u64 ns)
    words 10 .. 10 + num_units - 1   count[u]: the words unit (warp) u wrote
    then buf_size bytes of data: one segment of buf_size / num_units bytes per unit

An entry is 8 bytes, w0 and w1: an END when bit `END_BIT` of w0 is set (a START when it is clear),
scope id = (w0 >> SCOPE_SHIFT) & SCOPE_MASK, cycle = (w0 & CLOCK_HIGH_MASK) << 32 | w1, a
`CLOCK_BITS`-bit clock.
"""
from __future__ import annotations

# -- a CTA's slot: header words ---------------------------------------------------------------------
PREAMBLE_WORD = 0
PREAMBLE = 0xDEADBEEF  # what a CTA that ran to its end leaves in word 0
PROGRAM_ID_WORD = 1
HW_ID_WORD = 2
BUF_SIZE_WORD = 3
BUF_SIZE_BYTE = 4 * BUF_SIZE_WORD  # its byte offset, for headers read as bytes
INIT_TIME_WORD = 4  # each time a u64 of globaltimer ns, low word first
PRE_FINAL_TIME_WORD = 6
POST_FINAL_TIME_WORD = 8
HEADER_WORDS = 10  # the per-unit counts follow
HEADER_BYTES = 4 * HEADER_WORDS

# -- an entry: two words ----------------------------------------------------------------------------
ENTRY_BYTES = 8
END_BIT = 31
SCOPE_SHIFT = 23
SCOPE_MASK = 0xFF
CLOCK_HIGH_MASK = 0x7FF  # the clock's 11 high bits, in w0; its 32 low bits are w1
CLOCK_BITS = 43

# -- Proton's host buffer (`enable_host_buffer`): u32 fields, then uid_vec, then the launch's buffer --
HOST_BUFFER_VERSION = 1
HOST_HEADER_OFFSET = 4  # where the header's fields after `version` start
HOST_FIXED_HEADER_BYTES = 40  # the ten u32 fields before uid_vec
DEVICE_TYPES = {"cuda": 1, "hip": 2}
