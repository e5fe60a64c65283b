"""Per-line instruction samples of Lepton, Proton and Nsight Compute, side by side (GPU machine).

For each kernel, in its own child process per tool: Lepton's `mode=PCSampling(interval=1024)` and
Proton's `mode.PCSampling()` (Proton always samples every 2^10 cycles) over `--launches` launches,
and `ncu` with its warp sampling at the same period (`--warp-sampling-interval 5`: ncu samples every
2^(5+5) cycles) over `--ncu-launches` (20) launches after 5 skipped, clocks and caches left alone as
the other two leave them. Each source line's share of the kernel's samples is printed per tool, one
markdown table per kernel, and written to OUT/<key>_<kernel>.md (all tables: OUT/summary.md).

Kernels: a = `work` (in_kernel.py's workload: 4096 blocks, 200-iteration loop, BLOCK=1024),
b = `matmul_kernel` (2048^3 fp16, 128x128x64 tiles), c = `softmax_kernel` (rows of 8192x4096 fp32),
the last two in ncu_kernels.py. Raw material for a parse to be fixed by hand is kept in OUT: the
hatchet files, each child's output (`<key>_<tool>.log`), ncu's report and its source page in three
views (`<key>_ncu_<view>.csv`), and `<key>_ncu_head.txt` (each view's first 15 lines and totals).

usage:  PYTHONPATH=src python bench/ncu_lines.py [--only a,b,c] [--launches 200] [--ncu-launches 20]
                                                 [--tools lepton,proton,ncu] [--out ncu_lines_out]
        python bench/ncu_lines.py --child TOOL KEY LAUNCHES PATH     (internal; TOOL = lepton|proton|none)
"""
from __future__ import annotations

import argparse
import csv
import json
import linecache
import os
import re
import subprocess
import sys
from collections import defaultdict
from dataclasses import dataclass, field

BENCH = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.join(BENCH, "..", "src")
# key -> (kernel name, the file that defines it)
KERNELS = {"a": ("work", "in_kernel.py"), "b": ("matmul_kernel", "ncu_kernels.py"),
           "c": ("softmax_kernel", "ncu_kernels.py")}
NCU_SKIP = 5
NCU_INTERVAL = 5  # ncu samples every 2^(5 + v) cycles: 2^10 = Lepton's 1024, Proton's fixed period
NCU_VIEWS = ("cuda", "cuda,sass", "sass")
SHOWN_PCT = 0.5  # lines under this share in every tool are summed into one row
_LINE_COLUMNS = ("line no", "line no.", "line", "line number", "source line", "#")  # the first is 2025.3's
_LINE_NODE = re.compile(r"^(?P<file>.+):(?P<line>\d+)@(?P<function>.+)$")

Key = tuple[str, int]  # (file's base name, line)


@dataclass
class LineSamples:
    """One tool's samples of one kernel: per source line, and those with no line."""
    lines: dict[Key, float] = field(default_factory=lambda: defaultdict(float))
    no_line: float = 0.0
    paths: dict[str, str] = field(default_factory=dict)  # base name -> a full path, to read lines from

    @property
    def total(self) -> float:
        return self.no_line + sum(self.lines.values())

    def share(self, key: Key | None) -> float:
        """Percent of the kernel's samples on `key` (None: on no line)."""
        part = self.no_line if key is None else self.lines.get(key, 0.0)
        return 100.0 * part / self.total if self.total else 0.0


# ---- hatchet (Lepton, Proton) ------------------------------------------------------------------

def _is_kernel(node: dict, kernel: str) -> bool:
    name = node["frame"]["name"]
    if name == kernel or name.split("(")[0] == kernel:
        return True
    return any((m := _LINE_NODE.match(c["frame"]["name"])) and m["function"] == kernel
               for c in node.get("children", ()))


