"""`hook="triton"`: Lepton as Triton's launch hook.

Triton calls `launch_enter_hook(metadata)` before and `launch_exit_hook(metadata)` after each
kernel launch when a hook is installed; `metadata` is a `LazyDict` whose `get()` evaluates the
kernel's `launch_metadata(grid, metadata, args)` function. The returned `name` renames the launch's
kernel node and numeric values (`flops*`, `bytes`, anything else numeric) become metrics of exactly
that launch's node: `HotPath.op_after_metadata_state` makes an op node under the current scope and
marks it as the path of the thread's next launch on its time line (a one-shot pair, `hot_path`), so
the kernel record lands on it whichever thread launches. Lepton's hooks need no exit hook: where one is
Triton's only hook, Triton's exit slot is emptied, and Triton calls nothing after the launch; no one
else reads the metadata then, and the hook calls `launch_metadata` itself (`LaunchHook.enter_as`).

GPU work that `launch_metadata` itself launches runs under the state
`__proton_launch_metadata:<kernel>`, so it stays out of the user's tree (the viewer hides it).
"""
from __future__ import annotations

import functools
import itertools
import re
from collections.abc import Callable
from contextvars import ContextVar
from numbers import Number

from ..model.metrics import is_device_tensor, to_python_value
from ..runtime.hot_path import HOT_PATH
from ..runtime.registry import REGISTRY
from ..states import COMPUTE_METADATA_SCOPE_NAME
from . import kernel_props
from .hook import Hook
from .triton_knobs import install, mark_triton_stacks, uninstall

_RESERVED_KEYS = frozenset({"name", "function", "stream"})
# A new id for each hooked launch, readable in the launching context afterwards (Proton's `id`).
id = ContextVar("id", default=None)
_set_launch_id = id.set
_launch_ids = itertools.count()
# The state GPU work launched by `launch_metadata` runs under, as Proton's: its kernels sit under a
# `__proton_launch_metadata` node below the launch's scope, which the viewers hide.
_METADATA_STATE = (COMPUTE_METADATA_SCOPE_NAME,)
_PARSED_MAX = 4096  # launch metadata results remembered (distinct shapes)


def _metadata_key(raw_name, values: dict) -> tuple | None:
    """What parsed launch metadata is remembered by: the kernel and the metadata values with their
    types (True == 1 == 1.0 as dict keys, not as metrics); None when a value cannot be hashed (a
    list). A hooked launch is remembered by its scope path followed by this
    (`HotPath.hooked_launches`)."""
    key = (raw_name, tuple(values.items()), tuple(map(type, values.values())))
    try:
        hash(key)
    except TypeError:
        return None
    return key


def _is_metric_value(value) -> bool:
    return value is not None and not isinstance(value, bool) and (
        isinstance(value, Number) or hasattr(value, "data_ptr") or hasattr(value, "dtype"))


def _returned(metadata, alone: bool):
    """What the kernel's `launch_metadata` returned (`alone`, see `LaunchHook.enter_as`: evaluated
    from Triton's `LazyDict.extras`, which holds one entry or none), or the whole metadata."""
    if not alone:
        return metadata.get()
    returned = {}
    for function, args in metadata.extras:
        returned = returned | function(*args)
    return returned


def _counting(counters: tuple) -> Callable[[], object] | None:
    """One call that counts a repeat launch in each of `counters` (one per active session)."""
    if not counters:
        return None
    if len(counters) == 1:
        return counters[0].__next__
    return functools.partial(_count_each, counters)


def _count_each(counters: tuple) -> None:
    for counter in counters:
        next(counter)


class _KernelInScope:
    """What the hook's fast path knows of one kernel launched under one scope path since the last
    registry change (`HotPath.hooked_kernels`): the state its metadata is evaluated in, that
    state's path there, and its last launch there with plain metadata values: `last = (value
    types, values, op, count)` (`count`: None or what counts a repeat in each session), replaced
    whole (threads may launch it at once)."""

    __slots__ = ("last", "scope", "state", "state_path")

    def __init__(self, scope: int, state: tuple[str, ...], state_path: int) -> None:
        self.scope = scope
        self.state = state
        self.state_path = state_path
        self.last: tuple = (None, None, -1, None)


