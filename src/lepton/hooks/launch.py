"""`hook="triton"`: Lepton as Triton's launch hook.

Triton calls `launch_enter_hook(metadata)` before and `launch_exit_hook(metadata)` after each
kernel launch when a hook is installed; `metadata` is a `LazyDict` whose `get()` evaluates the
kernel's `launch_metadata(grid, metadata, args)` function. The returned `name` renames the launch's
kernel node and numeric values (`flops*`, `bytes`, anything else numeric) become metrics of exactly
that launch's node: `Runtime._enter_op` makes an op node under the current scope and marks it as the
path of the thread's next launch on its time line (a one-shot pair, `collect.timeline`), so the
kernel record lands on it whichever thread launches. Lepton's hooks need no exit hook: where one is
Triton's only hook, Triton's exit slot is emptied, and Triton calls nothing after the launch.

GPU work that `launch_metadata` itself launches runs under the state
`__proton_launch_metadata:<kernel>`, so it stays out of the user's tree (the viewer hides it).
"""
from __future__ import annotations

import functools
import re
import sys
import threading
from collections.abc import Callable
from numbers import Number

from ..collect.timeline import ThreadTimelines
from ..model.metrics import to_python_value
from ..runtime import RUNTIME
from ..states import COMPUTE_METADATA_SCOPE_NAME
from . import kernel_props

_RESERVED_KEYS = frozenset({"name", "function", "stream"})
_PARSED_MAX = 4096  # launch metadata results remembered (distinct shapes)


def _metadata_key(raw_name, values: dict) -> tuple | None:
    """What parsed launch metadata is remembered by: the kernel and the metadata values with their
    types (True == 1 == 1.0 as dict keys, not as metrics); None when a value cannot be hashed (a
    list). A hooked launch is remembered by its scope path followed by this
    (`Runtime.hooked_launches`)."""
    key = (raw_name, tuple(values.items()), tuple(map(type, values.values())))
    try:
        hash(key)
    except TypeError:
        return None
    return key


def _is_metric_value(value) -> bool:
    return value is not None and not isinstance(value, bool) and (
        isinstance(value, Number) or hasattr(value, "data_ptr") or hasattr(value, "dtype"))


class _KernelInScope:
    """What the hook's fast path knows of one kernel launched under one scope path since the last
    registry change (`Runtime.hooked_kernels`): the state its metadata is evaluated in, that
    state's path there, and its last launch there with plain metadata values: `last = (value
    types, values, op, counters)`, replaced whole (threads may launch it at once)."""

    __slots__ = ("last", "scope", "state", "state_path")

    def __init__(self, scope: int, state: tuple[str, ...], state_path: int) -> None:
        self.scope = scope
        self.state = state
        self.state_path = state_path
        self.last: tuple = (None, None, -1, ())