def hatchet_line_samples(document, kernel: str) -> LineSamples:
    """Samples per line of `kernel` in a hatchet document (`[tree, devices]` or the tree): its nodes'
    line children `<dir>/<file>:<line>@<function>`, and their own `num_samples` as no line; summed
    over every call path that launched it."""
    out = LineSamples()
    stack = [document[0] if isinstance(document, list) else document]
    while stack:
        node = stack.pop()
        children = node.get("children", ())
        if not _LINE_NODE.match(node["frame"]["name"]) and _is_kernel(node, kernel):
            out.no_line += node.get("metrics", {}).get("num_samples", 0)
            for child in children:
                if m := _LINE_NODE.match(child["frame"]["name"]):
                    base = os.path.basename(m["file"])
                    out.lines[(base, int(m["line"]))] += child.get("metrics", {}).get("num_samples", 0)
                    out.paths.setdefault(base, m["file"])
        stack.extend(c for c in children if not _LINE_NODE.match(c["frame"]["name"]))
    return out


# ---- ncu's source page ---------------------------------------------------------------------------

def _number(cell: str) -> float:
    """A count as ncu prints it: thousands separated by commas (LC_ALL=C), '-' or '' for none."""
    text = cell.strip().replace(",", "").replace("\u00a0", "").replace(" ", "")
    try:
        return float(text)
    except ValueError:
        return 0.0


@dataclass
class _Columns:
    samples: int
    line: int | None  # "Line No" (cuda views)
    address: int | None  # "Address" (views with SASS)
    text: int | None  # the first "Source": the source line's text in the cuda views

    @classmethod
    def of(cls, row: list[str]) -> _Columns | None:
        """The columns of a header row, or None if `row` is not one (it has no all-samples column)."""
        names = [c.strip() for c in row]
        samples = next((i for i, n in enumerate(names) if "Warp Stall Sampling (All" in n), None)
        if samples is None:
            samples = next((i for i, n in enumerate(names) if n == "# Samples"), None)
        if samples is None:
            return None
        line = next((i for i, n in enumerate(names) if n.lower() in _LINE_COLUMNS), None)
        address = names.index("Address") if "Address" in names else None
        text = names.index("Source") if "Source" in names else None
        return cls(samples, line, address, text)


@dataclass
class NcuSource:
    """ncu's source page, one view: samples per line (from the line rows, and from the SASS rows
    under each line where the view has both) and the total over SASS rows."""
    by_line: dict[Key, float] = field(default_factory=lambda: defaultdict(float))
    by_sass: dict[Key, float] = field(default_factory=lambda: defaultdict(float))
    instructions: float = 0.0
    paths: dict[str, str] = field(default_factory=dict)
    headers: int = 0

    def lines(self) -> dict[Key, float]:
        return self.by_sass if sum(self.by_sass.values()) > 0 else self.by_line


class _TextLines:
    """Line numbers by text, for a cuda view that prints no line number: rows come in file order, so
    a text seen twice is the first match after the previous row's line."""

    def __init__(self, path: str) -> None:
        self.lines = [ln.strip() for ln in linecache.getlines(path)]
        self.last = 0

    def find(self, text: str) -> int | None:
        hits = [i + 1 for i, ln in enumerate(self.lines) if ln and ln == text.strip()]
        line = next((h for h in hits if h > self.last), hits[0] if hits else None)
        self.last = line or self.last
        return line


def parse_ncu_source(text: str, default_path: str) -> NcuSource:
    """Reads `ncu -i REP --page source --print-source VIEW --csv` for VIEW in cuda, cuda,sass, sass;
    one table per profiled launch, all summed. Rows before a `"File Path","<path>"` row belong to
    `default_path`."""
    out, cols, path, line = NcuSource(), None, default_path, None
    by_text = _TextLines(path)
    rows = csv.reader(ln for ln in text.splitlines() if ln.strip() and not ln.startswith("=="))
    for row in rows:
        first = row[0].strip()
        if first == "File Path" and len(row) > 1:
            path, line = row[1].strip() or default_path, None
            by_text = _TextLines(path)
            continue
        if (header := _Columns.of(row)) is not None:
            cols, line = header, None
            out.headers += 1
            continue
        if cols is None or cols.samples >= len(row):
            continue
        base, samples = os.path.basename(path), _number(row[cols.samples])
        out.paths.setdefault(base, path)
        if cols.address is not None and row[cols.address].strip().lower().startswith("0x"):
            out.instructions += samples
            if line is not None:
                out.by_sass[(base, line)] += samples
            continue
        if (row_line := _row_line(row, cols, by_text)) is not None:  # a "..." row keeps the line
            line = row_line
            out.by_line[(base, line)] += samples
    return out


