"""Decodes one launch's profile scratch buffer (all its CTAs) into paired scope intervals.

The buffer's format is `layout`'s: one slot of `scratch_size` bytes per CTA, a 40-byte header, a
count per warp, then one segment of entries per warp. A slot is read as 32-bit words, never as
8-byte entries in place: the data starts at word 10 + num_units, which is 8-byte aligned only for an
even warp count (the kernel copies it out with 32-bit stores). Triton pads each slot to the profile
scratch alignment (128 bytes), but the host copy cuts slots to `40 + 4 * num_units + num_units *
written` bytes (`backend.host_copy`): 76 for one warp that wrote four entries. So a slot size need
only be a whole number of words.

A warp that wrote `count // 2` entries into a segment that holds `seg // 8` wrapped around: its
first entries were overwritten, and the oldest survivor sits where the next write would have gone.

Pairing follows Proton's `CircularLayoutParser`, per (CTA, warp, scope): a START opens the scope
unless it is open (START after START: ignored), an END closes it if it is open (END without START:
ignored). Everything is numpy over all CTAs of a batch of launches at once (`python bench/core.py`
prints `decode_launch_ms`); a tree that needs only sums takes them on the GPU instead (`sums`).
"""
from __future__ import annotations

import numpy as np

from ...model.records import LaunchEvents
from .layout import (
    BUF_SIZE_WORD,
    CLOCK_BITS,
    CLOCK_HIGH_MASK,
    END_BIT,
    ENTRY_BYTES,
    HEADER_WORDS,
    HW_ID_WORD,
    INIT_TIME_WORD,
    POST_FINAL_TIME_WORD,
    PRE_FINAL_TIME_WORD,
    PREAMBLE,
    PREAMBLE_WORD,
    PROGRAM_ID_WORD,
    SCOPE_MASK,
    SCOPE_SHIFT,
)


