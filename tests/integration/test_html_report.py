"""lepton-view --html in a real headless Chromium: the page of every kind of profile (Proton 3.6's
files and Lepton's own, in tests/data) loads with no console message, draws its icicle (painted
pixels, one box per visible node), shows the panel its kind promises, fits its labels to their
measured widths and writes no number in exponent notation. The page's own #selftest hook reports
what it did (viewer/report/main.js). The tests skip where no Chromium is installed (.ci/run installs
one)."""
from __future__ import annotations

import html
import io
import itertools
import json
import re
import shutil
import subprocess
from pathlib import Path

import msgpack
import numpy as np
import pytest

from lepton.cli.view import main as view_main
from lepton.viewer.load import load
from lepton.viewer.render import RenderOptions, display_names

DATA = Path(__file__).resolve().parents[2] / "tests" / "data"
MATMUL_BIAS = DATA / "viewer" / "matmul_bias.hatchet"
PROTON = DATA / "proton_3_6"
OURS = DATA / "report"
RANKS = [DATA / "viewer" / f"ddp.rank{r}.hatchet" for r in range(4)]
BROWSER = shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")
needs_browser = pytest.mark.skipif(BROWSER is None, reason="no headless browser: apt-get install chromium")
# A browser that reaches nothing and leaves nothing: no network, no first-run work, a fresh profile.
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync"]
EXPONENT = re.compile(r"\d\.?\d*e[+-]\d")
_runs = itertools.count()


def write_report(tmp_path: Path, *args) -> Path:
    out = tmp_path / "report.html"
    err = io.StringIO()
    assert view_main([*map(str, args), "--html", str(out)], stdout=io.StringIO(), stderr=err) == 0, err.getvalue()
    assert err.getvalue().startswith(f"lepton-view: report written to {out}")
    return out


def browse(page: Path, tmp_path: Path, *flags: str, url_tail: str = "") -> subprocess.CompletedProcess:
    profile = tmp_path / f"chromium-profile-{next(_runs)}"
    return subprocess.run([BROWSER, *FLAGS, f"--user-data-dir={profile}", "--enable-logging=stderr", "--v=0", *flags,
                           page.as_uri() + url_tail], check=True, capture_output=True, text=True, timeout=120)


def self_test(page: Path, tmp_path: Path, query: str = "matmul") -> dict:
    """The page's #selftest result, with the console messages Chromium logged for it."""
    done = browse(page, tmp_path, "--window-size=1400,1000", "--dump-dom", url_tail=f"?q={query}#selftest")
    found = re.search(r'<pre id="selftest">(.*?)</pre>', done.stdout, re.DOTALL)
    assert found, "the page's self test wrote nothing (a script error before it?)"
    result = json.loads(html.unescape(found.group(1)))
    result["console"] = [line for line in done.stderr.splitlines() if ":CONSOLE" in line]
    return result


def test_the_page_is_one_self_contained_file(tmp_path):
    text = write_report(tmp_path, MATMUL_BIAS).read_text()
    assert not re.search(r"<script[^>]+src=|<link|@import|url\(", text)
    assert not re.search(r"(src|href)\s*=\s*[\"']?https?:", text)
    data = json.loads(re.search(r'<script type="application/json" id="data">(.*?)</script>', text, re.DOTALL).group(1))
    rows = {row["name"]: row for row in data["kernels"]["rows"]}
    assert rows["matmul_kernel_bias"]["count"] == 200 and rows["add_bias_kernel"]["bytes"] > 0
    assert data["peaks"][0]["bytes"] == pytest.approx(2 * 5120 * 2619000 * 1e3 / 8)


def diff_args(tmp_path: Path) -> list:
    other = tmp_path / "before.hatchet"
    other.write_text(MATMUL_BIAS.read_text().replace('"matmul_kernel_bias"', '"matmul_kernel_bias_v2"'))
    return [MATMUL_BIAS, "-diff", other]


def as_msgpack(path: Path, tmp: Path) -> Path:
    """The profile as hatchet MessagePack, the other format Lepton writes."""
    out = tmp / (path.stem + ".hatchet_msgpack")
    out.write_bytes(msgpack.packb(json.loads(path.read_text())))
    return out


