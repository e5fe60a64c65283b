"""`lepton-view --html OUT.html`: the profile as one self-contained page, for every kind of
profile: kernel times, instruction sampling, instrumentation (with its trace), several ranks, a diff.

The page (page.html, page.css and the scripts, inlined) draws an icicle of the call tree on a
canvas (sized by a metric that adds up, click to zoom, search to highlight), a sortable kernel
table, a roofline with a point per kernel and shape, and the panels a profile's mode adds.

    build.py      what the page shows (the data model), from the profiles and the options
    check.py      the model checked before writing: never a blank page
    page.py       the model into one HTML file;  output.py  the file, or stdout for `-`

Hand-written canvas and SVG rather than a charting library: nothing is installed to inline, a
100,000-node icicle needs a canvas and a layout that skips sub-pixel boxes (SVG with one element
per node stalls a browser at that size).
"""
from __future__ import annotations

from .build import Request, page_data
from .errors import ReportError
from .output import write_page
from .page import page_html
from .sizes import Filters
from .timeline import is_trace

__all__ = ["Filters", "ReportError", "Request", "is_trace", "make_page", "page_data", "page_html",
           "write_page"]


def make_page(request: Request) -> str:
    """The page's HTML; raises a one-line error where it cannot be made or would show nothing."""
    return page_html(page_data(request))
