"""The page's data checked before it is written: a page that would draw nothing, or a panel
with nothing in it, is an error in one line rather than a blank page."""
from __future__ import annotations

from .errors import ReportError


def check_page(data: dict, filters_note: str = "") -> None:
    """Raises ReportError where the icicle has no box to draw or a listed panel is empty."""
    tree, sizes = data["tree"], data["sizes"]
    n = len(tree["parent"])
    if n == 0:
        raise ReportError(f"nothing to draw{filters_note}: no node is left (-d counts ROOT as depth 0)")
    for size in sizes:
        assert len(size["values"]) == n, f"{size['label']}: {len(size['values'])} values for {n} nodes"
    drawable = [size for size in sizes if _root_width(tree, size, data) > 0]
    if not drawable:
        names = ", ".join(size["label"] for size in sizes)
        raise ReportError(f"nothing to draw{filters_note}: no node has a positive {names}; "
                          "pick another metric with -m (lepton-view -l FILE lists them)")
    data["initialSize"] = sizes.index(drawable[0])  # the page opens on a metric it can draw
    for panel in data["panels"]:
        if panel != "flame" and not _panel_has_rows(data, panel):
            raise ReportError(f"the {panel.replace('-', ' ')} would be empty")


def _root_width(tree: dict, size: dict, data: dict) -> float:
    """The widest root box: with -diff a box is as wide as the larger side."""
    k = data["sizes"].index(size)
    widths = [size["values"]]
    if data.get("diff"):
        widths.append(data["diff"]["b"][k])
    roots = [i for i, parent in enumerate(tree["parent"]) if parent < 0]
    return max((column[i] or 0.0 for column in widths for i in roots), default=0.0)


def _panel_has_rows(data: dict, panel: str) -> bool:
    key = panel.split("-")[0]
    part = data.get(key)
    if key == "kernels":
        return bool(part and part["rows"])
    if key == "roofline":
        return bool(part)
    if key == "timeline":
        return any(k["events"] for k in part["kernels"])
    if key in ("lines", "scopes"):
        return bool(part["kernels"])
    if key == "ranks":
        return len(part["ranks"]) > 1
    return key == "diff" and bool(part)