# Every kind of profile: the arguments after `lepton-view` and the panels its page must show.
KINDS = {
    "kernel times": (lambda tmp: [MATMUL_BIAS], ["kernels-panel", "roofline-panel"]),
    "proton instrumentation": (lambda tmp: [PROTON / "instrumentation.hatchet"], ["scopes-panel"]),
    "proton instrumentation and trace": (lambda tmp: [PROTON / "instrumentation.hatchet",
                                                      PROTON / "instrumentation_trace.chrome_trace"],
                                         ["scopes-panel", "timeline-panel"]),
    "lepton instrumentation and trace": (lambda tmp: [OURS / "lepton_instrumentation.hatchet",
                                                      OURS / "lepton_instrumentation.chrome_trace"],
                                         ["scopes-panel", "timeline-panel"]),
    "proton pcsampling": (lambda tmp: [PROTON / "pcsampling.hatchet"], ["lines-panel", "kernels-panel"]),
    "proton pcsampling lines": (lambda tmp: [PROTON / "pcsampling_lines.hatchet"], ["lines-panel", "kernels-panel"]),
    "lepton pcsampling": (lambda tmp: [OURS / "lepton_pcsampling.hatchet"], ["lines-panel", "kernels-panel"]),
    "ranks": (lambda tmp: RANKS, ["ranks-panel", "kernels-panel", "roofline-panel"]),
    "merged ranks": (lambda tmp: [*RANKS, "--merge", "mean"], ["kernels-panel", "roofline-panel"]),
    "diff": (diff_args, ["diff-legend", "kernels-panel", "roofline-panel"]),
    "instrumentation with -m and -i": (lambda tmp: [OURS / "lepton_instrumentation.hatchet", "-m", "ns", "-i", "nested"],
                                       ["scopes-panel"]),
    "lepton pcsampling as msgpack": (lambda tmp: [as_msgpack(OURS / "lepton_pcsampling.hatchet", tmp)],
                                     ["lines-panel", "kernels-panel"]),
    **{f"proton {name}": (lambda tmp, name=name: [PROTON / f"{name}.hatchet"], ["kernels-panel"])
       for name in ("cudagraph", "hook", "nvtx", "python_ctx", "scopes_metrics", "threads", "multi_session_a",
                    "multi_session_b", "small_shadow_h200")},
    **{f"proton example {name}": (lambda tmp, name=name: [DATA / "proton_examples" / f"{name}.json"], ["kernels-panel"])
       for name in ("cuda", "frame", "hip", "leaf_nodes", "triton")},
}


@needs_browser
@pytest.mark.parametrize("kind", list(KINDS))
def test_the_page_of_every_kind_of_profile_draws_its_panels_without_errors(tmp_path, kind):
    args, panels = KINDS[kind]
    result = self_test(write_report(tmp_path, *args(tmp_path)), tmp_path)
    assert result["errors"] == [] and result["console"] == [] and result["problems"] == []
    assert result["check"] == "ok"
    assert result["boxes"] > 0 and result["painted"] > 0  # not a blank canvas
    assert set(panels) <= set(result["panels"]), result["panels"]
    assert all(label["fits"] for label in result["labels"]), result["labels"]
    assert not EXPONENT.search(result["text"] + result["rootTip"] + result["legend"]), result["text"]


@needs_browser
def test_each_panel_shows_what_its_profile_holds(tmp_path):
    lines = self_test(write_report(tmp_path, PROTON / "pcsampling_lines.hatchet"), tmp_path)
    assert lines["sizes"][0] == "num_samples" and lines["lineRows"] == 14
    assert "in_kernel_workload.py:34@work" in lines["text"] and "selected 61.9%" in lines["text"]
    ours = self_test(write_report(tmp_path, OURS / "lepton_pcsampling.hatchet"), tmp_path)
    assert "Hottest instructions (SASS)" in ours["text"] and "/*0020*/" in ours["text"]
    scopes = self_test(write_report(tmp_path, PROTON / "instrumentation.hatchet"), tmp_path)
    assert scopes["scopeRows"] == 2 and "3,013" in scopes["text"] and "19.9%" in scopes["text"]
    assert scopes["rootTip"] == "ROOT\ncycles: 15,172 cycles (100.0% of all)"
    trace = self_test(write_report(tmp_path, PROTON / "instrumentation.hatchet",
                                   PROTON / "instrumentation_trace.chrome_trace"), tmp_path)
    assert trace["timelineBars"] == 32
    ranks = self_test(write_report(tmp_path, *RANKS), tmp_path)
    assert ranks["rankRows"] > 0 and "rank 2" in ranks["text"]
    assert ranks["rootTip"] == "ROOT\ntime/ms over 4 ranks: min 307.2 ms, median 311.6 ms, max 331 ms\nslowest: rank 2"
    diff = self_test(write_report(tmp_path, *diff_args(tmp_path)), tmp_path)
    assert diff["legend"].startswith("matmul_bias.hatchet minus before.hatchet")