def decode_launch(raw: np.ndarray, scratch_size: int, num_units: int) -> LaunchEvents:
    """The intervals of one launch. `raw`: the launch's whole buffer (uint8, one slot of
    `scratch_size` bytes per CTA); `num_units`: warps per CTA. A CTA whose slot is malformed (bad
    preamble, impossible buf_size) is skipped with a warning; it never fails the launch."""
    if not is_slot_size(scratch_size):
        raise ValueError(f"profile scratch size {scratch_size} is not a positive multiple of 4 bytes "
                         "(a CTA slot is a whole number of 32-bit words)")
    raw = np.ascontiguousarray(raw, dtype=np.uint8).reshape(-1)
    n_slots = raw.size // scratch_size
    warnings: list[str] = []
    if raw.size % scratch_size:
        warnings.append(f"buffer of {raw.size} bytes is not a whole number of {scratch_size}-byte CTA "
                        f"slots: the last {raw.size % scratch_size} bytes were ignored")
    words = raw[: n_slots * scratch_size].view("<u4").reshape(n_slots, scratch_size // 4)
    data_word = HEADER_WORDS + num_units
    good = _good_slots(words, scratch_size, num_units, data_word, warnings)
    out = LaunchEvents(num_units=num_units, warnings=warnings)
    decoded = words if len(good) == len(words) else words[good]
    _per_cta(out, decoded)
    out.slots = good
    pieces = [_intervals(decoded, good_rows, data_word, num_units, int(buf), warnings)
              for buf, good_rows in _by_buf_size(decoded)]
    _set_intervals(out, pieces)
    return out


def is_slot_size(scratch_size: int) -> bool:
    """Whether a CTA slot of `scratch_size` bytes can be read: a positive number of 32-bit words
    (the device sums check it too, and leave a bad size to this decoder to report)."""
    return scratch_size > 0 and scratch_size % 4 == 0


def split_launches(events: LaunchEvents, ctas: list[int]) -> list[LaunchEvents]:
    """`events` of several launches decoded as one buffer (their slots back to back, `ctas[i]` slots
    for launch i), as one `LaunchEvents` per launch; the batch's warnings go with the first."""
    bounds = np.cumsum([0, *ctas])
    cta_rows = np.searchsorted(events.slots, bounds)  # decoded CTAs of launch i: rows cta_rows[i]:[i+1]
    order = np.argsort(events.cta_index, kind="stable")
    starts = np.searchsorted(events.cta_index[order], cta_rows)
    pieces = []
    for i in range(len(ctas)):
        rows = slice(cta_rows[i], cta_rows[i + 1])
        picked = order[starts[i]:starts[i + 1]]
        piece = LaunchEvents(num_units=events.num_units, num_ctas=int(cta_rows[i + 1] - cta_rows[i]),
                             warnings=events.warnings if i == 0 else [],
                             dropped=events.dropped if i == 0 else 0, unpaired=events.unpaired if i == 0 else 0)
        for key in ("cta_ids", "hw_ids", "init_ns", "pre_final_ns", "post_final_ns"):
            setattr(piece, key, getattr(events, key)[rows])
        piece.slots = events.slots[rows] - bounds[i]
        for key in ("cta", "hw_id", "unit", "scope", "start_cycle", "end_cycle"):
            setattr(piece, key, getattr(events, key)[picked])
        piece.cta_index = events.cta_index[picked] - cta_rows[i]
        pieces.append(piece)
    return pieces


def _good_slots(words: np.ndarray, scratch_size: int, num_units: int, data_word: int,
                warnings: list[str]) -> np.ndarray:
    """Rows of the slots that can be decoded; one warning per kind of bad slot."""
    preamble_ok = words[:, PREAMBLE_WORD] == PREAMBLE
    room = scratch_size - 4 * data_word
    buf = words[:, BUF_SIZE_WORD].astype(np.int64)
    size_ok = (buf <= room) & (buf % (num_units * ENTRY_BYTES) == 0)
    if (~preamble_ok).any():
        bad = np.flatnonzero(~preamble_ok)
        warnings.append(f"{len(bad)} CTA slot(s) without the 0x{PREAMBLE:X} preamble (slots "
                        f"{_few(bad)}): skipped, the kernel may not have run to its end")
    if (preamble_ok & ~size_ok).any():
        bad = np.flatnonzero(preamble_ok & ~size_ok)
        warnings.append(f"{len(bad)} CTA slot(s) whose buffer size does not fit {num_units} warps in "
                        f"{room} bytes (slots {_few(bad)}): skipped")
    return np.flatnonzero(preamble_ok & size_ok)


def _few(values: np.ndarray, limit: int = 5) -> str:
    shown = ", ".join(str(v) for v in values[:limit].tolist())
    return shown + (", ..." if len(values) > limit else "")


def _u64(words: np.ndarray, at: int) -> np.ndarray:
    return words[:, at].astype(np.int64) | (words[:, at + 1].astype(np.int64) << 32)


def _per_cta(out: LaunchEvents, words: np.ndarray) -> None:
    out.cta_ids = words[:, PROGRAM_ID_WORD].astype(np.int64)
    out.hw_ids = words[:, HW_ID_WORD].astype(np.int64)
    out.init_ns, out.pre_final_ns, out.post_final_ns = (
        _u64(words, INIT_TIME_WORD), _u64(words, PRE_FINAL_TIME_WORD), _u64(words, POST_FINAL_TIME_WORD))
    out.num_ctas = len(words)


def _by_buf_size(words: np.ndarray):
    """(buf_size, rows) for each distinct buf_size: one for every kernel seen so far."""
    sizes = words[:, BUF_SIZE_WORD]
    for buf in np.unique(sizes).tolist():
        yield buf, np.flatnonzero(sizes == buf)


def _intervals(all_words: np.ndarray, rows: np.ndarray, data_word: int, num_units: int, buf: int,
               warnings: list[str]) -> dict[str, np.ndarray]:
    """The paired intervals of the CTAs `rows` (all with data size `buf`), CTA index = row."""
    words = all_words if len(rows) == len(all_words) else all_words[rows]
    seg_words = buf // 4 // num_units
    cap = seg_words // 2  # entries a warp's segment holds
    n_ctas = len(rows)
    counts = words[:, HEADER_WORDS:data_word].astype(np.int64) // 2  # entries written, (cta, warp)
    kept = np.minimum(counts, cap)
    dropped = counts - kept
    if dropped.any():
        c, u = np.nonzero(dropped)
        warnings.append(f"circular buffer wrapped: {int(dropped.sum())} event(s) dropped in "
                        f"{len(c)} warp(s) (first: CTA {int(words[c[0], PROGRAM_ID_WORD])} warp {int(u[0])}, "
                        f"{int(counts[c[0], u[0]])} written, room for {cap}); raise the mode's buffer_size (buffer_type=global where "
                        f"shared memory is short)")
    entries = words[:, data_word:data_word + num_units * seg_words].reshape(n_ctas, num_units, seg_words)
    entries = entries[:, :, :2 * cap].reshape(n_ctas, num_units, cap, 2)
    if dropped.any():
        # Logical order: entry k of a wrapped warp is at slot (counts + k) % cap (the oldest
        # survivor is where the next write would go); an unwrapped warp starts at slot 0.
        first = np.where(counts > cap, counts % max(cap, 1), 0)
        order = (first[:, :, None] + np.arange(cap)[None, None, :]) % max(cap, 1)
        entries = np.take_along_axis(entries, order[..., None], axis=2)
    flat = entries.reshape(-1, 2)
    if (kept == cap).all():  # every segment full (Lepton sizes buffers to fit): no mask to apply
        index = np.arange(len(flat))
    else:
        index = np.flatnonzero(np.arange(cap)[None, None, :] < kept[:, :, None])
        flat = flat[index]
    w0, w1 = flat[:, 0].astype(np.int64), flat[:, 1].astype(np.int64)
    events = {"segment": index // cap, "num_units": num_units,  # (CTA, warp), in write order
              "is_start": (w0 >> END_BIT) == 0, "scope": (w0 >> SCOPE_SHIFT) & SCOPE_MASK,
              "cycle": ((w0 & CLOCK_HIGH_MASK) << 32) | w1}
    pairs = _pair(events, warnings, words[:, PROGRAM_ID_WORD])
    pairs["cta_index"] = rows[pairs.pop("cta_i")]
    pairs["dropped"] = int(dropped.sum())
    return pairs


def _pair(ev: dict, warnings: list[str], program_ids: np.ndarray) -> dict:
    """Proton's per-(CTA, warp, scope) state machine, vectorised. Within a group in write order, an
    event is accepted iff it starts a run of equal kinds (START, START, END -> the first START and
    the END) and is not an END before any START; accepted events then alternate START, END."""
    # Events arrive grouped by segment (CTA, warp) in write order; a stable sort by
    # (segment, scope) groups them per scope and keeps the write order within each group.
    key = ev["segment"] * (SCOPE_MASK + 1) + ev["scope"]
    if len(key) > 1 and (key[1:] < key[:-1]).any():
        order = np.argsort(key, kind="stable")
        key, segment, scope = key[order], ev["segment"][order], ev["scope"][order]
        is_start, cycle = ev["is_start"][order], ev["cycle"][order]
    else:
        segment, scope, is_start, cycle = ev["segment"], ev["scope"], ev["is_start"], ev["cycle"]
    n = len(key)
    new_group = np.ones(n, bool)
    new_group[1:] = key[1:] != key[:-1]
    new_run = new_group.copy()
    new_run[1:] |= is_start[1:] != is_start[:-1]
    # A run of ENDs that opens its group: none of them has a START.
    run_starts = np.flatnonzero(new_run)
    leading_end_run = new_group[run_starts] & ~is_start[run_starts]
    if leading_end_run.any():
        leading_end = leading_end_run[np.cumsum(new_run) - 1]
        accepted = new_run & ~leading_end
        a = np.flatnonzero(accepted)
    else:
        accepted, a = new_run, run_starts
    # Accepted events alternate within a group: a START is closed by the next accepted event if
    # that is in the same group (it is then an END).
    nxt = a[1:]
    closes = is_start[a[:-1]] & ~is_start[nxt] & ~new_group[nxt] if len(a) > 1 else np.zeros(0, bool)
    closed_at = np.zeros(len(a), bool)
    closed_at[:-1] = closes
    s, e = a[:-1][closes], nxt[closes]
    start, end = cycle[s], cycle[e]
    wrapped = end < start
    if wrapped.any():
        end = np.where(wrapped, end + (1 << CLOCK_BITS), end)
    if len(s) * 2 != n:
        _mismatch_warnings(warnings, is_start, accepted, a, closed_at, segment, ev["num_units"], scope,
                           program_ids, int(wrapped.sum()))
    elif wrapped.any():
        warnings.append(f"{int(wrapped.sum())} interval(s) crossed the 43-bit cycle counter's wrap: unwrapped")
    cta_i, unit = np.divmod(segment[s], ev["num_units"])
    return {"cta_i": cta_i, "unit": unit, "scope": scope[s], "start_cycle": start,
            "end_cycle": end, "unpaired": n - 2 * len(s)}


def _mismatch_warnings(warnings, is_start, accepted, a, closed_at, segment, num_units, scope, program_ids,
                       clock_wraps: int) -> None:
    kinds = [("START after START (ignored)", is_start & ~accepted),
             ("END without START (ignored)", ~is_start & ~accepted)]
    never_closed = np.zeros(len(is_start), bool)
    never_closed[a[is_start[a] & ~closed_at]] = True
    kinds.append(("START never closed (a scope entered and not exited: close each enter_scope with exit_scope)", never_closed))
    for what, mask in kinds:
        if mask.any():
            i = int(np.flatnonzero(mask)[0])
            cta_i, unit = divmod(int(segment[i]), num_units)
            warnings.append(f"{int(mask.sum())} event(s) {what}; first: CTA {int(program_ids[cta_i])} "
                            f"warp {unit} scope {int(scope[i])}")
    if clock_wraps:
        warnings.append(f"{clock_wraps} interval(s) crossed the 43-bit cycle counter's wrap: unwrapped")


_INTERVAL_KEYS = ("cta_index", "unit", "scope", "start_cycle", "end_cycle")


def _set_intervals(out: LaunchEvents, pieces: list[dict]) -> None:
    if pieces:
        for key in _INTERVAL_KEYS:
            setattr(out, key, np.concatenate([p[key] for p in pieces]).astype(np.int64))
        out.dropped = sum(p["dropped"] for p in pieces)
        out.unpaired = sum(p["unpaired"] for p in pieces)
    else:
        for key in _INTERVAL_KEYS:
            setattr(out, key, np.zeros(0, np.int64))
    out.cta = out.cta_ids[out.cta_index]
    out.hw_id = out.hw_ids[out.cta_index]