class LaunchHook:
    """Process-wide singleton; installed while at least one session uses it."""

    priority = 100
    _instance: LaunchHook | None = None

    def __new__(cls):
        if cls._instance is None:
            cls._instance = super().__new__(cls)
            cls._instance._metadata_states = {}  # raw kernel name -> its metadata state
            cls._instance._parsed = {}  # (raw name, metadata items, types) -> (name, metrics, plain)
            cls._instance.sessions = set()
            cls._instance.configure()
        return cls._instance

    def configure(self, *, include: str | None = None, exclude: str | None = None) -> None:
        """Only kernels whose compiled name matches `include` and not `exclude` (`re.match`, so
        anchored at the start) are hooked; the others never have their metadata evaluated."""
        self._include = re.compile(include) if include else None
        self._exclude = re.compile(exclude) if exclude else None
        self._filtering = bool(include or exclude)

    def _wanted(self, name) -> bool:
        if name is None:
            return True
        if self._include is not None and self._include.match(name) is None:
            return False
        return self._exclude is None or self._exclude.match(name) is None

    def enter(self, metadata) -> None:
        # Runs on every hooked launch. A kernel launched again under the same scope with the
        # metadata values of its last launch there takes the fast path: two marks, the metadata,
        # one comparison and a counter per session (`_KernelInScope`).
        rt = RUNTIME
        if not rt.active:
            return
        try:
            t = rt.shadow.local.thread
        except AttributeError:
            t = rt.init_thread()
        if t.in_metadata:  # a launch made by launch_metadata itself: not hooked
            return
        raw_name = metadata.data.get("name")
        if self._filtering and not self._wanted(raw_name):
            return
        fast = rt.fast and t.state is None and not self._filtering
        top = t.stack[-1]
        kernel = rt.hooked_kernels.get((top, raw_name)) if fast else None
        if kernel is None:
            self._enter_slowly(rt, t, metadata, raw_name, fast)
            return
        clock = rt.mark_clock
        t.state = kernel.state
        if clock is not None:
            marks = t.marks
            marks.append(clock())
            marks.append(kernel.state_path)
        t.in_metadata = True
        try:
            values = metadata.get()
        except BaseException:
            t.state = None
            rt.remark(t)
            raise
        finally:
            t.in_metadata = False
        t.state = None
        last = kernel.last
        types = [*map(type, values.values())]
        # The types first: the last values are plain, so `==` then compares plain values only
        # (a tensor's `==` would launch a kernel), and True == 1 == 1.0 are told apart.
        if types == last[0] and values == last[1]:
            op, counters = last[2], last[3]
        else:
            try:  # (top,) + `_metadata_key(raw_name, values)`, inlined
                key = (top, raw_name, tuple(values.items()), tuple(types))
                launch = rt.hooked_launches.get(key)
            except TypeError:
                key = launch = None
            if launch is None:
                self._finish_slowly(rt, t, metadata.data, values, None, key and key[1:], kernel)
                return
            op, counters = launch
            kernel.last = (types, dict(values), op, counters)
        if clock is not None:  # Runtime.mark_next_launch, inlined
            now = clock()
            marks.extend((now, ~op, now, top))
        for counter in counters:
            next(counter)

    def _enter_slowly(self, rt, t, metadata, raw_name, fast: bool) -> None:
        """A launch of a kernel not launched under this scope since the last registry change,
        or under a state or filters."""
        state = self._metadata_states.get(raw_name)
        if state is None:
            state = self._metadata_states[raw_name] = (COMPUTE_METADATA_SCOPE_NAME, str(raw_name))
        previous = rt.enter_transient_state(state)
        kernel = None
        if fast:
            top = t.stack[-1]
            kernel = _KernelInScope(top, state, rt.shadow.effective(t, top))
            rt.hooked_kernels[(top, raw_name)] = kernel
        t.in_metadata = True
        try:
            values = metadata.get()
        except BaseException:
            rt.exit_transient_state(previous)
            raise
        finally:
            t.in_metadata = False
        self._finish_slowly(rt, t, metadata.data, values, previous, _metadata_key(raw_name, values), kernel)

    def _finish_slowly(self, rt, t, data: dict, values: dict, previous, key: tuple | None,
                       kernel: _KernelInScope | None) -> None:
        """From the metadata `values` (remembered by `key`, see `_metadata_key`) to the launch's
        op; remembers the launch for the fast path of `kernel` (None: not on the fast path) when
        the values are plain (numbers and strings)."""
        raw_name = data.get("name")
        try:
            name, metrics, plain = self._name_and_metrics(raw_name, values, key)
            if self._filtering and name != raw_name and not self._wanted(name):
                rt.exit_transient_state(previous)
                return
            props = kernel_props.properties_of_launch(data.get("function"))
        except BaseException:
            rt.exit_transient_state(previous)
            raise
        op, counters = rt.op_after_transient_state(previous, name, metrics, props)
        if plain and key is not None and kernel is not None and len(rt.hooked_launches) < _PARSED_MAX:
            rt.hooked_launches[(kernel.scope, *key)] = (op, counters)
            kernel.last = (list(key[2]), dict(values), op, counters)  # key[2]: the value types

    def _name_and_metrics(self, raw_name, values: dict, key: tuple | None) -> tuple[str, tuple, bool]:
        """The launch's node name, its metrics `((name, value), ...)` from what `launch_metadata`
        returned, and whether the values were plain numbers and strings (then the result is
        remembered under `key`, `_metadata_key(raw_name, values)`: a launch loop usually repeats
        a few shapes)."""
        known = self._parsed.get(key) if key is not None else None
        if known is not None:
            return known
        plain = True
        metrics = []
        for name, value in values.items():
            t = type(value)
            if t is float or t is int:
                if name not in _RESERVED_KEYS:
                    metrics.append((name, value))
                continue
            if t is not str and value is not None:
                plain = False
            if name not in _RESERVED_KEYS and _is_metric_value(value):
                value = to_python_value(value)  # tensors, numpy values: plain numbers now
                metrics.append((name, tuple(value) if isinstance(value, list) else value))
        parsed = (str(values.get("name", raw_name)), tuple(metrics), plain)
        if plain and key is not None and len(self._parsed) < _PARSED_MAX:
            self._parsed[key] = parsed
        return parsed


