"""The HTML report on a 100,000-node profile: how long lepton-view --html takes, how big the page
is, and how long headless Chromium takes to its first render (navigation start to the end of the
page's first draw of icicle, table and roofline, read from the page) and to a finished DOM dump.

    python bench/html_report.py [--nodes 100000] [--runs 3]

Needs chromium (Debian: apt-get install chromium). Prints one line per measurement.
"""
from __future__ import annotations

import argparse
import json
import random
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src"


def synthetic_profile(nodes: int, seed: int = 0) -> list:
    """A tree of `nodes` nodes: scopes 2-12 deep, about half of the nodes kernels, 2,000 distinct
    kernel names (Triton-like and mangled torch-like), flops and bytes on a third of the kernels."""
    rng = random.Random(seed)
    names = [f"kernel_{i}" for i in range(1000)] + [f"_ZN2at6native6kernelILi{i}EEEvv" for i in range(1000)]
    root = {"frame": {"name": "ROOT", "type": "function"}, "metrics": {"count": 0, "time (ns)": 0, "flops16": 0,
                                                                        "bytes": 0}, "children": []}
    scopes = [root]
    made = 1
    while made < nodes:
        parent = rng.choice(scopes[-200:] if rng.random() < 0.7 else scopes)
        if rng.random() < 0.5:
            child = {"frame": {"name": f"scope_{made}", "type": "function"}, "metrics": {}, "children": []}
            scopes.append(child)
        else:
            metrics = {"count": rng.randint(1, 50), "device_id": "0", "device_type": "CUDA",
                       "time (ns)": rng.randint(1_000, 5_000_000)}
            if rng.random() < 0.33:
                metrics.update(flops16=float(rng.randint(10**6, 10**12)), bytes=float(rng.randint(10**5, 10**10)))
            child = {"frame": {"name": rng.choice(names), "type": "function"}, "metrics": metrics, "children": []}
        parent["children"].append(child)
        made += 1
    device = {"CUDA": {"0": {"arch": "90", "bus_width": 5120, "clock_rate": 1980000, "memory_clock_rate": 2619000,
                             "num_sms": 132}}}
    return [root, device]


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--nodes", type=int, default=100_000)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    browser = shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")
    with tempfile.TemporaryDirectory() as tmp:
        profile, page = Path(tmp) / "big.hatchet", Path(tmp) / "big.html"
        profile.write_text(json.dumps(synthetic_profile(args.nodes)))
        start = time.perf_counter()
        subprocess.run([sys.executable, "-m", "lepton.viewer", str(profile), "--html", str(page)], check=True,
                       env={"PYTHONPATH": str(SRC)}, capture_output=True)
        print(f"lepton-view --html: {time.perf_counter() - start:.2f} s for {args.nodes:,} nodes, "
              f"page {page.stat().st_size / 1e6:.1f} MB")
        if browser is None:
            print("no chromium: install it (apt-get install chromium) to time the page")
            return 0
        for run in range(args.runs):
            start = time.perf_counter()
            dom = subprocess.run([browser, "--headless", "--no-sandbox", "--disable-gpu", "--window-size=1400,1000",
                                  "--dump-dom", page.as_uri() + "#selftest"], check=True, capture_output=True,
                                 text=True, timeout=300).stdout
            wall = time.perf_counter() - start
            result = json.loads(re.search(r'<pre id="selftest">(.*?)</pre>', dom, re.DOTALL).group(1))
            print(f"run {run + 1}: first render {result['renderMs']:.0f} ms after navigation start, "
                  f"{result['boxes']:,} boxes drawn, chromium start to DOM dump {wall:.2f} s, "
                  f"console errors {len(result['errors'])}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
