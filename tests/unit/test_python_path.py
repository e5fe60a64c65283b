"""The python context's call paths: the caller's frames by file, line and function, interned."""
from __future__ import annotations

import os
import sys

from lepton.model.paths import PathTable
from lepton.runtime import python_stacks
from lepton.runtime.python_stacks import enter_python_scope, exit_python_scope, python_path

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


# -- scope anchors: a walk inside a scope stops at the frame that entered it -----------------------

def launch_site(paths):
    return python_path(paths)


def last_key():
    return list(python_stacks._stack_ids)[-1]


def run_in_scope(paths, anchored: bool):
    """One launch site, walked inside an anchored scope or not; the same line either way."""
    _, anchor, anchors = enter_python_scope(paths, sys._getframe()) if anchored else (None, None, None)
    pid = launch_site(paths)
    key = last_key()
    if anchor is not None:
        exit_python_scope(anchor, anchors)
    return pid, key


def test_a_walk_inside_a_scope_stops_at_the_scopes_frame_and_gives_the_whole_path():
    paths = PathTable()
    (plain, plain_key), (inside, inside_key) = [run_in_scope(paths, anchored) for anchored in (False, True)]
    assert inside == plain  # same names, interned once
    assert names(paths, inside)[-2].endswith("@run_in_scope")
    assert any(n.endswith("@test_a_walk_inside_a_scope_stops_at_the_scopes_frame_and_gives_the_whole_path")
               for n in names(paths, inside))  # the frames outside the scope's, from its anchor
    assert plain_key[2] == -1 and inside_key[2] >= 0  # the anchor's scope path
    assert len(inside_key) < len(plain_key)  # two frames walked (launch_site, run_in_scope), not all
    assert len(inside_key) == 3 + 2 * 2
    assert not python_stacks._local.anchors


def enter_and_return(paths):
    """A scope entered in a frame that returns before the scope exits (enter_scope's way)."""
    return enter_python_scope(paths, sys._getframe())[1:]


def test_an_anchor_whose_frame_is_not_on_the_stack_is_walked_past():
    paths = PathTable()
    anchor, anchors = enter_and_return(paths)
    try:
        pid = site_a(paths, python_stacks.folded_dirs())
        assert last_key()[2] == -1  # walked to the outermost frame
    finally:
        exit_python_scope(anchor, anchors)
    assert names(paths, pid)[-1].endswith("@site_a")
    assert names(paths, pid)[-2].endswith("@test_an_anchor_whose_frame_is_not_on_the_stack_is_walked_past")


def scoped_generator(paths):
    here, anchor, _ = enter_python_scope(paths, sys._getframe())
    assert anchor is None  # resumed from other stacks: its outside is not fixed
    yield launch_site(paths)
    yield launch_site(paths)


def resume_here(gen):
    return next(gen)


def resume_there(gen):
    return next(gen)


def test_a_scope_in_a_generator_is_not_anchored_and_each_resume_gets_its_own_stack():
    paths = PathTable()
    gen = scoped_generator(paths)
    first, second = resume_here(gen), resume_there(gen)
    assert names(paths, first)[-3].endswith("@resume_here")
    assert names(paths, second)[-3].endswith("@resume_there")


def test_anchors_closed_out_of_order_leave_the_others_in_place():
    paths = PathTable()
    frame = sys._getframe()
    before = list(getattr(python_stacks._local, "anchors", []))  # what an earlier test's thread left
    _, outer, anchors = enter_python_scope(paths, frame)
    _, inner, _ = enter_python_scope(paths, frame)
    exit_python_scope(outer, anchors)
    assert python_stacks._local.anchors == before + [inner]
    exit_python_scope(inner, anchors)
    assert python_stacks._local.anchors == before
