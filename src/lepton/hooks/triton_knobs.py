"""Lepton's hooks in Triton's launch hook slots (`triton.knobs.runtime`): installing and removing
them, the stand-in for Triton's empty chain of hooks where Lepton's hook is the only one, and the
python context's hook that marks each Triton launch's Python stack.
"""
from __future__ import annotations

import functools
import sys
from collections.abc import Callable

from ..model.timeline import ThreadTimelines
from ..runtime.hot_path import HOT_PATH
from .hook import Hook


class TritonStackHook:
    """With a python-context session on a backend that `reads_triton_stacks`: marks the Python
    stack of each Triton launch on a time line of its own (`HotPath.mark_triton_launch_stack`),
    so that the backend need not call back into Python from Triton's launch API (two calls
    through ctypes per launch). Installed whether or not `hook="triton"` is."""

    def __init__(self, timeline: ThreadTimelines, caller_path: Callable[[], int]) -> None:
        self.timeline = timeline
        self.caller_path = caller_path
        self.knobs = None  # the `triton.knobs.runtime` it is installed in

    def enter(self, metadata) -> None:
        if HOT_PATH.mark_clock is not None:
            HOT_PATH.mark_triton_launch_stack(self.caller_path())  # Lepton's and Triton's frames are folded


_stack_hook: TritonStackHook | None = None


def mark_triton_stacks(timeline: ThreadTimelines | None, caller_path: Callable[[], int] | None = None) -> bool:
    """Installs the `TritonStackHook` marking on `timeline` (None: removes it). Returns whether it
    is installed: not where Triton is not imported, has no `knobs` (Triton < 3.3), or has one
    hook slot instead of a chain of hooks; then the backend watches Triton's launch calls."""
    global _stack_hook
    if _stack_hook is not None:
        if timeline is not None and _stack_hook.timeline is timeline and _stack_hook.knobs is _current_knobs():
            return True
        try:
            uninstall(_stack_hook, _stack_hook.knobs)
        except (ImportError, AttributeError):
            pass
        _stack_hook = None
    if timeline is None or "triton" not in sys.modules:
        return False
    hook = TritonStackHook(timeline, caller_path)
    try:
        hook.knobs = _knobs()
        if not hasattr(hook.knobs.launch_enter_hook, "add"):
            return False  # one hook slot (older Triton): left to hook="triton"
        install(hook)
    except (ImportError, AttributeError, RuntimeError):
        return False
    _stack_hook = hook
    return True


def _current_knobs():
    try:
        return _knobs()
    except ImportError:
        return None


def _knobs():
    from triton import knobs  # Triton >= 3.3

    return knobs.runtime


def install(hook) -> None:
    """Puts `hook.enter` in Triton's launch enter hook (`hook.enter_as(True, metadata)` where it is
    the only hook, see `_sole_hook`)."""
    runtime = _knobs()
    fn, current = hook.enter, runtime.launch_enter_hook
    if getattr(current, "calls", None) == [] and hasattr(current, "add"):
        runtime.launch_enter_hook = _sole_hook(runtime, current, fn, getattr(hook, "enter_as", None))
    elif hasattr(current, "add"):  # a HookChain (newer Triton): other hooks keep running
        add_by_priority(current, fn)
    elif current is None:
        runtime.launch_enter_hook = fn
    elif current is not fn:
        raise RuntimeError(f"triton.knobs.runtime.launch_enter_hook is already set by another tool "
                           f"({current!r}); lepton's hook='triton' cannot chain with it on this "
                           "Triton version")


def _sole_hook(runtime, chain, fn, enter_as=None):
    """What stands in for Triton's empty chain of enter hooks (`HookChain`) while `fn` is the only
    hook; Triton's exit slot is emptied meanwhile (None) if its chain is empty too. Then no one but
    the hook reads a launch's metadata: with `enter_as`, the hook is called as `enter_as(True,
    metadata)`, where Triton's `LazyDict` is as Lepton knows it (`_lazy_dict_known`).

    Triton's C launcher calls the hook objects on every launch, and skips a slot that is None. A
    `functools.partial` calls `fn` with no Python frame of its own, where `HookChain.__call__` is a
    Python method that forwards `*args, **kwargs`, a cost per launch measured in docs/design.md
    ("The Triton launch hook").
    It answers the chain's `add`, `remove` and `calls`: another tool's `add` puts the chains back,
    with `fn` and its hook in the enter chain (tools add their enter hook first)."""
    exit_chain = runtime.launch_exit_hook
    exit_emptied = getattr(exit_chain, "calls", None) == [] and hasattr(exit_chain, "add")
    if exit_emptied and enter_as is not None and _lazy_dict_known():
        sole = functools.partial(enter_as, True)
    else:
        sole = functools.partial(fn)
    sole.calls = [fn]
    sole.reversed = getattr(chain, "reversed", False)
    sole.lepton_chain = chain  # the chain it stands in for, put back at uninstall
    sole.lepton_exit_chain = None  # the exit chain emptied meanwhile, if it was
    if exit_emptied:
        sole.lepton_exit_chain = exit_chain
        runtime.launch_exit_hook = None

    def put_back():
        runtime.launch_enter_hook = chain
        if sole.lepton_exit_chain is not None and runtime.launch_exit_hook is None:
            runtime.launch_exit_hook = sole.lepton_exit_chain

    def add(func):
        add_by_priority(chain, fn)
        add_by_priority(chain, func)
        put_back()

    def remove(func):
        if func == fn:
            put_back()

    sole.add, sole.remove = add, remove
    return sole


def add_by_priority(chain, fn) -> None:
    """Adds `fn` to Triton's chain of enter hooks (`HookChain`) before the first Lepton hook of
    lower priority (`Hook.priority`, of the hook `fn` is a method of), so that Lepton's hooks run
    highest priority first whichever was installed first: the launch hook (100) names the op that
    the instrumentation hook (0) puts the launch's kernel on. Anything else is appended."""
    calls = getattr(chain, "calls", None)
    hook = getattr(fn, "__self__", None)
    if isinstance(hook, Hook) and isinstance(calls, list) and fn not in calls:
        for i, call in enumerate(calls):
            other = getattr(call, "__self__", None)
            if isinstance(other, Hook) and other.priority < hook.priority:
                calls.insert(i, fn)
                return
    chain.add(fn)


def _lazy_dict_known() -> bool:
    """Whether Triton's `LazyDict` keeps each `launch_metadata` call in `extras` as `(function,
    args)` and `get()` merges their results into `data` (Triton 3.3 to 3.6), so that the hook may
    make the call itself. Checked at each install, on a LazyDict of its own."""
    try:
        from triton.compiler.compiler import LazyDict

        probe = LazyDict({"name": "k"})
        probe.add(lambda grid, metadata, args: {"n": args["n"]}, ((1,), None, {"n": 2}))
        function, args = probe.extras[0]
        return (len(probe.extras) == 1 and function(*args) == {"n": 2}
                and probe.get() == {"name": "k", "n": 2} and probe.extras == [])
    except Exception:  # noqa: BLE001  (another shape, or no Triton: `metadata.get()` it is)
        return False


def uninstall(hook, runtime=None) -> None:
    """Removes `hook` from `runtime` (default: the current `triton.knobs.runtime`)."""
    if runtime is None:
        runtime = _knobs()
    current = runtime.launch_enter_hook
    if hasattr(current, "remove"):
        try:
            current.remove(hook.enter)
        except ValueError:
            pass
    elif current == hook.enter:
        runtime.launch_enter_hook = None
