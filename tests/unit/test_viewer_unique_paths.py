"""viewer.unique_paths: --print-sorted's row labels, a name or as much path as tells rows apart."""
from __future__ import annotations

import time

import numpy as np

from lepton.viewer.load import from_document
from lepton.viewer.unique_paths import unique_suffixes


def literal(name, *children):
    return {"frame": {"name": name}, "metrics": {"m": 1}, "children": list(children)}


def labels(root) -> list[str]:
    tree = from_document([root, {}])
    rows = np.arange(1, len(tree))  # every node but ROOT, as --print-sorted lists them
    return unique_suffixes(tree, rows, tree.name_codes.distinct)


def test_a_unique_name_stays_bare_and_a_repeated_one_gets_its_parent():
    """
    ROOT
      fused    -> 1024              fused, fused/1024, fused/1024/k ... shortest unique suffixes
      unfused  -> 1024 -> k
    """
    root = literal("ROOT", literal("fused", literal("1024")),
                   literal("unfused", literal("1024", literal("k"))))
    assert labels(root) == ["fused", "fused/1024", "unfused", "unfused/1024", "k"]


def test_a_suffix_of_three_frames_shows_the_first_and_the_last():
    root = literal("ROOT", literal("step", literal("work", literal("line"))),
                   literal("warm", literal("work", literal("line"))))
    assert labels(root) == ["step", "step/work", "step/…/line", "warm", "warm/work", "warm/…/line"]


def test_an_elided_label_that_another_row_shares_keeps_its_middle():
    """a/b/x and a/q/x would both be a/…/x."""
    root = literal("ROOT", literal("a", literal("b", literal("x")), literal("q", literal("x"))),
                   literal("d", literal("b", literal("x"))), literal("e", literal("q", literal("x"))))
    assert labels(root) == ["a", "a/b", "a/b/x", "a/q", "a/q/x", "d", "d/b", "d/…/x", "e", "e/q", "e/…/x"]


def test_a_recursive_chain_is_numbered_past_eight_frames_and_stays_fast():
    """3,000 frames of one recursive function: labels of 8 frames, numbered; linear work."""
    node = literal("f")
    for _ in range(2999):
        node = literal("f", node)
    start = time.perf_counter()
    shown = labels(literal("ROOT", node))
    assert time.perf_counter() - start < 5
    assert len(set(shown)) == 3000
    assert shown[0] == "ROOT/f" and shown[6] == "ROOT/f/f/f/f/f/f/f"  # the outermost frames reach ROOT
    assert shown[7] == "f/f/f/f/f/f/f/f #1" and shown[-1] == "f/f/f/f/f/f/f/f #2993"
