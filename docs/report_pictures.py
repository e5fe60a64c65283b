"""Writes the README's pictures of `lepton-view --html` (run from the repository's root with Chromium
installed: `PYTHONPATH=src python docs/report_pictures.py`):

- docs/report.png: kernel times (tests/data/viewer/matmul_bias.hatchet)
- docs/report-pcsampling.png: instruction sampling (Proton's pcsampling_lines.hatchet, its lines
  pointed at the copy of the program that wrote it, so that their source text shows)
- docs/report-instrumentation.png: instrumentation with its trace (Lepton's own, tests/data/report)
"""
from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from lepton.cli.view import main as view

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "tests" / "data"
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--hide-scrollbars",
         "--disable-background-networking", "--disable-component-update", "--disable-sync", "--window-size=1400,900"]


def screenshot(browser: str, page: Path, png: Path, work: Path) -> None:
    subprocess.run([browser, *FLAGS, f"--user-data-dir={work / ('profile-' + png.stem)}", f"--screenshot={png}",
                    page.as_uri()], check=True, capture_output=True, timeout=120)


def pcsampling_profile(work: Path) -> Path:
    """pcsampling_lines.hatchet with its lines at tests/data/proton_3_6/in_kernel_workload.py."""
    bench = work / "bench"
    bench.mkdir()
    shutil.copy(DATA / "proton_3_6" / "in_kernel_workload.py", bench)
    text = (DATA / "proton_3_6" / "pcsampling_lines.hatchet").read_text().replace("/home/user/bench/", f"{bench}/")
    profile = work / "pcsampling_lines.hatchet"
    profile.write_text(text)
    return profile


def main() -> int:
    browser = shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")
    if browser is None:
        print("report_pictures: no Chromium on PATH (apt-get install chromium)", file=sys.stderr)
        return 1
    with tempfile.TemporaryDirectory() as folder:
        work = Path(folder)
        pages = {
            "report.png": [DATA / "viewer" / "matmul_bias.hatchet"],
            "report-pcsampling.png": [pcsampling_profile(work), "-i", "work"],
            "report-instrumentation.png": [DATA / "report" / "lepton_instrumentation.hatchet",
                                           DATA / "report" / "lepton_instrumentation.chrome_trace"],
        }
        for png, args in pages.items():
            page = work / (png + ".html")
            if view([*map(str, args), "--html", str(page)]) != 0:
                return 1
            screenshot(browser, page, ROOT / "docs" / png, work)
    return 0


if __name__ == "__main__":
    sys.exit(main())
