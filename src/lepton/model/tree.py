"""A session's calling-context tree, aggregated online and keyed by call-path id.

Memory grows with the number of distinct call paths, never with the number of kernels: a kernel
invocation only adds to the `KernelStats` of its path. The nested tree that files show is built
from this by the pure function `build_tree`.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .aggregate import sum_by_group
from .hatchet_names import DEVICE_ID, DEVICE_TYPE
from .cycles import scope_chain, scope_name, scope_sums
from .metrics import MetricKind, MetricSpec, coerce_metric_value, merge_metric, parse_metric_name
from .paths import ROOT, PathTable
from .records import AtRoot, ChildNode, CycleLaunch, KernelBatch

# Instrumented scopes' metrics. Per node (not summed over subtrees): an enclosing scope's interval
# already contains its nested scopes', and Proton writes no zero for them on ROOT either.
_CYCLE_METRICS = {k: MetricSpec(k, MetricKind.EXCLUSIVE) for k in ("cycles", "normalized_cycles", "ns", "normalized_ns")}
_DEVICE_PROPERTIES = {k: MetricSpec(k, MetricKind.NODE_PROPERTY) for k in (DEVICE_ID, DEVICE_TYPE)}
CUDA_DEVICE_TYPE = "1"  # Proton's DeviceType::CUDA, as its instrumentation tree writes it


@dataclass
class KernelStats:
    time_ns: int = 0
    count: int = 0
    device_id: int = 0
    device_type: str = "CUDA"


class TreeData:
    """One phase of one session's profile, aggregated per call path (`records.PhaseData`). Not
    thread-safe: the owning session locks."""

    def __init__(self) -> None:
        self.scopes: set[int] = set()  # paths of scopes entered while the session was active
        self.kernels: dict[int, KernelStats] = {}
        self.metrics: dict[int, dict[str, object]] = {}
        self.specs: dict[str, MetricSpec] = {}
        self.properties_set: set[int] = set()  # op nodes whose kernel properties are recorded
        # Metrics of nodes with no path id, under a path: (parent path, child name) -> metrics
        # (instruction sampling's source lines under a kernel node).
        self.child_metrics: dict[tuple[int, str], dict[str, object]] = {}
        self.cycle_devices: set[int] = set()  # devices of instrumented launches

    def copy(self) -> TreeData:
        """A copy that later additions to this one do not change (a checkpoint writes it while
        the session goes on): every container copied, each node's metrics dict and kernel stats too
        (metric values are never changed in place: `merge_metric` makes new ones)."""
        other = object.__new__(TreeData)
        for name, value in vars(self).items():
            if type(value) is dict:
                value = {key: _copied(v) for key, v in value.items()}
            elif type(value) in (set, list):
                value = type(value)(value)
            setattr(other, name, value)
        return other

    def set_properties_once(self, pid: int, properties: dict[str, object]) -> None:
        """Kernel properties do not change between launches of one compiled kernel: recorded once."""
        if pid not in self.properties_set:
            self.properties_set.add(pid)
            self.add_metrics(pid, {MetricSpec(k, MetricKind.NODE_PROPERTY): v for k, v in properties.items()})

    def add_metrics(self, pid: int, metrics: dict[str, object]) -> None:
        """Adds user metrics to the node `pid` with Proton's rules (sum, property, type checks).
        All or none: a metric that is refused (another type, another vector length) raises before
        any of the dict is recorded."""
        node = self.metrics.get(pid)
        created = node is None
        if created:
            node = self.metrics[pid] = {}
        undo = []  # (table, key, value before): recorded as it goes, put back if one is refused
        try:
            for raw, value in metrics.items():
                spec = parse_metric_name(raw)
                value = coerce_metric_value(spec.name, value, spec.kind)
                known = self.specs.get(spec.name)
                if known is None or (known.kind is not spec.kind and known.kind is MetricKind.INCLUSIVE):
                    undo.append((self.specs, spec.name, known))
                    self.specs[spec.name] = spec
                current = node.get(spec.name)
                node[spec.name] = merge_metric(spec.name, spec.kind, current, value)
                undo.append((node, spec.name, current))
        except BaseException:
            for table, key, before in reversed(undo):
                if before is None:
                    table.pop(key, None)
                else:
                    table[key] = before
            if created and not node:
                del self.metrics[pid]
            raise

    def merged(self, pid: int, metrics: dict[str, object]) -> tuple[dict, dict]:
        """What `add_metrics` would record: the node's new values and the new specs, by name;
        raises for a metric it would refuse. Changes nothing."""
        node = self.metrics.get(pid, {})
        values: dict[str, object] = {}
        specs: dict[str, MetricSpec] = {}
        for raw, value in metrics.items():
            spec = parse_metric_name(raw)
            value = coerce_metric_value(spec.name, value, spec.kind)
            known = specs.get(spec.name) or self.specs.get(spec.name)
            if known is None or (known.kind is not spec.kind and known.kind is MetricKind.INCLUSIVE):
                specs[spec.name] = spec
            current = values[spec.name] if spec.name in values else node.get(spec.name)
            values[spec.name] = merge_metric(spec.name, spec.kind, current, value)
        return values, specs

    def add_kernels(self, pids, time_ns, counts, device_ids, device_type: str) -> None:
        """Adds per-path sums (sequences of equal length, one entry per distinct kernel path)."""
        kernels = self.kernels
        for pid, t, c, d in zip(pids, time_ns, counts, device_ids):
            if c == 0:
                continue
            ks = kernels.get(pid)
            if ks is None:
                kernels[pid] = KernelStats(int(t), int(c), int(d), device_type)
            else:
                ks.time_ns += int(t)
                ks.count += int(c)
                ks.device_id = int(d)
                ks.device_type = device_type

    def add_kernel_batch(self, batch: KernelBatch, kernel_pids: np.ndarray, inverse: np.ndarray,
                         selected: np.ndarray) -> None:
        durations = batch.end_ns[selected] - batch.start_ns[selected]
        t, c, d = sum_by_group(inverse[selected], len(kernel_pids), durations, batch.device_id[selected])
        self.add_kernels(kernel_pids.tolist(), t.tolist(), c.tolist(), d.tolist(), batch.device_type)

    def add_launch_metrics(self, metrics_by_row: list[tuple[int, dict]]) -> None:
        for pid, metrics in metrics_by_row:
            plain = {k: v for k, v in metrics.items() if not isinstance(k, (ChildNode, AtRoot))}
            if plain:
                self.add_metrics(pid, plain)
            if len(plain) == len(metrics):
                continue
            for key, sub in metrics.items():
                if isinstance(key, ChildNode):
                    self.add_child_metrics(pid, key.name, sub)
                elif isinstance(key, AtRoot):
                    self.add_metrics(ROOT, sub)

    def add_child_metrics(self, pid: int, name: str, metrics: dict[str, object]) -> None:
        """Adds metrics to the child `name` of node `pid`, a node that has no path id."""
        node = self.child_metrics.setdefault((pid, name), {})
        for raw, value in metrics.items():
            spec = parse_metric_name(raw)
            value = coerce_metric_value(spec.name, value, spec.kind)
            if spec.name not in self.specs:
                self.specs[spec.name] = spec
            node[spec.name] = merge_metric(spec.name, spec.kind, node.get(spec.name), value)

    def add_scope_event(self, event) -> None:
        """Scope instances are a trace's: a tree keeps the scope's path only (`scopes`)."""

    def add_cycle_launch(self, launch: CycleLaunch, paths: PathTable) -> None:
        """Adds an instrumented launch: its kernel node `launch.kernel_pid` and, under it, a node per
        scope that recorded intervals, nested as `launch.scope_parents` says, with Proton's metrics
        `cycles` (end - start summed over every warp and CTA) and `normalized_cycles` (cycles per
        warp per CTA: cycles / (num_units x num_ctas)), and the same two in nanoseconds, `ns` and
        `normalized_ns` (each CTA's cycles converted with its own globaltimer rate: see
        `model.cycles`). Launches of one kernel on one path add up, as in Proton."""
        self.scopes.add(launch.kernel_pid)
        self.cycle_devices.add(launch.device_id)
        sums = launch.sums if launch.sums is not None else scope_sums(launch.events)
        if not sums.scope_ids:
            return
        warps = max(sums.warps, 1)
        device = {DEVICE_ID: str(launch.device_id), DEVICE_TYPE: CUDA_DEVICE_TYPE}
        for scope_id, cycles, ns in zip(sums.scope_ids, sums.cycles, sums.ns):
            pid = launch.kernel_pid
            for sid in scope_chain(launch, scope_id):
                pid = paths.child(pid, scope_name(launch, sid))
                self.scopes.add(pid)
            self.add_metrics(pid, {_CYCLE_METRICS["cycles"]: cycles,
                                   _CYCLE_METRICS["normalized_cycles"]: cycles / warps,
                                   _CYCLE_METRICS["ns"]: round(ns),
                                   _CYCLE_METRICS["normalized_ns"]: ns / warps})
            self.add_metrics(pid, {_DEVICE_PROPERTIES[k]: v for k, v in device.items()})

    def device_ids(self) -> set[int]:
        return {k.device_id for k in self.kernels.values()} | self.cycle_devices



def _copied(value):
    if type(value) is dict:
        return dict(value)
    if type(value) is KernelStats:
        return KernelStats(value.time_ns, value.count, value.device_id, value.device_type)
    return value


@dataclass
class Node:
    """A node of the built tree. `kernel` is set on kernel nodes; `metrics` holds user metrics."""

    name: str
    pid: int
    children: dict[str, Node] = field(default_factory=dict)
    kernel: KernelStats | None = None
    metrics: dict[str, object] = field(default_factory=dict)

    def walk(self):
        """This node and every descendant, parents before children, children in insertion order.
        Iterative (an explicit stack), so depth is bounded by memory, not by the recursion limit."""
        stack = [self]
        while stack:
            node = stack.pop()
            yield node
            if node.children:
                stack.extend(reversed(node.children.values()))

    def total_kernel_time_ns(self) -> int:
        return sum(n.kernel.time_ns for n in self.walk() if n.kernel is not None)

    def self_check(self) -> None:
        """Asserts the invariants every built tree has: unique child names, and at every node,
        inclusive kernel time (`total_kernel_time_ns`) = own + children's inclusive times.

        Linear, where calling `total_kernel_time_ns` at every node would be quadratic in depth: in
        `walk()` order a node's subtree is the run of nodes that follows it, so its inclusive time is
        a difference of prefix sums over that order."""
        order = list(self.walk())
        index = {id(n): i for i, n in enumerate(order)}
        assert len(index) == len(order), "a node is reachable along two paths"
        prefix = [0]
        for n in order:
            prefix.append(prefix[-1] + (n.kernel.time_ns if n.kernel else 0))
        end = [0] * len(order)  # one past the last node of each subtree, in walk order
        for i in range(len(order) - 1, -1, -1):
            node = order[i]
            children = [index[id(c)] for c in node.children.values()]
            end[i] = end[children[-1]] if children else i + 1
            for name, child in node.children.items():
                assert child.name == name, (child.name, name)
            inclusive = prefix[end[i]] - prefix[i]
            own = node.kernel.time_ns if node.kernel else 0
            assert inclusive == own + sum(prefix[end[c]] - prefix[c] for c in children), node.name


def build_tree(paths: PathTable, data: TreeData) -> Node:
    """The nested tree of `data`: every path it mentions, with all ancestors, under ROOT."""
    root = Node(paths.name[ROOT], ROOT)
    nodes = {ROOT: root}

    def node_of(pid: int) -> Node:
        """The node of `pid`, created with every missing ancestor (a loop, not recursion: scopes
        nest thousands deep)."""
        n = nodes.get(pid)
        if n is not None:
            return n
        missing = []
        while n is None:
            missing.append(pid)
            pid = paths.parent[pid]
            n = nodes.get(pid)
        for pid in reversed(missing):
            name = paths.name[pid]
            child = n.children.get(name)
            if child is None:
                child = n.children[name] = Node(name, pid)
            nodes[pid] = n = child
        return n

    for pid in data.scopes:
        node_of(pid)
    for pid, ks in data.kernels.items():
        node_of(pid).kernel = ks
    for pid, metrics in data.metrics.items():
        node_of(pid).metrics.update(metrics)
    for (pid, name), metrics in data.child_metrics.items():
        parent = node_of(pid)
        child = parent.children.get(name)
        if child is None:
            child = parent.children[name] = Node(name, -1)
        child.metrics.update(metrics)
    return root
