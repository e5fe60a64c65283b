"""Mistakes the fuzz test of issue 34 found: arguments of the wrong type to `start`, `finalize` and the
phase calls raised Python's own AttributeError or TypeError, and `finalize(output_format=5)` ended
the session's hooks before refusing. Each is one line now, and leaves nothing changed."""
from __future__ import annotations

import pytest

import lepton as proton
from lepton.errors import UsageError, UsageTypeError
from lepton.hooks.hook import HookManager
from lepton.runtime.registry import REGISTRY


def hooks_of(sid):
    """The hooks registered for session `sid`, and those active."""
    return dict(HookManager.session_hooks.get(sid, {})), list(HookManager.active_hooks)


@pytest.mark.parametrize("option, example", [("context", "shadow"), ("data", "tree"), ("backend", "cupti")])
@pytest.mark.parametrize("value", [5, b"cpu", ["cpu"]])
def test_a_start_option_that_is_not_a_string_is_refused_in_one_line(option, example, value):
    with pytest.raises(UsageTypeError) as caught:
        proton.start("p", **{"backend": "cpu", option: value})
    assert str(caught.value) == (f"start(): {option} must be a string such as {example!r}, not "
                                 f"{type(value).__name__} ({value!r})")
    assert isinstance(caught.value, TypeError)
    assert REGISTRY.sessions == {} and REGISTRY.backends == {}


@pytest.mark.parametrize("fmt", [5, b"hatchet"])
def test_an_output_format_that_is_not_a_string_is_refused_before_anything_ends(fmt, knobs):
    sid = proton.start("p", backend="cpu", hook="triton")
    hooks = hooks_of(sid)
    assert hooks
    with pytest.raises(UsageTypeError) as caught:
        proton.finalize(sid, output_format=fmt)
    assert str(caught.value) == (f"finalize(): output_format must be a string such as 'hatchet', not "
                                 f"{type(fmt).__name__} ({fmt!r})")
    assert list(REGISTRY.sessions) == [sid]
    assert hooks_of(sid) == hooks
    assert proton.finalize(sid) == ["p.hatchet"]


def test_an_unknown_output_format_ends_no_hook(knobs):
    sid = proton.start("p", backend="cpu", hook="triton")
    hooks = hooks_of(sid)
    with pytest.raises(UsageError, match="Output format 'csv' is not supported"):
        proton.finalize(sid, output_format="csv")
    assert hooks_of(sid) == hooks and hooks
    assert proton.finalize(sid) == ["p.hatchet"]


@pytest.mark.parametrize("call", ["clear", "is_phase_complete"])
@pytest.mark.parametrize("phase", ["x", 1.0, None, True])
def test_a_phase_that_is_not_a_number_is_refused_in_one_line(call, phase):
    sid = proton.start("p", backend="cpu")
    with pytest.raises(UsageTypeError) as caught:
        getattr(proton.data, call)(sid, phase)
    assert str(caught.value) == (f"{call}(): phase must be an int (a phase number from advance_phase), not "
                                 f"{type(phase).__name__} ({phase!r})")
    proton.finalize()


@pytest.mark.parametrize("make", [lambda name: proton.scope(name).__enter__(),
                                  lambda name: proton.cpu_timed_scope(name).__enter__(),
                                  lambda name: proton.enter_scope(name)], ids=["scope", "cpu_timed", "enter_scope"])
@pytest.mark.parametrize("name", [["a"], {"a": 1}, {"a"}])
def test_an_unhashable_scope_name_is_refused_in_one_line(make, name):
    """It raised `TypeError: unhashable type: 'list'` from the hot path's cache."""
    proton.start("p", backend="cpu")
    with pytest.raises(TypeError) as caught:
        make(name)
    assert str(caught.value) == (f"A scope name must be a string, not {type(name).__name__} ({name!r}): "
                                 "pass str(name)")
    assert proton.context.depth() == 0
    proton.finalize()
