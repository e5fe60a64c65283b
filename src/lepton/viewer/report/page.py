"""The data model into one self-contained HTML file: page.html with page.css, the data as one JSON
block and the scripts inlined (no network, no CDN)."""
from __future__ import annotations

import json
from importlib import resources

# The page's scripts, in the order they run: each defines what the next ones use.
SCRIPTS = ("format.js", "icicle.js", "table.js", "roofline.js", "panels.js", "timeline.js", "main.js")


def page_html(data: dict) -> str:
    blob = json.dumps(data, separators=(",", ":"), allow_nan=False).replace("</", "<\\/")
    script = "\n".join(_asset(name) for name in SCRIPTS)
    return (_asset("page.html").replace("/*CSS*/", _asset("page.css"))
            .replace("/*DATA*/", blob)
            .replace("/*JS*/", script)
            .replace("<!--TITLE-->", _escape(data["title"])))


def _asset(name: str) -> str:
    return resources.files(__package__).joinpath(name).read_text(encoding="utf-8")


def _escape(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
