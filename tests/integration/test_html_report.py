"""lepton-view --html: the page is self-contained, and in a real headless Chromium it loads with no
console error, draws one icicle box per visible node, highlights search matches and sorts its
kernel table (the page's own #selftest hook reports what it did; see viewer/report/page.js)."""
from __future__ import annotations

import io
import json
import re
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

from lepton.cli.view import main as view_main
from lepton.viewer.load import load
from lepton.viewer.render import RenderOptions, display_names

DATA = Path(__file__).resolve().parents[2] / "tests" / "data" / "viewer"
MATMUL_BIAS = DATA / "matmul_bias.hatchet"
BROWSER = shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")
needs_browser = pytest.mark.skipif(BROWSER is None, reason="no headless browser: apt-get install chromium")


def write_report(tmp_path: Path, *args) -> Path:
    out = tmp_path / "report.html"
    err = io.StringIO()
    assert view_main([*map(str, args), "--html", str(out)], stdout=io.StringIO(), stderr=err) == 0
    assert err.getvalue().startswith(f"lepton-view: report written to {out}")
    return out


def self_test(page: Path, query: str = "matmul") -> dict:
    dom = subprocess.run([BROWSER, "--headless", "--no-sandbox", "--disable-gpu", "--window-size=1400,1000",
                          "--dump-dom", f"{page.as_uri()}?q={query}#selftest"],
                         check=True, capture_output=True, text=True, timeout=120).stdout
    found = re.search(r'<pre id="selftest">(.*?)</pre>', dom, re.DOTALL)
    assert found, "the page's self test wrote nothing (a script error before it?)"
    return json.loads(found.group(1).replace("&lt;", "<").replace("&gt;", ">").replace("&amp;", "&"))


def test_the_page_is_one_self_contained_file(tmp_path):
    text = write_report(tmp_path, MATMUL_BIAS).read_text()
    assert not re.search(r"<script[^>]+src=|<link|@import|url\(", text)
    assert not re.search(r"(src|href)\s*=\s*[\"']?https?:", text)
    data = json.loads(re.search(r'<script type="application/json" id="data">(.*?)</script>', text, re.DOTALL).group(1))
    rows = {row["name"]: row for row in data["kernels"]["rows"]}
    assert rows["matmul_kernel_bias"]["count"] == 200 and rows["add_bias_kernel"]["bytes"] > 0
    assert data["peaks"][0]["bytes"] == pytest.approx(2 * 5120 * 2619000 * 1e3 / 8)


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
    result = self_test(write_report(tmp_path, MATMUL_BIAS))
    assert result["errors"] == []
    count, names = visible_nodes(result["width"])
    assert result["boxes"] == result["distinctBoxes"] == count  # one box per visible node
    assert 0 < count <= result["nodes"] == len(load(MATMUL_BIAS))
    assert result["search"]["hits"] == sum("matmul" in name.lower() for name in names) > 0
    before = result["tableBefore"]  # by time, largest first
    assert before[0] == "matmul_kernel_bias"
    assert result["tableByName"] == sorted(before) != before
    assert result["tableByTimeAsc"] == before[::-1]
    assert result["headers"] == ["Kernel", "Time (ms)", "Count", "Avg (µs)", "TFLOP/s", "TB/s", "Util"]


@needs_browser
def test_the_diff_page_loads_and_shows_the_difference(tmp_path):
    document = json.loads(MATMUL_BIAS.read_text())
    text = json.dumps(document).replace('"matmul_kernel_bias"', '"matmul_kernel_bias_v2"')
    other = tmp_path / "other.hatchet"
    other.write_text(text)
    page = write_report(tmp_path, MATMUL_BIAS, "-diff", other)
    result = self_test(page, "bias")
    assert result["errors"] == []
    assert result["search"]["hits"] > 0 and result["boxes"] == result["distinctBoxes"]
    assert result["headers"][-2:] == ["other.hatchet (ms)", "Δ (ms)"]
