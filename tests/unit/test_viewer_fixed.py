"""viewer.fixed: numpy-built fixed-point text, character for character what Python's format gives."""
from __future__ import annotations

import numpy as np
import pytest

from lepton.viewer.fixed import format_rows

EDGE_VALUES = [
    0.0, -0.0, 1.0, -1.0, 0.0625, -0.0625,  # exact ties: round half to even
    0.0005, 0.0015, 0.0025, 1.0005, 2.5e-4, -1e-4, 0.9995, 0.99949999999, 999.9995,  # near ties
    5e-324, 1e-300, 9007199254740.993, 9007199254740.992, 1e15, 123456789012.3456, 2.0 ** 53 / 1000,
    1e300, -1e300, float("nan"), -float("nan"), float("inf"), -float("inf"),
]


def python(columns, digits=3, separator=" ", end=""):
    rows = zip(*(column.tolist() for column in columns))
    return [separator.join(f"{v:.{digits}f}" for v in row) + end for row in rows]


def random_columns(seed: int, n: int = 20_000) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    with_nan = rng.random(n) * 5
    with_nan[::7] = np.nan
    return [
        with_nan,
        rng.standard_normal(n) * 10.0 ** rng.integers(-8, 16, n),  # every magnitude, both signs
        np.round(rng.random(n) * 1000) / 2000,  # k/2000: ties and near-ties after scaling
        rng.integers(0, 10**6, n) / 1e6,  # nanoseconds as milliseconds
        rng.integers(0, 2**63, n, dtype=np.int64).view(np.float64),  # any bit pattern
    ]


def test_edge_values_match_python():
    values = np.array(EDGE_VALUES)
    assert format_rows([values]) == python([values])


@pytest.mark.parametrize("seed", [1, 2])
def test_random_columns_match_python(seed):
    for values in random_columns(seed):
        assert format_rows([values]) == python([values])


@pytest.mark.parametrize("digits", [1, 2, 4, 6])
def test_other_precisions_match_python(digits):
    for values in random_columns(3, n=5_000):
        assert format_rows([values], digits) == python([values], digits)


def test_rows_of_several_columns_join_with_the_separator_and_end():
    first, second, *_ = random_columns(4, n=5_000)
    expected = python([first, second], separator=" | ", end="\n")
    assert format_rows([first, second], separator=" | ", end="\n") == expected
    edges = np.array(EDGE_VALUES)
    assert format_rows([edges, edges[::-1], edges], end=" ") == python([edges, edges[::-1], edges], end=" ")


def test_no_rows_give_no_texts():
    assert format_rows([np.array([])]) == []
    assert format_rows([np.array([]), np.array([])], end=" ") == []
