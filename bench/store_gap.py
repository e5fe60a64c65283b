"""The `store` gap (docs/design.md, "The store gap"): why Lepton's `store` cycles read about half of
Proton's on the fixture kernel. GPU machine only; about a minute.

Each variant runs in a fresh process with the same prelude (the fixture's tensors, no warm-up, as
tests/gpu/test_instrumentation.py), compiles the fixture kernel inside its session and launches it
five times with `enable_host_buffer` on, keeping every launch's raw buffer:
  cold (the first launch, right after compiling), repeat1, repeat2, flushed (after writing 256 MiB,
  which evicts x and y from L2), warm (right after a kernel that read x and y).
Variants:
  proton            Proton 3.6, its default mode
  lepton            Lepton, its default mode (buffer sized to the kernel's records)
  lepton8k          Lepton with mode default:buffer_size=8192 (Proton's buffer: the same passes and
                    options, so the same code is expected)
  proton_arena      Proton, its scratch cut from one 64 MiB tensor (where Lepton's arena puts it)
  lepton_torch      Lepton, its scratch a torch.empty per launch (where Proton's allocator puts it)
The parent then decodes every buffer with Lepton's decoder, checks each profile's tree against the
decoded sums of the same buffers (a decoder difference shows there), prints per-warp START/END of
the cold launch side by side, the kernels' record-op placement (TTGIR, PTX, SASS where cuobjdump is
found) and a conclusion table. Everything goes to --out.

usage:  PYTHONPATH=src python bench/store_gap.py [--out store_gap_out] [--variants proton,lepton,...]
        python bench/store_gap.py --child VARIANT OUT      (internal)
"""
from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

LAUNCHES = ("cold", "repeat1", "repeat2", "flushed", "warm")
VARIANTS = ("proton", "lepton", "lepton8k", "proton_arena", "lepton_torch")
MODES = {"lepton8k": "default:buffer_size=8192"}
SKELETON_PTX = re.compile(r"%clock|globaltimer|ld\.global|st\.global|ld\.shared|st\.shared|add\.f32"
                          r"|bar\.|membar|fence")
SKELETON_SASS = re.compile(r"SR_CLOCK|SR_GLOBALTIMER|CS2R|LDG|STG|LDS|STS|FADD|BAR|MEMBAR|EXIT")


# -- the child: one variant, one process ----------------------------------------------------------------
def child(variant: str, out: Path) -> None:
    import torch
    import triton
    import triton.language as tl
    import triton.profiler.language as pl

    pl.enable_semantic("triton")

    @triton.jit
    def ikernel(x, y, z, n, BLOCK: tl.constexpr):  # the fixture's kernel (tests/data/proton_3_6)
        pl.enter_scope("load")
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        m = offs < n
        a = tl.load(x + offs, mask=m)
        b = tl.load(y + offs, mask=m)
        pl.exit_scope("load")
        with pl.scope("store"):
            tl.store(z + offs, a + b, mask=m)

    x, y = torch.randn(4096, device="cuda"), torch.randn(4096, device="cuda")
    z, tmp = torch.empty_like(x), torch.empty_like(x)
    flush = torch.empty(256 << 20, dtype=torch.uint8, device="cuda")
    prepare = {"flushed": lambda: flush.fill_(1), "warm": lambda: torch.add(x, y, out=tmp)}
    prof = _profiler(variant)
    hook = prof.hooks.InstrumentationHook
    hook.enable_host_buffer = True
    prof.start(str(out / variant), backend="instrumentation", mode=MODES.get(variant))
    _place_scratch(variant)
    for label in LAUNCHES:
        if label in prepare:
            prepare[label]()
            torch.cuda.synchronize()
        k = ikernel[(4,)](x, y, z, x.numel(), BLOCK=1024)
        hook.host_buffer.numpy().tofile(out / f"{variant}.{label}.bin")
    correct = bool(torch.allclose(z, x + y))
    hook.enable_host_buffer = False
    prof.finalize()
    _dump_kernel(k, variant, out, correct)