class LaunchHook(Hook):
    """Process-wide singleton; installed in Triton's launch hooks while an active session uses it
    (`HookManager`)."""

    priority = 100
    _instance: LaunchHook | None = None

    def __new__(cls):
        if cls._instance is None:
            cls._instance = super().__new__(cls)
            cls._instance._parsed = {}  # (raw name, metadata items, types) -> (name, metrics, plain)
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

    def activate(self) -> None:
        install(self)
        kernel_props.install()

    def deactivate(self) -> None:
        uninstall(self)
        kernel_props.uninstall()

    def enter(self, metadata) -> None:
        """Triton's enter hook in a chain with other tools' hooks, which may read the metadata too."""
        self.enter_as(False, metadata)

    def enter_as(self, alone: bool, metadata) -> None:
        """Runs on every hooked launch; `alone`: Lepton is Triton's only launch hook (`_sole_hook`),
        so no one reads `metadata` after it, and the kernel's `launch_metadata` is called directly
        rather than through `metadata.get()`, which merges its result into a copy of Triton's
        name/function/stream dict; the fast path then compares only what it returned (what this
        saves: docs/design.md, "The Triton launch hook").

        A kernel launched again under the same scope with the metadata values of its last launch
        there takes the fast path: two marks, the metadata, one comparison and a counter per
        session (`_KernelInScope`)."""
        hp = HOT_PATH
        if not hp.active:
            return
        try:
            t = hp.threads.local.thread
        except AttributeError:
            t = hp.thread()
        if t.in_metadata:  # a launch made by launch_metadata itself: not hooked
            return
        raw_name = metadata.data.get("name")
        if self._filtering and not self._wanted(raw_name):
            return
        _set_launch_id(next(_launch_ids))
        fast = hp.fast and t.state is None and not self._filtering
        top = t.stack[-1]
        kernel = hp.hooked_kernels.get((top, raw_name)) if fast else None
        if kernel is None:
            self._enter_slowly(hp, t, metadata, raw_name, fast, alone)
            return
        previous = hp.enter_metadata_state(t, kernel.state, kernel.state_path)
        try:
            if alone and len(metadata.extras) == 1:  # `_returned` for Triton's one entry, inlined
                function, args = metadata.extras[0]
                returned = function(*args)
            else:
                returned = _returned(metadata, alone)
        except BaseException:
            hp.exit_metadata_state(t, previous)
            raise
        hp.metadata_evaluated(t)
        last = kernel.last
        try:
            types = [*map(type, returned.values())]
        except AttributeError:  # not a dict: Triton's own merge raises there
            self._finish_slowly(hp, t, metadata.data, returned, previous, None, kernel)
            return
        # The types first: the last values are plain, so `==` then compares plain values only
        # (a tensor's `==` would launch a kernel), and True == 1 == 1.0 are told apart.
        if types == last[0] and returned == last[1]:
            op, count = last[2], last[3]
        else:
            try:  # (top,) + `_metadata_key(raw_name, returned)`, inlined
                key = (top, raw_name, tuple(returned.items()), tuple(types))
                launch = hp.hooked_launches.get(key)
            except TypeError:
                key = launch = None
            if launch is None:
                self._finish_slowly(hp, t, metadata.data, returned, previous, key and key[1:], kernel)
                return
            op, count = launch
            kernel.last = (types, dict(returned), op, count)
        if count is not None and hp.tensor_metrics.capturing():  # its metrics go to each replay
            self._finish_slowly(hp, t, metadata.data, returned, previous, None, None)
            return
        hp.launch_next_in(t, previous, op, top)
        if count is not None:
            count()

    def _enter_slowly(self, hp, t, metadata, raw_name, fast: bool, alone: bool) -> None:
        """A launch of a kernel not launched under this scope since the last registry change,
        or under a state or filters."""
        state = _METADATA_STATE
        previous = hp.enter_metadata_state(t, state)
        kernel = None
        if fast:
            top = t.stack[-1]
            kernel = _KernelInScope(top, state, hp.threads.effective(t, top))
            hp.hooked_kernels[(top, raw_name)] = kernel
        try:
            returned = _returned(metadata, alone)
        except BaseException:
            hp.exit_metadata_state(t, previous)
            raise
        hp.metadata_evaluated(t)
        self._finish_slowly(hp, t, metadata.data, returned, previous, _metadata_key(raw_name, returned), kernel)

    def _finish_slowly(self, hp, t, data: dict, returned, previous, key: tuple | None,
                       kernel: _KernelInScope | None) -> None:
        """From the metadata (Triton's `data`, updated with what launch_metadata `returned`;
        the latter remembered by `key`, see `_metadata_key`) to the launch's op; remembers the
        launch for the fast path of `kernel` (None: not on the fast path) when the values are
        plain (numbers and strings)."""
        raw_name = data.get("name")
        try:
            values = data | returned  # what `metadata.get()` gives (a TypeError where Triton's does)
            name, metrics, plain = self._name_and_metrics(raw_name, values, key)
            if self._filtering and name != raw_name and not self._wanted(name):
                hp.exit_metadata_state(t, previous)
                return
            props = kernel_props.properties_of_launch(data.get("function"))
        except BaseException:
            hp.exit_metadata_state(t, previous)
            raise
        op, counters = hp.op_after_metadata_state(t, previous, name, metrics, props, _METADATA_STATE)
        if plain and key is not None and kernel is not None and counters is not None and \
                len(hp.hooked_launches) < _PARSED_MAX:
            count = _counting(counters)
            hp.hooked_launches[(kernel.scope, *key)] = (op, count)
            kernel.last = (list(key[2]), dict(returned), op, count)  # key[2]: the value types

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
                if not is_device_tensor(value):  # a device tensor is never read here (`tensor_metrics`)
                    value = to_python_value(value)  # host tensors, numpy values: plain numbers now
                metrics.append((name, tuple(value) if isinstance(value, list) else value))
        parsed = (str(values.get("name", raw_name)), tuple(metrics), plain)
        if plain and key is not None and len(self._parsed) < _PARSED_MAX:
            self._parsed[key] = parsed
        return parsed


REGISTRY.stack_marker = mark_triton_stacks
