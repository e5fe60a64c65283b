"""The call-path table's call stacks: ROOT and the names down to a path, the same tuple each time."""
from lepton.model.paths import ROOT, PathTable


def test_a_call_stack_is_root_and_the_names_down_to_the_path_built_once():
    paths = PathTable()
    leaf = paths.extend(ROOT, ["outer", "inner", "kernel"])
    stack = paths.call_stack(leaf)
    assert stack == ("ROOT", "outer", "inner", "kernel")
    assert paths.call_stack(leaf) is stack
    assert paths.call_stack(ROOT) == ("ROOT",)
    assert paths.call_stack(paths.child(leaf, "deeper")) == ("ROOT", "outer", "inner", "kernel", "deeper")