def _profiler(variant: str):
    if variant.startswith("proton"):
        import triton.profiler as prof
    else:
        import lepton as prof
    return prof


def _place_scratch(variant: str) -> None:
    """Swaps where the scratch buffers live, for the two crossed variants."""
    import torch

    if variant == "proton_arena":
        from triton.runtime import _allocation

        protons = _allocation._profile_allocator.get()  # Proton's CudaAllocator, set by start()
        if not hasattr(protons, "instrumentation_hook"):
            raise RuntimeError(f"proton_arena: the profile allocator after start() is {protons!r}, "
                               "not Proton's")
        chunk = torch.empty(64 << 20, dtype=torch.uint8, device="cuda")

        def from_chunk(size: int, alignment: int, stream):
            buffer = chunk[:-(-size // alignment) * alignment]
            protons.instrumentation_hook.buffer = buffer  # what Proton's exit hook reads
            return buffer

        _allocation.set_profile_allocator(from_chunk)
    elif variant == "lepton_torch":
        from lepton.runtime.registry import REGISTRY

        REGISTRY.backends["instrumentation"].scratch = \
            lambda n: torch.empty((-(-n // 128) * 128,), dtype=torch.uint8, device="cuda")


def _dump_kernel(k, variant: str, out: Path, correct: bool) -> None:
    import torch

    for key in ("ttgir", "llir", "ptx", "sass"):
        try:
            (out / f"{variant}.{key}").write_text(str(k.asm[key]))
        except Exception as e:  # sass needs cuobjdump; the others are always there
            (out / f"{variant}.{key}").write_text(f"unavailable: {e}")
    md = k.metadata
    meta = {"profile_scratch_size": md.profile_scratch_size, "shared": md.shared, "num_warps": md.num_warps,
            "device": torch.cuda.get_device_name(), "correct": correct}
    (out / f"{variant}.json").write_text(json.dumps(meta))


# -- the parent: run the variants, decode, compare -------------------------------------------------------
def run_variant(variant: str, out: Path) -> bool:
    t0 = time.time()
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    with open(out / f"{variant}.log", "w") as log:
        p = subprocess.run([sys.executable, __file__, "--child", variant, str(out)], stdout=log,
                           stderr=subprocess.STDOUT, env=env, timeout=300, check=False)
    print(f"{variant}: rc={p.returncode} in {time.time() - t0:.1f} s (log: {out / variant}.log)")
    return p.returncode == 0


def decoded(out: Path, variant: str) -> dict:
    """{launch label: LaunchEvents} of a variant's raw buffers, decoded by Lepton."""
    from lepton.backends.instrumentation.decode import decode_launch
    from lepton.backends.instrumentation.host_buffer import read_host_buffer

    events = {}
    for label in LAUNCHES:
        hb = read_host_buffer(np.fromfile(out / f"{variant}.{label}.bin", np.uint8))
        events[label] = decode_launch(hb.payload, hb.scratch_size, hb.num_warps)
    return events


def scope_names(out: Path, variant: str) -> dict[int, str]:
    from lepton.backends.instrumentation.hook import _scopes

    return _scopes(str(out / f"{variant}.ttgir"))[0]


def sums(ev, names: dict[int, str]) -> dict[str, int]:
    return {name: int((ev.end_cycle - ev.start_cycle)[ev.scope == sid].sum()) for sid, name in names.items()}


def sm_ghz(ev) -> float:
    """The median over CTAs of (cycles from first START to last END) / (globaltimer from the CTA's
    start to its finalize): a lower bound of the SM clock during the launch."""
    rates = []
    for i in range(ev.num_ctas):
        mine = ev.cta_index == i
        span_ns = ev.pre_final_ns[i] - ev.init_ns[i]
        if mine.any() and span_ns > 0:
            rates.append((ev.end_cycle[mine].max() - ev.start_cycle[mine].min()) / span_ns)
    return float(np.median(rates)) if rates else float("nan")


def tree_cycles(path: Path) -> dict[str, int]:
    """{scope: cycles} under the `ikernel` node of a hatchet file."""
    root = json.loads(path.read_text())[0]
    stack = [root]
    while stack:
        node = stack.pop()
        if node["frame"]["name"] == "ikernel":
            return {c["frame"]["name"]: int(c["metrics"].get("cycles", 0)) for c in node["children"]}
        stack.extend(node["children"])
    return {}


def skeleton(text: str, pattern: re.Pattern) -> list[str]:
    return [" ".join(line.split()) for line in text.splitlines() if pattern.search(line)]


def normalized_ptx(text: str) -> list[str]:
    """PTX without comments, debug lines and blank lines: what must match for the same code."""
    keep = []
    for line in text.splitlines():
        line = line.split("//")[0].strip()
        if line and not line.startswith((".loc", ".file", ".section", "$L__", ".b8", ".b32", ".b64")):
            keep.append(line)
    return keep


def print_table(header: list[str], rows: list[list], out_lines: list[str]) -> None:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    for line in lines:
        print(line)
    out_lines.extend(lines + [""])
    print()


def warp_rows(ev, names: dict[int, str], ctas=(0, 1)) -> list[list]:
    """Per (CTA, warp) of `ctas`: each scope's START..END relative to the CTA's first record."""
    rows = []
    for cta in ctas:
        mine = ev.cta == cta
        if not mine.any():
            continue
        base = int(ev.start_cycle[mine].min())
        for unit in sorted(set(ev.unit[mine].tolist())):
            row = [cta, unit]
            for sid in sorted(names):
                sel = np.flatnonzero(mine & (ev.unit == unit) & (ev.scope == sid))
                if len(sel):
                    s, e = int(ev.start_cycle[sel[0]]) - base, int(ev.end_cycle[sel[0]]) - base
                    row.append(f"{s}..{e} ({e - s})")
                else:
                    row.append("-")
            rows.append(row)
    return rows


def compare(out: Path, variants: list[str]) -> None:
    report: list[str] = []
    names = {v: scope_names(out, v) for v in variants}
    events = {v: decoded(out, v) for v in variants}
    meta = {v: json.loads((out / f"{v}.json").read_text()) for v in variants}
    print(f"device: {meta[variants[0]]['device']}\n")
    report.append(f"device: {meta[variants[0]]['device']}\n")

    # 1. Each profile's tree against Lepton's decoding of the very buffers of its launches.
    rows = []
    for v in variants:
        tree = tree_cycles(out / f"{v}.hatchet")
        mine = {s: sum(sums(events[v][lab], names[v])[s] for lab in LAUNCHES) for s in ("load", "store")}
        rows.append([v, tree.get("load"), mine["load"], tree.get("store"), mine["store"],
                     "yes" if all(tree.get(s) == mine[s] for s in mine) else "NO"])
    print("Each profile's tree (sum of its 5 launches) against Lepton's decoder on the same raw buffers:")
    print_table(["variant", "tree load", "decoded load", "tree store", "decoded store", "equal"], rows,
                report)

    # 2. Per launch: cycles per scope, per warp, SM clock.
    rows = []
    for v in variants:
        for lab in LAUNCHES:
            ev = events[v][lab]
            s = sums(ev, names[v])
            warps = ev.num_ctas * ev.num_units
            rows.append([v, lab, s["load"], s["store"], f"{s['store'] / warps:.0f}", f"{sm_ghz(ev):.2f}",
                         len(ev.warnings)])
    print("Per launch, decoded by Lepton (store/warp = store cycles / 16 warps; GHz: a lower bound):")
    print_table(["variant", "launch", "load", "store", "store/warp", "SM GHz >=", "warnings"], rows, report)

    # 3. The cold launch, warp by warp: Proton's buffer and Lepton's.
    for v in [w for w in ("proton", "lepton") if w in variants]:
        print(f"{v}, cold launch, cycles from the CTA's first record (duration):")
        header = ["CTA", "warp", *[names[v][i] for i in sorted(names[v])]]
        print_table(header, warp_rows(events[v]["cold"], names[v]), report)

    # 4. The kernels: sizes and where the record ops sit.
    base = "proton" if "proton" in variants else variants[0]
    base_ptx = normalized_ptx((out / f"{base}.ptx").read_text())
    rows = []
    for v in variants:
        ptx = normalized_ptx((out / f"{v}.ptx").read_text())
        differ = sum(a != b for a, b in zip(ptx, base_ptx)) + abs(len(ptx) - len(base_ptx))
        same = "same" if differ == 0 else f"{differ} lines differ"
        rows.append([v, meta[v]["profile_scratch_size"], meta[v]["shared"], meta[v]["num_warps"], same,
                     meta[v]["correct"]])
    print(f"Kernels (PTX compared with {base}'s, comments and debug lines dropped):")
    print_table(["variant", "profile_scratch_size", "shared", "num_warps", "PTX", "z correct"], rows, report)
    for kind, pattern in (("ttgir", re.compile(r"proton\.record|tt\.load|tt\.store|arith\.addf")),
                          ("ptx", SKELETON_PTX), ("sass", SKELETON_SASS)):
        for v in variants:
            lines = skeleton((out / f"{v}.{kind}").read_text(), pattern)
            (out / f"{v}.{kind}.skeleton.txt").write_text("\n".join(lines) + "\n")
        print(f"{kind} record placement, {base} | lepton (first 40 lines; full: *.{kind}.skeleton.txt):")
        left = (out / f"{base}.{kind}.skeleton.txt").read_text().splitlines()
        right = (out / f"lepton.{kind}.skeleton.txt").read_text().splitlines() if "lepton" in variants else []
        for i in range(min(40, max(len(left), len(right)))):
            a = left[i] if i < len(left) else ""
            b = right[i] if i < len(right) else ""
            print(f"  {a[:70]:<70} | {b[:70]}")
        print()

    conclude(events, names, variants, report)
    (out / "report.md").write_text("\n".join(report) + "\n")
    print(f"raw buffers, IR and report.md in {out}")


def conclude(events, names, variants, report) -> None:
    """The ratios that tell the hypotheses apart (docs/design.md, "The store gap")."""
    def store(v, lab):
        return sums(events[v][lab], names[v])["store"] if v in events else None

    def ratio(a, b):
        return f"{a / b:.2f}" if a and b else "-"

    rows = []
    for lab in LAUNCHES:
        p, lep, l8, pa, lt = (store(v, lab) for v in VARIANTS)
        rows.append([lab, p, lep, ratio(lep, p), l8, ratio(l8, p), pa, ratio(pa, p), lt, ratio(lt, lep)])
    print("Conclusion: store cycles per launch and the ratios (1.00 = no gap):")
    print_table(["launch", "proton", "lepton", "lepton/proton", "lepton8k", "l8k/proton", "proton_arena",
                 "arena/proton", "lepton_torch", "torch/lepton"], rows, report)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default="store_gap_out")
    ap.add_argument("--variants", default=",".join(VARIANTS))
    ap.add_argument("--child", nargs=2, metavar=("VARIANT", "OUT"))
    a = ap.parse_args()
    if a.child:
        child(a.child[0], Path(a.child[1]))
        return
    out = Path(a.out).resolve()
    out.mkdir(parents=True, exist_ok=True)
    ran = [v for v in a.variants.split(",") if run_variant(v, out)]
    if ran:
        compare(out, ran)


if __name__ == "__main__":
    main()