def _row_line(row: list[str], cols: _Columns, by_text: _TextLines) -> int | None:
    if cols.line is not None:
        cell = row[cols.line].strip() if cols.line < len(row) else ""
        return int(cell) if cell.isdigit() else None
    if cols.text is not None and cols.address is None:
        return by_text.find(row[cols.text])
    return None


def ncu_line_samples(views: dict[str, NcuSource]) -> LineSamples:
    """ncu's samples per line from the views read: lines from `cuda,sass` (its SASS rows under each
    line, else its line rows), else from `cuda`; the kernel's total from the SASS rows of `sass`,
    else of `cuda,sass`; what the total has beyond the lines is on no line."""
    out = LineSamples()
    for view in ("cuda,sass", "cuda"):
        if view in views and views[view].lines():
            out.lines.update(views[view].lines())
            out.paths.update(views[view].paths)
            break
    total = next((views[v].instructions for v in ("sass", "cuda,sass")
                  if v in views and views[v].instructions), 0.0)
    out.no_line = max(total - sum(out.lines.values()), 0.0)
    return out


# ---- the table ---------------------------------------------------------------------------------

TOOLS = ("ncu", "lepton", "proton")


def render(key: str, results: dict[str, LineSamples | None]) -> str:
    """One kernel's markdown table: a row per line that has at least SHOWN_PCT of the samples in some
    tool, the other lines summed, the samples with no line, and each tool's sample count."""
    kernel, module = KERNELS[key]
    got = {t: r for t, r in results.items() if r is not None and r.total > 0}
    keys = sorted({k for r in got.values() for k in r.lines}, key=lambda k: (k[0] != module, k))
    shown = [k for k in keys if any(r.share(k) >= SHOWN_PCT for r in got.values())]
    paths = {b: p for r in got.values() for b, p in r.paths.items()}
    out = [f"### {key}: `{kernel}` ({module})", "",
           "| line | source | ncu % | Lepton % | Proton % | \\|Lepton − ncu\\| pp | \\|Proton − ncu\\| pp |",
           "|---|---|---|---|---|---|---|"]
    for k in shown:
        out.append(_row(_label(k, module), _source(paths, k),
                        {t: r.share(k) for t, r in got.items()}))
    rest = {t: sum(r.share(k) for k in r.lines if k not in shown) for t, r in got.items()}
    out.append(_row("(other lines)", "", rest))
    out.append(_row("(no line)", "", {t: r.share(None) for t, r in got.items()}))
    out.append("| samples |  | " + " | ".join(f"{got[t].total:,.0f}" if t in got else "–" for t in TOOLS)
               + " |  |  |")
    worst = max(((abs(got["lepton"].share(k) - got["ncu"].share(k)), k) for k in keys),
                default=None) if {"lepton", "ncu"} <= set(got) else None
    if worst:
        out += ["", f"Largest |Lepton − ncu|: {worst[0]:.1f} pp (line {_label(worst[1], module)})."]
    missing = [t for t in TOOLS if t not in got]
    if missing:
        out += ["", "No samples from: " + ", ".join(missing) + "."]
    return "\n".join(out) + "\n"


def _row(label, text: str, shares: dict[str, float]) -> str:
    cell = {t: f"{shares[t]:.1f}" if t in shares else "–" for t in TOOLS}
    diff = {t: f"{abs(shares[t] - shares['ncu']):.1f}" if t in shares and "ncu" in shares else "–"
            for t in ("lepton", "proton")}
    return (f"| {label} | {text} | {cell['ncu']} | {cell['lepton']} | {cell['proton']} | "
            f"{diff['lepton']} | {diff['proton']} |")


