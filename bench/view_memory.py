"""lepton-view's wall time and peak memory on a 1M-node, depth-5,000 profile (issue 21).

usage: python bench/view_memory.py [--nodes N] [--depth D] [--keep DIR] [--src DIR] [--timeout S]

The profile is ROOT -> chain_i -> scope_1 -> ... -> scope_D, each scope with one kernel leaf beside
the next scope (kernels carry count, time and device metrics), about N nodes in all. It is written
both as hatchet MessagePack (Proton's node order: frame, metrics, children) and as hatchet JSON with
sorted keys but no indentation (indent 4, as Proton writes it, would put 40 KB of spaces on each line
5,000 levels down). Both are built iteratively: no serialiser nests 5,000 levels.

Each case runs `python -m lepton.viewer FILE ARGS` (the `lepton-view` command) from the sources in
--src (default: this checkout's src/) under `/usr/bin/time -v`, stdout counted and discarded, and
prints one line: case, exit code, wall seconds, peak RSS in MB, output MB and lines, and the last
stderr line when it is not empty. Not a timed test: numbers depend on the machine.
"""
from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
import time

import msgpack

HERE = os.path.dirname(os.path.abspath(__file__))
KERNEL_METRICS = {"count": 1, "device_id": "0", "device_type": "CUDA", "time (ns)": 0}
DEVICES = {"CUDA": {"0": {"arch": "90", "bus_width": 5120, "clock_rate": 1980000,
                          "memory_clock_rate": 2619000, "num_sms": 132}}}
ROOT_METRICS = {"count": 0, "time (ns)": 0}
CASES = [("msgpack", ["-d", "10000"]), ("json", ["-d", "10000"]), ("msgpack", []),
         ("msgpack", ["-d", "10000", "--output", "csv"])]
CHUNK_LEVELS = 1000  # levels of one chain written per file.write


