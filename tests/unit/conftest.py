"""Checks shared by the viewer's unit tests."""
from __future__ import annotations

import numpy as np
import pytest


def _assert_same_tree(a, b) -> None:
    """Two viewer Trees hold the same nodes, in the same order, with the same metrics."""
    assert a.names == b.names and a.frame_types == b.frame_types
    np.testing.assert_array_equal(a.parent, b.parent)
    np.testing.assert_array_equal(a.depth, b.depth)
    assert a.key_order == b.key_order and a.root_keys == b.root_keys and a.devices == b.devices
    assert set(a.numbers) == set(b.numbers) and set(a.texts) == set(b.texts)
    for key in a.numbers:
        np.testing.assert_array_equal(a.numbers[key], b.numbers[key])
    for key in a.texts:
        assert a.texts[key].tolist() == b.texts[key].tolist()


@pytest.fixture
def assert_same_tree():
    return _assert_same_tree