def _label(key: Key, module: str) -> str:
    return str(key[1]) if key[0] == module else f"{key[0]}:{key[1]}"


def _source(paths: dict[str, str], key: Key) -> str:
    path = paths.get(key[0], "")
    if not os.path.exists(path):  # ncu's path of a file from another machine, or none
        path = os.path.join(BENCH, key[0])
    text = linecache.getline(path, key[1]).strip()[:60]
    return f"`{text}`".replace("|", "\\|") if text else ""


# ---- children and tools (GPU) ------------------------------------------------------------------

def child(tool: str, key: str, launches: int, path: str) -> None:
    """Runs kernel `key` `launches` times, under `tool`'s instruction sampling unless tool is none."""
    import torch

    step = _step(key)
    prof = None
    if tool == "lepton":
        import lepton as prof
        from lepton.mode import PCSampling

        prof.start(path, mode=PCSampling(interval=1024))
    elif tool == "proton":
        import triton.profiler as prof
        from triton.profiler import mode

        prof.start(path, backend="cupti", mode=mode.PCSampling())
    for _ in range(launches):  # the first launch compiles the kernel, inside the session
        step()
    torch.cuda.synchronize()
    if prof is not None:
        prof.finalize()


def _step(key: str):
    if key == "a":
        from in_kernel import workload_step

        return workload_step(scoped=False)
    import ncu_kernels

    return ncu_kernels.matmul_step() if key == "b" else ncu_kernels.softmax_step()


def _env() -> dict[str, str]:
    # LC_ALL=C: ncu separates thousands with the locale's separator (a no-break space in some).
    return dict(os.environ, PYTHONPATH=SRC + os.pathsep + os.environ.get("PYTHONPATH", ""), LC_ALL="C")


def _run(cmd: list[str], label: str, timeout: int, log: str | None = None
         ) -> subprocess.CompletedProcess | None:
    """Runs `cmd`, its output kept in `log`; None if it did not start or ran past `timeout` seconds.
    Says so, or that it failed, in one line."""
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, env=_env(), timeout=timeout)
        if log:
            with open(log, "w") as f:
                f.write(f"$ {' '.join(cmd)}\n(exit {p.returncode})\n{p.stdout}\n-- stderr --\n{p.stderr}")
    except subprocess.TimeoutExpired:
        print(f"  {label}: failed (no end after {timeout} s)", flush=True)
        return None
    except OSError as e:  # ncu not on PATH
        print(f"  {label}: failed ({e})", flush=True)
        return None
    if p.returncode != 0:
        tail = (p.stderr or p.stdout).strip().splitlines()[-3:]
        print(f"  {label}: failed (exit {p.returncode}): {' | '.join(tail)}", flush=True)
    return p


def run_profiler(tool: str, key: str, launches: int, out: str) -> LineSamples | None:
    path = os.path.join(out, f"{key}_{tool}")
    _remove(path + ".hatchet")  # a profile left by an earlier run would pass for this one's
    cmd = [sys.executable, __file__, "--child", tool, key, str(launches), path]
    p = _run(cmd, f"{tool} {KERNELS[key][0]}", timeout=600, log=path + ".log")
    if p is None or p.returncode != 0:
        return None
    try:
        with open(path + ".hatchet") as f:
            return hatchet_line_samples(json.load(f), KERNELS[key][0])
    except (OSError, ValueError, KeyError, TypeError) as e:
        print(f"  {tool} {KERNELS[key][0]}: unreadable profile {path}.hatchet: {e!r}", flush=True)
        return None


