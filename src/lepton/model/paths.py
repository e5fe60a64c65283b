"""Call-path interning: every distinct path from ROOT gets one small integer id.

A path id stands for a whole path (`ROOT/outer/inner`), not a leaf name, so that one integer in a
thread's time line identifies exactly where a kernel was launched. Path ids are
process-global and shared by every session; each session keeps its metrics keyed by path id.

Interning is lock-free for paths already seen (a dict read is atomic under the GIL) and takes a lock
only to create a new path, which happens once per distinct call path.
"""
from __future__ import annotations

import threading

from .hatchet_names import LAUNCH_METADATA_SCOPE

ROOT = 0
ROOT_NAME = "ROOT"
# The node under a replay's scope where a CUDA graph's replayed kernels sit, each under the scopes
# it was captured in (Proton's `GraphState::captureTag`).
CAPTURED_AT = "<captured_at>"
# The node GPU work for launch metadata and metric values runs under (Proton's
# `COMPUTE_METADATA_SCOPE_NAME`), below the scope or launch it is for; the viewer hides it.
METADATA_NODE = LAUNCH_METADATA_SCOPE
# Not a path: a thread marks it while Lepton itself launches GPU work (`HotPath.internal`); the CUPTI
# collector drops the kernels launched there, which no profile must show. Far above any path id,
# never negative (negative marks are one-shot pairs).
INTERNAL = 1 << 62


class PathTable:
    """Append-only table of call paths: id -> (parent id, name)."""

    def __init__(self) -> None:
        self._ids: dict[tuple[int, str], int] = {}
        self.parent: list[int] = [-1]
        self.name: list[str] = [ROOT_NAME]
        # Op paths: a launch-hook node that *is* the kernel (renamed by launch metadata), so a kernel
        # whose parent path is an op lands on it instead of under it.
        self.ops: set[int] = set()
        self._stacks: dict[int, tuple[str, ...]] = {}  # pid -> `call_stack(pid)`, built once
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self.name)

    def child(self, parent: int, name: str) -> int:
        """The id of `parent/name`, created on first use. Safe from any thread."""
        key = (parent, name)
        pid = self._ids.get(key)
        if pid is not None:
            return pid
        with self._lock:
            pid = self._ids.get(key)
            if pid is None:
                pid = len(self.name)
                # Append before publishing the id, so that a reader who sees the id sees the entry.
                self.parent.append(parent)
                self.name.append(name)
                self._ids[key] = pid
        return pid

    def op(self, parent: int, name: str) -> int:
        """The id of the op node `parent/name` (see `ops`)."""
        pid = self.child(parent, name)
        self.ops.add(pid)
        return pid

    def extend(self, parent: int, names) -> int:
        """The id of `parent/names[0]/names[1]/...`."""
        for n in names:
            parent = self.child(parent, n)
        return parent

    def names_of(self, pid: int) -> list[str]:
        """The names from below ROOT down to `pid` (ROOT itself excluded)."""
        out = []
        while pid > ROOT:
            out.append(self.name[pid])
            pid = self.parent[pid]
        out.reverse()
        return out

    def call_stack(self, pid: int) -> tuple[str, ...]:
        """ROOT and the names down to `pid`, built once per path: the table only grows, and an
        instrumented launch asks at every launch."""
        stack = self._stacks.get(pid)
        if stack is None:
            stack = self._stacks[pid] = (ROOT_NAME, *self.names_of(pid))
        return stack

    def ancestors(self, pid: int):
        """`pid` and every ancestor up to, not including, ROOT."""
        while pid > ROOT:
            yield pid
            pid = self.parent[pid]
