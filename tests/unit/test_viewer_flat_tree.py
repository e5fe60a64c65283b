"""viewer.flat_tree.Codes: a column of strings as its distinct values and one int per node."""
from __future__ import annotations

from lepton.viewer.flat_tree import Codes
from lepton.viewer.load import from_document


def test_codes_keep_first_use_order_and_give_the_values_back():
    values = ["b", "a", "b", "c", "a"]
    codes = Codes.of(values)
    assert codes.distinct == ["b", "a", "c"]
    assert codes.positions.tolist() == [0, 1, 0, 2, 1]
    assert codes.values() == values
    assert codes.pick(["B", "A", "C"]).tolist() == ["B", "A", "B", "C", "A"]


def test_a_column_of_one_value_and_an_empty_column():
    assert Codes.of(["function"] * 4).distinct == ["function"]
    assert Codes.of(["function"] * 4).positions.tolist() == [0, 0, 0, 0]
    assert Codes.of([]).values() == []


def test_a_tree_codes_its_names_and_frame_types():
    leaf = {"frame": {"name": "k", "type": "function"}, "metrics": {"time (ns)": 1}, "children": []}
    root = {"frame": {"name": "ROOT", "type": "function"}, "metrics": {}, "children": [leaf, leaf]}
    tree = from_document([root])
    assert tree.name_codes.values() == tree.names == ["ROOT", "k", "k"]
    assert tree.frame_type_codes.distinct == ["function"]
