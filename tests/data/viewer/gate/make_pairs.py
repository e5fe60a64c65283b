"""Writes the profile pairs of `lepton-view B -diff A --fail-above PCT`'s tests: each B here is a
copy of an A of tests/data with numbers edited (run from anywhere; deterministic).

A = ../matmul_bias.hatchet (Lepton's):
- slower_kernel.hatchet: bench/unfused/8192/matmul_kernel takes 1.25x as long (ROOT: +8.1%).
- new_kernel.hatchet: bench/fused/8192 gains a softmax_kernel of 2 ms, which A does not have.
- removed_kernel.hatchet: bench/unfused/1024/add_bias_kernel is gone (the bias fused away).
A = ../../proton_3_6/threads.hatchet (Proton's):
- threads_slower.hatchet: thread_2's add_kernel takes 1152 ns instead of 864 (+33.3%).
"""
from __future__ import annotations

import copy
import json
from pathlib import Path

HERE = Path(__file__).resolve().parent
MATMUL_BIAS = HERE.parent / "matmul_bias.hatchet"
THREADS = HERE.parents[1] / "proton_3_6" / "threads.hatchet"


def child(node: dict, *names: str) -> dict:
    for name in names:
        node = next(c for c in node["children"] if c["frame"]["name"] == name)
    return node


def slower_kernel(a: list) -> list:
    b = copy.deepcopy(a)
    metrics = child(b[0], "bench", "unfused", "8192", "matmul_kernel")["metrics"]
    metrics["time (ns)"] = int(metrics["time (ns)"] * 1.25)
    return b


def new_kernel(a: list) -> list:
    b = copy.deepcopy(a)
    scope = child(b[0], "bench", "fused", "8192")
    scope["children"].append({"children": [], "frame": {"name": "softmax_kernel", "type": "function"},
                              "metrics": {"count": 100, "device_id": "0", "device_type": "CUDA",
                                          "time (ns)": 2_000_000}})
    scope["children"].sort(key=lambda c: c["frame"]["name"])
    return b


def removed_kernel(a: list) -> list:
    b = copy.deepcopy(a)
    scope = child(b[0], "bench", "unfused", "1024")
    scope["children"] = [c for c in scope["children"] if c["frame"]["name"] != "add_bias_kernel"]
    return b


def threads_slower(a: list) -> list:
    b = copy.deepcopy(a)
    child(b[0], "thread_2", "add_kernel")["metrics"]["time (ns)"] = 1152
    return b


def write(path: Path, document: list) -> None:
    path.write_text("\n" + json.dumps(document, indent=4, sort_keys=True) + "\n")


def main() -> None:
    a = json.loads(MATMUL_BIAS.read_text())
    for make in (slower_kernel, new_kernel, removed_kernel):
        write(HERE / f"{make.__name__}.hatchet", make(a))
    write(HERE / "threads_slower.hatchet", threads_slower(json.loads(THREADS.read_text())))


if __name__ == "__main__":
    main()
