"""The report's own refusals (bad metrics, patterns and files have theirs in viewer.derive,
viewer.filters and viewer.load)."""
from __future__ import annotations


class ReportError(ValueError):
    """A page that cannot be made as asked, or that would show nothing. One line, naming the fix."""
