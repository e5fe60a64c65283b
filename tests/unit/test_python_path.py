"""The python context's call paths: the caller's frames by file, line and function, interned."""
from __future__ import annotations

import os

from lepton.collect.contexts import python_path
from lepton.model.paths import PathTable

HERE = os.path.abspath(__file__)
NO_FOLD = ("/nonexistent-folder/",)


def names(paths, pid):
    return paths.names_of(pid)


def site_a(paths, skip=NO_FOLD):
    return python_path(paths, skip)


def site_b(paths, skip=NO_FOLD):
    return python_path(paths, skip)


def test_the_innermost_frame_is_the_caller_named_file_line_function():
    paths = PathTable()
    pid = site_a(paths)
    leaf = names(paths, pid)[-1]
    assert leaf.startswith(HERE + ":") and leaf.endswith("@site_a")
    line = int(leaf[len(HERE) + 1:].split("@")[0])
    with open(HERE) as f:
        assert "python_path(paths, skip)" in f.read().splitlines()[line - 1]


def test_the_same_stack_gives_the_same_path_and_different_lines_differ():
    paths = PathTable()
    first = [site_a(paths) for _ in range(3)]
    assert len(set(first)) == 1
    assert site_b(paths) != first[0]
    assert names(paths, site_a(paths))[:-1] == names(paths, site_b(paths))[:-1]


def test_frames_of_folded_folders_are_left_out():
    paths = PathTable()
    folded = names(paths, site_a(paths, (HERE,)))
    assert not any(n.startswith(HERE + ":") for n in folded)
    assert any(n.startswith(HERE + ":") for n in names(paths, site_a(paths)))


def test_each_path_table_gets_its_own_ids():
    one, two = PathTable(), PathTable()
    two.child(0, "something else first")
    p1, p2 = site_a(one), site_a(two)
    assert names(one, p1) == names(two, p2)