def visible_nodes(width: float) -> tuple[int, list[str]]:
    """The nodes the icicle must draw at `width` pixels: those whose share of ROOT's time is at
    least half a pixel, under ancestors that are drawn too; and their display names."""
    tree = load(MATMUL_BIAS)
    time = tree.subtree_sum(tree.numbers["time (ns)"])
    wide = time / time[tree.roots].sum() * width >= 0.5
    drawn = wide.copy()
    for i, parent in enumerate(tree.parent.tolist()):
        drawn[i] &= parent < 0 or drawn[parent]
    names = np.array(display_names(tree, RenderOptions()), dtype=object)
    return int(drawn.sum()), names[drawn].tolist()


@needs_browser
def test_in_a_browser_the_page_draws_searches_and_sorts_without_errors(tmp_path):
    result = self_test(write_report(tmp_path, MATMUL_BIAS), tmp_path)
    assert result["errors"] == [] and result["console"] == []
    count, names = visible_nodes(result["width"])
    assert result["boxes"] == result["distinctBoxes"] == count  # one box per visible node
    assert 0 < count <= result["nodes"] == len(load(MATMUL_BIAS))
    assert result["search"]["hits"] == sum("matmul" in name.lower() for name in names) > 0
    before = result["tableBefore"]  # by time, largest first
    assert before[0] == "matmul_kernel_bias"
    assert result["tableByName"] == sorted(before) != before
    assert result["tableByTimeAsc"] == before[::-1]
    assert result["headers"] == ["Kernel", "Time (ms)", "Count", "Avg (µs)", "TFLOP/s", "TB/s", "Util"]
    assert result["rootTip"] == "ROOT\ntime/ms: 527.1 ms (100.0% of all)"  # never 5.271e+8 ns


@needs_browser
def test_roofline_labels_do_not_collide(tmp_path):
    boxes = self_test(write_report(tmp_path, MATMUL_BIAS), tmp_path)["rooflineLabels"]
    assert len(boxes) >= 3  # 6 points, two pairs of which sit on one spot: some labels must go

    def overlap(a, b):
        return a["x"] < b["x"] + b["w"] and b["x"] < a["x"] + a["w"] and a["y"] < b["y"] + b["h"] and b["y"] < a["y"] + a["h"]

    assert not any(overlap(a, b) for a, b in itertools.combinations(boxes, 2))


@needs_browser
def test_the_diff_page_loads_and_shows_the_difference(tmp_path):
    result = self_test(write_report(tmp_path, *diff_args(tmp_path)), tmp_path, "bias")
    assert result["errors"] == [] and result["console"] == []
    assert result["search"]["hits"] > 0 and result["boxes"] == result["distinctBoxes"]
    assert result["headers"][-2:] == ["before.hatchet (ms)", "Δ (ms)"]


@needs_browser
def test_a_page_whose_script_fails_shows_a_message_not_a_blank_page(tmp_path):
    page = write_report(tmp_path, MATMUL_BIAS)
    page.write_text(page.read_text().replace('"sizes":[', '"broken":['))  # the icicle's metric list is gone
    dom = browse(page, tmp_path, "--window-size=1400,1000", "--dump-dom").stdout
    shown = re.search(r'<div id="page-error" role="alert">(.*?)</div>', dom, re.DOTALL)
    assert shown, "no visible error message"
    assert shown.group(1).startswith("This page could not draw part of the profile:")
