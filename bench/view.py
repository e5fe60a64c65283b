"""lepton-view on a 200,000-node profile: load it and print `-m time/ms,tflop16/s`.

usage: python bench/view.py [--nodes N] [--keep DIR]
The profile is ROOT -> step -> layer -> kernel, kernels with Proton's kernel metrics plus flops16
and bytes from launch metadata, written as Proton writes it (JSON, indent 4, sorted keys: 135 MB).
Prints `view_s=` for that file and `view_msgpack_s=` for the same tree as hatchet MessagePack (written
with the `msgpack` package), each timed in-process through the viewer's command line
(`lepton.cli.view.main(argv)`, what `lepton-view` runs), output to memory.
"""
from __future__ import annotations

import argparse
import io
import json
import os
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "src"))

import msgpack

from lepton.cli.view import main

KERNELS = [
    "matmul_kernel", "add_kernel", "_attn_fwd", "layer_norm_fwd",
    "_ZN2at6native29vectorized_elementwise_kernelILi4ENS0_13AUnaryFunctorIfffNS0_15binary_internal10MulFunctorIfEEEESt5arrayIPcLm2EEEEviT0_T1_",
    "_ZN2at6native29vectorized_elementwise_kernelILi2ENS0_11FillFunctorIlEESt5arrayIPcLm1EEEEviT0_T1_",
]
KERNELS_PER_LAYER = len(KERNELS)
LAYERS_PER_STEP = 24


def _kernel(name: str, i: int) -> dict:
    return {"children": [], "frame": {"name": name, "type": "function"},
            "metrics": {"bytes": 4096 * (i % 97 + 1), "count": 1 + i % 3, "device_id": "0", "device_type": "CUDA",
                        "flops16": float(2**20 * (i % 13 + 1)), "time (ns)": 1000 + (i * 7919) % 50000}}


def build(nodes: int) -> list:
    """ROOT -> step_i -> layer_j -> kernels, with about `nodes` nodes in all."""
    per_step = 1 + LAYERS_PER_STEP * (1 + KERNELS_PER_LAYER)
    steps = max(1, -(-(nodes - 1) // per_step))  # at least `nodes` nodes
    counter = 0
    root_children = []
    for s in range(steps):
        layers = []
        for layer in range(LAYERS_PER_STEP):
            kernels = []
            for name in KERNELS:
                kernels.append(_kernel(name, counter))
                counter += 1
            kernels.sort(key=lambda node: node["frame"]["name"])
            layers.append({"children": kernels, "frame": {"name": f"layer_{layer}", "type": "function"}, "metrics": {}})
        layers.sort(key=lambda node: node["frame"]["name"])
        root_children.append({"children": layers, "frame": {"name": f"step_{s}", "type": "function"}, "metrics": {}})
    # Proton's writer lists children sorted by name, and so does ours.
    root_children.sort(key=lambda node: node["frame"]["name"])
    root = {"children": root_children, "frame": {"name": "ROOT", "type": "function"},
            "metrics": {"count": 0, "time (ns)": 0}}
    devices = {"CUDA": {"0": {"arch": "90", "bus_width": 5120, "clock_rate": 1980000,
                              "memory_clock_rate": 2619000, "num_sms": 132}}}
    return [root, devices]


def _to_msgpack_layout(node: dict) -> dict:
    """Proton's msgpack node order: frame, metrics, children."""
    return {"frame": node["frame"], "metrics": node["metrics"],
            "children": [_to_msgpack_layout(c) for c in node["children"]]}


def _time_view(path: str) -> float:
    out = io.StringIO()
    start = time.perf_counter()
    code = main(["-m", "time/ms,tflop16/s", "--max-nodes", "0", path], stdout=out, stderr=sys.stderr)
    elapsed = time.perf_counter() - start
    if code != 0:
        raise SystemExit(f"lepton-view failed on {path} with exit code {code}")
    return elapsed


def run(nodes: int, directory: str) -> None:
    document = build(nodes)
    json_path = os.path.join(directory, "bench.hatchet")
    with open(json_path, "w") as f:
        f.write("\n" + json.dumps(document, indent=4, sort_keys=True) + "\n")  # as Proton writes it
    msgpack_path = os.path.join(directory, "bench.hatchet_msgpack")
    with open(msgpack_path, "wb") as f:
        f.write(msgpack.packb([_to_msgpack_layout(document[0]), document[1]]))
    total = sum(1 for _ in _walk(document[0]))
    print(f"nodes={total} json_mb={os.path.getsize(json_path) / 1e6:.1f} "
          f"msgpack_mb={os.path.getsize(msgpack_path) / 1e6:.1f}")
    print(f"view_s={_time_view(json_path):.3f}")
    print(f"view_msgpack_s={_time_view(msgpack_path):.3f}")


def _walk(node: dict):
    stack = [node]
    while stack:
        current = stack.pop()
        yield current
        stack.extend(current["children"])


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--nodes", type=int, default=200_000)
    parser.add_argument("--keep", help="write the profiles here instead of a temporary directory")
    args = parser.parse_args()
    if args.keep:
        os.makedirs(args.keep, exist_ok=True)
        run(args.nodes, args.keep)
    else:
        with tempfile.TemporaryDirectory() as tmp:
            run(args.nodes, tmp)
