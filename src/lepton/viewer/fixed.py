"""Fixed-point text for whole columns at once: exactly what f"{v:.3f}" gives, built in numpy.

Python's float formatting spends most of its time in the correctly rounded float-to-decimal
conversion, which dominates printing a large tree (docs/design.md, "The viewer"). Scaling by 10**digits and
rounding to an integer gives the same digits whenever the scaled value is farther than an ulp from
a tie (.5): the exact product is then on the same side of the tie as the rounded one. Those
integers become ASCII digits with array arithmetic, written for all rows into one buffer that is
decoded and split once; ties and huge values (a few, if any) are formatted by Python.
"""
from __future__ import annotations

import numpy as np

_EXACT_INTEGERS = 2.0 ** 53  # above this, float64 no longer holds every integer
_POWERS_OF_TEN = 10 ** np.arange(19, dtype=np.int64)
_ZERO, _POINT, _MINUS = ord("0"), ord("."), ord("-")
_ROW_END = "\0"  # ends each row in the buffer; no formatted number holds it


def format_rows(columns: list[np.ndarray], digits: int = 3, separator: str = " ", end: str = "",
                nan: str = "nan") -> list[str]:
    """[separator.join(f"{v:.{digits}f}" for v in row) + end for row in zip(*columns)], for one or
    more float columns of one length, digits >= 1, and an ASCII separator and end; NaN shows as
    `nan` (ASCII)."""
    nan_text = nan.encode("ascii")
    layouts = [_Layout(np.asarray(values, dtype=np.float64), digits, nan_text) for values in columns]
    pieces = [separator] * (len(layouts) - 1) + [end]
    row_lengths = sum(layout.lengths + len(piece) for layout, piece in zip(layouts, pieces))
    if len(row_lengths) == 0:
        return []
    ends = np.cumsum(row_lengths + len(_ROW_END))
    buffer = np.zeros(int(ends[-1]), dtype=np.uint8)
    at = ends - row_lengths - len(_ROW_END)
    for layout, piece in zip(layouts, pieces):
        layout.write(buffer, at)
        at = at + layout.lengths
        _write_same(buffer, at, piece.encode("ascii"))
        at = at + len(piece)
    return buffer.tobytes().decode("ascii").split(_ROW_END)[:-1]


class _Layout:
    """One column's texts: their lengths, to lay the rows out, then their characters."""

    def __init__(self, values: np.ndarray, digits: int, nan: bytes = b"nan") -> None:
        self.digits = digits
        with np.errstate(invalid="ignore", over="ignore"):
            scaled = np.abs(values) * 10.0 ** digits
            distance_to_tie = np.abs(scaled - np.floor(scaled) - 0.5)
            exact = (scaled < _EXACT_INTEGERS) & (distance_to_tie > np.spacing(scaled))  # False for NaN, inf
        self.rows = np.flatnonzero(exact)
        self.scaled = np.rint(scaled[self.rows]).astype(np.int64)
        self.negative = np.signbit(values[self.rows])
        # Digits shown, with the leading zeros of "0.001": the integer part has at least one.
        self.figures = np.maximum(np.searchsorted(_POWERS_OF_TEN, self.scaled, side="right"), digits + 1)
        self.lengths = np.empty(len(values), dtype=np.int64)
        self.lengths[self.rows] = self.negative + self.figures + 1  # sign, digits, point
        # NaN (whatever its sign bit) as asked, infinities as Python prints them; ties and huge
        # values by Python itself.
        self.constants = {nan: np.flatnonzero(np.isnan(values)),
                          b"inf": np.flatnonzero(np.isposinf(values)),
                          b"-inf": np.flatnonzero(np.isneginf(values))}
        for text, rows in self.constants.items():
            self.lengths[rows] = len(text)
        self.others = np.flatnonzero(~exact & np.isfinite(values))
        self.other_texts = [f"{v:.{digits}f}".encode("ascii") for v in values[self.others].tolist()]
        self.lengths[self.others] = list(map(len, self.other_texts))

    def write(self, buffer: np.ndarray, at: np.ndarray) -> None:
        """Writes each row's text into `buffer`, starting at `at[row]`."""
        starts = at[self.rows]
        buffer[starts[self.negative]] = _MINUS
        last = starts + self.lengths[self.rows] - 1  # where the last decimal goes
        buffer[last - self.digits] = _POINT
        rest = self.scaled
        for place in range(int(self.figures.max(initial=0))):  # right to left, skipping the point
            quotient = rest // 10  # numpy's int64 floor division is much faster than its divmod
            digit = (rest - quotient * 10).astype(np.uint8) + _ZERO
            rest = quotient
            column = last - place - (place >= self.digits)
            if place <= self.digits:  # every row shows these
                buffer[column] = digit
            else:
                shown = place < self.figures
                buffer[column[shown]] = digit[shown]
        for text, rows in self.constants.items():
            _write_same(buffer, at[rows], text)
        _write_each(buffer, at[self.others], self.other_texts)


def _write_same(buffer: np.ndarray, starts: np.ndarray, text: bytes) -> None:
    for i, char in enumerate(text):
        buffer[starts + i] = char


def _write_each(buffer: np.ndarray, starts: np.ndarray, texts: list[bytes]) -> None:
    """Writes texts[i] into `buffer` at starts[i]."""
    if not texts:
        return
    chars = np.array(texts, dtype=bytes)  # one row of characters per text, padded with NULs
    chars = chars.view(np.uint8).reshape(len(texts), -1)
    lengths = np.fromiter(map(len, texts), dtype=np.int64, count=len(texts))
    for i in range(chars.shape[1]):
        shown = i < lengths
        buffer[starts[shown] + i] = chars[shown, i]