class TritonStackHook:
    """With a python-context session on a backend that `reads_triton_stacks`: marks the Python
    stack of each Triton launch on a time line of its own (a one-shot pair: path + 1 for the
    launch, 0 after it), so that the backend need not call back into Python from Triton's launch
    API (two calls through ctypes per launch). Installed whether or not `hook="triton"` is."""

    def __init__(self, timeline: ThreadTimelines, caller_path: Callable[[], int]) -> None:
        self.timeline = timeline
        self.caller_path = caller_path
        self.knobs = None  # the `triton.knobs.runtime` it is installed in
        self._local = threading.local()  # .marks: the calling thread's marks on `timeline`

    def enter(self, metadata) -> None:
        clock = RUNTIME.mark_clock
        if clock is not None:  # ThreadTimelines.mark_next_launch, inlined
            path = self.caller_path()  # frames of Lepton and Triton are folded
            try:
                marks = self._local.marks
            except AttributeError:
                marks = self._local.marks = self.timeline.log().marks
            now = clock()
            marks.extend((now, ~(path + 1), now, 0))


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
            _uninstall(_stack_hook, _stack_hook.knobs)
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
        _install(hook)
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


def _install(hook) -> None:
    """Puts `hook.enter` in Triton's launch enter hook."""
    runtime = _knobs()
    fn, current = hook.enter, runtime.launch_enter_hook
    if getattr(current, "calls", None) == [] and hasattr(current, "add"):
        runtime.launch_enter_hook = _sole_hook(runtime, current, fn)  # Triton 3.6, no other hook
    elif hasattr(current, "add"):  # a HookChain (newer Triton): other hooks keep running
        current.add(fn)
    elif current is None:
        runtime.launch_enter_hook = fn
    elif current is not fn:
        raise RuntimeError(f"triton.knobs.runtime.launch_enter_hook is already set by another tool "
                           f"({current!r}); lepton's hook='triton' cannot chain with it on this "
                           "Triton version")


def _sole_hook(runtime, chain, fn):
    """What stands in for Triton's empty chain of enter hooks (`HookChain`) while `fn` is the only
    hook; Triton's exit slot is emptied meanwhile (None) if its chain is empty too.

    Triton's C launcher calls the hook objects on every launch, and skips a slot that is None. A
    `functools.partial` calls `fn` with no Python frame of its own, where `HookChain.__call__` is a
    Python method that forwards `*args, **kwargs`. Measured on the H100 in the launch loop (one
    process, 24 rounds): a no-op enter and exit hook through the chains cost 4.4 µs per step, while
    a hook that evaluates the launch metadata, set in the slots directly, cost nothing measurable.
    It answers the chain's `add`, `remove` and `calls`: another tool's `add` puts the chains back,
    with `fn` and its hook in the enter chain (tools add their enter hook first)."""
    sole = functools.partial(fn)
    sole.calls = [fn]
    sole.reversed = getattr(chain, "reversed", False)
    sole.lepton_chain = chain  # the chain it stands in for, put back at uninstall
    exit_chain = runtime.launch_exit_hook
    sole.lepton_exit_chain = None  # the exit chain emptied meanwhile, if it was
    if getattr(exit_chain, "calls", None) == [] and hasattr(exit_chain, "add"):
        sole.lepton_exit_chain = exit_chain
        runtime.launch_exit_hook = None

    def put_back():
        runtime.launch_enter_hook = chain
        if sole.lepton_exit_chain is not None and runtime.launch_exit_hook is None:
            runtime.launch_exit_hook = sole.lepton_exit_chain

    def add(func):
        chain.add(fn)
        chain.add(func)
        put_back()

    def remove(func):
        if func == fn:
            put_back()

    sole.add, sole.remove = add, remove
    return sole


def _uninstall(hook, runtime=None) -> None:
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


def register(session: int) -> None:
    """Installs the hook for `session` (once per process, however many sessions use it)."""
    hook = LaunchHook()
    if not hook.sessions:
        _install(hook)
        kernel_props.install()
    hook.sessions.add(session)


def unregister(session: int) -> None:
    hook = LaunchHook()
    hook.sessions.discard(session)
    if not hook.sessions:
        _uninstall(hook)
        kernel_props.uninstall()