def shape(nodes: int, depth: int) -> tuple[int, int]:
    """(chains, levels per chain): every level is a scope plus its kernel."""
    chains = max(1, nodes // (2 * depth))
    return chains, max(1, min(depth, (nodes - 1) // (2 * chains)))


def _kernel(level: int) -> dict:
    return {**KERNEL_METRICS, "time (ns)": 1000 + (level * 7919) % 50000}


def write_msgpack(path: str, chains: int, levels: int) -> None:
    packer = msgpack.Packer()
    kernel_frame = {"name": "kernel", "type": "function"}

    def node_head(name: str, metrics: dict, children: int) -> bytes:
        return (packer.pack_map_header(3) + packer.pack("frame") + packer.pack({"name": name, "type": "function"})
                + packer.pack("metrics") + packer.pack(metrics) + packer.pack("children")
                + packer.pack_array_header(children))

    with open(path, "wb") as f:
        f.write(packer.pack_array_header(2) + node_head("ROOT", ROOT_METRICS, chains))
        for c in range(chains):
            f.write(node_head(f"chain_{c:05d}", {}, 1))
            parts = []
            for level in range(levels):
                last = level == levels - 1
                parts.append(node_head(f"scope_{level:05d}", {}, 1 if last else 2))
                parts.append(packer.pack({"frame": kernel_frame, "metrics": _kernel(level), "children": []}))
                if len(parts) >= 2 * CHUNK_LEVELS:
                    f.write(b"".join(parts))
                    parts.clear()
            f.write(b"".join(parts))
        f.write(packer.pack(DEVICES))


def write_json(path: str, chains: int, levels: int) -> None:
    """Sorted keys (children, frame, metrics), so each scope's frame comes after its subtree."""
    import json

    def dumps(value) -> str:
        return json.dumps(value, sort_keys=True, separators=(",", ":"))

    def tail(name: str, metrics: dict) -> str:
        return f'],"frame":{dumps({"name": name, "type": "function"})},"metrics":{dumps(metrics)}}}'

    def kernel(level: int) -> str:
        return f'{{"children":[{tail("kernel", _kernel(level))}'

    with open(path, "w") as f:
        f.write('[{"children":[')
        for c in range(chains):
            f.write(("," if c else "") + '{"children":[')
            parts = []
            for level in range(levels):
                parts.append('{"children":[' + kernel(level) + ("" if level == levels - 1 else ","))
                if len(parts) >= CHUNK_LEVELS:
                    f.write("".join(parts))
                    parts.clear()
            f.write("".join(parts))
            closings = [tail(f"scope_{level:05d}", {}) for level in reversed(range(levels))]
            f.write("".join(closings) + tail(f"chain_{c:05d}", {}))
        f.write(tail("ROOT", ROOT_METRICS) + "," + dumps(DEVICES) + "]\n")


def run_case(path: str, args: list[str], src: str, timeout: float) -> dict:
    env = {**os.environ, "PYTHONPATH": src}
    command = ["/usr/bin/time", "-v", sys.executable, "-m", "lepton.viewer", path, *args]
    start = time.perf_counter()
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    out_bytes = out_lines = 0
    try:
        deadline = start + timeout
        while chunk := process.stdout.read(1 << 20):
            out_bytes += len(chunk)
            out_lines += chunk.count(b"\n")
            if time.perf_counter() > deadline:
                raise subprocess.TimeoutExpired(command, timeout)
        stderr = process.stderr.read().decode(errors="replace")
        code = process.wait()
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()
        return {"exit": "timeout", "wall_s": timeout, "peak_mb": float("nan"), "out_mb": out_bytes / 1e6,
                "lines": out_lines, "last": f"killed after {timeout:.0f} s"}
    peak_kb = re.search(r"Maximum resident set size \(kbytes\): (\d+)", stderr)
    wall = re.search(r"Elapsed \(wall clock\) time \(h:mm:ss or m:ss\): (\S+)", stderr)
    ours = [line for line in stderr.splitlines() if line and not line.startswith("\t")
            and not line.startswith("Command ")]
    return {"exit": code, "wall_s": _seconds(wall.group(1)) if wall else float("nan"),
            "peak_mb": int(peak_kb.group(1)) / 1024 if peak_kb else float("nan"),
            "out_mb": out_bytes / 1e6, "lines": out_lines, "last": ours[-1] if ours else ""}


def _seconds(clock: str) -> float:
    """'1:02.5' or '1:02:03' (h:mm:ss) -> seconds."""
    total = 0.0
    for part in clock.split(":"):
        total = total * 60 + float(part)
    return total


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--nodes", type=int, default=1_000_000)
    parser.add_argument("--depth", type=int, default=5000)
    parser.add_argument("--keep", help="write the profiles here instead of a temporary directory")
    parser.add_argument("--src", default=os.path.join(HERE, "..", "src"),
                        help="the lepton sources to run (another checkout's src/ to compare)")
    parser.add_argument("--timeout", type=float, default=600, help="seconds per case")
    args = parser.parse_args()
    if args.keep:
        os.makedirs(args.keep, exist_ok=True)
        bench(args, args.keep)
    else:
        with tempfile.TemporaryDirectory() as tmp:
            bench(args, tmp)


def bench(args: argparse.Namespace, directory: str) -> None:
    chains, levels = shape(args.nodes, args.depth)
    paths = {"msgpack": os.path.join(directory, "deep.hatchet_msgpack"),
             "json": os.path.join(directory, "deep.hatchet")}
    write_msgpack(paths["msgpack"], chains, levels)
    write_json(paths["json"], chains, levels)
    nodes = 1 + chains * (1 + 2 * levels)
    print(f"nodes={nodes} depth={levels + 1} msgpack_mb={os.path.getsize(paths['msgpack']) / 1e6:.1f} "
          f"json_mb={os.path.getsize(paths['json']) / 1e6:.1f}", flush=True)
    for kind, view_args in CASES:
        result = run_case(paths[kind], view_args, os.path.abspath(args.src), args.timeout)
        case = " ".join([kind, *view_args]) or kind
        print(f"case='{case}' exit={result['exit']} wall_s={result['wall_s']:.1f} peak_mb={result['peak_mb']:.0f} "
              f"out_mb={result['out_mb']:.1f} lines={result['lines']} stderr_last={result['last'][:160]!r}",
              flush=True)


if __name__ == "__main__":
    main()