def run_ncu(key: str, launches: int, out: str) -> LineSamples | None:
    kernel, module = KERNELS[key]
    rep = os.path.join(out, f"{key}_ncu")
    cmd = ["ncu", "--kernel-name", f"regex:^{kernel}$", "--launch-skip", str(NCU_SKIP),
           "--launch-count", str(launches), "--clock-control", "none", "--cache-control", "none",
           "--warp-sampling-interval", str(NCU_INTERVAL), "--section", "SourceCounters",
           "--section", "WarpStateStats", "--import-source", "yes", "-f", "-o", rep,
           sys.executable, __file__, "--child", "none", key, str(NCU_SKIP + launches + 2), rep]
    head = [" ".join(cmd)]
    _remove(rep + ".ncu-rep")
    p = _run(cmd, f"ncu {kernel}", timeout=600, log=rep + ".log")
    if p is not None:
        head += [f"-- ncu's output (exit {p.returncode}), last 15 lines --",
                 *(p.stdout + p.stderr).strip().splitlines()[-15:]]
    views = {}
    if os.path.exists(rep + ".ncu-rep"):  # no report: ncu exits 0 when the name matches no kernel
        for view in NCU_VIEWS:
            views[view] = _import_view(rep, view, os.path.join(BENCH, module), head)
    with open(os.path.join(out, f"{key}_ncu_head.txt"), "w") as f:
        f.write("\n".join(head) + "\n")
    result = ncu_line_samples(views)
    if not result.lines:
        print(f"  ncu {kernel}: no samples per line read (see {key}_ncu_head.txt)", flush=True)
        return None
    return result


def _import_view(rep: str, view: str, default_path: str, head: list[str]) -> NcuSource:
    cmd = ["ncu", "-i", rep + ".ncu-rep", "--page", "source", "--print-source", view, "--csv"]
    p = _run(cmd, f"ncu -i {os.path.basename(rep)} --print-source {view}", timeout=300)
    text = p.stdout if p is not None and p.returncode == 0 else ""
    if p is not None and p.returncode != 0:
        head += [f"-- {' '.join(cmd)} failed (exit {p.returncode}) --", *p.stderr.strip().splitlines()[-5:]]
    with open(f"{rep}_{view.replace(',', '_')}.csv", "w") as f:
        f.write(text)
    parsed = parse_ncu_source(text, default_path)
    head += [f"-- {' '.join(cmd)}: {len(text.splitlines())} lines, {parsed.headers} header rows, "
             f"{sum(parsed.by_line.values()):.0f} samples on line rows, "
             f"{sum(parsed.by_sass.values()):.0f} on SASS rows under a line, "
             f"{parsed.instructions:.0f} on all SASS rows; first 15 lines --",
             *text.splitlines()[:15]]
    return parsed


def _remove(path: str) -> None:
    if os.path.exists(path):
        os.remove(path)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", default="a,b,c", help="kernels: a (work), b (matmul), c (softmax)")
    ap.add_argument("--launches", type=int, default=200, help="launches under Lepton and under Proton")
    ap.add_argument("--ncu-launches", type=int, default=20, help=f"launches ncu profiles, after {NCU_SKIP}")
    ap.add_argument("--tools", default="lepton,proton,ncu")
    ap.add_argument("--out", default="ncu_lines_out")
    ap.add_argument("--child", nargs=4, metavar=("TOOL", "KEY", "LAUNCHES", "PATH"))
    a = ap.parse_args(argv)
    if a.child:
        tool, key, launches, path = a.child
        child(tool, key, int(launches), path)
        return 0
    os.makedirs(a.out, exist_ok=True)
    tools = a.tools.split(",")
    tables = []
    for key in a.only.split(","):
        print(f"{key}: {KERNELS[key][0]}", flush=True)
        results = {t: run_profiler(t, key, a.launches, a.out) for t in ("lepton", "proton") if t in tools}
        results["ncu"] = run_ncu(key, a.ncu_launches, a.out) if "ncu" in tools else None
        table = render(key, results)
        print(table, flush=True)
        tables.append(table)
        with open(os.path.join(a.out, f"{key}_{KERNELS[key][0]}.md"), "w") as f:
            f.write(table)
        with open(os.path.join(a.out, "summary.md"), "w") as f:  # rewritten per kernel: a cut run keeps some
            f.write("\n".join(tables))
    return 0


if __name__ == "__main__":
    sys.exit(main())
